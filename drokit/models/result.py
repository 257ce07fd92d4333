"""The result of a solve: solution, certificate and diagnostics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np


@dataclass
class FitResult:
    """What a solve returns (also stored as ``estimator.result_``).

    Certificate
    -----------
    ``lower_bound``
        the solver's dual objective: every feasible model has worst-case risk >= this value
        (up to the solver's dual feasibility tolerance, reported in ``dual_residual``);
    ``upper_bound``
        the worst-case risk of the returned model evaluated exactly and independently of the conic
        solver (an LP solved by HiGHS over the enumerated configurations,
        :func:`drokit.evaluation.worst_case_value`): the optimal value is at most this;
    ``gap``
        ``upper_bound - lower_bound`` (``relative_gap`` divides by ``max(1, |upper_bound|)``).

    Size
    ----
    ``n_configuration_rows``
        the configuration rows actually in the solved program: all of them for ``monolithic``, the
        nominal rows for ``erm`` / ``closed_form``, the final master's working set for
        ``cutting_plane``, the rows standing for them in the ``box`` LP and the loss terms of ``graph``;
    ``n_enumeration_rows``
        the rows of the full enumeration, ``N |Z|`` (``x 2`` when labels may flip), which the exact
        methods represent whether or not they build them.
    """

    objective: float
    status: str
    method: str
    method_reason: str
    solver: str
    raw_status: str
    lower_bound: float
    upper_bound: float
    intercept: float
    coef: np.ndarray
    lambda_: float
    s: np.ndarray
    compile_time: float
    solve_time: float
    evaluation_time: float
    iterations: int
    n_variables: int
    n_constraints: int
    cones: Dict[str, int]
    n_configuration_rows: int
    n_enumeration_rows: int
    primal_residual: float = float("nan")
    dual_residual: float = float("nan")
    primal: Dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    dual: Optional[np.ndarray] = field(default=None, repr=False)
    warnings: List[str] = field(default_factory=list)
    #: cutting plane only: the largest constraint violation at the final master (<= tolerance when
    #: converged) and one record per round (bounds, rows, times)
    max_violation: float = 0.0
    history: List[object] = field(default_factory=list, repr=False)
    #: ``"exact"`` (lower <= optimum <= upper) or ``"upper"``: the objective is a conservative upper bound
    #: (an Intersection's static program); lower / upper then bracket the fitted model's worst-case risk
    bound: str = "exact"
    #: method-specific extras (an Intersection: lambda_aux, s_aux, attack, wasserstein_distance, radius_aux)
    auxiliary: Dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def gap(self) -> float:
        return float(self.upper_bound - self.lower_bound)

    @property
    def relative_gap(self) -> float:
        return float(self.gap / max(1.0, abs(self.upper_bound)))

    @property
    def total_time(self) -> float:
        return self.compile_time + self.solve_time + self.evaluation_time

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    def certificate(self) -> Dict[str, float]:
        """The numbers that certify the result."""
        return {"status": self.status, "objective": self.objective, "lower_bound": self.lower_bound,
                "upper_bound": self.upper_bound, "gap": self.gap, "relative_gap": self.relative_gap,
                "primal_residual": self.primal_residual, "dual_residual": self.dual_residual,
                "max_violation": self.max_violation}

    def summary(self) -> str:
        cones = ", ".join(f"{v} {k}" for k, v in self.cones.items())
        lines = [
            f"method      : {self.method} -- {self.method_reason}",
            f"solver      : {self.solver} ({self.raw_status}, {self.iterations} iterations)",
            f"status      : {self.status}",
            f"objective   : {self.objective:.10g}",
            (f"certificate : lower {self.lower_bound:.10g} <= optimum <= upper {self.upper_bound:.10g}"
             f"  (gap {self.gap:.2e}, relative {self.relative_gap:.2e})" if self.bound == "exact" else
             f"bound       : UPPER bound {self.upper_bound:.10g} (static relaxation, not exact); the fitted "
             f"model's worst-case risk is in [{self.lower_bound:.10g}, {self.upper_bound:.10g}]"),
            (f"program     : {self.n_variables} variables, {self.n_constraints} rows ({cones}), "
             if self.solver != "barrier" else
             f"problem     : {self.n_variables} variables, {self.n_constraints} barrier terms ({cones}; no "
             f"conic program built), ")
            + f"{self.n_configuration_rows:,} configuration rows in the program (full enumeration "
            f"{self.n_enumeration_rows:,})",
            f"times (s)   : compile {self.compile_time:.3f}, solve {self.solve_time:.3f}, "
            f"certificate {self.evaluation_time:.3f}",
        ]
        if self.history:
            lines.append(f"rounds      : {len(self.history)} cutting-plane rounds, final max violation "
                         f"{self.max_violation:.2e}")
        lines += [f"warning     : {w}" for w in self.warnings]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
