"""The budget lattice shared by the DP oracle and the graph reformulation (sun2025 §4.2 observation).

With the categorical exponent ``p``, changing feature ``l`` adds ``w_l = delta_l^p`` to the additive
budget ``b = sum_l w_l 1[z_l != z_{n,l}]`` and the transport distance is ``D = b^(1/p)``.  Over the
mutable features taken in order, the reachable budgets are the subset sums

    B_0 = {0},    B_k = B_{k-1}  U  (B_{k-1} + w_k),

the same for every sample.  Budgets are merged after rounding to :data:`BUDGET_DECIMALS` decimals.
``|B_k| = k + 1`` with equal weights, at most ``2^k`` in general, at most ``1 + sum_l w_l / q`` when the
weights lie on a grid ``q`` (sun2025 §5.7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

from ..exceptions import ProblemTooLargeError
from ..models.instance import DROInstance

#: refuse lattices with more distinct budgets than this in one layer
MAX_BUDGETS = 200_000
#: decimals of the budget merge
BUDGET_DECIMALS = 12


def round_budgets(b: np.ndarray) -> np.ndarray:
    return np.round(b, BUDGET_DECIMALS)


@dataclass
class BudgetLattice:
    """Reachable additive budgets after each layer: ``budgets[k] = B_k`` (sorted), and for layer
    ``k = 1..m`` the index in ``B_k`` reached from each ``j`` in ``B_{k-1}`` by a stay / a change."""

    weights: np.ndarray              # (m,) additive budget w_k = delta_k^p of each layer
    budgets: List[np.ndarray]        # m + 1 arrays, budgets[0] = [0]
    stay: List[np.ndarray]           # m arrays of size |B_{k-1}|
    change: List[np.ndarray]         # m arrays of size |B_{k-1}|

    @property
    def sizes(self) -> np.ndarray:
        """``(|B_0|, ..., |B_m|)``."""
        return np.array([b.size for b in self.budgets], dtype=np.int64)

    def predecessors(self, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """For layer ``k`` (0-based), the index in ``B_k`` -> the index in ``B_{k-1}`` it is reached
        from by a stay / by a change (``-1`` if none); both maps are injective, so backtracking is exact."""
        size = self.budgets[k + 1].size
        prev_stay = np.full(size, -1)
        prev_stay[self.stay[k]] = np.arange(self.stay[k].size)
        prev_change = np.full(size, -1)
        prev_change[self.change[k]] = np.arange(self.change[k].size)
        return prev_stay, prev_change


def extend_budgets(budgets: np.ndarray, w: float) -> np.ndarray:
    """``B U (B + w)`` sorted, merged after rounding (one step of the lattice)."""
    return np.unique(round_budgets(np.concatenate([budgets, budgets + w])))


def budget_lattice(weights: Sequence[float], max_budgets: int = MAX_BUDGETS) -> BudgetLattice:
    """The lattice ``B_k = B_{k-1} U (B_{k-1} + w_k)`` with its stay / change index maps.

    Raises :class:`ProblemTooLargeError` when a layer has more than ``max_budgets`` budgets.
    """
    weights = np.asarray(weights, dtype=float)
    budgets = [np.zeros(1)]
    stay, change = [], []
    for w in weights:
        prev = budgets[-1]
        merged = extend_budgets(prev, w)
        if merged.size > max_budgets:
            raise ProblemTooLargeError(
                f"the categorical weights give {merged.size:,} distinct transport budgets in one layer "
                f"(limit {max_budgets:,}); round the categorical weights to a grid (e.g. 1 decimal) or "
                f"use equal weights")
        stay.append(np.searchsorted(merged, round_budgets(prev)))
        change.append(np.searchsorted(merged, round_budgets(prev + w)))
        budgets.append(merged)
    return BudgetLattice(weights, budgets, stay, change)


def additive_weights(inst: DROInstance) -> np.ndarray:
    """``delta_l^p`` per categorical feature (0 for immutable ones, which are never layers)."""
    delta = inst.metric.delta
    p = inst.metric.categorical.validated_p()
    return np.where(np.isfinite(delta), delta, 0.0) ** p
