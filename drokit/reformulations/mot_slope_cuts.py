"""Slope cuts for MOT-DRO: the cuts that replace the rows of program (D) and the conic master over them.

Program (D) of ``spec/mot-dro-training.md`` (:mod:`.mot_dual`) holds one constraint per configuration row, and on
wide, nearly separable categorical data (sun2025 audiology: 62 features, 180 training rows) every master over
configuration rows moves to coefficients where configurations it has not seen are worse: one new row per sample
per round, the masters' models far above the optimum (``benchmarks/RESULTS.md``).  A *slope cut*
(:mod:`.slope_cuts`, the Wasserstein fits' LP master) bounds a sample's value over EVERY configuration at one loss
slope ``alpha`` (Fenchel: ``L(u) >= alpha u - L*(alpha)``) and the mismatch cost's separability over features:

    s_n >= a f(x_n, z_n) - alpha shift_n - L*(alpha) - mu kappa flip + sum_l y_l,
    y_l >= a (M_l - w_l(z_{n,l})) - mu delta_l,   y_l >= 0,       a = alpha sigma_n,   mu = lambda theta1,

``M+_l >= w_l(v) >= M-_l`` for every level ``v`` (``M_l = M+_l`` when ``a > 0``, ``M-_l`` when ``a < 0``), the
``y_l`` kept for the features within :data:`~.slope_cut_master.KEEP_MARGIN` of changing where the cut is made (the
others keep their level: a maximum over fewer configurations, still a valid cut).  The cuts replace the rows of (D);
the divergence's aggregate stays exact (:func:`~.mot_dual.divergence_aggregate`: one exponential cone per sample
for KL).

This module holds the cuts (:class:`MOTSlopeCuts`: their linear rows, the conic master over them, the pairs and cuts
that join, the reading of their rows' multipliers as a dual point of (D)) and when the path applies
(:func:`mot_slope_cuts_apply`).  Kelley's method on them: :mod:`.mot_slope_search`; the certificate, a linear
relaxation of the master and its exact dual point: :mod:`.mot_slope_certificate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..ambiguity.divergences import get_divergence
from ..certificates.repair import column_roles
from ..conic.builder import Affine, ProgramBuilder
from ..instance import DROInstance
from ..losses.conjugate import conjugate, slope_domain
from ..oracles.rows import FractionalRows, lambda_floor, row_margins
from .dual import declare_parameters
from .mot_dual import divergence_aggregate, numerical_moves
from .slope_cut_master import KEEP_MARGIN

#: a cut's slope within this of 0 (relative to the slope domain's width) is made 0: any slope gives a valid cut, and a
#: well-classified sample's 1e-13 slopes left HiGHS failing on the certificate LP (audiology, KL 0.01: coefficients
#: 1e-9 to 4)
SLOPE_SNAP = 1e-8
#: samples at most for the slope-cut path (the conic master holds one exponential cone per sample and the certificate
#: LP one grid row per sample and grid point; larger sets go to the row masters after MOT phase 1)
MAX_SAMPLES = 2_000


def mot_slope_cuts_apply(inst: DROInstance, divergence, theta1: float, theta2: float) -> Tuple[bool, str]:
    """Whether the slope-cut search applies to the MOT instance's training data ``inst``, and why not: the
    Wasserstein slope cuts' conditions (:func:`.slope_cuts.slope_cuts_apply`: a margin loss with finite Lipschitz
    constant, no attack or penalty, the mismatch cost adding over features, labels fixed or flipped in classification,
    at least two mutable categorical features, a numerical dual norm an LP writes, HiGHS installed), samples that move
    (``theta1 < inf``), the reweighting priced by KL or chi-square, bounded by CVaR's level, or fixed (``theta2 =
    inf``), and at most :data:`MAX_SAMPLES` samples."""
    from .slope_cuts import slope_cuts_apply
    if not np.isfinite(theta1):
        return False, "no sample moves (theta1 = inf)"
    if np.isfinite(theta2) and get_divergence(divergence).name not in ("kl", "chi2", "cvar"):
        return False, "the divergence is not KL, chi-square or CVaR's bound"
    if inst.n_samples > MAX_SAMPLES:
        return False, f"more than {MAX_SAMPLES:,} samples"
    return slope_cuts_apply(inst)


class MOTSlopeCuts:
    """The slope cuts of a MOT instance (module docstring) and the two programs over them: the conic master
    (:meth:`program`) and the certificate's LP (:func:`~.mot_slope_certificate.mot_slope_certificate`).

    Both share one layout of the linear rows, every row ``>= 0``: the cuts' main rows, their pair rows, the level rows
    (per mutable feature ``i``: ``M+_i - w_i(v) >= 0`` for its levels ``v >= 1``, then ``w_i(v) - M-_i >= 0``), then
    ``M+ >= 0`` and ``-M- >= 0``; over the local columns ``[theta, mu, s, M+, M-, y]`` (``theta = [intercept, coef]``,
    ``mu = lambda theta1``)."""

    def __init__(self, inst: DROInstance, *, rho: float, theta1: float, theta2: float, divergence):
        self.inst = inst
        self.rho, self.theta1, self.theta2 = float(rho), float(theta1), float(theta2)
        self.divergence = get_divergence(divergence)
        self.offset = 1 if inst.fit_intercept else 0
        self.n_theta = self.offset + inst.schema.n_encoded
        self.mutable = inst.mutable_categorical()
        self.levels = inst.schema.levels.astype(int)
        self.start = self.offset + inst.n_numerical + inst.schema.dummy_offsets().astype(int)   # theta position
        self.delta = np.asarray(inst.metric.delta, dtype=float)
        self.kappa = float(inst.metric.kappa) if inst.label_flips else 0.0
        self.sample = np.zeros(0, dtype=int)
        self.flip = np.zeros(0, dtype=bool)
        self.slope = np.zeros(0)
        self.pair_cut = np.zeros(0, dtype=int)
        self.pair_feature = np.zeros(0, dtype=int)        # positions in self.mutable
        free, limited = column_roles(inst)
        self.fixed = np.setdiff1d(np.arange(self.n_theta), np.union1d(free, limited)).astype(int)
        self.limited = limited

    @property
    def n_cuts(self) -> int:
        return int(self.sample.size)

    def level_coefficients(self, theta: np.ndarray, l: int) -> np.ndarray:
        """``w_l(v)`` for every level ``v`` of feature ``l`` (0 first: the reference level)."""
        return np.concatenate([[0.0], theta[self.start[l]: self.start[l] + self.levels[l] - 1]])

    def add_cuts(self, samples: np.ndarray, flips: np.ndarray, slopes: np.ndarray, theta: np.ndarray,
                 mu: float) -> None:
        """One cut per ``(sample, flip, slope)``, each keeping the ``y_l`` of the features within
        :data:`~.slope_cut_master.KEEP_MARGIN` of changing at ``(theta, mu)``."""
        K = samples.size
        if K == 0:
            return
        lo, hi = slope_domain(self.inst.loss)
        if lo <= 0.0 <= hi:     # a slope within SLOPE_SNAP of 0 is 0 (still a valid cut; no 1e-12 coefficients)
            slopes = np.where(np.abs(slopes) <= SLOPE_SNAP * max(1.0, min(hi - lo, 1e300)), 0.0, slopes)
        sigma, _ = self.inst.row_signs(samples, flips)
        a = slopes * sigma
        Z = self.inst.data.Z[samples]
        delta = self.delta[self.mutable]
        terms = np.empty((K, self.mutable.size))
        for i, l in enumerate(self.mutable):
            w = self.level_coefficients(theta, l)
            terms[:, i] = a * (np.where(a > 0, w.max(), w.min()) - w[Z[:, l]]) - mu * delta[i]
        keep = (terms > -KEEP_MARGIN * mu * delta[None, :]) & (a != 0)[:, None]
        pair_k, pair_i = np.nonzero(keep)
        self.pair_cut = np.r_[self.pair_cut, self.n_cuts + pair_k]
        self.pair_feature = np.r_[self.pair_feature, pair_i]
        self.sample = np.r_[self.sample, samples]
        self.flip = np.r_[self.flip, flips]
        self.slope = np.r_[self.slope, slopes]

    # ------------------------------------------------------------------ the linear rows
    def main_rows(self, cuts: np.ndarray, cols: "Columns") -> Tuple[sp.csr_matrix, np.ndarray]:
        """The main rows of the cuts ``cuts`` without their ``y`` terms: ``(A, k)`` with ``A x + k >= 0`` meaning
        ``s_n - a f(x_n, z_n) + mu kappa flip + L*(alpha) + alpha shift >= 0``."""
        inst = self.inst
        K = cuts.size
        sample, flip, slope = self.sample[cuts], self.flip[cuts], self.slope[cuts]
        sigma, shift = inst.row_signs(sample, flip)
        a = slope * sigma
        r, c, v = [np.arange(K)], [cols.s[sample]], [np.ones(K)]
        if self.offset:
            r.append(np.arange(K)); c.append(np.zeros(K, dtype=int)); v.append(-a)
        n = inst.n_numerical
        if n:
            X = np.asarray(inst.data.X, dtype=float)[sample]
            r.append(np.repeat(np.arange(K), n)); c.append(np.tile(self.offset + np.arange(n), K))
            v.append((-a[:, None] * X).ravel())
        Zs = inst.data.Z[sample]
        kk, ll = np.nonzero(Zs > 0)
        r.append(kk); c.append(self.start[ll] + Zs[kk, ll] - 1); v.append(-a[kk])
        if self.kappa:
            kf = np.flatnonzero(flip)
            r.append(kf); c.append(np.full(kf.size, cols.mu)); v.append(np.full(kf.size, self.kappa))
        A = sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(K, cols.n))
        return A, conjugate(inst.loss, slope) + slope * shift

    def pair_rows(self, pairs: np.ndarray, cols: "Columns") -> sp.csr_matrix:
        """The rows of the pairs ``pairs`` without their ``y``: ``- a M_l + a w_l(z_{n,l}) + mu delta_l`` (``y`` plus
        this ``>= 0``)."""
        cut = self.pair_cut[pairs]
        sigma, _ = self.inst.row_signs(self.sample[cut], self.flip[cut])
        ap = self.slope[cut] * sigma
        feature_i = self.pair_feature[pairs]
        feature = self.mutable[feature_i]
        own = self.inst.data.Z[self.sample[cut], feature]
        P = pairs.size
        rr = np.arange(P)
        has = own > 0
        r = [rr, rr, rr[has]]
        c = [np.where(ap > 0, cols.up[feature_i], cols.down[feature_i]), np.full(P, cols.mu),
             self.start[feature[has]] + own[has] - 1]
        v = [-ap, self.delta[feature], ap[has]]
        return sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(P, cols.n))

    def level_rows(self, cols: "Columns") -> Tuple[sp.csr_matrix, int]:
        """Per mutable feature ``i`` the rows ``M+_i - w_i(v) >= 0`` (levels ``v >= 1``) then ``w_i(v) - M-_i >= 0``,
        then ``M+ >= 0`` and ``-M- >= 0``: ``(A, rows before the bounds)``."""
        r, c, v = [], [], []
        row = 0
        for i, l in enumerate(self.mutable):
            k = self.levels[l] - 1
            theta_cols = self.start[l] + np.arange(k)
            rr = row + np.arange(k)
            r += [rr, rr]; c += [np.full(k, cols.up[i]), theta_cols]; v += [np.ones(k), -np.ones(k)]
            rr = row + k + np.arange(k)
            r += [rr, rr]; c += [theta_cols, np.full(k, cols.down[i])]; v += [np.ones(k), -np.ones(k)]
            row += 2 * k
        m = self.mutable.size
        rr = row + np.arange(m)
        r += [rr, rr + m]; c += [cols.up, cols.down]; v += [np.ones(m), -np.ones(m)]
        A = sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(row + 2 * m, cols.n))
        return A, row

    def columns(self, extra: int = 0) -> "Columns":
        """The local columns ``[theta, mu, s, M+, M-]`` followed by ``extra`` more (``n`` counts them all)."""
        N, m = self.inst.n_samples, self.mutable.size
        mu = self.n_theta
        return Columns(mu=mu, s=mu + 1 + np.arange(N), up=mu + 1 + N + np.arange(m),
                        down=mu + 1 + N + m + np.arange(m), n=mu + 1 + N + 2 * m + extra)

    # ------------------------------------------------------------------ the conic master
    def program(self, center: Optional[np.ndarray] = None, radius: float = np.inf):
        """The conic master (Clarabel): program (D) with the cuts for rows, within ``|theta - center| <= radius``;
        variables named as :func:`~.mot_dual.build_mot_program`'s (``coef``, ``intercept``, ``s``, ``lambda``).  Its
        first rows are the cuts' main rows (:meth:`master_weights`)."""
        inst = self.inst
        pb = ProgramBuilder()
        coef, intercept, s = declare_parameters(pb, inst)
        lam = pb.var("lambda", 1)
        m, P, K = self.mutable.size, self.pair_cut.size, self.n_cuts
        M = pb.var("mot_levels", 2 * m)
        y = pb.var("mot_y", P)
        cols = self.columns(P)
        y_cols = cols.n - P + np.arange(P)
        main, k = self.main_rows(np.arange(K), cols)
        main = main + sp.csr_matrix((-np.ones(P), (self.pair_cut, y_cols)), shape=main.shape)
        pairs = self.pair_rows(np.arange(P), cols) + sp.csr_matrix((np.ones(P), (np.arange(P), y_cols)),
                                                                    shape=(P, cols.n))
        levels, _ = self.level_rows(cols)
        A = sp.vstack([main, pairs, levels], format="csr")
        # local columns -> the program's variables (mu = lambda theta1)
        where = np.concatenate([(intercept.M.indices if intercept is not None else np.zeros(0, dtype=int)),
                                coef.M.indices, lam.M.indices, s.M.indices, M.M.indices, y.M.indices])
        scale = np.ones(cols.n)
        scale[cols.mu] = self.theta1
        A = sp.csr_matrix(A @ sp.diags(scale))
        A = sp.csr_matrix((A.data, where[A.indices], A.indptr), shape=(A.shape[0], pb.n))
        A.sort_indices()
        pb.add_nonneg(Affine(A, np.concatenate([k, np.zeros(A.shape[0] - K)])))
        pb.add_nonneg(y)
        mu = lam * self.theta1
        numerical_moves(pb, inst, coef, mu)
        theta = Affine.vstack([intercept, coef]) if intercept is not None else coef
        if self.fixed.size:
            pb.add_zero(theta[self.fixed])
        pb.add_nonneg(lam)
        if center is not None and np.isfinite(radius):
            free = np.setdiff1d(np.arange(self.n_theta), self.fixed)
            pb.add_nonneg(Affine.vstack([theta[free] - (center[free] - radius), (center[free] + radius) - theta[free]]))
        pb.minimize(lam * self.rho + divergence_aggregate(pb, inst, s, lam, self.theta2, self.divergence))
        return pb.build()

    def master_weights(self, y_dual: np.ndarray) -> np.ndarray:
        """Each sample's mass ``W_n`` in the conic master's dual: the sum of its cuts' multipliers."""
        mass = np.maximum(np.asarray(y_dual, dtype=float)[: self.n_cuts], 0.0)
        return np.bincount(self.sample, weights=mass, minlength=self.inst.n_samples)

    # ------------------------------------------------------------------ the certificate (.mot_slope_certificate)
    def complete_pairs(self, theta: np.ndarray, mu: float) -> int:
        """Adds the pairs ``(cut, feature)`` left out whose term ``a (M_l - w_l(z_{n,l})) - mu delta_l`` is positive
        at ``(theta, mu)``; returns how many."""
        K, m = self.n_cuts, self.mutable.size
        if not K or not m:
            return 0
        have = np.zeros((K, m), dtype=bool)
        have[self.pair_cut, self.pair_feature] = True
        sigma, _ = self.inst.row_signs(self.sample, self.flip)
        a = self.slope * sigma
        Z = self.inst.data.Z[self.sample]
        terms = np.empty((K, m))
        for i, l in enumerate(self.mutable):
            w = self.level_coefficients(theta, l)
            terms[:, i] = a * (np.where(a > 0, w.max(), w.min()) - w[Z[:, l]]) - mu * self.delta[l]
        pair_k, pair_i = np.nonzero((terms > 0) & ~have & (a != 0)[:, None])
        self.pair_cut = np.r_[self.pair_cut, pair_k]
        self.pair_feature = np.r_[self.pair_feature, pair_i]
        return int(pair_k.size)

    def add_violated(self, oracle, theta: np.ndarray, mu: float, s: np.ndarray, tol: float) -> int:
        """A cut for every sample whose maximum at ``(theta, mu')`` (``mu' = max(mu, floor)``) exceeds ``s_n`` by more
        than ``tol``; returns how many."""
        inst = self.inst
        intercept, coef = (float(theta[0]) if self.offset else 0.0), theta[self.offset:]
        mu = max(mu, lambda_floor(inst, coef))
        sep = oracle.separate(intercept, coef, mu, np.zeros(inst.n_samples))
        order = np.argsort(sep.rows.sample, kind="stable")
        violated = np.flatnonzero(np.asarray(sep.violation, dtype=float)[order] - s > tol)
        if violated.size:
            slopes = np.asarray(inst.loss.derivative(row_margins(inst, sep.rows, intercept, coef)), dtype=float)
            self.add_cuts(violated, sep.rows.flip[order][violated], slopes[order][violated], theta, mu)
        return int(violated.size)

    def dual_point(self, row_dual: np.ndarray, cut_row: np.ndarray, pair_row: np.ndarray, level_row: int,
                   bound_row: int) -> Tuple[FractionalRows, np.ndarray, np.ndarray]:
        """``(rows, mass, slopes)``: every cut with a positive multiplier as a fractional row (as
        :meth:`.slope_cut_master.SlopeCutMaster.dual_point`), from the multipliers ``row_dual`` (``>= 0``) of the
        cuts' main rows (``cut_row``), their pairs' rows (``pair_row``) and the level rows (from ``level_row``; the
        bounds ``M+ >= 0``, ``-M- >= 0`` from ``bound_row``): the expected encoded row is ``[1, x_n, dummies(z_n)]``
        plus, for each kept feature ``l``, ``t_l (q_l - e_{z_{n,l}})`` with ``t_l`` the pair's multiplier over the
        cut's and ``q_l`` the level distribution of its direction (the level rows' multipliers, the bound for the
        reference level); the expected cost ``kappa flip + sum_l delta_l t_l (1 - q_l(z_{n,l}))``."""
        inst = self.inst
        row_dual = np.maximum(np.asarray(row_dual, dtype=float), 0.0)
        mass_all = row_dual[cut_row]
        rho = row_dual[pair_row]
        m = self.mutable.size
        width = int(self.levels[self.mutable].max(initial=1))
        up, down = np.zeros((m, width)), np.zeros((m, width))
        row = level_row
        for i, l in enumerate(self.mutable):
            k = self.levels[l] - 1
            up[i, 1:k + 1] = row_dual[row: row + k]
            down[i, 1:k + 1] = row_dual[row + k: row + 2 * k]
            row += 2 * k
        up[:, 0] = row_dual[bound_row: bound_row + m]
        down[:, 0] = row_dual[bound_row + m: bound_row + 2 * m]
        valid = np.arange(width)[None, :] < self.levels[self.mutable][:, None]
        uniform = valid / np.maximum(valid.sum(axis=1, keepdims=True), 1)
        q = []
        for flow in (up, down):
            total = flow.sum(axis=1, keepdims=True)
            q.append(np.where(total > 0, flow / np.where(total > 0, total, 1.0), uniform))
        K = self.n_cuts
        index = np.flatnonzero(mass_all > 0)
        position = np.full(K, -1)
        position[index] = np.arange(index.size)
        sample_k, flip_k = self.sample[index], self.flip[index]
        sigma, _ = inst.row_signs(self.sample, self.flip)
        upward = (self.slope * sigma)[self.pair_cut] > 0
        t = np.clip(np.divide(rho, mass_all[self.pair_cut], out=np.zeros_like(rho),
                              where=mass_all[self.pair_cut] > 0), 0.0, 1.0)
        used = position[self.pair_cut] >= 0
        pair_k, pair_i, t, upward = position[self.pair_cut[used]], self.pair_feature[used], t[used], upward[used]
        n, off, Kk = inst.n_numerical, self.offset, index.size
        Zs = inst.data.Z[sample_k]
        rows, cols, vals = [], [], []
        if off:
            rows.append(np.arange(Kk)); cols.append(np.zeros(Kk, dtype=int)); vals.append(np.ones(Kk))
        if n:
            rows.append(np.repeat(np.arange(Kk), n)); cols.append(np.tile(off + np.arange(n), Kk))
            vals.append(np.asarray(inst.data.X, dtype=float)[sample_k].ravel())
        kk, ll = np.nonzero(Zs > 0)
        rows.append(kk); cols.append(self.start[ll] + Zs[kk, ll] - 1); vals.append(np.ones(kk.size))
        feature = self.mutable[pair_i]
        own = Zs[pair_k, feature]
        has = own > 0
        rows.append(pair_k[has]); cols.append(self.start[feature[has]] + own[has] - 1); vals.append(-t[has])
        dist = np.where(upward[:, None], q[0][pair_i], q[1][pair_i])
        pp, vv = np.nonzero(dist[:, 1:] > 0)
        rows.append(pair_k[pp]); cols.append(self.start[feature[pp]] + vv); vals.append(t[pp] * dist[pp, vv + 1])
        matrix = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                               shape=(Kk, self.n_theta))
        cost = np.where(flip_k, self.kappa, 0.0)
        np.add.at(cost, pair_k, self.delta[feature] * t * (1.0 - dist[np.arange(pair_k.size), own]))
        return FractionalRows(sample_k, flip_k, cost, matrix), mass_all[index], self.slope[index]


@dataclass
class Columns:
    """Column positions: ``theta`` first (``0 .. n_theta - 1``), then ``mu``, ``s`` (N), ``M+`` (``up``), ``M-``
    (``down``); ``n`` columns in all."""

    mu: int
    s: np.ndarray
    up: np.ndarray
    down: np.ndarray
    n: int


__all__ = ["MOTSlopeCuts", "Columns", "mot_slope_cuts_apply", "MAX_SAMPLES", "SLOPE_SNAP"]
