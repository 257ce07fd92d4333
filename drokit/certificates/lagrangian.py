"""The Lagrangian certificate: an explicit dual-feasible point, repaired, and its exact Lagrangian value.

A conic solver's dual objective is a lower bound only up to the solver's residuals (issue 21: in 572 of
1,229 random fits it sat 1e-9 to 2e-7 above the exact worst-case risk of the returned model).  Here the
bound is built so that it holds up to floating-point rounding, whatever produced the model.

The problem (belbasi2023 Prop. 1 / Prop. 3, sun2025 Theorem 1; the rows ``k = (n, z, flip)`` of
:mod:`drokit.oracles.enumeration`, loss argument ``u_k = sigma_k theta^T a_k - shift_k`` with
``a_k = [1, x_n, dummies(z)]``, transport cost ``c_k``):

    OPT = min_{theta, lam}  lam eps + sum_n p_n max_{k of n} (L(u_k) - lam c_k)
          s.t.  lip(L) ||Gamma^{-1} beta_L||_* <= lam,   lam >= lam_0,   theta_j = 0 (j fixed),

``L`` the norm-priced numerical columns (``0 < gamma_j < inf``), ``lam_0 = lip(L) / kappa`` in regression
with a finite label cost (else 0).  For masses ``m_k >= 0`` with ``sum_{k of n} m_k = p_n`` and slopes
``alpha_k`` in the slope domain of ``L``, Fenchel's inequality ``L(u) >= alpha u - L*(alpha)`` gives the
Lagrangian bound

    OPT >= sum_k m_k (-alpha_k shift_k - L*(alpha_k)) + lam_0 (eps - S)

when the dual point is feasible: ``g = sum_k m_k alpha_k sigma_k a_k`` vanishes on every free column
(intercept, dummies, immutable numerical features; at radius 0 every column not fixed) and the budget
``S = sum_k m_k c_k + N(Gamma g_L) / lip(L)`` is at most ``eps`` (:mod:`.budget`, whose docstring states it).  The
point is made feasible exactly, in the manner of the barrier solver's certificate (:mod:`drokit.solvers.barrier`):

1. free columns: the slopes change within the slope domain until ``g_F = 0`` up to rounding -- a least-norm
   change within each slope's room to the domain's ends, else bounded least squares (:mod:`.repair`, whose
   docstring states the steps);
2. budget: when ``S > eps`` the slopes are repaired once more (step 1's repair, the free columns' zeros kept) so
   that ``g_L`` fits what the transport cost leaves (:func:`~drokit.certificates.budget.budget_target`, called here
   through this module's ``_budget_target``), else the point is mixed with the nominal rows at slope 0; the larger
   bound is kept (:mod:`.budget`'s docstring: what each loses).

The multipliers come from the worst-case distribution of the returned model
(:func:`~drokit.certificates.support.worst_case_support`, at most ``N + 1`` atoms) with
slopes ``alpha_k = L'(u_k)``; at a kink of a piecewise-affine loss the slope starts at the middle of the
subdifferential, which the repair can move.  At an optimum these are the KKT multipliers, so the bound
meets the upper bound up to the optimization error of the model.  With an l1 / l2 penalty the penalized
coefficients' columns need no exact zero: the penalty prices ``g_j`` (:func:`~drokit.certificates.budget.budget_bound`;
the penalty's terms and splits in :mod:`.penalty`).

Adversarial losses (DR-ARO, selvi2025 thesis Cor. 8): the worst attack shifts the loss argument by ``c(beta) = alpha
||beta_x||_{p*}``, and the norm-priced columns' sums may hand ``h_L`` with ``||h_L||_p <= A = alpha sum_k m_k
|alpha_k|`` to the attack (the attack offset, :func:`~drokit.certificates.budget.attack_offset`; :mod:`.budget`'s
docstring derives it).  The attack moves every numerical feature, the immutable ones too (free columns; at radius
0, adversarial training, every numerical column is free): their sums need not vanish but may be the attack's part
``h_F = g_F``, the ball ``||(h_F, h_L)||_p <= A`` then leaving ``(A^p - ||g_F||_p^p)^(1/p)`` to ``h_L`` (``A`` for ``p
= inf``; :func:`attacked_free_columns`, :func:`_ball_left`): the repair aims them at their value brought into the ball
(:func:`_into_ball`), or, failing that, at 0.  The slopes start at ``L'`` of the attacked argument (``u - c`` at the
model).  Where ties or the model's error keep that point from the optimum, the certificate takes its multipliers from
a smoothed primal solved by Newton's method (:mod:`.smoothed_point`) or, for piecewise-affine losses, from the
multiplier program on the rows that are not settled (:mod:`.lower_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..losses.conjugate import conjugate, slope_domain
from ..instance import DROInstance
from ..oracles.design import csr_row_design
from ..oracles.rows import (ConfigurationRows, FractionalRows, concat_rows, enumerate_configurations, row_margins,
                            take_rows)
from .budget import budget_bound, budget_target, label_floor
from .repair import column_roles, column_sums, repair_free_columns, slope_room

#: the multiplier program may move a smooth loss's slope this fraction of its room away from ``L'(u_k)``
SMOOTH_BAND = 1e-3

#: rows whose argument is within this (relative) distance of a kink of a piecewise-affine loss get the
#: whole subdifferential there
KINK_RTOL = 1e-7

#: rows with less mass than this times their sample's ``p_n`` leave a dual point (:func:`with_every_sample`)
MASS_DROP = 1e-15

#: :func:`~drokit.certificates.budget.budget_target` under this module's name: :func:`lagrangian_bound` calls it
#: through it, which tests replace
_budget_target = budget_target


@dataclass
class LowerBound:
    """A certified lower bound ``value`` on the optimal value and the dual point that proves it: the rows,
    their masses and slopes after the repair, the budget mixing weight ``scale`` (1 = no mixing) and the
    largest free-column residual ``|g_F|`` left (rounding); ``search``: what the search that found it tried.
    The rows, masses and slopes are ``None`` where the point stays on a distributed fit's partitions
    (:func:`~drokit.certificates.partitioned_bound.partitioned_lagrangian_bound`)."""

    value: float
    rows: "ConfigurationRows | FractionalRows"
    mass: np.ndarray
    slopes: np.ndarray
    scale: float
    residual: float
    #: how :func:`~drokit.certificates.lower_bound.certified_lower_bound` searched for the point (None elsewhere)
    search: Optional[dict] = None


def attacked_loss(inst: DROInstance):
    """``(L, p, alpha)``: the attacked loss, the attack ball's ``p`` and radius for an adversarial loss
    (:class:`~drokit.losses.Adversarial`), else ``(inst.loss, None, 0.0)``."""
    if hasattr(inst.loss, "at"):
        return inst.loss.validated()
    return inst.loss, None, 0.0


def loss_arguments(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray) -> np.ndarray:
    """The attacked loss's argument per row at the model: the margin ``u_k``, shifted by the worst attack for an
    adversarial loss (``u - c``, or the worse of ``r +- c`` in regression)."""
    u = _margins(inst, rows, intercept, coef)
    if hasattr(inst.loss, "at"):
        return inst.evaluated_at(coef).loss.arguments(u)
    return u


def attack_pieces(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray):
    """``(rows, arguments, direction)`` for the multiplier program: without an attack the rows and their margins
    (``direction`` None); in classification the attacked arguments ``u - c`` with direction -1 (the slopes of a
    non-increasing loss are <= 0, so ``|alpha| c = -alpha c``); in regression every row twice, once per piece of
    ``max(L(r + c), L(r - c))`` (arguments ``r + c`` then ``r - c``, directions +1 then -1): one slope per row cannot
    be interior for stationarity and pay the full ``c`` at a residual of 0 (absolute loss), two pieces' masses can."""
    u = _margins(inst, rows, intercept, coef)
    if not hasattr(inst.loss, "at"):
        return rows, u, None
    c = inst.loss.shift(np.asarray(coef, dtype=float)[: inst.n_numerical])
    if inst.is_classification:
        return rows, u - c, -np.ones(rows.size)
    return concat_rows([rows, rows]), np.concatenate([u + c, u - c]), np.repeat([1.0, -1.0], rows.size)


def lagrangian_bound(inst: DROInstance, rows: ConfigurationRows, mass: np.ndarray, slopes: np.ndarray,
                     room: Optional[np.ndarray] = None, bvls: bool = True,
                     coef: Optional[np.ndarray] = None) -> LowerBound:
    """Repair the dual point ``(rows, mass, slopes)`` and evaluate its Lagrangian (module docstring).

    ``room``: how far each slope may move in the repair (default: its distance to the slope domain's ends).
    ``bvls``: whether the last resort of the repair, a dense bounded least-squares problem
    (:func:`~drokit.certificates.repair._bvls_repair`, seconds at 1,000 rows), may run; a search that bounds many
    points in passing turns it off.  ``coef``: the model the point comes from, if any (a penalized bound splits the
    norm-priced columns by it: :func:`~drokit.certificates.budget.budget_bound`).
    Returns ``-inf`` as the value when the free-column conditions cannot be met.  With an adversarial loss the slopes
    are the attacked loss's and the norm-priced columns may hand ``||h||_p <= alpha sum_k m_k |alpha_k|`` to the attack
    (module docstring)."""
    loss, attack_p, alpha = attacked_loss(inst)
    lo, hi = slope_domain(loss)
    rows, mass, slopes, room = with_every_sample(inst, rows, mass, slopes, room, lo, hi)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    offset = 1 if inst.fit_intercept else 0
    l1, l2 = float(inst.l1_penalty), float(inst.l2_penalty)
    # a penalized coefficient's column needs no exact zero (the penalty prices g_j: penalty_relief); with an l1
    # penalty alone it needs |g_j| <= l1.  Unpenalized free columns (the intercept) need g_j = 0
    exact = free[free < offset] if inst.penalized else free
    priced = free[free >= offset] if inst.penalized else free[:0]
    g0 = A.T @ (mass * slopes * sigma)
    if l2 > 0:                                      # every |g_j| is priced: nothing to repair on these columns
        priced_target = np.zeros(0)
        priced_cols = priced[:0]
    else:                                           # l1 alone: into [-l1, l1]
        priced_cols = priced
        priced_target = np.clip(g0[priced], -l1, l1)
    # the free columns' conditions, keeping g_L (the budget) as it is when the rows allow it; with an l1 penalty
    # alone the penalized columns aim at g clipped into [-l1, l1], else at 0 (inside that box, and reachable
    # where the clipped value is not: rows of one label reach only one sign).  Attacked free columns (immutable
    # numerical features; at radius 0 every numerical one) may instead keep g inside the attack's ball
    attacked = attacked_free_columns(inst, exact) if alpha > 0 else exact[:0]
    plain = np.setdiff1d(exact, attacked)
    kept = np.concatenate([plain, attacked, priced_cols, limited])
    n_free = kept.size - limited.size
    targets = [priced_target] + ([np.zeros(priced_cols.size)] if priced_cols.size else [])
    plans = ([_into_ball(g0[attacked], alpha * float(mass @ np.abs(slopes)), attack_p)] if attacked.size else []) \
        + [np.zeros(attacked.size)]
    repaired, ball_left = None, None
    for attack_aim in plans:
        for aim in targets:
            target = np.concatenate([np.zeros(plain.size), attack_aim, aim, g0[limited]])
            repaired = repair_free_columns(A[:, kept], target, mass, sigma, slopes, room, lo, hi, bvls)
            if repaired is None and limited.size:
                repaired = repair_free_columns(A[:, kept[:n_free]], target[:n_free], mass, sigma, slopes, room, lo,
                                               hi, bvls)
            if repaired is not None:
                break
        if repaired is not None and attacked.size:
            g_att = A[:, attacked].T @ (mass * repaired * sigma)
            ball_left = _ball_left(g_att, alpha * float(mass @ np.abs(repaired)), attack_p)
            if ball_left is None:          # the attack's ball does not hold the attacked free columns' sums
                repaired = None
        if repaired is not None:
            break
    if repaired is None:
        return LowerBound(-np.inf, rows, mass, slopes, 1.0, float(np.max(np.abs(g0[exact]), initial=0.0)))
    S_c = float(mass @ rows.cost)
    # at radius 0 the ball holds P_N and its costless moves: masses on costly rows are mixed away (t = 0)
    lam0 = label_floor(inst, loss)

    def evaluated(slopes_: np.ndarray) -> LowerBound:
        g, residual, met = column_sums(A, mass, sigma, slopes_, plain)
        if not met:
            return LowerBound(-np.inf, rows, mass, slopes_, 1.0, residual)
        value = mass * (-slopes_ * shift - conjugate(loss, slopes_))
        reach = alpha * float(mass @ np.abs(slopes_))
        attack = (attack_p, reach if ball_left is None else ball_left) if alpha > 0 else None
        best, scale = budget_bound(inst, loss, value, g, priced, limited, S_c, float(lam0), coef, attack)
        return LowerBound(best, rows, mass, slopes_, scale, residual)

    bound = evaluated(repaired)
    if bound.scale < 1.0 and limited.size and alpha == 0 and not inst.penalized:
        # the budget overspent by the norm-priced columns' sums: they are repaired too, scaled into what the
        # transport cost leaves (``||Gamma g_L|| / lip = eps - S_c``), instead of mixing every mass with the nominal
        # rows.  First order, the mixing loses (spent - eps) base / eps, the repair lam (spent - eps), and lam <= base
        # / eps (:mod:`.budget`'s docstring).  German credit, 400 rows in raw units, radius 0.1: the barrier master's
        # point overspent by 1e-7 to 2e-6 (credit_amount's column, values in the thousands, amplifies rounding-size
        # slope errors), the mixing left the bound 1e-6 relative below the optimum and two conic masters followed
        g_L = A[:, limited].T @ (mass * repaired * sigma)
        aimed = _budget_target(inst, g_L, limited, S_c, float(loss.lipschitz))
        if aimed is not None:
            target = np.concatenate([np.zeros(kept.size - limited.size), aimed])
            again = repair_free_columns(A[:, kept], target, mass, sigma, repaired,
                                        np.minimum(room, slope_room(repaired, lo, hi)), lo, hi, bvls)
            if again is not None:
                candidate = evaluated(again)
                if candidate.value > bound.value:
                    bound = candidate
    return bound


def attacked_free_columns(inst: DROInstance, exact: np.ndarray) -> np.ndarray:
    """The free columns among ``exact`` that an adversarial loss attacks: numerical features' columns (immutable ones;
    at radius 0 every one not fixed), none with a penalty (their sums are then priced by it)."""
    if inst.penalized or not hasattr(inst.loss, "at"):
        return exact[:0]
    offset = 1 if inst.fit_intercept else 0
    return exact[(exact >= offset) & (exact < offset + inst.n_numerical)]


def _into_ball(r: np.ndarray, radius: float, p: float) -> np.ndarray:
    """``r`` brought into the ball ``||.||_p <= radius (1 - 1e-9)`` (clipped for ``p = inf``, scaled otherwise): the
    attacked free columns' target in the repair, which keeps them as they are when they fit."""
    radius = radius * (1.0 - 1e-9)
    if np.isinf(p):
        return np.clip(r, -radius, radius)
    norm = float(np.linalg.norm(r, ord=p))
    return r if norm <= radius else r * (radius / norm)


def _ball_left(g_att: np.ndarray, radius: float, p: float) -> Optional[float]:
    """The radius the attack's ball ``||h||_p <= radius`` leaves to the norm-priced columns once its attacked free
    columns' part is ``h_F = g_att`` (their sums: the budget does not pay free columns): ``(radius^p -
    ||g_att||_p^p)^(1/p)`` (``radius^p`` lowered by ``1e-12`` of itself: rounding's worth), ``radius`` itself for ``p =
    inf`` (a box); ``None`` when ``g_att`` is outside the ball."""
    if np.isinf(p):
        return radius if float(np.max(np.abs(g_att), initial=0.0)) <= radius else None
    left = radius ** p * (1.0 - 1e-12) - float(np.sum(np.abs(g_att) ** p))
    if not left >= 0:
        return None
    return left ** (1.0 / p)


# ------------------------------------------------------------------------------------------ pieces
def _margins(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray) -> np.ndarray:
    return row_margins(inst, rows, intercept, coef)


def initial_slopes(loss, u: np.ndarray):
    """``alpha_k = L'(u_k)`` and the room each may move in the first repair: for a smooth loss the distance
    to the slope domain's ends; for a piecewise-affine loss the subdifferential (within
    :data:`KINK_RTOL` of a kink: its middle and half its width, elsewhere the slope and no room), so that
    the tangents stay tight."""
    lo, hi = slope_domain(loss)
    pieces = loss.pieces
    if pieces is None:
        alpha = np.clip(np.asarray(loss.derivative(u), dtype=float), lo, hi)
        return alpha, slope_room(alpha, lo, hi)
    a, b = (np.asarray(v, dtype=float) for v in pieces)
    values = np.multiply.outer(u, a) + b
    top = values.max(axis=1, keepdims=True)
    active = values >= top - KINK_RTOL * np.maximum(1.0, np.abs(top))
    left = np.where(active, a, np.inf).min(axis=1)
    right = np.where(active, a, -np.inf).max(axis=1)
    return 0.5 * (left + right), 0.5 * (right - left)


def with_every_sample(inst, rows, mass, slopes, room, lo, hi):
    """Masses clipped at 0 and scaled to ``p_n`` per sample; a sample without mass gets its nominal row at
    slope 0 (a valid atom, contributing ``-p_n L*(0)``).  Rows whose mass is below :data:`MASS_DROP` ``p_n``
    are left out and their sample's masses scaled back to ``p_n`` (any masses summing to ``p_n`` make a valid
    point): a smoothed or barrier dual point spreads ``1e-300``-size masses over every working row (2,260,000
    rows at N = 1,000,000, half of them negligible)."""
    p = inst.p
    mass = np.maximum(np.asarray(mass, dtype=float), 0.0)
    room = slope_room(slopes, lo, hi) if room is None else np.minimum(np.asarray(room, dtype=float), slope_room(slopes, lo, hi))
    total = np.bincount(rows.sample, weights=mass, minlength=inst.n_samples)
    missing = np.flatnonzero((total <= 0) & (p > 0))
    if missing.size and isinstance(rows, FractionalRows):
        raise ValueError("a fractional dual point needs mass on every sample")
    if missing.size:
        nominal = take_rows(enumerate_configurations(inst, nominal_only=True), missing)
        rows = concat_rows([rows, nominal])
        zero = np.clip(0.0, lo, hi)
        mass = np.concatenate([mass, p[missing]])
        slopes = np.concatenate([slopes, np.full(missing.size, zero)])
        room = np.concatenate([room, np.full(missing.size, min(zero - lo, hi - zero))])
        total[missing] = p[missing]
    scale = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    mass = mass * scale[rows.sample]
    keep = mass > MASS_DROP * p[rows.sample]
    if not keep.all():          # every sample keeps its heaviest row (its mass is at least p_n / rows)
        index = np.flatnonzero(keep)
        rows = rows.take(index) if isinstance(rows, FractionalRows) else take_rows(rows, index)
        mass, slopes, room = mass[index], slopes[index], room[index]
        total = np.bincount(rows.sample, weights=mass, minlength=inst.n_samples)
        mass = mass * np.divide(p, total, out=np.zeros_like(p), where=total > 0)[rows.sample]
    return rows, mass, slopes, np.maximum(room, 0.0)


def row_matrix(inst: DROInstance, rows: ConfigurationRows) -> sp.csr_matrix:
    """``a_k = [1, x_n, dummies(z)]`` (the intercept column only when fitted), one row per configuration (or the
    expected rows of :class:`FractionalRows`)."""
    if isinstance(rows, FractionalRows):
        return rows.matrix
    return csr_row_design(inst, rows)
