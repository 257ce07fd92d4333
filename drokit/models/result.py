"""The result of a solve: solution, certificate and diagnostics."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional

import numpy as np

from ..gaps import relative_gap


@dataclass
class ProgramRecipe:
    """What rebuilds the conic program of a fit, kept by :class:`FitResult` instead of the program.

    The program of a monolithic fit holds every configuration row (it can be far larger than the data), so a
    fit keeps the DROInstance it was built from -- the training data encoded at fit, the resolved metric and
    the loss -- and compiles it again on demand (the compile paths are deterministic: the same program).
    Two exceptions: a loss compiled by tangents keeps the tangents of the last program solved (a copy), and a
    cutting-plane fit keeps its final master itself, small by construction (its working set of rows, its
    coefficient box and budget cuts), which no compile path rebuilds.
    """

    instance: Any                       #: the :class:`~drokit.instance.DROInstance` fitted (its fitting view)
    method: str
    max_configurations: int
    master: Any = None                  #: the final master (cutting plane only)

    @classmethod
    def of(cls, compiled) -> "ProgramRecipe":
        """The recipe of the program a :class:`~drokit.models.compiled.CompiledProblem` last solved."""
        inst = compiled.instance
        if getattr(inst.loss, "outer_approximation", False):
            inst = replace(inst, loss=_tangent_snapshot(inst.loss))
        # the final master, or the function that builds it (a fit certified by phase 1 solved no master)
        master = compiled.compiled._program if compiled.driver == "cutting_plane" else None
        return cls(inst, compiled.method, int(compiled.max_configurations), master)

    def build(self):
        """The :class:`~drokit.conic.program.ConicProgram` (see the class docstring)."""
        if callable(self.master):
            self.master = self.master()
        if self.master is not None:
            return self.master
        from ..methods import compile_instance
        inst = self.instance
        if getattr(inst.loss, "outer_approximation", False):  # compiling records the program in the loss
            inst = replace(inst, loss=_tangent_snapshot(inst.loss))
        return compile_instance(inst, self.method, self.max_configurations).program


def _tangent_snapshot(loss):
    """A copy of a tangent-approximated loss with its cuts (shared and per row) but not the expressions of
    the last program built (``_calls``, as large as that program)."""
    out = copy.copy(loss)
    out.tangents = np.array(loss.tangents, copy=True)
    out.row_points = {k: np.array(v, copy=True) for k, v in loss.row_points.items()}
    out._calls = []
    return out


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
        ``upper_bound - lower_bound`` (``relative_gap`` divides by ``max(|upper_bound|, 1e-2)``: :mod:`drokit.gaps`).

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
    #: what rebuilds the fit's conic program (:meth:`conic_program`); None for results without one
    program_recipe: Optional[ProgramRecipe] = field(default=None, repr=False, compare=False)
    #: why the method stopped before its certificate closed (``"time limit of 10 s reached"``,
    #: ``"interrupted"``); None when it ran to its end
    stop_reason: Optional[str] = None
    #: every solver call of the fit, retries and fallbacks included: ``stage`` (``"program"``, ``"master 3"``,
    #: ``"phase 1"``, ``"barrier master"``), ``solver``, ``settings``, ``status`` (a solver status, or
    #: ``"certified"`` / ``"not_certified"`` for drokit's own structured solvers), ``raw_status``, ``seconds``,
    #: ``iterations``
    #: (:class:`~drokit.run_control.RunControl`); ``solve_time`` covers all of them
    attempts: List[Dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def gap(self) -> float:
        return float(self.upper_bound - self.lower_bound)

    @property
    def relative_gap(self) -> float:
        return relative_gap(self.lower_bound, self.upper_bound)

    @property
    def total_time(self) -> float:
        return self.compile_time + self.solve_time + self.evaluation_time

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    # ------------------------------------------------------------------ export
    def conic_program(self):
        """The conic program of this fit, rebuilt on the training data bound at fit (a
        :class:`~drokit.conic.program.ConicProgram`; ``program.value("coef", x)`` reads a solution).

        What it is, by method: the program the fit's method compiles (``monolithic``: every configuration row;
        ``closed_form`` / ``erm``: the nominal rows, also when the structured barrier solver fitted the model
        without building it; ``box``, ``graph``: their LP / potential system); for ``cutting_plane`` the
        **final master** only (the working set of rows the last round solved, with its box and budget cuts):
        a relaxation whose value is the certified lower bound, not the whole program.  For a loss compiled by
        tangents (a :func:`~drokit.losses.from_sympy` loss without a recognized conic form) the program is a
        **relaxation**: the tangents under-estimate the loss, so its value is ``result.lower_bound``, below
        ``result.objective`` (the exact worst-case risk) by up to the certified gap.
        """
        if self.program_recipe is None:
            from ..exceptions import ParameterError
            raise ParameterError(f"this {self.method!r} result keeps no program to export (an Intersection's "
                                 f"static program is exported by Problem(...).compile(X, y).to_cvxpy())")
        return self.program_recipe.build()

    def to_cvxpy(self):
        """``(problem, x)``: :meth:`conic_program` as a ``cvxpy.Problem`` over one vector variable ``x``
        (:func:`drokit.conic.export.to_cvxpy`).  For a cutting-plane fit that is the final master; for a loss
        compiled by tangents, a relaxation (see :meth:`conic_program`).

        Example:

        ```python
        program = est.result_.conic_program()
        problem, x = drokit.conic.export.to_cvxpy(program)     # or est.result_.to_cvxpy()
        problem.solve()
        program.value("coef", x.value)
        ```
        """
        from ..conic.export import to_cvxpy
        return to_cvxpy(self.conic_program())

    def to_picos(self):
        """``(problem, x)``: :meth:`conic_program` as a ``picos.Problem`` (:func:`drokit.conic.export.to_picos`);
        the same caveats: the final master of a cutting-plane fit, a relaxation for a loss compiled by
        tangents."""
        from ..conic.export import to_picos
        return to_picos(self.conic_program())

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
             f"  (gap {self.gap:.2e}, relative {self.relative_gap:.2e}; lower bound: "
             f"{self.auxiliary.get('lower_bound', {}).get('source', 'method')})" if self.bound == "exact" else
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
        if self.attempts:
            failed = [a for a in self.attempts if a["status"] not in ("optimal", "certified", "not_certified")]
            lines.append(f"solver calls: {len(self.attempts)} ({sum(a['seconds'] for a in self.attempts):.3f} s)"
                         + (f", {len(failed)} not optimal: " + ", ".join(f"{a['stage']} {a['raw_status']} "
                                                                       f"({a['seconds']:.2f} s)" for a in failed[:5])
                            + (" ..." if len(failed) > 5 else "") if failed else ""))
        if self.stop_reason:
            lines.append(f"stopped     : {self.stop_reason} (the best model found is returned with its bounds)")
        lines += [f"warning     : {w}" for w in self.warnings]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
