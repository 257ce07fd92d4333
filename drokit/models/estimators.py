"""scikit-learn estimators: :class:`DROClassifier` and :class:`DRORegressor`.

They follow scikit-learn's contract: ``__init__`` only stores its arguments, validation happens in
``fit``, fitted state ends with ``_``, ``fit`` returns ``self``.  Both accept numpy arrays (with
``categorical_features``) and pandas DataFrames (categorical dtypes recognised).
"""

from __future__ import annotations

from functools import update_wrapper
from types import MethodType

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..methods import MAX_CONFIGURATIONS, method_names
from ..exceptions import DataError, FitInterrupted, ParameterError
from ..losses import get_loss
from ..losses.base import CLASSIFICATION, REGRESSION
from ..solvers import solver_choices
from ..run_control import check_time_limit, check_verbose
from ..ambiguity.ot_moment import OTMoment
from ..params import (Boolean, Check, MappingOrNone, OneOf, PositiveInteger, RealNumber, component, materialized,
                      nested_params, validate_parameters)
from .problem import ON_INACCURATE, Problem
from ..validation import as_1d, check_array_2d, check_features, class_labels, encode_binary_labels
from ..dask_inputs import any_dask, is_dask_collection, map_rows

HANDLE_UNKNOWN = ("error", "ignore")


class _probabilistic:
    """scikit-learn's ``available_if`` for ``predict_proba`` / ``predict_log_proba``, with the reason: the
    method exists only when the estimator's ``_no_proba_reason()`` is empty, so ``hasattr`` is ``False``
    for a margin loss, and the ``AttributeError`` says why and what to use instead."""

    def __init__(self, fn):
        self.fn = fn
        update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        reason = obj._no_proba_reason()
        if reason:
            raise AttributeError(f"This {type(obj).__name__!r} has no attribute {self.fn.__name__!r}: {reason}")
        return MethodType(self.fn, obj)


class DROLinearModel(BaseEstimator):
    """Shared fit/decision logic of the DRO linear estimators."""

    _task: str = CLASSIFICATION
    _default_loss: str = "logistic"
    #: ``ambiguity=None`` is the problem's default ball (for nested grid names in sweeps)
    DEFAULT_COMPONENTS = Problem.DEFAULT_COMPONENTS

    def _store_params(self, params: dict) -> None:
        """``__init__`` only stores its arguments (scikit-learn contract); the subclasses' explicit
        signatures are what ``get_params`` reads."""
        for name, value in params.items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)

    # ------------------------------------------------------------ validation
    #: what each parameter must be, checked in this order at ``fit`` (:func:`drokit.params.validate_parameters`; the
    #: declarations -- loss, ambiguity, the penalties' ranges -- check themselves, and ``categorical_features`` /
    #: ``categories`` are checked against the data when it is bound)
    _parameter_constraints = {
        "method": OneOf(lambda: list(method_names())),
        "solver": OneOf(solver_choices, normalize=str.lower),
        "solver_options": MappingOrNone(),
        "method_options": MappingOrNone(),
        "handle_unknown": OneOf(HANDLE_UNKNOWN),
        "on_inaccurate": OneOf(ON_INACCURATE),
        "max_configurations": PositiveInteger(),
        "fit_intercept": Boolean(),
        "l1_penalty": RealNumber(),
        "l2_penalty": RealNumber(),
        "time_limit": Check(check_time_limit),
        "warm_start": Boolean(),
        "verbose": Check(check_verbose),
    }

    def _validate_params(self) -> None:
        validate_parameters(self, self._parameter_constraints)

    def _problem(self) -> Problem:
        loss = get_loss(self.loss if self.loss is not None else self._default_loss)
        return Problem(loss=loss, ambiguity=self.ambiguity, task=self._task,
                       fit_intercept=self.fit_intercept, l1_penalty=self.l1_penalty,
                       l2_penalty=self.l2_penalty)

    # ------------------------------------------------------------------ params
    def get_params(self, deep: bool = True) -> dict:
        """scikit-learn's parameters; with ``deep``, the nested names of the default ambiguity set too when
        ``ambiguity`` is ``None`` (``ambiguity__radius``, ``ambiguity__metric__label__kappa``, ...)."""
        out = super().get_params(deep=deep)
        if deep and self.ambiguity is None:
            out.update(nested_params(self, "ambiguity"))
        return out

    def set_params(self, **params):
        """scikit-learn's ``set_params``; a nested ``ambiguity__...`` name while ``ambiguity`` is ``None``
        first stores the default ball it stands for (``Wasserstein()``), so that ``GridSearchCV`` reaches
        ``ambiguity__radius`` and ``ambiguity__metric__label__kappa`` on the default model."""
        if any(key.startswith("ambiguity__") for key in params):
            if "ambiguity" in params:
                self.ambiguity = params.pop("ambiguity")
            materialized(self, "ambiguity")
        return super().set_params(**params)

    # ------------------------------------------------------------------- fit
    def _fit(self, X, y, sample_weight=None, classes=None):
        self._validate_params()
        X = check_array_2d(X)
        problem = self._problem().built(X, y, categorical_features=self.categorical_features,
                                        categories=self.categories, sample_weight=sample_weight)
        cp = problem.compile(X, y, self.method, categorical_features=self.categorical_features,
                             categories=self.categories, max_configurations=int(self.max_configurations),
                             sample_weight=sample_weight)
        ambiguity = component(problem, "ambiguity")
        schema = cp.instance.schema
        interrupted = None
        try:
            result = cp.solve(solver=self.solver, solver_options=self.solver_options,
                              on_inaccurate=self.on_inaccurate, verbose=self.verbose,
                              method_options=self._method_options(cp), time_limit=self.time_limit)
        except FitInterrupted as exc:
            if exc.result is None:
                raise
            result, interrupted = exc.result, exc
        self._remember(X, schema, ambiguity, result)
        self._store_model(result, classes)
        if interrupted is not None:
            raise interrupted     # Ctrl-C: the best model so far is kept (result_.stop_reason == "interrupted")
        return result

    def _method_options(self, cp) -> dict:
        """``method_options``, with the previous fit's ``theta = (beta_0, beta, lambda)`` as the cutting plane's start
        when ``warm_start`` (scikit-learn's convention: reuse the last solution; only phase 1's start moves, the
        certificate is computed as always; a start of another length -- other columns or levels -- is ignored)."""
        options = dict(self.method_options or {})
        previous = getattr(self, "result_", None) if self.warm_start else None
        if previous is not None and cp.method == "cutting_plane" and "start" not in options \
                and np.ndim(previous.coef) == 1 and np.isfinite(previous.lambda_):
            options["start"] = np.r_[[previous.intercept] if cp.instance.fit_intercept else [], previous.coef,
                                     previous.lambda_]
        return options or None

    def _remember(self, X, schema, ambiguity, result) -> None:
        """The fitted state every model keeps: ``schema_``, ``ambiguity_``, ``result_``, the input's feature names and
        ``lambda_``."""
        self.schema_ = schema
        self.ambiguity_ = ambiguity
        self.result_ = result
        self.n_features_in_ = len(schema.feature_names)
        if schema.from_dataframe and all(isinstance(c, str) for c in X.columns):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # refit on data without names: drop the stale ones
            del self.feature_names_in_
        self.feature_names_out_ = np.asarray(schema.encoded_names(), dtype=object)
        self.lambda_ = result.lambda_

    def _store_model(self, result, classes=None) -> None:
        """``coef_`` and ``intercept_`` (and ``classes_``) from a fit's result."""
        raise NotImplementedError

    def _on_partitions(self, X, method: str, n_outputs: int, dtype=float):
        """``getattr(self, method)`` on every partition of a Dask ``X``: a Dask array (:func:`drokit.dask_inputs.map_rows`;
        the model is a few numbers, so the data stay where they are)."""
        check_is_fitted(self, "result_")
        return map_rows(X, getattr(self, method), n_outputs, dtype)

    def _n_scores(self) -> int:
        """Columns of ``decision_function``: 0 (one score) for binary and regression models, else one per class."""
        return 0 if np.ndim(self.result_.coef) < 2 else int(np.shape(self.result_.coef)[0])

    def _decision(self, X) -> np.ndarray:
        check_is_fitted(self, "result_")
        if is_dask_collection(X):
            return self._on_partitions(X, "_decision", self._n_scores())
        if self.handle_unknown not in HANDLE_UNKNOWN:
            raise ParameterError(f"handle_unknown must be one of {HANDLE_UNKNOWN}, got {self.handle_unknown!r}")
        data = check_features(X, self.schema_, owner=type(self).__name__, handle_unknown=self.handle_unknown)
        design = self.schema_.design(data)
        coef = self.result_.coef
        if coef.ndim == 2:                       # the multinomial model: one score per class (N, K)
            return np.asarray(design @ coef.T) + self.result_.intercept[None, :]
        return np.asarray(design @ coef).ravel() + self.result_.intercept

    def get_feature_names_out(self, input_features=None):
        """Names of the encoded columns that ``coef_`` refers to (numerical, then ``feature=level`` dummies)."""
        check_is_fitted(self, "result_")
        return self.feature_names_out_.copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = False
        return tags


def _fit_on_dask(model, X, y, sample_weight) -> bool:
    """Fit ``model`` on Dask collections (:mod:`drokit.models.dask_fit`: the data stay in their partitions) when any
    input is one; returns whether it did."""
    if not any_dask(X, y, sample_weight):
        return False
    if not all(o is None or is_dask_collection(o) for o in (X, y, sample_weight)):
        raise DataError(f"{type(model).__name__}.fit: X, y and sample_weight must all be Dask collections (partitioned "
                        f"alike) or all in memory")
    from .dask_fit import fit_dask
    result, schema, classes = fit_dask(model, X, y, sample_weight)
    model._remember(X, schema, component(model._problem(), "ambiguity"), result)
    model._store_model(result, classes)
    return True


class DROClassifier(ClassifierMixin, DROLinearModel):
    """Distributionally robust binary linear classifier.

    Solves ``min_beta sup_{Q in B} E_Q[L(y (beta_0 + beta_x^T x + beta_z^T z))]`` over a Wasserstein ball
    ``B`` of mixed numerical + categorical data (belbasi2023, selvi2022, sun2025).

    Parameters
    ----------
    loss : drokit.losses.Loss or str
        ``"logistic"`` (default), ``"hinge"``, ``"smooth_hinge"`` or a :class:`~drokit.losses.Loss`.
    ambiguity : Wasserstein or Intersection or OTMoment or AmbiguitySet or None
        :class:`~drokit.Wasserstein` ball (default radius 0.1 with the default metric), an
        :class:`~drokit.Intersection`, an :class:`~drokit.OTMoment` set with a ``radius`` (MOT-DRO: samples move
        and are reweighted; two classes or regression), or an :class:`~drokit.AmbiguitySet` built on the training
        data at ``fit`` (e.g. :class:`~drokit.CalibratedWasserstein`); the set actually fitted is ``ambiguity_``.
    method : str
        ``"auto"``, ``"erm"``, ``"closed_form"``, ``"monolithic"``, ``"cutting_plane"``, ``"box"``, ``"graph"`` or a
        method registered with :func:`drokit.methods.register_method` (:func:`drokit.methods.method_names` lists them);
        the choice and its reason are in ``result_.method`` / ``result_.method_reason``.
    solver : {"auto", "clarabel", "mosek", "scs", "ecos", "barrier"}
        ``"auto"`` (default: the structured ``"barrier"`` solver for the closed-form logistic model
        when no ``solver_options`` are given, :mod:`drokit.solvers.barrier`; Clarabel otherwise),
        ``"clarabel"``, ``"mosek"`` (only with a licence), ``"scs"``, ``"ecos"`` or ``"barrier"``.
    solver_options : dict or None
        Back-end settings, e.g. ``{"tol_gap_rel": 1e-9}`` for Clarabel, ``{"tol": 1e-10}`` for the
        barrier solver.
    fit_intercept : bool
        Fit ``beta_0``.
    categorical_features : array_like or None
        Columns to treat as categorical (indices, names or boolean mask); default: DataFrame columns of
        ``category``/``object``/``bool``/string dtype, none for arrays.
    categories : "auto" or list of array_like
        ``"auto"`` or one list of levels per categorical feature (first = reference level).
    handle_unknown : {"error", "ignore"}
        ``"error"`` (default) or ``"ignore"``: a level unseen at fit is encoded as the reference level
        (all its dummy columns zero) at predict time.  A value of another kind than the feature's
        levels (a number among text levels) raises either way: it is a wrong column.
    on_inaccurate : {"raise", "warn"}
        ``"raise"`` (default) or ``"warn"`` when the solver only reaches an inaccurate optimum.
    max_configurations : int
        Size limit of the enumeration for the monolithic program and the cutting plane's enumeration
        oracle, in configuration rows: samples x categorical configurations of the mutable features
        (x 2 when labels may flip, i.e. classification with finite kappa).
    method_options : dict or None
        Options of the method, e.g. ``{"gap_tol": 1e-7, "max_rounds": 50}`` for the cutting plane (see
        :class:`~drokit.reformulations.CuttingPlaneOptions`).
    verbose : int or bool
        0 / ``False`` (default) silent; 1 / ``True`` progress lines on stderr once a fit has run 2 s
        (phase, round, certified gap, elapsed time, an estimate of the rest); 2 also the method's log (every
        phase-1 solve, barrier centering, cutting-plane round); 3 also the conic solver's own log.
    time_limit : float or None
        ``None`` (default) or seconds of wall time for ``fit``.  A cutting-plane fit stops at its next
        step once they have passed, with the best model found and its certified bounds: ``fit`` raises
        :class:`~drokit.SolverError` (``status="time_limit"``, the bounds in its message and ``.result``), or
        with ``on_inaccurate="warn"`` keeps that model with a warning (``result_.status ==
        "optimal_inaccurate"``, ``result_.stop_reason``).  A conic solve gets the time left as its own limit.
        Ctrl-C during a fit stops it the same way: the best model so far is kept and
        :class:`~drokit.FitInterrupted` (a ``KeyboardInterrupt``) is raised.
    l1_penalty : float
        ``gamma >= 0``: minimize the worst-case risk plus ``gamma ||beta||_1`` (intercept excluded):
        selvi2022's r-DRO, and at radius 0 the lasso (r-LR).  ``result_.objective`` and its bounds
        include the penalty; ``dk.worst_case`` reports the risk alone.
    l2_penalty : float
        ``alpha >= 0``: plus ``alpha ||beta||_2^2`` (intercept excluded): belbasi2023's r-MixF, and at
        radius 0 ridge-regularized ERM (r-Nom).
    warm_start : bool
        ``True``: a new ``fit`` of the cutting-plane method starts its phase 1 from the last fit's solution
        (``coef_``, ``intercept_``, ``lambda_``) instead of from scratch (scikit-learn's convention), e.g. along a
        radius path with ``set_params(ambiguity__radius=r).fit(X, y)``.  Only the start moves: the fit is certified
        as always, and a start of another length (other columns or levels) is ignored.

    Attributes
    ----------
    classes_ : numpy.ndarray of shape (n_classes,)
        The class labels; with two, ``classes_[1]`` is the positive class (+1).
    coef_ : numpy.ndarray of shape (1, n_encoded) or (K, n_encoded)
        Coefficients of the encoded columns (see ``get_feature_names_out()``); with ``K >= 3`` classes
        (logistic loss: the multinomial model, :mod:`drokit.models.multinomial`) ``(K, n_encoded)``, one
        row per class, centred (``coef_.sum(axis=0) == 0``).
    intercept_ : numpy.ndarray of shape (1,) or (K,)
        Intercept; ``(K,)`` with ``K >= 3`` classes (centred).
    result_ : FitResult
        :class:`~drokit.FitResult` with objective, certificate and diagnostics.
    lambda_ : float
        Optimal dual multiplier of the Wasserstein budget.
    n_features_in_ : int
        Number of columns of ``X`` at fit.
    feature_names_in_ : numpy.ndarray of shape (n_features_in_,)
        The column names of a DataFrame ``X`` at fit (string names only).  Data given to the fitted
        model (``predict``, ``predict_proba``, ``decision_function``, ``score``,
        ``dk.worst_case``, ``dk.stability``, ...) must have these columns in this order, as in
        scikit-learn (:func:`drokit.validation.check_features`); a numpy array warns.
    """

    _task = CLASSIFICATION
    _default_loss = "logistic"

    def __init__(self, loss="logistic", ambiguity=None, *, method="auto", solver="auto",
                 solver_options=None, fit_intercept=True, categorical_features=None,
                 categories="auto", handle_unknown="error", on_inaccurate="raise",
                 max_configurations=MAX_CONFIGURATIONS, method_options=None, verbose=False,
                 l1_penalty=0.0, l2_penalty=0.0, time_limit=None, warm_start=False):
        self._store_params(locals())

    def fit(self, X, y, sample_weight=None):
        """Fit the model; returns ``self``.  ``sample_weight``: nonnegative weights of the samples (the
        nominal distribution ``P_N = sum_n p_n delta_n``, ``p = w / sum(w)``; the ball is around it).  With three
        or more classes and the logistic loss, the multinomial model (:mod:`drokit.models.multinomial`).

        ``X`` may be a Dask DataFrame (categorical columns with known categories) or Array, with ``y`` and
        ``sample_weight`` Dask collections partitioned alike: the same certified fit then runs by partition on the
        current ``dask.distributed`` client, the rows staying on the workers (:mod:`drokit.models.dask_fit`,
        docs/dask.md)."""
        if _fit_on_dask(self, X, y, sample_weight):
            return self
        X = check_array_2d(X)
        y = as_1d(y, X.shape[0])  # once, so that a column vector warns once
        classes = class_labels(y, X.shape[0])
        if classes.size > 2:
            self._fit_multinomial(X, y, sample_weight, classes)
            return self
        self._fit(X, y, sample_weight, classes)
        return self

    def _fit_multinomial(self, X, y, sample_weight, classes) -> None:
        """The multinomial DRO logistic model of :mod:`drokit.models.multinomial` (logistic loss only)."""
        from .multinomial import fit_multinomial
        self._validate_params()
        name = get_loss(self.loss if self.loss is not None else self._default_loss).name
        if name != "logistic":
            encode_binary_labels(y, X.shape[0], why=f"with loss {name!r} (it has no multinomial model)")
        problem = self._problem().built(X, y, categorical_features=self.categorical_features,
                                        categories=self.categories, sample_weight=sample_weight)
        if isinstance(component(problem, "ambiguity"), OTMoment):
            encode_binary_labels(y, X.shape[0], why="with an OTMoment set (MOT-DRO has no multinomial model yet)")
        result, schema = fit_multinomial(problem, X, y, classes, method=self.method, solver=self.solver,
                                 solver_options=self.solver_options, on_inaccurate=self.on_inaccurate,
                                 verbose=self.verbose, categorical_features=self.categorical_features,
                                 categories=self.categories, sample_weight=sample_weight,
                                 max_configurations=int(self.max_configurations), time_limit=self.time_limit)
        linear_map = problem.linear_map(schema)      # a matrix cost: fitted in x~ = M x, coef_ in the original x
        if linear_map is not None:
            result = linear_map.result_back(result)
        self._remember(X, schema, component(problem, "ambiguity"), result)
        self.classes_ = classes
        self.coef_ = result.coef.copy()
        self.intercept_ = np.asarray(result.intercept, dtype=float).copy()

    def _store_model(self, result, classes=None) -> None:
        self.classes_ = classes
        self.coef_ = result.coef.reshape(1, -1)
        self.intercept_ = np.array([result.intercept])

    def decision_function(self, X) -> np.ndarray:
        """``beta_0 + beta^T encode(x)``: positive values predict ``classes_[1]``; with three or more classes the
        scores ``b_k + w_k^T encode(x)``, one column per class of ``classes_``."""
        return self._decision(X)

    def predict(self, X) -> np.ndarray:
        if is_dask_collection(X):            # a Dask array of labels, one chunk per partition
            return self._on_partitions(X, "predict", 0, np.asarray(self.classes_).dtype)
        scores = self.decision_function(X)   # first: raises NotFittedError before fit
        if scores.ndim == 2:
            return self.classes_[np.argmax(scores, axis=1)]
        return self.classes_[(scores > 0).astype(int)]

    def _no_proba_reason(self) -> str:
        """Why ``predict_proba`` is not available (``""`` when it is: the logistic loss)."""
        try:
            name = get_loss(self.loss if self.loss is not None else "logistic").name
        except ParameterError as exc:  # an unknown loss name has no probabilities (fit reports the name)
            return f"the loss is not valid ({exc})"
        if name == "logistic":
            return ""
        return (f"loss {name!r} is a margin loss, which gives scores but no probabilities; use "
                f"decision_function(X) for the scores, or fit with loss='logistic' for predict_proba")

    @_probabilistic
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[1 - sigma(f), sigma(f)]`` (logistic loss only); with three or more classes
        ``softmax_k(b_k + w_k^T encode(x))``."""
        if is_dask_collection(X):
            return self._on_partitions(X, "predict_proba", len(self.classes_))
        scores = self.decision_function(X)
        if scores.ndim == 2:
            return softmax(scores, axis=1)
        p = expit(scores)
        return np.column_stack([1.0 - p, p])

    @_probabilistic
    def predict_log_proba(self, X) -> np.ndarray:
        """``log(predict_proba(X))`` (logistic loss only)."""
        if is_dask_collection(X):
            return self._on_partitions(X, "predict_log_proba", len(self.classes_))
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # three or more classes: the multinomial model, logistic loss only (a margin loss raises DataError)
        tags.classifier_tags.multi_class = not self._no_proba_reason()
        return tags


class DRORegressor(RegressorMixin, DROLinearModel):
    """Distributionally robust linear regressor: ``min_beta sup_{Q in B} E_Q[L(f(x, z) - y)]``.

    Same parameters as :class:`DROClassifier`; ``loss`` is ``"huber"`` (default, delta = 1),
    ``"pinball"``, ``"epsilon_insensitive"``, ``"absolute"`` or a :class:`~drokit.losses.Loss`.
    A finite label cost ``kappa`` lets the response move at cost ``kappa |y - y'|``.

    Attributes: ``coef_`` (n_encoded,), ``intercept_`` (float), ``result_``, ``lambda_``.
    """

    _task = REGRESSION
    _default_loss = "huber"

    def __init__(self, loss="huber", ambiguity=None, *, method="auto", solver="auto",
                 solver_options=None, fit_intercept=True, categorical_features=None,
                 categories="auto", handle_unknown="error", on_inaccurate="raise",
                 max_configurations=MAX_CONFIGURATIONS, method_options=None, verbose=False,
                 l1_penalty=0.0, l2_penalty=0.0, time_limit=None, warm_start=False):
        self._store_params(locals())

    def fit(self, X, y, sample_weight=None):
        """Fit the model; returns ``self``.  ``sample_weight`` and Dask collections as :meth:`DROClassifier.fit`."""
        if _fit_on_dask(self, X, y, sample_weight):
            return self
        self._fit(X, y, sample_weight)
        return self

    def _store_model(self, result, classes=None) -> None:
        self.coef_ = result.coef.copy()
        self.intercept_ = float(result.intercept)

    def predict(self, X) -> np.ndarray:
        return self._decision(X)
