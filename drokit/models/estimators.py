"""scikit-learn estimators: :class:`DROClassifier` and :class:`DRORegressor`.

They follow scikit-learn's contract: ``__init__`` only stores its arguments, validation happens in
``fit``, fitted state ends with ``_``, ``fit`` returns ``self``.  Both accept numpy arrays (with
``categorical_features``) and pandas DataFrames (categorical dtypes recognised).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..conic.reformulations import MAX_CONFIGURATIONS, METHODS
from ..exceptions import ParameterError
from ..losses import get_loss
from ..losses.base import CLASSIFICATION, REGRESSION
from ..solvers import solver_choices
from ..params import component
from .problem import ON_INACCURATE, Problem
from .validation import as_1d, encode_binary_labels

HANDLE_UNKNOWN = ("error", "ignore")


class _DROLinearModel(BaseEstimator):
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
    def _validate_params(self) -> None:
        if self.method not in METHODS:
            raise ParameterError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        if not isinstance(self.solver, str) or self.solver.lower() not in solver_choices():
            raise ParameterError(f"solver must be one of {solver_choices()}, got {self.solver!r}")
        if self.handle_unknown not in HANDLE_UNKNOWN:
            raise ParameterError(f"handle_unknown must be one of {HANDLE_UNKNOWN}, got {self.handle_unknown!r}")
        if self.on_inaccurate not in ON_INACCURATE:
            raise ParameterError(f"on_inaccurate must be one of {ON_INACCURATE}, got {self.on_inaccurate!r}")
        if not (isinstance(self.max_configurations, (int, np.integer)) and self.max_configurations > 0):
            raise ParameterError(f"max_configurations must be a positive integer, got {self.max_configurations!r}")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ParameterError(f"fit_intercept must be True or False, got {self.fit_intercept!r}")

    def _problem(self) -> Problem:
        loss = get_loss(self.loss if self.loss is not None else self._default_loss)
        return Problem(loss=loss, ambiguity=self.ambiguity, task=self._task,
                       fit_intercept=self.fit_intercept, l1_penalty=self.l1_penalty,
                       l2_penalty=self.l2_penalty)

    @staticmethod
    def _check_input(X):
        if sp.issparse(X):
            raise TypeError("drokit estimators do not accept sparse input; pass a dense array or a "
                            "DataFrame (categorical columns are one-hot encoded internally)")
        if hasattr(X, "iloc"):
            if X.ndim != 2:
                raise ValueError(f"Expected a 2D DataFrame, got a pandas object of shape {X.shape}")
            if X.shape[0] == 0 or X.shape[1] == 0:
                raise ValueError(f"Found a DataFrame of shape {X.shape}; at least 1 sample and 1 "
                                 f"feature are required.")
            return X
        X = np.asarray(X) if not isinstance(X, np.ndarray) else X
        if np.iscomplexobj(X):
            raise ValueError("Complex data not supported")
        if X.ndim == 1:
            raise ValueError("Expected 2D array, got 1D array instead. Reshape your data with "
                             "X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a single sample")
        if X.ndim != 2:
            raise ValueError(f"Expected a 2D array, got an array of shape {X.shape}")
        if X.shape[0] == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
        if X.shape[1] == 0:
            raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
        return X

    # ------------------------------------------------------------------- fit
    def _fit(self, X, y, sample_weight=None):
        self._validate_params()
        X = self._check_input(X)
        if getattr(X, "shape", (0,))[0] == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        problem = self._problem().built(X, y, categorical_features=self.categorical_features,
                                        categories=self.categories, sample_weight=sample_weight)
        cp = problem.compile(X, y, self.method, categorical_features=self.categorical_features,
                             categories=self.categories, max_configurations=int(self.max_configurations),
                             sample_weight=sample_weight)
        ambiguity = component(problem, "ambiguity")
        schema = cp.instance.schema
        result = cp.solve(solver=self.solver, solver_options=self.solver_options,
                          on_inaccurate=self.on_inaccurate, verbose=bool(self.verbose),
                          method_options=self.method_options)
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
        return result

    def _decision(self, X) -> np.ndarray:
        check_is_fitted(self, "result_")
        if self.handle_unknown not in HANDLE_UNKNOWN:
            raise ParameterError(f"handle_unknown must be one of {HANDLE_UNKNOWN}, got {self.handle_unknown!r}")
        X = self._check_input(X)
        n_cols = X.shape[1]
        if n_cols != self.n_features_in_:
            raise ValueError(f"X has {n_cols} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        data = self.schema_.transform(X, handle_unknown=self.handle_unknown)
        design = self.schema_.design(data)
        return np.asarray(design @ self.result_.coef).ravel() + self.result_.intercept

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


class DROClassifier(ClassifierMixin, _DROLinearModel):
    """Distributionally robust binary linear classifier.

    Solves ``min_beta sup_{Q in B} E_Q[L(y (beta_0 + beta_x^T x + beta_z^T z))]`` over a Wasserstein ball
    ``B`` of mixed numerical + categorical data (belbasi2023, selvi2022, sun2025).

    Parameters
    ----------
    loss : ``"logistic"`` (default), ``"hinge"``, ``"smooth_hinge"`` or a :class:`~drokit.losses.Loss`.
    ambiguity : :class:`~drokit.Wasserstein` ball (default radius 0.1 with the default metric), an
        :class:`~drokit.Intersection`, or an :class:`~drokit.AmbiguitySet` built on the training data at
        ``fit`` (e.g. :class:`~drokit.CalibratedWasserstein`); the set actually fitted is ``ambiguity_``.
    method : ``"auto"``, ``"erm"``, ``"closed_form"``, ``"monolithic"``, ``"cutting_plane"``, ``"box"`` or ``"graph"``; the choice
        and its reason are
        in ``result_.method`` / ``result_.method_reason``.
    solver : ``"auto"`` (default: the structured ``"barrier"`` solver for the closed-form logistic model
        when no ``solver_options`` are given, :mod:`drokit.solvers.barrier`; Clarabel otherwise),
        ``"clarabel"``, ``"mosek"`` (only with a licence), ``"scs"``, ``"ecos"`` or ``"barrier"``.
    solver_options : back-end settings, e.g. ``{"tol_gap_rel": 1e-9}`` for Clarabel, ``{"tol": 1e-10}``
        for the barrier solver.
    fit_intercept : fit ``beta_0``.
    categorical_features : columns to treat as categorical (indices, names or boolean mask); default:
        DataFrame columns of ``category``/``object``/``bool``/string dtype, none for arrays.
    categories : ``"auto"`` or one list of levels per categorical feature (first = reference level).
    handle_unknown : ``"error"`` (default) or ``"ignore"``: a level unseen at fit is encoded as the
        reference level (all its dummy columns zero) at predict time.
    on_inaccurate : ``"raise"`` (default) or ``"warn"`` when the solver only reaches an inaccurate optimum.
    max_configurations : size limit of the enumeration for the monolithic program and the cutting
        plane's enumeration oracle, in configuration rows: samples x categorical configurations of the
        mutable features (x 2 when labels may flip, i.e. classification with finite kappa).
    method_options : options of the method, e.g. ``{"gap_tol": 1e-7, "max_rounds": 50}`` for the
        cutting plane (see :class:`~drokit.conic.reformulations.CuttingPlaneOptions`).
    verbose : print the solver's log, or one line per cutting-plane round.
    l1_penalty : ``gamma >= 0``: minimize the worst-case risk plus ``gamma ||beta||_1`` (intercept
        excluded): selvi2022's r-DRO, and at radius 0 the lasso (r-LR).  ``result_.objective`` and its
        bounds include the penalty; ``dk.worst_case`` reports the risk alone.
    l2_penalty : ``alpha >= 0``: plus ``alpha ||beta||_2^2`` (intercept excluded): belbasi2023's r-MixF,
        and at radius 0 ridge-regularized ERM (r-Nom).

    Attributes
    ----------
    classes_ : the two class labels; ``classes_[1]`` is the positive class (+1).
    coef_ : (1, n_encoded) coefficients of the encoded columns (see ``get_feature_names_out()``).
    intercept_ : (1,) intercept.
    result_ : :class:`~drokit.FitResult` with objective, certificate and diagnostics.
    lambda_ : optimal dual multiplier of the Wasserstein budget.
    """

    _task = CLASSIFICATION
    _default_loss = "logistic"

    def __init__(self, loss="logistic", ambiguity=None, *, method="auto", solver="auto",
                 solver_options=None, fit_intercept=True, categorical_features=None,
                 categories="auto", handle_unknown="error", on_inaccurate="raise",
                 max_configurations=MAX_CONFIGURATIONS, method_options=None, verbose=False,
                 l1_penalty=0.0, l2_penalty=0.0):
        self._store_params(locals())

    def fit(self, X, y, sample_weight=None):
        """Fit the model; returns ``self``.  ``sample_weight``: nonnegative weights of the samples (the
        nominal distribution ``P_N = sum_n p_n delta_n``, ``p = w / sum(w)``; the ball is around it)."""
        X = self._check_input(X)
        y = as_1d(y, X.shape[0])  # once, so that a column vector warns once
        _, classes = encode_binary_labels(y, X.shape[0])
        result = self._fit(X, y, sample_weight)
        self.classes_ = classes
        self.coef_ = result.coef.reshape(1, -1)
        self.intercept_ = np.array([result.intercept])
        return self

    def decision_function(self, X) -> np.ndarray:
        """``beta_0 + beta^T encode(x)``: positive values predict ``classes_[1]``."""
        return self._decision(X)

    def predict(self, X) -> np.ndarray:
        positive = self.decision_function(X) > 0  # first: raises NotFittedError before fit
        return self.classes_[positive.astype(int)]

    def _has_proba(self) -> bool:
        try:
            return get_loss(self.loss if self.loss is not None else "logistic").name == "logistic"
        except ParameterError:  # an unknown loss name has no probabilities (fit reports the name)
            return False

    @available_if(_has_proba)
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[1 - sigma(f), sigma(f)]`` (logistic loss only)."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    @available_if(_has_proba)
    def predict_log_proba(self, X) -> np.ndarray:
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class DRORegressor(RegressorMixin, _DROLinearModel):
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
                 l1_penalty=0.0, l2_penalty=0.0):
        self._store_params(locals())

    def fit(self, X, y, sample_weight=None):
        """Fit the model; returns ``self``.  ``sample_weight`` as :meth:`DROClassifier.fit`."""
        result = self._fit(X, y, sample_weight)
        self.coef_ = result.coef.copy()
        self.intercept_ = float(result.intercept)
        return self

    def predict(self, X) -> np.ndarray:
        return self._decision(X)
