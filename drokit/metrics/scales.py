"""Numerical features measured in their own spread: ``NormCost(scale="std" | "mad" | "range")``.

With raw units, ``||Gamma (x - x')||_p`` prices a dollar of income and a year of age alike, so the radius
means different things per feature.  A scaled cost divides each weight by the feature's spread ``s_j`` on the
**training rows**,

    gamma_j  ->  gamma_j / s_j,      s_j = std_j (sample std, ddof 1; weighted with sample weights),
                                          1.4826 MAD_j (median absolute deviation, consistent with the std
                                          for normal data; robust to outliers), or max_j - min_j,

so that moving feature ``j`` by one spread costs ``gamma_j``.  ``s_j`` is fitted once, where the model is
fitted, and kept in the fitted ball (``model.ambiguity_``): predictions, ``dk.worst_case`` and ``dk.stability``
of that model use the same ``s_j``, whatever data they are given.  A column constant on the training rows
keeps its raw units (``s_j = 1``, as scikit-learn's ``StandardScaler``).
"""

from __future__ import annotations

import copy
import warnings
from typing import List, Optional, Sequence

import numpy as np

from ..exceptions import ParameterError

SCALES = ("std", "mad", "range")
#: ``1 / Phi^{-1}(3/4)``: the MAD of a normal sample times this estimates its standard deviation
MAD_TO_STD = 1.482602218505602
#: a fit whose numerical features keep their raw units (default weights) warns when one feature's standard
#: deviation is more than this many times another's
RAW_UNITS_RATIO = 100.0


def check_scale(scale) -> Optional[str]:
    """``scale`` as one of :data:`SCALES` or ``None``; a clear error otherwise."""
    if scale is None or (isinstance(scale, str) and scale in SCALES):
        return scale
    raise ParameterError(f"NormCost scale must be None (raw units) or one of {SCALES}, got {scale!r}")


def feature_spreads(X: np.ndarray, scale: str, sample_weight: Optional[np.ndarray] = None) -> np.ndarray:
    """The spread ``s_j`` of every column of ``X`` (module docstring); 1 where a column is constant.
    ``sample_weight`` (probabilities) weighs the standard deviation; the MAD and the range use the rows as they
    are."""
    X = np.asarray(X, dtype=float)
    if X.shape[1] == 0:
        return np.ones(0)
    if X.shape[0] < 2:
        raise ParameterError(f"NormCost(scale={scale!r}) needs at least 2 training rows to measure spreads")
    if scale == "std":
        if sample_weight is None:
            s = X.std(axis=0, ddof=1)
        else:
            p = np.asarray(sample_weight, dtype=float)
            mean = p @ X
            s = np.sqrt(np.maximum(p @ (X - mean) ** 2, 0.0))
    elif scale == "mad":
        s = MAD_TO_STD * np.median(np.abs(X - np.median(X, axis=0)), axis=0)
    elif scale == "range":
        s = X.max(axis=0) - X.min(axis=0)
    else:
        raise ParameterError(f"NormCost scale must be one of {SCALES}, got {scale!r}")
    return np.where(np.isfinite(s) & (s > 0), s, 1.0)


def scaled_norm_cost(cost, X: np.ndarray, names: List[str], sample_weight=None,
                     spreads: Optional[Sequence[float]] = None):
    """The fitted copy of the scaled :class:`~drokit.NormCost` ``cost``: weights ``gamma_j / s_j`` in column order
    and ``scale=None``; ``fitted_scale`` records the kind and the spreads ``{column: s_j}``.  ``spreads``: use
    these ``s_j`` (a fitted model's) instead of measuring them on ``X``."""
    kind = check_scale(cost.scale)
    gamma = cost.unscaled_weights(names)
    s = np.asarray(spreads, dtype=float) if spreads is not None else feature_spreads(X, kind, sample_weight)
    if s.shape != gamma.shape:
        raise ParameterError(f"NormCost(scale={kind!r}): {s.size} spreads for {gamma.size} numerical features")
    with np.errstate(invalid="ignore"):
        weights = np.where(np.isinf(gamma) | (gamma == 0), gamma, gamma / s)
    out = type(cost)(p=cost.p, weights=weights)
    out.fitted_scale = {"kind": kind, "spreads": dict(zip(names, s.tolist()))}
    return out


def fitted_spreads(model, names: List[str]) -> Optional[np.ndarray]:
    """The spreads a fitted drokit estimator measured its numerical features in (``None`` when it used raw
    units, or for any other model)."""
    ambiguity = getattr(model, "ambiguity_", None)
    metric = getattr(ambiguity, "metric", None)
    fitted = getattr(getattr(metric, "numerical", None), "fitted_scale", None)
    if not fitted:
        return None
    spreads = fitted["spreads"]
    if list(spreads) != list(names):
        return None
    return np.array([spreads[n] for n in names], dtype=float)


def fitted_metric(metric, X_numerical: Optional[np.ndarray], names: List[str], sample_weight=None,
                  spreads: Optional[np.ndarray] = None):
    """The :class:`~drokit.GroundMetric` ``metric`` with its scaled ``NormCost`` fitted on ``X_numerical`` (or to
    ``spreads``); ``metric`` itself when its numerical cost keeps raw units (or there is nothing to fit on)."""
    from ..params import component
    cost = component(metric, "numerical")
    if getattr(cost, "scale", None) is None or (X_numerical is None and spreads is None):
        return metric
    out = copy.copy(metric)
    out.numerical = scaled_norm_cost(cost, X_numerical, names, sample_weight, spreads)
    return out


def with_fitted_scales(ambiguity, X_numerical: Optional[np.ndarray], names: List[str], sample_weight=None,
                       spreads: Optional[np.ndarray] = None):
    """``ambiguity`` (a Wasserstein ball or an OT-moment set) with its metric fitted by :func:`fitted_metric`;
    itself when there is nothing to fit."""
    from ..params import component
    if not hasattr(ambiguity, "metric") or "metric" not in getattr(ambiguity, "DEFAULT_COMPONENTS", {}):
        return ambiguity
    metric = component(ambiguity, "metric")
    fitted = fitted_metric(metric, X_numerical, names, sample_weight, spreads)
    if fitted is metric:
        return ambiguity
    out = copy.copy(ambiguity)
    out.metric = fitted
    return out


def warn_raw_units(cost, X_numerical: np.ndarray, names: List[str], gamma: np.ndarray, stacklevel: int = 4) -> None:
    """Warn when the numerical features keep raw units (``NormCost`` with default weights, no ``scale``) and
    one feature's standard deviation is more than :data:`RAW_UNITS_RATIO` times another's."""
    if getattr(cost, "scale", None) is not None or getattr(cost, "fitted_scale", None) or cost.weights is not None:
        return
    X = np.asarray(X_numerical, dtype=float)
    if X.shape[0] < 2 or X.shape[1] < 2:
        return
    priced = np.isfinite(gamma) & (gamma > 0)
    std = X.std(axis=0, ddof=1)
    keep = np.flatnonzero(priced & np.isfinite(std) & (std > 0))
    if keep.size < 2:
        return
    hi, lo = keep[np.argmax(std[keep])], keep[np.argmin(std[keep])]
    ratio = std[hi] / std[lo]
    if ratio <= RAW_UNITS_RATIO:
        return
    warnings.warn(
        f"the numerical features are priced in raw units, and their standard deviations differ {ratio:.0f}-fold "
        f"({names[hi]!r}: {std[hi]:.3g}, {names[lo]!r}: {std[lo]:.3g}): moving {names[lo]!r} by one standard "
        f"deviation costs {ratio:.0f} times less than {names[hi]!r}, so the radius means different things per "
        f"feature.  Measure them in their spread with NormCost(scale='std') (fitted on the training rows, kept "
        f"in the model), or standardize them in a Pipeline; explicit NormCost weights silence this",
        UserWarning, stacklevel=stacklevel)
