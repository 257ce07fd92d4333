"""Declarative problems: ``Problem(loss, ambiguity).compile(X, y) -> CompiledProblem.solve() -> FitResult``.

Data flows one way: declaration (loss, ground metric, ambiguity set) -> :class:`DROInstance` (data
encoded, weights resolved) -> a registered method (:mod:`drokit.methods`) compiles it into a sparse
:class:`~drokit.conic.ConicProgram` (or its driver's first master) -> :class:`~drokit.models.compiled.CompiledProblem`
solves it with a back-end (:mod:`drokit.solvers`) and certifies it (:mod:`drokit.models.certification`) ->
:class:`FitResult`.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Optional

import numpy as np

from ..ambiguity.ot_moment import OTMoment
from ..ambiguity.wasserstein import Wasserstein
from ..methods import MAX_CONFIGURATIONS, compile_instance
from ..params import component, nonnegative_real
from ..exceptions import DataError, FitInterrupted, ParameterError, SolverError
from ..losses import Loss, get_loss
from ..losses.base import CLASSIFICATION, REGRESSION
from ..metrics.scales import warn_raw_units, with_fitted_scales
from ..schema import FeatureSchema
from .certification import BOUND_ROUNDING, CERTIFIED_GAP, LOWER_BOUND_RTOL
from .compiled import ON_INACCURATE, SEPARABLE_LOG_LOSS, CompiledProblem
from ..instance import DROInstance
from ..validation import check_target, encode_binary_labels, encode_with_classes, plus_minus_one_labels


class Problem:
    """A distributionally robust linear learning problem ``min_beta sup_{Q in ambiguity} E_Q[L]``.

    Parameters
    ----------
    loss : drokit.losses.Loss or str
        A :class:`~drokit.losses.Loss` or its name (``"logistic"``, ``"hinge"``, ``"huber"``, ...).
    ambiguity : Wasserstein or None
        A :class:`~drokit.Wasserstein` ball (default: radius 0.1, default metric).
    task : str or None
        ``"classification"`` or ``"regression"``; inferred from the loss when omitted.
    fit_intercept : bool
        Whether to fit ``beta_0``.
    l1_penalty : float
        ``gamma >= 0``: adds the lasso term ``gamma ||beta||_1`` (intercept excluded) to the objective,
        selvi2022 §4.2's regularized models (r-DRO; r-LR at radius 0).
    l2_penalty : float
        ``alpha >= 0``: adds the ridge term ``alpha ||beta||_2^2`` (intercept excluded), belbasi2023
        §6.3's r-Nom / r-MixF.
    """

    DEFAULT_COMPONENTS = {"ambiguity": Wasserstein}

    def __init__(self, loss="logistic", ambiguity: Optional[Wasserstein] = None,
                 task: Optional[str] = None, fit_intercept: bool = True, l1_penalty: float = 0.0,
                 l2_penalty: float = 0.0):
        self.loss = loss
        self.ambiguity = ambiguity
        self.task = task
        self.fit_intercept = fit_intercept
        self.l1_penalty = l1_penalty
        self.l2_penalty = l2_penalty

    def validated_penalty(self, name: str) -> float:
        """``l1_penalty`` or ``l2_penalty`` as a finite number >= 0 (ParameterError otherwise)."""
        return nonnegative_real(getattr(self, name), name)

    # ------------------------------------------------------------------ binding
    def resolved_loss(self) -> Loss:
        return get_loss(self.loss)

    def resolved_task(self) -> str:
        loss = self.resolved_loss()
        task = self.task or (loss.task if loss.task != "any" else None)
        if task not in (CLASSIFICATION, REGRESSION):
            raise ParameterError(f"task must be 'classification' or 'regression', got {task!r}")
        if loss.task not in ("any", task):
            raise ParameterError(f"loss {loss.name!r} is a {loss.task} loss but task is {task!r}")
        return task

    def resolved_ambiguity(self, X=None, y=None, schema: Optional[FeatureSchema] = None, sample_weight=None):
        """The ambiguity set to compile: a :class:`Wasserstein` ball or an :class:`Intersection`; an
        :class:`~drokit.AmbiguitySet` is built first from the training data ``X, y`` (``schema``: their
        inferred :class:`FeatureSchema`)."""
        from ..ambiguity.base import build_ambiguity
        from ..ambiguity.intersection import Intersection
        amb = component(self, "ambiguity")
        if schema is None and X is not None:
            schema = FeatureSchema.infer(X)
        amb = build_ambiguity(amb, X, y, schema, sample_weight)
        if X is not None and isinstance(amb, Wasserstein) and _needs_scales(amb):
            # NormCost(scale=...): each numerical feature measured in its spread on these (training) rows
            data = schema.transform(X)
            amb = with_fitted_scales(amb, data.X, schema.numerical_names,
                                     sample_probabilities(sample_weight, data.n_samples))
        if isinstance(amb, OTMoment):
            return amb
        if not isinstance(amb, (Wasserstein, Intersection)):
            raise ParameterError(f"ambiguity must be a drokit Wasserstein ball, an Intersection of two, an OTMoment "
                                 f"set or an AmbiguitySet that builds one, got {type(amb).__name__}")
        if isinstance(amb, Wasserstein) and amb.center is not None:
            raise ParameterError("a Wasserstein ball with center=(X_aux, y_aux) is fitted only inside an "
                                 "Intersection (ball_around_training_data & ball_around_auxiliary_data)")
        return amb

    def built(self, X, y, *, categorical_features=None, categories="auto", sample_weight=None) -> "Problem":
        """This problem with its ambiguity set built on the training data (``self`` when nothing is to
        build)."""
        from ..ambiguity.base import AmbiguitySet
        if not isinstance(self.ambiguity, AmbiguitySet) and not _needs_scales(component(self, "ambiguity")):
            return self
        schema = FeatureSchema.infer(X, categorical_features, categories)
        out = copy.copy(self)
        out.ambiguity = self.resolved_ambiguity(X, y, schema, sample_weight)
        return out

    def bind(self, X, y, *, categorical_features=None, categories="auto",
             schema: Optional[FeatureSchema] = None, handle_unknown: str = "error",
             classes=None, sample_weight=None) -> DROInstance:
        """Encode the data and resolve the metric: everything a compile path needs.

        ``classes``: the two class labels (``classes[0] -> -1``, ``classes[1] -> +1``) to encode ``y``
        with, e.g. a fitted model's ``classes_`` when evaluating it on other data (which may then hold one
        class only; a label outside ``classes`` raises :class:`~drokit.DataError`); by default the
        labels are taken from ``y`` (+-1 as they are, otherwise the larger of two labels is +1).
        ``sample_weight``: nonnegative weights of the samples; the nominal distribution is then
        ``P_N = sum_n p_n delta_n`` with ``p = sample_weight / sum(sample_weight)``.

        A matrix numerical cost ``||M (x - x')||_p`` binds in the coordinates ``x~ = M x``: the instance's
        numerical data are ``X M'`` (mutable columns), its metric the unit-weight norm, and ``inst.metric.linear_map``
        keeps ``M`` (:mod:`drokit.metrics.linear_map`); a model of this instance has coefficients ``beta~ = M^{-T}
        beta``."""
        loss = self.resolved_loss()
        if getattr(loss, "outer_approximation", False):  # its tangents grow during a solve: not the user's copy
            loss = copy.deepcopy(loss)
        task = self.resolved_task()
        if schema is None:
            schema = FeatureSchema.infer(X, categorical_features, categories)
        amb = self.resolved_ambiguity(X, y, schema, sample_weight)
        if isinstance(amb, OTMoment):
            raise ParameterError("an OTMoment set binds through Problem.compile / the estimators (MOT-DRO, a "
                                 "MOTInstance); dk.worst_case(model, X, y) evaluates a fitted model under it")
        radius = amb.validated_radius()
        metric = amb.validated_metric()
        data = schema.transform(X, handle_unknown=handle_unknown)
        if task == CLASSIFICATION and classes is not None:
            y_enc = encode_with_classes(y, np.asarray(classes), data.n_samples)
        elif task == CLASSIFICATION:
            y_enc = plus_minus_one_labels(y, data.n_samples)
            if y_enc is None:
                y_enc, _ = encode_binary_labels(y, data.n_samples)
        else:
            y_enc = check_target(y, data.n_samples)
        resolved = metric.resolve(schema, transformed=True)
        if resolved.linear_map is not None:
            _check_matrix_cost(loss, amb)
            data = replace(data, X=resolved.linear_map.points_forward(data.X))
        return DROInstance(loss=loss, task=task, schema=schema, data=data, y=y_enc, metric=resolved,
                           radius=radius, fit_intercept=bool(self.fit_intercept),
                           sample_weight=sample_probabilities(sample_weight, data.n_samples),
                           l1_penalty=self.validated_penalty("l1_penalty"),
                           l2_penalty=self.validated_penalty("l2_penalty"))

    def linear_map(self, schema: FeatureSchema):
        """The change of coordinates ``x~ = M x`` that :meth:`bind` applies to data of ``schema`` (a
        :class:`~drokit.metrics.linear_map.LinearMap` for a matrix numerical cost, else ``None``)."""
        metric = getattr(component(self, "ambiguity"), "validated_metric", None)
        return None if metric is None else metric().resolve(schema, transformed=True).linear_map

    def compile(self, X, y, method: str = "auto", *, categorical_features=None, categories="auto",
                max_configurations: int = MAX_CONFIGURATIONS, sample_weight=None) -> "CompiledProblem":
        """Bind the data and compile with ``method`` (``"auto"`` or a registered name, :mod:`drokit.methods`; for the
        cutting plane: its first master)."""
        from ..ambiguity.intersection import Intersection
        t0 = time.perf_counter()
        problem = self.built(X, y, categorical_features=categorical_features, categories=categories,
                             sample_weight=sample_weight)
        if problem is not self:  # an AmbiguitySet: compile the set it builds on these data
            return problem.compile(X, y, method, categorical_features=categorical_features,
                                   categories=categories, max_configurations=max_configurations,
                                   sample_weight=sample_weight)
        ambiguity = self.resolved_ambiguity()
        if isinstance(ambiguity, OTMoment):
            # optimal transport with a moment constraint binds to a MOTInstance, which the "mot" method compiles
            from .mot_problem import CompiledMOT, mot_instance
            metric, rho, theta1, theta2, divergence, exponent = ambiguity.training_parts()
            ball = copy.copy(self)
            ball.ambiguity = Wasserstein(metric, radius=rho)     # the data bound with the set's metric d and budget
            training = ball.bind(X, y, categorical_features=categorical_features, categories=categories,
                                 sample_weight=sample_weight)
            _refuse_penalty_in_coordinates(training)
            bound = mot_instance(training, theta1, theta2, divergence, exponent)
            return CompiledMOT(bound, compile_instance(bound, method, max_configurations), time.perf_counter() - t0)
        if isinstance(ambiguity, Intersection):
            # two balls bind to an IntersectionInstance, which the registry's "intersection" method compiles
            from .intersection_problem import CompiledIntersection, bind_intersection
            bound = bind_intersection(self, X, y, categorical_features=categorical_features, categories=categories,
                                      sample_weight=sample_weight)
            compiled = compile_instance(bound, method, max_configurations)
            return CompiledIntersection(bound, compiled, time.perf_counter() - t0)
        inst = self.bind(X, y, categorical_features=categorical_features, categories=categories,
                         sample_weight=sample_weight)
        _refuse_penalty_in_coordinates(inst)
        if inst.metric.linear_map is None:    # a matrix cost is the user's choice of units
            warn_raw_units(inst.metric.numerical, inst.data.X, inst.schema.numerical_names,
                           np.asarray(inst.metric.gamma, dtype=float))
        fitted_on = inst.fitting_view()
        compiled = compile_instance(fitted_on, method, max_configurations)
        kind = CompiledProblem if inst.metric.linear_map is None else CompiledInCoordinates
        out = kind(fitted_on, compiled, time.perf_counter() - t0, evaluation_instance=inst)
        out.max_configurations = int(max_configurations)
        return out


class CompiledInCoordinates(CompiledProblem):
    """The compiled problem of a matrix numerical cost ``||M (x - x')||_p``: the program is built on the data
    ``x~ = M x`` with the unit-weight norm (:meth:`Problem.bind`), and :meth:`solve` returns the model in the
    original coordinates, ``beta = M' beta~`` (:meth:`~drokit.metrics.linear_map.LinearMap.result_back`; also the
    result carried by a :class:`~drokit.SolverError` or :class:`~drokit.FitInterrupted`).  Objective, bounds and
    multipliers are invariant; the program, its exports and ``result.primal`` stay in ``x~``."""

    def solve(self, *args, **kwargs):
        """:meth:`CompiledProblem.solve`, with the model mapped back to the original coordinates."""
        linear_map = self.evaluation_instance.metric.linear_map
        try:
            result = super().solve(*args, **kwargs)
        except (SolverError, FitInterrupted) as exc:
            exc.result = linear_map.result_back(getattr(exc, "result", None))
            raise
        return linear_map.result_back(result)


def _refuse_penalty_in_coordinates(inst) -> None:
    """A penalty with a matrix cost: refused (it would penalize ``beta~``, not the user's ``beta``)."""
    if inst.metric.linear_map is not None and inst.penalized:
        raise ParameterError("l1_penalty / l2_penalty penalize the coefficients in the original coordinates, "
                             "which a NormCost with a matrix fits in x~ = M x (beta = M' beta~): use 0 with a "
                             "matrix cost")


def refuse_matrix_cost(metric, where: str) -> None:
    """Raise :class:`ParameterError` when ``metric`` (a GroundMetric) has a matrix numerical cost, which ``where``
    does not support (the change of coordinates ``x~ = M x`` does not flow through it)."""
    from ..metrics.ground import GroundMetric
    if isinstance(metric, GroundMetric) and getattr(component(metric, "numerical"), "matrix", None) is not None:
        raise ParameterError(f"a NormCost with a matrix (||M (x - x')||_p) is not supported with {where} yet: use "
                             f"a diagonal NormCost(p, weights=...), or transform the numerical columns yourself "
                             f"(X_num @ M.T) and use NormCost(p) on them")


def _check_matrix_cost(loss: Loss, ambiguity) -> None:
    """What the change of coordinates of a matrix cost does not carry where data are bound
    (:mod:`drokit.metrics.linear_map`): an adversarial loss (an l_p attack in the original coordinates) and
    intersections (the auxiliary sample and the emptiness check are in raw units).  The penalties are refused
    where a model is fitted (:meth:`Problem.compile`): they penalize ``beta``, not ``beta~``."""
    from ..ambiguity.intersection import Intersection
    if isinstance(ambiguity, Intersection):
        refuse_matrix_cost(ambiguity.validated_metric(), "an Intersection of Wasserstein balls")
    if getattr(loss, "at", None) is not None:
        raise ParameterError(f"an adversarial loss ({loss!r}) attacks an l_p ball in the original coordinates, which "
                             f"a NormCost with a matrix fits in x~ = M x: use a diagonal NormCost with it")


def _needs_scales(ambiguity) -> bool:
    """Whether ``ambiguity`` is a Wasserstein ball whose numerical ``NormCost(scale=...)`` is still to be fitted."""
    from ..metrics.ground import GroundMetric
    if not isinstance(ambiguity, Wasserstein):
        return False
    metric = component(ambiguity, "metric")
    if not isinstance(metric, GroundMetric):          # a wrong type: the ball's validation says so
        return False
    return getattr(component(metric, "numerical"), "scale", None) is not None


def sample_probabilities(sample_weight, n_samples: int):
    """``w / sum(w)`` checked (``None`` stays ``None``: uniform); uniform weights also give ``None``."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=float)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise DataError(f"sample_weight must be a 1-D array with one weight per sample ({n_samples}), "
                        f"got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise DataError("sample_weight must be finite and >= 0")
    total = float(w.sum())
    if not total > 0:
        raise DataError("sample_weight must not be all zero")
    if np.all(w == w[0]):
        return None
    return w / total


#: the declaration here; the compiled problem, its solve and its certificate in :mod:`.compiled` and
#: :mod:`.certification` (names re-exported for the old import path)
__all__ = ["Problem", "CompiledProblem", "CompiledInCoordinates", "refuse_matrix_cost", "sample_probabilities",
           "ON_INACCURATE", "CERTIFIED_GAP", "LOWER_BOUND_RTOL", "BOUND_ROUNDING", "SEPARABLE_LOG_LOSS"]
