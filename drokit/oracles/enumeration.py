"""Brute-force enumeration of categorical configurations (the reference every oracle is tested against).

For sample ``n`` and every ``z`` in ``Z = C_1 x ... x C_m`` whose distance ``D(z, z_n)`` is finite
(immutable features stay at their observed level), and for classification with finite ``kappa`` both
labels, one *configuration row* ``(n, z, flip)`` is produced with transport cost
``D(z, z_n) + kappa * flip``.  This is belbasi2023 Observation 1 / problem (3) and sun2025 Theorem 1:
``N * |Z|`` (times 2 with label flips) rows, exponential in the number of categorical features.
Complexity: O(N |Z| m) time and memory.
"""

from __future__ import annotations

import numpy as np

from ..instance import DROInstance
from .base import NEAR_LIMIT, Separation, SeparationOracle, largest_per_sample
# the row algebra lives in .rows; its names stay importable from here
from .design import row_design
from .rows import (ConfigurationRows, FractionalRows, RowIndex, all_levels_grid, concat_rows,
                   count_configuration_rows, enumerate_configurations, row_keys, take_rows, unique_rows)

__all__ = ["EnumerationOracle", "ConfigurationRows", "FractionalRows", "RowIndex", "all_levels_grid", "concat_rows",
           "count_configuration_rows", "enumerate_configurations", "row_design", "row_keys", "take_rows",
           "unique_rows"]


class EnumerationOracle(SeparationOracle):
    """Exact separation by brute force over all configuration rows (vectorized).

    Builds the design of every row once (``K = N |Z|`` rows, times 2 with label flips); each call then
    costs one sparse matrix-vector product and a per-sample max: O(K (n + m)).  It is the reference
    oracle and the practical one whenever the enumeration fits in memory.
    """

    name = "enumeration"
    exact = True

    def __init__(self, inst: DROInstance):
        self.inst = inst
        self.rows = enumerate_configurations(inst)
        self.n_samples = inst.n_samples
        self._design = row_design(inst, self.rows)
        self._sign, self._shift = inst.row_signs(self.rows.sample, self.rows.flip)

    def losses(self, intercept: float, coef: np.ndarray) -> np.ndarray:
        f = self._design @ coef + intercept
        return self.inst.loss.value(self._sign * f - self._shift)

    def separate(self, intercept, coef, lam, s, near_margin: float = 0.0, near_limit: int = NEAR_LIMIT) -> Separation:
        phi = self.losses(intercept, coef) - lam * self.rows.cost - s[self.rows.sample]
        sample = self.rows.sample
        order = np.lexsort((-phi, sample))
        first = order[np.r_[True, sample[order][1:] != sample[order][:-1]]]
        best = np.full(self.n_samples, -np.inf)
        best[sample[first]] = phi[first]
        near = np.zeros(0, dtype=int)
        if near_margin > 0:
            near = np.setdiff1d(np.flatnonzero(phi >= best[sample] - near_margin), first)
            near = near[largest_per_sample(sample[near], phi[near], near_limit)]
        return Separation(rows=take_rows(self.rows, first), violation=best,
                          near=take_rows(self.rows, near))
