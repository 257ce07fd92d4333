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

from ..models.instance import DROInstance
from .base import Separation, SeparationOracle, best_over_budgets, one_row_per_sample
from .lattice import MAX_BUDGETS, additive_weights, budget_lattice


class DPOracle(SeparationOracle):
    """Exact separation oracle for any convex loss, per-feature weights and any exponent p."""

    name = "dp"
    exact = True

    def __init__(self, inst: DROInstance, max_budgets: int = MAX_BUDGETS):
        self.inst = inst
        self.n_samples = inst.n_samples
        schema = inst.schema
        self.levels = schema.levels
        self.offsets = schema.dummy_offsets()
        self.n_num = inst.n_numerical
        self.p = inst.metric.categorical.validated_p()
        self.mutable = inst.mutable_categorical()
        # the budget lattice over the mutable features, shared by every sample
        self.lattice = budget_lattice(additive_weights(inst)[self.mutable], max_budgets)
        self.budgets = self.lattice.budgets[-1]
        self.distance = self.budgets ** (1.0 / self.p)
        self._predecessors = [self.lattice.predecessors(k) for k in range(self.mutable.size)]
        self.Z = inst.data.Z
        self._design = schema.design(inst.data)  # built once: every separation is one product

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
        for stay, change, size, g in zip(self.lattice.stay, self.lattice.change, self.lattice.sizes[1:], gain):
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

    def _backtrack(self, choices, final_index: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Which mutable features change, per sample (or for the samples ``rows``), for the chosen final
        budget index."""
        rows = np.arange(self.n_samples) if rows is None else np.asarray(rows, dtype=int)
        changed = np.zeros((rows.size, self.mutable.size), dtype=bool)
        j = np.asarray(final_index).copy()
        for k in range(self.mutable.size - 1, -1, -1):
            took = choices[k][rows, j]
            changed[:, k] = took
            prev_stay, prev_change = self._predecessors[k]
            j = np.where(took, prev_change[j], prev_stay[j])
        return changed

    # ------------------------------------------------------------- interface
    def separate(self, intercept, coef, lam, s, near_margin: float = 0.0) -> Separation:
        """Most violated row per sample (``near_margin`` is ignored: one row per sample)."""
        coef = np.asarray(coef, dtype=float)
        f0 = self._design @ coef + intercept
        gains = [self._gains(coef, l) for l in self.mutable]
        dps = (self._dp([g[0] for g in gains], 1.0), self._dp([g[2] for g in gains], -1.0))
        violation, j, which, flip = best_over_budgets(self.inst, f0, [G for G, _ in dps], self.distance,
                                                      lam, np.asarray(s, dtype=float))
        Z = self.Z.copy()
        for k, (_, choices) in enumerate(dps):
            mask = which == k
            if not mask.any() or not self.mutable.size:
                continue
            changed = self._backtrack(choices, j)
            level_column = 1 if k == 0 else 3
            for t, l in enumerate(self.mutable):
                sel = mask & changed[:, t]
                Z[sel, l] = gains[t][level_column][sel]
        return one_row_per_sample(self.inst, Z, self.distance[j], flip, violation)
