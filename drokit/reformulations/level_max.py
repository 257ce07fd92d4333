"""Level-max columns: configuration rows that follow a feature's best level, for drokit's barrier master.

With the 0/1 mismatch cost on a categorical feature ``l`` (cost ``delta_l`` for any other level), the oracle's
maximizing configuration of a sample moves every feature it changes to that feature's largest (or smallest)
level coefficient ``w_l(v)`` (``w_l(0) = 0``, the reference level): which level that is depends on ``beta``.  A
working set of configuration rows names the levels, so a master that lowers the coefficient of today's best
level makes another one the best for every sample at once -- rows the working set lacks (census-like data,
42-level features: the barrier master's centering moved to a point of value 0.648 against 0.531 and the oracle
then returned 9,497 new rows).  The conic masters' budget cuts avoid this with one variable per (feature,
direction) shared by every cut (:mod:`.budget_cuts`); here the same variables enter as *columns*:

    m_{l,+} >= w_l(v)   and   m_{l,-} <= w_l(v)   for every level v of l  (v = 0 included),

and a row whose configuration changes ``l`` upward (``w_l(z_l) > w_l(z_{n,l})`` at the point where it was
found) uses the virtual level ``m_{l,+}`` instead of ``w_l(z_l)`` (downward: ``m_{l,-}``).  The row stays affine
in the extended parameters ``(beta, m, lambda)``, so :class:`.row_terms.RowTerms` and the Schur-complement
Newton step take it unchanged, with ``2 F`` more columns (``F`` the features with three levels or more; a binary
feature has one other level, which its rows name).

*Validity* (any loss, any ``(T, direction)``): at ``m`` equal to the true maxima / minima, a level-max row is
the row of a real configuration -- ``l`` in ``T`` moved to its best level, or kept where the sample's own level is
the best -- priced at the cost of changing all of ``T``, at least that configuration's own cost; so every
feasible point of the full problem, extended by those ``m``, is feasible for the extended master, which is
therefore a relaxation.  *Exactness*: at the optimum the oracle's maximizers are level-max rows at the true
``m`` (belbasi2023 Thm 3 and selvi2022 Thm 5 pick the best level per changed feature).

*Certificate*: on the central path the multipliers ``y_{l,v} = mu / slack`` of the ``m`` constraints balance the
masses on ``m``'s column, so replacing each virtual level by the distribution ``q_{l,dir}(v) ∝ y_{l,dir,v}`` turns
the barrier dual point into :class:`~drokit.evaluation.lower_bound.FractionalRows` (expected encoded rows, the
cost of changing ``T`` -- at least the expected cost), a dual point of the full problem: the Lagrangian bound stays
exact.  Ties between levels, common at the optimum, are spread over ``q`` instead of needing a row per tied level
per sample.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, FractionalRows
from .row_terms import CodeLayout

#: a new ``m`` starts this far (relative to ``max(1, |w|)``) outside its levels' coefficients
START_MARGIN = 1e-6


def level_max_features(inst: DROInstance) -> np.ndarray:
    """The features that get level-max columns: mutable categorical with three levels or more, under the 0/1
    mismatch cost (level-dependent costs price each level differently, so a feature's best level has no single
    cost)."""
    if not inst.metric.mismatch_only:
        return np.zeros(0, dtype=int)
    mutable = inst.mutable_categorical()
    return mutable[np.asarray(inst.schema.levels)[mutable] >= 3]


class LevelMaxColumns:
    """The extended parameter space ``(beta_0, beta, m)`` (module docstring) and the maps to and from it.

    Layout: feature ``l`` with ``a_l`` levels gets codes ``a_l`` (its ``m_{l,+}``) and ``a_l + 1`` (``m_{l,-}``),
    i.e. two more dummy columns after its own; every other column keeps its order.  ``active`` is False when no
    feature qualifies (then every map is the identity)."""

    def __init__(self, inst: DROInstance):
        self.inst = inst
        self.features = level_max_features(inst)
        self.active = bool(self.features.size)
        self.offset = int(inst.fit_intercept)
        levels = np.asarray(inst.schema.levels, dtype=int)
        self.real_levels = levels
        ext = levels.copy()
        ext[self.features] += 2
        offsets = np.concatenate([[0], np.cumsum(np.maximum(ext - 1, 0))])[:-1].astype(int)
        self.layout = CodeLayout(ext, offsets, int(inst.n_numerical + np.maximum(ext - 1, 0).sum()))
        self.n_params = self.offset + self.layout.n_encoded
        self.n_real = self.offset + int(inst.schema.n_encoded)
        lead = self.offset + inst.n_numerical
        real_offsets = inst.schema.dummy_offsets()
        self.real_index = np.arange(self.n_real)                  # real parameter j -> its extended position
        for l in range(levels.size):
            k = np.arange(max(levels[l] - 1, 0))
            self.real_index[lead + real_offsets[l] + k] = lead + offsets[l] + k
        self.up = lead + offsets[self.features] + levels[self.features] - 1      # m_{l,+} positions
        self.down = self.up + 1                                                  # m_{l,-}
        #: each m's position -> (its feature, +1 for m_{l,+} / -1 for m_{l,-})
        self.owner = {int(p): (int(l), sign) for ends, sign in ((self.up, 1.0), (self.down, -1.0))
                      for p, l in zip(ends, self.features)}
        self.first = lead + real_offsets                 # real position of level 1 of each feature

    # ---------------------------------------------------------------------------------------- maps
    def level_coefficients(self, params: np.ndarray, l: int) -> np.ndarray:
        """``w_l(v)`` for ``v = 0..a_l - 1`` from the real parameters."""
        a = self.real_levels[l]
        return np.concatenate([[0.0], params[self.first[l]:self.first[l] + a - 1]])

    def lift(self, params: np.ndarray) -> np.ndarray:
        """Extended parameters: the real ones in place, every ``m`` a hair outside its levels' extremes."""
        out = np.zeros(self.n_params)
        out[self.real_index] = params
        for i, l in enumerate(self.features):
            w = self.level_coefficients(params, l)
            out[self.up[i]] = w.max() + START_MARGIN * max(1.0, float(np.abs(w).max()))
            out[self.down[i]] = w.min() - START_MARGIN * max(1.0, float(np.abs(w).max()))
        return out

    def real(self, ext: np.ndarray) -> np.ndarray:
        """The real parameters of extended ones."""
        return np.asarray(ext)[self.real_index]

    def refresh(self, ext: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """``ext`` with the ``m`` at ``positions`` reset a hair outside their levels (columns that join the
        master: an ``m`` no row used stood still while the coefficients moved)."""
        out = np.asarray(ext, dtype=float).copy()
        fresh = self.lift(self.real(out))
        out[positions] = fresh[positions]
        return out

    def virtualize(self, rows: ConfigurationRows, params: np.ndarray) -> ConfigurationRows:
        """Rows with every changed level-max feature replaced by its virtual level: ``m_{l,+}`` where the change
        raised the score at ``params`` (real parameters), ``m_{l,-}`` where it lowered it (a change of 0 keeps
        its level)."""
        if not self.active or rows.size == 0:
            return rows
        Z = rows.Z.copy()
        own = self.inst.data.Z[rows.sample]
        for l in self.features:
            changed = np.flatnonzero(Z[:, l] != own[:, l])
            if not changed.size:
                continue
            w = self.level_coefficients(params, l)
            gain = w[Z[changed, l]] - w[own[changed, l]]
            a = self.real_levels[l]
            Z[changed[gain > 0], l] = a
            Z[changed[gain < 0], l] = a + 1
        return ConfigurationRows(sample=rows.sample, Z=Z, cost=rows.cost, flip=rows.flip)

    def realize(self, rows: ConfigurationRows, params: np.ndarray) -> ConfigurationRows:
        """Real configuration rows of level-max rows at ``params``: a virtual level becomes the best (largest or
        smallest coefficient) level other than the sample's own, so the row's cost is its configuration's."""
        if not self.active or rows.size == 0:
            return rows
        Z = rows.Z.copy()
        own = self.inst.data.Z[rows.sample]
        for l in self.features:
            a = self.real_levels[l]
            w = self.level_coefficients(params, l)
            for code, order in ((a, np.argsort(-w, kind="stable")), (a + 1, np.argsort(w, kind="stable"))):
                hit = np.flatnonzero(Z[:, l] == code)
                if hit.size:
                    best = np.where(own[hit, l] == order[0], order[1], order[0])
                    Z[hit, l] = best
        return ConfigurationRows(sample=rows.sample, Z=Z, cost=rows.cost, flip=rows.flip)

    def used(self, rows: ConfigurationRows) -> np.ndarray:
        """Extended positions of the ``m`` that ``rows`` use (sorted)."""
        if not self.active or rows.size == 0:
            return np.zeros(0, dtype=int)
        out = []
        for i, l in enumerate(self.features):
            a = self.real_levels[l]
            codes = np.unique(rows.Z[:, l])
            if np.any(codes == a):
                out.append(self.up[i])
            if np.any(codes == a + 1):
                out.append(self.down[i])
        return np.asarray(sorted(out), dtype=int)

    def bounds(self, used: np.ndarray, dim: int) -> "LevelBounds":
        """The barrier of the constraints of the ``m`` at positions ``used`` (in a ``theta`` of ``dim``
        entries: the extended parameters, then ``lambda``)."""
        rows, cols, vals = [], [], []
        r = 0
        for position in used:
            l, sign = self.owner[int(position)]
            a = self.real_levels[l]
            # sign (m - w_l(v)) > 0 for v = 0 (w = 0) and v = 1..a-1
            rows.append(r)
            cols.append(position)
            vals.append(sign)
            r += 1
            for v in range(1, a):
                rows += [r, r]
                cols += [position, int(self.real_index[self.first[l] + v - 1])]
                vals += [sign, -sign]
                r += 1
        G = sp.csr_matrix((vals, (rows, cols)), shape=(r, dim))
        return LevelBounds(G, np.asarray(used, dtype=int), self)

    def fractional(self, rows: ConfigurationRows, mass: np.ndarray, slopes: np.ndarray, theta: np.ndarray,
                   mu: float, bounds: "LevelBounds", design: sp.csr_matrix):
        """The barrier master's dual point on level-max rows as
        :class:`~drokit.evaluation.lower_bound.FractionalRows` (module docstring): ``design`` the rows'
        extended encoded rows (CSR, without the lambda column); returns ``(rows, mass, slopes)``."""
        r, c, v = [self.real_index], [np.arange(self.n_real)], [np.ones(self.n_real)]
        cost = np.asarray(rows.cost, dtype=float).copy()
        additive = float(self.inst.metric.categorical.validated_p()) == 1.0
        own = self.inst.data.Z[rows.sample]
        delta = np.asarray(self.inst.metric.delta, dtype=float)
        distributions = self.balanced(bounds.level_distributions(theta, mu), rows, mass, slopes, design)
        for position, q in distributions.items():
            l, sign = self.owner[position]
            a = self.real_levels[l]
            r.append(np.full(a - 1, position))
            c.append(self.first[l] + np.arange(a - 1))
            v.append(q[1:])                                   # level 0 has no column
            if additive:     # D adds over features: the draw of the sample's own level changes nothing
                code = a if sign > 0 else a + 1
                hit = np.flatnonzero(rows.Z[:, l] == code)
                cost[hit] -= delta[l] * q[own[hit, l]]
        P = sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))),
                          shape=(self.n_params, self.n_real))
        matrix = sp.csr_matrix(design @ P)
        return FractionalRows(sample=rows.sample, flip=rows.flip, cost=cost, matrix=matrix), mass, slopes


    def balanced(self, distributions: dict, rows: ConfigurationRows, mass: np.ndarray, slopes: np.ndarray,
                 design: sp.csr_matrix, passes: int = 2) -> dict:
        """The level distributions ``q_{l,dir}`` that best balance the dual point's free columns of feature ``l``:

            min_q || g_l + sum_dir S_{l,dir} q_{l,dir}[1:] ||^2   s.t.  q >= 0,  sum_{v >= 1} q(v) <= 1

        (``q(0)``, the reference level, has no column and takes the rest), ``g_l`` the dummy columns' sum
        ``sum_k m_k alpha_k sigma_k a_k`` over the rows at real levels and ``S_{l,dir}`` the same sum on ``m_{l,dir}``'s
        column; the directions of a feature in turn (``passes`` sweeps), each the Euclidean projection of its
        unconstrained solution.  The central path's ``q(v) = mu / slack_v`` is positive on every level, also on
        levels no sample has, whose column then keeps a residual ``~ mu S`` that no slope can repair (the
        300-level table at 1,000 rows: the Lagrangian bound failed at every centering, residual 4e-5 .. 1e-9):
        balanced, such a level gets ``q(v) = 0`` as at the optimum's KKT point.  Any distribution gives a valid
        dual point (a fractional row is a mixture of real configurations, priced at least at their cost)."""
        sigma, _ = self.inst.row_signs(rows.sample, rows.flip)
        g = design.T @ (mass * slopes * sigma)
        out = {position: np.array(q, dtype=float) for position, q in distributions.items()}
        by_feature: dict = {}
        for position in out:
            by_feature.setdefault(self.owner[position][0], []).append(position)
        for _ in range(passes):
            for l, positions in by_feature.items():
                cols = self.real_index[self.first[l] + np.arange(self.real_levels[l] - 1)]
                for position in positions:
                    S = float(g[position])
                    if S == 0.0 or not np.isfinite(S):
                        continue
                    rest = g[cols] + sum(float(g[o]) * out[o][1:] for o in positions if o != position)
                    q = _capped_simplex(-rest / S)
                    out[position] = np.r_[max(0.0, 1.0 - q.sum()), q]
        return out


def _capped_simplex(x: np.ndarray) -> np.ndarray:
    """The Euclidean projection of ``x`` onto ``{q >= 0, sum q <= 1}``."""
    q = np.maximum(x, 0.0)
    if q.sum() <= 1.0:
        return q
    u = np.sort(x)[::-1]
    cumulative = np.cumsum(u) - 1.0
    k = np.flatnonzero(u - cumulative / np.arange(1, x.size + 1) > 0)[-1]
    return np.maximum(x - cumulative[k] / (k + 1), 0.0)


class LevelBounds:
    """``-mu sum_j log(G theta)_j``: the barrier of the ``m`` constraints (:meth:`LevelMaxColumns.bounds`)."""

    def __init__(self, G: sp.csr_matrix, used: np.ndarray, columns: LevelMaxColumns):
        self.G, self.used, self.columns = G, used, columns
        self.dense = G.toarray()

    def feature_of(self, position: int) -> int:
        return self.columns.owner[int(position)][0]

    def feasible(self, theta: np.ndarray) -> bool:
        return bool(np.all(self.dense @ theta > 0)) if self.dense.size else True

    def value(self, theta: np.ndarray, mu: float) -> float:
        """The barrier's value alone: a line search's trial points need no ``(2 F a) x d`` Hessian product (the
        300-level table: 2.4 s of a 7.7 s fit went to Hessians of values only)."""
        return -mu * float(np.sum(np.log(self.dense @ theta))) if self.dense.size else 0.0

    def __call__(self, theta: np.ndarray, mu: float) -> Tuple[float, np.ndarray, np.ndarray]:
        if not self.dense.size:
            return 0.0, np.zeros(theta.size), np.zeros((theta.size, theta.size))
        slack = self.dense @ theta
        inv = 1.0 / slack
        grad = -mu * (self.dense.T @ inv)
        hess = mu * (self.dense.T * inv ** 2) @ self.dense
        return -mu * float(np.sum(np.log(slack))), grad, hess

    def level_distributions(self, theta: np.ndarray, mu: float) -> dict:
        """Per used ``m`` position, the distribution over its feature's levels ``q(v) ∝ 1 / slack_v`` (the
        central path's multipliers ``mu / slack``, normalized)."""
        slack = self.dense @ theta
        out, r = {}, 0
        for position in self.used:
            a = self.columns.real_levels[self.feature_of(int(position))]
            y = 1.0 / slack[r:r + a]
            out[int(position)] = y / y.sum()
            r += a
        return out
