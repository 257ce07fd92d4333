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

It stops when the relative gap ``(UB - LB) / max(1, |UB|) <= gap_tol`` and the maximal violation is
``<= violation_tol``.  Early masters (few rows) can be unbounded on nearly separable data, so they carry a
box ``|beta_j| <= coef_bound`` as in the papers' code; a lower bound is only taken from a master whose box
is inactive (then, by convexity, it has the value of the unboxed master), and a box still active when
no cut is left is widened tenfold.  Keeping the conic master small is also what makes Clarabel reliable here: on
German credit with 2-4 mutable categorical features the monolithic exponential-cone program stalls
(InsufficientProgress / AlmostSolved) while the masters of this loop solve (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Mapping, Optional, Union

import numpy as np

from ...exceptions import ParameterError, SolverError
from ...models.instance import DROInstance
from ...oracles.enumeration import (ConfigurationRows, concat_rows, enumerate_configurations, row_keys, take_rows,
                                    unique_rows)
from ...solvers.base import solve_with_retries
from ..program import ConicProgram
from .dual import build_dual_program
from .phase_one import phase_one


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
    max_rounds: int = 100
    #: initial box |beta_j| <= coef_bound on the masters (widened x10 while active at the end, up to
    #: 1e6); None disables it.  Lower bounds are only taken from masters whose box is inactive.
    coef_bound: float | None = 100.0
    cuts: Union[str, int] = "per_sample"
    near_margin: float = 0.0
    #: start with phase 1 (:mod:`.phase_one`): a smoothed first-order search with the oracle whose
    #: near-active rows seed the first exact master
    phase_one: bool = True
    verbose: bool = False

    def validate(self) -> None:
        for name in ("gap_tol", "violation_tol"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ParameterError(f"cutting-plane option {name} must be > 0, got {v!r}")
        if self.coef_bound is not None and not (np.isfinite(self.coef_bound) and self.coef_bound > 0):
            raise ParameterError(f"cutting-plane option coef_bound must be None or > 0, got {self.coef_bound!r}")
        if not (isinstance(self.max_rounds, (int, np.integer)) and self.max_rounds > 0):
            raise ParameterError(f"cutting-plane option max_rounds must be a positive int, got {self.max_rounds!r}")
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
    master_status: str
    master_iterations: int
    master_time: float
    oracle_time: float

    @property
    def relative_gap(self) -> float:
        return (self.upper_bound - self.lower_bound) / max(1.0, abs(self.upper_bound))


@dataclass
class CuttingPlaneOutcome:
    program: ConicProgram                 # final master
    solution: Any                         # its SolverSolution
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


def _read(program: ConicProgram, x: np.ndarray):
    coef = program.value("coef", x)
    intercept = float(program.value("intercept", x)[0]) if "intercept" in program.variables else 0.0
    return intercept, coef, float(program.value("lambda", x)[0]), program.value("s", x)


def solve_cutting_plane(inst: DROInstance, oracle, backend, options: CuttingPlaneOptions,
                        solver_options: Optional[Mapping[str, Any]] = None,
                        log: Optional[Callable[[str], None]] = None) -> CuttingPlaneOutcome:
    """Run the loop; raises :class:`SolverError` if the first master cannot be solved."""
    from ...evaluation.worst_case import lambda_floor
    options.validate()
    if log is None:
        log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if options.verbose else (lambda msg: None)
    work = enumerate_configurations(inst, nominal_only=True)  # z = z_n, label kept
    seen = set(row_keys(work))
    lower, upper = -np.inf, np.inf
    best = None
    bound = options.coef_bound
    phase_one_time = 0.0
    if options.phase_one:
        first = phase_one(inst, oracle, log=log if options.verbose else None)
        upper = first.upper_bound
        phase_one_time = first.seconds
        best = (first.intercept, first.coef, first.lam, first.s)
        work = _sample_major(unique_rows(concat_rows([work, first.bundle])))
        seen = set(row_keys(work))
        size = max(abs(first.intercept), float(np.max(np.abs(first.coef), initial=0.0)))
        if bound is not None and size >= bound / 10:
            bound = 10.0 ** np.ceil(np.log10(size * 10))
        log(f"phase 1: upper bound {upper:.9f} after {first.rounds} rounds, {first.oracle_calls} oracle "
            f"calls, {first.seconds:.2f} s; {work.size} rows seed the master")
    history: List[RoundRecord] = []
    last_program = last_solution = None
    max_violation = np.inf
    converged = False
    pruned = False
    log(f"{'round':>5} {'lower':>14} {'upper':>14} {'rel.gap':>9} {'max viol':>9} {'rows':>8} {'added':>7} master")
    for r in range(options.max_rounds):
        t0 = time.perf_counter()
        program = build_dual_program(inst, work, coef_bound=bound)
        sol = solve_with_retries(backend, program, solver_options)
        t1 = time.perf_counter()
        if not sol.has_solution:
            if last_solution is None:
                raise SolverError(
                    f"the first cutting-plane master (nominal rows only) could not be solved: "
                    f"{sol.status} ({sol.raw_status}); the data may be separable on features the metric "
                    f"does not protect", status=sol.status, raw_status=sol.raw_status,
                    solver=sol.solver, solution=sol)
            log(f"{r:>5} master failed with {sol.raw_status}; stopping")
            break
        intercept, coef, lam, s = _read(program, sol.x)
        box_active = bound is not None and max(abs(intercept), float(np.max(np.abs(coef), initial=0.0))) \
            >= bound * (1 - 1e-6)
        if sol.status == "optimal" and not box_active:
            lower = max(lower, float(sol.dual_objective))
        lam_min = lambda_floor(inst, coef)
        sep = oracle.separate(intercept, coef, lam, s, near_margin=options.near_margin)
        if lam >= lam_min:
            # the separation already holds max_k (l_k - lam c_k) - s_n per sample: no second oracle call
            ub = float(lam * inst.radius + np.mean(sep.violation + s))
        else:  # the master's lambda sits below the dual-norm floor by the solver's tolerance
            ub = oracle.upper_bound(intercept, coef, lam, inst.radius, lam_min)
        if ub < upper:
            upper = ub
            best = (intercept, coef, max(lam, lam_min), s)
        t2 = time.perf_counter()
        max_violation = float(max(np.max(sep.violation), 0.0))
        last_program, last_solution = program, sol
        gap_ok = (upper - lower) <= options.gap_tol * max(1.0, abs(upper))
        new = _select(sep, options)
        fresh = [i for i, key in enumerate(row_keys(new)) if key not in seen]
        new = take_rows(new, np.asarray(fresh, dtype=int))
        history.append(RoundRecord(r, lower, upper, max_violation, work.size, new.size, sol.raw_status,
                                   sol.iterations, t1 - t0, t2 - t1))
        log(f"{r:>5} {lower:>14.9f} {upper:>14.9f} {history[-1].relative_gap:>9.2e} "
            f"{max_violation:>9.2e} {work.size:>8} {new.size:>7} {sol.raw_status} ({sol.iterations} it)")
        if box_active and new.size == 0:
            if bound >= 1e6:
                log(f"{r:>5} coefficient box {bound:g} still active; stopping")
                break
            bound *= 10.0  # the box binds: widen it and re-solve the same working set
            log(f"{r:>5} coefficient box active: widened to {bound:g}")
            continue
        if gap_ok and sol.status == "optimal" and max_violation <= options.violation_tol and not box_active:
            converged = True
            break
        if new.size == 0 and sol.status != "optimal" and not pruned and best is not None:
            # nothing to add but the master is inaccurate (degenerate optima with many ties): restart
            # from the smallest working set, the nominal rows and each sample's maximizer at the best point
            pruned = True
            at_best = oracle.separate(best[0], best[1], best[2], np.zeros(inst.n_samples)).rows
            work = _sample_major(unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True),
                                                      at_best])))
            seen = set(row_keys(work))
            log(f"{r:>5} master {sol.raw_status}: slack cuts deleted, {work.size} rows kept")
            continue
        if new.size == 0:
            # nothing left to add: the master is exact on every violated row it can be given
            converged = gap_ok and sol.status == "optimal"
            break
        seen.update(row_keys(new))
        work = _sample_major(concat_rows([work, new]))
    intercept, coef, lam, s = (best if best is not None else _read(last_program, last_solution.x))
    return CuttingPlaneOutcome(program=last_program, solution=last_solution, intercept=intercept,
                               coef=coef, lam=lam, s=s, lower_bound=lower, upper_bound=upper,
                               max_violation=max_violation, converged=converged, history=history,
                               working_rows=work, phase_one_time=phase_one_time)


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
