"""The cutting plane's fit (a mixin of :class:`~drokit.models.compiled.CompiledProblem`): its options read from
``method_options``, the loop of :func:`~drokit.reformulations.cutting_plane.solve_cutting_plane` run with the
method's oracle, and its outcome certified (:mod:`.certification`) into a :class:`~drokit.models.result.FitResult`:
a conic master's, or one of drokit's own solvers' (phase 1, the barrier master, the slope cuts) with no conic program,
or an uncertified stop (round limit, time limit, interrupt)."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np

from ..exceptions import FitInterrupted, ParameterError, SolverError
from ..oracles import make_oracle
from .certification import CERTIFIED_GAP
from .result import FitResult


def _barrier_record(structured) -> dict:
    """``auxiliary["barrier_master"]`` of a cutting-plane fit: what the structured barrier master did."""
    return {"certified": bool(structured.certified), "centerings": structured.centerings,
            "newton_steps": structured.newton_steps, "oracle_calls": structured.oracle_calls,
            "working_rows": int(structured.rows.size), "seconds": structured.seconds,
            "upper_bound": structured.upper_bound, "lower_bound": structured.lower_bound,
            "history": structured.history}


def _slope_cut_record(slope) -> dict:
    """``auxiliary["slope_cuts"]`` of a cutting-plane fit: what the slope-cut LP master did
    (:mod:`drokit.reformulations.slope_cuts`)."""
    return {"certified": bool(slope.certified), "rounds": slope.rounds, "cuts": slope.cuts,
            "lp_iterations": slope.lp_iterations, "seconds": slope.seconds, "lp_seconds": slope.lp_seconds,
            "bound_seconds": slope.bound_seconds, "upper_bound": slope.upper_bound, "lower_bound": slope.lower_bound,
            "stop": slope.stop, "history": slope.history}


class CuttingPlaneFit:
    """The ``"cutting_plane"`` driver of a compiled problem; it uses the problem's ``instance``, ``compiled``,
    ``_control``, the certificate's steps (:class:`~.certification.FitCertification`) and ``_fit_result`` /
    ``_problem_fields``."""

    def _solve_cutting_plane(self, backend, solver_options, on_inaccurate, verbose, method_options):
        from ..reformulations.cutting_plane import CuttingPlaneOptions, solve_cutting_plane
        from ..reformulations.cutting_plane_outcome import outcome_on_all_samples
        opts = dict(method_options or {})
        oracle_name = opts.pop("oracle", "auto")
        try:
            options = CuttingPlaneOptions(**opts, verbose=verbose >= 2)
        except TypeError as exc:
            valid = ["oracle"] + [f.name for f in dataclasses.fields(CuttingPlaneOptions) if f.name != "verbose"]
            raise ParameterError(f"invalid cutting-plane option: {exc}; valid options: "
                                 f"{', '.join(valid)}") from None
        max_configurations = self.compiled.info["max_configurations"]
        oracle = make_oracle(self.instance, oracle_name, max_configurations)
        from ..certificates.lower_bound import certified_lower_bound
        # samples of weight 0 add nothing to the objective: the loop runs without them, its outcome read back on all
        keep = self.instance.positive_weight_samples()
        inst = self.instance if keep is None else self.instance.take_samples(keep)

        def confirm(intercept, coef, upper, rows, tol):
            return certified_lower_bound(inst, intercept, coef, upper=upper, rows=rows, tol=tol)
        out = solve_cutting_plane(inst, oracle if keep is None else make_oracle(inst, oracle_name, max_configurations),
                                  backend, options, solver_options, control=self._control, confirm=confirm)
        if keep is not None:
            out = outcome_on_all_samples(out, keep, self.instance, oracle)
        coef, upper, eval_time = self._certify(out.intercept, out.coef, lam_hint=out.lam)
        lower, how = self._certified_lower(out.intercept, coef, upper, out.lower_bound, rows=out.working_rows,
                                           dual=out.dual)
        tol = max(CERTIFIED_GAP, options.gap_tol)
        if out.converged:
            lower, how = self._polished_lower(out.intercept, coef, out.lam, upper, lower, how, tol,
                                              rows=out.working_rows, oracle=oracle)
        if out.solution is None:         # phase 1 or the barrier master certified the fit (or it was stopped)
            result = self._structured_result(out, coef, upper, lower, eval_time)
            result.auxiliary["lower_bound"] = {**how, "cutting_plane_bound": float(out.lower_bound)}
            if out.converged:
                return self._certified_status(result, on_inaccurate, tol=tol)
            return self._stopped(result, out, backend, on_inaccurate, tol)
        self.compiled.program = out.program
        # the rows of the final master (its working set when it was built), not the full enumeration
        self.compiled.n_rows = out.history[-1].working_rows if out.history else self.compiled.n_rows
        result = self._fit_result(
            out.solution, objective=upper, status="optimal", lower_bound=lower,
            upper_bound=upper, intercept=out.intercept, coef=coef, lambda_=out.lam, s=out.s,
            solve_time=out.phase_one_time + float(sum(r.master_time + r.oracle_time for r in out.history)),
            evaluation_time=eval_time, iterations=int(sum(r.master_iterations for r in out.history)),
            warnings=[], max_violation=out.max_violation, history=out.history)
        result.auxiliary["lower_bound"] = {**how, "cutting_plane_bound": float(out.lower_bound)}
        if out.structured is not None:     # the barrier master ran but did not certify: the conic masters did
            result.auxiliary["barrier_master"] = _barrier_record(out.structured)
        if out.slope_cuts is not None:     # so did the slope-cut LP master
            result.auxiliary["slope_cuts"] = _slope_cut_record(out.slope_cuts)
        if not out.converged:
            return self._stopped(result, out, backend, on_inaccurate, tol)
        return self._certified_status(result, on_inaccurate, tol=tol)

    def _stopped(self, result: FitResult, out, backend, on_inaccurate: str, tol: float) -> FitResult:
        """A cutting-plane fit that ended uncertified -- its round limit, its time limit or an interrupt
        (``out.stop_reason``) -- with the best model found and its bounds in ``result``: a certified gap after
        all is accepted; otherwise :class:`FitInterrupted` for an interrupt, else :class:`SolverError` (status
        ``"time_limit"`` or ``"optimal_inaccurate"``) carrying ``result``, or with ``on_inaccurate="warn"`` a
        warning and ``status="optimal_inaccurate"``."""
        result.stop_reason = out.stop_reason
        if result.relative_gap <= tol:
            return self._certified_status(result, on_inaccurate, tol=tol)     # certified at the stop after all
        rec = out.history[-1] if out.history else None
        why = (f"not certified after {len(out.history)} rounds" if out.stop_reason is None else
               f"stopped ({out.stop_reason}) after {len(out.history)} rounds")
        msg = (f"cutting plane {why}: lower {result.lower_bound:.9g}, upper {result.upper_bound:.9g} (relative gap "
               f"{result.relative_gap:.1e})" + (f", max violation {out.max_violation:.2e}"
                                                 if np.isfinite(out.max_violation) else "")
               + (f", last master {rec.master_status}" if rec else ""))
        result.status = "optimal_inaccurate"
        if out.stop_reason == "interrupted":
            raise FitInterrupted(msg + "; the best model found is in this exception's .result", result=result)
        if on_inaccurate != "warn":
            hint = ("raise time_limit" if out.stop_reason else "raise max_rounds / loosen gap_tol")
            raise SolverError(msg + f" (pass on_inaccurate='warn' to accept the best point found, or {hint})",
                              status="time_limit" if out.stop_reason else "optimal_inaccurate",
                              solver=backend.name, solution=out.solution, result=result)
        warnings.warn(msg, RuntimeWarning, stacklevel=4)
        result.warnings.append(msg)
        return result

    def _structured_result(self, out, coef: np.ndarray, upper: float, lower: float, eval_time: float) -> FitResult:
        """The :class:`FitResult` of a cutting-plane fit certified (or stopped, ``out.stop_reason``, before any conic
        master) by drokit's own solvers alone -- phase 1's
        smoothed Newton search and its dual point (:mod:`drokit.reformulations.phase_one`), then the
        structured barrier master (:mod:`drokit.reformulations.barrier_master`): no conic program was
        solved.  ``n_variables`` / ``n_constraints`` are those of the last of them (``theta`` and one epigraph per
        sample; one barrier or softmax term per working row; the slope cuts' last LP master), ``iterations`` their
        Newton steps (and the LP masters' simplex iterations).  Its program (:meth:`FitResult.conic_program`) is
        the conic master over the final working set, built only when asked for."""
        from ..reformulations.dual import build_dual_program
        first, structured, inst = out.phase_one, out.structured, self.instance
        rows = out.working_rows
        self.compiled.program = functools.partial(build_dual_program, inst, rows)   # picklable
        self.compiled.n_rows = int(rows.size)
        primal = {"coef": coef.copy(), "lambda": np.array([out.lam]), "s": np.asarray(out.s, dtype=float).copy()}
        if inst.fit_intercept:
            primal["intercept"] = np.array([out.intercept])
        slope = getattr(out, "slope_cuts", None)
        if first is None:               # beyond the critical radius: the constant model and its dual point, no search
            steps, terms = 0, int(rows.size)
        else:
            steps = int(first.newton_steps) + (structured.newton_steps if structured is not None else 0)
            terms = structured.rows.size if structured is not None else first.working_rows
        n_variables = int(coef.size + 1 + int(inst.fit_intercept) + inst.n_samples)
        if slope is not None:           # the last of them was the LP master: its size, and its simplex iterations too
            steps, terms, n_variables = steps + slope.lp_iterations, slope.lp_rows, slope.lp_columns
        auxiliary = {} if first is None else {
            "phase_one": {"rounds": first.rounds, "newton_steps": first.newton_steps,
                          "oracle_calls": first.oracle_calls, "working_rows": first.working_rows,
                          "bound_seconds": first.bound_seconds, "seconds": first.seconds}}
        if structured is not None:
            auxiliary["barrier_master"] = _barrier_record(structured)
        if slope is not None:
            auxiliary["slope_cuts"] = _slope_cut_record(slope)
        solver = "slope_cuts" if slope is not None else "constant_model" if first is None and structured is None \
            else "phase_one" if structured is None else "barrier_master"
        return FitResult(
            objective=upper, status="optimal", solver=solver,
            raw_status="certified" if out.converged else (out.stop_reason or "stopped"), lower_bound=lower,
            upper_bound=upper, intercept=out.intercept, coef=coef, lambda_=out.lam, s=np.asarray(out.s, dtype=float),
            solve_time=out.phase_one_time, evaluation_time=eval_time, iterations=steps,
            n_variables=n_variables, n_constraints=int(terms),
            cones={}, primal=primal, max_violation=0.0 if out.converged else float(out.max_violation), history=[], **self._problem_fields(), auxiliary=auxiliary)

