"""Budget cuts: one master constraint per (sample, number of changed features), covering every
configuration with that many changes at once.

With equal weights ``delta`` on the mutable categorical features, the transport cost of a configuration
depends only on the number ``c`` of changed features (belbasi2023 (2b); the sorting oracle,
:mod:`drokit.oracles.sorting`).  For sample ``n``, direction ``mu = +-1`` (raise or lower the score) and
``c >= 1``, the largest change of ``mu f(x_n, z)`` over the configurations with exactly ``c`` changes is
the sum of the ``c`` largest per-feature gains (belbasi2023 Thm 3, selvi2022 Thm 5):

    S_c(beta) = top_c(g(beta)),    g_l = max_{v != z_{n,l}} mu (w_l(v) - w_l(z_{n,l})),

``w_l(v)`` the coefficient of level ``v`` (0 for the reference level).  ``top_c`` is convex and has the
LP representation (sum of the ``c`` largest entries; Ogryczak & Tamir 2003):

    top_c(g) = min_{t, w}  c t + sum_l w_l   s.t.  w_l >= g_l - t,  w_l >= 0,

and ``w_l >= g_l - t`` splits into one linear row per alternative level ``v``.  The budget cut is

    L(sigma_n (f(x_n, z_n) + mu (c t + sum_l w_l)) - r_n) <= s_n + lambda (delta c^(1/p) + kappa flip),

with auxiliary ``t`` (one) and ``w`` (one per mutable feature).  It is **valid** for every convex loss:
the master may take ``(t, w)`` at the LP's optimum, where ``c t + sum w = S_c`` is the score change of a
real configuration, so no feasible point of the full problem is cut off.  It is **exact** (equivalent to
all ``C(m, c)``-and-more configuration rows it covers) when ``L(sigma (f + mu S))`` is non-decreasing in
``S``, the direction in which a margin loss grows; otherwise the master may overstate ``S`` and the
cutting plane adds configuration rows as usual (the exact oracle decides in every round).

This is the polynomial structure behind sun2025's graph formulation (a longest path per distance level)
restricted to the *active* (sample, distance) pairs, as the prototype notes suggest for wide data:
where configuration rows need one cut per configuration (audiology: 69 features, a new top-2 set every
round), a budget cut needs one per (sample, c, direction).  Size per cut: ``1 + m'`` variables and
``m' + sum_l (a_l - 1)`` linear rows for ``m'`` mutable features, plus the loss epigraph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ...exceptions import ParameterError
from ...models.instance import DROInstance
from ...oracles.enumeration import ConfigurationRows
from ..builder import Affine, ProgramBuilder


@dataclass
class BudgetCuts:
    """``K`` budget cuts: sample, number of changed features ``c >= 1``, direction ``mu``, label flip and
    transport cost ``delta c^(1/p) + kappa flip``."""

    sample: np.ndarray     # (K,) int
    count: np.ndarray      # (K,) int >= 1
    direction: np.ndarray  # (K,) +1.0 (raise the score) or -1.0 (lower it)
    flip: np.ndarray       # (K,) bool
    cost: np.ndarray       # (K,)

    @property
    def size(self) -> int:
        return int(self.sample.shape[0])

    def keys(self) -> List[Tuple[int, int, float, bool]]:
        return list(zip(self.sample.tolist(), self.count.tolist(), self.direction.tolist(),
                        self.flip.tolist()))

    def take(self, index: np.ndarray) -> "BudgetCuts":
        return BudgetCuts(self.sample[index], self.count[index], self.direction[index], self.flip[index],
                          self.cost[index])

    @staticmethod
    def empty() -> "BudgetCuts":
        return BudgetCuts(np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0), np.zeros(0, dtype=bool),
                          np.zeros(0))

    @staticmethod
    def concat(parts: List["BudgetCuts"]) -> "BudgetCuts":
        return BudgetCuts(*(np.concatenate([getattr(p, f) for p in parts])
                            for f in ("sample", "count", "direction", "flip", "cost")))


def budget_cuts_apply(inst: DROInstance) -> Tuple[bool, str]:
    """Whether budget cuts describe ``inst``: at least two mutable categorical features, all with the
    same weight (then the cost is a function of the count of changes).  Returns ``(ok, reason)``."""
    from ...oracles.sorting import common_weight
    mutable = inst.mutable_categorical()
    if mutable.size < 2:
        return False, "fewer than two mutable categorical features"
    try:
        common_weight(inst)
    except ParameterError:
        return False, "the mutable categorical features have unequal weights"
    return True, f"{mutable.size} mutable categorical features with one common weight"


def budget_cuts_from_rows(inst: DROInstance, rows: ConfigurationRows, intercept: float,
                          coef: np.ndarray) -> Tuple[BudgetCuts, np.ndarray]:
    """The budget cuts of configuration rows with at least one change, and the positions of the rows
    without a change (they stay configuration rows).

    A row's direction is the sign of its score change ``f(x_n, z) - f(x_n, z_n)`` at ``(intercept, coef)``
    (both directions when the change is 0)."""
    mutable = inst.mutable_categorical()
    own = inst.data.Z[rows.sample]
    count = np.sum(rows.Z[:, mutable] != own[:, mutable], axis=1)
    changed = np.flatnonzero(count > 0)
    dummy_coef = np.asarray(coef, dtype=float)[inst.n_numerical:]
    delta_f = (inst.schema.dummies(rows.Z[changed]) - inst.schema.dummies(own[changed])) @ dummy_coef
    up, down = delta_f >= 0, delta_f <= 0     # a zero change gives both directions
    pick = np.concatenate([changed[up], changed[down]])
    direction = np.concatenate([np.ones(int(up.sum())), -np.ones(int(down.sum()))])
    cuts = BudgetCuts(rows.sample[pick], count[pick], direction, rows.flip[pick], rows.cost[pick])
    return cuts, np.flatnonzero(count == 0)


def unique_budget_cuts(cuts: BudgetCuts, seen: Optional[set] = None) -> BudgetCuts:
    """The cuts whose key ``(sample, count, direction, flip)`` is new (first occurrence, not in ``seen``)."""
    seen = set() if seen is None else seen
    keep, local = [], set()
    for i, key in enumerate(cuts.keys()):
        if key not in seen and key not in local:
            local.add(key)
            keep.append(i)
    return cuts.take(np.asarray(keep, dtype=int))


def add_budget_cuts(pb: ProgramBuilder, inst: DROInstance, coef: Affine, intercept: Optional[Affine],
                    s: Affine, lam: Affine, cuts: BudgetCuts) -> None:
    """Add the constraints of the module docstring for every cut (vectorized over cuts and levels)."""
    from .dual import linear_score
    K = cuts.size
    if K == 0:
        return
    mutable = inst.mutable_categorical()
    levels = inst.schema.levels[mutable].astype(int)
    F = mutable.size
    first_col = inst.n_numerical + inst.schema.dummy_offsets()[mutable]   # column of level 1
    # every (feature j, level v) pair, then the pairs with v != z_{n_k, j} for every cut k
    pair_feature = np.repeat(np.arange(F), levels)
    pair_level = np.concatenate([np.arange(a) for a in levels])
    own = inst.data.Z[cuts.sample][:, mutable][:, pair_feature]           # (K, P)
    k, p = np.nonzero(own != pair_level[None, :])
    j, v, z = pair_feature[p], pair_level[p], own[k, p]
    mu = cuts.direction[k]
    R = k.size
    # row r: w_{k j} + t_k - mu (w_j(v) - w_j(z)) >= 0, with w_j(0) = 0 (reference level)
    has_v, has_z = v > 0, z > 0
    B = sp.csr_matrix((np.concatenate([-mu[has_v], mu[has_z]]),
                       (np.concatenate([np.flatnonzero(has_v), np.flatnonzero(has_z)]),
                        np.concatenate([first_col[j[has_v]] + v[has_v] - 1,
                                        first_col[j[has_z]] + z[has_z] - 1]))),
                      shape=(R, inst.schema.n_encoded))
    t = pb.aux("budget_t", K)
    w = pb.aux("budget_w", K * F)
    pb.add_nonneg(w)
    pb.add_nonneg(coef.premultiply(B) + w[k * F + j] + t[k])
    total = sp.csr_matrix((np.ones(K * F), (np.repeat(np.arange(K), F), np.arange(K * F))), shape=(K, K * F))
    change = t * cuts.count.astype(float) + w.premultiply(total)               # c t + sum_l w_l
    score = linear_score(coef, intercept, inst.design()[cuts.sample]) + change * cuts.direction
    sigma, shift = inst.row_signs(cuts.sample, cuts.flip)
    inst.loss.epigraph(pb, score * sigma - shift, s[cuts.sample] + lam.repeat(K) * cuts.cost)
