"""A compiled problem and its solve: ``Problem(...).compile(X, y) -> CompiledProblem``, whose ``solve`` runs the
method's driver (:mod:`drokit.methods`: a conic back-end for ``"program"``, the loop of
:func:`~drokit.reformulations.cutting_plane.solve_cutting_plane` for ``"cutting_plane"``, the structured barrier
solver for the closed-form logistic model) and certifies the answer (:mod:`.certification`) into a
:class:`~drokit.models.result.FitResult`."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Mapping, Optional

import numpy as np
from threadpoolctl import ThreadpoolController

from ..reformulations.dual import CompiledProgram
from ..methods import MAX_CONFIGURATIONS, compile_instance, get_method
from ..oracles import count_configuration_rows
from ..oracles.rows import row_margins
from ..exceptions import FitInterrupted, ParameterError, SolverError
from ..losses.builtin import Logistic
from ..solvers import get_backend
from ..solvers.base import solve_with_retries
from ..run_control import RunControl
from .certification import CERTIFIED_GAP, FitCertification, mark_inaccurate, resolve_futile, unproven_bound
from .cutting_plane_fit import CuttingPlaneFit
from ..instance import DROInstance
from .result import FitResult, ProgramRecipe


ON_INACCURATE = ("raise", "warn")


@functools.lru_cache(maxsize=None)
def _blas_controller() -> ThreadpoolController:
    """A cached ``threadpoolctl.ThreadpoolController``: a fresh ``threadpool_limits`` scans the loaded
    libraries on every solve (0.2 ms in a bare process, 9 ms measured inside a busy sweep worker: a quarter
    of a small ERM fit); limiting through the cached controller costs 0.007 ms."""
    return ThreadpoolController()


def _loss_arguments(inst: DROInstance, result: FitResult) -> np.ndarray:
    """The loss arguments of the fitted model at its nominal rows (every label family) and, at radius > 0, at
    each sample's worst configuration row (the default oracle at the result's lambda): where tangents of an
    outer-approximated loss matter."""
    from ..oracles.enumeration import enumerate_configurations
    coef, intercept = np.asarray(result.coef, dtype=float), float(result.intercept)
    rows = enumerate_configurations(inst, nominal_only=True)
    parts = [row_margins(inst, rows, intercept, coef)]
    f = inst.scores(intercept, coef)
    parts += [fam.sigma * f - fam.shift for fam in inst.label_families()]
    if inst.radius > 0 and np.isfinite(result.lambda_) and inst.mutable_categorical().size:
        from ..oracles import make_oracle
        sep = make_oracle(inst, "auto").separate(intercept, coef, result.lambda_, np.zeros(inst.n_samples))
        parts.append(row_margins(inst, sep.rows, intercept, coef))
    return np.concatenate(parts)


#: plain logistic regression (radius 0) ending at or below this mean log-loss has separable data: every
#: margin is then above ~13.8, and only the solver's tolerance stopped the coefficients from growing
#: (nursery's binary task: objective 6e-8, coefficients ~49)
SEPARABLE_LOG_LOSS = 1e-6


class _BarrierNotCertified(Exception):
    """``solver="auto"``: the barrier solver did not certify its answer; the message says why, and the conic
    program is solved instead."""


class CompiledProblem(CuttingPlaneFit, FitCertification):
    """A compiled problem: the conic program, how it was chosen, and ``solve`` / exports."""

    def __init__(self, instance: DROInstance, compiled: CompiledProgram, compile_time: float,
                 evaluation_instance: Optional[DROInstance] = None):
        self.instance = instance          # what the program is built on (DROInstance.fitting_view)
        #: the problem as declared: the certificate evaluates the returned model on it
        self.evaluation_instance = instance if evaluation_instance is None else evaluation_instance
        self.compiled = compiled
        self._compile_time = compile_time

    @property
    def compile_time(self) -> float:
        """Seconds to compile, including the build of a program assembled on first use."""
        return self._compile_time + self.compiled.build_time

    @compile_time.setter
    def compile_time(self, value: float) -> None:
        self._compile_time = value

    @property
    def program(self):
        return self.compiled.program

    @property
    def method(self) -> str:
        return self.compiled.method

    @property
    def method_reason(self) -> str:
        return self.compiled.method_reason

    @property
    def driver(self) -> str:
        """How the compiled form is solved: the registered method's ``driver`` (:data:`drokit.methods.DRIVERS`):
        ``"program"`` (one conic program for a back-end) or ``"cutting_plane"`` (the loop of
        :func:`~drokit.reformulations.cutting_plane.solve_cutting_plane`)."""
        return get_method(self.method).driver

    def to_cvxpy(self):
        """The same conic program as a ``cvxpy.Problem`` (returns ``(problem, x)``); for cross-checks.  After a
        cutting-plane solve it is the final master; with a loss compiled by tangents, a relaxation (its value
        is below the objective by up to the certified gap); :mod:`drokit.conic.export`."""
        from ..conic.export import to_cvxpy
        return to_cvxpy(self.program)

    def to_picos(self):
        """The same conic program as a ``picos.Problem`` (returns ``(problem, x)``); for cross-checks."""
        from ..conic.export import to_picos
        return to_picos(self.program)

    #: refinements of an outer-approximated loss (tangent cuts) before giving up on the gap
    MAX_TANGENT_ROUNDS = 30
    #: relative gap at which the tangent refinement stops (relative to max(|upper|, 1e-2): drokit.gaps)
    TANGENT_GAP = 1e-6
    max_configurations: int = MAX_CONFIGURATIONS

    def solve(self, solver: str = "auto", solver_options: Optional[Mapping[str, Any]] = None,
              on_inaccurate: str = "raise", verbose: Any = False,
              method_options: Optional[Mapping[str, Any]] = None, time_limit: Optional[float] = None) -> FitResult:
        """Solve with a back-end and certify the answer (see :meth:`_solve_once`).

        ``verbose``: 0 / ``False`` silent; 1 / ``True`` progress lines on stderr (phase, round, the certified gap,
        elapsed time, an estimate of the rest) once the fit has run 2 s; 2 also the method's log (phase-1 solves,
        barrier centerings, cutting-plane rounds); 3 also the conic solver's own log
        (:mod:`drokit.run_control`).

        ``time_limit``: seconds of wall time.  The cutting plane stops at its next step once they have passed
        and, like an uncertified fit, raises :class:`~drokit.SolverError` (``status="time_limit"``) carrying the
        best model found and its certified bounds in ``error.result``, or with ``on_inaccurate="warn"``
        returns them (``status="optimal_inaccurate"``, ``stop_reason`` set); a conic solve gets the time left
        as the solver's own limit.  Ctrl-C during a cutting-plane fit stops it the same way and raises
        :class:`~drokit.FitInterrupted` (a ``KeyboardInterrupt``) with that result.  ``result.attempts``
        lists every solver call, retries and fallbacks included, and ``solve_time`` covers them all.

        ``solver="auto"`` (default) fits the closed-form logistic model (no categorical feature can change,
        no penalty, l1 / l2 / l-inf ground norm; :func:`drokit.solvers.barrier.ineligibility`) with drokit's
        structured barrier solver (:mod:`drokit.solvers.barrier`: Newton steps on d + 2 variables instead of
        an interior-point method over 2N exponential cones; 4-89x faster than Clarabel on the conic program
        at 1,000-100,000 rows, benchmarks/RESULTS.md) when no ``solver_options`` are given, and with
        Clarabel otherwise; if the barrier solver does not certify its answer, Clarabel solves the conic
        program instead.  ``solver="barrier"`` requires it.

        A loss compiled by outer approximation (:class:`drokit.losses.symbolic.SymbolicLoss` without a
        recognized conic form) is solved repeatedly: each solve's program under-estimates the loss by tangents,
        so its value is a lower bound, and the certificate evaluates the exact loss.  After each solve every
        epigraph row whose tangent model is below the loss at its argument gets its own tangent there
        (Kelley's cut, :meth:`~drokit.losses.symbolic.SymbolicLoss.refine_rows`), until the relative gap is
        at most :attr:`TANGENT_GAP`.  The cutting plane adds tangents inside its own rounds instead.

        Dense linear algebra inside a solve (phase 1's Newton systems, of tens of columns) runs with one
        BLAS thread: multi-threaded OpenBLAS on such small products costs more in synchronization than it
        gains, and on a busy machine (parallel sweeps, other jobs) its spinning threads slowed phase 1
        22-fold (lymphography, 240 rows, 17.7 s -> 0.79 s; benchmarks/RESULTS.md).  Clarabel does not use
        BLAS.
        """
        control = RunControl(time_limit, verbose)
        self._control = control
        try:
            with _blas_controller().limit(limits=1, user_api="blas"), control.interruptible():
                result = self._solve_refined(solver, solver_options, on_inaccurate, control.verbose, method_options)
        except (SolverError, FitInterrupted) as exc:
            if getattr(exc, "result", None) is not None:
                self._account(exc.result, control)
            raise
        finally:
            self._control = None
        self._account(result, control)
        if control.interrupted and result.stop_reason is None:
            # a method that does not stop early (one conic solve) finished first: the work is kept
            raise FitInterrupted(f"interrupted (the {self.method} solve finished first: {result.status}, "
                                 f"objective {result.objective:.9g}; it is in this exception's .result)", result=result)
        control.finish(f"{result.status} in {control.elapsed():.1f} s: objective {result.objective:.9g}, "
                       f"relative gap {result.relative_gap:.1e} ({result.solver})")
        return result

    @staticmethod
    def _account(result: FitResult, control: RunControl) -> None:
        """Every solver call of the fit into ``result.attempts``, and ``solve_time`` = the fit's wall time but
        its final certificate (failed attempts and fallbacks included)."""
        result.attempts = list(control.attempts)
        result.solve_time = max(float(result.solve_time), control.elapsed() - float(result.evaluation_time))

    #: the :class:`~drokit.run_control.RunControl` of the solve in progress (None between solves)
    _control: Optional[RunControl] = None

    def _solve_refined(self, solver, solver_options, on_inaccurate, verbose, method_options) -> FitResult:
        """:meth:`solve` without the thread limit: one solve, or the tangent refinement of an outer
        approximation."""
        loss = self.instance.loss
        if not getattr(loss, "outer_approximation", False) or self.driver == "cutting_plane":
            return self._solve_once(solver, solver_options, on_inaccurate, verbose, method_options)
        for refinement in range(self.MAX_TANGENT_ROUNDS):   # the gap is judged below, after the refinement
            result = self._solve_once(solver, solver_options, on_inaccurate, verbose, method_options,
                                      certify_status=False)
            # judged relative to the objective (drokit.gaps): the tangents are refined until the model is near optimal
            # in the objective's own scale (pseudo-Huber at 0.1225: a bound 2.8e-7 below was 2.2e-6 of the objective)
            if result.relative_gap <= self.TANGENT_GAP:
                break
            if self._control is not None and self._control.should_stop():
                result.stop_reason = self._control.stop_reason
                break
            added = loss.refine_rows(self._last_x)
            if added == 0:  # every row exact at its argument: refine at the certificate's worst rows
                added = loss.add_tangents(_loss_arguments(self.evaluation_instance, result))
            if added == 0:
                break
            self.compiled = compile_instance(self.instance, self.method, self.max_configurations)
        result.auxiliary["tangent_solves"] = refinement + 1
        result.auxiliary["tangents"] = int(loss.tangents.size + sum(np.isfinite(p).sum()
                                                                   for p in loss.row_points.values()))
        if result.relative_gap > self.TANGENT_GAP:
            mark_inaccurate(result, f"outer approximation of {loss.name} stopped with relative gap "
                                f"{result.relative_gap:.2e} after {refinement + 1} solves ({loss.tangents.size} "
                                f"tangents)", on_inaccurate)
        # the program's value under-estimates the loss (tangents): report the exact value of the model
        result.objective = result.upper_bound
        return result

    def _solve_once(self, solver: str = "auto", solver_options: Optional[Mapping[str, Any]] = None,
              on_inaccurate: str = "raise", verbose: bool = False,
              method_options: Optional[Mapping[str, Any]] = None, certify_status: bool = True) -> FitResult:
        """Solve with a back-end and certify the answer.

        ``on_inaccurate="raise"`` (default) raises :class:`~drokit.SolverError` unless the solver reports an
        optimal solution (for the cutting plane: unless the loop is certified); ``"warn"`` accepts an
        inaccurate optimum (``status="optimal_inaccurate"``), warns and records it in ``result.warnings``.
        Infeasible, unbounded and failed solves always raise.  ``method_options`` configures the method
        (cutting plane: the fields of :class:`~drokit.reformulations.CuttingPlaneOptions`);
        ``verbose``: the level of :meth:`solve` (2: the method's log, 3: also the solver's).
        """
        if on_inaccurate not in ON_INACCURATE:
            raise ParameterError(f"on_inaccurate must be one of {ON_INACCURATE}, got {on_inaccurate!r}")
        fallback_note = None
        if method_options and self.method == "erm" and self.instance.radius == 0:
            # a path or grid that starts at radius 0 with the options of its method (issue 21): radius 0 is
            # plain ERM, which has no method options; they are dropped and the reason says so
            note = f"method_options {sorted(method_options)} not used: radius 0 is solved as ERM"
            if note not in self.compiled.method_reason:
                self.compiled.method_reason = f"{self.compiled.method_reason}; {note}"
            method_options = None
        if self._uses_barrier(solver, solver_options):
            if method_options:
                raise ParameterError(f"method_options are not used by method {self.method!r}")
            try:
                return self._solve_barrier(solver_options, on_inaccurate, verbose, required=solver == "barrier")
            except _BarrierNotCertified as uncertified:
                fallback_note = str(uncertified)
        backend = get_backend(solver)
        if self.driver == "cutting_plane":
            return self._solve_cutting_plane(backend, solver_options, on_inaccurate, verbose,
                                             method_options)
        if method_options:
            raise ParameterError(f"method_options are not used by method {self.method!r}")
        program = self.program
        try:
            sol = solve_with_retries(backend, program, solver_options, verbose=verbose >= 3, control=self._control)
        except (SolverError, ParameterError):
            raise
        except Exception as exc:  # a crash inside a back-end must not escape as a raw traceback
            raise SolverError(f"solver {backend.name!r} failed on this problem: {type(exc).__name__}: "
                              f"{exc}", status="solver_error", solver=backend.name) from exc
        notes = []
        self._last_x = sol.x
        if sol.status != "optimal":
            accept = sol.status == "optimal_inaccurate" and on_inaccurate == "warn" and sol.x is not None
            if not accept:
                hint = (" (pass on_inaccurate='warn' to accept an inaccurate optimum)"
                        if sol.status == "optimal_inaccurate" else
                        f" (time_limit={self._control.time_limit:g} s)" if sol.status == "time_limit" and
                        self._control is not None and self._control.time_limit is not None else "")
                raise SolverError(
                    f"solver {backend.name!r} returned status {sol.status!r} ({sol.raw_status}) for the "
                    f"{self.method} program after {len(sol.info.get('attempts', [1]))} attempt(s) "
                    f"{sol.info.get('attempts', '')}{hint}", status=sol.status, raw_status=sol.raw_status,
                    solver=backend.name, solution=sol)
            msg = (f"solver {backend.name!r} reports an inaccurate optimum ({sol.raw_status}; attempts "
                   f"{sol.info.get('attempts')})")
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            notes.append(msg)
        notes += self._separable_warning(sol.primal_objective)
        result = self._result(sol, notes)
        open_gap = result.relative_gap > CERTIFIED_GAP or unproven_bound(result)
        if certify_status and sol.status == "optimal" and open_gap and not resolve_futile(self.instance, result):
            result = self._tighter(result, backend, program, solver_options, verbose)
        if fallback_note is not None:
            result.auxiliary["barrier_fallback"] = fallback_note
        return self._certified_status(result, on_inaccurate) if certify_status else result

    def _tighter(self, result: FitResult, backend, program, solver_options, verbose) -> FitResult:
        """A solver answer "optimal" to its own tolerances whose certified gap is still above :data:`CERTIFIED_GAP`
        (relative to ``max(|upper|, 1e-2)``: :mod:`drokit.gaps`), or closed only by the solver's dual objective
        (source ``"method"``, a bound only up to its residuals): the program solved once more with the back-end's
        settings for relative accuracy 1e-10 (:meth:`~drokit.solvers.base.SolverBackend.accuracy_options`; none when
        the caller set the back-end's options), kept when its certificate is proven where the first was not, or its
        gap is smaller.  A hinge fit whose optimum is 0 (separable on an immutable feature, fuzz seed 22534):
        Clarabel's default answer has a worst-case risk of 2.7e-8, above the gap floor of 1e-8, and its dual
        objective 2.66e-8 sat above the optimum.  Not run where it cannot help (:func:`~drokit.models.certification.
        resolve_futile`)."""
        tight = backend.accuracy_options(1e-10)
        if not tight or solver_options:
            return result
        try:
            sol = solve_with_retries(backend, program, tight, verbose=verbose >= 3, control=self._control,
                                     stage="tighter")
        except Exception:                  # the first answer stands (and the status rule judges it)
            return result
        if sol.status != "optimal" or sol.x is None:
            return result
        tighter = self._result(sol, list(result.warnings))
        tighter.solve_time += result.solve_time
        tighter.iterations += result.iterations
        proven = tighter.relative_gap <= CERTIFIED_GAP and not unproven_bound(tighter)
        if proven or (unproven_bound(result) == unproven_bound(tighter) and tighter.relative_gap < result.relative_gap):
            self._last_x = sol.x
            return tighter
        return result

    def _separable_warning(self, objective: float) -> list:
        """Warn (and return the message in a list) when plain logistic regression ends at a mean log-loss
        of at most :data:`SEPARABLE_LOG_LOSS`: separable data, where no minimizer exists."""
        if not (self.method == "erm" and self.instance.is_classification
                and isinstance(self.instance.loss, Logistic) and objective <= SEPARABLE_LOG_LOSS):
            return []
        msg = (f"the training data are linearly separable (mean log-loss {objective:.1e} at radius 0): the "
               f"infimum 0 is not attained, so the coefficients' scale is set by the solver's tolerance; use "
               f"a radius > 0, which bounds them")
        warnings.warn(msg, RuntimeWarning, stacklevel=4)
        return [msg]

    def _uses_barrier(self, solver: Optional[str], solver_options) -> bool:
        """Whether this solve goes to the structured barrier solver: ``solver="barrier"`` (which must
        apply), or ``"auto"`` on an eligible closed-form fit without back-end options."""
        from ..solvers import AUTO
        from ..solvers.barrier import ineligibility
        key = (solver or AUTO).lower()
        if key not in ("barrier", AUTO):
            return False
        reason = (f"the method is {self.method!r}, not 'closed_form' or 'erm'"
                  if self.method not in ("closed_form", "erm") else ineligibility(self.instance))
        if key == "barrier" and reason is not None:
            raise ParameterError(f"solver='barrier' fits the closed-form (or radius-0) logistic model only, but {reason}; "
                                 f"use solver='auto' or 'clarabel'")
        return reason is None and (key == "barrier" or not solver_options)

    def _solve_barrier(self, solver_options, on_inaccurate: str, verbose: bool, required: bool) -> FitResult:
        """Fit with :func:`drokit.solvers.barrier.solve_closed_form_logistic` and certify.

        Its answer is accepted as ``"optimal"`` when its own dual bound is within ``tol`` (relative, default
        1e-8) of its value, or within :data:`~drokit.solvers.verification.ACCEPT_ACCURACY` (1e-6) once the
        gap stopped shrinking (``raw_status="stalled"``, recorded in ``auxiliary["verified_inaccurate"]``,
        the policy of inaccurate conic answers).  Otherwise, with ``required=False`` (``solver="auto"``)
        it raises :class:`_BarrierNotCertified` and the caller solves the conic program; with
        ``solver="barrier"`` it is an error, or with ``on_inaccurate="warn"`` an ``optimal_inaccurate``
        result."""
        from ..solvers.barrier import OPTIONS, solve_closed_form_logistic
        from ..solvers.verification import ACCEPT_ACCURACY
        options = dict(solver_options or {})
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ParameterError(f"unknown option(s) {unknown} for solver 'barrier'; known options: "
                                 f"{list(OPTIONS)}")
        out = solve_closed_form_logistic(self.instance, verbose=verbose >= 2, **options)
        if self._control is not None:
            self._control.record("program", "barrier", options, out.status, out.status, out.solve_time, out.iterations)
        notes, status = [], "optimal"
        verified = out.status != "optimal" and out.relative_gap <= ACCEPT_ACCURACY
        if out.status != "optimal" and not verified:
            msg = (f"solver 'barrier' stopped ({out.status}) with relative gap {out.relative_gap:.2e} after "
                   f"{out.iterations} Newton steps")
            if not required:
                raise _BarrierNotCertified(msg + "; solved the conic program with Clarabel instead")
            if on_inaccurate != "warn":
                raise SolverError(msg + " (pass on_inaccurate='warn' to accept it, or use solver='clarabel')",
                                  status="optimal_inaccurate", solver="barrier")
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            status = "optimal_inaccurate"
            notes.append(msg)
        notes += self._separable_warning(out.objective)
        coef, upper, eval_time = self._certify(out.intercept, out.coef)
        lower, how = self._certified_lower(out.intercept, coef, upper, out.lower_bound, method_bound_certified=True)
        problem_size = out.size
        result = FitResult(
            objective=upper if np.isfinite(upper) else out.objective, status=status, solver="barrier", raw_status=out.status,
            lower_bound=lower, upper_bound=upper, intercept=out.intercept, coef=coef,
            lambda_=out.lam, s=out.s, solve_time=out.solve_time, evaluation_time=eval_time,
            iterations=out.iterations, n_variables=problem_size["variables"],
            n_constraints=problem_size["barrier terms"],
            cones={k: v for k, v in problem_size.items() if k not in ("variables", "barrier terms")},
            primal={"coef": coef.copy(), "lambda": np.array([out.lam]), "s": out.s.copy(),
                    **({"intercept": np.array([out.intercept])} if self.instance.fit_intercept else {})},
            warnings=notes, **self._problem_fields(),
            auxiliary={"barrier": {"outer_iterations": out.outer_iterations, "relative_gap": out.relative_gap,
                                   "history": out.history}})
        if verified:
            result.auxiliary["verified_inaccurate"] = {"raw_status": out.status, "gap": out.relative_gap}
        result.auxiliary["lower_bound"] = how
        return self._certified_status(result, on_inaccurate)

    def _result(self, sol, notes) -> FitResult:
        primal = self._primal(sol)
        intercept = float(primal["intercept"][0]) if "intercept" in primal else 0.0
        lam = float(primal["lambda"][0]) if "lambda" in primal else float("nan")
        coef, upper, eval_time = self._certify(intercept, primal["coef"])
        lower, how = self._certified_lower(intercept, coef, upper, sol.dual_objective)
        if sol.status == "optimal":
            lower, how = self._polished_lower(intercept, coef, lam, upper, lower, how, CERTIFIED_GAP)
        # the objective is the returned model's exact worst-case risk (the solver's primal value can sit
        # outside [lower, upper] by its tolerance); the solver's value stays in auxiliary
        result = self._fit_result(
            sol, objective=upper if np.isfinite(upper) else sol.primal_objective, status=sol.status,
            lower_bound=lower,
            upper_bound=upper, intercept=intercept, coef=coef, lambda_=lam, s=primal["s"],
            solve_time=float(sol.setup_time + sol.solve_time), evaluation_time=eval_time,
            iterations=sol.iterations, warnings=list(notes))
        if sol.status == "optimal" and "certificate" in sol.info:
            # an inaccurate answer accepted by drokit's own check (drokit.solvers.verification)
            result.auxiliary["verified_inaccurate"] = sol.info["certificate"]
        result.auxiliary["lower_bound"] = {**how, "solver_dual_objective": float(sol.dual_objective)}
        result.auxiliary["solver_objective"] = float(sol.primal_objective)
        return result

    def _primal(self, sol) -> dict:
        """Named primal values of the (final) program, auxiliary blocks excluded."""
        return {name: sol.x[sl].copy() for name, sl in self.program.variables.items() if "#" not in name}

    def _fit_result(self, sol, *, objective, lower_bound, upper_bound, **fields) -> FitResult:
        """A :class:`FitResult` with what every method reports the same way (program size, solver
        status and residuals, primal and dual values); ``fields`` are the method-specific ones."""
        program = self.program
        return FitResult(
            objective=float(objective), lower_bound=float(lower_bound), upper_bound=float(upper_bound),
            solver=sol.solver, raw_status=sol.raw_status,
            n_variables=program.n_variables, n_constraints=program.n_constraints,
            cones=program.cone_counts(), primal_residual=float(sol.info.get("r_prim", np.nan)),
            dual_residual=float(sol.info.get("r_dual", np.nan)), primal=self._primal(sol), dual=sol.y,
            **self._problem_fields(), **fields)

    def _problem_fields(self) -> dict:
        """The :class:`FitResult` fields that describe the problem, whatever solved it."""
        return dict(method=self.method, method_reason=self.method_reason, compile_time=self.compile_time,
                    n_configuration_rows=int(self.compiled.n_rows),
                    n_enumeration_rows=count_configuration_rows(self.evaluation_instance),
                    program_recipe=ProgramRecipe.of(self))
