"""Validation of targets: clear errors naming the argument and what is wrong."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ..exceptions import DataError

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


def _as_1d(y, n_samples: int) -> np.ndarray:
    if pd is not None and isinstance(y, (pd.Series, pd.DataFrame)):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise DataError(f"y must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise DataError(f"X and y have different lengths: X has {n_samples} rows, y has {y.shape[0]}")
    return y


def _missing(y: np.ndarray) -> np.ndarray:
    if pd is not None:
        return np.asarray(pd.isna(y), dtype=bool)
    return np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in y])


def encode_binary_labels(y, n_samples: int) -> Tuple[np.ndarray, np.ndarray]:
    """Map two classes to -1/+1 (``classes[0] -> -1``, ``classes[1] -> +1``); returns (y_pm1, classes)."""
    y = _as_1d(y, n_samples)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise DataError(f"y has {int((~np.isfinite(y)).sum())} NaN/inf value(s)")
    if y.dtype == object and _missing(y).any():
        raise DataError(f"y has {int(_missing(y).sum())} missing value(s)")
    classes = np.unique(y)
    if classes.size < 2:
        raise DataError(f"y has a single class ({classes.tolist()}); a classifier needs two classes")
    if classes.size > 2:
        raise DataError(f"y has {classes.size} classes ({classes.tolist()[:10]}); drokit classifiers are "
                        f"binary: map the task to two classes first (e.g. majority class vs rest)")
    return np.where(y == classes[1], 1.0, -1.0), classes


def check_target(y, n_samples: int) -> np.ndarray:
    """A finite float regression target."""
    y = _as_1d(y, n_samples)
    try:
        y = y.astype(float)
    except (TypeError, ValueError):
        raise DataError("y must be numeric for regression") from None
    bad = ~np.isfinite(y)
    if bad.any():
        raise DataError(f"y has {int(bad.sum())} NaN/inf value(s) (first at row {int(np.argmax(bad))})")
    return y
