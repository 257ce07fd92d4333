"""Certified lower bounds of a fitted model: its worst-case distribution's dual point (:mod:`.support`), and the KKT
multiplier program on tied maximizers, each evaluated by the Lagrangian certificate (:mod:`.lagrangian`, whose
docstring states the bound, its repair and its sources)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from .lagrangian import (KINK_RTOL, MASS_DROP, SMOOTH_BAND, LowerBound, attack_offset, attack_pieces, attacked_loss,
                         initial_slopes, lagrangian_bound, loss_arguments, row_matrix)
from .penalty import penalty_gradient, penalty_split, penalty_zeros
from .repair import BVLS_MAX_ROWS, RESIDUAL_RTOL, SPARSE_GRAM_DENSITY, column_roles, slope_room
from ..gaps import gap_scale
from ..losses.conjugate import slope_domain
from ..instance import DROInstance
from ..oracles.rows import ConfigurationRows, FractionalRows, concat_rows, row_losses, take_rows, unique_rows

#: what this module defines, and the Lagrangian certificate's names it hands on (their homes are
#: :mod:`drokit.certificates.lagrangian`, :mod:`~drokit.certificates.penalty` and :mod:`~drokit.certificates.repair`)
__all__ = ["certified_lower_bound", "kkt_multipliers", "CANDIDATE_RTOLS", "KKT_MAX_ROWS", "LowerBound",
           "lagrangian_bound", "attack_offset", "penalty_gradient", "penalty_split", "penalty_zeros", "FractionalRows",
           "BVLS_MAX_ROWS", "KINK_RTOL", "MASS_DROP", "RESIDUAL_RTOL", "SMOOTH_BAND", "SPARSE_GRAM_DENSITY"]

#: the multiplier program looks for KKT multipliers among the rows within these relative distances of their
#: sample's maximum at the model, wider while the bound is not tight: a model optimal to a solver's tolerance
#: in a flat direction breaks the optimum's ties by more than its objective error
CANDIDATE_RTOLS = (1e-6, 1e-4, 1e-2)

#: the dual program on tied maximizers runs only up to this many candidate rows: at 100,000 rows it took
#: 55-67 s of a 113-186 s fit (benchmarks/bench_scaling.py, synthetic 10 + 10), and at 10,000 rows 8.8 s of
#: 15 s while the direct bound was already within 1.4e-7 (5.2 s with the cap); above it the direct bound is
#: kept (the certificate's status rule asks 1e-6), else the method's bound is reported (source "method")
KKT_MAX_ROWS = 2_000


def certified_lower_bound(inst: DROInstance, intercept: float, coef: np.ndarray,
                          upper: Optional[float] = None, tol: float = 1e-9,
                          rows: Optional[ConfigurationRows] = None, control=None) -> Optional[LowerBound]:
    """The Lagrangian lower bound of the module docstring for the model ``(intercept, coef)``; ``None``
    where it does not apply (a model whose worst case is infinite).

    First at the worst-case distribution of the model with slopes ``L'(u)``; while that bound is not
    within ``tol`` (relative) of ``upper`` (ties among maximizers: the worst-case distribution is not
    unique and only some of them are KKT multipliers), at the multipliers of :func:`kkt_multipliers` on
    the rows near their sample's maximum at ``lam*`` (:data:`CANDIDATE_RTOLS`): every such row when the
    rows can be enumerated, else the oracle's maximizers and those of ``rows`` (a method's working set,
    e.g. the cutting plane's last master); the largest bound found.  ``control``: the fit's
    :class:`~drokit.run_control.RunControl`, which records the KKT programs' solver calls."""
    from .support import worst_case_support
    fixed = inst.evaluated_at(coef)                # the model's attack is a fixed shift here (adversarial losses)
    support = worst_case_support(fixed, intercept, coef)
    if not np.isfinite(support.value):
        return None
    upper = support.value + inst.penalty_value(coef) if upper is None else float(upper)
    slopes, room = initial_slopes(attacked_loss(inst)[0], loss_arguments(inst, support.rows, intercept, coef))
    best = lagrangian_bound(inst, support.rows, support.mass, slopes, room, coef=coef)
    enumerated = support.method in ("enumeration", "nominal")
    for widen in CANDIDATE_RTOLS:
        if upper - best.value <= tol * gap_scale(upper):
            break
        candidates = support.candidates
        if widen != CANDIDATE_RTOLS[0] and enumerated:
            candidates = worst_case_support(fixed, intercept, coef, candidate_rtol=widen).candidates
        if rows is not None and rows.size and not enumerated:
            near = _near_maximizers(fixed, rows, intercept, coef, support, widen)
            candidates = unique_rows(concat_rows([candidates, near]))
        elif widen != CANDIDATE_RTOLS[0] and not enumerated:
            break                                  # the oracle returns maximizers only: nothing to widen
        if candidates.size > KKT_MAX_ROWS:
            break                                  # too large to be cheap: the caller falls back (source "method")
        point = kkt_multipliers(inst, candidates, intercept, coef, control=control)
        if point is not None:
            candidate = lagrangian_bound(inst, *point, coef=coef)
            if candidate.value > best.value:
                best = candidate
    return best


def _near_maximizers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray,
                     support, rtol: float) -> ConfigurationRows:
    """The rows of ``rows`` within ``rtol * max(1, |value|)`` of their sample's maximum of ``l_k - lam* c_k``
    (the maxima from the worst-case ``support``'s bracketing maximizers)."""
    lam = support.lam if np.isfinite(support.lam) else 0.0
    best_rows = support.candidates
    top = np.full(inst.n_samples, -np.inf)
    np.maximum.at(top, best_rows.sample, row_losses(inst, best_rows, intercept, coef) - lam * best_rows.cost)
    phi = row_losses(inst, rows, intercept, coef) - lam * rows.cost
    keep = phi >= top[rows.sample] - rtol * max(1.0, abs(support.value))
    return take_rows(rows, np.flatnonzero(keep))


def kkt_multipliers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, control=None):
    """Masses and slopes on ``rows`` (the rows near their sample's maximum at the model) from the Lagrange
    dual of the problem restricted to these rows, a small conic program over the masses ``m`` and the slope
    masses ``v = m alpha``:

        max   sum_k [-m_k L*(v_k / m_k) - v_k shift_k]  -  M (||r||_1 + b)  (- lam_0 S in regression)  - pen*(g_P, g_2)
        s.t.  sum_{k of n} m_k = p_n,  m >= 0,
              r = A_F^T (sigma v),  S = sum_k m_k c_k + ||Gamma (A_L^T (sigma v) - g_2)||_p / lip(L) <= eps + b,  b >= 0.

    With an adversarial loss ``L`` is the attacked loss at the attacked arguments and the norm-priced columns get the
    attack's part ``h``, ``||h||_p <= alpha sum_k |v_k|`` (module docstring).  ``-m L*(v / m)`` is the loss's dual hypograph (:func:`drokit.losses.conjugate.dual_hypograph`: exponential
    cones for the logistic loss, second-order cones for Huber and smooth hinge, an LP for piecewise-affine
    losses); for a loss without one, the tangent at ``u_k`` with slopes in a narrow band
    (:data:`SMOOTH_BAND`) around ``L'(u_k)``.  The feasibility conditions are soft (weight ``M``): a model
    optimal only to a solver's tolerance may not have every row of the exact optimum's support among its
    near-maximizers.  :func:`lagrangian_bound` then makes the point exactly feasible and evaluates it
    exactly, so this program only chooses the point.  With a penalty, ``A_F`` holds the unpenalized free columns
    only (the intercept): the penalized ones (``g_P = A_P^T (sigma v)``) and the penalty's part ``g_2`` of the
    norm-priced ones are priced by the penalty's conjugate ``pen*(g) = sum_j (|g_j| - l1)_+^2 / (4 l2)``, or ``|g_j|
    <= l1`` (soft) without ``l2`` (:func:`_penalty_conjugate`): the exact restricted dual, whatever the signs of the
    model's (near-zero) coefficients (fuzz seeds 41978, 60516).  Returns ``(rows, mass, slopes, room)`` (the rows twice for an adversarial
    regression: :func:`attack_pieces`) or ``None`` when the program is not solved."""
    from ..conic.builder import Affine, ProgramBuilder
    from ..losses.conjugate import dual_hypograph
    from ..metrics.costs import NormCost
    from ..solvers.base import solve_with_retries
    from ..solvers.clarabel import ClarabelBackend
    loss, attack_p, attack_alpha = attacked_loss(inst)
    rows, u, direction = attack_pieces(inst, rows, intercept, coef)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    K = rows.size
    losses = loss.value(u)
    weight = 1e4 * max(1.0, float(np.max(np.abs(losses), initial=0.0)), float(np.max(np.abs(u), initial=0.0)))
    pb = ProgramBuilder()
    m = pb.var("mass", K)
    v = pb.var("slope_mass", K)
    pb.add_nonneg(m)
    owner = sp.csr_matrix((np.ones(K), (rows.sample, np.arange(K))), shape=(inst.n_samples, K))
    pb.add_zero(m.premultiply(owner) - inst.p)
    w = dual_hypograph(pb, loss, m, v)
    if w is None:        # tangents at u_k: L(u) >= L(u_k) + alpha (u - u_k), slopes near L'(u_k)
        alpha, half = initial_slopes(loss, u)
        pb.add_nonneg(Affine.vstack([v - m * (alpha - SMOOTH_BAND * half), m * (alpha + SMOOTH_BAND * half) - v]))
        value = m.premultiply(losses[None, :]) - v.premultiply((u + shift)[None, :])
    else:
        value = w.sum() - v.premultiply(shift[None, :])
    weighted = sp.csr_matrix(A.multiply(sigma[:, None])).T.tocsr()     # one row per column of theta
    offset = 1 if inst.fit_intercept else 0
    # unpenalized free columns (the intercept; every free column without a penalty) need g_j = 0 (soft, weight M);
    # a penalized one is priced by the penalty's conjugate, whatever the model's signs (penalty_relief)
    exact = free[free < offset] if inst.penalized else free
    priced = free[free >= offset] if inst.penalized else free[:0]
    if exact.size:
        r = pb.var("residual", exact.size)
        pb.add_nonneg(r)
        pb.add_nonneg(Affine.vstack([r - v.premultiply(weighted[exact]), r + v.premultiply(weighted[exact])]))
        value = value - r.sum() * weight
    if priced.size:
        value = value - _penalty_conjugate(pb, v.premultiply(weighted[priced]), float(inst.l1_penalty),
                                           float(inst.l2_penalty), weight)
    eps = float(inst.radius)
    if True:  # at radius 0 too: costly rows then carry no mass
        lip = float(loss.lipschitz)
        spent = m.premultiply(rows.cost[None, :])
        if limited.size and lip > 0:
            offset = 1 if inst.fit_intercept else 0
            t = pb.var("norm", 1)
            gamma = np.asarray(inst.metric.gamma, dtype=float)[limited - offset]
            g_L = v.premultiply(sp.diags(gamma) @ weighted[limited])
            if inst.penalized:     # the split g_L = g_1 + g_2: the budget pays g_1, the penalty's conjugate g_2
                g_2 = pb.aux("penalty_part", limited.size)
                g_L = g_L - g_2 * gamma
                value = value - _penalty_conjugate(pb, g_2, float(inst.l1_penalty), float(inst.l2_penalty), weight)
            if attack_alpha > 0:
                # the attack's part h: ||h||_p <= alpha sum_k d_k v_k, d_k = sign(alpha_k) at the model's attacked
                # argument (-1 in classification: the slopes of a non-increasing loss are <= 0), so that the radius is
                # affine in v (alpha sum_k |v_k| is not concave); the evaluation's sum_k |v_k| is at least as large
                from ..losses.adversarial import dual_exponent
                h = pb.aux("attack_part", limited.size)
                reach = v.premultiply(direction[None, :]) * attack_alpha
                pb.add_nonneg(reach)
                NormCost(p=dual_exponent(attack_p)).add_dual_norm_leq(pb, h, reach, np.ones(limited.size))
                g_L = g_L - h * gamma
            NormCost(p=inst.metric.dual_p).add_dual_norm_leq(pb, g_L, t, np.ones(limited.size))
            spent = spent + t * (1.0 / lip)
        over = pb.var("over_budget", 1)
        pb.add_nonneg(Affine.vstack([over, over + eps - spent]))
        value = value - over * weight
        if not inst.is_classification and np.isfinite(inst.metric.kappa):
            value = value - spent * (lip / float(inst.metric.kappa))
    pb.minimize(-value)
    try:
        backend = ClarabelBackend()
        # one solve: the point only has to be good, the repair makes it feasible (an inaccurate answer will do)
        sol = solve_with_retries(backend, pb.build(), backend.accuracy_options(1e-10), retry_inaccurate=False,
                                 control=control, stage="certificate")
    except Exception:                              # the bound only improves on success
        return None
    if sol.x is None or sol.status not in ("optimal", "optimal_inaccurate"):
        return None
    lo, hi = slope_domain(loss)
    mass = np.maximum(sol.x[:K], 0.0)
    fallback = np.clip(np.asarray(loss.derivative(u), dtype=float), lo, hi)
    slopes = np.clip(np.divide(sol.x[K:2 * K], mass, out=fallback, where=mass > 1e-300), lo, hi)
    return rows, mass, slopes, slope_room(slopes, lo, hi)


def _penalty_conjugate(pb, g, l1: float, l2: float, weight: float):
    """The penalty's price of the column sums ``g`` in the multiplier program: ``sum_j (|g_j| - l1)_+^2 / (4 l2)``
    (minus :func:`~drokit.certificates.penalty.penalty_relief`), through ``e_j >= |g_j| - l1``, ``e_j >= 0`` and the
    rotated cone ``e_j^2 <= 4 l2 q_j`` written as ``||(e_j, l2 - q_j)||_2 <= l2 + q_j``; with ``l2 = 0`` the condition
    ``|g_j| <= l1`` (soft, weight ``weight`` on ``sum e_j``)."""
    from ..conic.builder import Affine
    e = pb.aux("penalty_excess", g.size)
    pb.add_nonneg(Affine.vstack([e, e - g + l1, e + g + l1]))
    if l2 <= 0:
        return e.sum() * weight
    q = pb.aux("penalty_price", g.size)
    pb.add_soc(q + l2, [e, l2 - q])
    return q.sum()
