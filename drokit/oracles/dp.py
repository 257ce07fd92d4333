"""Exact separation by dynamic programming over transport budgets (sun2025 Alg. 1, generalized).

Problem, for every sample ``n`` (and, with finite kappa, both labels):

    phi_n = max_z  L(sigma_n f(x_n, z) - r_n) - lambda (D(z, z_n) + kappa flip) - s_n,
    D(z, z_n) = (sum_l delta_l^p 1[z_l != z_{n,l}])^(1/p)

with ``sigma_n = +-y_n, r_n = 0`` (classification) or ``sigma_n = 1, r_n = y_n`` (regression).

Why it is exact:

1. ``f(x_n, z) = f(x_n, z_n) + sum_l g_l`` with ``g_l = w_l(z_l) - w_l(z_{n,l})``, where ``w_l(v)`` is
   the coefficient of level ``v`` (0 for the reference level).
2. ``D`` depends on z only through the additive budget ``b = sum_l delta_l^p 1[changed]``.  For a fixed
   budget, ``L`` is convex, so the maximum over z of ``L(affine(z))`` is attained where
   ``sum_l g_l`` is maximal or minimal (belbasi2023 Thm 3's argument).
3. A changed feature contributes its best (largest, resp. smallest) alternative level, so per
   feature and direction the choice is binary: stay (gain 0, budget +0) or change (gain
   ``gain_l``, budget ``+delta_l^p``).  The largest / smallest total gain for every reachable budget
   is a knapsack-like DP over features (sun2025's Bellman equation (9)).  The reachable budgets are
   the subset sums of ``{delta_l^p}``, the same for every sample (sun2025 §4.2 observation), so the
   DP is vectorized over samples.
4. The terminal step evaluates ``L`` at both extremes for every budget (sun2025 (10), with the
   intercept restored: the paper's erratum 1).

Complexity: ``O(N sum_k |B_k|)`` time and bits of back-pointer memory, ``|B_k|`` the number of
distinct budgets after k features: ``k + 1`` with equal weights (sorting-oracle size), at most
``2^k`` for generic weights, at most ``1 + sum_l delta_l^p / q`` when the weights lie on a grid q
(sun2025 §5.7).  Budgets are merged after rounding to 12 decimals.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ProblemTooLargeError
from ..models.instance import DROInstance
from .base import Separation, SeparationOracle
from .enumeration import ConfigurationRows

#: refuse DP state spaces larger than this (distinct budgets)
MAX_BUDGETS = 200_000


def _round(b: np.ndarray) -> np.ndarray:
    return np.round(b, 12)


class DPOracle(SeparationOracle):
    """Exact separation oracle for any convex loss, per-feature weights and any exponent p."""

    name = "dp"
    exact = True

    def __init__(self, inst: DROInstance, max_budgets: int = MAX_BUDGETS):
        self.inst = inst
        self.n_samples = inst.n_samples
        schema, metric = inst.schema, inst.metric
        self.levels = schema.levels
        self.offsets = schema.dummy_offsets()
        self.n_num = inst.n_numerical
        delta = metric.delta
        p = metric.categorical.validated_p()
        self.p = p
        self.mutable = np.flatnonzero(np.isfinite(delta) & (self.levels > 1))
        self.weight = np.where(np.isfinite(delta), delta, 0.0) ** p  # additive budget per feature
        # the budget lattice, shared by every sample
        budgets = np.zeros(1)
        self.layers = []  # per mutable feature: (stay_index, change_index, n_budgets)
        self._inverse = []  # per mutable feature: (previous index of a stay, of a change)
        for l in self.mutable:
            new = _round(np.concatenate([budgets, budgets + self.weight[l]]))
            merged = np.unique(new)
            if merged.size > max_budgets:
                raise ProblemTooLargeError(
                    f"the DP oracle would track {merged.size:,} distinct transport budgets (limit "
                    f"{max_budgets:,}); round the categorical weights to a grid (e.g. 1 decimal) or use "
                    f"equal weights")
            stay = np.searchsorted(merged, _round(budgets))
            change = np.searchsorted(merged, _round(budgets + self.weight[l]))
            # inverse maps (both injective) for backtracking: budget index after -> before
            prev_stay = np.full(merged.size, -1)
            prev_stay[stay] = np.arange(stay.size)
            prev_change = np.full(merged.size, -1)
            prev_change[change] = np.arange(change.size)
            self.layers.append((stay, change, merged.size))
            self._inverse.append((prev_stay, prev_change))
            budgets = merged
        self.budgets = budgets
        self.distance = budgets ** (1.0 / p)
        self.Z = inst.data.Z
        self._design = schema.design(inst.data)  # built once: every separation is one product
        y = inst.y
        if inst.is_classification:
            self.directions = [(y, 0.0, 0.0, False)]
            if inst.label_flips:
                self.directions.append((-y, 0.0, metric.kappa, True))
        else:
            self.directions = [(np.ones_like(y), y, 0.0, False)]

    # ---------------------------------------------------------------- pieces
    def _level_values(self, coef: np.ndarray, l: int) -> np.ndarray:
        """``w_l(v)`` for every level v of feature l (reference level 0 -> 0)."""
        a = int(self.levels[l])
        start = self.n_num + self.offsets[l]
        return np.concatenate([[0.0], coef[start:start + a - 1]])

    def _gains(self, coef: np.ndarray, l: int):
        """Per sample: best gain up / down when feature l changes level, and the level achieving it."""
        w = self._level_values(coef, l)
        cur = self.Z[:, l]
        order = np.argsort(w, kind="stable")
        lo1, lo2, hi1, hi2 = order[0], order[1], order[-1], order[-2]
        up_level = np.where(cur == hi1, hi2, hi1)
        down_level = np.where(cur == lo1, lo2, lo1)
        return w[up_level] - w[cur], up_level, w[down_level] - w[cur], down_level

    def _dp(self, gain: np.ndarray, sign: float):
        """Largest ``sign * total gain`` per (sample, budget); back-pointers of the change choices."""
        N = self.n_samples
        G = np.zeros((N, 1))
        choices = []
        for (stay, change, size), g in zip(self.layers, gain):
            new = np.full((N, size), -np.inf)
            new[:, stay] = G
            cand = G + sign * g[:, None]
            take = cand > new[:, change]
            new[:, change] = np.where(take, cand, new[:, change])
            chosen = np.zeros((N, size), dtype=bool)
            chosen[:, change] = take
            choices.append(chosen)
            G = new
        return sign * G, choices  # total gain (signed back), reachable budgets are finite

    def _backtrack(self, choices, final_index: np.ndarray) -> np.ndarray:
        """Which mutable features change, per sample, for the chosen final budget index."""
        N = self.n_samples
        changed = np.zeros((N, len(self.layers)), dtype=bool)
        j = final_index.copy()
        rows = np.arange(N)
        for k in range(len(self.layers) - 1, -1, -1):
            took = choices[k][rows, j]
            changed[:, k] = took
            prev_stay, prev_change = self._inverse[k]
            j = np.where(took, prev_change[j], prev_stay[j])
        return changed

    # ------------------------------------------------------------- interface
    def separate(self, intercept, coef, lam, s, near_margin: float = 0.0) -> Separation:
        """Most violated row per sample (``near_margin`` is ignored: one row per sample)."""
        coef = np.asarray(coef, dtype=float)
        N = self.n_samples
        rows_idx = np.arange(N)
        f0 = self._design @ coef + intercept
        gains = [self._gains(coef, l) for l in self.mutable]
        dps = (self._dp([g[0] for g in gains], 1.0), self._dp([g[2] for g in gains], -1.0))
        values, budget_index, dp_id, flips = [], [], [], []
        for sigma, shift, extra, flip in self.directions:
            shift_col = shift[:, None] if np.ndim(shift) else 0.0
            penalty = lam * (self.distance + extra)
            for k, (G, _) in enumerate(dps):
                vals = self.inst.loss.value(sigma[:, None] * (f0[:, None] + G) - shift_col)
                vals = vals - penalty[None, :] - s[:, None]
                j = np.argmax(vals, axis=1)
                values.append(vals[rows_idx, j])
                budget_index.append(j)
                dp_id.append(np.full(N, k))
                flips.append(np.full(N, flip))
        values = np.vstack(values)
        c = np.argmax(values, axis=0)
        violation = values[c, rows_idx]
        j = np.vstack(budget_index)[c, rows_idx]
        which = np.vstack(dp_id)[c, rows_idx]
        flip = np.vstack(flips)[c, rows_idx]
        Z = self.Z.copy()
        for k, (_, choices) in enumerate(dps):
            mask = which == k
            if not mask.any() or not self.layers:
                continue
            changed = self._backtrack(choices, j)
            level_column = 1 if k == 0 else 3
            for t, l in enumerate(self.mutable):
                sel = mask & changed[:, t]
                Z[sel, l] = gains[t][level_column][sel]
        kappa = self.inst.metric.kappa
        cost = self.distance[j] + np.where(flip, kappa if np.isfinite(kappa) else 0.0, 0.0)
        rows = ConfigurationRows(sample=rows_idx, Z=Z, cost=cost, flip=flip.astype(bool))
        empty = ConfigurationRows(np.zeros(0, int), np.zeros((0, Z.shape[1]), int), np.zeros(0),
                                  np.zeros(0, bool))
        return Separation(rows=rows, violation=violation, near=empty)
