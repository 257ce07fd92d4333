"""Fitting under optimal transport with a moment constraint (MOT-DRO, issue 23): the compiled problem that
:meth:`drokit.models.Problem.compile` returns for an :class:`~drokit.OTMoment` with a ``radius``.

Steps (``spec/mot-dro-training.md``): bind the data (:func:`mot_instance`) to a :class:`~drokit.instance.MOTInstance`
(the training instance with the set's ground metric ``d`` and budget ``rho``, and ``theta1``, ``theta2``, the
divergence); the registered ``mot`` method compiles program (D) over the first rows (:mod:`drokit.methods.mot`: every row when
there are at most 2,000, else the nominal rows); :meth:`CompiledMOT.solve` fits.  When the first rows are not all of
them (spec §7):

1. MOT phase 1 (:mod:`drokit.reformulations.mot_phase_one`; KL or ``theta2 = inf``, the Wasserstein phase 1's
   conditions): smoothed Newton on the dual over rows the oracle grows, from ``beta = 0``; its point and the rows near
   their sample's maximum there seed what follows (nursery, 10,368 rows: one master certifies where the masters over
   nominal rows needed minutes);
2. on wide categorical data (:data:`SLOPE_CUTS_FEATURES` mutable categorical features or more, at most
   :data:`SLOPE_CUTS_SAMPLES` samples; ``search="slope_cuts"``: wherever they apply) the slope-cut masters
   (:mod:`drokit.reformulations.mot_slope_search`): Kelley's method with a cut per sample that covers every
   configuration at one loss slope (:mod:`drokit.reformulations.mot_slope_cuts`), conic masters in a box trust region,
   certified by the vertex dual point of a linear relaxation (:mod:`drokit.reformulations.mot_slope_certificate`)
   evaluated exactly by :func:`~drokit.certificates.mot_lower_bound.mot_lagrangian_bound`
   (audiology, 62 features: certified in seconds where the masters over rows were not after minutes); when they
   certify the fit ends there, else at most :data:`FALLBACK_ROUNDS` masters over configuration rows follow.

Then the cutting plane over configuration rows:

1. solve the master (D) over the working rows with a conic back-end (Clarabel by default): a relaxation, so its
   optimal value is a lower bound on the optimum (the back-end's dual objective is used: a lower bound of the master
   up to the back-end's feasibility tolerances, 1e-8 for Clarabel).  A master the back-end leaves inaccurate
   (``AlmostSolved``) still gives a trial point -- its model's exact risk is an upper bound -- but no lower bound;
   :data:`MAX_INACCURATE` of them in a row stop the plane;
2. the exact worst-case risk ``R(beta)`` of the master's model
   (:func:`~drokit.certificates.mot_worst_case.mot_worst_case`, the Wasserstein oracle at ``lambda theta1``): an upper
   bound; the best model so far is kept;
3. stop when ``upper - lower <= gap_tol max(|upper|, 1e-2)``; otherwise add the rows the oracle finds violated at the
   master's point (``lambda theta1``, ``s``) and the worst rows of the certificate, and repeat.  A master whose dual
   objective lies above its own model's exact risk gives no bound: the certificate of 4. is tried on that model at
   once (it stops the plane when it certifies), and only failing it is the master solved again at 1e-10;
4. the certificate: an explicit dual point of (D) at the returned model's worst-case atoms, its multipliers chosen by
   a restricted dual (conic, or a linear program solved by the dual simplex where the rows are many), repaired and
   evaluated exactly (:mod:`drokit.certificates.mot_lower_bound`), replaces the back-end's dual objective when it
   certifies (lower-bound source ``"lagrangian"``; else ``"method"``, the value it reached recorded).

The result's ``objective`` is the upper bound (the returned model's exact worst-case risk); ``auxiliary`` records the
searches (``"mot_phase_one"``, ``"mot_slope_cuts"``).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, NamedTuple, Optional

import numpy as np

from ..ambiguity.divergences import get_divergence
from ..certificates.lower_bound import KKT_MAX_ROWS
from ..certificates.mot_lower_bound import mot_certified_lower_bound
from ..certificates.mot_worst_case import mot_worst_case, worst_case_atoms
from ..exceptions import ParameterError, SolverError
from ..gaps import gap_scale
from ..instance import MOTInstance
from ..losses.builtin import Logistic
from ..oracles import make_oracle
from ..oracles.enumeration import count_configuration_rows, enumerate_configurations
from ..oracles.rows import concat_rows, take_rows, unique_rows
from ..methods.mot import mot_program
from ..reformulations.mot_phase_one import mot_phase_one, mot_phase_one_applies
from ..reformulations.mot_slope_cuts import mot_slope_cuts_apply
from ..reformulations.mot_slope_search import mot_slope_cut_search
from .compiled_bound import CompiledBound
from .result import FitResult

#: relative gap at which the cutting plane stops (certified)
GAP_TOL = 1e-6
#: rounds of the cutting plane at most
MAX_ROUNDS = 50
#: a master's dual objective above the exact upper bound by at most this (relative to ``max(|upper|, 1e-2)``,
#: :mod:`drokit.gaps`) is the back-end's accuracy (Clarabel's tolerances are 1e-8) and is capped at the upper bound;
#: relative to ``max(1, |upper|)`` it let a separable fit (risk 5.6e-10 at coefficients ~200, no minimizer) pass as
#: certified
SOLVER_BOUND_RTOL = 1e-7
#: a fit with ``theta1 = inf`` (samples only reweighted) left uncertified at a worst-case risk below this is told that
#: its data are separable (breast cancer, 569 x 30 standardized, KL ball 0.1: risk 8.4e-6 at coefficients ~6,700); so is
#: a logistic one certified by nothing but the loss's floor, a lower bound of 0 (``tests/test_phi_divergence_sets.py``:
#: risk 5.6e-10 at coefficients ~200)
SEPARABLE_RISK = 1e-4
#: a row joins the master when the oracle's value exceeds the master's ``s_n`` by more than this (relative to
#: ``max(|objective|, 1e-2)``)
VIOLATION_TOL = 1e-9
#: masters over configuration rows at most after slope cuts that did not certify
FALLBACK_ROUNDS = 5
#: masters in a row that the back-end leaves inaccurate (each a trial point) before the plane stops
MAX_INACCURATE = 3
#: ``search="auto"`` runs the slope cuts (where they apply) on data with at least this many mutable categorical features
#: and at most :data:`SLOPE_CUTS_SAMPLES` samples (the Wasserstein fits' rule for their LP master): audiology (62
#: features, 180 rows) needs them; on narrower data phase 1's rows let one or two masters over configuration rows
#: certify (nursery, 8 features: one master), where the slope cuts take 5-16 conic masters
SLOPE_CUTS_FEATURES = 30
#: ... and at most this many samples
SLOPE_CUTS_SAMPLES = 500
#: ``method_options["search"]``: ``"auto"`` (phase 1, then the slope cuts on wide data: :data:`SLOPE_CUTS_FEATURES`),
#: ``"slope_cuts"`` (phase 1, then the slope cuts wherever they apply), ``"phase_one"`` (phase 1, then the masters over
#: configuration rows), ``"none"`` (the masters over configuration rows from the nominal rows)
SEARCHES = ("auto", "slope_cuts", "phase_one", "none")


class MOTStart(NamedTuple):
    """A start for the slope cuts without phase 1: ``beta = (intercept, coef)`` and the rows' multiplier ``mu``."""

    intercept: float
    coef: np.ndarray
    mu: float


class CompiledMOT(CompiledBound):
    """The compiled problem of a :class:`~drokit.instance.MOTInstance` (the ``"mot"`` driver of
    :mod:`drokit.methods.mot`): :meth:`solve` fits and certifies the model."""

    def fit_in_coordinates(self, solver: str = "clarabel", solver_options: Optional[Mapping[str, Any]] = None,
                           on_inaccurate: str = "raise", verbose: Any = False,
                           method_options: Optional[Mapping[str, Any]] = None,
                           time_limit: Optional[float] = None) -> FitResult:
        """Fit by the searches and the cutting plane of the module docstring.  ``method_options``: ``gap_tol``
        (default :data:`GAP_TOL`), ``max_rounds`` (:data:`MAX_ROUNDS`: masters over configuration rows, and slope-cut
        masters), ``search`` (:data:`SEARCHES`; ``"auto"`` by default).  An uncertified fit (rounds exhausted, a
        time limit, masters the back-end could not solve) raises :class:`~drokit.SolverError` with the best model in
        ``error.result``, or with ``on_inaccurate="warn"`` returns it (status ``"optimal_inaccurate"``)."""
        from ..run_control import RunControl
        from ..solvers import get_backend
        from ..solvers.base import OPTIMAL, OPTIMAL_INACCURATE, solve_with_retries
        opts = dict(method_options or {})
        gap_tol = float(opts.pop("gap_tol", GAP_TOL))
        max_rounds = int(opts.pop("max_rounds", MAX_ROUNDS))
        search = str(opts.pop("search", "auto"))
        if opts:
            raise ParameterError(f"invalid mot option(s) {sorted(opts)}; valid: gap_tol, max_rounds, search")
        if search not in SEARCHES:
            raise ParameterError(f"mot option search must be one of {SEARCHES}, got {search!r}")
        control = RunControl(time_limit, verbose)
        solver = "clarabel" if solver == "auto" else solver
        backend = get_backend(solver)
        options = control.solver_options(backend, solver_options) if control.time_limit is not None else solver_options
        b, inst = self.bound, self.instance
        oracle = None if np.isinf(b.theta1) else make_oracle(inst, "auto")
        rows = self.compiled.info["rows"]
        best, lower, history, stop, certificate = None, -np.inf, [], None, None
        t0 = time.perf_counter()
        eval_time = 0.0
        program, searched, auxiliary = None, False, {}
        if search != "none" and oracle is not None and count_configuration_rows(inst) > rows.size:
            found = self._search(oracle, backend, options, control, gap_tol, search, max_rounds, auxiliary)
            if found is not None:
                best, certificate, seed, program, history = found
                searched = True
                rows = unique_rows(concat_rows([rows, seed]))
                if "rounds" in auxiliary.get("mot_slope_cuts", {}):
                    # the masters over configuration rows after slope cuts that did not certify: a few, no more (on the
                    # wide data the slope cuts are for, they crawled: audiology 50 rounds, 4 s each)
                    max_rounds = min(max_rounds, FALLBACK_ROUNDS)
        done = best is not None and _closes(certificate, best[0], gap_tol)
        inaccurate = 0
        round_ = 0
        for round_ in range(1, 0 if done else max_rounds + 1):
            program = self.compiled.program if round_ == 1 and not searched else mot_program(b, rows)
            solution = solve_with_retries(backend, program, options, verbose=control.solver_verbose,
                                          control=control, stage=f"master {round_}")
            usable = solution.status == OPTIMAL_INACCURATE and solution.x is not None
            if solution.status != OPTIMAL and not usable:
                stop = f"master {round_} ended {solution.status} ({solution.raw_status})"
                break
            # an inaccurate master's point is still a trial point (its exact risk is an upper bound), never a bound
            inaccurate = inaccurate + 1 if usable else 0
            t_eval = time.perf_counter()
            intercept, coef, lam, s, worst = self._model(program, solution, oracle)
            tight = backend.accuracy_options(1e-10) if not options else None
            early = None
            if not usable and tight and \
                    float(solution.dual_objective) > worst.value + SOLVER_BOUND_RTOL * gap_scale(worst.value):
                # the master's dual objective above the exact worst-case risk of its own model: not a bound at the
                # solver's default accuracy (LAD with numerical moves, 1,000 x 10: 3.8e-6 above).  The explicit dual
                # point at the model may certify it (the tied samples' restricted dual: milliseconds); else once more
                # at 1e-10 (LAD, 10,000 x 10: 10-14 s of retries, where the dual point certifies the first model)
                early = self._lagrangian((worst.value, intercept, coef, worst, s), oracle, rows, gap_tol, control)
                if worst.value - early.value > gap_tol * gap_scale(worst.value):
                    early = None
                    again = solve_with_retries(backend, program, tight, verbose=control.solver_verbose,
                                               control=control, stage=f"master {round_} (tighter)")
                    if again.status == OPTIMAL:
                        solution = again
                        intercept, coef, lam, s, worst = self._model(program, solution, oracle)
            if not usable:
                lower = max(lower, min(float(solution.primal_objective), float(solution.dual_objective)))
            eval_time += time.perf_counter() - t_eval
            if best is None or worst.value < best[0]:
                best = (worst.value, intercept, coef, worst, s)
            if early is not None and (certificate is None or early.value > certificate.value):
                certificate = early            # a bound on the optimum: any model's
            upper = best[0]
            history.append({"round": round_, "rows": int(rows.size), "lower": lower, "upper": upper,
                            **({"inaccurate": True} if usable else {})})
            control.log(f"mot round {round_}: rows {rows.size:,} lower {lower:.9f} upper {upper:.9f}"
                        + (f" ({solution.raw_status}: a trial point only)" if usable else ""))
            control.progress("MOT-DRO cutting plane", f"round {round_}, {rows.size:,} rows, relative gap "
                                                      f"{(upper - lower) / gap_scale(upper):.1e}")
            if upper - lower <= gap_tol * gap_scale(upper) or _closes(certificate, upper, gap_tol):
                break
            if inaccurate >= MAX_INACCURATE:
                stop = f"masters {round_ - inaccurate + 1}-{round_} ended {solution.status} ({solution.raw_status})"
                break
            if oracle is None or control.should_stop():
                stop = "time limit reached" if control.should_stop() else "the master holds every row"
                break
            sep = oracle.separate(intercept, coef, lam * b.theta1, s)
            violated = np.flatnonzero(sep.violation > VIOLATION_TOL * gap_scale(upper))
            new = unique_rows(concat_rows([take_rows(sep.rows, violated), worst.rows]))
            new = take_rows(new, _unseen(inst, rows, new))
            if new.size == 0:
                stop = "no violated row left (the gap is the back-end's accuracy)"
                break
            rows = concat_rows([rows, new])
        else:
            if not done:
                stop = f"{max_rounds} rounds"
        self.program = program
        t_bound = time.perf_counter()
        if best is not None and _closes(certificate, best[0], gap_tol):
            bound = certificate                 # the explicit dual point that certified a model of the plane
        else:
            bound = self._lagrangian(best, oracle, rows, gap_tol, control) if best is not None else None
            if certificate is not None and (bound is None or certificate.value > bound.value):
                bound = certificate
        eval_time += time.perf_counter() - t_bound
        result = self._result(best, lower, bound, history, stop, gap_tol, on_inaccurate, solver, program, rows,
                              time.perf_counter() - t0, eval_time, control, auxiliary)
        control.finish(f"{result.status} in {control.elapsed():.1f} s: objective {result.objective:.9g}, "
                       f"relative gap {result.relative_gap:.1e} ({solver})")
        return result

    def _search(self, oracle, backend, options, control, gap_tol: float, search: str, max_rounds: int,
                auxiliary: dict):
        """MOT phase 1 (:mod:`drokit.reformulations.mot_phase_one`) and the slope-cut masters
        (:mod:`drokit.reformulations.mot_slope_search`) where they apply (module docstring, 1. and 2.): ``(best, bound,
        rows, program, history)`` -- the best model as the cutting plane keeps it (its exact worst case), the
        certificate's :class:`~drokit.certificates.lagrangian.LowerBound` (or None), the rows that seed the masters
        over configuration rows, the last conic program solved and the slope cuts' rounds -- or None when neither
        applies.  Their records go to ``auxiliary``."""
        b, inst = self.bound, self.instance
        settings = dict(rho=b.radius, theta1=b.theta1, theta2=b.theta2)
        start, seed, program, history = None, None, None, []
        if mot_phase_one_applies(inst, b.theta1, b.theta2, b.divergence):
            first = mot_phase_one(inst, oracle, **settings, log=control.log, control=control)
            start, seed = first, first.bundle
            auxiliary["mot_phase_one"] = {"rounds": first.rounds, "newton_steps": first.newton_steps,
                                          "converged": first.converged, "upper_bound": first.upper_bound,
                                          "rows": int(first.working.size), "bundle": int(first.bundle.size),
                                          "seconds": first.seconds}
            control.log(f"mot phase 1: {first.rounds} solves, {first.newton_steps} Newton steps, "
                        f"{first.seconds:.2f} s; its point's value {first.upper_bound:.9f}")
        applies, why = mot_slope_cuts_apply(inst, b.divergence, b.theta1, b.theta2)
        if applies and search == "auto":
            wide = inst.mutable_categorical().size >= SLOPE_CUTS_FEATURES and inst.n_samples <= SLOPE_CUTS_SAMPLES
            applies, why = wide, "" if wide else (f"narrow data (fewer than {SLOPE_CUTS_FEATURES} mutable categorical "
                                                  f"features or more than {SLOPE_CUTS_SAMPLES} samples)")
        slope = None
        if search in ("auto", "slope_cuts") and applies and not control.should_stop():
            if start is None:                       # from beta = 0 (chi-square: no phase 1)
                start = MOTStart(0.0, np.zeros(inst.schema.n_encoded), 2.0 * float(inst.loss.lipschitz))
            slope = mot_slope_cut_search(inst, oracle, start, **settings, divergence=b.divergence, tol=gap_tol,
                                         backend=backend, options=options, control=control, log=control.log,
                                         max_rounds=max_rounds)
            program = slope.program
            auxiliary["mot_slope_cuts"] = {"certified": slope.certified, "rounds": slope.rounds, "cuts": slope.cuts,
                                           "upper_bound": slope.upper, "lower_bound": slope.lower,
                                           "stop": slope.stop, "seconds": slope.seconds,
                                           "master_seconds": slope.master_seconds,
                                           "certificate_seconds": slope.certificate_seconds}
            history = [{"round": h["round"], "stage": "slope cuts", "lower": h["lower"], "upper": h["upper"],
                        "cuts": h["cuts"]} for h in slope.history]
            control.log(f"mot slope cuts: {'certified' if slope.certified else slope.stop} after {slope.rounds} "
                        f"masters, {slope.cuts:,} cuts, {slope.seconds:.2f} s; upper {slope.upper:.9f} lower "
                        f"{slope.lower:.9f}")
        elif search in ("auto", "slope_cuts"):
            auxiliary["mot_slope_cuts"] = {"applies": False, "why": why}
        if start is None:
            return None
        best = None
        for point in (slope, start):
            if point is None:
                continue
            coef = np.array(point.coef, dtype=float)
            coef[inst.fixed_zero] = 0.0
            worst = mot_worst_case(inst, oracle, float(point.intercept), coef, rho=b.radius, theta1=b.theta1,
                                   theta2=b.theta2, divergence=b.divergence)
            if best is None or worst.value < best[0]:
                best = (worst.value, float(point.intercept), coef, worst, np.asarray(worst.S, dtype=float))
            if point is slope and slope.certified:
                break                              # the slope cuts' point is the one certified
        bound = slope.bound if slope is not None else None
        rows = unique_rows(concat_rows([r for r in (seed, best[3].rows) if r is not None]))
        return best, bound, rows, program, history

    def solve(self, *args, **kwargs) -> FitResult:
        """Fit by the cutting plane (:meth:`fit_in_coordinates`); with a matrix numerical cost (the data bound in
        ``x~ = M x``, :mod:`drokit.metrics.linear_map`) the model comes back in the original coordinates, also the one
        a :class:`~drokit.SolverError` carries."""
        linear_map = self.instance.metric.linear_map
        if linear_map is None:
            return self.fit_in_coordinates(*args, **kwargs)
        try:
            return linear_map.result_back(self.fit_in_coordinates(*args, **kwargs))
        except SolverError as exc:
            exc.result = linear_map.result_back(getattr(exc, "result", None))
            raise

    def _model(self, program, solution, oracle):
        """``(intercept, coef, lambda, s)`` of a master's solution and the exact worst case of its model."""
        b, inst = self.bound, self.instance
        intercept = float(program.value("intercept", solution.x)[0]) if inst.fit_intercept else 0.0
        coef = np.array(program.value("coef", solution.x), dtype=float)
        coef[inst.fixed_zero] = 0.0         # the program's beta_j = 0 (free moves): exactly 0, not the solver's 1e-12
        lam = float(program.value("lambda", solution.x)[0])
        s = program.value("s", solution.x)
        worst = mot_worst_case(inst, oracle, intercept, coef, rho=b.radius, theta1=b.theta1, theta2=b.theta2,
                               divergence=b.divergence)
        return intercept, coef, lam, s, worst

    def _lagrangian(self, best, oracle, working, gap_tol: float, control=None):
        """The explicit dual point's bound at the best model (module docstring, 4.); the restricted dual's candidate
        rows (:func:`~drokit.certificates.mot_lower_bound.candidate_sets`) are the worst case's, then those near each
        sample's maximum among every row (when they can be enumerated) or among the worst case's and the master's
        ``working`` rows, widening, then all of these."""
        b, inst = self.bound, self.instance
        _, intercept, coef, worst, _ = best
        options = dict(rho=b.radius, theta1=b.theta1, theta2=b.theta2, divergence=b.divergence)
        atoms = worst_case_atoms(inst, oracle, intercept, coef, worst, **options)

        def pool():
            """Every row (enumerable, or the nominal rows with theta1 = inf), else the atoms' and the master's."""
            if np.isinf(b.theta1) or count_configuration_rows(inst) <= KKT_MAX_ROWS:
                return enumerate_configurations(inst, nominal_only=bool(np.isinf(b.theta1)))
            return unique_rows(concat_rows([atoms.rows, working]))
        return mot_certified_lower_bound(inst, atoms, intercept, coef, upper=best[0], tol=gap_tol, worst=worst,
                                         pool=pool, linear_programs=control is None or not control.should_stop(),
                                         **options)

    def _result(self, best, lower, bound, history, stop, gap_tol, on_inaccurate, solver, program, rows, seconds,
                eval_time, control, extra=None) -> FitResult:
        if best is None:
            raise SolverError(f"MOT-DRO: {stop}; no model to return", status="solver_error", solver=solver)
        upper, intercept, coef, worst, s = best
        if lower > upper:
            # the master's dual objective is a lower bound up to the back-end's feasibility tolerances: above the exact
            # upper bound by less than they allow it is capped there; by more, it is no bound at all
            lower = upper if lower - upper <= SOLVER_BOUND_RTOL * gap_scale(upper) else -np.inf
        how = {"source": "method", "rounds": len(history), "method_bound": float(lower)}
        exact = float(bound.value) if bound is not None else -np.inf
        if np.isfinite(exact) and exact <= upper + 1e-9 * max(1.0, abs(upper)):
            how["lagrangian"] = exact
            if upper - exact <= gap_tol * gap_scale(upper) or exact >= lower:
                lower = min(exact, upper)
                how.update(source="lagrangian", budget_scale=float(bound.scale), residual=float(bound.residual))
        certified = upper - lower <= gap_tol * gap_scale(upper)
        if (certified and np.isinf(self.bound.theta1) and isinstance(self.instance.loss, Logistic)
                and upper <= SEPARABLE_RISK and lower <= 0.0):
            # a vanishing log-loss certified by nothing but the loss's floor 0 (the dual point of slopes 0): separable
            # data, where the risk goes to 0 as the coefficients grow (no minimizer) and their scale is the solver's
            certified = False
        if not certified and stop is None:
            stop = ("the master's dual objective was above the model's exact worst-case risk (no valid bound) and the "
                    "explicit dual point does not close the gap")
        if not certified and np.isinf(self.bound.theta1) and upper <= SEPARABLE_RISK:
            stop = (f"the worst-case risk goes to 0 as the coefficients grow (max |coef| {np.max(np.abs(coef)):.3g}): the "
                    f"training data are separable and a set that only reweights samples (theta1 = inf: KLBall, "
                    f"ChiSquareBall, CVaRSet) cannot make them overlap, so no minimizer exists; let samples move "
                    f"(dk.OTMoment with a finite theta1, or a Wasserstein ball) or add a penalty (l2_penalty)")
        result = FitResult(
            objective=float(upper), status="optimal" if certified else "optimal_inaccurate", method=self.method,
            method_reason=self.method_reason, solver=solver, raw_status="certified" if certified else str(stop),
            lower_bound=float(lower), upper_bound=float(upper), intercept=float(intercept),
            coef=np.asarray(coef, dtype=float), lambda_=float(worst.lam), s=np.asarray(s, dtype=float),
            compile_time=self.compile_time, solve_time=seconds - eval_time, evaluation_time=eval_time,
            iterations=len(history), n_variables=program.n_variables if program is not None else 0,
            n_constraints=program.n_constraints if program is not None else 0,
            cones=program.cone_counts() if program is not None else {}, n_configuration_rows=int(rows.size),
            n_enumeration_rows=int(rows.size), history=history, stop_reason=None if certified else stop,
            attempts=list(control.attempts),
            auxiliary={"lower_bound": how, "alpha": float(worst.alpha), "weights": np.asarray(worst.weight),
                       "theta1": self.bound.theta1, "theta2": self.bound.theta2,
                       "divergence": self.bound.divergence.name, **(extra or {})})
        if not certified:
            what = "MOT-DRO" if np.isfinite(self.bound.theta1) else f"{self.bound.divergence.name} divergence set"
            message = (f"{what} fit not certified ({stop}): optimum in [{lower:.9g}, {upper:.9g}]")
            if on_inaccurate != "warn":
                raise SolverError(message + "; pass on_inaccurate='warn' to accept it", status="optimal_inaccurate",
                                  solver=solver, result=result)
            import warnings
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            result.warnings.append(message)
        return result


def _closes(bound, upper: float, gap_tol: float) -> bool:
    """Whether the lower bound ``bound`` (a :class:`~drokit.certificates.lagrangian.LowerBound` or None) is within
    ``gap_tol`` of ``upper`` (relative, :mod:`drokit.gaps`)."""
    return bound is not None and upper - float(bound.value) <= gap_tol * gap_scale(upper)


def _unseen(inst, working, new) -> np.ndarray:
    """Indices of ``new``'s rows not already in ``working`` (same sample, configuration and label)."""
    from ..oracles.rows import RowIndex
    return RowIndex(working, inst.n_samples, inst.schema.levels).unseen(new)


def mot_instance(training, theta1: float, theta2: float, divergence, exponent: int) -> MOTInstance:
    """The bound MOT-DRO problem: ``training`` (the data bound with the set's ground metric and budget ``rho`` as its
    radius, :meth:`drokit.Problem.compile`) and the set's weights; numerical features that can move need the norm
    itself as their cost (``exponent=1``, spec §6)."""
    if exponent == 2 and np.isfinite(theta1) and training.n_numerical and np.any(np.isfinite(training.metric.gamma)):
        raise ParameterError("MOT-DRO training prices a numerical move by the norm itself, not its square "
                             "(spec/mot-dro-training.md §6): pass OTMoment(..., exponent=1), or make the numerical "
                             "features immutable (NormCost weights np.inf)")
    return MOTInstance(training.fitting_view(), theta1, theta2, get_divergence(divergence))
