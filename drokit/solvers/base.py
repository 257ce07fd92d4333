"""Common interface of the conic back-ends.

Each back-end lives in its own module and has the same three steps as cvxpy's conic interfaces:
``apply`` (our :class:`~drokit.conic.ConicProgram` -> the solver's data), ``solve_via_data`` (call the
solver) and ``invert`` (the solver's answer -> a :class:`SolverSolution`).  Each maps its statuses
onto the small common set below through a ``STATUS_MAP``; an inaccurate optimum is kept apart from
an optimal one and a stall (e.g. Clarabel's ``InsufficientProgress``) is a ``solver_error``, never a
solution.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Collection, Dict, Mapping, Optional

import numpy as np

from ..conic.program import ConicProgram
from ..exceptions import ParameterError, SolverNotAvailableError

OPTIMAL = "optimal"
OPTIMAL_INACCURATE = "optimal_inaccurate"
INFEASIBLE = "infeasible"
INFEASIBLE_INACCURATE = "infeasible_inaccurate"
UNBOUNDED = "unbounded"
UNBOUNDED_INACCURATE = "unbounded_inaccurate"
MAX_ITERATIONS = "max_iterations"
TIME_LIMIT = "time_limit"
SOLVER_ERROR = "solver_error"

STATUSES = (OPTIMAL, OPTIMAL_INACCURATE, INFEASIBLE, INFEASIBLE_INACCURATE, UNBOUNDED,
            UNBOUNDED_INACCURATE, MAX_ITERATIONS, TIME_LIMIT, SOLVER_ERROR)


@dataclass
class SolverSolution:
    """What a back-end returns, in drokit's terms.

    ``x`` primal solution, ``y`` dual multipliers of ``b - A x in K`` (so that ``A^T y + c = 0`` and
    ``y in K*`` at optimality), ``primal_objective = c^T x + c0``, ``dual_objective = -b^T y + c0``.
    """

    status: str
    raw_status: str
    solver: str
    x: Optional[np.ndarray] = None
    y: Optional[np.ndarray] = None
    primal_objective: float = float("nan")
    dual_objective: float = float("nan")
    iterations: int = 0
    setup_time: float = 0.0
    solve_time: float = 0.0
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def is_optimal(self) -> bool:
        return self.status == OPTIMAL

    @property
    def has_solution(self) -> bool:
        return self.status in (OPTIMAL, OPTIMAL_INACCURATE) and self.x is not None

    @property
    def duality_gap(self) -> float:
        return float(abs(self.primal_objective - self.dual_objective))


class SolverBackend:
    """Base class: subclasses set ``name``, ``cones``, ``STATUS_MAP``, ``DEFAULTS`` and the three steps."""

    name: str = ""
    cones: frozenset = frozenset()
    STATUS_MAP: Mapping[str, str] = {}
    DEFAULTS: Mapping[str, Any] = {}
    #: settings tried in turn, by :func:`solve_with_retries`, when a solve does not end optimal
    RETRY_SETTINGS: tuple = ()

    # ------------------------------------------------------------- discovery
    def unavailable_reason(self) -> Optional[str]:
        """``None`` when usable, otherwise a sentence saying why not (not installed, no licence)."""
        return None

    def available(self) -> bool:
        return self.unavailable_reason() is None

    # --------------------------------------------------------------- options
    def settings(self, options: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """Defaults overridden by ``options``; an unknown option name fails with that name."""
        merged = dict(self.DEFAULTS)
        for key, value in (options or {}).items():
            if key not in self.known_options():
                raise ParameterError(
                    f"unknown option {key!r} for solver {self.name!r}; known options: "
                    f"{sorted(self.known_options())}")
            merged[key] = value
        return merged

    def known_options(self) -> set:
        return set(self.DEFAULTS)

    def time_limit_options(self, seconds: float) -> Dict[str, Any]:
        """The settings that stop this solver after ``seconds`` of wall time (``{}`` when it has none):
        :meth:`drokit.run_control.RunControl.solver_options` gives a solve the time left of a fit's
        ``time_limit``."""
        return {}

    # ------------------------------------------------------------ the 3 steps
    def apply(self, program: ConicProgram) -> Any:
        raise NotImplementedError

    def solve_via_data(self, data: Any, settings: Dict[str, Any], verbose: bool) -> Any:
        raise NotImplementedError

    def invert(self, raw: Any, program: ConicProgram, data: Any) -> SolverSolution:
        raise NotImplementedError

    def solve(self, program: ConicProgram, options: Optional[Mapping[str, Any]] = None,
              verbose: bool = False) -> SolverSolution:
        reason = self.unavailable_reason()
        if reason is not None:
            raise SolverNotAvailableError(reason, solver=self.name, status=SOLVER_ERROR)
        unsupported = {b.kind for b in program.cones} - set(self.cones)
        if unsupported:
            raise ParameterError(
                f"solver {self.name!r} does not support the cone(s) {sorted(unsupported)} that this "
                f"program needs; use solver='clarabel'")
        settings = self.settings(options)
        t0 = time.perf_counter()
        data = self.apply(program)
        t1 = time.perf_counter()
        raw = self.solve_via_data(data, settings, verbose)
        t2 = time.perf_counter()
        solution = self.invert(raw, program, data)
        solution.setup_time = t1 - t0 + solution.setup_time
        if not solution.solve_time:
            solution.solve_time = t2 - t1
        return solution

    def accuracy_options(self, relative: float) -> Dict[str, Any]:
        """Settings that make the back-end stop at relative accuracy ``relative`` (gap and feasibility);
        ``{}`` keeps its defaults.  The cutting plane asks for a tenth of its gap tolerance: a master
        solved to 1e-8 is over-solved for a certified gap of 1e-6, and the last digits are where
        Clarabel's masters on tie-heavy data end AlmostSolved (nursery, 1-decimal weights)."""
        return {}

    def map_status(self, raw_status: str) -> str:
        return self.STATUS_MAP.get(raw_status, SOLVER_ERROR)

    @staticmethod
    def objectives(status: str, primal: float, dual: float, c0: float):
        """(primal, dual) objectives including ``c0``; +inf for an infeasible, -inf for an unbounded
        program (a minimization), whatever the solver printed."""
        if status in (INFEASIBLE, INFEASIBLE_INACCURATE):
            return np.inf, np.inf
        if status in (UNBOUNDED, UNBOUNDED_INACCURATE):
            return -np.inf, -np.inf
        return float(primal) + c0, float(dual) + c0


def solve_with_retries(backend: SolverBackend, program: ConicProgram,
                       options: Optional[Mapping[str, Any]] = None, verbose: bool = False,
                       retry_inaccurate: bool = True, verify: bool = True,
                       final: Collection[str] = (OPTIMAL,), control=None, stage: str = "program") -> SolverSolution:
    """Solve; if the status is not optimal, re-solve with each of ``backend.RETRY_SETTINGS`` (the user's
    ``options`` always take precedence) and return the first optimal solution, else the best attempt
    (an inaccurate optimum before a failure).  ``info["attempts"]`` lists every attempt's raw status.

    ``verify`` (default): an inaccurate optimum that passes the solver-independent check of
    :func:`~drokit.solvers.verification.is_verified_optimal` (relative gap and dual residual <= 1e-6,
    primal cone violation <= 1e-7) is accepted as ``"optimal"`` at once (``raw_status`` keeps the solver's
    word, ``info["certificate"]`` the check), instead of re-solving with other settings: degenerate programs
    (an optimum at beta = 0) end ``AlmostSolved`` under every setting although the answer is exact to 1e-8.
    ``retry_inaccurate=False`` accepts an unverified inaccurate optimum at once (only failures are retried).
    ``final``: the statuses that end the loop (the intersection programs add certified infeasible and
    unbounded answers, which no retry changes).

    ``control`` (a :class:`~drokit.run_control.RunControl`): each attempt gets the time left of the fit's
    ``time_limit`` as the solver's own limit, is recorded (``stage``, settings, status, seconds), and no retry
    starts once the fit must stop."""
    from .verification import is_verified_optimal

    attempts = []
    best = None
    rank = {OPTIMAL: 0, OPTIMAL_INACCURATE: 1}
    for extra in ({},) + tuple(backend.RETRY_SETTINGS):
        merged = {**extra, **dict(options or {})}
        if extra and all(k in (options or {}) for k in extra):
            continue  # the user fixed these settings; retrying would repeat the same solve
        if control is not None:
            if extra and control.should_stop():
                break
            merged = control.solver_options(backend, merged)
        t0 = time.perf_counter()
        try:
            sol = backend.solve(program, merged, verbose=verbose)
        except Exception as exc:  # a retry setting this build does not support: skip it
            if control is not None:
                control.record(stage, backend.name, merged, SOLVER_ERROR, f"{type(exc).__name__}: {exc}",
                               time.perf_counter() - t0)
            if not extra:
                raise
            attempts.append((dict(extra), f"{type(exc).__name__}: {exc}"))
            continue
        if control is not None:
            control.record(stage, backend.name, merged, sol.status, sol.raw_status, time.perf_counter() - t0,
                           sol.iterations)
        attempts.append((dict(extra), sol.raw_status))
        if verify and sol.status == OPTIMAL_INACCURATE and is_verified_optimal(program, sol):
            sol.status = OPTIMAL
        if best is None or rank.get(sol.status, 9) < rank.get(best.status, 9) or sol.status in final:
            best = sol
        if sol.status in final or (sol.status == OPTIMAL_INACCURATE and not retry_inaccurate) \
                or sol.status == TIME_LIMIT:
            break
    best.info["attempts"] = attempts
    return best
