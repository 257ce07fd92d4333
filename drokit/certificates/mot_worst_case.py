"""Worst-case risk of a FIXED model under optimal transport with a moment constraint (MOT-DRO, issue 23).

``spec/mot-dro-training.md`` §2: over the set ``A_rho`` of lifted distributions ``(xi, w)`` within OT-with-moment
discrepancy ``rho`` of the data (cost ``theta1 w d(xi, xi_hat) + theta2 phi(w)``, ``E[W] = 1``; blanchet2024 Def. 1
and (2.1), with drokit's mixed ground metric ``d``), the worst-case risk of the model ``beta`` is

    R(beta) = min_{lambda >= lambda_min}  G(lambda),
    G(lambda) = lambda rho + min_alpha [ alpha + sum_i p_i h phi*((S_i(lambda theta1) - alpha) / h) ],   h = lambda theta2,

with ``S_i(mu) = max_k l_k - mu c_k`` the Wasserstein separation value of sample ``i`` (the oracle's, at ``s = 0``),
``phi*`` the conjugate of the divergence and ``lambda_min`` the dual-norm floor of the numerical moves divided by
``theta1``.  The inner minimum over ``alpha`` is explicit (:mod:`drokit.ambiguity.divergences`):

* KL: ``alpha* = h log sum_i p_i exp(S_i / h)`` and the bracket equals ``alpha*`` (note (D-KL));
* chi-square: ``alpha*`` solves ``sum_i p_i ((S_i - alpha) / (2h) + 1)_+ = 1``, found exactly by sorting the
  ``S_i`` (blanchet2024 (A.3), sign corrected in its note);
* CVaR at level ``a``: the bracket is ``CVaR_a(S)`` whatever ``h`` (Rockafellar and Uryasev 2000), by sorting.

``theta1 = inf``: no sample moves, ``S_i`` is the nominal loss; ``theta2 = inf``: the weights stay 1 and ``G`` is
the Wasserstein function ``lambda rho + sum_i p_i S_i(lambda theta1)``.  ``G`` is convex in ``lambda`` (a partial
minimum of a jointly convex function); it is minimized by a bounded scalar search.  Every ``G(lambda)`` is an upper
bound on ``R(beta)`` (weak duality), so the value returned is a certified upper bound whatever the search's accuracy,
and the search makes it tight (relative ``1e-10`` in ``lambda``).

The worst case at the minimizer (note §3): sample ``i``'s mass ``p_i`` at the oracle's maximizing row with weight
``w_i = (phi*)'((S_i - alpha*) / h)`` (KL ``exp((S_i - alpha*) / h)``, chi-square ``((S_i - alpha*) / (2h) + 1)_+``),
``sum_i p_i w_i = 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Tuple

import numpy as np
from scipy.optimize import minimize_scalar

from ..ambiguity.divergences import ChiSquare, Divergence, KL, get_divergence
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, enumerate_configurations
from ..oracles.rows import concat_rows, lambda_floor, row_losses, take_rows

DIVERGENCES = ("kl", "chi2", "cvar")
#: relative tolerance of the scalar search in ``lambda``
LAMBDA_RTOL = 1e-10


@dataclass
class MOTWorstCase:
    """The worst-case risk ``value`` of a fixed model over ``A_rho``, the multipliers ``lam`` (budget) and ``alpha``
    (moment; ``nan`` with ``theta2 = inf``), the per-sample separation values ``S``, each sample's worst row (``rows``,
    one per sample, from the oracle; the nominal rows with ``theta1 = inf``) and its weight ``weight``
    (``sum p_i w_i = 1``)."""

    value: float
    lam: float
    alpha: float
    S: np.ndarray
    rows: ConfigurationRows
    weight: np.ndarray


def kl_moment(S: np.ndarray, p: np.ndarray, h: float) -> Tuple[float, np.ndarray]:
    """``(alpha*, w)`` for KL: ``alpha* = h log sum_i p_i exp(S_i / h)``, ``w_i = exp((S_i - alpha*) / h)``; the bracket
    ``min_alpha alpha + sum_i p_i h (exp((S_i - alpha)/h) - 1)`` equals ``alpha*``."""
    alpha, _, w = KL().aggregate(S, p, h)
    return alpha, w


def chi2_moment(S: np.ndarray, p: np.ndarray, h: float) -> Tuple[float, np.ndarray, float]:
    """``(alpha*, w, bracket)`` for chi-square: ``alpha*`` solves ``sum_i p_i ((S_i - alpha)/(2h) + 1)_+ = 1`` exactly
    (the active samples are those with the largest ``S_i``: sorted, the first ``k`` for which the root of the linear
    equation over them keeps exactly them active), ``w_i = ((S_i - alpha*)/(2h) + 1)_+`` and the bracket
    ``alpha* + sum_i p_i h (w_i^2 - 1)``."""
    total, alpha, w = ChiSquare().aggregate(S, p, h)
    return alpha, w, total


def mot_worst_case(inst: DROInstance, oracle, intercept: float, coef: np.ndarray, *, rho: float, theta1: float,
                   theta2: float, divergence) -> MOTWorstCase:
    """``R(beta)`` of the module docstring for the model ``(intercept, coef)``; ``inst`` the data, loss and ground metric
    ``d`` (its radius is not used), ``oracle`` an exact separation oracle of ``inst`` (``None`` with ``theta1 = inf``),
    ``divergence`` a :class:`~drokit.ambiguity.divergences.Divergence` or its name."""
    divergence = get_divergence(divergence)
    if not (theta1 > 0 and theta2 > 0) or (np.isinf(theta1) and np.isinf(theta2)):
        raise ParameterError(f"theta1 and theta2 must be > 0 and not both inf, got {theta1!r}, {theta2!r}")
    if not (np.isfinite(rho) and rho >= 0):
        raise ParameterError(f"rho must be finite and >= 0, got {rho!r}")
    inst = inst.evaluated_at(coef)
    coef = np.asarray(coef, dtype=float)
    p = inst.p
    zeros = np.zeros(inst.n_samples)
    if np.isinf(theta1):
        nominal = enumerate_configurations(inst, nominal_only=True)
        fixed_S = row_losses(inst, nominal, intercept, coef)

        def separate(lam: float) -> Tuple[np.ndarray, ConfigurationRows]:
            return fixed_S, nominal
        lam_min = 0.0
    else:
        def separate(lam: float) -> Tuple[np.ndarray, ConfigurationRows]:
            sep = oracle.separate(intercept, coef, lam * theta1, zeros)
            return np.asarray(sep.violation, dtype=float), sep.rows
        lam_min = lambda_floor(inst, coef) / theta1
    if not np.isfinite(lam_min):
        return MOTWorstCase(np.inf, np.inf, np.nan, np.full(inst.n_samples, np.inf), None, np.ones(inst.n_samples))

    def value(lam: float) -> float:
        S, _ = separate(lam)
        return lam * rho + _bracket(S, p, lam, theta2, divergence)[0]

    if rho == 0 and not divergence.free_reweighting:   # no budget: the nominal distribution (lambda -> inf, weights 1)
        S, rows = _nominal(inst, intercept, coef)
        return MOTWorstCase(float(p @ S), np.inf, np.nan, S, rows, np.ones(inst.n_samples))
    lam = _minimize(value, lam_min)
    S, rows = separate(lam)
    total, alpha, weight = _bracket(S, p, lam, theta2, divergence)
    return MOTWorstCase(lam * rho + total, lam, alpha, S, rows, weight)


#: relative step in ``lambda`` on either side of the optimum that picks each tied sample's left / right maximizer
KINK_STEP = 1e-7


@dataclass
class MOTAtoms:
    """The worst-case distribution's atoms: configuration ``rows`` with masses ``mass`` (``p_n w_n``, split between a
    tied sample's left and right maximizers), the budget they spend (``theta1 sum m c + theta2 sum p phi(w)``) and
    whether they attain the worst case (``False`` when the rest of the budget goes to numerical moves in the limit)."""

    rows: ConfigurationRows
    mass: np.ndarray
    spent: float
    attained: bool
    divergence_cost: float


def worst_case_atoms(inst: DROInstance, oracle, intercept: float, coef: np.ndarray, worst: MOTWorstCase, *,
                     rho: float, theta1: float, theta2: float, divergence) -> MOTAtoms:
    """The atoms of the worst case ``worst`` (``spec/mot-dro-training.md`` §3): sample ``n``'s mass ``p_n w_n`` at its
    maximizer; at a kink of ``S_n(lambda theta1)`` the tied samples' mass is split ``t`` / ``1 - t`` between their
    maximizers just left and right of ``lambda*`` so that the budget is spent exactly (``0`` is in the subdifferential
    ``[rho - spent_left, rho - spent_right]``)."""
    divergence = get_divergence(divergence)
    p, w = inst.p, worst.weight
    fixed = float(divergence.value(w) @ p) * theta2 if np.isfinite(theta2) and not divergence.free_reweighting else 0.0
    rows, mass = worst.rows, p * w
    attained = True
    if oracle is not None and np.isfinite(worst.lam) and worst.lam > 0:
        zeros = np.zeros(inst.n_samples)
        left = oracle.separate(intercept, coef, worst.lam * (1.0 - KINK_STEP) * theta1, zeros).rows
        right = oracle.separate(intercept, coef, worst.lam * (1.0 + KINK_STEP) * theta1, zeros).rows
        spent_left = theta1 * float(mass @ left.cost) + fixed
        spent_right = theta1 * float(mass @ right.cost) + fixed
        if spent_left > spent_right:
            t = float(np.clip((rho - spent_right) / (spent_left - spent_right), 0.0, 1.0))
            rows = concat_rows([left, right])
            mass = np.concatenate([t * p * w, (1.0 - t) * p * w])
            keep = mass > 0
            rows, mass = take_rows(rows, np.flatnonzero(keep)), mass[keep]
        else:
            rows = right
        spent = theta1 * float(mass @ rows.cost) + fixed
        floor = worst.lam * theta1 <= (1.0 + 1e-9) * lambda_floor(inst, coef)
        attained = not (floor and spent < rho * (1.0 - 1e-9))
    spent = (theta1 * float(mass @ rows.cost) if np.isfinite(theta1) else 0.0) + fixed
    return MOTAtoms(rows, mass, float(spent), attained, fixed)


def _nominal(inst: DROInstance, intercept: float, coef: np.ndarray) -> Tuple[np.ndarray, ConfigurationRows]:
    rows = enumerate_configurations(inst, nominal_only=True)
    return row_losses(inst, rows, intercept, coef), rows


def _bracket(S: np.ndarray, p: np.ndarray, lam: float, theta2: float, divergence: Divergence):
    """``(min_alpha alpha + sum p h phi*((S - alpha)/h), alpha*, weights)`` at ``h = lam theta2``; with ``theta2 = inf``
    (or ``lam = inf``) ``sum p S`` and weights 1; with ``h = 0`` the supremum (:meth:`Divergence.supremum`: ``max S``,
    all mass on a top sample, for KL and chi-square)."""
    if np.isinf(theta2):
        return float(p @ S), np.nan, np.ones_like(S)
    h = lam * theta2
    if h == 0:
        return divergence.supremum(S, p)
    return divergence.aggregate(S, p, h)


def _minimize(value: Callable[[float], float], lam_min: float) -> float:
    """The minimizer of the convex ``value`` on ``[lam_min, inf)``: a bracket by doubling from ``max(lam_min, 1)``,
    then a bounded scalar search to ``LAMBDA_RTOL``."""
    lo = lam_min
    hi = max(2.0 * lam_min, 1.0)
    previous = value(hi)
    while True:                          # G -> inf as lambda -> inf (rho > 0): grow until it rises
        nxt = value(2.0 * hi)
        if nxt >= previous:
            hi = 2.0 * hi
            break
        lo, hi, previous = hi, 2.0 * hi, nxt
        if hi > 1e12:
            break
    result = minimize_scalar(value, bounds=(lo, hi), method="bounded",
                             options={"xatol": LAMBDA_RTOL * max(hi, 1e-12), "maxiter": 500})
    best = float(result.x)
    # the search's end points are candidates too (a minimum at the floor; at 0 for CVaR without moves)
    return min((lam_min, best), key=value)


__all__ = ["MOTWorstCase", "MOTAtoms", "mot_worst_case", "worst_case_atoms", "kl_moment", "chi2_moment",
           "DIVERGENCES", "KINK_STEP"]
