"""``dk.stability``, ``dk.feature_stability`` and ``dk.stability_curve`` on fitted models.

A model is bound to the evaluation data once (encoding, labels, the metric's weights) and then turned into
an :class:`~.adversaries.Adversary` -- for the whole feature set or for one feature at a time -- whose
criterion :func:`~.dual.solve_stability` computes.

Models: drokit's :class:`~drokit.DROClassifier` / :class:`~drokit.DRORegressor`, fitted scikit-learn linear
models (``coef_``, ``intercept_``; fitted on drokit's design ``[numerical, reference-level dummies]``,
which is the plain numeric ``X`` when there are no categorical columns) -- both exact -- a binary
scikit-learn ``MLPClassifier`` (gradient ascent on the numerical features, exact enumeration of a
categorical feature's levels in the feature criterion), or a callable ``loss_and_grad(X, y) -> (losses,
gradients)`` on numeric ``X``.

A matrix numerical cost ``||M (x - x')||_2^2`` (:class:`~drokit.NormCost` ``matrix=M``, e.g.
``NormCost.mahalanobis(Sigma)``, in the :class:`~drokit.OTMoment`'s metric) is evaluated for linear models in the
coordinates ``x~ = M x`` (:func:`drokit.models.binding.bind_fitted_model`; :mod:`drokit.metrics.linear_map`), and
the moved points of :func:`stability` are mapped back, ``x = M^{-1} x~``.  MLPs and callables move the raw features
with per-feature weights, and :func:`feature_stability` moves one original feature at a time (a direction that is
not a coordinate of ``x~``): both refuse a matrix cost.  Another numerical norm ``N``
(:class:`~drokit.metrics.norms.NumericalNorm`, e.g. :class:`~drokit.GroupNormCost`) is used squared, ``N(Gamma (x -
x'))^2``, by the linear models' exact adversary (:mod:`.linear`), :func:`feature_stability` included; MLPs and
callables (gradient ascent on ``||Gamma delta||_2^2``) refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from ...ambiguity.ot_moment import OTMoment
from ...ambiguity.wasserstein import Wasserstein
from ...exceptions import DataError, ParameterError
from ...losses import get_loss
from ...losses.base import Loss
from ...metrics.scales import fitted_metric
from .adversaries import Adversary, FiniteCandidates
from .dual import solve_stability
from .gradient import GradientAdversary, mlp_loss_and_grad
from .linear import LinearModelAdversary
from .result import StabilityResult
from .transforms import Squared, ZeroOne


def resolve_stability_loss(loss) -> Loss:
    """A loss for the criterion: any drokit loss name/object, ``"squared"`` or ``"zero_one"`` (error rate)."""
    if isinstance(loss, str) and loss.lower() in ("zero_one", "0-1", "01", "error", "error_rate"):
        return ZeroOne()
    if isinstance(loss, str) and loss.lower() in ("squared", "squared_error", "l2"):
        return Squared()
    return get_loss(loss)


def _ambiguity(ambiguity) -> OTMoment:
    if ambiguity is None:
        return OTMoment()
    if not isinstance(ambiguity, OTMoment):
        raise ParameterError(f"ambiguity must be a drokit OTMoment (the stability criterion's perturbation "
                             f"set), got {type(ambiguity).__name__}")
    return ambiguity


def _default_sklearn_loss(model) -> Optional[str]:
    name = type(model).__name__
    if name == "LogisticRegression":
        return "logistic"
    if name in ("LinearSVC", "LinearSVR"):
        return "hinge" if name == "LinearSVC" else "epsilon_insensitive"
    if name == "SGDClassifier":
        return {"log_loss": "logistic", "log": "logistic", "hinge": "hinge"}.get(getattr(model, "loss", None))
    if name in ("LinearRegression", "Ridge", "RidgeCV", "Lasso", "LassoCV", "ElasticNet", "ElasticNetCV"):
        return "squared"
    return None


@dataclass
class BoundModel:
    """A model bound to evaluation data: everything needed to build adversaries for any feature subset."""

    kind: str                                  # "linear" | "gradient" | "callable"
    feature_names: List[str]
    feature_kinds: List[str]                   # "numerical" | "categorical"
    loss: Optional[Loss] = None
    inst: object = None                        # DROInstance (linear and MLP)
    intercept: float = 0.0
    coef: Optional[np.ndarray] = None
    classes: object = None
    loss_and_grad: Optional[Callable] = None
    design: Optional[np.ndarray] = None        # model input rows (gradient kinds)
    y_model: Optional[np.ndarray] = None       # the y passed to loss_and_grad
    gamma: Optional[np.ndarray] = None         # numerical weights
    steps: int = 100
    notes: List[str] = field(default_factory=list)

    # -------------------------------------------------------------- adversaries
    def adversary(self, only: Optional[str] = None) -> Adversary:
        """The adversary over all features, or with only feature ``only`` movable (label fixed)."""
        if self.kind == "linear":
            inst = self.inst
            if only is not None:
                inst = replace(inst, metric=self._restricted_metric(only))
            return LinearModelAdversary(inst, self.intercept, self.coef, self.loss, classes=self.classes)
        movable = np.flatnonzero(np.isfinite(self.gamma) & (self.gamma > 0))
        if only is not None:
            kind = self.feature_kinds[self.feature_names.index(only)]
            if kind == "categorical":
                return self._categorical_candidates(only)
            j = self._numerical_names().index(only)
            movable = np.array([j]) if np.isfinite(self.gamma[j]) and self.gamma[j] > 0 else np.zeros(0, int)
        return GradientAdversary(self.loss_and_grad, self.design, self.y_model, movable, self.gamma[movable],
                                 steps=self.steps, frame_builder=self._frame)

    def _numerical_names(self) -> List[str]:
        return [n for n, k in zip(self.feature_names, self.feature_kinds) if k == "numerical"]

    def _restricted_metric(self, only: str):
        metric = self.inst.metric
        gamma = np.full_like(np.asarray(metric.gamma, dtype=float), np.inf)
        delta = np.full_like(np.asarray(metric.delta, dtype=float), np.inf)
        schema = self.inst.schema
        if only in schema.numerical_names:
            j = schema.numerical_names.index(only)
            gamma[j] = metric.gamma[j]
        else:
            j = schema.categorical_names.index(only)
            delta[j] = metric.delta[j]
        return replace(metric, gamma=gamma, delta=delta, kappa=np.inf)

    def _categorical_candidates(self, name: str) -> FiniteCandidates:
        """Feature ``name`` (categorical) set to each of its levels: exact enumeration through the model."""
        inst = self.inst
        schema = inst.schema
        l = schema.categorical_names.index(name)
        levels = int(schema.levels[l])
        delta = float(inst.metric.delta[l])
        Z0 = inst.data.Z
        losses, costs = [], []
        for v in range(levels):
            Z = Z0.copy()
            Z[:, l] = v
            design = schema.design(replace(inst.data, Z=Z)).toarray()
            loss_v, _ = self.loss_and_grad(design, self.y_model)
            losses.append(np.asarray(loss_v, dtype=float))
            costs.append(delta * inst.metric.units[l][Z0[:, l], v] if np.isfinite(delta)
                         else np.where(Z0[:, l] == v, 0.0, np.inf))
        L, C = np.column_stack(losses), np.column_stack(costs)
        # nominal = the observed level: reorder so that column 0 is it
        rows = np.arange(inst.n_samples)
        L = np.column_stack([L[rows, Z0[:, l]], L])
        C = np.column_stack([np.zeros(inst.n_samples), np.where(C == 0, np.inf, C)])
        return FiniteCandidates(L, C, nominal=0)

    def _frame(self, design_rows: np.ndarray, samples: np.ndarray):
        import pandas as pd
        from ..worst_case_result import take_levels
        if self.inst is None:
            return pd.DataFrame(design_rows, columns=self.feature_names)
        schema = self.inst.schema
        out = {name: design_rows[:, j] for j, name in enumerate(schema.numerical_names)}
        for j, (name, cats) in enumerate(zip(schema.categorical_names, schema.categories)):
            out[name] = take_levels(cats, self.inst.data.Z[samples, j])
        return pd.DataFrame(out)[list(schema.feature_names)]


def bind_model(model, X, y, ambiguity: OTMoment, *, loss=None, schema=None, steps: int = 100,
               where: str = "stability") -> BoundModel:
    """Bind ``model`` to ``(X, y)`` under ``ambiguity``'s metric (see the module docstring).  ``X`` is
    checked by :func:`drokit.validation.check_features`, as by the estimators' ``predict``
    (through :func:`drokit.models.binding.bind_fitted_model` for linear models)."""
    from ...models.binding import bind_fitted_model
    from ...models.estimators import DROLinearModel
    from ...validation import check_array_2d
    from ...schema import FeatureSchema

    from ...metrics.norms import require_lp_norm
    from ...models.problem import refuse_matrix_cost

    metric = ambiguity.validated_metric()
    ball = Wasserstein(metric, radius=0.0)  # only its metric is used: encoding and weights
    if (callable(model) and not hasattr(model, "predict")) or type(model).__name__ == "MLPClassifier":
        refuse_matrix_cost(metric, f"{where} of an MLP or a callable (they move the raw features; linear models "
                                   f"support it)")
        require_lp_norm(metric._parts()[0], f"{where} of an MLP or a callable (gradient ascent on the squared "
                                            f"Euclidean cost ||Gamma delta||_2^2; linear models support any numerical "
                                            f"norm)")
    if callable(model) and not hasattr(model, "predict"):
        return _bind_callable(model, X, y, metric, steps)
    if type(model).__name__ == "MLPClassifier":
        return _bind_mlp(model, X, y, metric, schema, loss, steps)
    if isinstance(model, DROLinearModel):
        inst, intercept, coef, classes, _ = bind_fitted_model(model, X, y, ball, where=where)
        # an adversarially trained model's risk is of its plain loss (the attack is a training device)
        stability_loss = resolve_stability_loss(loss) if loss is not None else getattr(inst.loss, "inner", inst.loss)
    elif hasattr(model, "coef_") and hasattr(model, "intercept_"):
        if loss is None:
            loss = _default_sklearn_loss(model)
            if loss is None:
                raise ParameterError(f"model is a {type(model).__name__}: pass loss= (e.g. 'logistic', "
                                     f"'hinge', 'squared', 'absolute', 'zero_one') to say which loss its "
                                     f"risk is of")
        stability_loss = resolve_stability_loss(loss)
        _check_task(model, stability_loss)
        if schema is None:
            schema = FeatureSchema.infer(check_array_2d(X))
        inst, intercept, coef, classes, _ = bind_fitted_model(model, X, y, ball, schema=schema, loss=stability_loss,
                                                           where=where)
    else:
        raise TypeError(f"model must be a fitted drokit estimator, a fitted scikit-learn linear model, a "
                        f"binary MLPClassifier or a callable loss_and_grad(X, y); got {type(model).__name__}")
    task = inst.task
    if stability_loss.task not in ("any", task):
        raise ParameterError(f"loss {stability_loss.name!r} is a {stability_loss.task} loss but the model "
                             f"is a {task} model")
    schema = inst.schema
    kinds = ["numerical" if j in schema.numerical else "categorical" for j in range(len(schema.feature_names))]
    return BoundModel("linear", list(schema.feature_names), kinds, loss=stability_loss, inst=inst,
                      intercept=float(intercept), coef=np.asarray(coef, dtype=float), classes=classes)


def _check_task(model, loss: Loss) -> None:
    """A scikit-learn classifier needs a classification loss and a regressor a regression loss."""
    from sklearn.base import is_classifier, is_regressor
    task = "classification" if is_classifier(model) else "regression" if is_regressor(model) else None
    if task is not None and loss.task not in ("any", task):
        raise ParameterError(f"loss {loss.name!r} is a {loss.task} loss but the model "
                             f"({type(model).__name__}) is a {task} model")


def _bind_mlp(model, X, y, metric, schema, loss, steps) -> BoundModel:
    from sklearn.utils.validation import check_is_fitted
    from ...losses.base import CLASSIFICATION as _C
    from ...instance import DROInstance
    from ...validation import check_array_2d, check_features, encode_with_classes
    from ...schema import FeatureSchema

    check_is_fitted(model)
    if loss is not None and resolve_stability_loss(loss).name != "logistic":
        raise ParameterError("an MLPClassifier is evaluated with its own log-loss (loss='logistic'); the 0/1 "
                             "loss needs minimal-perturbation attacks, which drokit does not run")
    classes = np.asarray(model.classes_)
    if classes.size != 2:
        raise DataError(f"model.classes_ has {classes.size} classes; only binary classifiers are supported")
    if schema is None:
        schema = FeatureSchema.infer(check_array_2d(X))
    data = check_features(X, schema, owner=f"the schema of the {type(model).__name__}")
    design = schema.design(data).toarray()
    if design.shape[1] != model.n_features_in_:
        raise DataError(f"the design of X has {design.shape[1]} columns but the model was fitted on "
                        f"{model.n_features_in_}; fit it on schema.design(schema.transform(X))")
    y_pm = encode_with_classes(y, classes, data.n_samples)
    resolved = fitted_metric(metric, data.X, schema.numerical_names).resolve(schema)   # scale= on these rows
    inst = DROInstance(loss=get_loss("logistic"), task=_C, schema=schema, data=data, y=y_pm, metric=resolved,
                       radius=0.0)
    gamma = np.asarray(resolved.gamma, dtype=float)
    kinds = ["numerical" if j in schema.numerical else "categorical" for j in range(len(schema.feature_names))]
    notes = ["MLP: numerical features move by gradient ascent; categorical features stay fixed in the full "
             "criterion (the feature criterion enumerates a categorical feature's levels exactly)"] \
        if schema.n_categorical else []
    return BoundModel("gradient", list(schema.feature_names), kinds, loss=get_loss("logistic"), inst=inst,
                      classes=classes, loss_and_grad=mlp_loss_and_grad(model, classes[1]), design=design,
                      y_model=y_pm, gamma=gamma, steps=steps, notes=notes)


def _bind_callable(model, X, y, metric, steps) -> BoundModel:
    from ...validation import check_array_2d, check_features
    from ...schema import FeatureSchema
    schema = FeatureSchema.infer(check_array_2d(X))
    if schema.n_categorical:
        raise DataError("a callable model takes numeric X only; encode categorical columns first")
    data = check_features(X, schema, owner="the callable model")
    gamma = np.asarray(fitted_metric(metric, data.X, schema.numerical_names).resolve(schema).gamma, dtype=float)
    y_arr = np.asarray(y)
    if y_arr.shape[0] != data.n_samples:
        raise DataError(f"y has {y_arr.shape[0]} entries but X has {data.n_samples} rows")
    names = list(schema.feature_names)
    return BoundModel("callable", names, ["numerical"] * len(names), loss_and_grad=model, design=data.X,
                      y_model=y_arr, gamma=gamma, steps=steps)


# ================================================================== public functions
METHODS = ("dual", "conic")


def stability(model, X, y, risk: float, ambiguity: OTMoment | None = None, *, loss=None, schema=None,
              sample_weight=None, method: str = "dual", steps: int = 100, verbose: bool = False,
              xtol: float = 1e-13) -> StabilityResult:
    """The stability criterion ``R(beta, r)`` of a fitted model (blanchet2024 (P)).

    ``R`` is the least OT-with-moment cost (moving samples at price ``theta1`` times their new weight,
    reweighting them at price ``theta2`` times a KL or chi-square divergence; :class:`~drokit.OTMoment`)
    of a perturbation of ``(X, y)`` under which the model's risk reaches ``risk``:

        R = inf { M_c(Q, P0 x delta_1) : E_Q[W l(beta, Z)] >= r }
          = sup_{h >= 0} h r - theta2 log E_P0 exp( max_z [h l(z) - theta1 d(z, z_hat)] / theta2 )   (KL, (2.2))

    solved in its one-dimensional concave dual (spec §2.3, errata §8), with the most sensitive
    distribution recovered from ``h*`` (Remark 4).

    Parameters
    ----------
    model : estimator or callable
        Fitted :class:`~drokit.DROClassifier` / :class:`~drokit.DRORegressor`, scikit-learn linear model
        (``LogisticRegression``, ``LinearSVC``, ``LinearRegression``, ... fitted on drokit's design, e.g.
        the numeric ``X``), binary ``MLPClassifier``, or callable ``loss_and_grad(X, y)``.
    X, y : array_like
        Evaluation data (the paper uses held-out data); labels among the model's classes.
    risk : float
        The threshold ``r`` (a loss level; an error rate with ``loss="zero_one"``).
    ambiguity : OTMoment or None
        :class:`~drokit.OTMoment` (default ``theta1 = theta2 = 1``, KL, squared Euclidean cost).
    loss : drokit.losses.Loss or str or None
        The loss whose risk is measured: the model's own by default (drokit estimators; logistic for
        ``LogisticRegression``, hinge for ``LinearSVC``, squared for ``LinearRegression``, ...); ``"zero_one"``
        measures the error rate (linear classifiers).
    schema : FeatureSchema or None
        The :class:`~drokit.schema.FeatureSchema` a non-drokit model was fitted with (inferred from
        ``X`` by default).
    sample_weight : array_like of shape (n_samples,) or None
        Weights of the evaluation samples (``P0 = sum_i p_i delta_i``, ``p`` normalized); uniform by
        default.
    method : {"dual", "conic"}
        ``"dual"`` (default: the one-dimensional dual, every model) or ``"conic"`` (the corrected
        Theorems 2 / 3 through drokit's conic layer and Clarabel: a cross-check for linear models with a
        max-affine loss, numerical features only and ``theta2 < inf``; no distribution is recovered).
    steps : int
        Gradient-ascent steps per dual iteration (MLP / callable models).
    verbose : bool
        Print the dual iterations.

    Returns
    -------
    StabilityResult
        :class:`~drokit.evaluation.stability.StabilityResult`: ``value``, ``status`` (``zero``,
        ``finite``, ``boundary``, ``infeasible``), ``h``, ``alpha``, ``weights``, ``atoms`` (the most
        sensitive distribution, with the moved points' features), ``excess_risk`` (corruption,
        reweighting), ``dual_value``, ``primal_cost``, ``gap``, ``mean_weight``, ``attained_risk``,
        ``summary()``.
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {list(METHODS)}, got {method!r}")
    amb = _ambiguity(ambiguity)
    theta1, theta2, divergence = amb.validated()
    bound = bind_model(model, X, y, amb, loss=loss, schema=schema, steps=steps, where="stability")
    adversary = bound.adversary()
    if method == "conic":
        if sample_weight is not None:
            raise ParameterError("method='conic' takes no sample_weight; use method='dual'")
        return _conic(bound, adversary, risk, theta1, theta2, divergence)
    res = solve_stability(adversary, risk, theta1, theta2, divergence, verbose=verbose, xtol=xtol,
                          sample_weight=sample_weight)
    res.notes.extend(bound.notes)
    return _points_in_original_coordinates(res, bound)


def _points_in_original_coordinates(res: StabilityResult, bound: BoundModel) -> StabilityResult:
    """The moved points of ``res`` (numerical columns of ``res.atoms``) mapped back from the coordinates
    ``x~ = M x`` of a matrix cost, ``x = M^{-1} x~``; ``res`` as it is otherwise."""
    linear_map = bound.inst.metric.linear_map if bound.kind == "linear" else None
    if linear_map is None or res.atoms is None:
        return res
    names = list(bound.inst.schema.numerical_names)
    if all(name in res.atoms.columns for name in names):
        res.atoms[names] = linear_map.points_back(res.atoms[names].to_numpy(dtype=float))
    return res


def _conic(bound: BoundModel, adversary, risk, theta1, theta2, divergence) -> StabilityResult:
    """The corrected conic programs (blanchet2024 Thms 2-3, spec §3.1) for a linear max-affine model."""
    import time
    from .conic import conic_stability

    pieces = bound.loss.pieces if bound.loss is not None else None
    if not (isinstance(adversary, LinearModelAdversary) and pieces is not None and adversary.E.shape[1] == 1):
        raise ParameterError("method='conic' needs a linear model with a max-affine loss (hinge, absolute, "
                             "pinball, epsilon_insensitive), numerical features only and fixed labels; use "
                             "method='dual'")
    if np.isinf(theta2):
        raise ParameterError("method='conic' needs theta2 < inf (Theorems 2-3 have a reweighting part)")
    t0 = time.perf_counter()
    nominal = float(np.mean(adversary.nominal_losses()))
    sup = adversary.sup_losses(theta1)
    r_max = float(np.max(sup))
    base = dict(risk=float(risk), nominal_risk=nominal, max_risk=r_max, theta1=theta1, theta2=theta2,
                divergence=divergence, method="conic")
    if risk <= nominal:
        return StabilityResult(value=0.0, status="zero", **base)
    if risk > r_max:
        return StabilityResult(value=np.inf, status="infeasible", **base)
    out = conic_stability(adversary.E[:, 0], pieces, adversary.nu, risk, theta1, theta2, divergence)
    alpha = out.alpha if out.alpha is not None else float("nan")
    return StabilityResult(value=float(out.value), status="finite", h=float(out.h), alpha=alpha,
                           dual_value=float(out.value), primal_cost=float("nan"), time=time.perf_counter() - t0,
                           notes=[f"conic program solved by {out.solver} ({out.status}); no distribution "
                                  f"recovered"], **base)


@dataclass
class FeatureStability:
    """Per-feature criteria ``R_j`` (only feature ``j`` may move; blanchet2024 §2.4): ``table`` sorted by value
    ascending (the most fragile feature first), ``full`` the all-features criterion, ``results`` per feature."""

    table: object
    full: Optional[StabilityResult]
    results: Dict[str, StabilityResult]

    @property
    def ranking(self) -> List[str]:
        """Feature names from the most fragile (smallest ``R_j``) to the most stable."""
        return list(self.table["feature"])

    def plot(self, top: int = 10, ax=None):
        """Horizontal bars of the ``top`` smallest ``R_j`` (needs matplotlib)."""
        from .plots import plot_feature_stability
        return plot_feature_stability(self, top=top, ax=ax)


def feature_stability(model, X, y, risk: float, ambiguity: OTMoment | None = None, *,
                      features: Optional[Sequence[str]] = None, loss=None, schema=None, sample_weight=None,
                      steps: int = 100, include_full: bool = True, verbose: bool = False) -> FeatureStability:
    """``R_j(beta, r)`` for each feature ``j``: the criterion when only feature ``j`` may be perturbed (its
    own weight in the metric; every other feature and the label fixed; blanchet2024 §2.4).  A categorical
    feature is perturbed as one feature (its levels at its mismatch cost), not as one-hot columns.
    ``R_j >= R`` (fewer directions); the smallest ``R_j`` is the most fragile feature.

    ``features``: names to evaluate (default all).  ``include_full`` also computes ``R`` itself.
    Progress per feature with ``verbose``.
    """
    import pandas as pd

    amb = _ambiguity(ambiguity)
    theta1, theta2, divergence = amb.validated()
    bound = bind_model(model, X, y, amb, loss=loss, schema=schema, steps=steps, where="feature_stability")
    if bound.kind == "linear" and bound.inst.metric.linear_map is not None:
        raise ParameterError("feature_stability moves one original feature at a time, which a NormCost with a matrix "
                             "(||M (x - x')||) prices along a column of M, not a coordinate: use a diagonal NormCost "
                             "(weights=...) for the per-feature criteria, or dk.stability for the whole feature set")
    names = list(bound.feature_names) if features is None else list(features)
    unknown = [n for n in names if n not in bound.feature_names]
    if unknown:
        raise ParameterError(f"features {unknown} are not columns of X; columns are {bound.feature_names}")
    results: Dict[str, StabilityResult] = {}
    rows = []
    for i, name in enumerate(names):
        res = solve_stability(bound.adversary(only=name), risk, theta1, theta2, divergence, points=False,
                              sample_weight=sample_weight)
        results[name] = res
        kind = bound.feature_kinds[bound.feature_names.index(name)]
        rows.append(dict(feature=name, kind=kind, value=res.value, status=res.status, h=res.h,
                         corruption=res.excess_risk[0], reweighting=res.excess_risk[1]))
        if verbose:
            print(f"  feature {i + 1}/{len(names)} {name!r}: R = {res.value:.6g} ({res.status})")
    table = pd.DataFrame(rows).sort_values("value", kind="stable").reset_index(drop=True)
    full = solve_stability(bound.adversary(), risk, theta1, theta2, divergence, points=False,
                           sample_weight=sample_weight) if include_full else None
    return FeatureStability(table=table, full=full, results=results)


@dataclass
class StabilityCurve:
    """``R(beta, r)`` over a grid of thresholds (nondecreasing and convex in ``r``)."""

    risks: np.ndarray
    values: np.ndarray
    statuses: List[str]
    results: List[StabilityResult]
    nominal_risk: float

    def plot(self, ax=None, label: Optional[str] = None):
        """``R`` against ``r`` (needs matplotlib)."""
        from .plots import plot_stability_curve
        return plot_stability_curve(self, ax=ax, label=label)


def stability_curve(model, X, y, risks: Sequence[float], ambiguity: OTMoment | None = None, *, loss=None,
                    schema=None, sample_weight=None, steps: int = 100, verbose: bool = False) -> StabilityCurve:
    """``R(beta, r)`` for every ``r`` in ``risks`` (sorted), each solve warm-started at the previous ``h*``."""
    amb = _ambiguity(ambiguity)
    theta1, theta2, divergence = amb.validated()
    risks = np.asarray(risks, dtype=float).ravel()
    if risks.size == 0 or not np.isfinite(risks).all():
        raise ParameterError("risks must be a non-empty sequence of finite numbers")
    order = np.argsort(risks, kind="stable")
    bound = bind_model(model, X, y, amb, loss=loss, schema=schema, steps=steps, where="stability_curve")
    adversary = bound.adversary()
    results: List[Optional[StabilityResult]] = [None] * risks.size
    h = None
    for count, i in enumerate(order):
        res = solve_stability(adversary, risks[i], theta1, theta2, divergence, h_start=h, points=False,
                              sample_weight=sample_weight)
        results[i] = res
        if res.status == "finite" and res.h > 0:
            h = res.h
        if verbose:
            print(f"  r = {risks[i]:.6g} ({count + 1}/{risks.size}): R = {res.value:.6g} ({res.status})")
    return StabilityCurve(risks=risks, values=np.array([r.value for r in results]),
                          statuses=[r.status for r in results], results=results,
                          nominal_risk=results[0].nominal_risk)
