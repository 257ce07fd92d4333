"""Configuration rows and their algebra, shared by every oracle, method and certificate.

A *configuration row* ``(n, z, flip)`` is sample ``n`` moved to the categorical levels ``z`` (immutable features at
their observed level), with its label flipped or not, at transport cost ``D(z, z_n) + kappa flip`` (belbasi2023
Observation 1 / problem (3), sun2025 Theorem 1).  Here: the rows (:class:`ConfigurationRows`, and
:class:`FractionalRows` for distributions over one sample's configurations), their full enumeration and its size,
taking, joining, de-duplicating and indexing them, and the quantities of a fixed model on them: the loss arguments
``u_k`` and losses ``L(u_k)``, and the floor ``lambda_min(beta)`` of the transport multiplier (their encoded design
``[1, x_n, dummies(z)]`` is :mod:`.design`'s).  Enumeration costs O(N |Z| m) time and memory: ``N |Z|`` rows (times 2 with label flips),
exponential in the number of categorical features.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import scipy.sparse as sp

from ..exceptions import ProblemTooLargeError
from ..instance import DROInstance


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
    smoothed dual point of :mod:`drokit.reformulations.slope_split`, the barrier master's on level-max rows,
    :mod:`drokit.reformulations.level_max`): their encoded row ``a_k`` is the expected one, ``matrix``
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


def describe_enumeration_size(inst: DROInstance) -> str:
    """``"K configuration rows (N samples x |Z| categorical configurations[ x 2 labels])"``: the size of
    the full enumeration and the product it is (:func:`count_configuration_rows`)."""
    flips = " x 2 labels" if inst.label_flips else ""
    return (f"{count_configuration_rows(inst):,} configuration rows ({inst.n_samples:,} samples x "
            f"{inst.mutable_configurations():,} categorical configurations{flips})")


def check_enumeration_size(inst: DROInstance, method: str, max_configurations: int) -> int:
    """Number of configuration rows of the full enumeration (samples x categorical configurations of the
    mutable features x 2 when labels may flip); raises :class:`ProblemTooLargeError` above the limit."""
    size = count_configuration_rows(inst)
    if size > max_configurations:
        # the way out that does not enumerate: the cutting plane's default oracle -- for the cutting plane itself
        # (its enumeration oracle is what enumerates) the oracle, not the method, is what to change
        instead = ("or use the cutting plane's default oracle, method_options={'oracle': 'auto'} (exact, it does "
                   "not enumerate)" if method == "cutting_plane" else
                   "or use method='cutting_plane' (its default oracle does not enumerate)")
        what = "the enumeration oracle of method='cutting_plane'" if method == "cutting_plane" else \
            f"method={method!r}"
        raise ProblemTooLargeError(
            f"{what} would enumerate {describe_enumeration_size(inst)}, above "
            f"max_configurations={max_configurations:,}. Raise "
            f"max_configurations if you have the memory, or make features immutable (weight np.inf) to "
            f"shrink the mutable configurations, {instead}")
    return size


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


def compact_rows(rows: ConfigurationRows, code_type: np.dtype) -> ConfigurationRows:
    """``rows`` stored small: ``sample`` as ``int32``, the codes as ``code_type`` (the smallest type of the schema's
    levels), ``flip`` as ``bool``; for storage only (a distributed fit's partitions between calls,
    :mod:`drokit.partition_memory`): :func:`widened_rows` before any computation (narrow codes overflow in
    arithmetic)."""
    return ConfigurationRows(rows.sample.astype(np.int32), rows.Z.astype(code_type), rows.cost,
                             rows.flip.astype(bool))


def widened_rows(rows: ConfigurationRows) -> ConfigurationRows:
    """:func:`compact_rows`' rows with ``int64`` samples and codes again (every module computes on these)."""
    return ConfigurationRows(rows.sample.astype(np.int64), rows.Z.astype(np.int64), rows.cost, rows.flip)


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


def row_margins(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray) -> np.ndarray:
    """``u_k = sigma_k f(x_{n_k}, z_k) - shift_k``: the loss argument of every configuration row, with
    ``f(x, z) = beta_0 + beta_x' x + sum_l w_l(z_l)`` (``w_l(v)`` the coefficient of level ``v``, 0 at the reference
    level) by gathers: the numerical part once per sample, one lookup per categorical feature and row.  No design
    matrix is built (a 2,260,000-row working set's took 0.6 GB at N = 1,000,000)."""
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    coef = np.asarray(coef, dtype=float)
    score = (inst.data.X @ coef[:inst.n_numerical])[rows.sample] + inst.schema.level_scores(rows.Z, coef)
    return sigma * (score + intercept) - shift


def row_losses(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray) -> np.ndarray:
    """``L(u_k)`` for every configuration row at the fixed model."""
    return inst.loss.value(row_margins(inst, rows, intercept, coef))


def lambda_floor(inst: DROInstance, coef: np.ndarray) -> float:
    """``lip(L) ||Gamma^{-1} beta_x||_*`` (and ``lip(L)/kappa`` in regression).

    A loss with ``lip(L) = inf`` (growing faster than linearly): ``inf`` as soon as a numerical move or a
    regression label move can raise the loss at a finite cost, else 0 (``0 * inf = 0``); at radius 0 only
    costless moves count (a weight-0 column with a nonzero coefficient: ``inf``)."""
    lip = float(inst.loss.lipschitz)
    norm = inst.metric.dual_norm(np.asarray(coef)[: inst.n_numerical])
    if np.isinf(lip):
        if inst.radius == 0:
            return 0.0 if np.isfinite(norm) else np.inf
        label = not inst.is_classification and np.isfinite(inst.metric.kappa)
        return 0.0 if norm == 0 and not label else np.inf
    lam_min = lip * norm
    if not inst.is_classification and np.isfinite(inst.metric.kappa):
        lam_min = max(lam_min, lip / inst.metric.kappa)
    return float(lam_min)
