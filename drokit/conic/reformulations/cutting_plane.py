"""Cutting-plane (constraint generation) method for the exact reformulation.

belbasi2023 Algorithm 1 / sun2025 Algorithm 2: the master problem is the dual program of
:mod:`.dual` restricted to a working set ``W`` of configuration rows (a relaxation, so its optimal
value is a lower bound); a separation oracle finds, per sample, the most violated row
``phi_n = max_k L(u_k) - lambda c_k - s_n``; violated rows are added and the master is re-solved.

Bounds every round:

* lower bound: the master's dual objective, taken only from masters the back-end solved to optimality;
* upper bound: ``lam' eps + mean_n max_k (l_k - lam' c_k)`` at the master's ``beta`` and
  ``lam' = max(lambda, lip ||Gamma^{-1} beta_x||_*)``: the value of a feasible point of the full problem
  (belbasi2023 §5, with the tighter per-sample shift).

It stops when the relative gap ``(UB - LB) / max(1, |UB|) <= gap_tol``: LB comes only from certified
masters and UB is the exact worst-case risk of the best model, so the gap alone is the proof.  Rows
violated by more than ``violation_tol`` at a master's point are added; the last master's maximal
violation is reported as a diagnostic (that point is not the model returned).  Early masters (few rows) can be unbounded on nearly separable data, so they carry a
box ``|beta_j| <= coef_bound`` as in the papers' code; a lower bound is only taken from a master whose box
is inactive (then, by convexity, it has the value of the unboxed master), and a box still active when
no cut is left is widened tenfold.  Keeping the conic master small is also what makes Clarabel reliable here: on
German credit with 2-4 mutable categorical features the monolithic exponential-cone program stalls
(InsufficientProgress / AlmostSolved) while the masters of this loop solve (benchmarks/RESULTS.md).

Stabilization (box-step trust region, Marsten et al. 1975): after phase 1 the masters also carry
``|theta_j - c_j| <= trust_radius`` around the best point ``c`` found so far (``theta`` = coefficients and
intercept).  Kelley masters otherwise jump far from the near-optimal phase-1 point and add cuts where
they do not matter (cylinder-bands: 11 masters, five AlmostSolved, 12.7 s -> 10 masters, 4.5 s).  A
better point on the region's boundary moves the center there and doubles the radius; a region still
active when no cut is left is widened tenfold.  Certification: a master with the region gives a lower
bound only when its solution lies deep inside (``|theta - c| <= radius / 2``).  Nearer the boundary an
interior-point solution may be inside a *weakly active* region (slack ~ mu / multiplier) whose value it
still raises -- measured on audiology: a bound 5e-5 above the optimum with a 1e-6 activity test -- so
when the gap closes there, the same working set is re-solved without the region and only that master's
bound counts.

Budget cuts (:mod:`.budget_cuts`, ``cut_family``): a violated row can be added as the cut of its (sample,
number of changes per weight class, direction), which covers every configuration with those counts at
once (exact for margin losses).  It ends the combinatorial tail of wide binary data (audiology, 62
features: not certified after 100 rounds with configuration rows; certified with budget cuts, at unit,
integer and 1-decimal weights) but makes each master larger, so ``auto`` takes them with one weight class
or from ``WIDE_BUDGET_FEATURES`` mutable features on.  The multi-class budget masters of calibrated
audiology need Clarabel's ``min_switch_step_length=1e-3`` retry (:mod:`drokit.solvers.clarabel`).

An inaccurate master that leaves nothing to add first loses its slack cuts (the working set restarts from
the nominal rows and the maximizers at the best point); if that happens again, the same working set is
re-solved with the back-end's retry ladder, which every later master then gets.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Mapping, Optional, Union

import numpy as np

from ...exceptions import ParameterError, SolverError
from ...gaps import GAP_FLOOR, relative_gap
from ...instance import DROInstance
from ...oracles.enumeration import (ConfigurationRows, concat_rows, enumerate_configurations, row_keys, take_rows,
                                    unique_rows)
from ...oracles.rows import lambda_floor, row_margins
from ...solvers.base import solve_with_retries
from ...run_control import RunControl, estimate_rest
from ..program import ConicProgram
from .structured_master import structured_master
from .budget_cuts import BudgetCuts, budget_cuts_apply, budget_cuts_from_rows, unique_budget_cuts, weight_classes
from .dual import build_dual_program
from .phase_one import phase_one_applies
from .slope_cuts import slope_cut_search, slope_cuts_apply
from .slope_search import slope_split_phase_one, use_slope_split
from .warm_start import warm_phase_one


@dataclass
class CuttingPlaneOptions:
    """Settings of the cutting-plane loop.

    cuts : ``"per_sample"`` (the most violated row of every violated sample, belbasi2023),
        ``"global_best"`` (the single most violated row, sun2025/selvi2022) or an int ``k`` (the ``k``
        most violated samples' rows).
    near_margin : also add rows within this margin of a violated sample's maximum (absolute).
    """

    gap_tol: float = 1e-6
    violation_tol: float = 1e-6
    #: 200: calibrated audiology at 1 decimal (62 features, many weight classes) certifies in 63-99 rounds
    max_rounds: int = 200
    #: initial box |beta_j| <= coef_bound on the masters (widened x10 while active at the end, up to
    #: 1e6); None disables it.  Lower bounds are only taken from masters whose box is inactive.
    coef_bound: float | None = 100.0
    cuts: Union[str, int] = "per_sample"
    near_margin: float = 0.0
    #: start with phase 1 (:mod:`.phase_one`): a smoothed first-order search with the oracle whose
    #: near-active rows seed the first exact master
    phase_one: bool = True
    #: box-step stabilization: masters keep ``|theta_j - c_j| <= trust_radius`` around the best point
    #: ``c`` found so far (``theta`` = coefficients and intercept); see the module docstring for when
    #: its lower bounds count.  None disables it.  1.0 was measured against 0.1 (sun2025 Table 1 data: cylinder-
    #: bands 2.2 s vs 4.3 s at 1.0; with budget cuts 1.0 produced cuts far from the optimum and failing masters:
    #: 47.6 s), then 0.1 against 0.03 / 0.01 / 0.003 on the fits whose masters run: audiology's budget-cut masters
    #: at 1-decimal weights (rho means 0.6-0.9) 204 s on average at 0.1, 94-134 s at 0.03, 48-64 s at 0.01; at
    #: integer weights 12 / 32 / 18 / 14 s -> 4 / 12 / 9 / 17 s; unit 4.8 -> 3.8 s; cylinder-bands, spect and
    #: credit-approval (3-16 masters) within 10 % either way.  A better point on the edge doubles it
    trust_radius: float | None = 0.01
    #: cuts added after phase 1: ``"configuration"`` (one row per violated configuration),
    #: ``"budget"`` (one cut per violated (sample, changes per weight class), :mod:`.budget_cuts`; needs
    #: two mutable categorical features) or ``"auto"`` (budget cuts when all mutable features share one
    #: weight, e.g. unit weights, or with at least ``WIDE_BUDGET_FEATURES`` of them; configuration rows
    #: otherwise)
    cut_family: str = "auto"
    #: certify without a conic master when drokit's own solvers can: phase 1's smoothed dual point, then (after
    #: a converged phase 1) the structured barrier solver of the restricted master (:mod:`.barrier_master`);
    #: the conic masters follow when their certificate does not close.  False: phase 1 only seeds the masters
    structured_master: bool = True
    #: phase 1's search (with ``phase_one=True``): ``"phase_one"`` (:mod:`.phase_one`, smoothing over a working set
    #: of rows the oracle grows), ``"slope_split"`` (:mod:`.slope_split`, smoothing over every configuration through
    #: the separable categorical cost; needs ``p = 1`` there) or ``"auto"`` (the slope split
    #: after an unconverged phase 1 on wide data with many weight classes, :func:`.slope_search.use_slope_split`)
    search: str = "auto"
    #: the LP master over slope cuts (:mod:`.slope_cuts`, HiGHS dual simplex warm-started round to round) after a
    #: barrier master that did not certify (in its place after a phase 1 stopped by its solve limit), before any
    #: conic master: ``"auto"`` (where it applies, on data with at least ``WIDE_BUDGET_FEATURES`` mutable
    #: categorical features and at most ``SLOPE_CUTS_AUTO_SAMPLES`` samples: sun2025 audiology 3.4-43 s -> about
    #: 1.2 s; on narrower mixed data, cylinder-bands and credit-approval, its LPs took 1-6 s against 0.3-1.5 s for the
    #: conic masters), True (wherever it applies, else :class:`ParameterError`) or False
    slope_cuts: Union[bool, str] = "auto"
    #: phase 1 on large data starts from the point of a phase 1 on a subsample (:mod:`.warm_start`, from
    #: ``SUBSAMPLE_FROM`` samples on); False: from ``beta = 0`` and the nominal rows
    warm_start: bool = True
    verbose: bool = False

    def validate(self) -> None:
        for name in ("gap_tol", "violation_tol"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ParameterError(f"cutting-plane option {name} must be > 0, got {v!r}")
        for name in ("coef_bound", "trust_radius"):
            v = getattr(self, name)
            if v is not None and not (np.isfinite(v) and v > 0):
                raise ParameterError(f"cutting-plane option {name} must be None or > 0, got {v!r}")
        if not (isinstance(self.max_rounds, (int, np.integer)) and self.max_rounds > 0):
            raise ParameterError(f"cutting-plane option max_rounds must be a positive int, got {self.max_rounds!r}")
        if self.search not in ("auto", "phase_one", "slope_split"):
            raise ParameterError(f"cutting-plane option search must be 'auto', 'phase_one' or 'slope_split', "
                                 f"got {self.search!r}")
        if not (self.slope_cuts == "auto" or isinstance(self.slope_cuts, (bool, np.bool_))):
            raise ParameterError(f"cutting-plane option slope_cuts must be 'auto', True or False, got {self.slope_cuts!r}")
        if self.cut_family not in ("auto", "configuration", "budget"):
            raise ParameterError(f"cutting-plane option cut_family must be 'auto', 'configuration' or "
                                 f"'budget', got {self.cut_family!r}")
        if not (self.cuts in ("per_sample", "global_best")
                or (isinstance(self.cuts, (int, np.integer)) and self.cuts > 0)):
            raise ParameterError(f"cutting-plane option cuts must be 'per_sample', 'global_best' or a "
                                 f"positive int, got {self.cuts!r}")


@dataclass
class RoundRecord:
    round: int
    lower_bound: float
    upper_bound: float
    max_violation: float
    working_rows: int
    added_rows: int
    budget_cuts: int
    master_status: str
    master_iterations: int
    master_time: float
    oracle_time: float

    @property
    def relative_gap(self) -> float:
        return relative_gap(self.lower_bound, self.upper_bound)


@dataclass
class CuttingPlaneOutcome:
    program: Optional[ConicProgram]       # final master (None when no conic master was solved)
    solution: Any                         # its SolverSolution (None when no conic master was solved)
    intercept: float
    coef: np.ndarray
    lam: float
    s: np.ndarray
    lower_bound: float
    upper_bound: float
    max_violation: float
    converged: bool
    history: List[RoundRecord] = field(default_factory=list)
    working_rows: Optional[ConfigurationRows] = None
    phase_one_time: float = 0.0           # seconds spent in phase 1 (before the first master)
    #: the best dual point of phase 1 or the barrier master (a :class:`~drokit.certificates.lagrangian.LowerBound`)
    dual: Any = None
    phase_one: Any = None                 # the :class:`~.phase_one.PhaseOneResult`, when no conic master was solved
    structured: Any = None                # the :class:`~.barrier_master.BarrierMasterResult`, when it ran
    slope_cuts: Any = None                # the :class:`~.slope_cuts.SlopeCutResult`, when it ran
    #: why the loop stopped before its certificate closed (the fit's time limit, an interrupt), else None
    stop_reason: Optional[str] = None


def _read(program: ConicProgram, x: np.ndarray):
    coef = program.value("coef", x)
    intercept = float(program.value("intercept", x)[0]) if "intercept" in program.variables else 0.0
    return intercept, coef, float(program.value("lambda", x)[0]), program.value("s", x)


def solve_cutting_plane(inst: DROInstance, oracle, backend, options: CuttingPlaneOptions,
                        solver_options: Optional[Mapping[str, Any]] = None,
                        log: Optional[Callable[[str], None]] = None, control=None,
                        confirm: Optional[Callable[..., Any]] = None) -> CuttingPlaneOutcome:
    """Run the loop; raises :class:`SolverError` if the first master cannot be solved.

    ``confirm(intercept, coef, upper, rows, tol)``: an explicit dual point's bound for the best model (a
    :class:`~drokit.certificates.lagrangian.LowerBound` or ``None``; the estimators pass
    :func:`~drokit.certificates.lower_bound.certified_lower_bound`), which confirms the first gap the masters' dual
    objective closes; without it (or when it falls short) the masters are solved 100x tighter from then on.

    ``control`` (a :class:`~drokit.run_control.RunControl`; default: the method's log on stderr when
    ``options.verbose``): progress lines, the record of every master's solver attempts, and a stop at the next
    step -- with the best model found and its bounds, ``converged=False`` and ``stop_reason`` -- once the fit's
    time limit has passed or an interrupt arrived (the masters get the time left as the solver's limit)."""
    options.validate()
    adversarial = hasattr(inst.loss, "at")
    outer = bool(getattr(inst.loss, "outer_approximation", False))
    if adversarial:  # the attacked loss depends on the model: bind the oracle to each model it separates
        from ...oracles.base import ModelBoundOracle
        oracle = ModelBoundOracle(oracle, inst)
    if control is None:
        control = RunControl(verbose=2 if options.verbose else 0)
    if log is None:
        log = control.log
    method_log = log if control.verbose >= 2 else None
    work = enumerate_configurations(inst, nominal_only=True)  # z = z_n, label kept
    seen = set(row_keys(work))
    lower, upper = -np.inf, np.inf
    best = None
    bound = options.coef_bound
    radius = options.trust_radius
    use_budget, budget_reason = budget_cuts_apply(inst)
    if options.cut_family == "budget" and not use_budget:
        raise ParameterError(f"cutting-plane option cut_family='budget' does not apply: {budget_reason}")
    mutable, cls = weight_classes(inst)
    classes = int(np.max(cls, initial=0)) + 1
    use_budget = use_budget and (options.cut_family == "budget" or (
        options.cut_family == "auto" and (classes == 1 or mutable.size >= WIDE_BUDGET_FEATURES)))
    budget, seen_budget = BudgetCuts.empty(classes), set()
    # masters to a tenth of the gap tolerance, never tighter than 1e-8 (Clarabel's default, which its
    # masters on degenerate optima already reach only with retries); the user's options take precedence
    solver_options = {**backend.accuracy_options(max(options.gap_tol / 10, 1e-8)), **dict(solver_options or {})}
    slope = _use_slope_cuts(inst, options) and not outer and options.structured_master
    adopted: dict = {}          # settings of a successful retry, kept for the next masters (_adopt_successful_retry)
    phase_one_time = 0.0
    first = structured = None
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
                                   warm=options.warm_start)
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
        return CuttingPlaneOutcome(program=None, solution=None, intercept=first.intercept, coef=first.coef,
                                   lam=first.lam, s=first.s, lower_bound=first.lower_bound,
                                   upper_bound=first.upper_bound, max_violation=0.0, converged=True,
                                   working_rows=first.bundle, phase_one_time=phase_one_time, dual=first.dual,
                                   phase_one=first)
    if first is not None and control.should_stop():
        return _stopped_outcome(first, None, phase_one_time, control.stop_reason)
    restart_rows = None        # the smallest working set at an unconverged phase 1's point (_restart_rows)
    if first is not None and not first.converged:
        # stopped by its solve limit: its point's worst-case value evaluated here, by the oracle
        # (lam' eps + sum_n p_n max_k ...), with lambda raised to the dual-norm floor where it sits below; the same
        # separation gives each sample's maximizer there
        lam = max(first.lam, lambda_floor(inst, first.coef))
        sep = oracle.separate(first.intercept, first.coef, lam, np.zeros(inst.n_samples))
        first = dataclasses.replace(first, lam=lam, upper_bound=float(lam * inst.radius + inst.p @ sep.violation)
                                    + inst.penalty_value(first.coef))
        restart_rows = _with_nominal_rows(inst, sep.rows)
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
        rows0 = unique_rows(concat_rows([work, first.bundle])) if first.converged else restart_rows
        structured = structured_master(inst, oracle, rows0, first, tol=options.gap_tol, log=method_log,
                                       control=control)
        phase_one_time += structured.seconds
        control.record("barrier master", "barrier_master", {}, "certified" if structured.certified else "not_certified",
                       "certified" if structured.certified else "gave up", structured.seconds, structured.newton_steps)
        if structured.certified:
            log(f"barrier master: certified, upper bound {structured.upper_bound:.9f}, lower bound "
                f"{structured.lower_bound:.9f} after {structured.centerings} centerings, {structured.newton_steps} "
                f"Newton steps, {structured.oracle_calls} oracle calls, {structured.seconds:.2f} s; no conic master")
            return CuttingPlaneOutcome(program=None, solution=None, intercept=structured.intercept,
                                       coef=structured.coef, lam=structured.lam, s=structured.s,
                                       lower_bound=structured.lower_bound, upper_bound=structured.upper_bound,
                                       max_violation=0.0, converged=True, working_rows=structured.rows,
                                       phase_one_time=phase_one_time, dual=structured.dual, phase_one=first,
                                       structured=structured)
        log(f"barrier master: not certified (upper {structured.upper_bound:.9f}, lower "
            f"{structured.lower_bound:.9f}) after {structured.seconds:.2f} s; conic masters follow")
        if structured.upper_bound < first.upper_bound:
            restart_rows = None          # a new point: its own maximizers
            first = dataclasses.replace(first, intercept=structured.intercept, coef=structured.coef,
                                        lam=structured.lam, s=structured.s, upper_bound=structured.upper_bound)
        if structured.lower_bound > first.lower_bound:
            first = dataclasses.replace(first, lower_bound=structured.lower_bound, dual=structured.dual)
        if control.should_stop():
            return _stopped_outcome(first, structured, phase_one_time, control.stop_reason)
    slope_result = None
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
            return CuttingPlaneOutcome(program=None, solution=None, intercept=slope_result.intercept,
                                       coef=slope_result.coef, lam=slope_result.lam, s=slope_result.s,
                                       lower_bound=slope_result.lower_bound, upper_bound=slope_result.upper_bound,
                                       max_violation=0.0, converged=True,
                                       working_rows=_restart_rows(inst, oracle, best_point),
                                       phase_one_time=phase_one_time, dual=slope_result.dual, phase_one=first,
                                       structured=structured, slope_cuts=slope_result)
        log(f"slope cuts: not certified ({slope_result.stop}; upper {slope_result.upper_bound:.9f}, lower "
            f"{slope_result.lower_bound:.9f}) after {slope_result.seconds:.2f} s; conic masters follow")
        if slope_result.upper_bound < first.upper_bound:
            restart_rows = None
            first = dataclasses.replace(first, intercept=slope_result.intercept, coef=slope_result.coef,
                                        lam=slope_result.lam, s=slope_result.s, upper_bound=slope_result.upper_bound)
        if control.should_stop():
            return _stopped_outcome(first, structured, phase_one_time, control.stop_reason)
    first_dual = first.dual if first is not None else None
    if first is not None and outer:
        first = None        # the tangent masters start from the nominal rows; the dual point's bound is kept
    if first is not None:
        upper = first.upper_bound
        best = (first.intercept, first.coef, first.lam, first.s)
        if first.converged:
            work = _sample_major(unique_rows(concat_rows([work, first.bundle])))
        else:
            # stopped by its solve limit (wide multi-level data, calibrated weights: a new row per sample every
            # solve): its bundle seeded masters Clarabel could not solve (calibrated audiology), but its point
            # is good (sun2025 Table 1, audiology, 1 decimal, rho mean 0.6: 0.1936 against 535 for the
            # nominal start, which then failed uncertified): the loop keeps the point as its best model and
            # trust-region center, with the smallest working set there (nominal rows + maximizers)
            work = restart_rows if restart_rows is not None else _restart_rows(inst, oracle, best)
        seen = set(row_keys(work))
        size = max(abs(first.intercept), float(np.max(np.abs(first.coef), initial=0.0)))
        if bound is not None and size >= bound / 10:
            bound = 10.0 ** np.ceil(np.log10(size * 10))
        log(f"phase 1: upper bound {upper:.9f} after {first.rounds} rounds, {first.oracle_calls} oracle "
            f"calls, {first.seconds:.2f} s{'' if first.converged else ' (stopped by its solve limit)'}; "
            f"{work.size} rows seed the master")
    history: List[RoundRecord] = []
    last_program = last_solution = None
    max_violation = np.inf
    converged = False
    pruned = False
    confirmed = False      # the masters' closed gap checked once by an explicit dual point (or tighter masters)
    tightened = False      # an open gap with nothing to add: masters solved tighter, once
    tight = backend.accuracy_options(max(options.gap_tol / 1000, 1e-10))   # the settings of masters solved 100x tighter
    retry_ladder = False   # set once an inaccurate master leaves nothing to add: every later master retries
    log(f"{'round':>5} {'lower':>14} {'upper':>14} {'rel.gap':>9} {'max viol':>9} {'rows':>8} {'added':>7} master")
    for r in range(options.max_rounds):
        if control.should_stop():
            if best is None:
                raise SolverError(f"cutting plane: {control.stop_reason} before any model was found",
                                  status="time_limit", solver=backend.name)
            log(f"{r:>5} {control.stop_reason}: stopping with the best model so far")
            break
        t0 = time.perf_counter()
        center = None if (radius is None or best is None) else _params(best[0], best[1], inst)
        program = build_dual_program(inst, work, box=_box(center, radius, bound, inst),
                                     budget=budget if budget.size else None)
        # an inaccurate master still gives a point and cuts; its bound only matters near the end, so the
        # retry ladder (up to 6 more solves) runs only when the gap is small or the last round's cuts were
        # nearly satisfied (nursery, 1-decimal weights: the first master's retries cost most of 87 s)
        near_end = (np.isfinite(lower) and upper - lower <= 100 * options.gap_tol * max(1.0, abs(upper))) \
            or max_violation <= 1e-4 * max(1.0, abs(upper)) or retry_ladder
        sol = solve_with_retries(backend, program, {**adopted, **solver_options}, retry_inaccurate=near_end,
                                 verbose=control.solver_verbose, control=control, stage=f"master {r}")
        if not sol.has_solution and adopted and not control.should_stop():
            # the settings kept from an earlier retry take precedence over the whole ladder, which can then only
            # vary the rest: a master they fail gets the ladder again from the defaults (sun2025 Table 1,
            # audiology, 1 decimal, rho mean 0.7: two failed masters under {max_step_fraction 0.8, no
            # equilibration, min_switch_step_length 1e-3} ended the loop uncertified after 41 rounds)
            log(f"{r:>5} master {sol.raw_status} with the kept settings {adopted}: the retry ladder from the defaults")
            adopted = {}
            sol = solve_with_retries(backend, program, solver_options, retry_inaccurate=near_end,
                                     verbose=control.solver_verbose, control=control, stage=f"master {r}")
        adopted = _adopt_successful_retry(sol, adopted, solver_options, log, r)
        t1 = time.perf_counter()
        if not sol.has_solution and control.should_stop() and best is not None:
            log(f"{r:>5} master {sol.raw_status}: {control.stop_reason}; stopping with the best model so far")
            break
        if not sol.has_solution:
            if best is None and control.should_stop():     # the solver had the time left, and it ran out
                raise SolverError(f"cutting plane: {control.stop_reason} before any model was found "
                                  f"(master {r}: {sol.raw_status})", status="time_limit", solver=backend.name)
            if last_solution is None:
                raise SolverError(
                    f"the first cutting-plane master (nominal rows only) could not be solved: "
                    f"{sol.status} ({sol.raw_status}); the data may be separable on features the metric "
                    f"does not protect", status=sol.status, raw_status=sol.raw_status,
                    solver=sol.solver, solution=sol)
            if pruned or best is None:
                log(f"{r:>5} master failed with {sol.raw_status}; stopping")
                break
            # a failed master (Clarabel InsufficientProgress on a large, ill-conditioned working set: the
            # phase-1 bundle of calibrated audiology, kappa = m) gets the restart of an inaccurate one
            pruned = True
            work = _restart_rows(inst, oracle, best)
            seen = set(row_keys(work))
            log(f"{r:>5} master failed with {sol.raw_status}: slack cuts deleted, {work.size} rows kept")
            continue
        intercept, coef, lam, s = _read(program, sol.x)
        theta = _params(intercept, coef, inst)
        box_active = bound is not None and float(np.max(np.abs(theta), initial=0.0)) >= bound * (1 - ACTIVE_RTOL)
        step = float(np.max(np.abs(theta - center), initial=0.0)) if center is not None else 0.0
        region_active = center is not None and step >= radius * (1 - ACTIVE_RTOL)
        provisional = sol.status == "optimal" and not box_active and not region_active
        # certified: a master without the trust region, or one whose solution lies deep inside it (a
        # constraint with a non-negligible multiplier leaves an interior-point slack ~ mu / multiplier,
        # far below radius / 2)
        if provisional and (center is None or step <= DEEP_INSIDE * radius):
            lower = max(lower, float(sol.dual_objective))
        lam_min = lambda_floor(inst, coef)
        sep = oracle.separate(intercept, coef, lam, s, near_margin=options.near_margin)
        tangents_added = 0
        if outer:  # tangent cuts of an outer-approximated loss at the separated and working rows
            tangents_added = inst.loss.add_tangents(np.concatenate([row_margins(inst, sep.rows, intercept, coef),
                                                                    row_margins(inst, work, intercept, coef)]))
        if lam >= lam_min:
            # the separation already holds max_k (l_k - lam c_k) - s_n per sample: no second oracle call
            ub = float(lam * inst.radius + inst.p @ (sep.violation + s))
        else:  # the master's lambda sits below the dual-norm floor by the solver's tolerance
            ub = oracle.upper_bound(intercept, coef, lam, inst.radius, lam_min)
        ub += inst.penalty_value(coef)
        if ub < upper:
            upper = ub
            best = (intercept, coef, max(lam, lam_min), s)
            if region_active:   # a better point on the region's boundary: the region moves there and grows
                radius *= 2.0
        t2 = time.perf_counter()
        max_violation = float(max(np.max(sep.violation), 0.0))
        last_program, last_solution = program, sol
        # relative to |upper| down to GAP_FLOOR (as the barrier master), not to max(1, |upper|): an objective of 0.30
        # closed to 1e-6 absolute was 1.1e-6 relative above the optimum (fuzz seed 26731)
        gap_ok = (upper - lower) <= options.gap_tol * max(abs(upper), GAP_FLOOR)
        new = _select(sep, options)
        fresh = [i for i, key in enumerate(row_keys(new)) if key not in seen]
        new = take_rows(new, np.asarray(fresh, dtype=int))
        new_budget = BudgetCuts.empty(classes)
        if use_budget and new.size:
            # a violated row with changes becomes the budget cut of its (sample, count, direction); a row
            # whose budget cut is already in the master (possible for non-monotone losses) stays a row
            candidates, unchanged = budget_cuts_from_rows(inst, new, intercept, coef)
            new_budget = unique_budget_cuts(candidates, seen_budget)
            covered = np.isin(2 * new.sample + new.flip, 2 * new_budget.sample + new_budget.flip)
            covered[unchanged] = False
            new = take_rows(new, np.flatnonzero(~covered))
        nothing_to_add = new.size == 0 and new_budget.size == 0 and tangents_added == 0
        history.append(RoundRecord(r, lower, upper, max_violation, work.size, new.size + new_budget.size,
                                   budget.size, sol.raw_status, sol.iterations, t1 - t0, t2 - t1))
        log(f"{r:>5} {lower:>14.9f} {upper:>14.9f} {history[-1].relative_gap:>9.2e} "
            f"{max_violation:>9.2e} {work.size + budget.size:>8} {new.size + new_budget.size:>7} "
            f"{sol.raw_status} ({sol.iterations} it)")
        _round_progress(control, history, options.gap_tol)
        if region_active and nothing_to_add:
            radius *= REGION_WIDEN  # nothing to add inside the region but it binds: widen it, same working set
            log(f"{r:>5} trust region active with no cut to add: widened to {radius:g}")
            continue
        if box_active and nothing_to_add:
            if bound >= 1e6:
                log(f"{r:>5} coefficient box {bound:g} still active; stopping")
                break
            bound *= 10.0  # the box binds: widen it and re-solve the same working set
            log(f"{r:>5} coefficient box active: widened to {bound:g}")
            continue
        if center is not None and provisional and step > DEEP_INSIDE * radius \
                and upper - float(sol.dual_objective) <= options.gap_tol * max(abs(upper), GAP_FLOOR):
            # closed inside the trust region: verify on the same working set without it, whose lower
            # bound alone is certified (an interior-point solution sits strictly inside a weakly
            # active region, so "inactive" is not a proof that the region did not raise the value)
            radius = None
            log(f"{r:>5} gap closed inside the trust region; verifying without it")
            continue
        if gap_ok and best is not None and not confirmed:
            # the masters' bound is a conic solver's dual objective, a bound only up to its residuals (an l1-penalized
            # smooth hinge: 0.50000042 against an optimum of 0.4999999996, fuzz seed 40620): the stop is confirmed by
            # an explicit dual point (the Lagrangian bound at the best model), or, where that falls short (ties),
            # by the same masters solved 100x tighter, once
            confirmed = True
            bound_point = confirm(best[0], best[1], upper, work, options.gap_tol / 10) if confirm is not None else None
            if bound_point is not None and upper - bound_point.value <= options.gap_tol * max(abs(upper), GAP_FLOOR):
                first_dual = bound_point if first_dual is None or bound_point.value > first_dual.value else first_dual
            else:
                solver_options = {**solver_options, **tight}
                lower = -np.inf
                log(f"{r:>5} gap closed by the masters' dual objective only: masters solved tighter from here")
                continue
        if gap_ok:
            # the lower bound comes only from certified masters and the upper bound is the exact worst-case
            # risk of the best model: the gap is the proof, whatever the last master's violation (its
            # point is not the model returned).  Requiring both kept calibrated audiology (1 decimal)
            # running for 100 rounds with a closed gap, 5e-7, and master violations ~1e-4
            converged = True
            break
        if new_budget.size:
            seen_budget.update(new_budget.keys())
            budget = BudgetCuts.concat([budget, new_budget])
        if nothing_to_add and sol.status != "optimal" and not pruned and best is not None:
            # nothing to add but the master is inaccurate (degenerate optima with many ties): restart
            # from the smallest working set, the nominal rows and each sample's maximizer at the best point
            pruned = True
            work = _restart_rows(inst, oracle, best)
            seen = set(row_keys(work))
            log(f"{r:>5} master {sol.raw_status}: slack cuts deleted, {work.size} rows kept")
            continue
        if nothing_to_add and sol.status != "optimal" and not retry_ladder:
            # still inaccurate with nothing to add (after the pruning, or with nothing to prune): the same
            # working set again with the retry ladder, and every later master with it (credit-approval,
            # integer weights: AlmostSolved -> Solved).  Pruning comes first: on a large working set the
            # ladder's 8 solves all ended AlmostSolved (nursery, 1 decimal: 75,856 rows, 90 s), while the
            # pruned master solves
            retry_ladder = True
            log(f"{r:>5} master {sol.raw_status} with nothing to add: re-solving with the retry ladder")
            continue
        if nothing_to_add and not gap_ok and sol.status == "optimal" and not tightened:
            # nothing above violation_tol to add, but the gap is open: the master's point is accurate to its solver's
            # tolerance only (an l1-penalized hinge: gap 8e-6 relative at 0.0264 with violations of 4e-7, fuzz seed
            # 40459): the same working set solved 100x tighter, once, and its finer violations added
            tightened = True
            solver_options = {**solver_options, **tight}
            options = dataclasses.replace(options, violation_tol=min(options.violation_tol,
                                                                     1e-3 * options.gap_tol * max(abs(upper), GAP_FLOOR)))
            lower = -np.inf    # the looser masters' dual objective: a bound only up to their residuals
            log(f"{r:>5} gap open with nothing to add: masters solved tighter from here")
            continue
        if nothing_to_add:
            # nothing left to add: the master is exact on every violated row it can be given
            converged = gap_ok and sol.status == "optimal"
            break
        seen.update(row_keys(new))
        work = _sample_major(concat_rows([work, new]))
    intercept, coef, lam, s = (best if best is not None else _read(last_program, last_solution.x))
    return CuttingPlaneOutcome(program=last_program, solution=last_solution, intercept=intercept,
                               coef=coef, lam=lam, s=s, lower_bound=lower, upper_bound=upper,
                               max_violation=max_violation, converged=converged, history=history,
                               working_rows=work, phase_one_time=phase_one_time, dual=first_dual,
                               structured=structured, phase_one=first if last_solution is None else None,
                               stop_reason=None if converged else control.stop_reason)


def _stopped_outcome(first, structured, seconds: float, reason: str) -> CuttingPlaneOutcome:
    """The outcome of a loop stopped (time limit, interrupt) before any conic master: phase 1's best point
    (``first``, already merged with the barrier master's when it ran) and its bounds, not converged."""
    return CuttingPlaneOutcome(program=None, solution=None, intercept=first.intercept, coef=first.coef, lam=first.lam,
                               s=first.s, lower_bound=first.lower_bound, upper_bound=first.upper_bound,
                               max_violation=float("nan"), converged=False, working_rows=first.bundle,
                               phase_one_time=seconds, dual=first.dual, phase_one=first, structured=structured,
                               stop_reason=reason)


def _round_progress(control, history: List[RoundRecord], gap_tol: float) -> None:
    """The progress line of the last round: its certified gap, rows, and an estimate of the rounds left."""
    rec = history[-1]
    gap = rec.relative_gap
    rest = estimate_rest([h.relative_gap for h in history], [h.master_time + h.oracle_time for h in history], gap_tol)
    control.progress(f"round {rec.round}", (f"gap {gap:.1e} ({rec.lower_bound:.9g} <= optimum <= {rec.upper_bound:.9g})"
                                            if np.isfinite(gap) else f"best value {rec.upper_bound:.9g}, no bound yet")
                     + f", {rec.working_rows:,} rows" + (f"; {rest}" if rest else ""))


#: ``cut_family="auto"`` with several weight classes (calibrated weights) takes budget cuts from this many
#: mutable categorical features on.  Measured (sun2025 Table 1 data, integer and 1-decimal weights):
#: audiology (62 features) is certified only with budget cuts (configuration rows: 100 rounds, not
#: certified); on narrow data the class counts hardly aggregate and the masters grow (nursery, 8 features,
#: 1 decimal: 75,000-row masters ending AlmostSolved, minutes instead of 15 s; spect, 22: 0.63 s vs 0.49 s)
WIDE_BUDGET_FEATURES = 30


def _use_slope_cuts(inst: DROInstance, options: CuttingPlaneOptions) -> bool:
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


#: ``slope_cuts="auto"`` runs them up to this many samples: every violated sample adds a cut each round, and the LPs
#: grow with them (60 features of 2-5 levels, unit weights: 1,000 rows 11 LPs and 41 s, where the barrier master
#: certifies in under a second; 10,000 rows 56,099 simplex iterations in the third LP).  Audiology: 226
SLOPE_CUTS_AUTO_SAMPLES = 500
#: a trust region that binds with no cut to add grows by this factor.  Measured: tenfold sent census-like
#: kappa = 1 (radius 0.01) from 0.4 to 4, a master with 5,050 violated rows and a 38,000-row master that did
#: not finish in 300 s; doubling certifies it in 41.5 s (three more masters).  sun2025 Table 1, the 7 datasets
#: whose masters run, all three weight settings, side by side: every fit certified both ways, times within
#: noise except cylinder-bands integer 2.75 -> 3.74 s and credit-approval 1-decimal 2.30 -> 1.34 s
REGION_WIDEN = 2.0
#: a box coordinate within this relative distance of its bound counts as active
ACTIVE_RTOL = 1e-3
#: a trust-region master's lower bound is certified when its solution is within this fraction of the
#: radius from the center; nearer the boundary it only triggers a verification without the region
DEEP_INSIDE = 0.5


def _restart_rows(inst: DROInstance, oracle, best) -> ConfigurationRows:
    """The smallest working set to restart from: the nominal rows and each sample's maximizing row at the
    best point found so far (``best = (intercept, coef, lambda, s)``)."""
    return _with_nominal_rows(inst, oracle.separate(best[0], best[1], best[2], np.zeros(inst.n_samples)).rows)


def _with_nominal_rows(inst: DROInstance, rows: ConfigurationRows) -> ConfigurationRows:
    """The nominal rows and ``rows``, without repeats, sorted by sample."""
    return _sample_major(unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True), rows])))


def _adopt_successful_retry(sol, adopted: Mapping[str, Any], solver_options: Mapping[str, Any], log, r: int) -> dict:
    """The masters of one loop are alike: when a retry setting solved this one, the later masters start
    from it (``adopted``, below the user's ``solver_options``, which always take precedence).  Calibrated
    audiology, integer weights: the multi-class budget masters that need ``min_switch_step_length=1e-3`` --
    35.6 s with the ladder on every master, 10 s with the setting adopted."""
    attempts = sol.info.get("attempts") or []
    if sol.status != "optimal" or len(attempts) < 2 or not attempts[-1][0]:
        return dict(adopted)
    extra = {k: v for k, v in attempts[-1][0].items() if k not in solver_options and k not in adopted}
    if extra:
        log(f"{r:>5} master solved with {extra}: kept for the next masters")
    return {**adopted, **extra}


def _params(intercept: float, coef: np.ndarray, inst: DROInstance) -> np.ndarray:
    """``theta = (coef, intercept)``: the coordinates the masters' boxes act on (the order of
    :func:`.dual.build_dual_program`)."""
    return np.append(coef, intercept) if inst.fit_intercept else np.asarray(coef, dtype=float)


def _box(center: Optional[np.ndarray], radius: Optional[float], bound: Optional[float],
         inst: DROInstance):
    """``(lo, hi)`` on ``theta``: the trust region ``|theta - center| <= radius`` intersected with the
    coefficient box ``|theta| <= bound`` (either may be absent), or None."""
    dim = inst.schema.n_encoded + int(inst.fit_intercept)
    lo, hi = np.full(dim, -np.inf), np.full(dim, np.inf)
    if center is not None:
        lo, hi = center - radius, center + radius
    if bound is not None:
        lo, hi = np.maximum(lo, -bound), np.minimum(hi, bound)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return None
    return lo, hi


def _sample_major(rows: ConfigurationRows) -> ConfigurationRows:
    """Rows sorted by sample (stable): deterministic masters with block structure."""
    return take_rows(rows, np.argsort(rows.sample, kind="stable"))


def _select(sep, options: CuttingPlaneOptions) -> ConfigurationRows:
    violated = np.flatnonzero(sep.violation > options.violation_tol)
    rows = sep.rows
    # sep.rows holds one row per sample; map sample -> position
    pos = np.empty(len(sep.violation), dtype=int)
    pos[rows.sample] = np.arange(rows.size)
    if options.cuts == "global_best":
        violated = violated[np.argsort(-sep.violation[violated])][:1]
    elif isinstance(options.cuts, (int, np.integer)):
        violated = violated[np.argsort(-sep.violation[violated])][: int(options.cuts)]
    chosen = take_rows(rows, pos[violated])
    if options.near_margin > 0 and sep.near.size:
        near = take_rows(sep.near, np.flatnonzero(np.isin(sep.near.sample, violated)))
        chosen = concat_rows([chosen, near])
    return chosen
