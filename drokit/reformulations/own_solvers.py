"""drokit's own solvers before any conic master of the cutting plane: phase 1 (:mod:`.phase_one`, from a subsample's
point on large data, :mod:`.warm_start`), the slope split (:mod:`.slope_search`) after a phase 1 that churned on wide
data, the structured barrier master (:mod:`.barrier_master`) and, on wide categorical data, the LP master over slope
cuts (:mod:`.slope_cuts`).  Each certifies with an explicit dual point where it can; otherwise its best point (and
the smallest working set there) starts the conic masters of :func:`.cutting_plane.solve_cutting_plane`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ..certificates.constant_model import constant_model_bound
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, concat_rows, enumerate_configurations, unique_rows
from ..oracles.rows import lambda_floor
from .cutting_plane_outcome import (SLOPE_CUTS_AUTO_SAMPLES, WIDE_BUDGET_FEATURES, CuttingPlaneOptions,
                                    CuttingPlaneOutcome, restart_rows, sample_major, stopped_outcome,
                                    with_nominal_rows)
from .phase_one import phase_one_applies
from .slope_cuts import slope_cut_search, slope_cuts_apply
from .slope_search import slope_split_phase_one, use_slope_split
from .structured_master import structured_master
from .warm_start import warm_phase_one


@dataclass
class OwnSolvers:
    """What the stages before the conic masters left: ``outcome`` when one of them certified the fit (or the run was
    stopped), else the best point for the masters (``first``, a phase-1 result merged with the later stages' better
    points; ``None`` without phase 1), the smallest working set at an unconverged phase 1's point
    (``restart_rows``), the barrier master's and the slope cuts' results, and the seconds spent."""

    outcome: Optional[CuttingPlaneOutcome]
    first: Any
    restart_rows: Optional[ConfigurationRows]
    structured: Any
    slope_cuts: Any
    seconds: float


def use_slope_cuts(inst: DROInstance, options: CuttingPlaneOptions) -> bool:
    """Whether the slope-cut LP master runs (``options.slope_cuts``): ``"auto"`` where it applies with at least
    :data:`WIDE_BUDGET_FEATURES` mutable categorical features and at most :data:`SLOPE_CUTS_AUTO_SAMPLES` samples;
    True where it applies (else :class:`ParameterError`)."""
    if options.slope_cuts is False or not options.phase_one:
        return False
    ok, why = slope_cuts_apply(inst)
    if options.slope_cuts is True:
        if not ok:
            raise ParameterError(f"cutting-plane option slope_cuts=True does not apply: {why}")
        return True
    return ok and inst.mutable_categorical().size >= WIDE_BUDGET_FEATURES and inst.n_samples <= SLOPE_CUTS_AUTO_SAMPLES


def _certified(stage, rows: ConfigurationRows, seconds: float, first, structured, slope=None) -> CuttingPlaneOutcome:
    """The outcome of a fit a stage certified (``stage``: the barrier master's or the slope cuts' result, with its point
    ``intercept, coef, lam, s``, bounds and dual point): no conic master, ``rows`` its working set."""
    return CuttingPlaneOutcome(program=None, solution=None, intercept=stage.intercept, coef=stage.coef, lam=stage.lam,
                               s=stage.s, lower_bound=stage.lower_bound, upper_bound=stage.upper_bound, max_violation=0.0,
                               converged=True, working_rows=rows, phase_one_time=seconds, dual=stage.dual,
                               phase_one=first, structured=structured, slope_cuts=slope)


def _with_point(first, stage):
    """Phase 1's result with a later stage's better point (its model, ``lambda``, per-sample maxima and upper bound)."""
    return dataclasses.replace(first, intercept=stage.intercept, coef=stage.coef, lam=stage.lam, s=stage.s,
                               upper_bound=stage.upper_bound)


def constant_model_outcome(inst: DROInstance, gap_tol: float, log: Callable[[str], None]) -> Optional[CuttingPlaneOutcome]:
    """The fit certified at the constant model when the radius is beyond the critical one
    (:mod:`drokit.certificates.constant_model`: there every configuration row ties and the masters do not close),
    else ``None``."""
    import time
    t0 = time.perf_counter()
    found = constant_model_bound(inst, gap_tol)
    if found is None:
        return None
    b, upper, bound, s = found                       # lambda = 0: every sample's maximum is its own loss
    seconds = time.perf_counter() - t0
    log(f"constant model: radius {inst.radius:g} is beyond the critical radius; beta = 0, intercept {b:.9g}, "
        f"upper bound {upper:.9f}, lower bound {bound.value:.9f} (an explicit dual point), {seconds:.3f} s; no master")
    return CuttingPlaneOutcome(program=None, solution=None, intercept=float(b), coef=np.zeros(inst.schema.n_encoded),
                               lam=0.0, s=s, lower_bound=float(bound.value),
                               upper_bound=float(upper), max_violation=0.0, converged=True,
                               working_rows=sample_major(enumerate_configurations(inst, nominal_only=True)),
                               phase_one_time=seconds, dual=bound)


def run_own_solvers(inst: DROInstance, oracle, options: CuttingPlaneOptions, work: ConfigurationRows, outer: bool,
                    control, log: Callable[[str], None], method_log: Optional[Callable[[str], None]]) -> OwnSolvers:
    """Phase 1, the slope split, the barrier master and the slope cuts, as ``options`` ask and where they apply
    (module docstring); ``work`` the nominal rows, ``outer`` whether the loss is compiled by tangents."""
    first = structured = slope_result = None
    restart = None

    def _done(outcome: CuttingPlaneOutcome) -> OwnSolvers:
        return OwnSolvers(outcome, first, restart, structured, slope_result, phase_one_time)

    slope = use_slope_cuts(inst, options) and not outer and options.structured_master
    phase_one_time = 0.0
    if options.phase_one and not outer and options.search == "auto" and options.slope_cuts != True:  # noqa: E712
        # beyond the critical radius (a search or slope cuts the user asked for run as asked)
        constant = constant_model_outcome(inst, options.gap_tol, log)
        if constant is not None:
            return _done(constant)
    if options.phase_one and phase_one_applies(inst) and (not outer or options.structured_master):
        # phase 1's Newton model has no attack-shift term (and starts from lambda = 2 lip(L)).  A loss compiled
        # by tangents (a smooth custom loss) needs only its value and derivatives here: phase 1 and the barrier
        # master try to certify it without any tangent; when they do not, the tangent masters start as before,
        # from the nominal rows (sympy smooth hinge on hepatitis: 324 s through tangents).  Phase 1 keeps its
        # tau_min = 1e-4 before the barrier master: handing over at 1e-3 saved 20-25 % at N = 10,000 (synthetic
        # 10 + 10) but left a start the barrier master could not center from at N = 1,000 (0.42 -> 2.9 s)
        certify_tol = options.gap_tol if options.structured_master else None
        split = use_slope_split(inst, options.search)
        if split == "fallback" and slope:
            split = "never"           # the slope-cut LP certifies from phase 1's point (the split cost 11 s on audiology)
        if split != "first":
            first = warm_phase_one(inst, oracle, certify_tol=certify_tol, log=method_log, control=control,
                                   warm=options.warm_start, start=options.start)
            phase_one_time = first.seconds
            control.record("phase 1", "phase_one", {}, "certified" if first.certified else "not_certified",
                           "converged" if first.converged else "stopped", first.seconds, first.newton_steps)
        if split == "first" or (split == "fallback" and not first.converged and not control.should_stop()):
            # phase 1's working set churned (wide categorical data, many weight classes: sun2025 audiology at
            # 1-decimal weights, 0.2249 against an optimum of 0.18506, and masters uncertified after 41 rounds):
            # the smoothing over every configuration (:mod:`.slope_split`) finds 0.18523 and the masters certify
            searched = slope_split_phase_one(inst, oracle, certify_tol=certify_tol, log=method_log, control=control)
            phase_one_time += searched.seconds
            control.record("slope split", "slope_split", {}, "certified" if searched.certified else "not_certified",
                           "converged", searched.seconds, searched.newton_steps)
            # an unconverged phase 1's bundle made calibrated audiology's masters unsolvable, and its point is worse:
            # the loop starts from the split's alone
            first = searched
    if first is not None and first.certified:
        # the smoothed dual point proves the phase-1 point optimal: no conic master at all
        log(f"phase 1: certified, upper bound {first.upper_bound:.9f}, lower bound {first.lower_bound:.9f} after "
            f"{first.rounds} rounds, {first.newton_steps} Newton steps, {first.oracle_calls} oracle calls, "
            f"{first.seconds:.2f} s; no master needed")
        return _done(CuttingPlaneOutcome(program=None, solution=None, intercept=first.intercept, coef=first.coef,
                                         lam=first.lam, s=first.s, lower_bound=first.lower_bound,
                                         upper_bound=first.upper_bound, max_violation=0.0, converged=True,
                                         working_rows=first.bundle, phase_one_time=phase_one_time, dual=first.dual,
                                         phase_one=first))
    if first is not None and control.should_stop():
        return _done(stopped_outcome(first, None, phase_one_time, control.stop_reason))
    restart = None        # the smallest working set at an unconverged phase 1's point (restart_rows)
    if first is not None and not first.converged:
        # stopped by its solve limit: its point's worst-case value evaluated here, by the oracle
        # (lam' eps + sum_n p_n max_k ...), with lambda raised to the dual-norm floor where it sits below; the same
        # separation gives each sample's maximizer there
        lam = max(first.lam, lambda_floor(inst, first.coef))
        sep = oracle.separate(first.intercept, first.coef, lam, np.zeros(inst.n_samples))
        first = dataclasses.replace(first, lam=lam, upper_bound=float(lam * inst.radius + inst.p @ sep.violation)
                                    + inst.penalty_value(first.coef))
        restart = with_nominal_rows(inst, sep.rows)
        log(f"phase 1: stopped by its solve limit after {first.rounds} rounds, {first.seconds:.2f} s; its point's "
            f"worst-case value {first.upper_bound:.9f}")
    # a phase 1 stopped by its solve limit on data the slope cuts take goes straight to them: the barrier master gave
    # up on every such fit measured (sun2025 audiology, 9 settings x 2 runs: 0.1-0.25 s each, fits 0.92x without it)
    skip_barrier = slope and first is not None and not first.converged
    if first is not None and options.structured_master and not skip_barrier:
        # drokit's own barrier solver on the restricted master, from phase 1's point and near-active rows
        # certified at the user's gap (its bounds are exact: an oracle value and a Lagrangian bound).  A tenth of it,
        # as before, cost 2-3 more centerings in which only the lower bound's repair moved (synthetic 10 + 10,
        # N = 100,000: 7.2 / 9.1 / 6.5 / 9.3 s -> 6.1 / 7.6 / 4.6 / 7.5 s; the gaps reached are 1e-7 to 3e-7).
        # After a phase 1 stopped by its solve limit, from its point and the smallest working set there (its bundle
        # churned): census-like seed 20, kappa = inf, radius 0.1, phase 1 stopped 1.6 % above the optimum; the
        # conic masters (41k rows, 70-90 IPM iterations each) took 147 s, the barrier master certifies in 4.3 s
        rows0 = unique_rows(concat_rows([work, first.bundle])) if first.converged else restart
        structured = structured_master(inst, oracle, rows0, first, tol=options.gap_tol, log=method_log,
                                       control=control)
        phase_one_time += structured.seconds
        control.record("barrier master", "barrier_master", {}, "certified" if structured.certified else "not_certified",
                       "certified" if structured.certified else "gave up", structured.seconds, structured.newton_steps)
        if structured.certified:
            log(f"barrier master: certified, upper bound {structured.upper_bound:.9f}, lower bound "
                f"{structured.lower_bound:.9f} after {structured.centerings} centerings, {structured.newton_steps} "
                f"Newton steps, {structured.oracle_calls} oracle calls, {structured.seconds:.2f} s; no conic master")
            return _done(_certified(structured, structured.rows, phase_one_time, first, structured))
        log(f"barrier master: not certified (upper {structured.upper_bound:.9f}, lower "
            f"{structured.lower_bound:.9f}) after {structured.seconds:.2f} s; conic masters follow")
        if structured.upper_bound < first.upper_bound:
            restart = None          # a new point: its own maximizers
            first = _with_point(first, structured)
        if structured.lower_bound > first.lower_bound:
            first = dataclasses.replace(first, lower_bound=structured.lower_bound, dual=structured.dual)
        if control.should_stop():
            return _done(stopped_outcome(first, structured, phase_one_time, control.stop_reason))
    if first is not None and slope and not control.should_stop():
        slope_result = slope_cut_search(inst, oracle, first, tol=options.gap_tol, radius=options.trust_radius or 0.01,
                                        log=method_log, control=control)
        phase_one_time += slope_result.seconds
        control.record("slope cuts", "slope_cuts", {}, "certified" if slope_result.certified else "not_certified",
                       "certified" if slope_result.certified else (slope_result.stop or "gave up"),
                       slope_result.seconds, slope_result.lp_iterations)
        if slope_result.certified:
            best_point = (slope_result.intercept, slope_result.coef, slope_result.lam, slope_result.s)
            log(f"slope cuts: certified, upper bound {slope_result.upper_bound:.9f}, lower bound "
                f"{slope_result.lower_bound:.9f} after {slope_result.rounds} LP masters, {slope_result.cuts} cuts, "
                f"{slope_result.lp_iterations} simplex iterations, {slope_result.seconds:.2f} s; no conic master")
            return _done(_certified(slope_result, restart_rows(inst, oracle, best_point), phase_one_time, first,
                                    structured, slope_result))
        log(f"slope cuts: not certified ({slope_result.stop}; upper {slope_result.upper_bound:.9f}, lower "
            f"{slope_result.lower_bound:.9f}) after {slope_result.seconds:.2f} s; conic masters follow")
        if slope_result.upper_bound < first.upper_bound:
            restart = None
            first = _with_point(first, slope_result)
        if control.should_stop():
            return _done(stopped_outcome(first, structured, phase_one_time, control.stop_reason))
    return OwnSolvers(None, first, restart, structured, slope_result, phase_one_time)
