"""Kelley's method on MOT-DRO's slope cuts (:mod:`.mot_slope_cuts`: program (D) with its rows replaced by cuts that
cover every configuration at one loss slope) in a box trust region, certified by :mod:`.mot_slope_certificate`.

:func:`mot_slope_cut_search` runs Kelley's method on the cuts from a start (MOT phase 1's point,
:mod:`.mot_phase_one`): each conic master (Clarabel) within a box trust region ``|theta - c| <= radius`` around the
best point ``c`` (doubled when a better point lies on its edge, x10 when the box binds with nothing to add, as the
Wasserstein slope-cut search), the exact value ``F(theta, mu) = mu rho / theta1 + A(S(theta, mu), mu theta2 / theta1)``
of each master's point by one oracle call (an upper bound on the optimum), one cut per sample whose maximum
``S_n`` exceeds the master's ``s_n``.  A master that Clarabel leaves inaccurate still gives a trial point (its exact
value is an upper bound) but never a lower bound.

When the master's value is within the gap tolerance of the best point's (or no cut is left to add), the certificate
(:func:`~.mot_slope_certificate.mot_slope_certificate`, from the conic master's weights) gives the lower bound; the
search stops certified once that bound is within the tolerance of the best exact value.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import numpy as np

from ..ambiguity.divergences import get_divergence
from ..certificates.lagrangian import LowerBound
from ..gaps import gap_scale
from ..instance import DROInstance
from ..oracles.rows import lambda_floor, row_margins
from .mot_slope_certificate import mot_slope_certificate
from .mot_slope_cuts import MOTSlopeCuts

#: rounds of the slope-cut Kelley loop at most
MAX_ROUNDS = 100
#: a sample's cut joins when its maximum exceeds the master's ``s_n`` by more than this fraction of the gap tolerance
VIOLATION_FRACTION = 0.1
#: the first trust region's half-width.  Audiology, KL 0.01 / 0.05 / 0.2 (phase 1's point, calibrated integer weights):
#: 0.01 (the Wasserstein slope-cut search's) 22 / 18 / 11 masters, 8.3 / 4.4 / 3.7 s; 0.1: 16 / 14 / 11, 6.1 / 4.2 /
#: 3.7 s; 1: 14 / 13 / 11, 6.5 / 4.0 / 6.9 s
FIRST_RADIUS = 0.1
#: a master's point this close to the box's edge (relative to its half-width) is on it: Clarabel's interior points
#: stop short of the edge
BOX_EDGE = 1e-3


def aggregate_value(divergence, S: np.ndarray, p: np.ndarray, h: float) -> float:
    """``A(S, h) = min_alpha alpha + sum_n p_n h phi*((S_n - alpha) / h)``: ``p'S`` at ``h = inf`` (weights fixed),
    the supremum at ``h = 0``."""
    if not np.isfinite(h):
        return float(p @ S)
    if h <= 0:
        return float(divergence.supremum(S, p)[0])
    return float(divergence.aggregate(S, p, h)[0])


@dataclass
class MOTSlopeCutResult:
    """What :func:`mot_slope_cut_search` found: the best point (``theta = [intercept, coef]``, ``mu``) and its exact
    value ``upper`` (an upper bound on the optimum, at that ``mu``), the certificate's bound (``bound``, ``lower =
    bound.value`` or ``-inf``), the last conic master's value, rounds, cuts and times."""

    intercept: float
    coef: np.ndarray
    mu: float
    upper: float
    lower: float
    bound: Optional[LowerBound]
    certified: bool
    rounds: int
    cuts: int
    master_value: float
    seconds: float
    master_seconds: float
    certificate_seconds: float
    stop: str = ""
    history: List[dict] = field(default_factory=list)
    program: object = None           # the last conic master


def mot_slope_cut_search(inst: DROInstance, oracle, start, *, rho: float, theta1: float, theta2: float, divergence,
                         tol: float, backend, options=None, control=None,
                         log: Optional[Callable[[str], None]] = None,
                         max_rounds: int = MAX_ROUNDS) -> MOTSlopeCutResult:
    """Kelley's method on the slope cuts from ``start`` (``intercept``, ``coef``, ``mu``: MOT phase 1's point), with
    the box trust region and the certificate of the module docstring; stops certified when the certificate's bound is
    within ``tol`` (relative, :mod:`drokit.gaps`) of the best exact value."""
    from ..solvers.base import OPTIMAL, OPTIMAL_INACCURATE, solve_with_retries
    t_start = time.perf_counter()
    divergence = get_divergence(divergence)
    cuts = MOTSlopeCuts(inst, rho=rho, theta1=theta1, theta2=theta2, divergence=divergence)
    N, p, off = inst.n_samples, inst.p, cuts.offset
    rate, ratio = rho / theta1, theta2 / theta1
    zeros = np.zeros(N)

    def evaluate(theta: np.ndarray, mu: float):
        """``F`` at ``(theta, mu')``, ``mu' = max(mu, floor)``, each sample's maximum, flip and slope there."""
        intercept, coef = (float(theta[0]) if off else 0.0), theta[off:]
        mu = max(mu, lambda_floor(inst, coef))
        sep = oracle.separate(intercept, coef, mu, zeros)
        order = np.argsort(sep.rows.sample, kind="stable")
        S = np.asarray(sep.violation, dtype=float)[order]
        value = mu * rate + aggregate_value(divergence, S, p, ratio * mu if np.isfinite(ratio) else np.inf)
        slopes = np.asarray(inst.loss.derivative(row_margins(inst, sep.rows, intercept, coef)), dtype=float)
        return value, mu, S, sep.rows.flip[order], slopes[order]

    theta = np.r_[[start.intercept] if off else [], np.asarray(start.coef, dtype=float)]
    theta[cuts.fixed] = 0.0
    upper, mu, S, flips, slopes = evaluate(theta, float(start.mu))
    best = (theta.copy(), mu, upper)
    s = np.full(N, -np.inf)
    radius = FIRST_RADIUS
    lower, bound, stop, master_value = -np.inf, None, "round limit", np.nan
    master_seconds = certificate_seconds = 0.0
    history: List[dict] = []
    last_box = last_program = None
    retry_at, backoff = 0, 2                # the round from which the certificate is tried again after a failure
    r = 0
    for r in range(1, max_rounds + 1):
        if control is not None and control.should_stop():
            stop = "time limit reached"
            break
        scale = gap_scale(best[2])
        violated = np.flatnonzero(S - s > VIOLATION_FRACTION * tol * scale)
        cuts.add_cuts(violated, flips[violated], slopes[violated], theta, mu)
        box = (radius, best[2])
        t0 = time.perf_counter()
        program = last_program = cuts.program(best[0], radius)
        solution = solve_with_retries(backend, program, options, control=control, stage=f"mot slope cuts {r}")
        master_seconds += time.perf_counter() - t0
        if solution.status not in (OPTIMAL, OPTIMAL_INACCURATE) or solution.x is None:
            stop = f"conic master {r} ended {solution.status} ({solution.raw_status})"
            break
        x = solution.x
        coef = np.array(program.value("coef", x), dtype=float)
        intercept = float(program.value("intercept", x)[0]) if off else 0.0
        trial = np.r_[[intercept] if off else [], coef]
        trial[cuts.fixed] = 0.0
        lam = float(program.value("lambda", x)[0])
        s_trial = np.asarray(program.value("s", x), dtype=float)
        exact = solution.status == OPTIMAL
        master_value = min(float(solution.primal_objective), float(solution.dual_objective))
        step = float(np.max(np.abs(trial - best[0]), initial=0.0))
        active = step >= radius * (1 - BOX_EDGE)
        # the certificate: once the master's value is within the tolerance of the best point's (or nothing is left)
        if exact and r >= retry_at and (best[2] - master_value <= tol * scale or violated.size == 0):
            t0 = time.perf_counter()
            candidate, info = mot_slope_certificate(cuts, cuts.master_weights(solution.y), oracle,
                                                    VIOLATION_FRACTION * tol * scale, upper=best[2], gap_tol=tol,
                                                    center=best[0],
                                                    time_limit=control.remaining() if control is not None else np.inf,
                                                    log=log)
            certificate_seconds += time.perf_counter() - t0
            if candidate is not None and candidate.value > lower:
                lower, bound = float(min(candidate.value, best[2])), candidate
            if info.get("status") != "optimal":          # HiGHS failed: not again at once
                retry_at, backoff = r + backoff, 2 * backoff
            if log is not None:
                log(f"mot slope cuts {r:>3}: certificate {info.get('status')} after {info.get('rounds')} LP(s), "
                    f"bound {lower:.9f} ({info.get('seconds', 0):.2f} s)")
            if best[2] - lower <= tol * scale:
                stop = ""
                history.append({"round": r, "master": master_value, "lower": lower, "upper": best[2],
                                "cuts": cuts.n_cuts, "added": int(violated.size)})
                break
        if violated.size == 0 and not active and box == last_box:
            stop = "stalled: nothing to add and the certificate short of the gap"
            break
        last_box = box
        theta, s = trial, s_trial
        value, mu, S, flips, slopes = evaluate(theta, lam * theta1)
        if value < best[2]:
            if active:
                radius *= 2.0
            best = (theta.copy(), mu, value)
        elif violated.size == 0 and active:
            radius *= 10.0
        history.append({"round": r, "master": master_value, "lower": lower, "upper": best[2], "cuts": cuts.n_cuts,
                        "added": int(violated.size)})
        if log is not None:
            log(f"mot slope cuts {r:>3}: master {master_value:.9f} ({solution.status}) exact {value:.9f} "
                f"best {best[2]:.9f} cuts {cuts.n_cuts} (+{violated.size}) pairs {cuts.pair_cut.size} "
                f"step {step:.3g} radius {radius:.3g}")
        if control is not None:
            control.progress("MOT-DRO slope cuts", f"master {r}, best value {best[2]:.9g}, {cuts.n_cuts:,} cuts")
    theta, mu, upper = best
    certified = stop == "" and upper - lower <= tol * gap_scale(upper)
    return MOTSlopeCutResult(intercept=float(theta[0]) if off else 0.0, coef=theta[off:].copy(), mu=float(mu),
                             upper=float(upper), lower=float(lower), bound=bound, certified=certified, rounds=r,
                             cuts=cuts.n_cuts, master_value=float(master_value),
                             seconds=time.perf_counter() - t_start, master_seconds=master_seconds,
                             certificate_seconds=certificate_seconds, stop=stop, history=history,
                             program=last_program)


__all__ = ["MOTSlopeCutResult", "mot_slope_cut_search", "aggregate_value", "MAX_ROUNDS"]
