"""The LP master over slope cuts (:mod:`.slope_cuts` states the cuts and why they are valid): its rows and columns in
HiGHS (``highspy``), re-solved by the dual simplex from the previous basis as cuts join, and its dual point read as
fractional rows of the exact problem."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np
import scipy.sparse as sp

from ..certificates.repair import column_roles
from ..instance import DROInstance
from ..losses.conjugate import conjugate
from ..oracles.rows import FractionalRows
from ..solvers.highs import new_highs

#: a cut keeps the ``y_l`` of feature ``l`` when ``a (M_l - w_l(z_{n,l})) - lambda delta_l > -KEEP_MARGIN lambda
#: delta_l`` at the point it is made at (features far from changing keep their level).  Audiology (62 features),
#: unit weights: every feature (146,000 master rows after 12 rounds) 9.2 s; 0.5 -> 6,500 rows, 1.0 s; 0.1 1.35 s
KEEP_MARGIN = 0.5


class SlopeCutMaster:
    """The LP master over slope cuts (HiGHS, module docstring): columns ``theta = [intercept, coef]``, ``lambda``,
    ``s`` (N), ``M+`` and ``M-`` per mutable feature, the norm's auxiliaries, then each cut's ``y``."""

    def __init__(self, inst: DROInstance):
        import highspy
        self.inst = inst
        self.highspy = highspy
        h = self.h = new_highs(highspy)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        # devex pricing and no scaling: the audiology LPs in 0.68x the time of HiGHS's defaults (steepest edge,
        # scaled; 5 settings x 2 runs, interleaved; devex alone 0.86x, no scaling alone 0.80x, Dantzig 1.66x, primal
        # simplex 9.4x), every fit still certified by its dual point
        h.setOptionValue("simplex_dual_edge_weight_strategy", 1)
        h.setOptionValue("simplex_scale_strategy", 0)
        inf = highspy.kHighsInf
        N = inst.n_samples
        self.offset = 1 if inst.fit_intercept else 0
        self.n_theta = self.offset + inst.schema.n_encoded
        self.mutable = inst.mutable_categorical()
        m = self.mutable.size
        self.col_lam = self.n_theta
        self.col_s = self.n_theta + 1 + np.arange(N)
        self.col_max = self.n_theta + 1 + N + np.arange(m)
        self.col_min = self.col_max + m
        n = inst.n_numerical
        gamma = np.asarray(inst.metric.gamma, dtype=float)
        # the certificate's column roles: free, norm-priced (numerical, 0 < gamma < inf) and fixed at 0 (the rest)
        free, limited = column_roles(inst)
        self.priced = limited - self.offset
        dual_inf = inst.metric.numerical.lp_dual_exponent == np.inf if self.priced.size else True   # (slope_cuts_apply)
        n_aux = 0 if dual_inf else self.priced.size
        ncol = self.n_theta + 1 + N + 2 * m + n_aux
        cost = np.zeros(ncol)
        cost[self.col_lam] = inst.radius
        cost[self.col_s] = inst.p
        lo, hi = np.full(ncol, -inf), np.full(ncol, inf)
        lo[self.col_lam] = 0.0
        lo[self.col_max] = 0.0          # the reference level's coefficient is 0
        hi[self.col_min] = 0.0
        fixed = np.setdiff1d(np.arange(self.n_theta), np.union1d(free, limited)).astype(int)
        lo[fixed], hi[fixed] = 0.0, 0.0
        self.fixed = fixed
        self.theta_lo, self.theta_hi = lo[: self.n_theta].copy(), hi[: self.n_theta].copy()
        self._add_columns(cost, lo, hi)
        self.ncol = ncol
        # level columns of every categorical feature: level v >= 1 of feature l is theta[offset + n + off_l + v - 1]
        self.levels = inst.schema.levels.astype(int)
        self.dummy_start = self.offset + n + inst.schema.dummy_offsets().astype(int)
        rows, cols, vals, lower, upper = [], [], [], [], []
        r = 0
        feat, lev = [], []
        for i, l in enumerate(self.mutable):          # per feature (levels - 1 rows each): setup only
            k = self.levels[l] - 1
            j = self.dummy_start[l] + np.arange(k)
            for col, lo_b, hi_b in ((self.col_max[i], 0.0, inf), (self.col_min[i], -inf, 0.0)):
                rr = r + np.arange(k)
                rows += [rr, rr]
                cols += [np.full(k, col), j]
                vals += [np.ones(k), -np.ones(k)]
                lower.append(np.full(k, lo_b))
                upper.append(np.full(k, hi_b))
                r += k
            feat.append(np.full(k, i))
            lev.append(np.arange(1, k + 1))
        self.level_feature = np.concatenate(feat) if feat else np.zeros(0, int)
        self.level_value = np.concatenate(lev) if lev else np.zeros(0, int)
        # row blocks: for feature i, rows [2 start_i, 2 start_i + k) are M+ rows, the next k the M- rows
        counts = self.levels[self.mutable] - 1
        starts = np.concatenate([[0], np.cumsum(2 * counts)])[:-1]
        self.max_rows = np.concatenate([s + np.arange(k) for s, k in zip(starts, counts)]) if m else np.zeros(0, int)
        self.min_rows = self.max_rows + np.repeat(counts, counts)
        lip = float(inst.loss.lipschitz)
        if self.priced.size:                           # lip |beta_j| / gamma_j <= lambda (p = 1) or their sum (p = inf)
            q = self.priced.size
            cj = self.offset + self.priced
            g = gamma[self.priced]
            rr = r + np.arange(2 * q)
            if dual_inf:
                rows += [rr, rr]
                cols += [np.concatenate([cj, cj]), np.full(2 * q, self.col_lam)]
                vals += [np.concatenate([-lip / g, lip / g]), np.ones(2 * q)]
                lower.append(np.zeros(2 * q))
                upper.append(np.full(2 * q, inf))
                r += 2 * q
            else:
                aux = ncol - q + np.arange(q)
                rows += [rr, rr]
                cols += [np.concatenate([cj, cj]), np.concatenate([aux, aux])]
                vals += [np.concatenate([-1 / g, 1 / g]), np.ones(2 * q)]
                lower.append(np.zeros(2 * q))
                upper.append(np.full(2 * q, inf))
                r += 2 * q
                rows.append(np.full(q + 1, r))
                cols.append(np.concatenate([[self.col_lam], aux]))
                vals.append(np.concatenate([[1.0], -lip * np.ones(q)]))
                lower.append(np.zeros(1))
                upper.append(np.full(1, inf))
                r += 1
        self._add_rows(rows, cols, vals, lower, upper, r)
        self.n_rows = r
        # the cuts: sample, flip, slope, main row; the kept (cut, feature) pairs and their y rows / columns
        self.cut_sample, self.cut_flip, self.cut_slope, self.cut_row = [], [], [], []
        self.pair_cut, self.pair_feature, self.pair_row = [], [], []
        self.n_cuts = 0

    # ------------------------------------------------------------------ HiGHS plumbing
    def _add_columns(self, cost, lo, hi) -> None:
        k = cost.size
        self.h.addCols(k, cost, lo, hi, 0, np.zeros(k, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))

    def _add_rows(self, rows, cols, vals, lower, upper, n_rows: int) -> None:
        if not n_rows:
            return
        A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(n_rows, self.h.getNumCol()))
        self.h.addRows(n_rows, np.concatenate(lower), np.concatenate(upper), A.nnz, A.indptr[:-1].astype(np.int32),
                       A.indices.astype(np.int32), A.data)

    def level_coefficients(self, theta: np.ndarray, l: int) -> np.ndarray:
        """``w_l(v)`` for every level ``v`` of feature ``l`` (0 first: the reference level)."""
        start = self.dummy_start[l]
        return np.concatenate([[0.0], theta[start: start + self.levels[l] - 1]])

    # ------------------------------------------------------------------ cuts
    def add_cuts(self, samples: np.ndarray, flips: np.ndarray, slopes: np.ndarray, theta: np.ndarray,
                 lam: float) -> None:
        """One slope cut per ``(sample, flip, slope)`` (module docstring); each keeps the ``y_l`` of the features
        within :data:`KEEP_MARGIN` of changing at ``(theta, lam)``."""
        inst, K = self.inst, samples.size
        if K == 0:
            return
        sigma, shift = inst.row_signs(samples, flips)
        a = slopes * sigma
        m = self.mutable.size
        Z = inst.data.Z[samples]
        delta = np.asarray(inst.metric.delta, dtype=float)[self.mutable]
        terms = np.empty((K, m))
        for i, l in enumerate(self.mutable):          # per feature, vectorized over the cuts
            w = self.level_coefficients(theta, l)
            terms[:, i] = a * (np.where(a > 0, w.max(), w.min()) - w[Z[:, l]]) - lam * delta[i]
        keep = terms > -KEEP_MARGIN * lam * delta[None, :]
        keep &= (a != 0)[:, None]
        pair_k, pair_i = np.nonzero(keep)
        n_pairs = pair_k.size
        first_y = self.h.getNumCol()
        inf = self.highspy.kHighsInf
        self._add_columns(np.zeros(n_pairs), np.zeros(n_pairs), np.full(n_pairs, inf))
        y_col = first_y + np.arange(n_pairs)
        kappa = float(inst.metric.kappa) if inst.label_flips else 0.0
        # main rows: s_n - a f(x_n, z_n) + lambda kappa flip - sum_l y_l >= -L*(alpha) - alpha shift
        n = inst.n_numerical
        cat_cols = self.dummy_start[None, :] + inst.data.Z[samples] - 1         # (K, m_all); -1 offset: reference
        has_level = inst.data.Z[samples] > 0
        rows, cols, vals = [np.arange(K)], [self.col_s[samples]], [np.ones(K)]
        if self.offset:
            rows.append(np.arange(K)); cols.append(np.zeros(K, int)); vals.append(-a)
        if n:
            X = np.asarray(inst.data.X, dtype=float)[samples]
            rows.append(np.repeat(np.arange(K), n)); cols.append(np.tile(self.offset + np.arange(n), K))
            vals.append((-a[:, None] * X).ravel())
        kk, ll = np.nonzero(has_level)
        rows.append(kk); cols.append(cat_cols[kk, ll]); vals.append(-a[kk])
        flip_cost = np.where(flips, kappa, 0.0)
        if kappa:
            kf = np.flatnonzero(flip_cost > 0)
            rows.append(kf); cols.append(np.full(kf.size, self.col_lam)); vals.append(flip_cost[kf])
        rows.append(pair_k); cols.append(y_col); vals.append(-np.ones(n_pairs))
        lower = [-(conjugate(inst.loss, slopes) + slopes * shift)]
        # y rows: y - a M(sign a)_l + a w_l(z_{n,l}) + lambda delta_l >= 0
        ap = a[pair_k]
        feature = self.mutable[pair_i]
        rr = K + np.arange(n_pairs)
        rows += [rr, rr, rr]
        cols += [y_col, np.where(ap > 0, self.col_max[pair_i], self.col_min[pair_i]), np.full(n_pairs, self.col_lam)]
        vals += [np.ones(n_pairs), -ap, delta[pair_i]]
        own = Z[pair_k, feature] > 0
        rows.append(rr[own]); cols.append(cat_cols[pair_k[own], feature[own]]); vals.append(ap[own])
        lower.append(np.zeros(n_pairs))
        self._add_rows(rows, cols, vals, lower, [np.full(K + n_pairs, inf)], K + n_pairs)
        base = self.n_rows
        self.cut_sample.append(samples); self.cut_flip.append(flips); self.cut_slope.append(slopes)
        self.cut_row.append(base + np.arange(K))
        self.pair_cut.append(self.n_cuts + pair_k); self.pair_feature.append(pair_i)
        self.pair_row.append(base + K + np.arange(n_pairs))
        self.n_rows += K + n_pairs
        self.n_cuts += K

    def add_nominal_cuts(self, theta: np.ndarray, lam: float) -> None:
        """Every sample's kept-label cut at the slope of its nominal margin: with them ``s_n >= a f(x_n, z_n) -
        L*(alpha)`` bounds every ``s_n`` whatever ``lambda`` (a flipped cut alone lets ``s_n`` fall by ``kappa
        lambda``, the master unbounded when ``kappa > eps``)."""
        inst, N = self.inst, self.inst.n_samples
        samples, flips = np.arange(N), np.zeros(N, dtype=bool)
        sigma, shift = inst.row_signs(samples, flips)
        offset = self.offset
        f = inst.scores(float(theta[0]) if offset else 0.0, theta[offset:])
        self.add_cuts(samples, flips, np.asarray(inst.loss.derivative(sigma * f - shift), dtype=float), theta, lam)

    # ------------------------------------------------------------------ solve
    def solve(self, center: np.ndarray, radius: float, time_limit: float = np.inf):
        """The master with ``|theta - center| <= radius`` (``radius = inf``: none), within ``time_limit`` seconds:
        ``(ok, theta, lam, s, value, iterations)``."""
        lo = np.maximum(self.theta_lo, center - radius)
        hi = np.minimum(self.theta_hi, center + radius)
        lo[self.fixed], hi[self.fixed] = 0.0, 0.0
        inf = self.highspy.kHighsInf
        lo = np.where(np.isfinite(lo), lo, -inf)
        hi = np.where(np.isfinite(hi), hi, inf)
        self.h.changeColsBounds(self.n_theta, np.arange(self.n_theta, dtype=np.int32), lo, hi)
        self.h.setOptionValue("time_limit", float(time_limit) if np.isfinite(time_limit) else inf)
        self.h.run()
        status = self.h.getModelStatus()
        if status != self.highspy.HighsModelStatus.kOptimal:
            return False, None, None, None, np.nan, 0
        x = np.asarray(self.h.getSolution().col_value)
        info = self.h.getInfo()
        return (True, x[: self.n_theta], float(x[self.col_lam]), x[self.col_s], float(info.objective_function_value),
                int(info.simplex_iteration_count))

    def level_distributions(self, row_dual: np.ndarray, col_dual: np.ndarray) -> List[np.ndarray]:
        """``[q_up, q_down]``, each ``(features, max levels)``: feature ``i``'s levels ``v`` (0 the reference) in
        proportion to the multipliers of the rows ``M+_i >= w_i(v)`` (for ``q_down`` the rows ``M-_i <= w_i(v)``,
        "<=" rows whose multipliers are <= 0) and, for ``v = 0``, of the column bound ``M = 0``: the master's
        stationarity in ``M_i`` says these flows sum to the cuts' ``sum a rho`` through feature ``i``.  A feature
        without flow gets the uniform distribution over its levels (no cut moves it)."""
        m = self.mutable.size
        width = int(self.levels.max(initial=1))
        valid = np.arange(width)[None, :] < self.levels[self.mutable][:, None]
        uniform = valid / np.maximum(valid.sum(axis=1, keepdims=True), 1)
        out = []
        for rows_d, col_d, sign in ((self.max_rows, self.col_max, 1.0), (self.min_rows, self.col_min, -1.0)):
            flow = np.zeros((m, width))
            np.add.at(flow, (self.level_feature, self.level_value), np.maximum(sign * row_dual[rows_d], 0.0))
            flow[:, 0] = np.abs(col_dual[col_d])
            total = flow.sum(axis=1, keepdims=True)
            out.append(np.where(total > 0, flow / np.where(total > 0, total, 1.0), uniform))
        return out

    def dual_point(self) -> Tuple[FractionalRows, np.ndarray, np.ndarray]:
        """``(rows, mass, slopes)``: every cut with positive multiplier as a fractional row (module docstring).

        Its expected encoded row is ``[1, x_n, dummies(z_n)]`` plus, for each kept feature ``l``, ``t_l (q_l - e_{z_{n,l}})``
        with ``t_l = rho_l / pi`` the mass that changes it and ``q_l`` the level distribution of its direction; its
        expected cost ``kappa flip + sum_l delta_l t_l (1 - q_l(z_{n,l}))`` (a change back to its own level is free)."""
        inst = self.inst
        sol = self.h.getSolution()
        raw = np.asarray(sol.row_dual)
        row_dual = np.maximum(raw, 0.0)            # rows ">=": multipliers >= 0 (HiGHS: c - A'y = reduced costs)
        col_dual = np.asarray(sol.col_dual)
        sample = np.concatenate(self.cut_sample)
        flip = np.concatenate(self.cut_flip)
        slopes = np.concatenate(self.cut_slope)
        mass = row_dual[np.concatenate(self.cut_row)]
        pair_cut = np.concatenate(self.pair_cut)
        pair_i = np.concatenate(self.pair_feature)
        rho = row_dual[np.concatenate(self.pair_row)]
        q = self.level_distributions(raw, col_dual)
        index = np.flatnonzero(mass > 0)
        position = np.full(sample.size, -1)
        position[index] = np.arange(index.size)
        K = index.size
        sample_k, flip_k = sample[index], flip[index]
        sigma, _ = inst.row_signs(sample, flip)
        up = (slopes * sigma)[pair_cut] > 0
        t = np.clip(np.divide(rho, mass[pair_cut], out=np.zeros_like(rho), where=mass[pair_cut] > 0), 0.0, 1.0)
        used = position[pair_cut] >= 0
        pair_k, pair_i, t, up = position[pair_cut[used]], pair_i[used], t[used], up[used]
        n = inst.n_numerical
        Zs = inst.data.Z[sample_k]
        rows, cols, vals = [], [], []
        if self.offset:
            rows.append(np.arange(K)); cols.append(np.zeros(K, int)); vals.append(np.ones(K))
        if n:
            rows.append(np.repeat(np.arange(K), n)); cols.append(np.tile(self.offset + np.arange(n), K))
            vals.append(np.asarray(inst.data.X, dtype=float)[sample_k].ravel())
        kk, ll = np.nonzero(Zs > 0)                                    # the nominal levels
        rows.append(kk); cols.append(self.dummy_start[ll] + Zs[kk, ll] - 1); vals.append(np.ones(kk.size))
        feature = self.mutable[pair_i]
        own = Zs[pair_k, feature]
        has = own > 0                                                  # mass t leaves the own level ...
        rows.append(pair_k[has]); cols.append(self.dummy_start[feature[has]] + own[has] - 1); vals.append(-t[has])
        dist = np.where(up[:, None], q[0][pair_i], q[1][pair_i])         # ... for q (levels past a_l have q = 0)
        pp, vv = np.nonzero(dist[:, 1:] > 0)
        rows.append(pair_k[pp]); cols.append(self.dummy_start[feature[pp]] + vv); vals.append(t[pp] * dist[pp, vv + 1])
        matrix = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                               shape=(K, self.n_theta))
        delta = np.asarray(inst.metric.delta, dtype=float)[self.mutable]
        cost = np.where(flip_k, float(inst.metric.kappa) if inst.label_flips else 0.0, 0.0)
        np.add.at(cost, pair_k, delta[pair_i] * t * (1.0 - dist[np.arange(pair_k.size), own]))
        return FractionalRows(sample_k, flip_k, cost, matrix), mass[index], slopes[index]
