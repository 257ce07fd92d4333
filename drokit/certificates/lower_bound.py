"""Certified lower bounds of a fitted model: its worst-case distribution's dual point (:mod:`.support`), for adversarial
classification the smoothed primal's points (:mod:`.smoothed_point`), and the KKT multiplier program on tied maximizers
(above :data:`KKT_MAX_ROWS` rows, for piecewise-affine classification losses, on the rows that are not settled:
:func:`_reduced_program`), each evaluated by the Lagrangian certificate (:mod:`.lagrangian`, whose docstring states
the bound, its repair and its sources)."""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import scipy.sparse as sp

from .budget import attack_offset
from .lagrangian import (KINK_RTOL, MASS_DROP, SMOOTH_BAND, LowerBound, attack_pieces, attacked_loss,
                         attacked_free_columns, initial_slopes, lagrangian_bound, loss_arguments, row_matrix)
from .penalty import penalty_gradient, penalty_split, penalty_zeros
from .repair import BVLS_MAX_ROWS, RESIDUAL_RTOL, SPARSE_GRAM_DENSITY, column_roles, slope_room
from ..gaps import gap_scale
from ..losses.conjugate import slope_domain
from ..instance import DROInstance
from ..oracles.enumeration import enumerate_configurations
from ..oracles.rows import ConfigurationRows, FractionalRows, concat_rows, row_losses, take_rows, unique_rows
from .smoothed_point import smoothed_applies
from .support import worst_case_support

#: what this module defines, and the Lagrangian certificate's names it hands on (their homes are
#: :mod:`drokit.certificates.lagrangian`, :mod:`~drokit.certificates.budget`, :mod:`~drokit.certificates.penalty` and
#: :mod:`~drokit.certificates.repair`)
__all__ = ["certified_lower_bound", "kkt_multipliers", "CANDIDATE_RTOLS", "KKT_MAX_ROWS", "HELD_KINK_RTOL",
           "SMOOTHED_CANDIDATE_RTOL", "LowerBound",
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

#: a row is held out of a large multiplier program (:func:`_reduced_program`) when no second piece of its
#: piecewise-affine loss is within this (relative) distance of the loss's value at its argument
HELD_KINK_RTOL = 1e-4

#: the smoothed primal of an adversarial classification fit (:mod:`.smoothed_point`) runs over the rows within this
#: relative distance of their sample's maximum at ``lam*``: a model optimal to a solver's tolerance can misplace a
#: tie by more than the KKT candidates' 1e-6, and rows farther off get no mass at the temperatures used
SMOOTHED_CANDIDATE_RTOL = 1e-2


def certified_lower_bound(inst: DROInstance, intercept: float, coef: np.ndarray,
                          upper: Optional[float] = None, tol: float = 1e-9,
                          rows: Optional[ConfigurationRows] = None, control=None) -> Optional[LowerBound]:
    """The Lagrangian lower bound of the module docstring for the model ``(intercept, coef)``; ``None``
    where it does not apply (a model whose worst case is infinite).

    First at the worst-case distribution of the model with slopes ``L'(u)``; while that bound is not
    within ``tol`` (relative) of ``upper`` (ties among maximizers: the worst-case distribution is not
    unique and only some of them are KKT multipliers), for an adversarial classification loss that is smooth at the
    points of the smoothed primal (:func:`_smoothed_bound`: Newton's method in ``d + 1`` variables, no conic program),
    then at the multipliers of :func:`kkt_multipliers` on
    the rows near their sample's maximum at ``lam*`` (:data:`CANDIDATE_RTOLS`): every such row when the
    rows can be enumerated, else the oracle's maximizers and those of ``rows`` (a method's working set,
    e.g. the cutting plane's last master); above :data:`KKT_MAX_ROWS` rows only for piecewise-affine classification
    losses (plain or adversarial), with the settled rows held (:func:`_reduced_program`).  The largest bound found, with what was tried in
    :attr:`LowerBound.search` (``smoothed``: its record; ``multiplier_programs``; ``size_limit``: the candidates' count
    where the search stopped for size).  ``control``: the fit's
    :class:`~drokit.run_control.RunControl`, which records the KKT programs' solver calls."""
    fixed = inst.evaluated_at(coef)                # the model's attack is a fixed shift here (adversarial losses)
    support = worst_case_support(fixed, intercept, coef)
    if not np.isfinite(support.value):
        return None
    upper = support.value + inst.penalty_value(coef) if upper is None else float(upper)
    slopes, room = initial_slopes(attacked_loss(inst)[0], loss_arguments(inst, support.rows, intercept, coef))
    best = lagrangian_bound(inst, support.rows, support.mass, slopes, room, coef=coef)
    enumerated = support.method in ("enumeration", "nominal")
    search = {"multiplier_programs": 0}
    if upper - best.value > tol * gap_scale(upper) and smoothed_applies(inst):
        best, search["smoothed"] = _smoothed_bound(inst, support, intercept, coef, upper, tol, best, rows, enumerated,
                                                   control)
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
        held = None
        if candidates.size > KKT_MAX_ROWS:
            reduced = _reduced_program(inst, candidates, intercept, coef)
            if reduced is None:
                search["size_limit"] = int(candidates.size)
                break                              # too large to be cheap: the caller falls back (source "method")
            candidates, held = reduced
        point = kkt_multipliers(inst, candidates, intercept, coef, control=control, fixed=held)
        search["multiplier_programs"] += 1
        if point is not None:
            candidate = lagrangian_bound(inst, *point, coef=coef)
            if candidate.value > best.value:
                best = candidate
    best.search = search
    return best


def _reduced_program(inst: DROInstance, candidates: ConfigurationRows, intercept: float, coef: np.ndarray):
    """``(free rows, (held rows, masses, slopes))`` for a multiplier program over more than :data:`KKT_MAX_ROWS`
    candidates, for a classification loss that is piecewise affine (plain or adversarial: hinge at 10,000 x 10 rows,
    kappa inf, was certified only by the solver's dual objective and solved twice, 1.45 s; with the reduction the
    bound is an explicit dual point, 0.34 s): a sample with one candidate row
    whose (attacked) argument is off every kink (no second piece within :data:`HELD_KINK_RTOL` of the loss's value)
    keeps its whole mass ``p_n`` and that piece's slope, held fixed (the KKT multipliers' values there at an optimum
    with the same maximizers and active pieces); the program chooses the rest.  ``None`` when the reduction does not
    apply or leaves more than :data:`KKT_MAX_ROWS` rows to choose."""
    loss = attacked_loss(inst)[0]
    if not inst.is_classification or loss.pieces is None:
        return None
    a, b = (np.asarray(v, dtype=float) for v in loss.pieces)
    u = loss_arguments(inst, candidates, intercept, coef)
    values = np.multiply.outer(u, a) + b
    top = values.max(axis=1)
    near = values >= (top - HELD_KINK_RTOL * np.maximum(1.0, np.abs(top)))[:, None]
    single = np.bincount(candidates.sample, minlength=inst.n_samples)[candidates.sample] == 1
    held = single & (near.sum(axis=1) == 1)
    if candidates.size - int(held.sum()) > KKT_MAX_ROWS:
        return None
    slopes = a[np.argmax(values, axis=1)]
    index, rest = np.flatnonzero(held), np.flatnonzero(~held)
    held_rows = take_rows(candidates, index)
    return take_rows(candidates, rest), (held_rows, inst.p[held_rows.sample], slopes[index])


def _smoothed_bound(inst: DROInstance, support, intercept: float, coef: np.ndarray, upper: float, tol: float,
                    best: LowerBound, rows, enumerated: bool, control) -> LowerBound:
    """The best of ``best`` and the Lagrangian bounds at the points of :func:`~drokit.certificates.smoothed_point.
    smoothed_points` (adversarial classification: Newton on the smoothed primal, then on the fixed masses), over the
    rows within :data:`SMOOTHED_CANDIDATE_RTOL` of their sample's maximum at ``lam*`` (every row when enumerated;
    else the oracle's maximizers and those of a method's working set ``rows``) and every nominal row; it stops at
    the first within ``tol`` of ``upper``.  Returns the bound and a record (points, Newton steps, seconds)."""
    from .smoothed_point import smoothed_points
    fixed = inst.evaluated_at(coef)
    if enumerated:
        candidates = worst_case_support(fixed, intercept, coef, candidate_rtol=SMOOTHED_CANDIDATE_RTOL).candidates
    else:
        candidates = support.candidates
        if rows is not None and rows.size:
            near = _near_maximizers(fixed, rows, intercept, coef, support, SMOOTHED_CANDIDATE_RTOL)
            candidates = concat_rows([candidates, near])
    candidates = unique_rows(concat_rows([candidates, support.rows, enumerate_configurations(inst, nominal_only=True)]))
    offset = 1 if inst.fit_intercept else 0
    record = {"points": 0, "newton_steps": 0, "rows": int(candidates.size), "seconds": 0.0}
    t0 = time.perf_counter()
    for point in smoothed_points(inst, candidates, intercept, coef, support.lam, gap_scale(upper)):
        candidate = lagrangian_bound(inst, point.rows, point.mass, point.slopes, coef=point.theta[offset:])
        record.update(points=record["points"] + 1, newton_steps=point.newton_steps)
        if candidate.value > best.value:
            best = candidate
        if upper - best.value <= tol * gap_scale(upper) or (control is not None and control.should_stop()):
            break
    record["seconds"] = time.perf_counter() - t0
    return best, record


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


def kkt_multipliers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, control=None,
                    fixed=None):
    """Masses and slopes on ``rows`` (the rows near their sample's maximum at the model) from the Lagrange
    dual of the problem restricted to these rows, a small conic program over the masses ``m`` and the slope
    masses ``v = m alpha``:

        max   sum_k [-m_k L*(v_k / m_k) - v_k shift_k]  -  M (||r||_1 + b)  (- lam_0 S in regression)  - pen*(g_P, g_2)
        s.t.  sum_{k of n} m_k = p_n,  m >= 0,
              r = A_F^T (sigma v),  S = sum_k m_k c_k + ||Gamma (A_L^T (sigma v) - g_2)||_p / lip(L) <= eps + b,  b >= 0.

    With an adversarial loss ``L`` is the attacked loss at the attacked arguments and the norm-priced columns get the
    attack's part ``h_L``, the attacked free columns (immutable numerical features; at radius 0 every numerical one)
    ``h_F`` with ``g_F = h_F`` (soft), ``||(h_F, h_L)||_p <= alpha sum_k |v_k|`` (:mod:`.lagrangian`'s docstring).
    ``-m L*(v / m)`` is the loss's dual hypograph (:func:`drokit.losses.conjugate.dual_hypograph`: exponential
    cones for the logistic loss, second-order cones for Huber and smooth hinge, an LP for piecewise-affine
    losses); for a loss without one, the tangent at ``u_k`` with slopes in a narrow band
    (:data:`SMOOTH_BAND`) around ``L'(u_k)``.  The feasibility conditions are soft (weight ``M``): a model
    optimal only to a solver's tolerance may not have every row of the exact optimum's support among its
    near-maximizers.  :func:`lagrangian_bound` then makes the point exactly feasible and evaluates it
    exactly, so this program only chooses the point.  ``fixed``: ``(rows, mass, slopes)`` of samples whose masses
    and slopes are held (:func:`_reduced_program`): constants in ``r``, ``S``, the attack's reach and ``g``, their
    samples left out of the mass conditions, and the rows appended to the point returned.  With a penalty, ``A_F``
    holds the unpenalized free columns
    only (the intercept): the penalized ones (``g_P = A_P^T (sigma v)``) and the penalty's part ``g_2`` of the
    norm-priced ones are priced by the penalty's conjugate ``pen*(g) = sum_j (|g_j| - l1)_+^2 / (4 l2)``, or ``|g_j|
    <= l1`` (soft) without ``l2`` (:func:`_penalty_conjugate`): the exact restricted dual, whatever the signs of the
    model's (near-zero) coefficients (fuzz seeds 41978, 60516).  Returns ``(rows, mass, slopes, room)`` (the rows
    twice for an adversarial regression: :func:`attack_pieces`) or ``None`` when the program is not solved."""
    from ..conic.builder import Affine, ProgramBuilder
    from ..losses.conjugate import dual_hypograph
    from ..metrics.costs import NormCost
    loss, attack_p, attack_alpha = attacked_loss(inst)
    rows, u, direction = attack_pieces(inst, rows, intercept, coef)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    K = rows.size
    g_held, spent_held, reach_held = np.zeros(A.shape[1]), 0.0, 0.0
    if fixed is not None:          # held rows: constants (classification only: one attack piece, direction -1)
        f_rows, f_mass, f_slopes = fixed
        f_sigma = inst.row_signs(f_rows.sample, f_rows.flip)[0]
        g_held = row_matrix(inst, f_rows).T @ (f_mass * f_slopes * f_sigma)
        spent_held = float(f_mass @ f_rows.cost)
        reach_held = float(f_mass @ np.abs(f_slopes))
    losses = loss.value(u)
    weight = 1e4 * max(1.0, float(np.max(np.abs(losses), initial=0.0)), float(np.max(np.abs(u), initial=0.0)))
    pb = ProgramBuilder()
    m = pb.var("mass", K)
    v = pb.var("slope_mass", K)
    pb.add_nonneg(m)
    owned = np.unique(rows.sample)
    owner = sp.csr_matrix((np.ones(K), (np.searchsorted(owned, rows.sample), np.arange(K))), shape=(owned.size, K))
    pb.add_zero(m.premultiply(owner) - inst.p[owned])
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
    # attacked free columns (immutable numerical features; at radius 0 every numerical one) may keep their sums in the
    # attack's ball instead: g_F = h_F (soft), h = (h_F, h_L) with ||h||_p <= alpha sum_k |v_k|
    attacked = attacked_free_columns(inst, exact) if attack_alpha > 0 else exact[:0]
    plain = np.setdiff1d(exact, attacked)
    h_parts = []
    if plain.size:
        r = pb.var("residual", plain.size)
        pb.add_nonneg(r)
        g_plain = v.premultiply(weighted[plain]) + g_held[plain]
        pb.add_nonneg(Affine.vstack([r - g_plain, r + g_plain]))
        value = value - r.sum() * weight
    if attacked.size:
        h_F = pb.aux("attack_free_part", attacked.size)
        r_att = pb.aux("attack_free_residual", attacked.size)
        gap = v.premultiply(weighted[attacked]) + g_held[attacked] - h_F
        pb.add_nonneg(Affine.vstack([r_att - gap, r_att + gap]))
        value = value - r_att.sum() * weight
        h_parts.append(h_F)
    if priced.size:
        value = value - _penalty_conjugate(pb, v.premultiply(weighted[priced]) + g_held[priced], float(inst.l1_penalty),
                                           float(inst.l2_penalty), weight)
    eps = float(inst.radius)
    lip = float(loss.lipschitz)
    spent = m.premultiply(rows.cost[None, :]) + spent_held      # at radius 0 too: costly rows then carry no mass
    if limited.size and lip > 0:
        t = pb.var("norm", 1)
        gamma = np.asarray(inst.metric.gamma, dtype=float)[limited - offset]
        g_L = v.premultiply(sp.diags(gamma) @ weighted[limited]) + gamma * g_held[limited]
        if inst.penalized:     # the split g_L = g_1 + g_2: the budget pays g_1, the penalty's conjugate g_2
            g_2 = pb.aux("penalty_part", limited.size)
            g_L = g_L - g_2 * gamma
            value = value - _penalty_conjugate(pb, g_2, float(inst.l1_penalty), float(inst.l2_penalty), weight)
        if attack_alpha > 0:
            h_L = pb.aux("attack_part", limited.size)
            g_L = g_L - h_L * gamma
            h_parts.append(h_L)
        inst.metric.numerical.add_value_leq(pb, g_L, t, limited - offset)       # N(Gamma g_1) <= t
        spent = spent + t * (1.0 / lip)
    if h_parts:
        # the attack's part h: ||h||_p <= alpha sum_k d_k v_k, d_k = sign(alpha_k) at the model's attacked argument (-1
        # in classification: the slopes of a non-increasing loss are <= 0), so that the radius is affine in v (alpha
        # sum_k |v_k| is not concave); the evaluation's sum_k |v_k| is at least as large
        from ..losses.adversarial import dual_exponent
        h = Affine.vstack(h_parts)
        reach = (v.premultiply(direction[None, :]) + reach_held) * attack_alpha
        pb.add_nonneg(reach)
        NormCost(p=dual_exponent(attack_p)).add_dual_norm_leq(pb, h, reach, np.ones(h.size))
    price = lip / float(inst.metric.kappa) if not inst.is_classification and np.isfinite(inst.metric.kappa) else 0.0
    point = solve_multiplier_program(pb, loss, u, control, value=value, spent=spent, budget=eps, weight=weight,
                                     price=price)
    if point is None:
        return None
    mass, slopes = point
    lo, hi = slope_domain(loss)
    if fixed is not None:
        rows = concat_rows([rows, fixed[0]])
        mass, slopes = np.concatenate([mass, fixed[1]]), np.concatenate([slopes, fixed[2]])
    return rows, mass, slopes, slope_room(slopes, lo, hi)


def solve_multiplier_program(pb, loss, u: np.ndarray, control=None, *, value, spent=None, budget: float = 0.0,
                             weight: float = 1.0, price: float = 0.0):
    """Maximize ``value - weight (spent - budget)_+ - price spent`` (the budget a soft condition; ``price``: a floor of
    the budget's multiplier, regression's ``lip / kappa``; no budget term when ``spent`` is None) in a multiplier
    program whose first two variables are the masses ``m`` and slope masses ``v = m alpha`` of ``K = u.size`` rows
    (:func:`kkt_multipliers`, :func:`drokit.certificates.mot_lower_bound.mot_kkt_multipliers`), once with Clarabel at
    1e-10 (the point only has to be good: the repair makes it feasible, so an inaccurate answer will do); ``(mass,
    slopes)`` with ``alpha = v / m`` in the slope domain (``L'(u)`` where ``m = 0``), or ``None``."""
    from ..conic.builder import Affine
    from ..solvers.base import solve_with_retries
    from ..solvers.clarabel import ClarabelBackend
    K = u.size
    if spent is not None:
        over = pb.var("over_budget", 1)
        pb.add_nonneg(Affine.vstack([over, over + budget - spent]))
        value = value - over * weight - spent * price
    pb.minimize(-value)
    try:
        backend = ClarabelBackend()
        sol = solve_with_retries(backend, pb.build(), backend.accuracy_options(1e-10), retry_inaccurate=False,
                                 control=control, stage="certificate")
    except Exception:                              # noqa: BLE001 -- the bound only improves on success
        return None
    if sol.x is None or sol.status not in ("optimal", "optimal_inaccurate"):
        return None
    lo, hi = slope_domain(loss)
    mass = np.maximum(sol.x[:K], 0.0)
    fallback = np.clip(np.asarray(loss.derivative(u), dtype=float), lo, hi)
    return mass, np.clip(np.divide(sol.x[K:2 * K], mass, out=fallback, where=mass > 1e-300), lo, hi)


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
