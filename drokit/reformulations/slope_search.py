"""The slope-split search: :mod:`.slope_split`'s smoothed objective minimized for a shrinking temperature, as the
cutting plane's phase 1 where phase 1's working set churns.

It is a search.  Its exact values (the oracle's, at the end of each temperature) are certified upper bounds,
and the smoothed dual point gives a certified lower bound: masses ``p_n w_nk`` on *fractional rows*, the
expected encoded rows and costs of the product distributions ``q_nk`` (:meth:`SlopeSplitObjective.dual_point`,
:class:`~drokit.evaluation.lower_bound.FractionalRows`), repaired and evaluated by
:func:`~drokit.certificates.lagrangian.lagrangian_bound`: ``F_tau`` minus ``tau`` times the entropies of ``w`` and
``q``, less the tangent error at the active margins (each sample's local slopes follow them,
:meth:`SlopeSplitObjective.refine_slopes`).  That bound closes slowly with ``tau`` (audiology: 7e-4 relative at
``tau = 1e-5``, where Newton needs 200 steps per temperature), so the cutting plane's conic masters certify,
starting from the search's point and the rows it leans on (each (sample, slope) pair's most probable
configuration and the oracle's maximizers).

Where it runs (:func:`use_slope_split`): with the default ``search="auto"``, after phase 1 stops unconverged (its
working set still churning) on data where the split is exact, wide (``FALLBACK_MIN_FEATURES`` mutable categorical
features in ``FALLBACK_MIN_CLASSES`` weight classes or more, where budget cuts hardly aggregate) and small enough
(``AUTO_MAX_ENTRIES``); always with ``search="slope_split"``.  Measured on sun2025 Table 1, audiology, 1-decimal
weights (226 samples, 62 features, 29 weight classes), rho mean 0.7: phase 1's best point 0.2249 and masters
uncertified after 41 rounds; the split's 0.18529 at ``tau = 1e-3`` (15 s) and certified 0.18506 after the
masters (152 s in all).  Cost per Newton step ``O(N K sum_l a_l + P d^2)`` with ``P`` the weighted pairs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..gaps import gap_scale

from ..certificates.lagrangian import lagrangian_bound
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, concat_rows, unique_rows
from ..oracles.rows import lambda_floor
from .row_terms import split_theta
from .slope_split import GRID_SIZE, LOCAL_SLOPES, SlopeSplitObjective, slope_split_applies

#: the cutting plane's default search falls back to this method (after an unconverged phase 1) on data this wide:
#: at least FALLBACK_MIN_FEATURES mutable categorical features in at least FALLBACK_MIN_CLASSES weight classes, where
#: budget cuts hardly aggregate.  Measured on sun2025 audiology (62 features), every draw taking the split: 1-decimal
#: weights (25-32 classes) certified where phase 1's start left one draw uncertified; unit weights (1 class) 48.6 s
#: against 5.6 s and integer weights (4-5 classes) 61.5 s against 22 s, the budget cuts certifying fast from phase 1
FALLBACK_MIN_FEATURES = 30
FALLBACK_MIN_CLASSES = 10
#: ... and when its (sample, slope, level) arrays hold at most this many entries (8 bytes each; they are not yet
#: computed in blocks of samples): audiology holds 226 x 63 x 147 = 2.1 million
AUTO_MAX_ENTRIES = 20_000_000
#: Newton steps per temperature at most
MAX_STEPS = 30
#: the cutting plane's search stops at this temperature (relative to ``max(1, |F|)``).  sun2025 Table 1,
#: audiology, 1-decimal weights, rho mean 0.7: the exact value 0.18523 at 1e-3 (0.18685 at 1e-2) against an optimum
#: of 0.18506; its conic masters then certify in 54 rounds (248 s in all), where phase 1's start (0.2249) left them
#: uncertified after 41 rounds
SEARCH_TAU_MIN = 1e-3
#: full Newton steps after the damped ones, before the dual point is read (:func:`_polish`)
POLISH_STEPS = 3

@dataclass
class SlopeSplitResult:
    intercept: float
    coef: np.ndarray
    lam: float
    upper_bound: float             # exact objective at the best point (the oracle's)
    lower_bound: float             # the best repaired Lagrangian bound of the smoothed dual points (-inf: none)
    certified: bool                # upper - lower <= certify_tol max(|upper|, GAP_FLOOR)
    dual: object                   # the LowerBound that proves lower_bound (None: none)
    s: np.ndarray                  # per-sample maxima at the best point
    rows: ConfigurationRows        # the nominal rows, the oracle's maximizers and the dominant rows at the best point
    tau: float
    solves: int
    newton_steps: int
    oracle_calls: int
    seconds: float
    bound_seconds: float = 0.0
    objective: Optional[SlopeSplitObjective] = None   # with its slopes as refined at the end


def _polish(objective: SlopeSplitObjective, theta: np.ndarray, tau: float, mu: float,
            steps: int = POLISH_STEPS) -> tuple[np.ndarray, int]:
    """Full Newton steps, each kept only when it shrinks the gradient: the damped method stops at a decrement of
    ``1e-3 tau``, and the dual point's free-column conditions need the gradient near rounding (the repair then
    moves the slopes by that much only)."""
    free = objective.free
    _, grad, hess = objective.derivatives(theta, tau, mu)
    taken = 0
    for _ in range(steps):
        try:
            step = -np.linalg.solve(hess[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            break
        trial = theta.copy()
        trial[free] += step
        if not objective.barrier.feasible(trial):
            break
        _, g2, h2 = objective.derivatives(trial, tau, mu)
        if not np.max(np.abs(g2[free])) < np.max(np.abs(grad[free])):
            break
        theta, grad, hess, taken = trial, g2, h2, taken + 1
    return theta, taken


def slope_split_search(inst: DROInstance, oracle, *, tau0: float = 1e-1, tau_min: float = 1e-7,
                       certify_tol: Optional[float] = None, grid_size: int = GRID_SIZE,
                       log: Optional[Callable[[str], None]] = None, control=None) -> SlopeSplitResult:
    """Minimize ``F_tau`` for ``tau = tau0, tau0 / 10, ...`` (times ``max(1, |F|)`` at the start) by Newton's method
    from ``beta = 0``, ``lambda = 2 lip(L)``: the exact objective at each end point by the oracle (the best is
    kept), then -- with ``certify_tol`` -- the repaired Lagrangian bound of the smoothed dual point
    (:meth:`SlopeSplitObjective.dual_point`); stops when they agree to ``certify_tol`` (relative to
    ``max(|upper|, 1e-2)``: :mod:`drokit.gaps`) or below ``tau_min``.  Between temperatures each sample's local slopes move to its
    active margins (:meth:`SlopeSplitObjective.refine_slopes`, width ``sqrt(tau)``)."""
    from ..oracles.enumeration import enumerate_configurations
    from .phase_one import damped_newton, exact_objective
    t0 = time.perf_counter()
    objective = SlopeSplitObjective(inst, grid_size)

    def exact(theta_):
        return exact_objective(inst, oracle, theta_)

    theta = np.zeros(objective.dim)
    theta[-1] = 2.0 * (float(inst.loss.lipschitz) + objective.barrier.lam0)
    upper, sep = exact(theta)
    best, best_sep, best_tau = theta.copy(), sep, tau0
    scale = max(1.0, abs(upper))
    tau, steps, calls, solves = tau0 * scale, 0, 1, 0
    lower, dual, bound_time, certified = -np.inf, None, 0.0, False
    while True:
        theta, k = damped_newton(objective, theta, tau, 0.1 * tau, max_steps=MAX_STEPS)
        polished = 0
        if certify_tol is not None:
            theta, polished = _polish(objective, theta, tau, 0.1 * tau)
        steps += k + polished
        solves += 1
        value, sep = exact(theta)
        calls += 1
        if value < upper:
            upper, best, best_sep, best_tau = value, theta.copy(), sep, tau
        if certify_tol is not None:
            tb = time.perf_counter()
            bound = lagrangian_bound(inst, *objective.dual_point(theta, tau), bvls=False)
            bound_time += time.perf_counter() - tb
            if lower < bound.value <= upper + 1e-9 * max(1.0, abs(upper)):    # above upper: wrongly evaluated
                lower, dual = bound.value, bound
            certified = upper - lower <= certify_tol * gap_scale(upper)
        if log is not None:
            log(f"slope split: tau {tau:.0e}, {k} + {polished} Newton steps, exact {value:.9f}, best {upper:.9f}"
                + (f", lower {lower:.9f}" if np.isfinite(lower) else "") + f", {time.perf_counter() - t0:.2f} s")
        if control is not None:
            control.progress("slope split", f"smoothing {tau:.0e}, best value {upper:.9g}")
            if control.should_stop():
                break
        if certified or tau <= tau_min * scale * (1 + 1e-9):
            break
        objective.refine_slopes(theta, tau, np.sqrt(tau))
        tau *= 0.1
    intercept, coef, lam = split_theta(inst, best)
    lam = max(lam, lambda_floor(inst, coef))
    dominant = objective.dominant_rows(best, best_tau)
    rows = unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True), best_sep.rows, dominant]))
    return SlopeSplitResult(intercept=intercept, coef=coef, lam=lam, upper_bound=upper, lower_bound=lower,
                            certified=certified, dual=dual, s=best_sep.violation, rows=rows, tau=tau, solves=solves,
                            newton_steps=steps, oracle_calls=calls, seconds=time.perf_counter() - t0,
                            bound_seconds=bound_time, objective=objective)


def use_slope_split(inst: DROInstance, search: str) -> str:
    """When the cutting plane searches with this method: ``"first"`` (``search="slope_split"``, where it applies;
    else :class:`~drokit.exceptions.ParameterError`), ``"fallback"`` (``search="auto"``: after a phase 1 that stopped
    unconverged -- its working set still churning -- where the split applies and its arrays hold at most
    ``AUTO_MAX_ENTRIES`` entries) or ``"never"``."""
    from ..exceptions import ParameterError
    if search == "phase_one":
        return "never"
    ok, why = slope_split_applies(inst)
    if search == "slope_split":
        if not ok:
            raise ParameterError(f"cutting-plane option search='slope_split' does not apply: {why}")
        return "first"
    if not ok:
        return "never"
    from .budget_cuts import weight_classes
    mutable, classes = weight_classes(inst)
    levels = np.asarray(inst.schema.levels)[mutable]
    entries = inst.n_samples * (GRID_SIZE + 2 * LOCAL_SLOPES) * int(np.sum(levels))
    wide = mutable.size >= FALLBACK_MIN_FEATURES and np.unique(classes).size >= FALLBACK_MIN_CLASSES
    return "fallback" if wide and entries <= AUTO_MAX_ENTRIES else "never"


def slope_split_phase_one(inst: DROInstance, oracle, *, certify_tol: Optional[float] = None,
                          log: Optional[Callable[[str], None]] = None, control=None):
    """:func:`slope_split_search` to ``SEARCH_TAU_MIN``, as the cutting plane's phase 1
    (:class:`~.phase_one.PhaseOneResult`, ``search="slope_split"``): its best point and exact value, its
    bound, and the rows it leans on (nominal rows, the oracle's maximizers, the dominant rows) as the bundle
    that seeds the masters."""
    from .phase_one import PhaseOneResult
    out = slope_split_search(inst, oracle, tau_min=SEARCH_TAU_MIN, certify_tol=certify_tol, log=log, control=control)
    return PhaseOneResult(intercept=out.intercept, coef=out.coef, lam=out.lam, s=out.s, upper_bound=out.upper_bound,
                          bundle=out.rows, rounds=out.solves, converged=True, newton_steps=out.newton_steps,
                          oracle_calls=out.oracle_calls, seconds=out.seconds, lower_bound=out.lower_bound,
                          certified=out.certified, dual=out.dual, bound_seconds=out.bound_seconds,
                          working_rows=int(out.rows.size), tau=out.tau, search="slope_split")

