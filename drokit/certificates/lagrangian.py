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
``S = sum_k m_k c_k + ||Gamma g_L||_p / lip(L)`` is at most ``eps`` (``p`` the ground norm's exponent).  The
point is made feasible exactly, in the manner of the barrier solver's certificate
(:mod:`drokit.solvers.barrier`):

1. free columns: the slopes change by ``r_k sigma_k (A_F c)_k`` with room ``r_k`` to the slope domain's
   ends, ``c`` solving ``A_F^T diag(m r) A_F c = -g_F`` (valid when ``|A_F c| <= 1``; else a bounded
   least-squares change by an active set that fixes each row at the end it reaches; failing that, on up to
   ``BVLS_MAX_ROWS`` rows, a bounded least-squares change in which every row may move back into the domain --
   the smooth hinge's rows at its flat pieces' slopes 0 and -1 needed it on hepatitis), then once more on the
   residual;
2. budget: when ``S > eps`` the point is mixed with the nominal rows at slope 0,
   ``m' = t m + (1 - t) p`` (nominal), ``alpha = 0`` there, ``t = eps / S``: ``g`` scales by ``t`` (the free
   conditions stay exact) and ``S`` becomes ``eps``.

The multipliers come from the worst-case distribution of the returned model
(:func:`~drokit.certificates.support.worst_case_support`, at most ``N + 1`` atoms) with
slopes ``alpha_k = L'(u_k)``; at a kink of a piecewise-affine loss the slope starts at the middle of the
subdifferential, which the repair can move.  At an optimum these are the KKT multipliers, so the bound
meets the upper bound up to the optimization error of the model.  With an l1 / l2 penalty the penalized
coefficients' columns need no exact zero: the penalty prices ``g_j`` (:func:`_budget_bound`).

Adversarial losses (DR-ARO, selvi2025 thesis Cor. 8: ``L(u - alpha ||beta_x||_{p*})``, or ``max L(r +- alpha
||beta_x||_{p*})`` in regression): the worst attack is a shift of the argument by ``c(beta) = alpha ||beta_x||_{p*}``,
and ``sup_{|delta| <= c} (alpha_k (u + delta)) = alpha_k u + |alpha_k| c`` gives, with ``L`` the attacked (inner)
loss, ``L_attacked(u_k) >= alpha_k u_k + |alpha_k| c(beta) - L*(alpha_k)`` for every slope.  The Lagrangian gains
``A ||beta_x||_{p*}`` with ``A = alpha sum_k m_k |alpha_k| >= 0``, and ``min_beta (h' beta + A ||beta||_{p*}) = 0`` for
``||h||_p <= A``: the norm-priced columns' sums split once more, ``g_L = g_1 + g_2 + h`` (:func:`attack_offset`), the
budget paying only ``g_1``.  The slopes start at ``L'`` of the attacked argument (``u - c`` at the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..losses.conjugate import conjugate, slope_domain
from ..instance import DROInstance
from ..oracles.design import csr_row_design, sparse_gram
from ..oracles.rows import (ConfigurationRows, FractionalRows, concat_rows, enumerate_configurations, row_margins,
                            take_rows)

#: largest free-column residual |g_F| (relative to max |m alpha|) accepted after the repair: rounding
RESIDUAL_RTOL = 1e-12

#: the multiplier program may move a smooth loss's slope this fraction of its room away from ``L'(u_k)``
SMOOTH_BAND = 1e-3

#: rows whose argument is within this (relative) distance of a kink of a piecewise-affine loss get the
#: whole subdifferential there
KINK_RTOL = 1e-7

#: rows with less mass than this times their sample's ``p_n`` leave a dual point (:func:`_with_every_sample`)
MASS_DROP = 1e-15

#: with an l1 penalty a coefficient within this (relative to ``max(1, max |beta|)``) of 0 counts as 0: a solver's
#: 1e-9 where the lasso's optimum is 0 (its multiplier can then be anywhere in ``[-l1, l1]``, not ``-l1 sign``)
PENALTY_ZERO_RTOL = 1e-7

#: :func:`_bvls_repair` runs on at most this many rows (a dense bounded least-squares problem of that width;
#: scipy's BVLS on random problems of 40 columns: 0.04 s at 500 rows, 0.45 s at 1,000, 4.7 s at 2,000)
BVLS_MAX_ROWS = 1_000

#: its weight on the conditions against the size of the change (relative to the masses' scale)
BVLS_WEIGHT = 1e6

#: :func:`_weighted_gram` densifies a design of at most this many entries (256 MB)
DENSE_GRAM_LIMIT = 32_000_000

#: ... unless at most this fraction of its entries are nonzero: a wide one-hot design, whose sparse product is cheaper
#: (5,000 rows x 310 columns, 2 % nonzero, as the 300-level table: 11.2 -> 4.6 ms, one thread; its fits 2-4 % faster;
#: synthetic 10 + 10 is 35 % nonzero and census-like 15 %: dense)
SPARSE_GRAM_DENSITY = 0.05
#: with a penalty, the split ``g_L = g_1 + g_2`` of the norm-priced columns (:func:`_budget_bound`) is searched
#: (Powell's method from the best candidate split) when there are at most this many of them.  Any split is a valid
#: bound, so the search only tightens it: fuzz seed 111386 (pinball, l2 = 0.125, one norm-priced column): the best
#: candidate split left the bound 7e-7 below the optimum (1.4e-6 relative, uncertified: source "method"), the searched
#: one meets the exact dual function (2e-11)
SPLIT_SEARCH_MAX = 20


@dataclass
class LowerBound:
    """A certified lower bound ``value`` on the optimal value and the dual point that proves it: the rows,
    their masses and slopes after the repair, the budget mixing weight ``scale`` (1 = no mixing) and the
    largest free-column residual ``|g_F|`` left (rounding)."""

    value: float
    rows: "ConfigurationRows | FractionalRows"
    mass: np.ndarray
    slopes: np.ndarray
    scale: float
    residual: float


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


def attack_offset(r: np.ndarray, radius: float, p: float, gamma: Optional[np.ndarray] = None,
                  p_norm: float = 2.0) -> np.ndarray:
    """A point ``h`` of the attack's ball ``||h||_p <= radius`` that leaves the budget the least of ``r`` (the norm-priced
    columns' sums): ``min_h ||gamma (r - h)||_{p_norm}``, ``p_norm`` the ground norm's exponent.  Solved exactly (KKT) for
    ``p = inf`` (``clip(r, -radius, radius)``, for every weighted norm), for ``p_norm = inf`` (a water level: ``|h_j| =
    (|r_j| - mu / gamma_j)_+``, for every ball) and for ``p, p_norm`` in ``{1, 2}``: ``|h_j| = (|r_j| - mu / gamma_j^2)_+``
    (``p = 1``, ``p_norm = 2``), ``min(|r_j|, gamma_j / mu)`` (``p = 2``, ``p_norm = 1``), ``gamma_j^2 |r_j| / (gamma_j^2 +
    mu)`` (both 2), the ball filled in decreasing ``gamma_j`` (both 1); ``mu`` by bisection, from the ball's side.
    Otherwise ``r`` scaled into the ball.  Any point of the ball gives a valid bound (module docstring)."""
    r = np.asarray(r, dtype=float)
    if radius <= 0 or not r.size:
        return np.zeros_like(r)
    gamma = np.ones_like(r) if gamma is None else np.asarray(gamma, dtype=float)
    if np.isinf(p):
        return np.clip(r, -radius, radius)
    if float(np.linalg.norm(r, ord=p)) <= radius:
        return r.copy()
    a, sign = np.abs(r), np.sign(r)
    if p == 1.0 and p_norm == 1.0:
        take = np.zeros_like(a)
        left = radius
        for j in np.argsort(-gamma, kind="stable"):
            take[j] = min(a[j], left)
            left -= take[j]
            if left <= 0:
                break
        return sign * take
    families = {(1.0, 2.0): lambda mu: np.maximum(a - mu / gamma ** 2, 0.0),
                (2.0, 1.0): lambda mu: np.minimum(a, gamma / mu) if mu > 0 else a,
                (2.0, 2.0): lambda mu: a * gamma ** 2 / (gamma ** 2 + mu)}
    family = (lambda mu: np.maximum(a - mu / gamma, 0.0)) if np.isinf(p_norm) else families.get((float(p), float(p_norm)))
    if family is None:
        return r * (radius / float(np.linalg.norm(r, ord=p)))
    return sign * _feasible_member(family, lambda h: float(np.linalg.norm(h, ord=p)), radius)


def _feasible_member(family, size, radius: float) -> np.ndarray:
    """``family(mu)`` at the smallest ``mu >= 0`` (by bisection, from the feasible side) with ``size(family(mu)) <=
    radius``; ``size(family(mu))`` decreases in ``mu``."""
    lo, hi = 0.0, 1.0
    while size(family(hi)) > radius and hi < 1e300:
        hi *= 4.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if size(family(mid)) > radius:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return family(hi)


def lagrangian_bound(inst: DROInstance, rows: ConfigurationRows, mass: np.ndarray, slopes: np.ndarray,
                     room: Optional[np.ndarray] = None, bvls: bool = True,
                     coef: Optional[np.ndarray] = None) -> LowerBound:
    """Repair the dual point ``(rows, mass, slopes)`` and evaluate its Lagrangian (module docstring).

    ``room``: how far each slope may move in the repair (default: its distance to the slope domain's ends).
    ``bvls``: whether the last resort of the repair, a dense bounded least-squares problem (:func:`_bvls_repair`,
    seconds at 1,000 rows), may run; a search that bounds many points in passing turns it off.  ``coef``: the
    model the point comes from, if any (a penalized bound splits the norm-priced columns by it: :func:`_budget_bound`).
    Returns ``-inf`` as the value when the free-column conditions cannot be met.  With an adversarial loss the slopes
    are the attacked loss's and the norm-priced columns may hand ``||h||_p <= alpha sum_k m_k |alpha_k|`` to the attack
    (module docstring)."""
    loss, attack_p, alpha = attacked_loss(inst)
    lo, hi = slope_domain(loss)
    rows, mass, slopes, room = _with_every_sample(inst, rows, mass, slopes, room, lo, hi)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    offset = 1 if inst.fit_intercept else 0
    l1, l2 = float(inst.l1_penalty), float(inst.l2_penalty)
    # a penalized coefficient's column needs no exact zero (the penalty prices g_j: _penalty_relief); with an l1
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
    # where the clipped value is not: rows of one label reach only one sign)
    kept = np.concatenate([exact, priced_cols, limited])
    n_free = exact.size + priced_cols.size
    targets = [priced_target] + ([np.zeros(priced_cols.size)] if priced_cols.size else [])
    repaired = None
    for aim in targets:
        target = np.concatenate([np.zeros(exact.size), aim, g0[limited]])
        repaired = _repair_free_columns(A[:, kept], target, mass, sigma, slopes, room, lo, hi, bvls)
        if repaired is None and limited.size:
            repaired = _repair_free_columns(A[:, kept[:n_free]], target[:n_free], mass, sigma, slopes, room, lo, hi,
                                            bvls)
        if repaired is not None:
            break
    if repaired is None:
        return LowerBound(-np.inf, rows, mass, slopes, 1.0, float(np.max(np.abs(g0[exact]), initial=0.0)))
    slopes = repaired
    g = A.T @ (mass * slopes * sigma)
    residual = float(np.max(np.abs(g[exact]), initial=0.0))
    if residual > RESIDUAL_RTOL * max(1.0, float(np.max(np.abs(mass * slopes), initial=0.0))):
        return LowerBound(-np.inf, rows, mass, slopes, 1.0, residual)
    value = mass * (-slopes * shift - conjugate(loss, slopes))
    S_c = float(mass @ rows.cost)
    # at radius 0 the ball holds P_N and its costless moves: masses on costly rows are mixed away (t = 0)
    lam0 = loss.lipschitz / float(inst.metric.kappa) \
        if not inst.is_classification and np.isfinite(inst.metric.kappa) else 0.0
    attack = (attack_p, alpha * float(mass @ np.abs(slopes))) if alpha > 0 else None
    return _budget_bound(inst, rows, mass, slopes, residual, value, g, priced, limited, S_c, float(lam0), coef, attack)


def _penalty_relief(g: np.ndarray, l1: float, l2: float) -> float:
    """``sum_j min_b (g_j b + l1 |b| + l2 b^2)``: ``-(|g_j| - l1)_+^2 / (4 l2)`` each, or with ``l2 = 0`` 0 when every
    ``|g_j| <= l1`` (else ``-inf``)."""
    excess = np.maximum(np.abs(g) - l1, 0.0)
    if l2 > 0:
        return -float(np.sum(excess ** 2)) / (4.0 * l2)
    return 0.0 if not np.any(excess > 0) else -np.inf


def penalty_gradient(inst: DROInstance, coef: np.ndarray, g: Optional[np.ndarray] = None) -> np.ndarray:
    """``-(l1 sign(beta) + 2 l2 beta)`` per coefficient: the part of ``g = sum_k m_k alpha_k sigma_k a_k`` the penalty
    pays at a penalized optimum (stationarity ``g_j + l1 s_j + 2 l2 beta_j = 0``, ``s_j`` in the subdifferential of
    ``|beta_j|``); where ``beta_j = 0``, ``clip(g_j, -l1, l1)`` when ``g`` is given (else 0)."""
    beta = np.asarray(coef, dtype=float)
    zero = penalty_zeros(inst, beta)
    out = -(float(inst.l1_penalty) * np.sign(beta) + 2.0 * float(inst.l2_penalty) * beta)
    out[zero] = 0.0
    if g is not None:
        out = np.where(zero, np.clip(g, -float(inst.l1_penalty), float(inst.l1_penalty)), out)
    return out


def penalty_zeros(inst: DROInstance, beta: np.ndarray) -> np.ndarray:
    """The coefficients an l1 penalty holds at 0 (within :data:`PENALTY_ZERO_RTOL`; none without an l1 penalty)."""
    beta = np.asarray(beta, dtype=float)
    if not inst.l1_penalty:
        return beta == 0
    return np.abs(beta) <= PENALTY_ZERO_RTOL * max(1.0, float(np.max(np.abs(beta), initial=0.0)))


def _budget_bound(inst: DROInstance, rows, mass, slopes, residual, value, g, priced, limited, S_c, lam0,
                  coef: Optional[np.ndarray] = None, attack=None) -> LowerBound:
    """The Lagrangian's minimum over the feasible ``(theta, lam)`` once the free columns are repaired: ``sum value +
    lam (eps - S_c) + g' theta + pen(beta)`` with the penalty ``l1 ||beta||_1 + l2 ||beta||^2`` (belbasi2023's r-MixF;
    the intercept is not penalized; 0 without one):

    * a penalized free column (dummies, immutable numerical features) gives ``min_b (g_j b + l1 |b| + l2 b^2)``
      (:func:`_penalty_relief`);
    * the norm-priced numerical columns split ``g_L = g_1 + g_2``: ``g_1`` is paid by the budget (the cone
      ``lip ||Gamma^{-1} beta_L||_* <= lam``: ``spent = S_c + ||Gamma g_1||_p / lip``, giving ``lam_0 (eps -
      spent)``), ``g_2`` by the penalty.  Any split is valid; without a penalty ``g_2 = 0``, with one the best of
      ``g_2 = 0``, the soft threshold ``g_2 = clip(g_L, -l1, l1)`` (free for the penalty, the smallest ``g_1`` per
      entry), given the model ``coef``, ``g_2`` = the penalty's gradient (:func:`penalty_gradient`, tight at a
      penalized optimum), and with an l2 penalty the split that leaves the penalty the least within the budget
      (:func:`penalty_split`); then, from the best of these, the split maximizing the bound (:func:`_searched_split`,
      up to :data:`SPLIT_SEARCH_MAX` columns);
    * an adversarial loss (``attack = (p, A)``, ``A = alpha sum_k m_k |alpha_k|``) takes ``h`` with ``||h||_p <= A`` off
      what the budget pays: ``g_1 = g_L - g_2 - h`` (:func:`attack_offset`);
    * a budget overspent (``spent > eps``) is met by mixing with the nominal rows at slope 0 (``m' = t m + (1 - t)
      p``, ``t = eps / spent``: ``g`` and ``spent`` scale by ``t``; :attr:`LowerBound.scale`)."""
    loss = attacked_loss(inst)[0]
    eps, lip = float(inst.radius), float(loss.lipschitz)
    l1, l2 = float(inst.l1_penalty), float(inst.l2_penalty)
    offset = 1 if inst.fit_intercept else 0
    base = float(np.sum(value))
    gamma = np.asarray(inst.metric.gamma, dtype=float)[limited - offset]
    p_norm = inst.metric.numerical.validated_p()
    g_L = g[limited]

    def bound_with(g2: np.ndarray):
        rest = g_L - g2
        if attack is not None:
            rest = rest - attack_offset(rest, attack[1], attack[0], gamma, p_norm)
        norm = float(np.linalg.norm(gamma * rest, ord=p_norm)) if limited.size else 0.0
        spent = S_c + (norm / lip if lip > 0 else (np.inf if norm > 0 else 0.0))
        if spent <= eps:
            relief = _penalty_relief(g[priced], l1, l2) + _penalty_relief(g2, l1, l2)
            return base + lam0 * (eps - spent) + relief, 1.0
        t = eps / spent if np.isfinite(spent) else 0.0
        at_zero = float(conjugate(loss, np.zeros(1))[0])
        relief = _penalty_relief(t * g[priced], l1, l2) + _penalty_relief(t * g2, l1, l2)
        return t * base - (1.0 - t) * float(np.sum(inst.p)) * at_zero + relief, t

    best, scale = bound_with(np.zeros(limited.size))
    splits = []
    if inst.penalized and limited.size:
        splits = [np.clip(g_L, -l1, l1)] if l1 > 0 else []
        if coef is not None:
            splits.append(penalty_gradient(inst, np.asarray(coef, dtype=float)[limited - offset], g_L))
        if l2 > 0 and lip > 0:
            splits.append(penalty_split(g_L, gamma, p_norm, lip * (eps - S_c), l1))
    best_split = np.zeros(limited.size)
    for g2 in splits:
        candidate, t = bound_with(g2)
        if candidate > best:
            best, scale, best_split = candidate, t, g2
    if inst.penalized and 0 < limited.size <= SPLIT_SEARCH_MAX and np.isfinite(best):
        g2 = _searched_split(lambda x: bound_with(x)[0], best_split, scale=max(1.0, abs(best)))
        candidate, t = bound_with(g2)
        if candidate > best:
            best, scale = candidate, t
    return LowerBound(float(best), rows, mass, slopes, scale, residual)


def _searched_split(bound_of, start: np.ndarray, scale: float) -> np.ndarray:
    """The split ``g_2`` maximizing ``bound_of`` (concave in ``g_2``: a budget term ``-lam_0 ||Gamma (g_L - g_2)||_p /
    lip`` or its mixing, and the penalty's ``-(|g_2| - l1)_+^2 / (4 l2)``), by Powell's derivative-free method from
    ``start`` (the objective has kinks); the caller evaluates the result exactly, so a poor search costs tightness
    only."""
    from scipy.optimize import minimize

    def objective(x):
        value = bound_of(np.asarray(x, dtype=float))
        return -value / scale if np.isfinite(value) else 1e300

    start = np.asarray(start, dtype=float)
    try:
        found = minimize(objective, start, method="Powell",
                         options={"xtol": 1e-12, "ftol": 1e-15, "maxfev": 400 * max(1, start.size)})
    except (ValueError, FloatingPointError):       # pragma: no cover - the candidates' split stands
        return start
    return np.asarray(found.x, dtype=float).reshape(start.shape)


def penalty_split(g_L: np.ndarray, gamma: np.ndarray, p_norm: float, room: float, l1: float) -> np.ndarray:
    """The penalty's part ``g_2`` of the norm-priced columns' sums ``g_L = g_1 + g_2`` that leaves it the least to pay
    when the budget takes at most ``room``: ``min sum_j (|g_2j| - l1)_+^2  s.t.  ||gamma g_1||_p <= room``
    (with an l2 penalty, :func:`_penalty_relief` is ``-1 / (4 l2)`` times the objective).  With ``a_j = (|g_Lj| -
    l1)_+`` the budget takes ``g_1j = sign(g_Lj) delta_j``, ``0 <= delta_j <= a_j``, and the penalty pays ``(a_j -
    delta_j)^2``: ``delta = a`` when it fits; else for ``p = inf`` ``delta_j = min(a_j, room / gamma_j)``, for ``p =
    1`` ``delta_j = clip(a_j - mu gamma_j / 2, 0, a_j)`` and for ``p = 2`` ``delta_j = a_j / (1 + mu gamma_j^2)``,
    with the multiplier ``mu`` found by bisection so that the budget is met (from the feasible side); other ``p``
    scale ``a`` onto the budget (feasible, not optimal).  Any split gives a valid bound (:func:`_budget_bound`)."""
    a = np.maximum(np.abs(g_L) - l1, 0.0)
    sign = np.sign(g_L)

    def used(delta):
        return float(np.linalg.norm(gamma * delta, ord=p_norm))

    if room <= 0 or not np.any(a > 0):
        delta = np.zeros_like(a)
    elif used(a) <= room:
        delta = a
    elif np.isinf(p_norm):
        delta = np.minimum(a, room / gamma)
    elif p_norm in (1.0, 2.0):
        def shrink(mu):
            return np.clip(a - 0.5 * mu * gamma, 0.0, a) if p_norm == 1.0 else a / (1.0 + mu * gamma ** 2)
        delta = _feasible_member(shrink, used, room)
    else:
        delta = a * (room / used(a))
    return g_L - sign * delta


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


def slope_room(alpha: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """How far each slope may move and stay in the slope domain ``[lo, hi]``: the distance to its nearer end,
    capped at ``1 + |alpha|`` (a loss growing faster than linearly has an unbounded domain)."""
    alpha = np.asarray(alpha, dtype=float)
    return np.minimum(np.minimum(alpha - lo, hi - alpha), 1.0 + np.abs(alpha))


def _with_every_sample(inst, rows, mass, slopes, room, lo, hi):
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


def column_roles(inst: DROInstance):
    """Positions in ``theta = [intercept, coef]`` of the free columns and of the norm-priced numerical ones;
    the rest (``fixed_zero``; numerical with ``gamma = 0`` at a positive radius) are fixed at 0."""
    offset = 1 if inst.fit_intercept else 0
    n_theta = offset + inst.schema.n_encoded
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    numerical = offset + np.arange(inst.n_numerical)
    fixed = np.zeros(n_theta, dtype=bool)
    fixed[offset + np.asarray(inst.fixed_zero, dtype=int)] = True
    limited = np.zeros(n_theta, dtype=bool)
    if inst.radius > 0:
        fixed[numerical[gamma == 0]] = True
        limited[numerical[np.isfinite(gamma) & (gamma > 0)]] = True
    limited &= ~fixed
    free = ~fixed & ~limited
    return np.flatnonzero(free), np.flatnonzero(limited)


def _repair_free_columns(A_C: sp.csr_matrix, target: np.ndarray, mass, sigma, slopes, room, lo, hi,
                         bvls: bool = True) -> Optional[np.ndarray]:
    """Slopes changed so that ``A_C^T (m alpha sigma) = target`` (the free columns' zeros, and the norm-priced
    columns' current values): the least-norm change ``alpha + r sigma (A_C c)`` within the preferred
    ``room`` (or, when that step leaves it, a bounded least-squares change anywhere in the slope domain),
    then least-norm corrections of the residual within the domain; ``None`` if no change meets the
    conditions."""
    if A_C.shape[1] == 0:
        return slopes

    def met(alpha) -> bool:
        residual = np.max(np.abs(A_C.T @ (mass * alpha * sigma) - target))
        return residual <= RESIDUAL_RTOL * max(1.0, float(np.max(np.abs(mass * alpha), initial=0.0)))

    def refined(alpha):
        for _ in range(2):
            if met(alpha):
                return alpha
            step = _least_norm_step(A_C, target, mass, sigma, alpha, slope_room(alpha, lo, hi), lo, hi)
            if step is None:
                break
            alpha = step
        return alpha if met(alpha) else None

    if met(slopes):
        return slopes
    first = _least_norm_step(A_C, target, mass, sigma, slopes, room, lo, hi)
    out = refined(first) if first is not None else None
    if out is None:
        bounded = _bounded_repair(A_C, target, mass, sigma, slopes, lo, hi)
        out = refined(bounded) if bounded is not None else None
    if out is None and bvls and A_C.shape[0] <= BVLS_MAX_ROWS:
        candidate = _bvls_repair(A_C, target, mass, sigma, slopes, lo, hi)
        out = refined(candidate) if candidate is not None else None
    return out


def _bvls_repair(A_C, target, mass, sigma, alpha, lo, hi) -> Optional[np.ndarray]:
    """A small change ``d`` with ``A_C^T (m sigma (alpha + d)) ~= target`` and ``lo <= alpha + d <= hi``, every row
    free to move into the domain (the active set of :func:`_bounded_repair` fixes a row at the end it reached,
    and some conditions then need the rows at a flat piece's slope to move inward): bounded least squares on
    ``[w B'; I] d ~= [w r; 0]`` (``B`` the rows ``m_k sigma_k a_k``), to be polished by the least-norm steps;
    None when scipy's solver fails."""
    from scipy.optimize import lsq_linear
    a0 = np.clip(np.asarray(alpha, dtype=float), lo, hi)
    B = sp.csr_matrix(A_C.multiply((mass * sigma)[:, None])).toarray()
    r = target - B.T @ a0
    scale = max(float(np.max(np.abs(B), initial=0.0)), 1e-300)
    w = BVLS_WEIGHT / scale
    C = np.vstack([w * B.T, np.eye(B.shape[0])])
    rhs = np.concatenate([w * r, np.zeros(B.shape[0])])
    lower = np.where(np.isfinite(lo), lo - a0, -np.inf)
    upper = np.where(np.isfinite(hi), hi - a0, np.inf)
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(rhs))):
        return None
    try:
        res = lsq_linear(C, rhs, bounds=(lower, upper), method="bvls")
    except (np.linalg.LinAlgError, ValueError):    # an SVD that does not converge (sample weights: integer masses)
        return None
    return np.clip(a0 + res.x, lo, hi)


def _weighted_gram(A: sp.csr_matrix, w: np.ndarray) -> np.ndarray:
    """``A' diag(w) A`` for ``w >= 0``: as ``X' X`` with ``X = diag(sqrt(w)) A`` dense when it fits in
    :data:`DENSE_GRAM_LIMIT` (one symmetric rank-k update; scipy.sparse's product of a 110,000-row design with few
    columns took 0.3 s of a 0.4 s bound), as the sparse product ``A' (diag(w) A)`` when ``A`` is sparse with at most
    :data:`SPARSE_GRAM_DENSITY` of its entries nonzero, by blocks of dense rows otherwise."""
    w = np.maximum(w, 0.0)
    if sp.issparse(A) and A.nnz <= SPARSE_GRAM_DENSITY * A.shape[0] * A.shape[1]:
        A = sp.csr_matrix(A)
        return np.asarray((A.T @ A.multiply(w[:, None]).tocsr()).todense())
    root = np.sqrt(w)
    if A.shape[0] * A.shape[1] <= DENSE_GRAM_LIMIT:
        X = A.toarray() if sp.issparse(A) else np.array(A, dtype=float)
        X *= root[:, None]
        return X.T @ X
    # larger: densified a block of rows at a time (scipy.sparse's X' X took 18 s of a 117 s fit at 1M rows)
    return sparse_gram(A, root)


def _least_norm_step(A_C, target, mass, sigma, alpha, room, lo, hi) -> Optional[np.ndarray]:
    """``alpha + r sigma (A_C c)`` with ``c`` solving ``A_C^T diag(m r) A_C c = target - A_C^T (m alpha sigma)``;
    ``None`` when some ``|(A_C c)_k| > 1`` (the step would leave the room)."""
    g = A_C.T @ (mass * alpha * sigma) - target
    if not np.any(g):
        return alpha
    gram = _weighted_gram(A_C, mass * room)
    if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(g))):
        return None
    try:
        c = np.linalg.lstsq(gram, -g, rcond=1e-12)[0]   # drop the near-null directions: no huge steps
    except np.linalg.LinAlgError:
        return None
    step = np.asarray(A_C @ c).ravel()
    if not np.all(np.abs(step) <= 1.0):
        return None
    return np.clip(alpha + room * sigma * step, lo, hi)


def _bounded_repair(A_C, target, mass, sigma, alpha, lo, hi, max_iter: int = 30) -> Optional[np.ndarray]:
    """The smallest change ``d`` (least squares) with ``A_C^T (m sigma (alpha + d)) = target`` and
    ``lo <= alpha + d <= hi``, by an active set: the least-norm change over the movable rows, rows that leave
    the domain clipped to its end and fixed there, repeated (a few rounds; ``None`` if it does not settle)."""
    alpha = np.clip(np.asarray(alpha, dtype=float).copy(), lo, hi)
    movable = mass > 0
    B = sp.csr_matrix(A_C.multiply((mass * sigma)[:, None]))           # row k: m_k sigma_k a_k
    for _ in range(max_iter):
        r = target - B.T @ alpha
        if not np.any(r):
            return alpha
        Bm = B[np.flatnonzero(movable)]
        gram = np.asarray((Bm.T @ Bm).todense())
        if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(r))):
            return None
        try:
            c = np.linalg.lstsq(gram, r, rcond=1e-12)[0]
        except np.linalg.LinAlgError:
            return None
        d = np.zeros_like(alpha)
        d[movable] = np.asarray(Bm @ c).ravel()
        new = alpha + d
        out = movable & ((new < lo) | (new > hi))
        alpha = np.clip(new, lo, hi)
        if not out.any():
            return alpha
        movable &= ~out
        if not movable.any():
            return None
    return None
