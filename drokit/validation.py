"""Validation of data and targets: clear errors naming the argument and what is wrong.

:func:`check_features` is the one check of the data ``X`` given to a fitted model: every entry point
that evaluates one (``predict``, ``predict_proba``, ``decision_function``, ``score``, ``dk.worst_case``,
``dk.stability`` and its relatives, ``dk.robustness_report``) goes through it, directly or through
:func:`drokit.models.binding.bind_fitted_model`.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Tuple

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning

from .exceptions import DataError, ParameterError
from .schema import FeatureSchema, MixedData, is_dataframe, is_missing, unique_names

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))     # drokit/ (this module sits at its top)


def user_stacklevel() -> int:
    """``stacklevel`` (for a warning issued by our caller) of the first frame outside drokit."""
    level, frame = 2, sys._getframe(2)  # level 1 is our caller (the function that warns)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def as_1d(y, n_samples: int) -> np.ndarray:
    """``y`` as a 1-d array of ``n_samples`` entries (a column vector is ravelled with a warning)."""
    if y is None:
        raise DataError("this estimator requires y to be passed, but the target y is None")
    if pd is not None and isinstance(y, (pd.Series, pd.DataFrame)):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the "
                      "shape of y to (n_samples,), for example using ravel().", DataConversionWarning,
                      stacklevel=user_stacklevel())
        y = y.ravel()
    if y.ndim != 1:
        raise DataError(f"y must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise DataError(f"X and y have different lengths: X has {n_samples} rows, y has {y.shape[0]}")
    return y


def class_labels(y, n_samples: int) -> np.ndarray:
    """The sorted class labels of a classification target: two or more, of one type, no NaN or missing value, not a
    continuous target."""
    y = as_1d(y, n_samples)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise DataError(f"y has {int((~np.isfinite(y)).sum())} NaN/inf value(s)")
    if y.dtype == object and is_missing(y).any():
        raise DataError(f"y has {int(is_missing(y).sum())} missing value(s)")
    try:
        classes = np.unique(y)
    except TypeError:  # labels of mixed, unorderable types (e.g. 1 and "a")
        raise DataError(f"y mixes label types ({sorted({type(v).__name__ for v in y})}); use labels "
                        f"of one type") from None
    if classes.size < 2:
        raise DataError(f"y has only one class ({classes.tolist()}); a classifier needs two classes")
    if classes.size > 2 and y.dtype.kind == "f" and np.any(classes != np.round(classes)):
        raise DataError(f"Unknown label type: y is continuous ({classes.size} distinct values); a "
                        f"classifier needs classes (use DRORegressor for a continuous target)")
    return classes


def encode_binary_labels(y, n_samples: int, why: str = "") -> Tuple[np.ndarray, np.ndarray]:
    """Map two classes to -1/+1 (``classes[0] -> -1``, ``classes[1] -> +1``); returns (y_pm1, classes).  More classes
    raise :class:`DataError` with the alternatives (``why``: what restricts this fit to two classes).  The message
    starts "Only binary classification is supported", scikit-learn's words for it."""
    y = as_1d(y, n_samples)
    classes = class_labels(y, n_samples)
    if classes.size > 2:
        raise DataError(f"Only binary classification is supported{' ' + why if why else ''}: y has {classes.size} classes "
                        f"({classes.tolist()[:10]}); the joint multinomial DRO model is "
                        f"dk.DROClassifier(loss='logistic'), or wrap the estimator, "
                        f"sklearn.multiclass.OneVsRestClassifier(dk.DROClassifier(...)): one certified binary "
                        f"DRO model per class, each robust for its own one-vs-rest task; or map the task to two classes")
    return np.where(y == classes[1], 1.0, -1.0), classes


def encode_with_classes(y, classes: np.ndarray, n_samples: int) -> np.ndarray:
    """``y`` in {-1, +1} with given classes (``classes[1] -> +1``), e.g. a fitted model's ``classes_``;
    one class alone is fine (evaluation data of one group), labels outside ``classes`` raise."""
    classes = np.asarray(classes)
    if classes.ndim != 1 or classes.size != 2 or classes[0] == classes[1]:
        raise ParameterError(f"classes must hold two distinct labels (classes[0] -> -1, classes[1] -> +1, "
                             f"e.g. a fitted model's classes_), got {classes.tolist()}")
    y = as_1d(y, n_samples)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        bad = ~np.isfinite(y)
        raise DataError(f"y has {int(bad.sum())} NaN/inf value(s) (first at row {int(np.argmax(bad))})")
    known = np.isin(y, classes)
    if not known.all():
        seen = sorted({str(v) for v in y[~known]})[:5]
        raise DataError(f"y has label(s) {seen} that are not among the model's classes_ "
                        f"{np.asarray(classes).tolist()}")
    return np.where(y == classes[1], 1.0, -1.0)


def check_target(y, n_samples: int) -> np.ndarray:
    """A finite float regression target."""
    y = as_1d(y, n_samples)
    try:
        y = y.astype(float)
    except (TypeError, ValueError):
        raise DataError("y must be numeric for regression") from None
    bad = ~np.isfinite(y)
    if bad.any():
        raise DataError(f"y has {int(bad.sum())} NaN/inf value(s) (first at row {int(np.argmax(bad))})")
    return y


def plus_minus_one_labels(y, n_samples: int):
    """Labels already coded -1/+1 are used as they are, even a single class (a Problem may describe
    one group's data; the estimators still require two classes); ``None`` otherwise."""
    arr = as_1d(y, n_samples)
    if arr.dtype.kind in "iuf" and np.all(np.isin(arr, (-1, 1))):
        return arr.astype(float)
    return None


# ------------------------------------------------------------------------------------------ X
def check_array_2d(X, argument: str = "X"):
    """``X`` as a non-empty 2-d DataFrame (returned as it is) or numpy array: sparse input, complex
    numbers, 1-d or empty data raise, in scikit-learn's words, naming ``argument``."""
    if sp.issparse(X):
        raise TypeError(f"{argument}: drokit estimators do not accept sparse input; pass a dense array or "
                        f"a DataFrame (categorical columns are one-hot encoded internally)")
    if hasattr(X, "iloc"):
        if X.ndim != 2:
            raise ValueError(f"Expected a 2D DataFrame for {argument}, got a pandas object of shape "
                             f"{X.shape}")
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"Found a DataFrame {argument} of shape {X.shape}; at least 1 sample and 1 "
                             f"feature are required.")
        return X
    X = np.asarray(X) if not isinstance(X, np.ndarray) else X
    if np.iscomplexobj(X):
        raise ValueError("Complex data not supported")
    if X.ndim == 1:
        raise ValueError("Expected 2D array, got 1D array instead. Reshape your data with "
                         "X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a single sample")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array for {argument}, got an array of shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    return X


def check_features(X, schema: FeatureSchema, *, owner: str = "the model", handle_unknown: str = "error",
                   argument: str = "X") -> MixedData:
    """Check the data ``X`` given to a model fitted with ``schema`` and encode it; scikit-learn's rules.

    * ``X`` must be a 2-d, non-empty DataFrame or array (:func:`check_array_2d`).
    * A model fitted on a DataFrame: a DataFrame must have the columns seen at fit, in the same order;
      missing, unexpected or reordered columns raise a :class:`~drokit.DataError` naming ``argument``
      and the difference.  A numpy array gets scikit-learn's warning ("X does not have valid feature
      names, but DROClassifier was fitted with feature names"): its columns are taken by position.
    * A model fitted on an array, given a DataFrame, warns ("X has feature names, but ... was fitted
      without feature names"); its columns are taken by position.
    * The number of columns must be that of fit (scikit-learn's message).
    * Encoding (:meth:`FeatureSchema.transform`) raises on a non-number at a numerical position, a
      missing value, an unseen level of a categorical feature (``handle_unknown="error"``; ``"ignore"``
      codes it as the reference level) and, whatever ``handle_unknown`` says, a value of another kind
      than the feature's levels (a number among text levels, or the reverse).  When the columns were
      taken by position, the message adds that the column order may be wrong.

    ``owner`` names the model in the messages (e.g. ``"DROClassifier"``).  Returns the encoded
    :class:`~drokit.schema.MixedData`.
    """
    X = check_array_2d(X, argument)
    fitted = list(schema.feature_names)
    positional = True
    if is_dataframe(X):
        names = unique_names(X)
        if schema.from_dataframe:
            _check_column_names(names, fitted, owner, argument)
            positional = False
        else:
            warnings.warn(f"{argument} has feature names, but {owner} was fitted without feature names",
                          UserWarning, stacklevel=user_stacklevel())
    elif schema.from_dataframe:
        warnings.warn(f"{argument} does not have valid feature names, but {owner} was fitted with feature "
                      f"names", UserWarning, stacklevel=user_stacklevel())
    if X.shape[1] != len(fitted):
        raise DataError(f"{argument} has {X.shape[1]} features, but {owner} is expecting {len(fitted)} "
                        f"features as input (the columns of fit: {_shown(fitted)}).")
    try:
        return schema.transform(X, handle_unknown=handle_unknown)
    except DataError as exc:
        if not positional or len(fitted) < 2:
            raise
        raise DataError(f"{exc}. {argument} was matched to the columns of fit by position, in the order "
                        f"{_shown(fitted)}: check its column order (or pass a DataFrame with those column "
                        f"names)") from None


def _check_column_names(names, fitted, owner: str, argument: str) -> None:
    """A DataFrame's columns must be those of fit, in the same order (scikit-learn's rule and, after
    drokit's own first line, scikit-learn's words, so that its column-name checks pass)."""
    if names == fitted:
        return
    missing = sorted(set(fitted) - set(names))
    unexpected = sorted(set(names) - set(fitted))
    sklearn_words = "The feature names should match those that were passed during fit.\n"
    if missing or unexpected:
        parts = ([f"missing column(s) {_shown(missing)}"] if missing else []) + \
                ([f"unexpected column(s) {_shown(unexpected)}"] if unexpected else [])
        first = (f"{argument} does not have the columns {owner} was fitted on: {'; '.join(parts)} (the "
                 f"columns of fit, the model's feature_names_in_: {_shown(fitted)}).")
        if unexpected:
            sklearn_words += "Feature names unseen at fit time:\n" + _listed(unexpected)
        if missing:
            sklearn_words += "Feature names seen at fit time, yet now missing:\n" + _listed(missing)
    else:
        first = (f"{argument} has the columns seen at fit by {owner}, but in another order: {_shown(names)} "
                 f"instead of {_shown(fitted)} (the model's feature_names_in_); select them as "
                 f"{argument}[list(model.feature_names_in_)].")
        sklearn_words += "Feature names must be in the same order as they were in fit.\n"
    raise DataError(f"{first}\n{sklearn_words}")


def _listed(names, limit: int = 5) -> str:
    """scikit-learn's list of names: one ``- name`` line each, at most ``limit``, then ``- ...``."""
    lines = [f"- {n}\n" for n in names[:limit]]
    return "".join(lines) + ("- ...\n" if len(names) > limit else "")


def _shown(names, limit: int = 30) -> str:
    names = list(names)
    return str(names) if len(names) <= limit else f"{names[:limit]} (+{len(names) - limit} more)"
