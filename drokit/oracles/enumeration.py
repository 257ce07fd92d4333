"""Brute-force enumeration of categorical configurations (the reference every oracle is tested against).

For sample ``n`` and every ``z`` in ``Z = C_1 x ... x C_m`` whose distance ``D(z, z_n)`` is finite
(immutable features stay at their observed level), and for classification with finite ``kappa`` both
labels, one *configuration row* ``(n, z, flip)`` is produced with transport cost
``D(z, z_n) + kappa * flip``.  This is belbasi2023 Observation 1 / problem (3) and sun2025 Theorem 1:
``N * |Z|`` (times 2 with label flips) rows, exponential in the number of categorical features.
Complexity: O(N |Z| m) time and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import scipy.sparse as sp

from ..models.instance import DROInstance
from .base import NEAR_LIMIT, Separation, SeparationOracle, largest_per_sample


@dataclass
class ConfigurationRows:
    """``K`` configuration rows: sample index, categorical codes, transport cost, label flip."""

    sample: np.ndarray  # (K,) int
    Z: np.ndarray       # (K, m) int codes
    cost: np.ndarray    # (K,) D(z, z_n) + kappa * flip
    flip: np.ndarray    # (K,) bool

    @property
    def size(self) -> int:
        return int(self.sample.shape[0])


@dataclass
class FractionalRows:
    """Rows that are *distributions* over configurations of one sample (a product of level distributions: the
    smoothed dual point of :mod:`drokit.conic.reformulations.slope_split`, the barrier master's on level-max rows,
    :mod:`drokit.conic.reformulations.level_max`): their encoded row ``a_k`` is the expected one, ``matrix``
    (K, len(theta) without lambda), and ``cost`` the expected transport cost (or more: a valid, looser bound).  A
    Lagrangian term ``m_k (alpha_k u_k - L*(alpha_k) - lambda c_k)`` of such a row is the mean of the same term
    over its configurations, each below ``L(u) - lambda c`` (Fenchel), so it enters the bound like a configuration
    row: ``u`` and ``c`` are linear in the distribution."""

    sample: np.ndarray      # (K,) int
    flip: np.ndarray        # (K,) bool
    cost: np.ndarray        # (K,)
    matrix: sp.csr_matrix   # (K, n_theta) expected encoded rows [1, x_n, E dummies]

    @property
    def size(self) -> int:
        return int(self.sample.shape[0])

    def take(self, index: np.ndarray) -> "FractionalRows":
        return FractionalRows(self.sample[index], self.flip[index], self.cost[index], self.matrix[index])



def all_levels_grid(levels: np.ndarray) -> np.ndarray:
    """Every code vector of ``prod_l levels[l]`` as a (|Z|, m) array (lexicographic order)."""
    m = len(levels)
    if m == 0:
        return np.zeros((1, 0), dtype=np.int64)
    grids = np.indices(tuple(int(a) for a in levels)).reshape(m, -1).T
    return grids.astype(np.int64)


def count_configuration_rows(inst: DROInstance) -> int:
    """Number of rows :func:`enumerate_configurations` would produce (without building them): samples x
    categorical configurations of the mutable features x 2 label values when labels may flip
    (classification with finite kappa; in regression kappa moves the response, adding no rows).  An exact
    integer, however large."""
    return inst.n_samples * inst.mutable_configurations() * (2 if inst.label_flips else 1)


def enumerate_configurations(inst: DROInstance, nominal_only: bool = False) -> ConfigurationRows:
    """All configuration rows of ``inst``; with ``nominal_only`` only the observed samples
    (``z = z_n``, label kept)."""
    N = inst.n_samples
    Zs = inst.data.Z
    m = Zs.shape[1]
    if nominal_only or m == 0:
        sample = np.arange(N)
        Z = Zs.copy()
        cost = np.zeros(N)
    else:
        delta = inst.metric.delta
        mutable = np.isfinite(delta)
        grid = all_levels_grid(inst.schema.levels[mutable])          # (G, m_mut)
        G = grid.shape[0]
        sample = np.repeat(np.arange(N), G)
        Z = np.repeat(Zs, G, axis=0)
        Z[:, mutable] = np.tile(grid, (N, 1))
        cost = inst.metric.categorical_distance(Zs[sample], Z)       # from the sample's levels to z
    flip = np.zeros(sample.shape[0], dtype=bool)
    if inst.label_flips and not nominal_only:
        kappa = inst.metric.kappa
        sample = np.concatenate([sample, sample])
        Z = np.concatenate([Z, Z])
        cost = np.concatenate([cost, cost + kappa])
        flip = np.concatenate([flip, np.ones_like(flip)])
    return ConfigurationRows(sample=sample, Z=Z, cost=cost, flip=flip)


def take_rows(rows: ConfigurationRows, index: np.ndarray) -> ConfigurationRows:
    """The sub-collection ``rows[index]``."""
    return ConfigurationRows(rows.sample[index], rows.Z[index], rows.cost[index], rows.flip[index])


def concat_rows(parts) -> ConfigurationRows:
    parts = list(parts)
    return ConfigurationRows(np.concatenate([p.sample for p in parts]),
                             np.concatenate([p.Z for p in parts]),
                             np.concatenate([p.cost for p in parts]),
                             np.concatenate([p.flip for p in parts]))


def row_keys(rows: ConfigurationRows) -> List[bytes]:
    """A hashable identity per row: (sample, flip, categorical codes)."""
    key = np.ascontiguousarray(np.column_stack([rows.sample, rows.flip.astype(np.int64), rows.Z])
                               .astype(np.int64))
    return [k.tobytes() for k in key]


class RowIndex:
    """Exact membership of configuration rows, by their identity (sample, flip, categorical codes).

    The identity is packed into one integer ``((sample * 2 + flip) * a_1 + z_1) * a_2 + ...`` (mixed radix over
    the level counts ``a_l``) when that fits in 63 bits, and membership is a sorted search; otherwise it falls
    back to a set of :func:`row_keys`.  (The set's per-row bytes cost 1 s of a 15 s fit at N = 100,000.)"""

    def __init__(self, rows: ConfigurationRows, n_samples: int, levels: np.ndarray):
        self.radix = np.asarray(levels, dtype=np.int64)
        # largest code + 1 < 2^63: every factor checked in floating point with room to spare
        span = float(max(n_samples, 1)) * 2.0 * float(np.prod(np.maximum(self.radix, 1).astype(float)))
        self.packed = span < 2.0 ** 62
        self._sorted = None
        self._keys = None
        self.add(rows)

    def _pack(self, rows: ConfigurationRows) -> np.ndarray:
        code = rows.sample.astype(np.int64) * 2 + rows.flip.astype(np.int64)
        for l, a in enumerate(self.radix):
            code = code * int(a) + rows.Z[:, l].astype(np.int64)
        return code

    def add(self, rows: ConfigurationRows) -> None:
        """Index ``rows`` too."""
        if self.packed:
            code = self._pack(rows)
            self._sorted = np.sort(code if self._sorted is None else np.concatenate([self._sorted, code]))
        else:
            self._keys = set(row_keys(rows)) if self._keys is None else self._keys | set(row_keys(rows))

    def unseen(self, rows: ConfigurationRows) -> np.ndarray:
        """Indices of the rows of ``rows`` that are not indexed."""
        if rows.size == 0:
            return np.zeros(0, dtype=int)
        if self.packed:
            code = self._pack(rows)
            at = np.minimum(np.searchsorted(self._sorted, code), max(self._sorted.size - 1, 0))
            found = self._sorted[at] == code if self._sorted.size else np.zeros(rows.size, dtype=bool)
            return np.flatnonzero(~found)
        return np.asarray([i for i, key in enumerate(row_keys(rows)) if key not in self._keys], dtype=int)


def unique_rows(rows: ConfigurationRows) -> ConfigurationRows:
    """``rows`` without repeats (first occurrences kept, in order)."""
    if rows.size == 0:
        return rows
    keys = np.column_stack([rows.sample, rows.flip, rows.Z]).astype(np.int64)
    _, first = np.unique(keys, axis=0, return_index=True)
    return take_rows(rows, np.sort(first))


class EnumerationOracle(SeparationOracle):
    """Exact separation by brute force over all configuration rows (vectorized).

    Builds the design of every row once (``K = N |Z|`` rows, times 2 with label flips); each call then
    costs one sparse matrix-vector product and a per-sample max: O(K (n + m)).  It is the reference
    oracle and the practical one whenever the enumeration fits in memory.
    """

    name = "enumeration"
    exact = True

    def __init__(self, inst: DROInstance):
        from ..conic.reformulations.dual import row_design
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
