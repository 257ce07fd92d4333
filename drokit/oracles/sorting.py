"""Exact separation by sorting per-feature gains (belbasi2023 Alg. 2 / Thm 3; selvi2022 Alg. 2 / Thm 5).

Valid when every *mutable* categorical feature has the same weight ``delta`` (immutable features,
``delta_l = inf``, are simply excluded), so that the categorical cost depends on ``z`` only through
the number ``c`` of changed features:

    D(z, z_n) = (sum_l delta^p 1[z_l != z_{n,l}])^(1/p) = delta * c^(1/p)       (belbasi2023 (2b)).

Problem, for every sample ``n`` (and, with finite kappa in classification, both labels):

    phi_n = max_z  L(sigma_n f(x_n, z) - r_n) - lambda (delta c(z)^(1/p) + kappa flip) - s_n,

with ``sigma_n = +-y_n, r_n = 0`` (classification) or ``sigma_n = 1, r_n = y_n`` (regression).

Why it is exact (belbasi2023 Thm 3's proof; the note's §A5):

1. ``f(x_n, z) = f(x_n, z_n) + sum_l g_l(z_l)``, ``g_l(v) = w_l(v) - w_l(z_{n,l})``, ``w_l(v)`` the
   coefficient of level ``v`` (0 for the reference level 0 of the dummy coding).
2. Condition on the count ``c``: the cost is constant, and ``L`` is convex, so the maximum of
   ``L(sigma f - r)`` over all ``z`` with exactly ``c`` changes is attained where ``f`` is largest or
   smallest (directions ``mu = +1`` "raise the score" and ``mu = -1`` "lower the score").
3. ``Z`` is rectangular, so ``max mu f`` with exactly ``c`` changes picks, for every changed feature,
   its best different level ``v*_l = argmax_{v != z_{n,l}} mu w_l(v)`` (gain ``gain_l = mu g_l(v*_l)``)
   and changes the ``c`` features with the largest gains: sort the gains in decreasing order; the
   prefix sums ``S_c = sum_{i <= c} gain_(i)`` are the best totals for ``c = 0..m``.
4. Evaluate ``L(sigma (f(x_n, z_n) + mu S_c) - r_n) - lambda (delta c^(1/p) + kappa flip) - s_n`` at
   the ``2 (m + 1)`` candidates (times 2 labels) and take the argmax.  The configuration is recovered
   by changing the top-``c`` features of the chosen direction to their best alternative level.

The gains may be negative (e.g. ``mu = +1`` when the observed level already has the largest
coefficient); the prefix sums are still the best totals *with exactly c changes*, which is what the
argument in 2 needs, and ``c = 0`` (the nominal row) is always a candidate.

Complexity: ``O(N m log m)`` time for the sorts plus ``O(N (m + M_z))`` for the gains and ``O(N m)``
loss evaluations; ``O(N m)`` memory.  Everything is vectorized over samples (``np.sort`` /
``np.cumsum`` along axis 1).  Unlike :class:`~drokit.oracles.dp.DPOracle` it refuses unequal weights
(the count no longer determines the cost; use the DP oracle there).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError
from ..instance import DROInstance
from .base import (NEAR_LIMIT, Separation, SeparationOracle, alternative_tables, best_over_budgets,
                   inverse_permutation, level_columns, one_row_per_sample)

#: relative tolerance under which mutable weights count as equal
EQUAL_WEIGHTS_RTOL = 1e-12


def common_weight(inst: DROInstance) -> tuple[np.ndarray, float]:
    """The mutable features (finite weight, >= 2 levels) and their common weight ``delta``.

    Raises :class:`ParameterError` naming the weights when they are not all equal.
    """
    inst.metric.require_mismatch("the sorting oracle (belbasi2023 Thm 3: the cost counts changed features)")
    delta = np.asarray(inst.metric.delta, dtype=float)
    mutable = inst.mutable_categorical()
    if mutable.size == 0:
        return mutable, 0.0
    w = delta[mutable]
    if np.ptp(w) > EQUAL_WEIGHTS_RTOL * max(float(np.max(w)), 1e-300):
        names = inst.schema.categorical_names
        listed = ", ".join(f"{names[l]}={delta[l]:g}" for l in mutable)
        raise ParameterError(
            f"the sorting oracle needs equal weights on all mutable categorical features (the cost must "
            f"depend on the number of changed features only), but the weights are {listed}; use "
            f"oracle='dp' for per-feature weights, or make features immutable with np.inf")
    return mutable, float(w[0])


class SortingOracle(SeparationOracle):
    """Exact separation oracle for equal categorical weights, any ``p > 0``, any convex loss, finite or
    infinite kappa, classification and regression (see the module docstring)."""

    name = "sorting"
    exact = True

    def __init__(self, inst: DROInstance):
        self.inst = inst
        self.n_samples = inst.n_samples
        self.mutable, self.delta = common_weight(inst)
        p = inst.metric.categorical.validated_p()
        counts = np.arange(self.mutable.size + 1, dtype=float)
        # D = (c delta^p)^(1/p), written as the metric computes it (= delta c^(1/p))
        self.distance = (counts * self.delta ** p) ** (1.0 / p)
        self.Z = inst.data.Z
        self._columns = level_columns(inst, self.mutable)
        #: (N, m) positions of every sample's own level in the flattened (m, a_max) per-level tables
        self._flat = np.arange(self.mutable.size) * self._columns.shape[1] + self.Z[:, self.mutable]

    # ---------------------------------------------------------------- pieces
    def _gains(self, coef: np.ndarray):
        """Per sample and mutable feature: the best gain ``max_{v != z_nl} mu g_l(v)`` for ``mu = +1`` and
        ``mu = -1`` (returned as the signed change of f) and the level achieving it; all ``(N, m_mut)``
        (:func:`.base.alternative_tables`, gathered at the samples' own levels)."""
        return tuple(t.ravel()[self._flat] for t in alternative_tables(coef, self._columns))

    @staticmethod
    def _prefix(gain: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
        """Largest ``sign * total gain`` with exactly ``c`` changes, ``c = 0..m`` (signed back), and the
        rank of every feature in the sort (feature changes for count ``c`` iff ``rank < c``)."""
        N = gain.shape[0]
        order = np.argsort(-sign * gain, axis=1, kind="stable")
        sorted_gain = np.take_along_axis(gain, order, axis=1)
        totals = np.concatenate([np.zeros((N, 1)), np.cumsum(sorted_gain, axis=1)], axis=1)
        return totals, inverse_permutation(order)

    # ------------------------------------------------------------- interface
    def separate(self, intercept, coef, lam, s, near_margin: float = 0.0, near_limit: int = NEAR_LIMIT) -> Separation:
        """Most violated row per sample (``near_margin`` and ``near_limit`` are ignored: one row per sample)."""
        coef = np.asarray(coef, dtype=float)
        f0 = self.inst.scores(intercept, coef)
        up, up_level, down, down_level = self._gains(coef)
        prefixes = (self._prefix(up, 1.0), self._prefix(down, -1.0))
        violation, c, which, flip = best_over_budgets(self.inst, f0, [totals for totals, _ in prefixes],
                                                      self.distance, lam, np.asarray(s, dtype=float))
        Z = self._configuration(c, which, prefixes, up_level, down_level)
        return one_row_per_sample(self.inst, Z, self.distance[c], flip, violation)

    def _configuration(self, c: np.ndarray, which: np.ndarray, prefixes, up_level: np.ndarray,
                       down_level: np.ndarray) -> np.ndarray:
        """Backtrack: the top-``c`` features of the chosen direction move to their best other level."""
        Z = self.Z.copy()
        if self.mutable.size == 0:
            return Z
        rank_up, rank_down = prefixes[0][1], prefixes[1][1]
        use_up = (which == 0)[:, None]
        changed = np.where(use_up, rank_up, rank_down) < c[:, None]
        new_level = np.where(use_up, up_level, down_level)
        Z[:, self.mutable] = np.where(changed, new_level, Z[:, self.mutable])
        return Z
