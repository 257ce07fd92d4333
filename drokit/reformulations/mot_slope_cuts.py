"""Slope cuts for MOT-DRO: Kelley's method on program (D) with the rows replaced by slope cuts, certified by a
linear program's dual point.

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

:func:`mot_slope_cut_search` runs Kelley's method on these cuts from a start (MOT phase 1's point,
:mod:`.mot_phase_one`): each conic master (Clarabel) within a box trust region ``|theta - c| <= radius`` around the
best point ``c`` (doubled when a better point lies on its edge, x10 when the box binds with nothing to add, as the
Wasserstein slope-cut search), the exact value ``F(theta, mu) = mu rho / theta1 + A(S(theta, mu), mu theta2 / theta1)``
of each master's point by one oracle call (an upper bound on the optimum), one cut per sample whose maximum
``S_n`` exceeds the master's ``s_n``.  A master that Clarabel leaves inaccurate still gives a trial point (its exact
value is an upper bound) but never a lower bound.

The certificate.  An interior-point dual of the conic master satisfies the stationarity in the coefficients only to
the solver's tolerance (1e-9), and the repair of :func:`~drokit.certificates.mot_lower_bound.mot_lagrangian_bound`,
which needs ``1e-12``, fails where only rows at the ends of the slope domain tell duplicated columns apart (audiology
has such features).  So the bound comes from a *linear* relaxation of the master solved by the dual simplex
(HiGHS): the same cuts, and the aggregate ``A(s, h) = max_{W in simplex} sum_n W_n s_n - h sum_n psi_n(W_n)``,
``psi_n(W) = p_n phi(W / p_n)``, with each ``W_n`` restricted to a grid around the conic master's weights ``W0_n``
and ``psi_n`` replaced by its chords there (above ``psi_n``: a smaller aggregate, so a relaxation):

    min  mu rho / theta1 + alpha + sum_n t_n
    s.t. t_n >= W_nk s_n - W_nk alpha - (theta2 / theta1) psi_nk mu     for every grid point W_nk of sample n,
         the cuts, the level rows, the dual-norm rows of the numerical features (an LP for ground norm p = 1 or inf).

Its vertex dual is exact: the cut multipliers are masses at the cuts' slopes, the pair multipliers the mass that
changes each feature, the level rows' multipliers the levels it goes to, as in the Wasserstein LP
(:meth:`.slope_cut_master.SlopeCutMaster.dual_point`): fractional rows (:class:`~drokit.oracles.rows.FractionalRows`)
whose masses per sample are a point ``W`` of the grid's hull.  :func:`~drokit.certificates.mot_lower_bound.
mot_lagrangian_bound` evaluates this dual point of (D) exactly (``psi_n(W_n)`` itself, below the chord that the LP
charged, so the budget holds): the lower bound that certifies, whatever the tolerances of either solver.  At the
conic master's optimum the weights ``W*`` lie inside the grid's hull and the chords' excess is ``~ eps^2 / 8``
(:data:`GRID_STEPS`), so the bound meets the master's value.  With CVaR's bound (``W_n <= p_n / level``, no price)
the grid is the interval's ends, its hull the whole interval; with ``theta2 = inf`` the single point ``p_n``.

The linear program is a relaxation of the cuts' model, and that model can be nearly flat far from the conic master's
box (cuts made without the ``y_l`` of features far from changing): its minimizer runs there (coefficients of 1e7 on
audiology).  :meth:`MOTSlopeCuts.certificate` keeps ``theta`` within a large box (:data:`LP_BOX`; its bounds' duals
are not part of the dual point, so a box that binds only means another round) and, at a minimizer far away, adds the
pairs left out that would change there and the oracle's cuts, re-solving from the last basis until it comes back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..ambiguity.divergences import get_divergence
from ..certificates.lagrangian import LowerBound
from ..certificates.mot_lower_bound import mot_lagrangian_bound
from ..certificates.repair import column_roles
from ..conic.builder import Affine, ProgramBuilder
from ..gaps import gap_scale
from ..instance import DROInstance
from ..losses.conjugate import conjugate, slope_domain
from ..oracles.rows import FractionalRows, lambda_floor, row_margins
from .dual import declare_parameters
from .mot_dual import divergence_aggregate, numerical_moves
from .slope_cut_master import KEEP_MARGIN

#: rounds of the slope-cut Kelley loop at most
MAX_ROUNDS = 100
#: a sample's cut joins when its maximum exceeds the master's ``s_n`` by more than this fraction of the gap tolerance
VIOLATION_FRACTION = 0.1
#: the first trust region's half-width.  Audiology, KL 0.01 / 0.05 / 0.2 (phase 1's point, calibrated integer weights):
#: 0.01 (the Wasserstein slope-cut search's) 22 / 18 / 11 masters, 8.3 / 4.4 / 3.7 s; 0.1: 16 / 14 / 11, 6.1 / 4.2 /
#: 3.7 s; 1: 14 / 13 / 11, 6.5 / 4.0 / 6.9 s
FIRST_RADIUS = 0.1
#: a master's point this close to the box's edge (relative to its half-width) is on it: Clarabel's interior points
#: stop short of the edge
BOX_EDGE = 1e-3
#: relative offsets of the certificate LP's weight grid around the conic master's weights ``W0_n`` (and 0): the
#: chord between ``W0 (1 +- 1e-5)`` overestimates ``psi_n`` by at most ``(1e-5)^2 W0 / 8`` (KL), and the wider points
#: let the LP reach weights that the conic master's accuracy misplaced
GRID_STEPS = (1e-5, 1e-3, 1e-1)
#: a cut's slope within this of 0 (relative to the slope domain's width) is made 0: any slope gives a valid cut, and a
#: well-classified sample's 1e-13 slopes left HiGHS failing on the certificate LP (audiology, KL 0.01: coefficients
#: 1e-9 to 4)
SLOPE_SNAP = 1e-8
#: the certificate's LP keeps ``theta`` within this many times ``max(1, max |theta_c|)`` of the best point ``theta_c``:
#: along a direction that the cuts leave nearly flat the LP's minimizer ran to coefficients of 1e7 and HiGHS failed
#: on it (audiology, KL 0.05).  Its dual point ignores these bounds: one that binds is a point far away where pairs and
#: cuts join, as any other (class docstring of :meth:`MOTSlopeCuts.certificate`)
LP_BOX = 100.0
#: samples at most for the slope-cut path (the conic master holds one exponential cone per sample and the certificate
#: LP one grid row per sample and grid point; larger sets go to the row masters after MOT phase 1)
MAX_SAMPLES = 2_000


def aggregate_value(divergence, S: np.ndarray, p: np.ndarray, h: float) -> float:
    """``A(S, h) = min_alpha alpha + sum_n p_n h phi*((S_n - alpha) / h)``: ``p'S`` at ``h = inf`` (weights fixed),
    the supremum at ``h = 0``."""
    if not np.isfinite(h):
        return float(p @ S)
    if h <= 0:
        return float(divergence.supremum(S, p)[0])
    return float(divergence.aggregate(S, p, h)[0])


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
    (:meth:`program`) and the certificate's LP (:meth:`certificate`).

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
    def _main_rows(self, cuts: np.ndarray, cols: "_Columns") -> Tuple[sp.csr_matrix, np.ndarray]:
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

    def _pair_rows(self, pairs: np.ndarray, cols: "_Columns") -> sp.csr_matrix:
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

    def _level_rows(self, cols: "_Columns") -> Tuple[sp.csr_matrix, int]:
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

    def _columns(self, extra: int = 0) -> "_Columns":
        """The local columns ``[theta, mu, s, M+, M-]`` followed by ``extra`` more (``n`` counts them all)."""
        N, m = self.inst.n_samples, self.mutable.size
        mu = self.n_theta
        return _Columns(mu=mu, s=mu + 1 + np.arange(N), up=mu + 1 + N + np.arange(m),
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
        cols = self._columns(P)
        y_cols = cols.n - P + np.arange(P)
        main, k = self._main_rows(np.arange(K), cols)
        main = main + sp.csr_matrix((-np.ones(P), (self.pair_cut, y_cols)), shape=main.shape)
        pairs = self._pair_rows(np.arange(P), cols) + sp.csr_matrix((np.ones(P), (np.arange(P), y_cols)),
                                                                    shape=(P, cols.n))
        levels, _ = self._level_rows(cols)
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

    # ------------------------------------------------------------------ the certificate
    def certificate(self, weights: np.ndarray, oracle=None, tol: float = 1e-9, upper: float = np.inf,
                    gap_tol: float = 0.0, center: Optional[np.ndarray] = None, time_limit: float = np.inf,
                    max_rounds: int = 30, log=None) -> Tuple[Optional[LowerBound], dict]:
        """The best bound of the LP relaxation's dual points (module docstring) with the weight grid around
        ``weights`` (the conic master's ``W0``): ``(bound or None, info)``.  Each LP's dual point is evaluated
        (:func:`~drokit.certificates.mot_lower_bound.mot_lagrangian_bound`); it returns once one is within ``gap_tol``
        of ``upper`` (relative, :mod:`drokit.gaps`).  Otherwise, while the LP's minimizer has a pair left out by
        :data:`~.slope_cut_master.KEEP_MARGIN` worth changing there (the LP, exact, finds the nearly flat directions
        that those leave far from the conic master's box), or a sample whose maximum there (``oracle``) exceeds its
        ``s_n`` by more than ``tol``, they join and the LP is solved again from its last basis."""
        t_start = time.perf_counter()
        lp = _CertificateLP(self, weights, center)
        info = {"rounds": 0, "lp_seconds": 0.0}
        best: Optional[LowerBound] = None
        for round_ in range(1, max_rounds + 1):
            remaining = time_limit - (time.perf_counter() - t_start)
            if remaining <= 0:
                info["status"] = "time limit"
                break
            x, row_dual, seconds, status = lp.solve(remaining)
            info.update(rounds=round_, status=status, lp_rows=lp.n_rows, lp_columns=lp.n_cols)
            info["lp_seconds"] += seconds
            if x is None:
                break
            info["value"] = lp.value
            rows, mass, slopes = self.dual_point(row_dual, lp.cut_row, lp.pair_row, lp.level_row, lp.bound_row)
            if mass.sum() > 0:
                bound = mot_lagrangian_bound(self.inst, rows, mass, slopes, rho=self.rho, theta1=self.theta1,
                                             theta2=self.theta2, divergence=self.divergence)
                if best is None or bound.value > best.value:
                    best = bound
            theta, mu, s = x[: self.n_theta], float(x[self.n_theta]), x[lp.cols.s]
            done = best is not None and upper - best.value <= gap_tol * gap_scale(upper)
            pairs_before, cuts_before = self.pair_cut.size, self.n_cuts
            added_pairs = 0 if done else self._complete_pairs(theta, mu)
            added_cuts = 0 if done or oracle is None else self._add_violated(oracle, theta, mu, s, tol)
            if log is not None:
                log(f"mot certificate LP {round_}: {status} {lp.value:.9f} (max |theta| "
                    f"{np.max(np.abs(theta), initial=0.0):.3g}), bound "
                    f"{best.value if best is not None else -np.inf:.9f}, +{added_pairs} pairs, +{added_cuts} cuts "
                    f"({seconds:.2f} s)")
            if done or not (added_pairs or added_cuts):
                break
            lp.extend(cuts_before, pairs_before)
        info["seconds"] = time.perf_counter() - t_start
        return best, info

    def _complete_pairs(self, theta: np.ndarray, mu: float) -> int:
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

    def _add_violated(self, oracle, theta: np.ndarray, mu: float, s: np.ndarray, tol: float) -> int:
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
class _Columns:
    """Column positions: ``theta`` first (``0 .. n_theta - 1``), then ``mu``, ``s`` (N), ``M+`` (``up``), ``M-``
    (``down``); ``n`` columns in all."""

    mu: int
    s: np.ndarray
    up: np.ndarray
    down: np.ndarray
    n: int


class _CertificateLP:
    """The certificate's LP in HiGHS (module docstring), extended in place as pairs and cuts join (the dual simplex
    restarts from the last basis).  Columns ``[theta, mu, s, M+, M-, alpha, t (N), norm auxiliaries, y ...]``; rows:
    the level rows and bounds, the weight grid's rows, the dual-norm rows, then the cuts' main rows and the pairs'
    rows as they come (``cut_row``, ``pair_row``)."""

    def __init__(self, cuts: MOTSlopeCuts, weights: np.ndarray, center: Optional[np.ndarray] = None):
        import highspy
        from ..solvers.highs import new_highs
        self.cuts, self.highspy = cuts, highspy
        inst = cuts.inst
        N, p = inst.n_samples, inst.p
        W0 = np.maximum(np.asarray(weights, dtype=float), 0.0)
        W0 = W0 / W0.sum() if W0.sum() > 0 else p.copy()
        if np.isfinite(cuts.theta2) and cuts.divergence.free_reweighting:
            # CVaR: the weights' bound W_n <= p_n / level and no price, so the grid's ends are the whole interval
            grid, psi, ratio = np.column_stack([np.zeros(N), p / cuts.divergence.validated_level()]), np.zeros((N, 2)), 0.0
        elif np.isfinite(cuts.theta2):
            factors = np.concatenate([[1.0], *[[1.0 - e, 1.0 + e] for e in GRID_STEPS]])
            grid = np.concatenate([np.zeros((N, 1)), W0[:, None] * factors[None, :]], axis=1)      # (N, G)
            ratio_w = np.divide(grid, p[:, None], out=np.ones_like(grid), where=p[:, None] > 0)   # weight 0: no term
            psi = p[:, None] * cuts.divergence.value(ratio_w)
            ratio = cuts.theta2 / cuts.theta1
        else:                               # weights fixed at 1: W = p, no price
            grid, psi, ratio = p[:, None].copy(), np.zeros((N, 1)), 0.0
        n_norm = cuts.limited.size if cuts.limited.size and inst.metric.numerical.lp_dual_exponent != np.inf else 0
        base = cuts._columns()
        self.c_alpha = base.n
        self.c_t = base.n + 1 + np.arange(N)
        self.c_norm = base.n + 1 + N + np.arange(n_norm)
        self.cols = cuts._columns(1 + N + n_norm)
        n_cols = self.cols.n
        inf = highspy.kHighsInf
        cost = np.zeros(n_cols)
        cost[self.cols.mu] = cuts.rho / cuts.theta1
        cost[self.c_alpha] = 1.0
        cost[self.c_t] = 1.0
        lo, hi = np.full(n_cols, -inf), np.full(n_cols, inf)
        lo[self.cols.mu] = 0.0
        if center is not None:        # a box far around the best point: no 1e7 coefficients along flat directions
            reach = LP_BOX * max(1.0, float(np.max(np.abs(center), initial=0.0)))
            lo[: cuts.n_theta], hi[: cuts.n_theta] = center - reach, center + reach
        lo[cuts.fixed], hi[cuts.fixed] = 0.0, 0.0
        lo[self.c_norm] = 0.0
        h = self.h = new_highs(highspy)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.addCols(n_cols, cost, lo, hi, 0, np.zeros(n_cols, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.n_cols, self.n_rows = n_cols, 0
        levels, self.bound_row = cuts._level_rows(self.cols)
        self.level_row = 0
        G = grid.shape[1]
        gr = np.arange(N * G)
        n_of = np.repeat(np.arange(N), G)
        Wg = grid.ravel()
        grid_rows = sp.csr_matrix((np.concatenate([np.ones(N * G), -Wg, Wg, ratio * psi.ravel()]),
                                   (np.tile(gr, 4), np.concatenate([self.c_t[n_of], self.cols.s[n_of],
                                                                    np.full(N * G, self.c_alpha),
                                                                    np.full(N * G, self.cols.mu)]))),
                                  shape=(N * G, n_cols))
        blocks, lower = [levels, grid_rows], [np.zeros(levels.shape[0]), np.zeros(N * G)]
        norm = self._norm_rows()
        if norm is not None:
            blocks.append(norm)
            lower.append(np.zeros(norm.shape[0]))
        self._add_rows(sp.vstack(blocks, format="csr"), np.concatenate(lower))
        self.cut_row = np.zeros(0, dtype=int)
        self.pair_row = np.zeros(0, dtype=int)
        self.pair_col = np.zeros(0, dtype=int)
        self.value = np.nan
        self.extend(0, 0)

    def _add_rows(self, A: sp.csr_matrix, lower: np.ndarray) -> np.ndarray:
        A = sp.csr_matrix(A)
        A.sort_indices()
        inf = self.highspy.kHighsInf
        self.h.addRows(A.shape[0], lower, np.full(A.shape[0], inf), A.nnz, A.indptr[:-1].astype(np.int32),
                       A.indices.astype(np.int32), A.data)
        rows = self.n_rows + np.arange(A.shape[0])
        self.n_rows += A.shape[0]
        return rows

    def _norm_rows(self) -> Optional[sp.csr_matrix]:
        """The dual-norm rows of the norm-priced numerical coefficients: ``mu -+ lip beta_j / gamma_j >= 0`` (ground
        norm p = 1, dual l_inf) or ``r_j -+ beta_j / gamma_j >= 0``, ``mu - lip sum_j r_j >= 0`` (p = inf, dual
        l_1); ``None`` without them."""
        cuts = self.cuts
        if not cuts.limited.size:
            return None
        inst = cuts.inst
        lip = float(inst.loss.lipschitz)
        g = np.asarray(inst.metric.gamma, dtype=float)[cuts.limited - cuts.offset]
        q, mu, j = cuts.limited.size, self.cols.mu, cuts.limited
        rr = np.arange(2 * q)
        if not self.c_norm.size:
            return sp.csr_matrix((np.concatenate([np.r_[-lip / g, lip / g], np.ones(2 * q)]),
                                  (np.tile(rr, 2), np.concatenate([np.r_[j, j], np.full(2 * q, mu)]))),
                                 shape=(2 * q, self.n_cols))
        aux = self.c_norm
        r = [np.tile(rr, 2), np.full(q + 1, 2 * q)]
        c = [np.concatenate([np.r_[j, j], np.r_[aux, aux]]), np.r_[mu, aux]]
        v = [np.concatenate([np.r_[-1 / g, 1 / g], np.ones(2 * q)]), np.r_[1.0, -lip * np.ones(q)]]
        return sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))),
                             shape=(2 * q + 1, self.n_cols))

    def extend(self, old_cuts: int, old_pairs: int) -> None:
        """The cuts from ``old_cuts`` and the pairs from ``old_pairs`` on (of :class:`MOTSlopeCuts`' arrays) join:
        a ``y`` column per pair, the new cuts' main rows, the pairs' rows, and ``-y`` in the main row of an older
        cut that gains a pair."""
        cuts = self.cuts
        new_pairs = np.arange(old_pairs, cuts.pair_cut.size)
        new_cuts = np.arange(old_cuts, cuts.n_cuts)
        P = new_pairs.size
        inf = self.highspy.kHighsInf
        if P:
            self.h.addCols(P, np.zeros(P), np.zeros(P), np.full(P, inf), 0, np.zeros(P, dtype=np.int32),
                           np.zeros(0, dtype=np.int32), np.zeros(0))
            y_cols = self.n_cols + np.arange(P)
            self.n_cols += P
            self.pair_col = np.r_[self.pair_col, y_cols]
        cols = _Columns(self.cols.mu, self.cols.s, self.cols.up, self.cols.down, self.n_cols)
        owner = cuts.pair_cut[new_pairs]
        if new_cuts.size:
            main, k = cuts._main_rows(new_cuts, cols)
            mine = owner >= old_cuts
            own = sp.csr_matrix((-np.ones(int(mine.sum())), (owner[mine] - old_cuts, self.pair_col[new_pairs[mine]])),
                                shape=main.shape)
            main = main + own
            self.cut_row = np.r_[self.cut_row, self._add_rows(main, -k)]
        for pair in new_pairs[owner < old_cuts]:          # an older cut gains a y
            self.h.changeCoeff(int(self.cut_row[cuts.pair_cut[pair]]), int(self.pair_col[pair]), -1.0)
        if P:
            y = sp.csr_matrix((np.ones(P), (np.arange(P), self.pair_col[new_pairs])), shape=(P, cols.n))
            rows = cuts._pair_rows(new_pairs, cols) + y
            self.pair_row = np.r_[self.pair_row, self._add_rows(rows, np.zeros(P))]

    def solve(self, time_limit: float = np.inf):
        """``(x, row duals, seconds, status)``; ``x`` None when HiGHS does not end optimal."""
        h = self.h
        h.setOptionValue("time_limit", float(time_limit) if np.isfinite(time_limit) else self.highspy.kHighsInf)
        t0 = time.perf_counter()
        h.run()
        status = h.getModelStatus()
        if status != self.highspy.HighsModelStatus.kOptimal and time.perf_counter() - t0 < time_limit:
            h.clearSolver()              # once more from scratch, without presolve
            h.setOptionValue("presolve", "off")
            h.run()
            h.setOptionValue("presolve", "choose")
            status = h.getModelStatus()
        seconds = time.perf_counter() - t0
        if status != self.highspy.HighsModelStatus.kOptimal:
            return None, None, seconds, h.modelStatusToString(status)
        self.value = float(h.getInfo().objective_function_value)
        solution = h.getSolution()
        return np.asarray(solution.col_value), np.asarray(solution.row_dual), seconds, "optimal"


@dataclass
class MOTSlopeCutResult:
    """What :func:`mot_slope_cut_search` found: the best point (``theta = [intercept, coef]``, ``mu``) and its exact
    value ``upper`` (an upper bound on the optimum, at that ``mu``), the certificate's bound (``bound``, ``lower =
    bound.value`` or ``-inf``), the last conic master's value, rounds, cuts and times."""

    intercept: float
    coef: np.ndarray
    mu: float
    upper: float
    lower: float
    bound: Optional[LowerBound]
    certified: bool
    rounds: int
    cuts: int
    master_value: float
    seconds: float
    master_seconds: float
    certificate_seconds: float
    stop: str = ""
    history: List[dict] = field(default_factory=list)
    program: object = None           # the last conic master


def mot_slope_cut_search(inst: DROInstance, oracle, start, *, rho: float, theta1: float, theta2: float, divergence,
                         tol: float, backend, options=None, control=None,
                         log: Optional[Callable[[str], None]] = None,
                         max_rounds: int = MAX_ROUNDS) -> MOTSlopeCutResult:
    """Kelley's method on the slope cuts from ``start`` (``intercept``, ``coef``, ``mu``: MOT phase 1's point), with
    the box trust region and the certificate of the module docstring; stops certified when the certificate's bound is
    within ``tol`` (relative, :mod:`drokit.gaps`) of the best exact value."""
    from ..solvers.base import OPTIMAL, OPTIMAL_INACCURATE, solve_with_retries
    t_start = time.perf_counter()
    divergence = get_divergence(divergence)
    cuts = MOTSlopeCuts(inst, rho=rho, theta1=theta1, theta2=theta2, divergence=divergence)
    N, p, off = inst.n_samples, inst.p, cuts.offset
    rate, ratio = rho / theta1, theta2 / theta1
    zeros = np.zeros(N)

    def evaluate(theta: np.ndarray, mu: float):
        """``F`` at ``(theta, mu')``, ``mu' = max(mu, floor)``, each sample's maximum, flip and slope there."""
        intercept, coef = (float(theta[0]) if off else 0.0), theta[off:]
        mu = max(mu, lambda_floor(inst, coef))
        sep = oracle.separate(intercept, coef, mu, zeros)
        order = np.argsort(sep.rows.sample, kind="stable")
        S = np.asarray(sep.violation, dtype=float)[order]
        value = mu * rate + aggregate_value(divergence, S, p, ratio * mu if np.isfinite(ratio) else np.inf)
        slopes = np.asarray(inst.loss.derivative(row_margins(inst, sep.rows, intercept, coef)), dtype=float)
        return value, mu, S, sep.rows.flip[order], slopes[order]

    theta = np.r_[[start.intercept] if off else [], np.asarray(start.coef, dtype=float)]
    theta[cuts.fixed] = 0.0
    upper, mu, S, flips, slopes = evaluate(theta, float(start.mu))
    best = (theta.copy(), mu, upper)
    s = np.full(N, -np.inf)
    radius = FIRST_RADIUS
    lower, bound, stop, master_value = -np.inf, None, "round limit", np.nan
    master_seconds = certificate_seconds = 0.0
    history: List[dict] = []
    last_box = last_program = None
    retry_at, backoff = 0, 2                # the round from which the certificate is tried again after a failure
    r = 0
    for r in range(1, max_rounds + 1):
        if control is not None and control.should_stop():
            stop = "time limit reached"
            break
        scale = gap_scale(best[2])
        violated = np.flatnonzero(S - s > VIOLATION_FRACTION * tol * scale)
        cuts.add_cuts(violated, flips[violated], slopes[violated], theta, mu)
        box = (radius, best[2])
        t0 = time.perf_counter()
        program = last_program = cuts.program(best[0], radius)
        solution = solve_with_retries(backend, program, options, control=control, stage=f"mot slope cuts {r}")
        master_seconds += time.perf_counter() - t0
        if solution.status not in (OPTIMAL, OPTIMAL_INACCURATE) or solution.x is None:
            stop = f"conic master {r} ended {solution.status} ({solution.raw_status})"
            break
        x = solution.x
        coef = np.array(program.value("coef", x), dtype=float)
        intercept = float(program.value("intercept", x)[0]) if off else 0.0
        trial = np.r_[[intercept] if off else [], coef]
        trial[cuts.fixed] = 0.0
        lam = float(program.value("lambda", x)[0])
        s_trial = np.asarray(program.value("s", x), dtype=float)
        exact = solution.status == OPTIMAL
        master_value = min(float(solution.primal_objective), float(solution.dual_objective))
        step = float(np.max(np.abs(trial - best[0]), initial=0.0))
        active = step >= radius * (1 - BOX_EDGE)
        # the certificate: once the master's value is within the tolerance of the best point's (or nothing is left)
        if exact and r >= retry_at and (best[2] - master_value <= tol * scale or violated.size == 0):
            t0 = time.perf_counter()
            candidate, info = cuts.certificate(cuts.master_weights(solution.y), oracle,
                                               VIOLATION_FRACTION * tol * scale, upper=best[2], gap_tol=tol,
                                               center=best[0],
                                               time_limit=control.remaining() if control is not None else np.inf,
                                               log=log)
            certificate_seconds += time.perf_counter() - t0
            if candidate is not None and candidate.value > lower:
                lower, bound = float(min(candidate.value, best[2])), candidate
            if info.get("status") != "optimal":          # HiGHS failed: not again at once
                retry_at, backoff = r + backoff, 2 * backoff
            if log is not None:
                log(f"mot slope cuts {r:>3}: certificate {info.get('status')} after {info.get('rounds')} LP(s), "
                    f"bound {lower:.9f} ({info.get('seconds', 0):.2f} s)")
            if best[2] - lower <= tol * scale:
                stop = ""
                history.append({"round": r, "master": master_value, "lower": lower, "upper": best[2],
                                "cuts": cuts.n_cuts, "added": int(violated.size)})
                break
        if violated.size == 0 and not active and box == last_box:
            stop = "stalled: nothing to add and the certificate short of the gap"
            break
        last_box = box
        theta, s = trial, s_trial
        value, mu, S, flips, slopes = evaluate(theta, lam * theta1)
        if value < best[2]:
            if active:
                radius *= 2.0
            best = (theta.copy(), mu, value)
        elif violated.size == 0 and active:
            radius *= 10.0
        history.append({"round": r, "master": master_value, "lower": lower, "upper": best[2], "cuts": cuts.n_cuts,
                        "added": int(violated.size)})
        if log is not None:
            log(f"mot slope cuts {r:>3}: master {master_value:.9f} ({solution.status}) exact {value:.9f} "
                f"best {best[2]:.9f} cuts {cuts.n_cuts} (+{violated.size}) pairs {cuts.pair_cut.size} "
                f"step {step:.3g} radius {radius:.3g}")
        if control is not None:
            control.progress("MOT-DRO slope cuts", f"master {r}, best value {best[2]:.9g}, {cuts.n_cuts:,} cuts")
    theta, mu, upper = best
    certified = stop == "" and upper - lower <= tol * gap_scale(upper)
    return MOTSlopeCutResult(intercept=float(theta[0]) if off else 0.0, coef=theta[off:].copy(), mu=float(mu),
                             upper=float(upper), lower=float(lower), bound=bound, certified=certified, rounds=r,
                             cuts=cuts.n_cuts, master_value=float(master_value),
                             seconds=time.perf_counter() - t_start, master_seconds=master_seconds,
                             certificate_seconds=certificate_seconds, stop=stop, history=history,
                             program=last_program)


__all__ = ["MOTSlopeCuts", "MOTSlopeCutResult", "mot_slope_cut_search", "mot_slope_cuts_apply", "GRID_STEPS",
           "MAX_SAMPLES", "MAX_ROUNDS"]
