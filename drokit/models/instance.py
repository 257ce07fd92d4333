"""A DRO problem bound to data: loss, resolved ground metric, radius and encoded samples."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..losses.base import CLASSIFICATION, Loss
from ..metrics.ground import ResolvedMetric
from ..schema import FeatureSchema, MixedData


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

    def design(self) -> sp.csr_matrix:
        """``[X_num, dummies(Z)]`` of the training samples."""
        return self.schema.design(self.data)

    def mutable_configurations(self) -> int:
        """``prod_l a_l`` over categorical features that may change (delta_l < inf)."""
        levels = self.schema.levels
        mutable = np.isfinite(self.metric.delta)
        return int(np.prod(levels[mutable].astype(float))) if levels.size else 1
