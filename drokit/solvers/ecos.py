"""ECOS back-end: an interior-point method for LP, SOCP and exponential cones (no power cones).

ECOS solves:

```text
minimize c^T x   s.t.   A_eq x = b_eq,   h - G x in K,   K = R_+^l x Q^{q_1} x ... x K_exp^e
```

with the cones of ``K`` in the fixed order nonnegative, second-order, exponential.  drokit's ``zero``
rows become ``A_eq x = b_eq``; the other rows become ``G = A`` and ``h = b`` regrouped in that order.

ECOS's exponential cone is ``cl{(x, y, z) : z exp(x/z) <= y, z > 0}`` -- its second and third
coordinates are drokit's third and second -- so each of our cones ``(x, y, z)`` is passed to ECOS as
``(x, z, y)`` (checked numerically in ``tests/test_solvers_backends.py``: ``min z s.t. x = 1,
y = 2, (x, y, z) in K_exp`` gives ``2 e^(1/2)`` with this order; unpermuted, ECOS calls it infeasible).

ECOS's duals satisfy ``c + A_eq^T y + G^T z = 0`` with ``z in K*``, the same convention as drokit's
``A^T y + c = 0``; :meth:`ECOSBackend.invert` puts ``y`` and ``z`` back into drokit's row order.
"""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import scipy.sparse as sp

from ..conic.program import ConicProgram
from . import base
from .base import SolverBackend, SolverSolution

# order of ECOS's cone rows in G, h
_ECOS_CONE_ORDER = ("nonneg", "soc", "exp")


def _rows_of(program: ConicProgram, kind: str) -> List[np.ndarray]:
    return [np.arange(lo, hi) for block, lo, hi in program.row_ranges() if block.kind == kind]


class ECOSBackend(SolverBackend):
    name = "ecos"
    cones = frozenset({"zero", "nonneg", "soc", "exp"})
    # keyed by ECOS's integer exit flag (ecos.h)
    STATUS_MAP: Dict[int, str] = {
        0: base.OPTIMAL,                    # ECOS_OPTIMAL
        10: base.OPTIMAL_INACCURATE,        # ECOS_OPTIMAL + ECOS_INACC_OFFSET
        1: base.INFEASIBLE,                 # ECOS_PINF
        11: base.INFEASIBLE_INACCURATE,
        2: base.UNBOUNDED,                  # ECOS_DINF
        12: base.UNBOUNDED_INACCURATE,
        -1: base.MAX_ITERATIONS,            # ECOS_MAXIT
        -2: base.SOLVER_ERROR,              # ECOS_NUMERICS
        -3: base.SOLVER_ERROR,              # ECOS_OUTCONE
        -4: base.SOLVER_ERROR,              # ECOS_SIGINT
        -7: base.SOLVER_ERROR,              # ECOS_FATAL
    }
    # ECOS's own tolerances and iteration limit, made explicit
    DEFAULTS: Dict[str, Any] = {
        "feastol": 1e-8,
        "abstol": 1e-8,
        "reltol": 1e-8,
        "feastol_inacc": 1e-4,
        "abstol_inacc": 5e-5,
        "reltol_inacc": 5e-5,
        "max_iters": 100,
        "nitref": 9,
        "verbose": False,
    }

    def unavailable_reason(self):
        try:
            import ecos  # noqa: F401
        except ImportError:
            return 'ecos is not installed: pip install "drokit[ecos]" (or pip install ecos)'
        return None

    def map_status(self, raw_status) -> str:
        return self.STATUS_MAP.get(raw_status, base.SOLVER_ERROR)

    # ------------------------------------------------------------ the 3 steps
    def apply(self, program: ConicProgram):
        A = sp.csr_matrix(program.A)
        b = np.asarray(program.b, dtype=float)
        eq_rows = np.concatenate(_rows_of(program, "zero") or [np.zeros(0, dtype=np.int64)])
        cone_rows: List[np.ndarray] = []
        q: List[int] = []
        n_exp = 0
        for kind in _ECOS_CONE_ORDER:
            for rows in _rows_of(program, kind):
                if kind == "exp":
                    rows = rows.reshape(-1, 3)[:, [0, 2, 1]].ravel()  # ours (x,y,z) -> ECOS (x,z,y)
                    n_exp += rows.size // 3
                cone_rows.append(rows)
        for block in program.cones:
            if block.kind == "soc":
                q.extend([block.dim] * block.count)
        cone_rows_arr = np.concatenate(cone_rows) if cone_rows else np.zeros(0, dtype=np.int64)
        n_nonneg = sum(block.dim for block in program.cones if block.kind == "nonneg")
        dims = {"l": int(n_nonneg), "q": [int(d) for d in q], "e": int(n_exp)}
        data: Dict[str, Any] = {"c": np.asarray(program.c, dtype=float), "dims": dims,
                                "eq_rows": eq_rows, "cone_rows": cone_rows_arr,
                                "G": None, "h": None, "A": None, "b": None}
        if cone_rows_arr.size:
            data["G"] = sp.csc_matrix(A[cone_rows_arr])
            data["h"] = b[cone_rows_arr]
        if eq_rows.size:
            data["A"] = sp.csc_matrix(A[eq_rows])
            data["b"] = b[eq_rows]
        return data

    def solve_via_data(self, data, settings: Dict[str, Any], verbose: bool):
        import ecos
        kwargs = dict(settings)
        kwargs["verbose"] = bool(verbose or kwargs.get("verbose", False))
        return ecos.solve(data["c"], data["G"], data["h"], data["dims"], data["A"], data["b"],
                          **kwargs)

    def invert(self, raw, program: ConicProgram, data) -> SolverSolution:
        info = raw["info"]
        flag = int(info["exitFlag"])
        status = self.map_status(flag)
        x = np.asarray(raw["x"], dtype=float)
        y = np.zeros(program.n_constraints)
        if data["eq_rows"].size:
            y[data["eq_rows"]] = np.asarray(raw["y"], dtype=float)
        if data["cone_rows"].size:
            y[data["cone_rows"]] = np.asarray(raw["z"], dtype=float)
        primal, dual = self.objectives(status, info["pcost"], info["dcost"], program.c0)
        timing = info.get("timing", {})
        return SolverSolution(
            status=status, raw_status=f"{flag}: {info.get('infostring', '')}", solver=self.name,
            x=x, y=y, primal_objective=primal, dual_objective=dual, iterations=int(info["iter"]),
            setup_time=float(timing.get("tsetup", 0.0)), solve_time=float(timing.get("tsolve", 0.0)),
            info={"pres": float(info["pres"]), "dres": float(info["dres"]),
                  "gap": float(info["gap"]), "exit_flag": flag})
