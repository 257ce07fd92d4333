"""The layered budget DAG of sun2025's graph reformulation (§4.2, Lemma 1, Theorem 2; sun2025 notes §5.3-5.9).

Layers and states
-----------------
The *layers* are the categorical features that can change: finite weight ``delta_l`` and ``a_l >= 2``
levels (an immutable feature, ``delta_l = inf``, only has its stay arc, so it is not a layer: its
dummy contribution is a constant of the margin; sun2025 notes erratum 6).  With the categorical exponent ``p``
of :class:`~drokit.metrics.MismatchCost` a changed feature adds ``w_l = delta_l^p`` to the additive
budget ``b = sum_l w_l 1[z_l != z^i_l]``, and the transport distance is ``D = b^(1/p)`` (``p = 1``:
sun2025's weighted Hamming distance).  After the first ``k`` layers the reachable budgets are the
subset sums

    B_0 = {0},    B_k = B_{k-1}  U  (B_{k-1} + w_k)        (sun2025 §4.2 observation),

which **do not depend on the sample**: only which arc is the "stay" arc depends on ``z^i``, and the
arc weights depend on the sample only through ``(z^i, y^i)``.  Budgets are merged after rounding to
12 decimals by :mod:`drokit.oracles.lattice`, the lattice the DP oracle uses too.

Nodes are the states ``(k, j)`` (layer ``k``, index ``j`` into the sorted ``B_k``), plus the source
``(0, 0)`` and the sink ``(m + 1, 0)`` of sun2025's G^i.  Arcs (sun2025 notes §5.3), for every node
``(k - 1, j)``:

* one **stay** arc to ``(k, stay_k[j])`` (budget unchanged) for the observed level ``v = z^i_k``;
* **change** arcs to ``(k, change_k[j])`` (budget ``+ w_k``): in the *full* variant ``a_k - 1``
  parallel arcs, one per alternative level ``v = (z^i_k + alt) mod a_k``, ``alt = 1..a_k-1``; in the
  *compact* variant one merged arc (see below);
* one **sink** arc from every ``(m, j)``.

The arc of level ``v`` of layer ``k`` has weight ``w^i = -y^i beta_{z_k}(v)`` in sun2025 (14)
(``beta_{z_k}(0) = 0``: the reference level).

Merged change arcs (compact variant)
------------------------------------
The ``a_k - 1`` parallel change arcs out of ``(k-1, j)`` share their tail and head and differ only in
their weights, so a longest path only uses the heaviest: ``max_v w(v)``.  In the LP dual (potentials
``mu``) this is written exactly with one auxiliary variable ``t_k`` per (graph, layer):

    t_k >= w(v)                       for the a_k - 1 alternative levels v != z^i_k
    mu_(k, change_k[j]) - mu_(k-1, j) >= t_k      for every tail j in B_{k-1}

which is equivalent to the ``|B_{k-1}| (a_k - 1)`` original arc constraints (take ``t_k = max_v w(v)``
in one direction; ``t_k >= w(v)`` in the other).  It has ``|B_{k-1}| + a_k - 1`` rows instead of
``|B_{k-1}| (a_k - 1)``, so it is used only on the layers where it is smaller:
``(|B_{k-1}| - 1)(a_k - 2) > 1`` (never on the first layer, never for binary features).

Sizes (sun2025 notes §5.7, per graph, the notes' counting with source and sink)
------------------------------------------------------------------
* nodes  ``|V| = 2 + sum_{k=1}^m |B_k|``
* arcs   ``|A| = sum_k |B_{k-1}| a_k + |B_m|`` (full); merged layers count ``2 |B_{k-1}|`` (compact)
* linear arc rows of the potential LP: ``sum_k rows_k`` with ``rows_k = |B_{k-1}| a_k`` (full) or
  ``min(|B_{k-1}| a_k, 2 |B_{k-1}| + a_k - 1)`` (compact)

The arc count depends on the layer order (the value does not): the order is chosen in
:mod:`drokit.oracles.graph_order` (:func:`~drokit.oracles.graph_order.choose_layer_order` minimizes the arc rows,
exactly for up to :data:`~drokit.oracles.graph_order.EXACT_ORDER_LIMIT` layers;
:func:`~drokit.oracles.graph_order.layer_rows` is the ``rows_k`` above).

General level costs (ordinal and user-defined, :class:`~drokit.metrics.CategoricalCost`)
---------------------------------------------------------------------------------------
A move ``u -> v`` of layer ``k`` adds ``(delta_k U_k(u, v))^p`` to the budget, so a change arc's head
depends on the observed level ``u`` of the sample's group: ``B_k = U_i (B_{k-1} + c_{k,i})`` over the
layer's distinct increments (still shared by all samples), and the arc of level ``v`` from ``(k-1, j)``
goes to ``(k, moves_k[i(u, v)][j])`` (:meth:`GraphTemplate.arc_heads`).  A group may not reach every
node; :meth:`GraphTemplate.reachable` marks the nodes it does, and the program keeps only the arcs out
of reachable tails and the loss terms at reachable final budgets (the other potentials are fixed at 0).
Level-cost layers are never merged.  The size formulas then count every tail: upper bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..exceptions import ParameterError
from ..instance import DROInstance
if TYPE_CHECKING:  # networkx is imported lazily (the template graph is for inspection)
    import networkx as nx
from .graph_order import Order, layer_rows, resolve_order
from .lattice import MAX_BUDGETS, BudgetLattice, additive_weights, budget_lattice, layer_costs, round_budgets

#: arc kinds in :attr:`GraphTemplate.kind`
STAY, CHANGE, MERGED, SINK = 0, 1, 2, 3
KIND_NAMES = ("stay", "change", "merged_change", "sink")


# ----------------------------------------------------------------------------------- size formulas
def layer_merged(tails: int, a: int, compact: bool) -> bool:
    """Whether the compact variant merges the layer's change arcs: ``(tails - 1)(a - 2) > 1``."""
    return bool(compact and (tails - 1) * (a - 2) > 1)


# -------------------------------------------------------------------------------------- template
@dataclass
class GraphTemplate:
    """The sample-independent layered DAG and its arcs as numpy arrays (for vectorized assembly).

    Global node numbering: source 0, node ``(k, j)`` is ``node_offset[k] + j`` (``k = 1..m``), sink
    ``n_nodes - 1``.  Arc ``e`` goes from ``tail[e]`` to ``head[e]``; ``layer[e]`` is its layer
    ``k - 1`` (0-based; ``-1`` for sink arcs), ``kind[e]`` one of :data:`STAY`, :data:`CHANGE`,
    :data:`MERGED`, :data:`SINK`, and ``alt[e]`` the alternative index: the arc's level for a sample
    with observed level ``c`` is ``(c + alt) mod a_k`` (0 for stay arcs, -1 for merged / sink arcs).
    """

    features: np.ndarray         # (m,) categorical feature (schema position) of each layer
    levels: np.ndarray           # (m,) a_k
    p: float                     # categorical exponent: D = b^(1/p)
    lattice: BudgetLattice
    merged: np.ndarray           # (m,) bool: change arcs of the layer merged (compact variant)
    node_offset: np.ndarray      # (m + 2,) first global index of each layer, sink included
    tail: np.ndarray
    head: np.ndarray
    layer: np.ndarray
    kind: np.ndarray
    alt: np.ndarray
    compact: bool = False
    #: level costs: per layer the (a_k, a_k) increment index ``i(u, v)`` of each move (None: mismatch
    #: layers, whose change arcs all add ``w_k`` and whose heads are in :attr:`head`)
    move_class: Optional[List[np.ndarray]] = None

    @property
    def level_costs(self) -> bool:
        return self.move_class is not None

    def arc_heads(self, arcs: np.ndarray, observed: np.ndarray) -> np.ndarray:
        """Global head node of layer arcs ``arcs`` (E,) for the observed levels ``observed`` (S, 1) of
        ``S`` groups (all arcs of one layer): :attr:`head` for mismatch layers, else
        ``node_offset[k+1] + moves_k[i(u, v)][j]`` (module docstring)."""
        if not self.level_costs:
            return np.broadcast_to(self.head[arcs][None, :], (observed.shape[0], arcs.size))
        k = int(self.layer[arcs[0]])
        level = self.level_of(arcs[None, :], observed)                    # (S, E)
        inc = self.move_class[k][observed, level]                         # (S, E)
        local_tail = self.tail[arcs] - self.node_offset[k]                # (E,)
        moves = np.vstack(self.lattice.moves[k])                          # (increments, |B_{k-1}|)
        return self.node_offset[k + 1] + moves[inc, local_tail[None, :]]

    def reachable(self, codes: np.ndarray) -> List[np.ndarray]:
        """Per layer ``k = 0..m``, the (G, |B_k|) nodes reachable from the source for groups with
        observed levels ``codes`` (G, m) in layer order (all True for mismatch layers)."""
        G = codes.shape[0]
        out = [np.ones((G, 1), dtype=bool)]
        for k, budgets in enumerate(self.lattice.budgets[1:]):
            if not self.level_costs:
                out.append(np.ones((G, budgets.size), dtype=bool))
                continue
            prev, nxt = out[-1], np.zeros((G, budgets.size), dtype=bool)
            moves = np.vstack(self.lattice.moves[k])
            rows = np.broadcast_to(np.arange(G)[:, None], prev.shape)
            for v in range(int(self.levels[k])):
                inc = self.move_class[k][codes[:, k], v]                  # (G,)
                target = moves[inc]                                       # (G, |B_{k-1}|)
                nxt[rows[prev], target[prev]] = True
            out.append(nxt)
        return out

    @property
    def n_layers(self) -> int:
        return int(self.levels.size)

    @property
    def n_nodes(self) -> int:
        return int(self.node_offset[-1] + 1)

    @property
    def n_arcs(self) -> int:
        return int(self.tail.size)

    @property
    def final_budgets(self) -> np.ndarray:
        return self.lattice.budgets[-1]

    @property
    def final_distances(self) -> np.ndarray:
        """``D = b^(1/p)`` of the last layer's budgets (the sink arcs' transport costs)."""
        return self.final_budgets ** (1.0 / self.p)

    @property
    def n_potentials(self) -> int:
        """Potential variables per graph in the sink-free form: every node but source and sink."""
        return self.n_nodes - 2

    def kind_counts(self) -> Dict[str, int]:
        return {name: int(np.sum(self.kind == k)) for k, name in enumerate(KIND_NAMES)}

    def level_of(self, arcs: np.ndarray, observed: np.ndarray) -> np.ndarray:
        """Level chosen by layer arcs ``arcs`` for observed levels ``observed`` (broadcasting)."""
        a = self.levels[self.layer[arcs]]
        return (observed + self.alt[arcs]) % a

    @cached_property
    def graph(self) -> "nx.MultiDiGraph":
        """The template as a networkx multigraph (parallel change arcs are separate edges).

        Node ``(k, j)`` has attributes ``budget`` (additive ``b``) and ``distance`` (``b^(1/p)``);
        the sink is ``(m + 1, 0)``.  Edges carry ``kind``, ``feature`` (schema position, -1 for sink
        arcs), ``layer`` and ``alt``.
        """
        if self.level_costs:
            raise ParameterError("the template of level costs has group-dependent arc heads "
                                 "(GraphTemplate.arc_heads); it has no single networkx graph")
        import networkx as nx          # only for this inspectable view: the solve path is numpy arcs
        G = nx.MultiDiGraph(compact=self.compact, p=self.p)
        names = self.node_names()
        for k, b in enumerate(self.lattice.budgets):
            for j, bj in enumerate(b):
                G.add_node((k, j), layer=k, budget=float(bj), distance=float(bj) ** (1.0 / self.p))
        G.add_node(names[-1], layer=self.n_layers + 1, budget=np.nan, distance=np.nan)
        feat = np.where(self.layer >= 0, self.features[np.maximum(self.layer, 0)], -1) \
            if self.n_layers else np.full(self.n_arcs, -1)
        for e in range(self.n_arcs):
            G.add_edge(names[self.tail[e]], names[self.head[e]], kind=KIND_NAMES[self.kind[e]],
                       feature=int(feat[e]), layer=int(self.layer[e]), alt=int(self.alt[e]))
        return G

    def node_names(self) -> List[Tuple[int, int]]:
        """``(k, j)`` of every global node index (source ``(0, 0)``, sink ``(m + 1, 0)``)."""
        names = [(k, j) for k, b in enumerate(self.lattice.budgets) for j in range(b.size)]
        return names + [(self.n_layers + 1, 0)]


def _layer_arcs(k: int, lattice: BudgetLattice, a: int, merged: bool, off_prev: int,
                off_next: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arc arrays (tail, head, kind, alt) of layer ``k`` (0-based), global node numbering."""
    tails = np.arange(lattice.budgets[k].size)
    stay = lattice.moves[k][0]
    # level costs (more than one nonzero increment): change heads depend on the group (arc_heads)
    change = lattice.moves[k][-1] if len(lattice.moves[k]) == 2 else np.full(tails.size, -1)
    if merged:
        alts = np.array([-1])
        kinds = np.array([MERGED])
    else:
        alts = np.arange(1, a)
        kinds = np.full(a - 1, CHANGE)
    n_change = alts.size
    tail = np.concatenate([tails, np.repeat(tails, n_change)]) + off_prev
    head = np.concatenate([stay + off_next, np.repeat(change, n_change) + off_next])
    kind = np.concatenate([np.full(tails.size, STAY), np.tile(kinds, tails.size)])
    alt = np.concatenate([np.zeros(tails.size, dtype=np.int64), np.tile(alts, tails.size)])
    return tail, head, kind, alt


def build_template(levels: Sequence[int], weights: Sequence, p: float = 1.0,
                   features: Optional[Sequence[int]] = None, compact: bool = False,
                   max_budgets: int = MAX_BUDGETS) -> GraphTemplate:
    """The DAG for layers with ``levels`` (``a_k >= 2``) and additive weights ``weights``
    (``delta_k^p``), in the given order.  ``features`` labels the layers (default ``0..m-1``).

    Level costs: every ``weights[k]`` is the (a_k, a_k) matrix ``(delta_k U_k)^p`` of additive increments
    (module docstring); the template then carries :attr:`GraphTemplate.move_class` and merges no layer."""
    levels = np.asarray(levels, dtype=np.int64)
    if np.any(levels < 2):
        raise ParameterError("every layer needs at least 2 levels (single-level features are not layers)")
    matrices = [np.asarray(w, dtype=float) for w in weights] if any(np.ndim(w) for w in weights) else None
    lattice = budget_lattice(weights, max_budgets)
    sizes = lattice.sizes
    m = levels.size
    node_offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)  # m + 2 entries
    merged = np.array([layer_merged(int(sizes[k]), int(levels[k]), compact and matrices is None)
                       for k in range(m)], bool)
    move_class = None if matrices is None else [
        np.searchsorted(lattice.increments[k], round_budgets(matrices[k])) for k in range(m)]
    parts = [_layer_arcs(k, lattice, int(levels[k]), bool(merged[k]), int(node_offset[k]),
                         int(node_offset[k + 1])) for k in range(m)]
    layer = [np.full(part[0].size, k) for k, part in enumerate(parts)]
    finals = np.arange(sizes[-1]) + node_offset[m]
    parts.append((finals, np.full(finals.size, node_offset[m + 1]), np.full(finals.size, SINK),
                  np.full(finals.size, -1)))
    layer.append(np.full(finals.size, -1))
    tail, head, kind, alt = (np.concatenate([part[i] for part in parts]).astype(np.int64) for i in range(4))
    features = np.arange(m) if features is None else np.asarray(features, dtype=np.int64)
    return GraphTemplate(features=features, levels=levels, p=float(p), lattice=lattice, merged=merged,
                         node_offset=node_offset, tail=tail, head=head,
                         layer=np.concatenate(layer).astype(np.int64), kind=kind, alt=alt,
                         compact=compact, move_class=move_class)


def template_for(inst: DROInstance, order: Order = None, compact: bool = True,
                 max_budgets: int = MAX_BUDGETS) -> GraphTemplate:
    """The template of an instance: layers = :meth:`~drokit.instance.DROInstance.mutable_categorical` in
    :func:`~drokit.oracles.graph_order.resolve_order`'s order."""
    feats = resolve_order(inst, order, compact)
    weights = (additive_weights(inst)[feats] if inst.metric.mismatch_only
               else [inst.metric.additive_increments(l) for l in feats])
    return build_template(inst.schema.levels[feats], weights, inst.metric.categorical.validated_p(), feats,
                          compact, max_budgets)


# ------------------------------------------------------------------------- potential systems, sizes
@dataclass
class SinkTerms:
    """The loss terms ``L(u) <= t`` of the sink-free form, one per (sample, label, extreme) and final
    budget (see :mod:`drokit.reformulations.graph`).

    ``sample``, ``flip``, ``sigma`` (sign of the hypothesis in ``u``), ``shift`` (``r``: 0 or
    ``y_n``) and ``upper`` (whether the term bounds S from above, i.e. uses the max-potential system)
    have one entry per (sample, label, extreme); ``system`` indexes :attr:`system_group` /
    :attr:`system_upper`.
    """

    sample: np.ndarray
    flip: np.ndarray
    sigma: np.ndarray
    shift: np.ndarray
    upper: np.ndarray
    system: np.ndarray
    system_group: np.ndarray     # (S,) potential group of each system
    system_upper: np.ndarray     # (S,) True: max system (mu >= longest path), False: min system
    group_codes: np.ndarray      # (G, m) observed levels of each group, layer order
    group_of_sample: np.ndarray  # (N,)

    @property
    def n_systems(self) -> int:
        return int(self.system_group.size)


def potential_groups(inst: DROInstance, features: np.ndarray,
                     share: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """``(group of each sample, observed layer levels of each group)``; with ``share`` samples with
    the same levels on the layer features share a group (sun2025 notes §5.9), else every sample is one."""
    codes = inst.data.Z[:, features] if features.size else np.zeros((inst.n_samples, 0), np.int64)
    if not share:
        return np.arange(inst.n_samples), codes
    uniq, inverse = np.unique(codes, axis=0, return_inverse=True)
    return inverse.ravel(), uniq


def sink_terms(inst: DROInstance, features: np.ndarray, share: bool = True) -> SinkTerms:
    """Enumerate the (sample, label, extreme) terms and the potential systems they need.

    With ``u = sigma (base + S(z)) - r`` and ``S(z) = sum_layers beta(z_k)``, the term bounding
    ``max_z u`` uses the max system when ``sigma > 0`` and the min system when ``sigma < 0``; the
    term bounding ``min_z u`` the other one.  A nonincreasing loss (``loss.decreasing``) needs only
    the ``min_z u`` term.  Systems are keyed by (group, extreme), so (z, y = +1) and (z, y = -1) share
    them: e.g. with finite kappa both labels of a pattern use the same two systems.
    """
    N = inst.n_samples
    group, codes = potential_groups(inst, features, share)
    samples = np.arange(N)
    flips = [family.flip for family in inst.label_families()]
    sample = np.concatenate([samples for _ in flips])
    flip = np.concatenate([np.full(N, f) for f in flips])
    sigma, shift = inst.row_signs(sample, flip)
    ends = [False] if inst.loss.decreasing else [False, True]  # False: bound min u, True: max u
    upper_end = np.concatenate([np.full(sample.size, e) for e in ends])
    sample, flip = np.tile(sample, len(ends)), np.tile(flip, len(ends))
    sigma, shift = np.tile(sigma, len(ends)), np.tile(shift, len(ends))
    upper = (sigma > 0) == upper_end
    keys = group[sample] * 2 + upper.astype(np.int64)
    uniq, system = np.unique(keys, return_inverse=True)
    return SinkTerms(sample=sample, flip=flip, sigma=sigma, shift=shift, upper=upper,
                     system=system.ravel(), system_group=uniq // 2, system_upper=(uniq % 2).astype(bool),
                     group_codes=codes, group_of_sample=group)


@dataclass
class GraphSize:
    """Sizes of the graph formulation, from the formulas (before any program is built)."""

    layers: List[int]             # categorical features (schema positions) in layer order
    levels: List[int]             # a_k in layer order
    budgets: List[int]            # |B_0|, ..., |B_m|
    merged_layers: int            # layers whose change arcs are merged (compact)
    nodes_per_graph: int          # 2 + sum_k |B_k| (source and sink included, sun2025 notes §5.7)
    arcs_per_graph: int           # sum_k arcs_k + |B_m| (sink arcs included)
    arc_rows_per_graph: int       # linear arc constraints of one potential system
    groups: int                   # distinct potential groups (patterns, or samples when unshared)
    systems: int                  # potential systems (group x extreme actually used)
    potential_variables: int      # systems * sum_{k>=1} |B_k|
    aux_variables: int            # systems * merged_layers
    arc_constraints: int          # systems * arc_rows_per_graph
    loss_terms: int               # L(u) <= t epigraph terms (sink arcs over all terms)
    reference: Dict[str, int] = field(default_factory=dict)  # full-variant arcs, problem (3) terms

    def as_dict(self) -> Dict[str, object]:
        return dict(self.__dict__)

    def summary(self) -> str:
        return (f"{len(self.layers)} layers, |B| = {self.budgets}, {self.nodes_per_graph} nodes / "
                f"{self.arcs_per_graph} arcs per graph, {self.systems} potential systems "
                f"({self.groups} groups): {self.potential_variables + self.aux_variables:,} potential "
                f"variables, {self.arc_constraints:,} linear arc rows, {self.loss_terms:,} loss terms")


def graph_size(inst: DROInstance, order: Order = None, compact: bool = True,
               share_potentials: bool = True, max_budgets: int = MAX_BUDGETS) -> GraphSize:
    """Node / arc / constraint / variable counts of the graph program, by the formulas of the module
    docstring (only the budget set sizes and the sample patterns are computed, no graph)."""
    feats = resolve_order(inst, order, compact)
    compact = compact and inst.metric.mismatch_only  # level-cost layers are never merged
    levels = inst.schema.levels[feats]
    sizes = budget_lattice(layer_costs(inst, feats), max_budgets).sizes
    tails = sizes[:-1]
    rows = [layer_rows(int(d), int(a), compact) for d, a in zip(tails, levels)]
    merged = sum(layer_merged(int(d), int(a), compact) for d, a in zip(tails, levels))
    arcs = int(sum(2 * d if layer_merged(int(d), int(a), compact) else d * a
                   for d, a in zip(tails, levels)) + sizes[-1])
    terms = sink_terms(inst, feats, share_potentials)
    S = terms.n_systems
    reference = {"full_arcs_per_graph": int(np.sum(tails * levels) + sizes[-1]),
            "problem3_loss_terms": int(inst.n_samples * np.prod(levels.astype(float)))}
    return GraphSize(layers=feats.tolist(), levels=levels.tolist(), budgets=sizes.tolist(),
                     merged_layers=int(merged), nodes_per_graph=int(2 + sizes[1:].sum()),
                     arcs_per_graph=arcs, arc_rows_per_graph=int(sum(rows)),
                     groups=int(terms.group_codes.shape[0]), systems=S,
                     potential_variables=int(S * sizes[1:].sum()), aux_variables=int(S * merged),
                     arc_constraints=int(S * sum(rows)), loss_terms=int(terms.sample.size * sizes[-1]),
                     reference=reference)
