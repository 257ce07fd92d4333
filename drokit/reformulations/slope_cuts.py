"""Slope cuts: a linear-programming master for wide categorical data, solved by warm-started dual simplex.

For a margin row ``u(z) = sigma_n f(x_n, z) - shift_n`` and a categorical cost that adds over features
(``p = 1``: ``D(z_n, z) = sum_l delta_l 1[z_l != z_{n,l}]``), Fenchel's inequality
``L(u) >= alpha u - L*(alpha)`` for any slope ``alpha`` and the separability of the cost give, for every
sample ``n``, label family (kept, or flipped at cost ``kappa``) and slope, the valid inequality (the exchange of
maxima of :mod:`.slope_split`, belbasi2023 (3) / sun2025 (3) at one slope)

    s_n >= max_z  alpha u(z) - L*(alpha) - lambda (D(z_n, z) + kappa flip)
         = a f(x_n, z_n) - alpha shift_n - L*(alpha) - lambda kappa flip
           + sum_l max(0, a (M_l - w_l(z_{n,l})) - lambda delta_l),

``a = alpha sigma_n``, ``w_l(v)`` the level coefficients (0 for the reference level) and ``M_l`` their maximum
over levels when ``a > 0``, their minimum when ``a < 0``.  With ``M+_l >= w_l(v)``, ``M-_l <= w_l(v)`` (one pair
of variables per feature, shared by every cut) and ``y_l >= 0`` per cut and feature, this is a set of linear
rows: a *slope cut*.  Over all slopes the cuts give back the exact objective (``L`` is the supremum of its
tangents), so the cutting plane on them is Kelley's method on the exact problem with an LP master:

    min  lambda eps + sum_n p_n s_n   over   theta, lambda >= 0, s, M+-, y >= 0,
    s.t. every cut so far,   lip(L) ||Gamma^{-1} beta_x||_* <= lambda   (an LP for p = 1 or inf).

At the oracle's maximizer ``z*`` of sample ``n`` with ``alpha = L'(u(z*))`` the cut is tight (every feature that
``z*`` changes has ``a (M_l - w_l) - lambda delta_l >= 0``, by convexity of ``L`` and the optimality of ``z*``
against undoing one change), so a cut may leave out the ``y_l`` of features far from changing (then the feature
keeps its level: a maximum over fewer configurations, still valid) -- :data:`KEEP_MARGIN`.  Why it pays on wide
data: where budget cuts need one exponential-cone master per round over every (sample, number of changes), a
slope cut covers every configuration at its slope at once, and the master is an LP that HiGHS re-solves from
the previous basis after the new rows join (sun2025 audiology, 62 binary features, 1-decimal calibrated
weights: 43 s of Clarabel budget-cut masters -> ~1.5 s, benchmarks/RESULTS.md).

Certificate: the LP's duals are a dual point of the exact problem.  A cut's multiplier ``pi`` is a mass at slope
``alpha``; its ``y_l`` row's multiplier ``rho_l <= pi`` the mass that changes feature ``l``; the multipliers of
the rows ``M+-_l >= / <= w_l(v)`` (and of the bound ``M+- = 0`` at the reference level) say to which levels, in the
same proportions for every cut of that direction (the master's stationarity in ``M_l`` sums exactly those
flows).  Each cut thus becomes a :class:`~drokit.oracles.rows.FractionalRows` row (a product of level
distributions), and :func:`~drokit.certificates.lagrangian.lagrangian_bound` repairs the point to exact
feasibility and evaluates it exactly: a lower bound that holds whatever the LP's tolerances, with or without
the master's trust region.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import numpy as np

from ..gaps import gap_scale
from ..instance import DROInstance
from ..oracles.rows import lambda_floor, row_margins
from ..certificates.lagrangian import LowerBound, lagrangian_bound
from .slope_cut_master import KEEP_MARGIN, SlopeCutMaster
from .slope_split import slope_split_applies

__all__ = ["KEEP_MARGIN", "MAX_ROUNDS", "SlopeCutMaster", "SlopeCutResult", "slope_cut_search", "slope_cuts_apply"]

#: rounds of the slope-cut loop before it gives up (the conic masters follow)
MAX_ROUNDS = 150

#: a sample's cut is added when its maximum exceeds ``s_n`` by more than this fraction of the gap tolerance (``tol
#: max(|upper|, 0.01)``): then a master with nothing to add has an upper bound within it of its own value
VIOLATION_FRACTION = 0.1


def slope_cuts_apply(inst: DROInstance) -> Tuple[bool, str]:
    """Whether the slope-cut LP master is exact for ``inst``, and why not: the slope split's conditions (a margin
    loss with finite Lipschitz constant, no attack or penalty, a categorical cost adding over features, labels
    fixed or flipped in classification, at least two mutable categorical features), the mismatch cost, and a
    dual norm on the numerical features that an LP represents (``p = 1`` or ``inf``) where they are priced."""
    ok, why = slope_split_applies(inst)
    if not ok:
        return False, why
    if importlib.util.find_spec("highspy") is None:      # a hard dependency; a broken install falls back
        return False, "highspy (HiGHS) is not installed"
    if not inst.metric.mismatch_only:
        return False, "level costs (only the mismatch cost has one shared maximum per feature)"
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    priced = np.isfinite(gamma) & (gamma > 0)
    q = inst.metric.numerical.lp_dual_exponent
    if priced.any() and (q is None or float(q) not in (1.0, np.inf)):
        return False, "the numerical features' dual norm is not an LP (ground norm p other than 1 or inf)"
    if np.any(np.asarray(inst.metric.delta, dtype=float)[inst.mutable_categorical()] <= 0):
        return False, "a mutable categorical feature has weight 0"
    return True, ""


@dataclass
class SlopeCutResult:
    certified: bool
    intercept: float
    coef: np.ndarray
    lam: float
    s: np.ndarray
    upper_bound: float
    lower_bound: float
    dual: Optional[LowerBound]
    rounds: int
    cuts: int
    lp_iterations: int
    seconds: float
    lp_seconds: float
    bound_seconds: float
    stop: str = ""
    history: List[dict] = field(default_factory=list)
    lp_rows: int = 0          # the last LP master's rows and columns
    lp_columns: int = 0


def slope_cut_search(inst: DROInstance, oracle, start, *, tol: float, radius: float = 0.01,
                     log: Optional[Callable[[str], None]] = None, control=None,
                     max_rounds: int = MAX_ROUNDS) -> SlopeCutResult:
    """Kelley's method on slope cuts from ``start`` (``intercept``, ``coef``, ``lam``: phase 1's point) with a box
    trust region (``|theta - c| <= radius`` around the best point ``c``, doubled when a better point lies on its edge,
    x10 when it is active with nothing left to add), certified by the LP's dual point (module docstring) once the
    master's value is within ``tol`` of the best upper bound.  Upper bounds are the oracle's exact values
    ``lam' eps + sum_n p_n max_z (L(u) - lam' D)`` at ``lam' = max(lam, lip ||Gamma^{-1} beta_x||_*)``."""
    t_start = time.perf_counter()
    master = SlopeCutMaster(inst)
    N, p, eps = inst.n_samples, inst.p, inst.radius
    offset = master.offset
    lp_seconds = bound_seconds = 0.0
    iterations = 0

    def evaluate(theta: np.ndarray, lam: float):
        lam = max(lam, lambda_floor(inst, theta[offset:]))
        intercept = float(theta[0]) if offset else 0.0
        sep = oracle.separate(intercept, theta[offset:], lam, np.zeros(N))
        slopes = inst.loss.derivative(row_margins(inst, sep.rows, intercept, theta[offset:]))
        order = np.argsort(sep.rows.sample)
        return (lam * eps + float(p @ sep.violation[order]), lam, sep.violation[order],
                sep.rows.flip[order], np.asarray(slopes, dtype=float)[order])

    theta = np.concatenate([[start.intercept] if offset else [], np.asarray(start.coef, dtype=float)])
    theta[master.fixed] = 0.0
    upper, lam, phi, flips, slopes = evaluate(theta, float(start.lam))
    best = (theta.copy(), lam, phi.copy(), upper)
    s = np.full(N, -np.inf)
    if inst.label_flips:
        master.add_nominal_cuts(theta, lam)
    lower, dual, stop = -np.inf, None, "round limit"
    last_box = None
    history: List[dict] = []
    r = 0
    for r in range(max_rounds):
        if control is not None and control.should_stop():
            stop = control.stop_reason or "stopped"
            break
        scale = gap_scale(best[3])
        box = (radius, best[3])
        violated = np.flatnonzero(phi - s > VIOLATION_FRACTION * tol * scale)
        master.add_cuts(violated, flips[violated], slopes[violated], theta, lam)
        t0 = time.perf_counter()
        ok, x, lam_x, s_x, value, its = master.solve(best[0], radius,
                                                     control.remaining() if control is not None else np.inf)
        lp_seconds += time.perf_counter() - t0
        iterations += its
        if not ok:
            stop = f"the LP master ended {master.h.modelStatusToString(master.h.getModelStatus())}"
            break
        step = float(np.max(np.abs(x - best[0]), initial=0.0))
        active = step >= radius * (1 - 1e-9)
        if best[3] - value <= tol * scale or violated.size == 0:
            t0 = time.perf_counter()
            rows, mass, sl = master.dual_point()
            try:
                bound = lagrangian_bound(inst, rows, mass, sl, bvls=False)
            except ValueError:            # a sample without mass: the LP's duals are off (not a dual point)
                bound = None
            bound_seconds += time.perf_counter() - t0
            if bound is not None and bound.value > lower:
                lower, dual = float(min(bound.value, best[3])), bound
            if best[3] - lower <= tol * scale:
                stop = ""
                history.append({"round": r, "lp": value, "lower": lower, "upper": best[3], "cuts": master.n_cuts,
                                "added": int(violated.size), "iterations": its})
                break
        if violated.size == 0 and not active and box == last_box:
            # the same LP as the last round's, solved again: nothing can move
            stop = "stalled: nothing to add and the dual point's bound short of the gap"
            break
        last_box = box
        theta, s = x, s_x
        upper, lam, phi, flips, slopes = evaluate(theta, lam_x)
        if upper < best[3]:
            if active:
                radius *= 2
            best = (theta.copy(), lam, phi.copy(), upper)
        elif violated.size == 0 and active:
            radius *= 10
        history.append({"round": r, "lp": value, "lower": lower, "upper": best[3], "cuts": master.n_cuts,
                        "added": int(violated.size), "iterations": its})
        if log is not None:
            log(f"slope cuts {r:>3}: master {value:.9f} lower {lower:.9f} upper {best[3]:.9f} cuts {master.n_cuts} "
                f"(+{violated.size}) LP rows {master.n_rows} simplex iterations {its} radius {radius:.3g}")
        if control is not None:          # verbose=1: one progress line per LP master
            control.progress(f"slope cuts, LP master {r}", f"best value {best[3]:.9g}, "
                             + (f"lower bound {lower:.9g}, " if np.isfinite(lower) else "")
                             + f"{master.n_cuts:,} cuts, {master.n_rows:,} LP rows")
    theta, lam, phi, upper = best
    certified = stop == "" and upper - lower <= tol * gap_scale(upper)
    return SlopeCutResult(certified=certified, intercept=float(theta[0]) if offset else 0.0,
                          coef=theta[offset:].copy(), lam=lam, s=phi, upper_bound=upper, lower_bound=lower, dual=dual,
                          rounds=r + 1, cuts=master.n_cuts, lp_iterations=iterations,
                          seconds=time.perf_counter() - t_start, lp_seconds=lp_seconds, bound_seconds=bound_seconds,
                          stop=stop, history=history, lp_rows=int(master.h.getNumRow()),
                          lp_columns=int(master.h.getNumCol()))
