"""Calibration of the ground metric and the radius from domain knowledge (sun2025 §3, Appendix A).

The user states, per feature, how likely it is to stay (about) the same under the shift, the
"probability of certainty" ``rho``; no target-domain data is needed.  The shift model behind it:

* numerical feature j: ``x~_j = x_j + Laplace(0, b_j)`` (maximum entropy, sun2025 (5)), with
  ``rho_j = P(|x~_j - x_j| <= u_j) = 1 - exp(-u_j / b_j)`` for a certainty half-width ``u_j``
  (the paper uses ``u_j = 0.4 sigma_j``);
* categorical feature l: keep the level with probability ``rho_l``, otherwise move to one of the
  other ``|C_l| - 1`` levels uniformly (sun2025 (6)).

A likelihood-ratio test at level ``theta`` on that model is exactly a Wasserstein budget
(Appendix A, (19)-(20) with the erratum of the spec's §9 item 5):

    gamma_j = 1 / b_j = -log(1 - rho_j) / u_j           (numerical_weight)
    delta_l = log(rho_l (|C_l| - 1) / (1 - rho_l))       (categorical_weight)
    eps     = -log(theta)                                (radius_from_theta)

``rho = 1`` gives an infinite weight: the feature is immutable (sun2025 §3 ranges, erratum 6).
Rounding the categorical weights (``round_weights``, the paper's integer / one-decimal settings)
can turn a small ``delta`` into 0, which makes the feature free to change; it raises by default.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Dict, List, Tuple

import numpy as np
from scipy.special import ndtr

from ..exceptions import ParameterError
from ..schema import FeatureSchema

ON_ZERO = ("raise", "warn", "ignore")

#: rejection sampling gives up (ParameterError) below this acceptance probability
MIN_ACCEPTANCE = 1e-4


# ------------------------------------------------------------------ validation helpers
def _floats(value, name: str, where: str) -> np.ndarray:
    """``value`` as a float array; NaN or a non-number raises naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes, Mapping)):
        raise ParameterError(f"{where}: {name} must be a number or an array of numbers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{where}: {name} must be a number or an array of numbers, "
                             f"got {value!r}") from None
    if np.isnan(arr).any():
        raise ParameterError(f"{where}: {name} must not be NaN, got {_show(value, np.isnan(arr))}")
    return arr


def _show(value, bad: np.ndarray) -> str:
    """The offending entries of ``value`` (the value itself for a scalar)."""
    arr = np.asarray(value, dtype=object)
    if arr.ndim == 0:
        return repr(value)
    idx = np.argwhere(np.asarray(bad))[:5]
    return ", ".join(f"{arr[tuple(i)]!r} at index {tuple(int(k) for k in i)}" for i in idx)


def _out(arr: np.ndarray):
    """A Python float for a 0-d result, the array otherwise."""
    return float(arr) if arr.ndim == 0 else arr


def _levels(n_levels, where: str) -> np.ndarray:
    """``n_levels`` as a float array of integers ``>= 2``; anything else raises."""
    levels = _floats(n_levels, "n_levels", where)
    bad = ~((levels >= 2) & np.isfinite(levels) & (levels == np.round(levels)))
    if bad.any():
        raise ParameterError(f"{where}: n_levels must be an integer >= 2, got {_show(n_levels, bad)}")
    return levels


def _broadcast(a: np.ndarray, b: np.ndarray, names: str, where: str):
    try:
        return np.broadcast_arrays(a, b)
    except ValueError:
        raise ParameterError(f"{where}: {names} have shapes {a.shape} and {b.shape}, which do not "
                             f"broadcast") from None


# ---------------------------------------------------------------------------- formulas
def numerical_weight(rho, half_width):
    """Cost per unit change of a numerical feature, ``gamma = -log(1 - rho) / u`` (sun2025 §3.1).

    Under the Laplace shift model ``x~ = x + Laplace(0, b)``, ``rho = P(|x~ - x| <= u) = 1 - exp(-u/b)``,
    so ``b = -u / log(1 - rho)`` and ``gamma = 1/b`` (sun2025 §3, Appendix A).

    Parameters
    ----------
    rho : float or array_like
        Probability of certainty in ``(0, 1]`` (scalar or array); ``rho = 1`` gives ``inf`` (the
        feature is immutable).
    half_width : float or array_like
        Certainty half-width ``u > 0`` in the feature's units (the paper: ``0.4 sigma``); broadcasts
        against ``rho``.

    Returns
    -------
    float or numpy.ndarray
        A float for scalar inputs, otherwise an array.

    Examples
    --------
    ``rho = 0.6``, ``u = 0.4`` gives ``gamma = 2.2907`` (``gamma sigma`` in the spec's §3.5 table for
    ``u = 0.4 sigma``).
    """
    where = "numerical_weight"
    r = _floats(rho, "rho", where)
    u = _floats(half_width, "half_width", where)
    bad = ~((r > 0) & (r <= 1))
    if bad.any():
        raise ParameterError(f"{where}: rho must be in (0, 1] (1 = immutable), got {_show(rho, bad)}")
    bad = ~((u > 0) & np.isfinite(u))
    if bad.any():
        raise ParameterError(f"{where}: half_width must be positive and finite, got "
                             f"{_show(half_width, bad)}")
    r, u = _broadcast(r, u, "rho and half_width", where)
    with np.errstate(divide="ignore"):
        return _out(-np.log1p(-r) / u)


def categorical_weight(rho, n_levels):
    """Cost of changing a categorical feature, ``delta = log(rho (|C| - 1) / (1 - rho))`` (sun2025 §3.2).

    Under the stay-or-switch model (keep the level with probability ``rho``, else move uniformly to
    one of the other ``|C| - 1`` levels), ``delta`` is the log-likelihood ratio of "stay" to "switch
    to a given other level" (sun2025 §3, Appendix A (20)).

    Parameters
    ----------
    rho : float or array_like
        Probability of certainty in ``[1/|C|, 1]``; ``rho = 1`` gives ``inf`` (immutable),
        ``rho = 1/|C|`` gives 0 (the feature is free to change: every level equally likely).
    n_levels : int or array_like of int
        Number of levels ``|C| >= 2`` (integer; broadcasts against ``rho``).

    Examples
    --------
    ``rho = 0.8``, ``|C| = 3`` gives ``log 8 = 2.0794``.
    """
    where = "categorical_weight"
    r = _floats(rho, "rho", where)
    r, levels = _broadcast(r, _levels(n_levels, where), "rho and n_levels", where)
    bad = ~((r >= 1.0 / levels) & (r <= 1))
    if bad.any():
        raise ParameterError(f"{where}: rho must be in [1/n_levels, 1] (1 = immutable, 1/n_levels = "
                             f"free), got {_show(r, bad)} with n_levels {_show(levels, bad)}")
    with np.errstate(divide="ignore"):
        delta = np.log(r) + np.log(levels - 1) - np.log1p(-r)
    # rho = 1/|C| is exactly 0 (free): keep rounding noise from giving +-1e-16
    return _out(np.where(r * levels <= 1 + 4 * np.finfo(float).eps, 0.0, delta))


def radius_from_theta(theta):
    """Wasserstein radius ``eps = -log(theta)`` of a likelihood-ratio threshold ``theta`` (sun2025 §3.3).

    ``theta`` in ``(0, 1]`` is the "level of robustness": ``theta = 1`` gives ``eps = 0`` (no
    robustness), ``theta -> 0`` is fully robust.  The paper's grid ``theta in {0.5, ..., 0.99}``
    gives ``eps in {0.69315, ..., 0.01005}`` (sun2025 Appendix A (20)).
    """
    where = "radius_from_theta"
    t = _floats(theta, "theta", where)
    bad = ~((t > 0) & (t <= 1))
    if bad.any():
        raise ParameterError(f"{where}: theta must be in (0, 1], got {_show(theta, bad)}")
    return _out(0.0 - np.log(t))


def round_weights(weights, decimals: int, on_zero: str = "raise"):
    """Round weights to ``decimals`` decimals (0 = integers, as the paper's settings (ii)/(iii), §5.1).

    Rounding shrinks the graph reformulation (fewer distinct budget values) but changes the
    ambiguity set.  A finite positive weight that rounds to 0 makes its feature FREE to change
    (the adversary moves it at no cost), e.g. ``rho = 0.6, |C| = 2``: ``delta = 0.4055 -> 0``.
    ``on_zero`` says what then happens: ``"raise"`` (default) a :class:`ParameterError` naming the
    features, ``"warn"`` a ``UserWarning`` (the zero weights are kept), ``"ignore"`` nothing.
    ``inf`` (immutable) stays ``inf``; a weight that is already 0 is left alone.

    Parameters
    ----------
    weights : float or array_like or dict
        A number, an array or a ``{column: weight}`` dict (returned as the same kind).
    decimals : int
        Integer ``>= 0``.
    on_zero : {"raise", "warn", "ignore"}
        ``"raise"``, ``"warn"`` or ``"ignore"``.

    Notes
    -----
    Ties round to even, as numpy (and Julia, used by the paper's code) do: ``0.5 -> 0``.
    """
    where = "round_weights"
    if isinstance(decimals, (bool, np.bool_)) or not isinstance(decimals, Integral) or decimals < 0:
        raise ParameterError(f"{where}: decimals must be an integer >= 0, got {decimals!r}")
    if on_zero not in ON_ZERO:
        raise ParameterError(f"{where}: on_zero must be one of {ON_ZERO}, got {on_zero!r}")
    if isinstance(weights, Mapping):
        keys = list(weights)
        w = np.array([_scalar(weights[k], k) for k in keys], dtype=float)
        labels = [repr(k) for k in keys]
    else:
        w = _floats(weights, "weights", where)
        labels = None

    def described(mask: np.ndarray) -> str:
        if labels is not None:
            return ", ".join(f"{labels[i]} ({float(w[i]):.6g})" for i in np.flatnonzero(mask)[:10])
        return _show(weights, mask)

    bad = np.isnan(w) | (w < 0)
    if bad.any():
        raise ParameterError(f"{where}: weights must be >= 0 (np.inf = immutable), got {described(bad)}")
    rounded = np.round(w, int(decimals))
    lost = np.isfinite(w) & (w > 0) & (rounded == 0)
    if lost.any() and on_zero != "ignore":
        msg = (f"{where}: weight(s) {described(lost)} round to 0 at decimals={decimals}, "
               f"which makes the feature(s) free to change (cost 0); use more decimals or a larger "
               f"rho, or pass on_zero='warn' / 'ignore' to accept")
        if on_zero == "raise":
            raise ParameterError(msg)
        from ..validation import user_stacklevel
        warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())
    if labels is not None:
        return {k: float(v) for k, v in zip(keys, rounded)}
    return _out(rounded)


def _scalar(value, key):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ParameterError(f"round_weights: the weight of {key!r} must be a number, got {value!r}")
    return float(value)


# ---------------------------------------------------------------------- rho sampling
def sample_certainty(seed, mean, sd: float = 0.2, n_levels=None, size=None):
    """Probabilities of certainty drawn as in sun2025 §5.1: ``Normal(mean, sd)`` by rejection sampling.

    The paper draws one normal per instance (``mean`` in {0.6, 0.7, 0.8, 0.9}, ``sd = 0.2``) and
    rejects draws outside the valid range (the reference code, ``perturbations.jl``):

    * categorical feature with ``|C|`` levels (``n_levels`` given): ``rho`` in the open interval
      ``(1/|C|, 1)`` (``(1/2, 1)`` for binary features), so ``delta`` is positive and finite;
    * numerical feature (``n_levels=None``): ``rho`` in ``(0, 1)``.  The reference code accepts the
      closed ``[0, 1]``; the endpoints have probability 0 and would give a zero or infinite weight,
      so they are rejected too.

    Each entry is the first accepted draw of its own sequence of normal draws, i.e. an exact sample
    of the normal truncated to the range; the draws are vectorized.

    Parameters
    ----------
    seed : int or SeedSequence or Generator or None
        ``None``, an int, a ``SeedSequence`` or a ``numpy.random.Generator`` (used as is).
    mean : float
        The normal's mean (finite).
    sd : float
        The normal's standard deviation (positive, finite).
    n_levels : int or array_like of int or None
        ``None`` (numerical features) or an integer / array of integers ``>= 2`` (one rho per entry,
        categorical features).
    size : int or tuple of int or None
        Number (or shape) of numerical rhos when ``n_levels`` is None; ``None`` gives a float.

    Raises
    ------
    ParameterError
        When the normal puts less than ``1e-4`` of its mass on a range (rejection sampling would not
        end).
    """
    where = "sample_certainty"
    mu = _floats(mean, "mean", where)
    s = _floats(sd, "sd", where)
    if mu.ndim or not np.isfinite(mu):
        raise ParameterError(f"{where}: mean must be a finite number, got {mean!r}")
    if s.ndim or not (np.isfinite(s) and s > 0):
        raise ParameterError(f"{where}: sd must be a positive finite number, got {sd!r}")
    mu, s = float(mu), float(s)
    if n_levels is None:
        if size is None:
            shape = ()
        else:
            try:
                shape = tuple(int(k) for k in np.atleast_1d(size))
            except (TypeError, ValueError):
                raise ParameterError(f"{where}: size must be None, an int or a shape, got {size!r}") from None
            if any(k < 0 for k in shape) or isinstance(size, (bool, np.bool_)):
                raise ParameterError(f"{where}: size must be None, an int >= 0 or a shape, got {size!r}")
        lower = np.zeros(shape)
    else:
        if size is not None:
            raise ParameterError(f"{where}: size is only for numerical features (n_levels=None); "
                                 f"with n_levels the output has the shape of n_levels, got size={size!r}")
        lower = 1.0 / _levels(n_levels, where)
    rng = np.random.default_rng(seed)
    return _out(_truncated_normal(rng, mu, s, lower, where))


def _truncated_normal(rng: np.random.Generator, mean: float, sd: float, lower: np.ndarray,
                      where: str) -> np.ndarray:
    """One draw of ``Normal(mean, sd)`` restricted to ``(lower, 1)`` per entry, by rejection."""
    flat = np.ravel(lower).astype(float)
    out = np.empty(flat.size)
    if flat.size == 0:
        return out.reshape(np.shape(lower))
    accept = ndtr((1.0 - mean) / sd) - ndtr((flat - mean) / sd)
    if accept.min() < MIN_ACCEPTANCE:
        raise ParameterError(
            f"{where}: Normal(mean={mean!r}, sd={sd!r}) puts only {accept.min():.2g} of its mass on the "
            f"valid range ({flat[np.argmin(accept)]:.4g}, 1) of rho; rejection sampling would not end "
            f"(choose a mean inside the range or a larger sd)")
    per_round = int(min(256, math.ceil(3.0 / accept.min())))
    pending = np.arange(flat.size)
    while pending.size:
        draws = rng.normal(mean, sd, size=(pending.size, per_round))
        ok = (draws > flat[pending, None]) & (draws < 1.0)
        hit = ok.any(axis=1)
        first = ok.argmax(axis=1)
        out[pending[hit]] = draws[hit, first[hit]]
        pending = pending[~hit]
    return out.reshape(np.shape(lower))


def sample_feature_certainty(X, mean, sd: float = 0.2, seed=None,
                             categorical_features=None) -> Tuple[Dict[str, float], Dict[str, float]]:
    """``(rho_numerical, rho_categorical)`` dicts for the columns of ``X``, drawn with
    :func:`sample_certainty` (one ``Normal(mean, sd)`` for all features, as in sun2025 §5.1).

    Columns are recognised as in :class:`~drokit.schema.FeatureSchema` (``categorical_features``
    overrides); categorical ranges use each column's number of levels.  Pass the result to
    :func:`calibrate` or :meth:`GroundMetric.calibrated`.
    """
    schema = FeatureSchema.infer(X, categorical_features=categorical_features)
    for name, levels in zip(schema.categorical_names, schema.levels):
        if levels < 2:
            raise ParameterError(f"sample_feature_certainty: categorical column {name!r} has a single "
                                 f"level; drop it (a constant feature cannot shift)")
    rng = np.random.default_rng(seed)
    rho_z = sample_certainty(rng, mean, sd, n_levels=schema.levels) if schema.n_categorical else []
    rho_x = sample_certainty(rng, mean, sd, size=schema.n_numerical)
    return ({n: float(r) for n, r in zip(schema.numerical_names, np.atleast_1d(rho_x))},
            {n: float(r) for n, r in zip(schema.categorical_names, np.atleast_1d(rho_z))})


# ---------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class Calibration:
    """The calibrated shift model of every feature (sun2025 §3): what the weights are computed from.

    Attributes
    ----------
    rho_numerical : dict of str to float
        ``{column: rho}`` of the numerical columns, ``rho`` in (0, 1] (1 = immutable).
    half_width : dict of str to float
        ``{column: u}``, the certainty half-width in the column's units.
    rho_categorical : dict of str to float
        ``{column: rho}`` of the categorical columns, ``rho`` in [1/|C|, 1].
    categories : dict of str to list
        ``{column: levels}`` of the categorical columns (``|C| = len(levels)``).
    """

    rho_numerical: Dict[str, float]
    half_width: Dict[str, float]
    rho_categorical: Dict[str, float]
    categories: Dict[str, list]

    @property
    def n_levels(self) -> Dict[str, int]:
        return {c: len(levels) for c, levels in self.categories.items()}

    @property
    def gamma(self) -> Dict[str, float]:
        """``{column: -log(1 - rho) / u}`` (:func:`numerical_weight`)."""
        return {c: numerical_weight(r, self.half_width[c]) for c, r in self.rho_numerical.items()}

    @property
    def delta(self) -> Dict[str, float]:
        """``{column: log(rho (|C| - 1) / (1 - rho))}`` (:func:`categorical_weight`), unrounded."""
        return {c: categorical_weight(r, len(self.categories[c]))
                for c, r in self.rho_categorical.items()}

    @property
    def laplace_scale(self) -> Dict[str, float]:
        """``{column: b = -u / log(1 - rho)}`` of the Laplace shift; 0 for an immutable column."""
        return {c: laplace_scale(r, self.half_width[c]) for c, r in self.rho_numerical.items()}


def laplace_scale(rho, half_width):
    """Laplace scale ``b = -u / log(1 - rho) = 1 / gamma`` of the numerical shift model (sun2025 §3.1);
    0 (no shift) for ``rho = 1``."""
    gamma = np.asarray(numerical_weight(rho, half_width), dtype=float)
    with np.errstate(divide="ignore"):
        return _out(np.where(np.isinf(gamma), 0.0, 1.0 / gamma))


def calibrate(X, rho_numerical=None, rho_categorical=None, half_width=0.4, half_width_in_std: bool = True,
              categorical_features=None) -> Calibration:
    """The shift model of the columns of training data ``X`` from probabilities of certainty (sun2025 §3).

    Parameters
    ----------
    X : pandas.DataFrame or array_like
        Training data (a DataFrame; an array works with ``categorical_features``).  Numerical and
        categorical columns and the levels of each categorical column are recognised as in
        :class:`~drokit.schema.FeatureSchema`.
    rho_numerical : float or dict or None
        One rho in (0, 1] for every numerical column, or ``{column: rho}`` naming each numerical
        column; required when ``X`` has numerical columns.
    rho_categorical : float or dict or None
        One rho in [1/|C|, 1] for every categorical column, or ``{column: rho}``.
    half_width : float or dict
        Certainty half-width ``u_j`` (scalar or ``{column: value}``).  With ``half_width_in_std=True``
        (default) it is a multiple of the column's sample standard deviation in ``X`` (ddof = 1, the
        paper's ``u_j = 0.4 sigma_j``); otherwise it is in the column's units.
    categorical_features : array_like or None
        Overrides which columns are categorical (names, indices or a mask).
    """
    schema = FeatureSchema.infer(X, categorical_features=categorical_features)
    num, cat = schema.numerical_names, schema.categorical_names
    for name, levels in zip(cat, schema.categories):
        if len(levels) < 2:
            raise ParameterError(f"calibrate: categorical column {name!r} has a single level "
                                 f"{levels!r}; drop it (a constant feature cannot shift)")
    rho_x = _per_column(rho_numerical, num, "rho_numerical", "numerical")
    rho_z = _per_column(rho_categorical, cat, "rho_categorical", "categorical")
    hw = _per_column(half_width, num, "half_width", "numerical")
    for name in num:  # every value with the column's name in the message
        _checked(numerical_weight, name, "rho_numerical", rho_x[name], 1.0)
        u = hw[name]
        if (isinstance(u, (bool, np.bool_)) or not isinstance(u, (Real, np.floating, np.integer))
                or not (np.isfinite(u) and u > 0)):
            raise ParameterError(f"calibrate: half_width of column {name!r} must be a positive finite "
                                 f"number, got {u!r}")
    for name, levels in zip(cat, schema.categories):
        _checked(categorical_weight, name, "rho_categorical", rho_z[name], len(levels))
    if num and half_width_in_std:
        data = schema.transform(X)
        if data.n_samples < 2:
            raise ParameterError("calibrate: half_width_in_std=True needs at least 2 rows of X for a "
                                 "standard deviation; pass half_width_in_std=False and absolute widths")
        std = data.X.std(axis=0, ddof=1)
        for name, s in zip(num, std):
            if not s > 0:
                raise ParameterError(f"calibrate: numerical column {name!r} is constant in X (std 0), so "
                                     f"its half_width {hw[name]!r} * std is 0; drop the column or pass "
                                     f"half_width_in_std=False with an absolute width")
        hw = {name: float(hw[name]) * float(s) for name, s in zip(num, std)}
    return Calibration(rho_numerical={n: float(rho_x[n]) for n in num},
                       half_width={n: float(hw[n]) for n in num},
                       rho_categorical={n: float(rho_z[n]) for n in cat},
                       categories={n: list(c) for n, c in zip(cat, schema.categories)})


def _checked(formula, column: str, arg: str, rho, second):
    try:
        return formula(rho, second)
    except ParameterError as exc:
        raise ParameterError(f"calibrate: {arg} of column {column!r}: {exc}") from None


def _per_column(value, names: List[str], arg: str, kind: str) -> Dict[str, object]:
    """``{name: value}`` for every column from a scalar or a dict naming each column exactly."""
    if not names:
        if isinstance(value, Mapping) and value:
            raise ParameterError(f"calibrate: {arg} names {list(value)}, but X has no {kind} columns")
        return {}
    if value is None:
        raise ParameterError(f"calibrate: {arg} is required: X has {kind} columns {names}")
    if isinstance(value, Mapping):
        keys = {str(k): v for k, v in value.items()}
        unknown = [k for k in value if str(k) not in names]
        missing = [n for n in names if n not in keys]
        if unknown:
            raise ParameterError(f"calibrate: {arg} names unknown column(s) {unknown}; the {kind} "
                                 f"columns are {names}")
        if missing:
            raise ParameterError(f"calibrate: {arg} has no value for the {kind} column(s) {missing}; "
                                 f"give every {kind} column a value (or one number for all)")
        return keys
    if isinstance(value, (Real, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return {n: value for n in names}
    raise ParameterError(f"calibrate: {arg} must be a number or a {{column: value}} dict, got {value!r}")


__all__ = ["numerical_weight", "categorical_weight", "radius_from_theta", "round_weights",
           "sample_certainty", "sample_feature_certainty", "laplace_scale", "Calibration", "calibrate"]
