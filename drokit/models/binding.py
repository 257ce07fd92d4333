"""A fitted linear model bound to evaluation data: the one place that does it.

:func:`bind_fitted_model` turns a fitted model and data ``(X, y)`` into the :class:`~drokit.instance.
DROInstance` of the data under the model's encoding, with the model's coefficients.  ``dk.worst_case``,
``dk.stability``, ``dk.feature_stability`` and ``dk.stability_curve`` use it; its check of ``X`` is
:func:`~drokit.validation.check_features`, the same as the estimators' ``predict``.

With a matrix numerical cost ``||M (x - x')||_p`` the instance is in the coordinates ``x~ = M x``
(:meth:`~drokit.Problem.bind`) and so are the returned coefficients: ``beta~ = M^{-T} beta`` of the model's ``beta``
(:mod:`drokit.metrics.linear_map`); ``inst.metric.linear_map`` maps points back.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..exceptions import DataError, ParameterError
from ..metrics.scales import fitted_spreads, with_fitted_scales
from ..schema import FeatureSchema
from ..instance import DROInstance
from ..validation import check_array_2d, check_features


class FittedBinding(NamedTuple):
    """What :func:`bind_fitted_model` returns: the instance of the data and the model's parameters."""

    inst: DROInstance
    intercept: float
    coef: np.ndarray
    classes: Optional[np.ndarray]
    #: an OT-with-moment set (MOT-DRO): ``(rho, theta1, theta2, divergence)``; ``inst`` then carries its ground
    #: metric ``d`` and the budget ``rho`` as its radius
    moment: Optional[tuple] = None


def bind_fitted_model(model, X, y, ambiguity=None, *, schema: Optional[FeatureSchema] = None, loss=None,
                      sample_weight=None, where: str = "worst_case") -> FittedBinding:
    """The :class:`DROInstance` of ``(X, y)`` under a fitted linear model's encoding, plus its parameters (in the
    coordinates ``x~ = M x`` of a matrix cost: see the module docstring).

    Parameters
    ----------
    model : estimator
        A fitted :class:`~drokit.DROClassifier` / :class:`~drokit.DRORegressor` (its schema, loss,
        ``handle_unknown`` and fitted ball are used), or a fitted linear model with ``coef_`` and
        ``intercept_`` fitted on drokit's design ``[numerical, reference-level dummies]`` of ``schema``
        (then ``schema`` and ``ambiguity`` are required, and ``loss`` unless it is a
        ``LogisticRegression``).
    X, y : array_like
        The evaluation data, checked by :func:`~drokit.validation.check_features` (the columns of fit,
        in the same order, for a model fitted on a DataFrame).
    ambiguity : Wasserstein or None
        The ball whose metric and radius the instance carries; default the estimator's own.
    where : str
        The calling function, named in the messages (``"worst_case"``, ``"stability"``, ...).
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from ..losses.base import CLASSIFICATION
    from .estimators import DROLinearModel
    from .problem import Problem

    if isinstance(model, DROLinearModel):
        try:
            check_is_fitted(model, "result_")
        except NotFittedError:
            raise NotFittedError(f"model: this {type(model).__name__} is not fitted yet; call "
                                 f"model.fit(X, y) before {where}(model, X, y)") from None
        if schema is not None or loss is not None:
            raise ParameterError("schema and loss are taken from the fitted drokit estimator; pass them "
                                 "only for models that are not drokit estimators")
        problem = model._problem()
        if ambiguity is not None:
            # a scaled NormCost measures the features in the spreads the model was fitted with (if it was)
            spreads = fitted_spreads(model, model.schema_.numerical_names)
            problem.ambiguity = ambiguity if spreads is None else \
                with_fitted_scales(ambiguity, None, model.schema_.numerical_names, spreads=spreads)
        elif getattr(model, "ambiguity_", None) is not None:  # the set the model was fitted on (built at fit)
            problem.ambiguity = model.ambiguity_
        schema = model.schema_
        handle_unknown = model.handle_unknown
        if np.ndim(model.result_.coef) == 2:
            raise DataError(f"{where} evaluates binary models; this {type(model).__name__} is the multinomial model "
                            f"of {len(model.classes_)} classes (its certificate, result_, is the worst-case risk of "
                            f"the fit; drokit.certificates.multinomial.worst_case_value evaluates it on other rows)")
        intercept, coef = float(model.result_.intercept), np.asarray(model.result_.coef, dtype=float)
        classes = getattr(model, "classes_", None)
        owner = type(model).__name__
    elif hasattr(model, "coef_") and hasattr(model, "intercept_"):
        if not isinstance(schema, FeatureSchema):
            raise TypeError(
                f"model is a {type(model).__name__}, not a drokit estimator: pass schema= (the "
                f"drokit FeatureSchema whose design matrix [numerical, reference-level dummies] the model "
                f"was fitted on, e.g. FeatureSchema.infer(X_train, categorical_features) or "
                f"clf.schema_) and loss=")
        if loss is None:
            from sklearn.linear_model import LogisticRegression
            if isinstance(model, LogisticRegression):
                loss = "logistic"
            else:
                raise TypeError(f"model is a {type(model).__name__}: pass loss= (e.g. 'logistic', "
                                f"'hinge', 'huber') to say which loss its worst-case risk is of")
        if ambiguity is None:
            raise ParameterError(f"ambiguity is required: a {type(model).__name__} carries no "
                                 f"Wasserstein ball")
        coef_arr = np.asarray(model.coef_, dtype=float)
        if coef_arr.ndim == 2 and coef_arr.shape[0] != 1:
            raise DataError(f"model.coef_ has shape {coef_arr.shape}: only binary / single-output "
                            f"linear models are supported")
        coef = coef_arr.ravel()
        if coef.size != schema.n_encoded:
            raise DataError(f"model.coef_ has {coef.size} entries but schema encodes {schema.n_encoded} "
                            f"columns {schema.encoded_names()[:10]}; fit the model on "
                            f"schema.design(schema.transform(X))")
        intercept = float(np.ravel(np.asarray(model.intercept_, dtype=float))[0]) \
            if np.size(model.intercept_) else 0.0
        problem = Problem(loss=loss, ambiguity=ambiguity)
        handle_unknown = "error"
        classes = getattr(model, "classes_", None)
        owner = f"the schema of the {type(model).__name__}"
    else:
        raise TypeError(f"model must be a fitted drokit DROClassifier / DRORegressor, or a fitted linear "
                        f"model with coef_ and intercept_ (e.g. sklearn LogisticRegression) together with "
                        f"schema= and loss=; got {type(model).__name__}")
    X = check_array_2d(X)
    check_features(X, schema, owner=owner, handle_unknown=handle_unknown)
    n_rows = X.shape[0]
    classification = problem.resolved_task() == CLASSIFICATION
    if classification and classes is not None:
        classes = np.asarray(classes)
        if classes.size != 2:
            raise DataError(f"model.classes_ has {classes.size} classes; only binary classifiers are "
                            f"supported")
    elif classification and y is not None:
        from ..validation import encode_binary_labels, plus_minus_one_labels
        if plus_minus_one_labels(y, n_rows) is None:  # two user labels: sorted, the second is +1
            _, classes = encode_binary_labels(y, n_rows)
    elif y is None:
        raise DataError(f"y is required: the {where} risk is of the loss on (X, y)")
    problem, moment = _moment_parts(problem)
    inst = problem.bind(X, y, schema=schema, handle_unknown=handle_unknown, classes=classes,
                        sample_weight=sample_weight)
    if inst.metric.linear_map is not None:               # the model's beta in the instance's coordinates x~ = M x
        coef = inst.metric.linear_map.coef_forward(coef)
    if moment is not None:
        from .mot_problem import mot_instance
        mot_instance(inst, *moment[1:])                  # the squared numerical cost with numerical moves: refused
        moment = moment[:4]
    return FittedBinding(inst, intercept, coef, classes, moment)


def _moment_parts(problem):
    """``(problem, None)``, or for an :class:`~drokit.OTMoment` set the problem with the Wasserstein ball of the set's
    metric and budget (the instance's data, metric and radius) and ``(rho, theta1, theta2, divergence, exponent)``."""
    import copy

    from ..ambiguity.ot_moment import OTMoment
    from ..ambiguity.wasserstein import Wasserstein
    from ..params import component
    ambiguity = component(problem, "ambiguity")
    if not isinstance(ambiguity, OTMoment):
        return problem, None
    metric, rho, theta1, theta2, divergence, exponent = ambiguity.training_parts()
    ball = copy.copy(problem)
    ball.ambiguity = Wasserstein(metric, radius=rho)
    return ball, (rho, theta1, theta2, divergence, exponent)
