"""Clarabel back-end (the default): an interior-point method for LP, SOCP, exponential and power cones.

Clarabel's standard form is drokit's own (``min c^T x  s.t.  b - A x = s in K``, exponential cone
``y exp(x/y) <= z``), so :meth:`ClarabelBackend.apply` only maps cone blocks to Clarabel cone objects.
"""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import scipy.sparse as sp

from ..conic.program import ConicProgram
from . import base
from .base import SolverBackend, SolverSolution


class ClarabelBackend(SolverBackend):
    name = "clarabel"
    cones = frozenset({"zero", "nonneg", "soc", "exp", "pow"})
    STATUS_MAP = {
        "Solved": base.OPTIMAL,
        "AlmostSolved": base.OPTIMAL_INACCURATE,
        "PrimalInfeasible": base.INFEASIBLE,
        "AlmostPrimalInfeasible": base.INFEASIBLE_INACCURATE,
        "DualInfeasible": base.UNBOUNDED,
        "AlmostDualInfeasible": base.UNBOUNDED_INACCURATE,
        "MaxIterations": base.MAX_ITERATIONS,
        "MaxTime": base.TIME_LIMIT,
        "NumericalError": base.SOLVER_ERROR,
        "InsufficientProgress": base.SOLVER_ERROR,
        "Unsolved": base.SOLVER_ERROR,
        "CallbackTerminated": base.SOLVER_ERROR,
    }
    # Clarabel's own defaults, listed so that unknown option names are caught; any Clarabel
    # DefaultSettings attribute may be passed.
    DEFAULTS: Dict[str, Any] = {}
    # Tried in order, only after a non-optimal status.  Measured on exponential-cone masters that stall
    # with the defaults (AlmostSolved / InsufficientProgress), German credit and degenerate optima
    # (beta = 0): each of these finishes some of them (benchmarks/RESULTS.md).
    # min_switch_step_length (Clarabel: 0.1): below this step length Clarabel leaves the primal-dual
    # scaling of the exponential cones for the dual scaling.  On the multi-class budget-cut masters of
    # calibrated audiology the switch came at iteration 2 and every later step collapsed
    # (InsufficientProgress with every other setting below; SCS solves the same master); with 1e-3 (any
    # value in [1e-5, 1e-2] measured the same) it solves in 75 iterations to SCS's objective
    # (tests/test_solvers_backends.py).  As the default it also turned some AlmostSolved masters into
    # Solved ones but broke the beta = 0 optimum that max_step_fraction 0.9 rescues, so it is a retry,
    # after max_step_fraction 0.9: on nursery's 1-decimal masters (450,000 rows) it ended AlmostSolved
    # (20 s wasted) where 0.9 solves; on the audiology master 0.9 fails within 0.1 s.
    RETRY_SETTINGS = ({"max_step_fraction": 0.9}, {"min_switch_step_length": 1e-3},
                      {"static_regularization_constant": 1e-7},
                      {"direct_solve_method": "faer"}, {"equilibrate_enable": False},
                      {"static_regularization_enable": False},
                      {"max_step_fraction": 0.8, "equilibrate_enable": False})

    def unavailable_reason(self):
        try:
            import clarabel  # noqa: F401
        except ImportError:  # pragma: no cover - clarabel is a hard dependency
            return "clarabel is not installed: pip install clarabel"
        return None

    def time_limit_options(self, seconds: float) -> Dict[str, Any]:
        return {"time_limit": float(seconds)}

    def known_options(self) -> set:
        import clarabel
        return {a for a in dir(clarabel.DefaultSettings()) if not a.startswith("_")}

    def apply(self, program: ConicProgram):
        import clarabel
        cones: List[Any] = []
        for block in program.cones:
            if block.kind == "zero":
                cones.append(clarabel.ZeroConeT(block.dim))
            elif block.kind == "nonneg":
                cones.append(clarabel.NonnegativeConeT(block.dim))
            elif block.kind == "soc":
                cones.extend(clarabel.SecondOrderConeT(block.dim) for _ in range(block.count))
            elif block.kind == "exp":
                cones.extend(clarabel.ExponentialConeT() for _ in range(block.count))
            elif block.kind == "pow":
                cones.extend(clarabel.PowerConeT(block.param) for _ in range(block.count))
        n = program.n_variables
        P = sp.csc_matrix((n, n))
        return P, program.c.astype(float), sp.csc_matrix(program.A), program.b.astype(float), cones

    def accuracy_options(self, relative: float) -> Dict[str, Any]:
        return {"tol_gap_rel": relative, "tol_gap_abs": relative, "tol_feas": relative}

    def solve_via_data(self, data, settings: Dict[str, Any], verbose: bool):
        import clarabel
        P, q, A, b, cones = data
        cfg = clarabel.DefaultSettings()
        cfg.verbose = bool(verbose)
        for key, value in settings.items():
            setattr(cfg, key, value)
        solver = clarabel.DefaultSolver(P, q, A, b, cones, cfg)
        return solver.solve()

    def invert(self, raw, program: ConicProgram, data) -> SolverSolution:
        raw_status = str(raw.status)
        status = self.map_status(raw_status)
        x = np.asarray(raw.x, dtype=float) if raw.x is not None else None
        y = np.asarray(raw.z, dtype=float) if raw.z is not None else None
        primal = float(raw.obj_val) + program.c0
        dual = float(getattr(raw, "obj_val_dual", raw.obj_val)) + program.c0
        return SolverSolution(
            status=status, raw_status=raw_status, solver=self.name, x=x, y=y,
            primal_objective=primal, dual_objective=dual, iterations=int(raw.iterations),
            solve_time=float(raw.solve_time),
            info={"r_prim": float(raw.r_prim), "r_dual": float(raw.r_dual)})
