"""Budget cuts: one master constraint per (sample, number of changed features per weight class),
covering every configuration with those counts at once.

Group the mutable categorical features into *weight classes* of equal ``delta`` (one class for unit
weights; a handful for integer-rounded calibrated weights).  The transport cost of a configuration then
depends only on the counts ``c = (c_1, ..., c_C)`` of changed features per class:
``D = (sum_k c_k delta_k^p)^(1/p)`` (belbasi2023 (2b) for one class).  For sample ``n``, direction
``mu = +-1`` (raise or lower the score) and counts ``c``, the largest change of ``mu f(x_n, z)`` over the
configurations with exactly those counts is, class by class, the sum of the ``c_k`` largest per-feature
gains (belbasi2023 Thm 3, selvi2022 Thm 5, applied per class; the classes are independent):

    S_c(beta) = sum_k top_{c_k}(g_{class k}(beta)),   g_l = max_{v != z_{n,l}} mu (w_l(v) - w_l(z_{n,l})),

``w_l(v)`` the coefficient of level ``v`` (0 for the reference level).  ``top_c`` is convex and has the
LP representation (sum of the ``c`` largest entries; Ogryczak & Tamir 2003):

    top_c(g) = min_{t, w}  c t + sum_l w_l   s.t.  w_l >= g_l - t,  w_l >= 0.

In the master ``g_l`` is taken over *every* level, ``v = z_{n,l}`` included:
``g+_l = m_{l,mu} - mu w_l(z_{n,l})`` with ``m_{l,mu} >= mu w_l(v)`` for every level ``v`` -- one variable per
(feature, direction) *shared by all cuts*, so a cut costs one linear row per feature instead of one per
alternative level (a 300-level feature: 304 rows per cut; 652 cuts made a 237,591-row master that Clarabel
left InsufficientProgress after 262 s; census-like, 42 levels: 108 rows per cut).  ``g+ = max(g, 0)`` where
it differs (the sample's own level is the best), so ``top_c(g+)`` is the largest score change over the
configurations with *at most* ``c_k`` changes per class; the cut prices them at ``D(c)``, at least their own
cost, so it stays implied by the configuration rows (valid), and at the oracle's maximizer (whose changes
all gain) it equals that row (the cutting plane's argument is unchanged).  The budget cut is

    L(sigma_n (f(x_n, z_n) + mu S) - r_n) <= s_n + lambda (D(c) + kappa flip),   S = the LP above,

with auxiliary ``t`` (one per partially changed class) and ``w`` (one per feature of a changed class).
It is **valid** for every convex loss: the master may take ``(t, w)`` at the LP's optimum, where ``S``
is the score change of a real configuration, so no feasible point of the full problem is cut off.  It
is **exact** (the program of every cut equals the enumeration of every row: a cut with ``c`` changes is
implied by the rows, and implies every row with exactly ``c`` changes) when ``L(sigma (f + mu S))`` is
non-decreasing in ``S``, the direction in which a margin loss grows; otherwise the master may overstate
``S`` and the cutting plane adds configuration rows as usual (the exact oracle decides every round).

This is the polynomial structure behind sun2025's graph formulation (a longest path per distance level)
restricted to the *active* (sample, distance) pairs, as the prototype notes suggest for wide data:
where configuration rows need one cut per configuration (audiology: 62 features, a new top-c set every
round), a budget cut needs one per (sample, counts, direction).  Size per cut: one ``w`` and one linear row per
feature of the changed classes, one ``t`` per partially changed class, plus the loss epigraph; and once per
master, one linear row per level of the features the cuts use, per direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows
from ..conic.builder import Affine, ProgramBuilder, linear_score


@dataclass
class BudgetCuts:
    """``K`` budget cuts: sample, number of changed features per weight class ``c_k`` (``(K, C)``, not all
    zero), direction ``mu``, label flip and transport cost ``(sum_k c_k delta_k^p)^(1/p) + kappa flip``."""

    sample: np.ndarray     # (K,) int
    count: np.ndarray      # (K, C) int >= 0: changed features of each weight class
    direction: np.ndarray  # (K,) +1.0 (raise the score) or -1.0 (lower it)
    flip: np.ndarray       # (K,) bool
    cost: np.ndarray       # (K,)

    @property
    def size(self) -> int:
        return int(self.sample.shape[0])

    def keys(self) -> List[Tuple]:
        return list(zip(self.sample.tolist(), map(tuple, self.count.tolist()), self.direction.tolist(),
                        self.flip.tolist()))

    def take(self, index: np.ndarray) -> "BudgetCuts":
        return BudgetCuts(self.sample[index], self.count[index], self.direction[index], self.flip[index],
                          self.cost[index])

    @staticmethod
    def empty(classes: int = 1) -> "BudgetCuts":
        return BudgetCuts(np.zeros(0, dtype=int), np.zeros((0, classes), dtype=int), np.zeros(0),
                          np.zeros(0, dtype=bool), np.zeros(0))

    @staticmethod
    def concat(parts: List["BudgetCuts"]) -> "BudgetCuts":
        return BudgetCuts(*(np.concatenate([getattr(p, f) for p in parts])
                            for f in ("sample", "count", "direction", "flip", "cost")))


def weight_classes(inst: DROInstance) -> Tuple[np.ndarray, np.ndarray]:
    """``(mutable, cls)``: the mutable categorical features and the class of each, features with equal
    weights ``delta_l`` sharing a class (``cls`` in ``0..C-1``)."""
    mutable = inst.mutable_categorical()
    _, cls = np.unique(np.asarray(inst.metric.delta, dtype=float)[mutable], return_inverse=True)
    return mutable, cls.astype(int)


def budget_cuts_apply(inst: DROInstance) -> Tuple[bool, str]:
    """Whether budget cuts describe ``inst``: at least two mutable categorical features.  Returns
    ``(ok, reason)``."""
    mutable, cls = weight_classes(inst)
    if mutable.size < 2:
        return False, "fewer than two mutable categorical features"
    if not inst.metric.mismatch_only:
        return False, "the categorical cost is not the 0/1 mismatch cost (budget cuts count changed features)"
    return True, f"{mutable.size} mutable categorical features in {cls.max() + 1} weight class(es)"


def budget_cuts_from_rows(inst: DROInstance, rows: ConfigurationRows, intercept: float,
                          coef: np.ndarray) -> Tuple[BudgetCuts, np.ndarray]:
    """The budget cuts of configuration rows with at least one change, and the positions of the rows
    without a change (they stay configuration rows).

    A row's direction is the sign of its score change ``f(x_n, z) - f(x_n, z_n)`` at ``(intercept, coef)``
    (both directions when the change is 0)."""
    mutable, cls = weight_classes(inst)
    own = inst.data.Z[rows.sample]
    changed_features = rows.Z[:, mutable] != own[:, mutable]                    # (K, F)
    per_class = changed_features.astype(int) @ np.eye(cls.max() + 1, dtype=int)[cls]   # (K, C)
    changed = np.flatnonzero(per_class.sum(axis=1) > 0)
    dummy_coef = np.asarray(coef, dtype=float)[inst.n_numerical:]
    delta_f = (inst.schema.dummies(rows.Z[changed]) - inst.schema.dummies(own[changed])) @ dummy_coef
    up, down = delta_f >= 0, delta_f <= 0     # a zero change gives both directions
    pick = np.concatenate([changed[up], changed[down]])
    direction = np.concatenate([np.ones(int(up.sum())), -np.ones(int(down.sum()))])
    cuts = BudgetCuts(rows.sample[pick], per_class[pick], direction, rows.flip[pick], rows.cost[pick])
    return cuts, np.flatnonzero(per_class.sum(axis=1) == 0)


def unique_budget_cuts(cuts: BudgetCuts, seen: Optional[set] = None) -> BudgetCuts:
    """The cuts whose key ``(sample, counts, direction, flip)`` is new (first occurrence, not in ``seen``)."""
    seen = set() if seen is None else seen
    keep, local = [], set()
    for i, key in enumerate(cuts.keys()):
        if key not in seen and key not in local:
            local.add(key)
            keep.append(i)
    return cuts.take(np.asarray(keep, dtype=int))


def add_budget_cuts(pb: ProgramBuilder, inst: DROInstance, coef: Affine, intercept: Optional[Affine],
                    s: Affine, lam: Affine, cuts: BudgetCuts) -> None:
    """Add the constraints of the module docstring for every cut (vectorized over cuts and levels).

    Per cut ``k`` and weight class ``c`` with ``n_c`` features: ``c_k = 0`` keeps the class (no
    variables); ``0 < c_k < n_c`` uses ``t_{kc}`` and ``w_{kl} >= 0``; ``c_k = n_c`` changes every feature
    of the class, whose top-``c_k`` sum is the plain sum, so ``t_{kc}`` is omitted and ``w_{kl}`` is free
    -- the general form would leave ``t -> -inf`` a ray of constant objective (and ``c_k = 0`` one with
    ``t -> +inf``), which interior-point solvers do not tolerate."""
    K = cuts.size
    if K == 0:
        return
    mutable, cls = weight_classes(inst)
    C = int(cls.max()) + 1
    class_size = np.bincount(cls, minlength=C)
    count_of_feature = cuts.count[:, cls]                                  # (K, F)
    # one w per (cut, feature of a changed class); one t per (cut, partially changed class)
    kw, fw = np.nonzero(count_of_feature > 0)
    w = pb.aux("budget_w", kw.size)
    w_index = np.full((K, mutable.size), -1)
    w_index[kw, fw] = np.arange(kw.size)
    partial = (cuts.count > 0) & (cuts.count < class_size[None, :])         # (K, C)
    kt, ct = np.nonzero(partial)
    t = pb.aux("budget_t", kt.size) if kt.size else None
    t_index = np.full((K, C), -1)
    t_index[kt, ct] = np.arange(kt.size)
    if t is not None:
        has_t = partial[kw, cls[fw]]
        pb.add_nonneg(w[np.flatnonzero(has_t)])
    # the largest coefficient of each (feature, direction) the cuts use, shared by every cut:
    #   m_{l, mu} >= mu w_l(v) for every level v of l (w_l(0) = 0)
    up = (cuts.direction[kw] > 0).astype(int)
    used = np.unique(fw * 2 + up)                                          # (feature position, direction)
    m = pb.aux("budget_m", used.size)
    m_index = np.full(2 * mutable.size, -1)
    m_index[used] = np.arange(used.size)
    first = inst.n_numerical
    offsets = inst.schema.dummy_offsets()
    levels = np.asarray(inst.schema.levels)[mutable]
    feat, sign_up = used // 2, used % 2
    mu_used = np.where(sign_up == 1, 1.0, -1.0)
    a_used = levels[feat]
    owner = np.repeat(np.arange(used.size), a_used)                        # one row per (m, level)
    level = np.arange(int(a_used.sum())) - np.repeat(np.cumsum(a_used) - a_used, a_used)
    nz = np.flatnonzero(level > 0)
    col = first + offsets[mutable[feat[owner[nz]]]] + level[nz] - 1
    E = sp.csr_matrix((-mu_used[owner[nz]], (nz, col)), shape=(owner.size, inst.schema.n_encoded))
    pb.add_nonneg(m[owner] + coef.premultiply(E))
    # cut rows, one per w_{kl}:  w_{kl} [+ t_{k, cls(l)}] - m_{l, mu_k} + mu_k w_l(z_{n_k, l}) >= 0
    own = inst.data.Z[cuts.sample[kw], mutable[fw]]
    nz = np.flatnonzero(own > 0)
    col = first + offsets[mutable[fw[nz]]] + own[nz] - 1
    B = sp.csr_matrix((cuts.direction[kw[nz]], (nz, col)), shape=(kw.size, inst.schema.n_encoded))
    row = w - m[m_index[fw * 2 + up]] + coef.premultiply(B)
    if t is not None:   # + t_{k, cls(l)} on the rows of partially changed classes
        tk = t_index[kw, cls[fw]]
        with_t = np.flatnonzero(tk >= 0)
        row = row + t.premultiply(sp.csr_matrix((np.ones(with_t.size), (with_t, tk[with_t])),
                                                shape=(kw.size, kt.size)))
    pb.add_nonneg(row)
    # the score change of cut k: sum_c c_k t_{kc} + sum_l w_{kl}
    change = w.premultiply(sp.csr_matrix((np.ones(kw.size), (kw, np.arange(kw.size))), shape=(K, kw.size)))
    if t is not None:
        change = change + t.premultiply(sp.csr_matrix((cuts.count[kt, ct].astype(float), (kt, np.arange(kt.size))),
                                                      shape=(K, kt.size)))
    score = linear_score(coef, intercept, inst.design()[cuts.sample]) + change * cuts.direction
    sigma, shift = inst.row_signs(cuts.sample, cuts.flip)
    inst.loss.epigraph(pb, score * sigma - shift, s[cuts.sample] + lam.repeat(K) * cuts.cost)
