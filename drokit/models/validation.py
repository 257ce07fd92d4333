"""Validation of targets: clear errors naming the argument and what is wrong."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Tuple

import numpy as np
from sklearn.exceptions import DataConversionWarning

from ..exceptions import DataError, ParameterError
from ..schema import _is_missing

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stacklevel() -> int:
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
                      stacklevel=_user_stacklevel())
        y = y.ravel()
    if y.ndim != 1:
        raise DataError(f"y must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise DataError(f"X and y have different lengths: X has {n_samples} rows, y has {y.shape[0]}")
    return y


def encode_binary_labels(y, n_samples: int) -> Tuple[np.ndarray, np.ndarray]:
    """Map two classes to -1/+1 (``classes[0] -> -1``, ``classes[1] -> +1``); returns (y_pm1, classes)."""
    y = as_1d(y, n_samples)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise DataError(f"y has {int((~np.isfinite(y)).sum())} NaN/inf value(s)")
    if y.dtype == object and _is_missing(y).any():
        raise DataError(f"y has {int(_is_missing(y).sum())} missing value(s)")
    try:
        classes = np.unique(y)
    except TypeError:  # labels of mixed, unorderable types (e.g. 1 and "a")
        raise DataError(f"y mixes label types ({sorted({type(v).__name__ for v in y})}); use labels "
                        f"of one type") from None
    if classes.size < 2:
        raise DataError(f"y has only one class ({classes.tolist()}); a classifier needs two classes")
    if classes.size > 2:
        if y.dtype.kind == "f" and np.any(classes != np.round(classes)):
            raise DataError(f"Unknown label type: y is continuous ({classes.size} distinct values); a "
                            f"classifier needs two classes (use DRORegressor for a continuous target)")
        raise DataError(f"Only binary classification is supported: y has {classes.size} classes "
                        f"({classes.tolist()[:10]}); map the task to two classes first (e.g. majority "
                        f"class vs rest)")
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
