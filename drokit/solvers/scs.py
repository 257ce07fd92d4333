"""SCS back-end: a first-order (ADMM) splitting method for LP, SOCP, exponential and power cones.

SCS solves ``min c^T x  s.t.  A x + s = b, s in K`` -- drokit's form -- with the same exponential
cone ``y exp(x/y) <= z`` and power cone ``x^a y^(1-a) >= |z|``, but it wants the rows grouped by
cone kind in the fixed order zero (``z``), nonnegative (``l``), second-order (``q``), exponential
(``ep``), power (``p``).  :meth:`SCSBackend.apply` permutes the rows of ``A`` and ``b`` into that
order and :meth:`SCSBackend.invert` puts the duals back into drokit's row order.

SCS converges slowly to high accuracy; the defaults ask for ``1e-7`` and allow many iterations, and
a run that stops early is reported as ``optimal_inaccurate``, never as ``optimal``.
"""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import scipy.sparse as sp

from ..conic.program import ConicProgram
from . import base
from .base import SolverBackend, SolverSolution

# SCS wants its cones in this order.
_SCS_ORDER = ("zero", "nonneg", "soc", "exp", "pow")


def grouped_rows(program: ConicProgram, order) -> np.ndarray:
    """Row indices of ``program`` grouped by cone kind in ``order`` (blocks keep their program order).

    The result ``perm`` gives the solver's rows as ``A[perm]``; a solver dual ``y_s`` goes back with
    ``y[perm] = y_s``.
    """
    pieces = [np.arange(lo, hi) for kind in order
              for block, lo, hi in program.row_ranges() if block.kind == kind]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


class SCSBackend(SolverBackend):
    name = "scs"
    cones = frozenset(_SCS_ORDER)
    # keyed by SCS's integer ``status_val`` (scs/include/glbopts.h); ``raw_status`` keeps SCS's text,
    # e.g. "solved (inaccurate - reached max_iters)".
    STATUS_MAP: Dict[int, str] = {
        1: base.OPTIMAL,                    # SCS_SOLVED
        2: base.OPTIMAL_INACCURATE,         # SCS_SOLVED_INACCURATE (hit max_iters / time limit)
        -1: base.UNBOUNDED,                 # SCS_UNBOUNDED
        -6: base.UNBOUNDED_INACCURATE,      # SCS_UNBOUNDED_INACCURATE
        -2: base.INFEASIBLE,                # SCS_INFEASIBLE
        -7: base.INFEASIBLE_INACCURATE,     # SCS_INFEASIBLE_INACCURATE
        -3: base.SOLVER_ERROR,              # SCS_INDETERMINATE
        -4: base.SOLVER_ERROR,              # SCS_FAILED
        -5: base.SOLVER_ERROR,              # SCS_SIGINT
        0: base.MAX_ITERATIONS,             # SCS_UNFINISHED (not returned by SCS 3)
    }
    DEFAULTS: Dict[str, Any] = {
        "eps_abs": 1e-7,
        "eps_rel": 1e-7,
        "eps_infeas": 1e-9,
        "max_iters": 100_000,
        "verbose": False,
    }
    # the rest of SCS 3's settings, accepted and passed through unchanged
    OTHER_OPTIONS = frozenset({
        "normalize", "scale", "adaptive_scale", "rho_x", "alpha", "time_limit_secs",
        "acceleration_lookback", "acceleration_interval", "warm_start", "write_data_filename",
        "log_csv_filename", "linear_solver",
    })

    def unavailable_reason(self):
        try:
            import scs  # noqa: F401
        except ImportError:
            return 'scs is not installed: pip install "drokit[scs]" (or pip install scs)'
        return None

    def time_limit_options(self, seconds: float) -> Dict[str, Any]:
        return {"time_limit_secs": float(seconds)}

    def known_options(self) -> set:
        return set(self.DEFAULTS) | set(self.OTHER_OPTIONS)

    def map_status(self, raw_status) -> str:
        return self.STATUS_MAP.get(raw_status, base.SOLVER_ERROR)

    # ------------------------------------------------------------ the 3 steps
    def apply(self, program: ConicProgram):
        perm = grouped_rows(program, _SCS_ORDER)
        A = sp.csr_matrix(program.A)[perm].tocsc()
        A.sort_indices()
        b = np.asarray(program.b, dtype=float)[perm]
        cone: Dict[str, Any] = {}
        q: List[int] = []
        p: List[float] = []
        for block in program.cones:
            if block.kind == "zero":
                cone["z"] = cone.get("z", 0) + block.dim
            elif block.kind == "nonneg":
                cone["l"] = cone.get("l", 0) + block.dim
            elif block.kind == "soc":
                q.extend([block.dim] * block.count)
            elif block.kind == "exp":
                cone["ep"] = cone.get("ep", 0) + block.count
            elif block.kind == "pow":
                p.extend([float(block.param)] * block.count)
        if q:
            cone["q"] = q
        if p:
            cone["p"] = p
        data = {"A": A, "b": b, "c": np.asarray(program.c, dtype=float)}
        return {"data": data, "cone": cone, "perm": perm}

    def solve_via_data(self, data, settings: Dict[str, Any], verbose: bool):
        import scs
        kwargs = dict(settings)
        kwargs["verbose"] = bool(verbose or kwargs.get("verbose", False))
        cone = data["cone"] or {"l": 0}  # SCS rejects an empty cone dict (program without rows)
        return scs.solve(data["data"], cone, **kwargs)

    def invert(self, raw, program: ConicProgram, data) -> SolverSolution:
        info = raw["info"]
        code = int(info["status_val"])
        status = self.map_status(code)
        x = np.asarray(raw["x"], dtype=float)
        y = np.empty(program.n_constraints)
        y[data["perm"]] = np.asarray(raw["y"], dtype=float)
        primal, dual = self.objectives(status, info["pobj"], info["dobj"], program.c0)
        return SolverSolution(
            status=status, raw_status=str(info["status"]), solver=self.name, x=x, y=y,
            primal_objective=primal, dual_objective=dual, iterations=int(info["iter"]),
            setup_time=float(info.get("setup_time", 0.0)) / 1000.0,   # SCS reports milliseconds
            solve_time=float(info.get("solve_time", 0.0)) / 1000.0,
            info={"res_pri": float(info["res_pri"]), "res_dual": float(info["res_dual"]),
                  "gap": float(info["gap"]), "status_val": code})
