"""The layer order of sun2025's graph reformulation (sun2025 notes §5.7): which categorical feature is layer 1, 2, ...
of the budget DAG of :mod:`drokit.oracles.graph`.

The longest-path value does not depend on the order of the layers, but the size of the DAG does.  With ``B_k`` the
reachable additive budgets after the first ``k`` layers (``B_0 = {0}``, ``B_k = B_{k-1} U (B_{k-1} + w_k)``; for
level costs ``B_k = U_i (B_{k-1} + c_{k,i})`` over the layer's increments), layer ``k`` has ``|B_{k-1}|`` tails and,
per graph,

    rows_k = |B_{k-1}| a_k                                   (full variant)
    rows_k = min(|B_{k-1}| a_k, 2 |B_{k-1}| + a_k - 1)       (compact variant: merged change arcs)

linear arc rows of the potential LP (:func:`layer_rows`); the potential nodes are ``sum_{k>=1} |B_k|``.
:func:`order_cost` is the pair ``(sum_k rows_k, sum_{k>=1} |B_k|)`` of an order, compared lexicographically.

:func:`choose_layer_order` minimizes it.  The lattice after a *set* ``S`` of layers does not depend on their order
(subset sums), so a dynamic program over subsets is exact:

    best[S] = min_{l in S}  best[S - l] + (rows(|B(S - l)|, a_l), |B(S)|),

``O(2^m m)`` lattice steps, used for up to :data:`EXACT_ORDER_LIMIT` layers.  Above, a local search: start from
"most levels first, then smallest weight" (high cardinality first is optimal for equal weights and for generic
weights, where ``|B_{k-1}|`` is ``k`` resp. ``2^{k-1}``) and apply improving adjacent swaps until none helps.

:func:`resolve_order` turns the ``order`` option of an instance (``None`` / ``"auto"``, ``"schema"`` or a
permutation of the layer features) into schema positions.
"""

from __future__ import annotations

from itertools import combinations
from typing import Dict, Sequence, Tuple, Union

import numpy as np

from ..exceptions import ParameterError
from ..instance import DROInstance
from .lattice import extend_budgets, layer_costs

#: choose_layer_order is exact (dynamic program over subsets) up to this many layers
EXACT_ORDER_LIMIT = 12

#: the ``order`` option: ``None`` / ``"auto"``, ``"schema"`` or a sequence of categorical feature positions
Order = Union[None, str, Sequence[int]]


# ----------------------------------------------------------------------------------- size formulas
def layer_rows(tails: int, a: int, compact: bool) -> int:
    """Linear arc rows of one layer: ``tails * a`` (full) or ``min(tails * a, 2 tails + a - 1)``."""
    full = tails * a
    return min(full, 2 * tails + a - 1) if compact else full


def order_cost(levels: Sequence[int], weights: Sequence[float], compact: bool = False) -> Tuple[int, int]:
    """``(arc rows, potential nodes)`` per graph for the layers in the given order:
    ``(sum_k rows_k(|B_{k-1}|, a_k), sum_{k>=1} |B_k|)``."""
    budgets = np.zeros(1)
    rows = nodes = 0
    for a, w in zip(levels, weights):
        rows += layer_rows(budgets.size, int(a), compact)
        budgets = extend_budgets(budgets, w)
        nodes += budgets.size
    return rows, nodes


def _exact_order(levels: np.ndarray, weights: np.ndarray, compact: bool) -> np.ndarray:
    """Dynamic program over subsets: the lattice after a *set* of layers does not depend on their
    order, so ``best[S] = min_{l in S} best[S - l] + (rows(|B(S - l)|, a_l), |B(S)|)``."""
    m = levels.size
    lattice = {0: np.zeros(1)}
    best: Dict[int, Tuple[Tuple[int, int], int]] = {0: ((0, 0), -1)}
    for size in range(1, m + 1):
        for subset in combinations(range(m), size):
            S = sum(1 << l for l in subset)
            low = subset[0]
            lattice[S] = extend_budgets(lattice[S ^ (1 << low)], weights[low])
            nodes = lattice[S].size
            cand = []
            for l in subset:
                prev = S ^ (1 << l)
                (r, v), _ = best[prev]
                cand.append(((r + layer_rows(lattice[prev].size, int(levels[l]), compact),
                              v + nodes), l))
            best[S] = min(cand)
    order, S = [], (1 << m) - 1
    while S:
        l = best[S][1]
        order.append(l)
        S ^= 1 << l
    return np.array(order[::-1], dtype=np.int64)


def _local_search_order(levels: np.ndarray, weights: np.ndarray, compact: bool) -> np.ndarray:
    """Large m: start from "most levels first, then smallest weight" and apply improving adjacent
    swaps (exact costs) until none helps."""
    key = np.array([np.max(w) for w in weights], dtype=float)
    order = np.lexsort((key, -levels))
    pick = lambda o: [weights[i] for i in o]  # noqa: E731 (list or array weights)
    cost = order_cost(levels[order], pick(order), compact)
    improved = True
    while improved:
        improved = False
        for k in range(order.size - 1):
            cand = order.copy()
            cand[k], cand[k + 1] = cand[k + 1], cand[k]
            c = order_cost(levels[cand], pick(cand), compact)
            if c < cost:
                order, cost, improved = cand, c, True
    return order


def choose_layer_order(levels: Sequence[int], weights: Sequence[float], compact: bool = False) -> np.ndarray:
    """A permutation of the layers minimizing ``(arc rows, potential nodes)`` per graph (sun2025 notes §5.7).

    Exact for up to :data:`EXACT_ORDER_LIMIT` layers (subset dynamic program, ``O(2^m m)`` lattice
    steps); above, "high cardinality first" (optimal for equal weights and for generic weights, where
    ``|B_{k-1}|`` is ``k`` resp. ``2^{k-1}``) refined by adjacent swaps.  Ties keep the given order.
    """
    levels = np.asarray(levels, dtype=np.int64)
    if all(np.ndim(w) == 0 for w in weights):
        weights = np.asarray(weights, dtype=float)
    else:  # level-cost layers: arrays of increments
        weights = [np.asarray(w, dtype=float) for w in weights]
    if levels.size <= 1:
        return np.arange(levels.size)
    if levels.size <= EXACT_ORDER_LIMIT:
        return _exact_order(levels, weights, compact)
    return _local_search_order(levels, weights, compact)


# ------------------------------------------------------------------------------- instance helpers
def resolve_order(inst: DROInstance, order: Order = None, compact: bool = True) -> np.ndarray:
    """The layers in the order to use, as schema positions of categorical features.

    ``None`` or ``"auto"``: :func:`choose_layer_order`; ``"schema"``: the data's column order; a
    sequence: those features (it must be a permutation of :meth:`~drokit.instance.DROInstance.mutable_categorical`).
    """
    layers = inst.mutable_categorical()
    if order is None or (isinstance(order, str) and order == "auto"):
        w = layer_costs(inst, layers)
        return layers[choose_layer_order(inst.schema.levels[layers], w,
                                         compact and inst.metric.mismatch_only)]
    if isinstance(order, str):
        if order != "schema":
            raise ParameterError(f"order must be None, 'auto', 'schema' or a sequence of categorical "
                                 f"feature positions, got {order!r}")
        return layers
    given = np.asarray(order, dtype=np.int64).ravel()
    if sorted(given.tolist()) != layers.tolist():
        raise ParameterError(f"order must list each layer feature (categorical features with finite "
                             f"weight and >= 2 levels: {layers.tolist()}) exactly once, got "
                             f"{given.tolist()}")
    return given
