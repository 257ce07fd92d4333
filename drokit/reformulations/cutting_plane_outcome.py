"""The cutting plane's settings and records: :class:`CuttingPlaneOptions`, one :class:`RoundRecord` per master, the
:class:`CuttingPlaneOutcome` of a run (:mod:`.cutting_plane`, :mod:`.own_solvers`), and the working-set helpers both
stages use."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, List, Optional, Union

import numpy as np

from ..exceptions import ParameterError
from ..gaps import relative_gap
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, concat_rows, enumerate_configurations, take_rows, unique_rows
from ..conic.program import ConicProgram


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
    #: categorical features and at most ``SLOPE_CUTS_AUTO_SAMPLES`` samples: sun2025 audiology 3.4-43 s -> 0.9-
    #: 1.2 s; on narrower mixed data, cylinder-bands and credit-approval, its LPs took 1-6 s against 0.3-1.5 s for the
    #: conic masters), True (wherever it applies, else :class:`ParameterError`) or False
    slope_cuts: Union[bool, str] = "auto"
    #: phase 1 on large data starts from the point of a phase 1 on a subsample (:mod:`.warm_start`, from
    #: ``SUBSAMPLE_FROM`` samples on); False: from ``beta = 0`` and the nominal rows
    warm_start: bool = True
    #: ``theta = (beta_0, beta, lambda)`` to start phase 1 from (at the first temperature ``WARM_TAU`` of
    #: :mod:`.warm_start`, in place of a subsample's point): the solution of a nearby problem on the same data, e.g.
    #: the previous radius of a path (the estimators' ``warm_start=True``).  Only the start moves: the certificate is
    #: computed as always.  A vector of another length (other data) is ignored.  None: no start
    start: Optional[np.ndarray] = None
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
        if self.start is not None:
            start = np.asarray(self.start, dtype=float)
            if start.ndim != 1 or not np.all(np.isfinite(start)):
                raise ParameterError(f"cutting-plane option start must be a finite 1-d vector (beta_0, beta, lambda), "
                                     f"got {self.start!r}")
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


def stopped_outcome(first, structured, seconds: float, reason: str) -> CuttingPlaneOutcome:
    """The outcome of a loop stopped (time limit, interrupt) before any conic master: phase 1's best point
    (``first``, already merged with the barrier master's when it ran) and its bounds, not converged."""
    return CuttingPlaneOutcome(program=None, solution=None, intercept=first.intercept, coef=first.coef, lam=first.lam,
                               s=first.s, lower_bound=first.lower_bound, upper_bound=first.upper_bound,
                               max_violation=float("nan"), converged=False, working_rows=first.bundle,
                               phase_one_time=seconds, dual=first.dual, phase_one=first, structured=structured,
                               stop_reason=reason)


#: ``cut_family="auto"`` with several weight classes (calibrated weights) takes budget cuts from this many
#: mutable categorical features on.  Measured (sun2025 Table 1 data, integer and 1-decimal weights):
#: audiology (62 features) is certified only with budget cuts (configuration rows: 100 rounds, not
#: certified); on narrow data the class counts hardly aggregate and the masters grow (nursery, 8 features,
#: 1 decimal: 75,000-row masters ending AlmostSolved, minutes instead of 15 s; spect, 22: 0.63 s vs 0.49 s)
WIDE_BUDGET_FEATURES = 30


#: ``slope_cuts="auto"`` runs them up to this many samples: every violated sample adds a cut each round, and the LPs
#: grow with them (60 features of 2-5 levels, unit weights: 1,000 rows 11 LPs and 41 s, where the barrier master
#: certifies in under a second; 10,000 rows 56,099 simplex iterations in the third LP).  Audiology: 226
SLOPE_CUTS_AUTO_SAMPLES = 500


def restart_rows(inst: DROInstance, oracle, best) -> ConfigurationRows:
    """The smallest working set to restart from: the nominal rows and each sample's maximizing row at the
    best point found so far (``best = (intercept, coef, lambda, s)``)."""
    return with_nominal_rows(inst, oracle.separate(best[0], best[1], best[2], np.zeros(inst.n_samples)).rows)


def with_nominal_rows(inst: DROInstance, rows: ConfigurationRows) -> ConfigurationRows:
    """The nominal rows and ``rows``, without repeats, sorted by sample."""
    return sample_major(unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True), rows])))


def sample_major(rows: ConfigurationRows) -> ConfigurationRows:
    """Rows sorted by sample (stable): deterministic masters with block structure."""
    return take_rows(rows, np.argsort(rows.sample, kind="stable"))


def outcome_on_all_samples(out: CuttingPlaneOutcome, keep: np.ndarray, inst: DROInstance, oracle) -> CuttingPlaneOutcome:
    """``out``, the loop's outcome on ``inst.take_samples(keep)`` (the samples of positive weight), read on ``inst``:
    the working set's and the dual point's rows name their samples in ``inst`` (each sample of weight 0 gets its
    nominal row, with mass 0 in the dual point: every bound is unchanged, ``p_n = 0``), and ``s_n`` of a sample of
    weight 0 is its worst row's value ``max_k [L(u_k) - lambda c_k]`` at the point, by ``oracle`` (bound to ``inst``).

    The structured solvers divide by ``p_n`` (the epigraph's barrier ``mu / p_n``), and a sample of weight 0 has no
    objective pulling its epigraph down: the loop runs on the others (a fit with 500 of 4,000 samples at weight 0
    went to the conic masters, 0.52 s against 0.07 s without them)."""
    def on_inst(rows):
        return None if rows is None else dataclasses.replace(rows, sample=keep[np.asarray(rows.sample, dtype=int)])
    if hasattr(inst.loss, "at"):         # an adversarial loss is attacked at the model: the oracle binds it
        from ..oracles.base import ModelBoundOracle
        oracle = ModelBoundOracle(oracle, inst)
    s = oracle.separate(out.intercept, out.coef, out.lam, np.zeros(inst.n_samples)).violation
    s[keep] = out.s
    dual = out.dual if out.dual is None else dataclasses.replace(out.dual, rows=on_inst(out.dual.rows))
    rows = out.working_rows if out.working_rows is None else with_nominal_rows(inst, on_inst(out.working_rows))
    return dataclasses.replace(out, s=s, dual=dual, working_rows=rows)
