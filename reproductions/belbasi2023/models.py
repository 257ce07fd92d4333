"""belbasi2023's models (package docstring, 3.-6.): the ground metric, the solver options, the numerical
standardization and :class:`Belbasi2023Model`, one distinct problem of Tables 2-4."""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np
import pandas as pd

import drokit as dk

from reproductions.protocol import DesignedClassifier, dummies
from reproductions.protocol import cp_options as cp_method_options

#: ``--cp-options`` (see :func:`solver_options`); below this radius phase 1 was slow (package docstring, 6.)
CP_CHOICES = ("measured", "defaults", "fast")
PHASE_ONE_MIN_RADIUS = 1e-4


def categorical_columns(X: pd.DataFrame) -> List[str]:
    """The columns of ``X`` with a pandas categorical dtype (the categorical features z)."""
    return [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]


def numerical_columns(X: pd.DataFrame) -> List[str]:
    """The other columns of ``X`` (the numerical features x)."""
    categorical = set(categorical_columns(X))
    return [c for c in X.columns if c not in categorical]


def ground_metric(design: str, kappa: float, n_categorical: int, n_numerical: int,
                  normalized: bool = False) -> dk.GroundMetric:
    """belbasi2023 (2a)-(2b) with (kappa_z, p) = (1, 1) and the l1 norm (package docstring, 4.).

    ``design="mixed"``: ||x - x'||_1 + #(changed categorical features) + kappa 1[y != y'];
    ``design="conf"``: ||(x, z) - (x', z')||_1 + kappa 1[y != y'] on the numerical and dummy columns (ConF).
    ``normalized``: divided by ``n_categorical + n_numerical + kappa`` (the sister paper's code, §B9).
    """
    label = dk.LabelCost(kappa=kappa)
    if design == "conf":
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=label)
    else:
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(), label=label)
    return metric.scaled(1.0 / (n_categorical + n_numerical + kappa)) if normalized else metric


def solver_options(loss: str, design: str, eps: float, alpha: float, n_categorical: int,
                   cp_options: str = "measured") -> Dict[str, object]:
    """The ``method`` / ``method_options`` a fit passes to ``dk.DROClassifier`` (package docstring, 6.): ``{}``
    (drokit's ``method="auto"`` and defaults) for radius 0, ConF, the hinge loss, ``cp_options="defaults"``
    and, with ``"measured"``, for a fit without l2 term at a radius >= ``PHASE_ONE_MIN_RADIUS``; otherwise
    ``method="cutting_plane"`` with ``reproductions.protocol.cp_options`` (no phase 1, configuration cuts)."""
    if cp_options not in CP_CHOICES:
        raise ValueError(f"cp_options must be one of {CP_CHOICES}, got {cp_options!r}")
    if eps == 0 or design != "mixed" or loss == "hinge" or cp_options == "defaults":
        return {}
    if cp_options == "measured" and alpha == 0 and eps >= PHASE_ONE_MIN_RADIUS:
        return {}
    return {"method": "cutting_plane", "method_options": cp_method_options(n_categorical)}


def fit_standardizer(X: pd.DataFrame, columns: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (ddof = 1, NaN ignored; 1 where it is 0 or undefined) of the numerical
    ``columns`` of the fit rows ``X`` (package docstring, 3.)."""
    values = X[list(columns)].to_numpy(dtype=float)
    if values.shape[1] == 0:
        return np.zeros(0), np.ones(0)
    mean = np.nan_to_num(np.nanmean(values, axis=0)) if len(values) else np.zeros(values.shape[1])
    scale = np.nanstd(values, axis=0, ddof=1) if len(values) > 1 else np.ones(values.shape[1])
    return mean, np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)


def standardize(X: pd.DataFrame, columns: Sequence[str], mean: np.ndarray, scale: np.ndarray) -> pd.DataFrame:
    """``X`` with its numerical ``columns`` mapped to (x - mean) / scale and a missing value to 0 (the mean)."""
    out = X.copy()
    if len(columns):
        values = (X[list(columns)].to_numpy(dtype=float) - mean) / scale
        out[list(columns)] = np.nan_to_num(values, nan=0.0)
    return out


class Belbasi2023Model(DesignedClassifier):
    """One distinct problem of Tables 2-4 (package docstring, 5.): a loss, a design (``"mixed"``: the
    categorical columns as categorical features; ``"conf"``: their dummies as numerical features), the
    label weight (``"1"`` or ``"K"``, K = the number of categorical columns), the radius ``eps`` and the l2
    weight ``alpha`` (drokit ``l2_penalty``: alpha ||beta||_2^2, intercept excluded).

    ``X`` must be a DataFrame of :func:`load_belbasi2023`; the numerical columns are standardized with the
    fit rows' statistics (package docstring, 3.).  Predictions: class 1 (the original majority class) when
    the decision value is >= -TIE_TOL (package docstring, 9.).
    """

    def __init__(self, loss: str = "logistic", design: str = "mixed", kappa_y: str = "1", eps: float = 0.0,
                 alpha: float = 0.0, normalized: bool = False, cp_options: str = "measured"):
        self.loss, self.design, self.kappa_y = loss, design, kappa_y
        self.eps, self.alpha = eps, alpha
        self.normalized, self.cp_options = normalized, cp_options

    def build(self, n_categorical: int, n_numerical: int) -> dk.DROClassifier:
        """The drokit estimator this model fits, for data with the given numbers of features."""
        if self.design not in ("mixed", "conf") or self.kappa_y not in ("1", "K"):
            raise ValueError(f"design must be 'mixed' or 'conf' and kappa_y '1' or 'K', got {self.design!r}, "
                             f"{self.kappa_y!r}")
        kappa = 1.0 if self.kappa_y == "1" else float(n_categorical)
        eps = float(self.eps)
        metric = ground_metric(self.design, kappa, n_categorical, n_numerical, bool(self.normalized))
        extra = solver_options(self.loss, self.design, eps, float(self.alpha), n_categorical, self.cp_options)
        return dk.DROClassifier(loss=self.loss, ambiguity=dk.Wasserstein(metric, radius=eps),
                                l2_penalty=float(self.alpha), on_inaccurate="warn", **extra)

    def _design(self, X: pd.DataFrame):
        Z = standardize(X, self.numerical_, self.mean_, self.scale_)
        if self.design == "mixed":
            return Z
        return np.hstack([Z[self.numerical_].to_numpy(dtype=float), dummies(Z[self.categorical_])])

    def _prepare(self, X: pd.DataFrame) -> dk.DROClassifier:
        """The fit rows' columns and standardization, and the drokit estimator for them."""
        self.categorical_ = categorical_columns(X)
        self.numerical_ = numerical_columns(X)
        self.mean_, self.scale_ = fit_standardizer(X, self.numerical_)
        return self.build(len(self.categorical_), len(self.numerical_))
