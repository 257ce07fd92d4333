"""Fitting over an intersection of two Wasserstein balls (selvi2025 thesis §4.4, Inter-ARO): the compiled
problem that :meth:`drokit.models.Problem.compile` returns for a :class:`~drokit.Intersection`.

Steps: bind the training data; encode the auxiliary data with the training schema (unseen categories are an
error); check the intersection is non-empty, ``eps + eps_hat >= W(P_N, P_hat)`` (exact transport LP,
:func:`drokit.wasserstein_distance`); solve the static program of Theorem 11 with free ``s, s_hat``
(:mod:`drokit.conic.reformulations.intersection`); bracket the fitted model's worst-case risk over the
intersection from below by the finite-support LP.  The result carries ``bound = "upper"``: the objective is
a conservative upper bound, never the exact value (spec §2.5.3).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Optional

import numpy as np

from ..exceptions import DataError, ParameterError
from ..losses.base import CLASSIFICATION
from .instance import DROInstance
from .result import FitResult

REASON = ("intersection of two Wasserstein balls: the static program of selvi2025 Thm 11 with free s, s_hat "
          "(spec §2.5.2) -- a conservative UPPER bound on the worst-case risk (the exact problem is NP-hard, "
          "Prop. 18); lower_bound is a finite-support LP at the fitted model")


class CompiledIntersection:
    """Training instance, auxiliary data and radii, checked; :meth:`solve` fits and brackets the model."""

    method = "intersection"
    method_reason = REASON

    def __init__(self, instance: DROInstance, X_aux_num: np.ndarray, y_aux_pm: np.ndarray, radius_aux: float,
                 distance: float, compile_time: float):
        self.instance = instance
        self.evaluation_instance = instance
        self.X_aux, self.y_aux = X_aux_num, y_aux_pm
        self.radius_aux = radius_aux
        self.distance = distance
        self.compile_time = compile_time
        self.program = None

    def _args(self):
        inst = self.instance
        metric = inst.metric
        return dict(X=inst.data.X, y=inst.y, X_aux=self.X_aux, y_aux=self.y_aux, radius=inst.radius,
                    radius_aux=self.radius_aux, loss=inst.loss, p=metric.numerical.validated_p(),
                    gamma=np.asarray(metric.gamma, dtype=float), kappa=metric.kappa)

    def solve(self, solver: str = "clarabel", solver_options: Optional[Mapping[str, Any]] = None,
              on_inaccurate: str = "raise", verbose: bool = False,
              method_options: Optional[Mapping[str, Any]] = None) -> FitResult:
        """Fit by the static program; ``method_options={"segment_points": k}`` sets the lower bound's
        candidate grid (default 5 points per segment)."""
        from ..conic.reformulations.intersection import finite_support_lower_bound, solve_intersection
        opts = dict(method_options or {})
        segment_points = int(opts.pop("segment_points", 5))
        if opts:
            raise ParameterError(f"invalid intersection option(s) {sorted(opts)}; valid: segment_points")
        args = self._args()
        out = solve_intersection(**args, fit_intercept=self.instance.fit_intercept, solver=solver,
                                 options=solver_options, on_inaccurate=on_inaccurate)
        self.program = out.program
        t0 = time.perf_counter()
        lower = finite_support_lower_bound(out.intercept, out.coef, **args, segment_points=segment_points)
        eval_time = time.perf_counter() - t0
        cert = out.certificate
        if verbose:
            print(f"intersection: static objective {out.value:.6g} (an UPPER bound); the fitted model's "
                  f"worst-case risk over the intersection lies in [{lower:.6g}, {out.value:.6g}]")
        program = out.program
        return FitResult(
            objective=float(out.value), status=out.status, method=self.method, method_reason=REASON,
            solver=out.solver, raw_status=str(cert.get("raw_status", out.status)), lower_bound=float(lower),
            upper_bound=float(out.value), intercept=float(out.intercept), coef=np.asarray(out.coef, dtype=float),
            lambda_=float(out.lam), s=np.asarray(out.s), compile_time=self.compile_time,
            solve_time=float(out.solve_time), evaluation_time=eval_time, iterations=0,
            n_variables=program.n_variables, n_constraints=program.n_constraints, cones=program.cone_counts(),
            n_configuration_rows=int(out.n_rows), n_enumeration_rows=int(out.n_rows),
            primal_residual=float(cert.get("primal_residual", np.nan)),
            dual_residual=float(cert.get("dual_residual", np.nan)), bound="upper",
            auxiliary={"lambda_aux": float(out.lam_aux), "s_aux": np.asarray(out.s_aux),
                       "attack": out.attack, "wasserstein_distance": self.distance,
                       "radius_aux": self.radius_aux})

    def to_cvxpy(self):
        from ..conic.export import to_cvxpy
        from ..conic.reformulations.intersection import build_intersection_program
        return to_cvxpy(build_intersection_program(**self._args(), fit_intercept=self.instance.fit_intercept))


def compile_intersection(problem, X, y, *, categorical_features=None, categories="auto",
                         sample_weight=None) -> CompiledIntersection:
    """Bind, encode the auxiliary data, and check the intersection is non-empty (see the module docstring)."""
    from ..metrics.transport import wasserstein_distance
    from .validation import as_1d, encode_binary_labels, encode_with_classes, plus_minus_one_labels
    t0 = time.perf_counter()
    first, second = problem.resolved_ambiguity().balls()
    if sample_weight is not None:
        raise ParameterError("sample_weight is not supported with an Intersection ambiguity set")
    inst = problem.bind(X, y, categorical_features=categorical_features, categories=categories)
    if inst.task != CLASSIFICATION:
        raise ParameterError("an Intersection is fitted for classification only (selvi2025 §4: Inter-ARO)")
    if inst.schema.n_categorical:
        raise ParameterError(f"an Intersection is fitted on numerical features only (the static program of "
                             f"Thm 11 moves points in R^n); the data have categorical features "
                             f"{inst.schema.categorical_names}: encode them numerically first")
    X_aux, y_aux = second.validated_center()
    try:
        aux = inst.schema.transform(X_aux, handle_unknown="error")
    except DataError as exc:
        raise DataError(f"auxiliary data (center of the second ball): {exc}") from None
    if aux.X.shape[1] != inst.n_numerical:
        raise DataError(f"auxiliary data have {aux.X.shape[1]} numerical columns, the training data "
                        f"{inst.n_numerical}")
    # the training labels' coding (+-1 as they are, else the larger of two labels is +1) applied to y_aux
    pm = plus_minus_one_labels(y, inst.n_samples)
    classes = np.array([-1, 1]) if pm is not None else encode_binary_labels(y, inst.n_samples)[1]
    y_aux_pm = encode_with_classes(as_1d(y_aux, aux.n_samples), classes, aux.n_samples)
    metric = first.validated_metric()
    distance = wasserstein_distance((inst.data.X, inst.y), (aux.X, y_aux_pm), metric, task="classification")
    r1, r2 = first.validated_radius(), second.validated_radius()
    if r1 + r2 < distance * (1.0 - 1e-12):
        raise ParameterError(f"the intersection is empty: radius + radius_aux = {r1 + r2:.6g} < W(P_N, P_aux) = "
                             f"{distance:.6g} (the two balls do not meet); enlarge the radii, e.g. "
                             f"dk.auxiliary_radius(...) for the auxiliary one")
    return CompiledIntersection(inst, aux.X, y_aux_pm, r2, float(distance), time.perf_counter() - t0)
