"""The budget lattice shared by the DP oracle and the graph reformulation (sun2025 §4.2 observation).

With the categorical exponent ``p``, changing feature ``l`` adds ``w_l = delta_l^p`` to the additive
budget ``b = sum_l w_l 1[z_l != z_{n,l}]`` and the transport distance is ``D = b^(1/p)``.  Over the
mutable features taken in order, the reachable budgets are the subset sums

    B_0 = {0},    B_k = B_{k-1}  U  (B_{k-1} + w_k),

the same for every sample.  With general level costs ``c_l(v, v') = delta_l U_l(v, v')``
(:class:`drokit.metrics.CategoricalCost`, e.g. ordinal rank distances) a layer adds one of the
distinct entries of ``(delta_l U_l)^p``: ``B_k = U_i (B_{k-1} + c_{k,i})``, a superset of the budgets
any one sample reaches, still shared by all samples.  Budgets are merged after rounding to :data:`BUDGET_DECIMALS` decimals.
``|B_k| = k + 1`` with equal weights, at most ``2^k`` in general, at most ``1 + sum_l w_l / q`` when the
weights lie on a grid ``q`` (sun2025 §5.7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from ..exceptions import ProblemTooLargeError
from ..instance import DROInstance

#: refuse lattices with more distinct budgets than this in one layer
MAX_BUDGETS = 200_000
#: decimals of the budget merge
BUDGET_DECIMALS = 12


def round_budgets(b: np.ndarray) -> np.ndarray:
    return np.round(b, BUDGET_DECIMALS)


@dataclass
class BudgetLattice:
    """Reachable additive budgets after each layer: ``budgets[k] = B_k`` (sorted), and for layer
    ``k = 1..m`` and each of its additive increments ``increments[k-1][i]`` (``increments[k-1][0] = 0``:
    stay) the index in ``B_k`` reached from each ``j`` in ``B_{k-1}`` (``moves[k-1][i]``).

    A mismatch layer has the two increments ``(0, w_k)``: :attr:`stay` and :attr:`change`.  A layer with
    general level costs (:class:`drokit.metrics.CategoricalCost`) has one increment per distinct entry of
    ``(delta_l U_l)^p``: ``B_k = U_i (B_{k-1} + c_{k,i})``.
    """

    increments: List[np.ndarray]     # m arrays: sorted distinct additive increments, first 0
    budgets: List[np.ndarray]        # m + 1 arrays, budgets[0] = [0]
    moves: List[List[np.ndarray]]    # moves[k][i]: (|B_{k-1}|,) index map of increment i of layer k

    @property
    def weights(self) -> np.ndarray:
        """The change increment ``w_k`` of each (binary) layer."""
        return np.array([inc[-1] for inc in self.increments], dtype=float)

    @property
    def stay(self) -> List[np.ndarray]:
        return [m[0] for m in self.moves]

    @property
    def change(self) -> List[np.ndarray]:
        """The change maps of binary layers (every layer must have at most one nonzero increment)."""
        if any(len(m) > 2 for m in self.moves):
            raise ValueError("change maps exist only for mismatch (stay / change) layers")
        return [m[-1] for m in self.moves]

    @property
    def sizes(self) -> np.ndarray:
        """``(|B_0|, ..., |B_m|)``."""
        return np.array([b.size for b in self.budgets], dtype=np.int64)

    def predecessors(self, k: int) -> List[np.ndarray]:
        """For layer ``k`` (0-based) and each increment ``i``, the index in ``B_k`` -> the index in
        ``B_{k-1}`` it is reached from by increment ``i`` (``-1`` if none); every map is injective, so
        backtracking is exact."""
        size = self.budgets[k + 1].size
        out = []
        for move in self.moves[k]:
            prev = np.full(size, -1)
            prev[move] = np.arange(move.size)
            out.append(prev)
        return out


def extend_budgets(budgets: np.ndarray, w) -> np.ndarray:
    """``U_i (B + w_i)`` sorted, merged after rounding (one step of the lattice); ``w`` a number (the
    mismatch step ``B U (B + w)``) or the array of a layer's increments (0 included)."""
    w = np.atleast_1d(np.asarray(w, dtype=float))
    if w.size == 1:
        w = np.array([0.0, w[0]])
    return np.unique(round_budgets((budgets[:, None] + w[None, :]).ravel()))


def layer_increments(increments: np.ndarray) -> np.ndarray:
    """The distinct additive increments of a layer, 0 first (rounded like the budgets)."""
    inc = np.unique(round_budgets(np.concatenate([[0.0], np.ravel(increments)])))
    return inc


def budget_lattice(weights: Sequence, max_budgets: int = MAX_BUDGETS) -> BudgetLattice:
    """The lattice ``B_k = U_i (B_{k-1} + c_{k,i})`` with its index maps.

    ``weights[k]`` is a number ``w_k`` (a mismatch layer: increments ``(0, w_k)``, kept even when
    ``w_k = 0``) or an array of the layer's additive increments (0 added, duplicates merged).  Raises
    :class:`ProblemTooLargeError` when a layer has more than ``max_budgets`` budgets.
    """
    budgets = [np.zeros(1)]
    increments, moves = [], []
    for w in weights:
        inc = (np.array([0.0, float(w)]) if np.ndim(w) == 0 else layer_increments(np.asarray(w, float)))
        prev = budgets[-1]
        merged = extend_budgets(prev, inc)
        if merged.size > max_budgets:
            raise ProblemTooLargeError(
                f"the categorical weights give {merged.size:,} distinct transport budgets in one layer "
                f"(limit {max_budgets:,}); round the categorical weights to a grid (e.g. 1 decimal) or "
                f"use equal weights")
        moves.append([np.searchsorted(merged, round_budgets(prev + c)) for c in inc])
        increments.append(inc)
        budgets.append(merged)
    return BudgetLattice(increments, budgets, moves)


def additive_weights(inst: DROInstance) -> np.ndarray:
    """``delta_l^p`` per categorical feature (0 for immutable ones, which are never layers)."""
    delta = inst.metric.delta
    p = inst.metric.categorical.validated_p()
    return np.where(np.isfinite(delta), delta, 0.0) ** p


def layer_costs(inst: DROInstance, features: np.ndarray) -> list:
    """The lattice layers of ``features`` (mutable categorical positions): the number ``delta_l^p``
    for a mismatch cost, the array of distinct ``(delta_l U_l)^p`` entries for general level costs."""
    if inst.metric.mismatch_only:
        return list(additive_weights(inst)[features])
    return [np.unique(round_budgets(inst.metric.additive_increments(l))) for l in features]
