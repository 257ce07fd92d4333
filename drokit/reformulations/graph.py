"""The graph (longest-path) reformulation of sun2025 Theorem 2, problem (14), for every loss.

sun2025 replaces the ``N prod_l a_l`` loss constraints of problem (3) (our :mod:`.dual` program with
all configuration rows) by one longest-path LP per sample over the layered budget DAG of
:mod:`drokit.oracles.graph`, dualized into node potentials (Lemma 1, §E.3-E.4).  This module
assembles the *sink-free* form (sun2025 notes §5.9), generalized from the log-loss to any convex
loss ``L`` of the :class:`~drokit.losses.Loss` protocol, any categorical exponent ``p`` and finite
``kappa``.

Derivation
----------
For sample ``n`` write ``u(z) = sigma (base_n + S(z)) - r`` with ``sigma = y_n`` (classification;
``-y_n`` for a label flip), ``r = 0``, or ``sigma = 1``, ``r = y_n`` (regression), where

    base_n = beta_0 + beta_x^T x_n + sum_{l not a layer} beta_l(z_{n,l}),   S(z) = sum_{layers k} beta_k(z_k)

(``beta_l(v)`` is the dummy coefficient of level v, 0 for the reference level).  The constraints of
problem (3) for sample n are ``L(u(z)) <= s_n + lambda (D(z) + kappa flip)`` for all z.  D(z) depends
on z only through the final budget b of its path in the DAG.  For a fixed b, u(z) ranges over an
interval ``[u_lo(b), u_hi(b)]`` whose ends are attained, and a convex L is at most t on the interval
iff it is at most t at both ends.  Node potentials bound the ends (LP duality of the longest path,
sun2025 (14)): a *max system* P with ``P_(0,0) = 0`` and ``P_head - P_tail >= beta_k(v)`` on every
arc of level v has ``P_(m,b) >= max_{z: budget b} S(z)``, with equality for the longest-path
distances; a *min system* Q with ``Q_head - Q_tail <= beta_k(v)`` has ``Q_(m,b) <= min S``.  Hence
(exact, both directions):

    min   lambda eps + (1/N) sum_n s_n
    s.t.  P_head - P_tail >= beta_k(v),  Q_head - Q_tail <= beta_k(v)      every arc, every system
          L(sigma (base_n + Pot_(m,b)) - r) <= s_n + lambda (b^(1/p) + kappa flip)
                                              every term (n, flip, end) and every b in B_m
          lip(L) ||Gamma^{-1} beta_x||_* <= lambda,   (regression, finite kappa) lip(L) <= lambda kappa,
          lambda >= 0

where the term bounding ``max u`` uses ``Pot = P`` if ``sigma > 0`` and ``Pot = Q`` if ``sigma < 0``,
and the term bounding ``min u`` the other system.  A nonincreasing loss (``loss.decreasing``: all
classification losses) only needs the ``min u`` term: ``L(u(z)) <= L(u_lo)``.  For the log-loss and
``y_n = +1`` this is sun2025's sink-free form ``log(1 + exp(-y^i base_i + mu_(m,d))) <= r_i + lambda d``
with ``mu = -Q`` (``mu = P`` for ``y_n = -1``): the longest path of the weights ``-y^i beta(v)``.
Finite kappa (classification) adds the flipped-label terms (sigma = ``-y_n``, cost ``+ kappa``;
sun2025 notes §5.9's second graph), which reuse the *other* system of the same pattern.

Variants
--------
* ``variant="full"``: one constraint per arc (``a_k - 1`` parallel change arcs);
* ``variant="compact"``: parallel change arcs merged through one auxiliary ``t_k`` per (system,
  layer): ``t_k >= beta_k(v)`` for the alternative levels and ``P_head - P_tail >= t_k`` (``<=`` for
  Q), on the layers where this has fewer rows (see :mod:`drokit.oracles.graph`).
* ``share_potentials=True``: potentials are keyed by (observed levels on the layers, extreme), so all
  samples with the same categorical pattern share them and only their loss terms stay per sample
  (sun2025 notes §5.9); both labels of a pattern share too (the flipped-label graph of ``y`` is the
  graph of ``-y``).  ``False``: one set of systems per sample (sun2025 (14) literally).

Level costs (:class:`~drokit.metrics.OrdinalCost`, any :class:`~drokit.metrics.CategoricalCost`): the
arc of level v from ``(k-1, j)`` ends at the budget ``j + (delta_k U_k(u, v))^p`` of the system's
observed level u (:meth:`~drokit.oracles.graph.GraphTemplate.arc_heads`); arcs out of nodes the group
cannot reach, and loss terms at unreachable final budgets, are left out, and the unreachable potentials
fixed at 0 -- the longest-path argument above holds on the reachable subgraph unchanged.

Sizes are computed by :func:`drokit.oracles.graph.graph_size` before assembly and stored in
``CompiledProgram.info["graph_size"]``.  The variables ``coef``, ``intercept``, ``s`` and ``lambda``
have the names used by :func:`.dual.build_dual_program`; the potentials (``graph#mu``) and the merge
auxiliaries (``graph#t``) are auxiliary blocks.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.lattice import MAX_BUDGETS
from ..oracles.graph import MERGED, GraphTemplate, SinkTerms, graph_size, sink_terms, template_for
from ..oracles.graph_order import Order
from ..schema import MixedData
from ..conic.builder import Affine, ProgramBuilder
from ..conic.builder import linear_score
from .dual import CompiledProgram, declare_parameters, finish_dual_program

VARIANTS = ("compact", "full")


class _Triples:
    """COO triples ``(row, column, value)`` of a block of linear rows, collected array by array."""

    def __init__(self) -> None:
        self.rows, self.cols, self.vals = [], [], []

    def add(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
            mask: Optional[np.ndarray] = None) -> None:
        if mask is not None:
            rows, cols, vals = rows[mask], cols[mask], vals[mask]
        self.rows.append(np.ravel(rows))
        self.cols.append(np.ravel(cols))
        self.vals.append(np.ravel(vals))

    def affine(self, n_rows: int, n_cols: int) -> Affine:
        """The rows as an :class:`Affine` with zero constant."""
        M = sp.csr_matrix((np.concatenate(self.vals), (np.concatenate(self.rows),
                                                        np.concatenate(self.cols))), shape=(n_rows, n_cols))
        return Affine(M, np.zeros(n_rows))


def base_design(inst: DROInstance, template: GraphTemplate) -> sp.csr_matrix:
    """``[x_n, dummies(z_n)]`` with the layer features set to their reference level: the part of
    ``f(x_n, z)`` that the categorical moves cannot change (immutable features included)."""
    Z = inst.data.Z.copy()
    Z[:, template.features] = 0
    return inst.schema.design(MixedData(X=inst.data.X, Z=Z, levels=inst.data.levels))


class _Columns:
    """Global column indices of the program's variables used by the arc rows."""

    def __init__(self, pb: ProgramBuilder, inst: DROInstance, template: GraphTemplate):
        self.n_pot = template.n_potentials
        self.mu = pb.variables["graph#mu"].start
        self.t = pb.variables["graph#t"].start if "graph#t" in pb.variables else -1
        self.n_merged = int(template.merged.sum())
        self.merged_index = np.cumsum(template.merged) - 1
        self.dummy = pb.variables["coef"].start + inst.n_numerical + inst.schema.dummy_offsets()

    def potential(self, system: np.ndarray, node: np.ndarray) -> np.ndarray:
        """Column of the potential of global node ``node`` (>= 1) in ``system``."""
        return self.mu + system * self.n_pot + node - 1

    def coefficient(self, feature: int, level: np.ndarray) -> np.ndarray:
        """Column of ``beta_feature(level)`` (only meaningful where ``level > 0``)."""
        return self.dummy[feature] + level - 1

    def merge_aux(self, system: np.ndarray, k: int) -> np.ndarray:
        """Column of ``t_k`` of each system (merged layer ``k``)."""
        return self.t + system * self.n_merged + self.merged_index[k]


def _arc_rows(k: int, template: GraphTemplate, terms: SinkTerms, cols: _Columns, out: _Triples,
              reach: Optional[list] = None) -> int:
    """``sign (mu_head - mu_tail - weight) >= 0`` for every (system, arc) of layer ``k``: ``sign = +1``
    (max system) or ``-1`` (min system); weight ``beta_k(level)`` (0 at the reference level) or
    ``t_k`` on merged arcs.  The source potential is the constant 0.  With level costs the heads depend
    on the system's group and only arcs out of tails the group reaches (``reach``) are kept.  Returns the
    row count."""
    arcs = np.flatnonzero(template.layer == k)
    S, E = terms.n_systems, arcs.size
    system = np.arange(S)[:, None]
    sign = np.where(terms.system_upper, 1.0, -1.0)[:, None] * np.ones((1, E))
    observed = terms.group_codes[terms.system_group, k][:, None]
    tail = np.broadcast_to(template.tail[arcs][None, :], (S, E))
    keep = np.ones((S, E), dtype=bool)
    if reach is not None:
        keep = reach[k][terms.system_group[:, None], tail - template.node_offset[k]]
    row = (np.cumsum(keep.ravel()) - 1).reshape(S, E)
    out.add(row, cols.potential(system, template.arc_heads(arcs, observed)), sign, mask=keep)
    out.add(row, cols.potential(system, tail), -sign, mask=keep & (tail > 0))
    merged = np.broadcast_to(template.kind[arcs][None, :] == MERGED, (S, E))
    level = template.level_of(arcs[None, :], observed)
    out.add(row, cols.coefficient(int(template.features[k]), level), -sign,
            mask=keep & ~merged & (level > 0))
    if merged.any():
        out.add(row, np.broadcast_to(cols.merge_aux(system, k), (S, E)), -sign, mask=merged)
    return int(keep.sum())


def _merge_rows(k: int, template: GraphTemplate, terms: SinkTerms, cols: _Columns, out: _Triples,
                first_row: int) -> int:
    """``sign (t_k - beta_k(v)) >= 0`` for the ``a_k - 1`` alternative levels of every system (merged
    layer ``k``); rows numbered from ``first_row``.  Returns the row count."""
    S, a = terms.n_systems, int(template.levels[k])
    system = np.arange(S)[:, None]
    sign = np.where(terms.system_upper, 1.0, -1.0)[:, None] * np.ones((1, a - 1))
    level = (terms.group_codes[terms.system_group, k][:, None] + np.arange(1, a)[None, :]) % a
    row = first_row + np.arange(S * (a - 1)).reshape(S, a - 1)
    out.add(row, np.broadcast_to(cols.merge_aux(system, k), (S, a - 1)), sign)
    out.add(row, cols.coefficient(int(template.features[k]), level), -sign, mask=level > 0)
    return S * (a - 1)


def _layer_rows(k: int, template: GraphTemplate, terms: SinkTerms, cols: _Columns, n_cols: int,
                reach: Optional[list] = None) -> Affine:
    """All linear rows of layer ``k``: its arcs, plus the merge rows of a merged layer."""
    out = _Triples()
    n_rows = _arc_rows(k, template, terms, cols, out, reach)
    if template.merged[k]:
        n_rows += _merge_rows(k, template, terms, cols, out, n_rows)
    return out.affine(n_rows, n_cols)


def add_arc_constraints(pb: ProgramBuilder, inst: DROInstance, template: GraphTemplate,
                        terms: SinkTerms) -> int:
    """All linear arc rows (vectorized over systems and arcs; one loop over the layers).  Returns
    the number of rows added."""
    cols = _Columns(pb, inst, template)
    reach = template.reachable(terms.group_codes) if template.level_costs else None
    total = 0
    for k in range(template.n_layers):
        rows = _layer_rows(k, template, terms, cols, pb.n, reach)
        pb.add_nonneg(rows)
        total += rows.size
    if reach is not None:  # potentials of nodes a group never reaches appear in no row: fix them at 0
        system, node = [], []
        for k in range(1, template.n_layers + 1):
            s_idx, j = np.nonzero(~reach[k][terms.system_group])
            system.append(s_idx)
            node.append(template.node_offset[k] + j)
        system, node = np.concatenate(system), np.concatenate(node)
        if system.size:
            pb.add_zero(pb.get("graph#mu")[cols.potential(system, node) - cols.mu])
    return total


def final_potentials(pb: ProgramBuilder, template: GraphTemplate, system: np.ndarray) -> Affine:
    """``Pot_(m, j)`` for each (system, final budget j) pair (rows: system-major over ``system``);
    the constant 0 when there is no layer (the source is the last node)."""
    J = template.final_budgets.size
    R = system.size * J
    if template.n_layers == 0:
        return pb.constant(np.zeros(R))
    node = template.node_offset[template.n_layers] + np.arange(J)
    col = pb.variables["graph#mu"].start + system[:, None] * template.n_potentials + node[None, :] - 1
    out = _Triples()
    out.add(np.arange(R), col, np.ones(R))
    return out.affine(R, pb.n)


def add_loss_terms(pb: ProgramBuilder, inst: DROInstance, template: GraphTemplate, terms: SinkTerms,
                   coef: Affine, intercept: Optional[Affine], s: Affine, lam: Affine) -> int:
    """``L(sigma (base_n + Pot_(m,b)) - r) <= s_n + lambda (b^(1/p) + kappa flip)`` for every term and
    final budget, through ``loss.epigraph``.  Returns the number of terms."""
    base = linear_score(coef, intercept, base_design(inst, template))
    J = template.final_budgets.size
    sample = np.repeat(terms.sample, J)
    sigma = np.repeat(terms.sigma, J)
    pot = final_potentials(pb, template, terms.system)
    u = (base[sample] + pot) * sigma - np.repeat(terms.shift, J)
    cost = np.tile(template.final_distances, terms.sample.size)
    if inst.label_flips:
        cost = cost + np.repeat(np.where(terms.flip, inst.metric.kappa, 0.0), J)
    t = s[sample] + lam.repeat(sample.size) * cost
    if template.level_costs:  # only the final budgets the term's group reaches
        final = template.reachable(terms.group_codes)[-1]
        keep = np.flatnonzero(final[terms.system_group[terms.system]].ravel())
        u, t, sample = u[keep], t[keep], sample[keep]
    inst.loss.epigraph(pb, u, t)
    return int(sample.size)


def compile_graph(inst: DROInstance, variant: str = "compact", order: Order = None,
                  share_potentials: bool = True, max_budgets: int = MAX_BUDGETS) -> CompiledProgram:
    """Assemble the graph program (sun2025 Theorem 2 / (14), sink-free, any loss; module docstring).

    ``variant``: ``"compact"`` (merged change arcs where smaller) or ``"full"`` (one row per arc);
    ``order``: layer order (``None``/"auto": fewest arc rows, "schema", or a sequence of categorical
    feature positions); ``share_potentials``: one potential system per (pattern, extreme) instead of
    per (sample, extreme).  The optimal value equals problem (3) (``method="monolithic"``).
    """
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    compact = variant == "compact"
    template = template_for(inst, order, compact, max_budgets)
    terms = sink_terms(inst, template.features, share_potentials)
    size = graph_size(inst, template.features, compact, share_potentials, max_budgets)

    pb = ProgramBuilder()
    coef, intercept, s = declare_parameters(pb, inst)
    lam = pb.var("lambda", 1)
    pb.var("graph#mu", terms.n_systems * template.n_potentials)
    if template.merged.any():
        pb.var("graph#t", terms.n_systems * int(template.merged.sum()))
    add_arc_constraints(pb, inst, template, terms)
    n_terms = add_loss_terms(pb, inst, template, terms, coef, intercept, s, lam)
    finish_dual_program(pb, inst, coef, s, lam)
    why = (f"graph reformulation (sun2025 Thm 2 / (14), sink-free, {variant}"
           f"{', shared potentials' if share_potentials else ''}): {size.summary()}")
    info = {"graph_size": size, "variant": variant, "order": template.features.tolist(),
            "share_potentials": share_potentials}
    return CompiledProgram(pb.build(), "graph", why, n_terms, info=info)
