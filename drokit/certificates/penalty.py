"""The penalty's part of the Lagrangian certificate (:mod:`.lagrangian`): how the penalty ``l1 ||beta||_1 + l2
||beta||^2`` (belbasi2023's r-MixF; the intercept is not penalized) prices the column sums ``g = sum_k m_k alpha_k
sigma_k a_k`` of a dual point, so that a penalized coefficient's column needs no exact zero.

* a penalized column contributes the penalty's conjugate ``min_b (g_j b + l1 |b| + l2 b^2) = -(|g_j| - l1)_+^2 /
  (4 l2)`` to the Lagrangian, or with ``l2 = 0`` 0 when ``|g_j| <= l1`` (else ``-inf``) (:func:`penalty_relief`);
* at a penalized optimum, stationarity ``g_j + l1 s_j + 2 l2 beta_j = 0`` (``s_j`` in the subdifferential of
  ``|beta_j|``) gives the part of ``g`` the penalty pays (:func:`penalty_gradient`), with the coefficients an l1
  penalty holds at 0 read within :data:`PENALTY_ZERO_RTOL` (:func:`penalty_zeros`);
* the norm-priced numerical columns' sums split ``g_L = g_1 + g_2``, ``g_1`` paid by the transport budget and ``g_2``
  by the penalty.  Any split gives a valid bound (the Lagrangian's minimum over ``(theta, lam)``,
  :func:`drokit.certificates.budget.budget_bound`, takes the best of its candidates): :func:`penalty_split` is the
  split that leaves the penalty the least to pay within the budget (closed forms for ``p`` in ``{1, 2, inf}`` up to a
  multiplier found by bisection, :func:`feasible_member`, which the attack's offset
  :func:`~drokit.certificates.budget.attack_offset` shares), :func:`searched_split` the one that maximizes the
  bound, by Powell's method.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..instance import DROInstance

#: with an l1 penalty a coefficient within this (relative to ``max(1, max |beta|)``) of 0 counts as 0: a solver's
#: 1e-9 where the lasso's optimum is 0 (its multiplier can then be anywhere in ``[-l1, l1]``, not ``-l1 sign``)
PENALTY_ZERO_RTOL = 1e-7


def penalty_relief(g: np.ndarray, l1: float, l2: float) -> float:
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


def penalty_split(g_L: np.ndarray, gamma: np.ndarray, p_norm: Optional[float], room: float, l1: float,
                  size=None) -> np.ndarray:
    """The penalty's part ``g_2`` of the norm-priced columns' sums ``g_L = g_1 + g_2`` that leaves it the least to pay
    when the budget takes at most ``room``: ``min sum_j (|g_2j| - l1)_+^2  s.t.  ||gamma g_1||_p <= room``
    (with an l2 penalty, :func:`penalty_relief` is ``-1 / (4 l2)`` times the objective).  With ``a_j = (|g_Lj| -
    l1)_+`` the budget takes ``g_1j = sign(g_Lj) delta_j``, ``0 <= delta_j <= a_j``, and the penalty pays ``(a_j -
    delta_j)^2``: ``delta = a`` when it fits; else for ``p = inf`` ``delta_j = min(a_j, room / gamma_j)``, for ``p =
    1`` ``delta_j = clip(a_j - mu gamma_j / 2, 0, a_j)`` and for ``p = 2`` ``delta_j = a_j / (1 + mu gamma_j^2)``,
    with the multiplier ``mu`` found by bisection so that the budget is met (from the feasible side); other ``p``
    scale ``a`` onto the budget (feasible, not optimal), as does a ground norm that is not an l_p norm (``p_norm =
    None``; ``size(delta)``: its ``N(gamma delta)``).  Any split gives a valid bound
    (:func:`~drokit.certificates.budget.budget_bound`)."""
    a = np.maximum(np.abs(g_L) - l1, 0.0)
    sign = np.sign(g_L)

    def used(delta):
        if size is not None:
            return float(size(delta))
        return float(np.linalg.norm(gamma * delta, ord=p_norm))

    if room <= 0 or not np.any(a > 0):
        delta = np.zeros_like(a)
    elif used(a) <= room:
        delta = a
    elif p_norm is None:
        delta = a * (room / used(a))
    elif np.isinf(p_norm):
        delta = np.minimum(a, room / gamma)
    elif p_norm in (1.0, 2.0):
        def shrink(mu):
            return np.clip(a - 0.5 * mu * gamma, 0.0, a) if p_norm == 1.0 else a / (1.0 + mu * gamma ** 2)
        delta = feasible_member(shrink, used, room)
    else:
        delta = a * (room / used(a))
    return g_L - sign * delta


def searched_split(bound_of, start: np.ndarray, scale: float) -> np.ndarray:
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


def feasible_member(family, size, radius: float) -> np.ndarray:
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
