"""The certificate of a fit, shared by every method's result (:class:`FitCertification`, a base of
:class:`~drokit.models.compiled.CompiledProblem`): the upper bound is the exact worst-case risk of the returned model
(:func:`drokit.certificates.worst_case.certified_upper_bound`), the lower bound an explicit dual point evaluated
exactly (:func:`drokit.certificates.lower_bound.certified_lower_bound`, or a method's own repaired point), and the
status rule: ``"optimal"`` only at a certified relative gap ``(upper - lower) / max(|upper|, 1e-2) <=``
:data:`CERTIFIED_GAP` (:mod:`drokit.gaps`)."""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Optional, Tuple

import numpy as np

from ..exceptions import SolverError
from ..gaps import gap_scale
from ..methods import MAX_CONFIGURATIONS
from .result import FitResult


#: a fit is reported "optimal" only when its certified relative gap (upper - lower) / max(|upper|, 1e-2) is at
#: most this (drokit.gaps) (the acceptance level of inaccurate conic answers, drokit.solvers.verification)
CERTIFIED_GAP = 1e-6
#: the certificate stops looking for a better dual point once its bound is this close (relative) to the upper
#: bound: a tenth of CERTIFIED_GAP (each further search is a small conic solve; sun2025's hayes-roth run
#: took 13 s instead of 6 s when it aimed at 1e-9)
LOWER_BOUND_RTOL = 1e-7
#: a Lagrangian bound above the exact upper bound by at most this (relative to ``max(1, |upper|)``) is
#: floating-point rounding and is capped at the upper bound; by more, it is discarded as wrong
BOUND_ROUNDING = 1e-9


def mark_inaccurate(result: FitResult, msg: str, on_inaccurate: str) -> FitResult:
    """An answer that is not certified: raise :class:`SolverError` (``on_inaccurate="raise"``), or keep it as
    ``"optimal_inaccurate"`` with a warning recorded in ``result.warnings``."""
    if on_inaccurate != "warn":
        raise SolverError(msg + " (pass on_inaccurate='warn' to accept it)", status="optimal_inaccurate",
                          solver=result.solver)
    warnings.warn(msg, RuntimeWarning, stacklevel=4)
    result.warnings.append(msg)
    result.status = "optimal_inaccurate"
    return result


def below_upper(bound, upper: float):
    """``(bound, discarded)``: a Lagrangian bound (:class:`~drokit.certificates.lagrangian.LowerBound` or ``None``) above
    the exact upper bound by rounding (:data:`BOUND_ROUNDING`) capped at it; above it by more, ``(None, its value)``:
    no lower bound can exceed the exact value of a feasible model, so the dual point was evaluated wrongly (a conjugate
    that overflowed gave +inf once, issue 19) and is never reported."""
    if bound is None or not np.isfinite(upper):
        return bound, None
    if not bound.value <= upper + BOUND_ROUNDING * max(1.0, abs(upper)):
        return None, float(bound.value)
    if bound.value > upper:
        bound = dataclasses.replace(bound, value=float(upper))     # rounding (an optimum of 0: 8e-12 above it)
    return bound, None


def unproven_bound(result: FitResult) -> bool:
    """Whether the lower bound of ``result`` is a solver's dual objective (source ``"method"``), not an explicit dual
    point evaluated exactly."""
    return result.auxiliary.get("lower_bound", {}).get("source") == "method"


def lagrangian_info(bound) -> dict:
    """``auxiliary["lower_bound"]``'s record of an explicit dual point."""
    info = {"source": "lagrangian", "budget_scale": bound.scale, "residual": bound.residual,
            "rows": int(bound.rows.size)}
    if getattr(bound, "search", None):
        info["search"] = bound.search
    return info


def resolve_futile(instance, result: FitResult) -> bool:
    """Whether solving the program again more accurately cannot improve the certificate of ``result`` (the rule of
    :meth:`~drokit.models.compiled.CompiledProblem._tighter`): an adversarial fit whose gap to the method's bound is
    already within :data:`CERTIFIED_GAP` and whose Lagrangian search did not reach it after its smoothed primal
    (:mod:`drokit.certificates.smoothed_point`, a Newton solve of its own that only starts at the model) or stopped at
    the multiplier program's size limit (the same rows again after a re-solve).  DR-ARO at 10,000 x 10 before the
    smoothed primal: the re-solve took 5.3 s, ended AlmostSolved, and the bound stayed the solver's."""
    search = result.auxiliary.get("lower_bound", {}).get("search") or {}
    return (hasattr(instance.loss, "at") and unproven_bound(result) and result.relative_gap <= CERTIFIED_GAP
            and ("smoothed" in search or "size_limit" in search))


class FitCertification:
    """The certificate's steps of a compiled problem (it provides ``instance``, ``evaluation_instance``, ``compiled``
    and ``_control``): the exact upper bound of a model, its certified lower bound and how it was obtained, the
    polish where only a solver's bound reached, and the status rule."""

    def _certify(self, intercept: float, coef: np.ndarray, lam_hint: Optional[float] = None
                 ) -> Tuple[np.ndarray, float, float]:
        """``(coef, upper, seconds)``: the coefficients with the fixed ones (and those of numerical features
        with weight 0) exactly 0, and their exact
        worst-case risk on the declared problem (independent of the conic solver)."""
        from ..certificates.worst_case import certified_upper_bound
        coef = np.array(coef, dtype=float)
        coef[self.instance.fixed_zero] = 0.0
        # numerical features that move for free (gamma_j = 0): at a positive radius every program constrains
        # beta_j = 0, and a solver's 1e-12 left there would make the exact worst case infinite
        if self.instance.radius > 0:
            coef[np.flatnonzero(np.asarray(self.instance.metric.gamma, dtype=float) == 0)] = 0.0
        t0 = time.perf_counter()
        upper = certified_upper_bound(self.evaluation_instance, intercept, coef, lam_hint=lam_hint) \
            + self.instance.penalty_value(coef)
        return coef, upper, time.perf_counter() - t0

    def _certified_lower(self, intercept: float, coef: np.ndarray, upper: float, method_bound: float,
                         method_bound_certified: bool = False, rows=None, dual=None) -> Tuple[float, dict]:
        """The reported lower bound and how it was obtained (``auxiliary["lower_bound"]["source"]``):

        * ``"lagrangian"``: the bound of :func:`drokit.certificates.lower_bound.certified_lower_bound`, an explicit
          dual-feasible point evaluated exactly at the returned model, valid up to floating-point rounding;
        * ``"barrier"``: the barrier solver's own repaired dual bound (``method_bound_certified``), when larger;
        * ``"method"``: where the Lagrangian bound does not apply (a model whose worst case is infinite) or does not
          reach within :data:`CERTIFIED_GAP` of ``upper`` while the method's bound does (its maximizers
          have ties the oracle's rows do not resolve, e.g. behind the cutting plane's budget cuts): the
          method's bound, a solver's dual objective that holds only up to the solver's residuals, capped at
          ``upper`` so that ``lower <= upper`` always.

        ``rows``: the method's working set (the cutting plane's last master), where the Lagrangian bound
        looks for multipliers beyond the oracle's maximizers.  ``dual``: a method's own repaired dual point
        (a :class:`~drokit.certificates.lagrangian.LowerBound`, e.g. phase 1's smoothed dual point), already
        evaluated exactly; when it is within ``CERTIFIED_GAP`` of ``upper`` it is the bound, with no
        further work."""
        from ..certificates.lower_bound import certified_lower_bound
        t0 = time.perf_counter()
        if method_bound_certified and upper - method_bound <= CERTIFIED_GAP * gap_scale(upper):
            # the barrier solver's own repaired dual bound certifies: no Lagrangian search (its KKT programs were
            # 0.09 s of a 0.15 s closed-form logistic fit with kappa = 1, benchmarks/RESULTS.md "The barrier solver")
            capped = float(min(method_bound, upper))
            return capped, {"seconds": time.perf_counter() - t0, "method_bound": float(method_bound), "source": "barrier"}
        if dual is not None and upper - dual.value <= CERTIFIED_GAP * gap_scale(upper):
            bound = dual                 # enough to certify: no search for a tighter one
        else:
            bound = certified_lower_bound(self.instance, intercept, coef, upper=upper, rows=rows,
                                          tol=LOWER_BOUND_RTOL, control=self._control)
            if dual is not None and (bound is None or dual.value > bound.value):
                bound = dual
        info = {"seconds": time.perf_counter() - t0, "method_bound": float(method_bound)}
        bound, discarded = below_upper(bound, upper)
        if discarded is not None:
            info["discarded_lagrangian"] = discarded
        capped = float(min(method_bound, upper)) if np.isfinite(upper) else float(method_bound)
        if method_bound_certified and (bound is None or method_bound > bound.value):
            return capped, {**info, "source": "barrier"}
        tight = bound is not None and upper - bound.value <= CERTIFIED_GAP * gap_scale(upper)
        if bound is None or (not tight and capped > bound.value):
            reason = (f"the Lagrangian bound {info['discarded_lagrangian']:.10g} exceeded the exact upper bound and "
                      f"was discarded" if "discarded_lagrangian" in info
                      else "the Lagrangian bound does not apply (the model's worst case is infinite)" if bound is None
                      else f"the Lagrangian bound reached {bound.value:.10g} only")
            if bound is not None and bound.search:
                info["search"] = bound.search
            return capped, {**info, "source": "method", "lagrangian": None if bound is None else bound.value,
                            "note": f"the method's dual bound, valid only up to its solver's residuals ({reason})"}
        return float(bound.value), {**info, **lagrangian_info(bound)}

    def _polished_lower(self, intercept: float, coef: np.ndarray, lam: float, upper: float, lower: float, how: dict,
                        tol: float, rows=None, oracle=None) -> Tuple[float, dict]:
        """A rigorous lower bound where :meth:`_certified_lower` could report only the method's (``how["source"] ==
        "method"``: the conic solver's dual objective): the barrier master's certified dual point from the model
        (:func:`drokit.reformulations.structured_master.certificate_polish`), reported with source
        ``"lagrangian"`` when it certifies the returned model within ``tol``.  Otherwise ``(lower, how)`` unchanged,
        with what the polish reached in ``how["polish"]``.  ``rows``: the method's working set (the cutting plane's
        last master) to start from; ``oracle``: its separation oracle (default: ``make_oracle(inst, "auto")``)."""
        if how.get("source") != "method" or not (np.isfinite(upper) and np.isfinite(lam)) \
                or (self._control is not None and self._control.should_stop()):
            return lower, how
        from ..reformulations.structured_master import certificate_polish
        from ..oracles import make_oracle
        t0 = time.perf_counter()
        if oracle is None:
            oracle = make_oracle(self.instance, "auto", self.compiled.info.get("max_configurations", MAX_CONFIGURATIONS))
        log = self._control.log if self._control is not None else None
        polish = certificate_polish(self.instance, oracle, intercept, coef, lam, upper, rows=rows, tol=tol / 2,
                                    log=log, control=self._control)
        seconds = time.perf_counter() - t0
        if polish is None:
            return lower, how
        if self._control is not None:
            self._control.record("certificate", "barrier_master", {}, "certified" if polish.certified else "not_certified",
                                 "certified" if polish.certified else "gave up", seconds, polish.newton_steps)
        record = {"seconds": seconds, "lower_bound": float(polish.lower_bound), "newton_steps": polish.newton_steps,
                  "centerings": polish.centerings, "oracle_calls": polish.oracle_calls}
        dual, _ = below_upper(polish.dual, upper)
        if dual is None or upper - dual.value > tol * gap_scale(upper):
            return lower, {**how, "polish": record}
        return float(dual.value), {"seconds": how.get("seconds", 0.0) + seconds, "method_bound": how.get("method_bound"),
                                   **lagrangian_info(dual), "polish": record}

    def _certified_status(self, result: FitResult, on_inaccurate: str, tol: float = CERTIFIED_GAP) -> FitResult:
        """The one status rule: ``"optimal"`` only when the certified relative gap
        ``(upper - lower) / max(|upper|, 1e-2)`` (:mod:`drokit.gaps`) is at most ``tol``; otherwise the fit raises
        :class:`SolverError`, or with ``on_inaccurate="warn"`` is kept as ``"optimal_inaccurate"`` with a
        warning."""
        if result.status != "optimal" or result.relative_gap <= tol:
            return result
        return mark_inaccurate(result, f"the {self.method} fit is not certified: lower bound {result.lower_bound:.10g}, "
                                   f"upper bound {result.upper_bound:.10g} (relative gap {result.relative_gap:.2e} "
                                   f"> {tol:.0e})", on_inaccurate)
