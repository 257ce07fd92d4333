"""A DRO problem bound to data: loss, resolved ground metric, radius and encoded samples."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np
import scipy.sparse as sp

from ..losses.base import CLASSIFICATION, Loss
from ..metrics.ground import ResolvedMetric
from ..schema import FeatureSchema, MixedData


@dataclass(frozen=True)
class LabelFamily:
    """One family of configuration rows per sample: the loss argument is ``u = sigma f - shift`` and
    moving into the family costs ``extra_cost`` on top of the categorical distance (belbasi2023 Props. 1
    and 3): the kept label (classification, ``sigma = y``), the flipped label (``sigma = -y``, cost
    ``kappa``), or the residual (regression, ``sigma = 1``, ``shift = y``)."""

    sigma: np.ndarray     # (N,)
    shift: np.ndarray     # (N,)
    extra_cost: float
    flip: bool


@dataclass
class DROInstance:
    """Everything a reformulation needs.

    ``y`` is in {-1, +1} for classification and real for regression.  The hypothesis is
    ``f(x, z) = beta_0 + beta_x^T x + beta_z^T dummies(z)``.
    """

    loss: Loss
    task: str
    schema: FeatureSchema
    data: MixedData
    y: np.ndarray
    metric: ResolvedMetric
    radius: float
    fit_intercept: bool = True

    @property
    def n_samples(self) -> int:
        return self.data.n_samples

    @property
    def n_numerical(self) -> int:
        return self.schema.n_numerical

    @property
    def n_categorical(self) -> int:
        return self.schema.n_categorical

    @property
    def is_classification(self) -> bool:
        return self.task == CLASSIFICATION

    @property
    def label_flips(self) -> bool:
        """Whether label-flip constraints exist (classification with finite kappa)."""
        return self.is_classification and np.isfinite(self.metric.kappa)

    def label_families(self) -> List[LabelFamily]:
        """The label families of every sample (one, or two with finite kappa in classification)."""
        y = np.asarray(self.y, dtype=float)
        if not self.is_classification:
            return [LabelFamily(np.ones_like(y), y, 0.0, False)]
        families = [LabelFamily(y, np.zeros_like(y), 0.0, False)]
        if self.label_flips:
            families.append(LabelFamily(-y, np.zeros_like(y), float(self.metric.kappa), True))
        return families

    def row_signs(self, sample: np.ndarray, flip: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(sigma, shift)`` of configuration rows: their loss argument is ``u = sigma f - shift``
        (``sigma = +-y`` with the label flip, ``shift = 0``; regression ``sigma = 1``, ``shift = y``)."""
        y = np.asarray(self.y, dtype=float)[sample]
        if self.is_classification:
            return y * np.where(flip, -1.0, 1.0), np.zeros_like(y)
        return np.ones_like(y), y

    def mutable_categorical(self) -> np.ndarray:
        """Categorical features (schema positions) that can change: finite weight and >= 2 levels."""
        return np.flatnonzero(np.isfinite(self.metric.delta) & (self.schema.levels > 1))

    def design(self) -> sp.csr_matrix:
        """``[X_num, dummies(Z)]`` of the training samples."""
        return self.schema.design(self.data)

    def mutable_configurations(self) -> int:
        """``prod_l a_l`` over categorical features that may change (delta_l < inf): the categorical
        configurations per sample, as an exact Python integer (it can exceed any float, e.g. 10^330)."""
        levels = self.schema.levels
        mutable = np.isfinite(self.metric.delta)
        return math.prod(int(a) for a in levels[mutable]) if levels.size else 1
