"""Slope-split smoothing: the exact DRO objective smoothed over *every* configuration, with no working set.

Phase 1 (:mod:`.phase_one`) smooths the objective over a working set of configuration rows that the oracle
grows; on wide categorical data with many distinct weights (sun2025 audiology, 62 features, 1-decimal
calibrated weights: 29 weight classes) every Newton solve finds new worst configurations elsewhere, and the
search churns (its best value 0.2249 against an optimum below 0.1851; the Kelley masters that follow crawled
for 40-140 rounds).  Here the smoothing covers all configurations at once, through the separability of the
categorical cost.

For a margin row ``u(z) = sigma_n f(x_n, z) - r_n`` (:meth:`DROInstance.row_signs`) and a convex loss
``L(u) = max_{alpha in dom L*} alpha u - L*(alpha)`` (Fenchel), with the categorical cost a *sum* over
features (``p = 1``: ``D(z_n, z) = sum_l c_l(z_{n,l}, z_l)``, ``c_l = delta_l U_l``), the worst case of sample
``n`` (belbasi2023 (3), sun2025 (3), at ``s = 0``) exchanges its two maxima:

    phi_n = max_{flip} max_z L(u(z)) - lambda (D(z_n, z) + kappa flip)
          = max_{flip} max_alpha [ alpha u_n - L*(alpha) - lambda kappa flip
                                   + sum_l max_v (alpha sigma g_l(v) - lambda c_l(z_{n,l}, v)) ],

``u_n`` the nominal argument, ``g_l(v) = w_l(v) - w_l(z_{n,l})`` (``w_l`` the level coefficients, 0 for the
reference level); a label flip negates ``sigma`` (classification).  The numerical features stay at ``x_n``:
their move adds ``sup_x alpha sigma beta_x'(x - x_n) - lambda ||Gamma (x - x_n)||``, which is 0 under the
constraint ``lambda >= lip(L) ||Gamma^{-1} beta_x||_*`` (kept by the cone barrier) since ``|alpha| <= lip(L)``.
For a fixed slope the configuration maximum separates over features.  The smoothing replaces both maxima
with log-sum-exps at temperature ``tau``, the slope's over a grid ``alpha_1..alpha_K`` (the slopes ``L'(u)`` at
``K`` margins ``u`` evenly spaced over where ``L'`` varies; a piecewise-affine loss's own piece slopes, exactly):

    h_nk(theta)  = alpha_k u_n - L*(alpha_k) - lambda kappa_k + sum_l tau log sum_v exp((alpha_k sigma g_l(v) - lambda c_l(z_{n,l}, v)) / tau)
    F_tau(theta) = lambda eps + sum_n p_n tau log sum_k exp(h_nk / tau) - tau B(theta)

``F_tau`` is smooth and convex in ``theta = (beta_0, beta, lambda)`` (each ``h_nk`` is a log-sum-exp of affine
functions of ``theta``) and approaches the exact objective from below as ``tau -> 0`` and the grid refines, up to
``tau (log K + sum_l log a_l)`` and the tangent error ``max L'' (Delta u)^2 / 8`` between grid slopes.  Its
derivatives, with ``q_{nklv}`` the level probabilities of feature ``l``, ``w_nk`` the slope weights and
``s_nk = alpha_k sigma_n`` (a flip entry has ``-alpha_k``):

    grad h_nk = ( s_nk E_q[a], -E_q[c] - kappa_k ),   E_q[a] the expected encoded row (intercept, x_n, dummies)
    hess F_tau = sum_n p_n [ sum_k w_nk hess h_nk + (1/tau) Cov_w(grad h_n.) ],
    hess h_nk  = (1/tau) sum_l Cov_{q_{nkl}}( (s_nk e_{l v}, -c_l(z_{n,l}, v)) ),

a dense ``(d + 2)``-square matrix from one Gram product over the (sample, slope) pairs with weight (those
above ``WEIGHT_DROP``) and per-feature level covariances.  Newton's method (:func:`.phase_one._newton`) runs
on ``F_tau`` for ``tau`` shrinking tenfold; the oracle gives the exact objective at each end point (a
certified upper bound) and every sample's maximizing row.

It is a search.  Its exact values (the oracle's, at the end of each temperature) are certified upper bounds,
and the smoothed dual point gives a certified lower bound: masses ``p_n w_nk`` on *fractional rows*, the
expected encoded rows and costs of the product distributions ``q_nk`` (:meth:`SlopeSplitObjective.dual_point`,
:class:`~drokit.evaluation.lower_bound.FractionalRows`), repaired and evaluated by
:func:`~drokit.evaluation.lower_bound.lagrangian_bound`: ``F_tau`` minus ``tau`` times the entropies of ``w`` and
``q``, less the tangent error at the active margins (each sample's local slopes follow them,
:meth:`SlopeSplitObjective.refine_slopes`).  That bound closes slowly with ``tau`` (audiology: 7e-4 relative at
``tau = 1e-5``, where Newton needs 200 steps per temperature), so the cutting plane's conic masters certify,
starting from the search's point and the rows it leans on (each (sample, slope) pair's most probable
configuration and the oracle's maximizers).

Where it runs (:func:`use_slope_split`): after phase 1 stops unconverged (its working set still churning) on
data where the split is exact and its arrays are small enough, or always with the cutting-plane option
``search="slope_split"``.  Measured on sun2025 Table 1, audiology, 1-decimal weights (226 samples, 62 features,
29 weight classes): rho mean 0.7 phase 1's best 0.2249 and masters uncertified after 41 rounds -> the split's
0.18523 at ``tau = 1e-3`` (55 s) and certified 0.18506 after 54 rounds (249 s); rho mean 0.6 certified in 320 s
(was 488 s).  Cost per Newton step ``O(N K sum_l a_l + P d^2)`` with ``P`` the weighted pairs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, List, Optional

import numpy as np
import scipy.sparse as sp

from ...models.instance import DROInstance
from ...oracles.enumeration import ConfigurationRows, concat_rows, unique_rows
from .row_terms import parameter_layout

#: the cutting plane's default search falls back to this method (after an unconverged phase 1) on data this wide:
#: at least FALLBACK_MIN_FEATURES mutable categorical features in at least FALLBACK_MIN_CLASSES weight classes, where
#: budget cuts hardly aggregate.  Measured on sun2025 audiology (62 features), every draw taking the split: 1-decimal
#: weights (25-32 classes) certified where phase 1's start left one draw uncertified; unit weights (1 class) 48.6 s
#: against 5.6 s and integer weights (4-5 classes) 61.5 s against 22 s, the budget cuts certifying fast from phase 1
FALLBACK_MIN_FEATURES = 30
FALLBACK_MIN_CLASSES = 10
#: ... and when its (sample, slope, level) arrays hold at most this many entries (8 bytes each; they are not yet
#: computed in blocks of samples): audiology holds 226 x 63 x 147 = 2.1 million
AUTO_MAX_ENTRIES = 20_000_000
#: margins ``u`` of the slope grid of a smooth loss
GRID_SIZE = 33
#: (sample, slope) pairs whose weight ``p_n w_nk`` is below this are left out of the Hessian's Gram product
WEIGHT_DROP = 1e-14
#: Newton steps per temperature at most
MAX_STEPS = 30
#: the cutting plane's search stops at this temperature (relative to ``max(1, |F|)``).  sun2025 Table 1,
#: audiology, 1-decimal weights, rho mean 0.7: the exact value 0.18523 at 1e-3 (0.18685 at 1e-2) against an optimum
#: of 0.18506; its conic masters then certify in 54 rounds (248 s in all), where phase 1's start (0.2249) left them
#: uncertified after 41 rounds
SEARCH_TAU_MIN = 1e-3
#: full Newton steps after the damped ones, before the dual point is read (:func:`_polish`)
POLISH_STEPS = 3
#: per-sample slope slots (per label sign) that follow the active margins (:meth:`SlopeSplitObjective.refine_slopes`):
#: ``LOCAL_PAIRS`` heaviest pairs times the offsets ``LOCAL_OFFSETS`` (in units of the width)
LOCAL_PAIRS = 3
LOCAL_OFFSETS = (0.0, -1.0, 1.0, -3.0, 3.0)
LOCAL_SLOPES = LOCAL_PAIRS * len(LOCAL_OFFSETS)
#: the dual point leaves out the (sample, slope) pairs with a mass below this times ``p_n``
DUAL_MASS_DROP = 1e-14


def loss_is_smooth(loss) -> bool:
    """A loss without affine pieces: its slopes form a continuum, sampled by a grid and refined per sample."""
    return loss.pieces is None


def slope_split_applies(inst: DROInstance) -> tuple[bool, str]:
    """Whether the slope split is exact for ``inst`` (and why not): a margin loss without attack or penalty,
    a categorical cost that adds over features (``p = 1``), labels fixed or flipped (classification), at
    least two mutable categorical features."""
    if hasattr(inst.loss, "at") or inst.penalized:
        return False, "adversarial losses and penalties are not covered"
    if not np.isfinite(float(inst.loss.lipschitz)):
        return False, "the loss has no finite Lipschitz constant"
    if float(inst.metric.categorical.validated_p()) != 1.0:
        return False, "the categorical cost is not a sum over features (p != 1)"
    if not inst.is_classification and np.isfinite(float(inst.metric.kappa)):
        return False, "regression with a finite label cost moves the label continuously"
    if inst.mutable_categorical().size < 2:
        return False, "fewer than two mutable categorical features"
    return True, ""


def slope_grid(loss, size: int = GRID_SIZE) -> np.ndarray:
    """The slopes ``alpha_k``: a piecewise-affine loss's piece slopes (``L`` is their maximum: exact), else
    ``L'(u)`` at ``size`` margins evenly spaced over ``[-U, U]``, ``U`` the first power of two where ``L'`` is
    within ``1e-9`` of the slope domain's ends, plus the ends themselves."""
    from ...losses.conjugate import slope_domain
    lo, hi = slope_domain(loss)
    if loss.pieces is not None:
        return np.unique(np.asarray(loss.pieces[0], dtype=float))
    reach = 1.0
    while reach < 64.0:
        ends = np.asarray(loss.derivative(np.array([-reach, reach])), dtype=float)
        if abs(ends[0] - lo) <= 1e-9 * max(1.0, hi - lo) and abs(ends[1] - hi) <= 1e-9 * max(1.0, hi - lo):
            break
        reach *= 2.0
    u = np.linspace(-reach, reach, size)
    return np.unique(np.clip(np.concatenate([[lo, hi], np.asarray(loss.derivative(u), dtype=float)]), lo, hi))


@dataclass
class _LevelGroup:
    """The mutable categorical features with ``a`` levels: their parameter columns ``(m, a)`` (``-1`` for the
    reference level), the samples' own levels ``(N, m)`` and level costs ``(N, m, a)``."""

    cols: np.ndarray
    own: np.ndarray
    cost: np.ndarray

    @property
    def binary(self) -> bool:
        return self.cols.shape[1] == 2

    @property
    def other_cost(self) -> np.ndarray:
        """Binary features: the cost of the other level ``(N, m)`` (the own level costs 0)."""
        return np.take_along_axis(self.cost, (1 - self.own)[:, :, None], axis=2)[:, :, 0]

    @property
    def toward_one(self) -> np.ndarray:
        """Binary features: ``+1`` where the other level is level 1 (the one with a column), else ``-1``."""
        return 1.0 - 2.0 * self.own


class SlopeSplitObjective:
    """``F_tau`` (module docstring) with value, gradient and Hessian in the interface of
    :func:`.phase_one._newton` (``free``, ``value``, ``derivatives``)."""

    def __init__(self, inst: DROInstance, grid_size: int = GRID_SIZE):
        from ...losses.conjugate import conjugate
        self.inst = inst
        self.offset, self.dim, self.free, self.barrier = parameter_layout(inst)
        N = inst.n_samples
        alpha = slope_grid(inst.loss, grid_size)
        conj = np.asarray(conjugate(inst.loss, alpha), dtype=float)
        ok = np.isfinite(conj)
        alpha, conj = alpha[ok], conj[ok]
        kappa = float(inst.metric.kappa)
        flips = inst.is_classification and np.isfinite(kappa)
        # entries k, per sample: sign of sigma (a flip negates it), slope, conjugate, label cost; the shared grid
        # first, then LOCAL_SLOPES slots per sign that :meth:`refine_slopes` moves to each sample's active margins
        local = LOCAL_SLOPES if loss_is_smooth(inst.loss) else 0
        signs = [1.0, -1.0] if flips else [1.0]
        sign = np.concatenate([np.full(alpha.size + local, v) for v in signs])
        slots = np.concatenate([alpha, np.full(local, alpha[alpha.size // 2])])
        self.local = np.concatenate([np.r_[np.zeros(alpha.size, bool), np.ones(local, bool)] for _ in signs])
        self.alpha = np.tile(np.tile(slots, len(signs)), (N, 1))
        self.sign = np.tile(sign, (N, 1))
        self.kappa = np.tile(np.where(sign < 0, kappa if flips else 0.0, 0.0), (N, 1))
        self.conj = np.asarray(conjugate(inst.loss, self.alpha.ravel()), dtype=float).reshape(N, -1)
        N = inst.n_samples
        self.sigma, self.shift = inst.row_signs(np.arange(N), np.zeros(N, dtype=bool))
        self.p = np.asarray(inst.p, dtype=float)
        self.groups = self._groups()
        # the expected encoded row E_q[a] = a_n + sum over mutable features of (E_q[dummies_l] - dummies_l(z_n))
        dense = np.zeros((N, self.dim - 1))
        if inst.fit_intercept:
            dense[:, 0] = 1.0
        dense[:, self.offset:] = inst.design().toarray()
        self.base = dense                                  # (N, d - 1): the nominal rows

    def _groups(self) -> List[_LevelGroup]:
        inst = self.inst
        schema, metric = inst.schema, inst.metric
        mutable = inst.mutable_categorical()
        levels = np.asarray(schema.levels)[mutable]
        offsets = schema.dummy_offsets()[mutable]
        delta = np.asarray(metric.delta, dtype=float)[mutable]
        Z = inst.data.Z
        out = []
        for a in np.unique(levels):
            sel = np.flatnonzero(levels == a)
            v = np.arange(a)[None, :]
            cols = np.where(v == 0, -1, inst.n_numerical + offsets[sel][:, None] + v - 1)
            own = Z[:, mutable[sel]]
            cost = np.empty((inst.n_samples, sel.size, a))
            for j, l in enumerate(mutable[sel]):
                unit = 1.0 - np.eye(a) if metric.units is None else np.asarray(metric.units[l], dtype=float)
                cost[:, j, :] = delta[sel[j]] * unit[own[:, j]]
            out.append(_LevelGroup(cols=cols, own=own, cost=cost))
        return out

    # ----------------------------------------------------------------------------------------- pieces
    def _split(self, theta: np.ndarray):
        intercept = float(theta[0]) if self.inst.fit_intercept else 0.0
        return intercept, theta[self.offset:-1], float(theta[-1])

    def _evaluate(self, theta: np.ndarray, tau: float, derivatives: bool):
        """``F_tau`` at ``theta``; with ``derivatives`` also the slope weights ``w`` (N, K), the level
        probabilities per group, the signed slopes ``alpha_nk sign_nk`` and the expected margins
        ``E_q[u]`` (N, K) of the (sample, slope) pairs."""
        intercept, coef, lam = self._split(theta)
        margin = self.sigma * self.inst.scores(intercept, coef)                           # sigma_n f_n
        slope = self.alpha * self.sign                                                    # (N, K)
        # alpha_nk u_nk - L*(alpha_nk) - lambda kappa_nk, u_nk = sign_nk sigma_n f_n - r_n (a flip negates sigma)
        h = self.alpha * (self.sign * margin[:, None] - self.shift[:, None]) - self.conj - lam * self.kappa
        expected = margin[:, None] * np.ones_like(slope)                                  # sigma_n E_q[f]
        parts = []
        for g in self.groups:
            if g.binary:   # log(1 + exp(x)), x the other level's (change - lambda cost) / tau
                w1 = coef[g.cols[:, 1]]                                                    # (m,)
                change = self.sigma[:, None] * w1[None, :] * g.toward_one                   # (N, m)
                x = (slope[:, :, None] * change[:, None, :] - lam * g.other_cost[:, None, :]) / tau
                small = np.exp(-np.abs(x))                  # log(1 + e^x) = max(x, 0) + log1p(e^-|x|)
                h += tau * (np.sum(np.maximum(x, 0.0), axis=2) + np.sum(np.log1p(small), axis=2))
                if derivatives:                              # q = e^x / (1 + e^x) of the other level
                    q = np.where(x >= 0.0, 1.0, small) / (1.0 + small)
                    expected += np.einsum("nkl,nl->nk", q, change)
                    parts.append(q)
                continue
            w = np.where(g.cols >= 0, coef[np.maximum(g.cols, 0)], 0.0)                   # (m, a)
            rows = np.arange(w.shape[0])[None, :]
            change = self.sigma[:, None, None] * (w[None] - w[rows, g.own][:, :, None])    # (N, m, a)
            e = (slope[:, :, None, None] * change[:, None] - lam * g.cost[:, None]) / tau  # (N, K, m, a)
            top = np.max(e, axis=3, keepdims=True)
            np.exp(e - top, out=e)
            total = np.sum(e, axis=3, keepdims=True)
            h += tau * np.sum(top[..., 0] + np.log(total[..., 0]), axis=2)
            if derivatives:
                e /= total
                expected += np.einsum("nkla,nla->nk", e, change)
                parts.append(e)                                                            # q: (N, K, m, a)
        top = np.max(h, axis=1, keepdims=True)
        weight = np.exp((h - top) / tau)
        total = np.sum(weight, axis=1, keepdims=True)
        phi = top[:, 0] + tau * np.log(total[:, 0])
        value = lam * self.inst.radius + float(self.p @ phi)
        if not derivatives:
            return value
        ubar = self.sign * expected - self.shift[:, None]
        return value, weight / total, parts, slope, ubar

    def value(self, theta: np.ndarray, tau: float, mu: float) -> float:
        if not self.barrier.feasible(theta):
            return np.inf
        return self._evaluate(theta, tau, False) + self.barrier(theta, mu)[0]

    def derivatives(self, theta: np.ndarray, tau: float, mu: float):
        """``F_tau``'s value, gradient and Hessian (module docstring) plus the cone barrier's.

        ``grad h_nk`` is formed only for the pairs with weight ``p_n w_nk > WEIGHT_DROP`` (near the optimum a
        few per sample); the gradient is ``sum_n p_n`` of the per-sample means, which need only sums over ``k``."""
        value, weight, parts, slope, _ = self._evaluate(theta, tau, True)
        N, K = weight.shape
        d = self.dim
        s = slope * self.sigma[:, None]                                           # (N, K)
        wp = weight * self.p[:, None]
        n_idx, k_idx = np.nonzero(wp > WEIGHT_DROP)
        s_kept = s[n_idx, k_idx]
        ws = weight * s
        hess = np.zeros((d, d))
        mean = np.zeros((N, d))                                   # sum_k w_nk grad h_nk
        mean[:, :-1] = ws.sum(axis=1)[:, None] * self.base
        kept = np.zeros((n_idx.size, d))                          # grad h_nk of the kept pairs
        kept[:, :-1] = s_kept[:, None] * self.base[n_idx]
        cbar = self.kappa.copy()
        omega = wp / tau
        lam_lam = 0.0
        for g, q in zip(self.groups, parts):
            cols = g.cols
            pcols = self.offset + cols[:, 1:]                                                # (m, a - 1)
            if g.binary:   # q = probability of the other level; the level-1 dummy moves by +-q
                toward = g.toward_one
                co = g.other_cost
                cbar += np.einsum("nkl,nl->nk", q, co)
                mean[:, pcols[:, 0]] += np.einsum("nk,nkl->nl", ws, q) * toward
                kept[:, pcols[:, 0]] += (s_kept[:, None] * toward[n_idx]) * q[n_idx, k_idx]
                var = q * (1.0 - q)
                diag = np.einsum("nk,nkl->l", omega * s * s, var)
                lam_col = -np.einsum("nk,nkl,nl->l", omega * s, var, co * toward)
                lam_lam += float(np.einsum("nk,nkl,nl->", omega, var, co * co))
                hess[pcols[:, 0], pcols[:, 0]] += diag
                hess[pcols[:, 0], d - 1] += lam_col
                hess[d - 1, pcols[:, 0]] += lam_col
                continue
            m, a = cols.shape
            level_cost = np.einsum("nkla,nla->nkl", q, g.cost)                              # (N, K, m)
            cbar += level_cost.sum(axis=2)
            qc = q[..., 1:]                                                                  # levels with a column
            own = (g.own[:, :, None] == np.arange(1, a)[None, None, :]).reshape(N, -1)       # (N, m (a - 1))
            flat = pcols.ravel()
            mean[:, flat] += np.einsum("nk,nkla->nla", ws, qc).reshape(N, -1) - ws.sum(axis=1)[:, None] * own
            kept[:, flat] += s_kept[:, None] * (qc[n_idx, k_idx].reshape(n_idx.size, -1) - own[n_idx])
            # within-feature covariances, weighted by omega = p_n w_nk / tau
            os2 = omega * s * s
            diag = np.einsum("nk,nkla->la", os2, qc)
            cov = -np.einsum("nk,nkla,nklb->lab", os2, qc, qc, optimize=True)
            idx = np.arange(a - 1)
            cov[:, idx, idx] += diag
            lam_col = -np.einsum("nk,nkla->la", omega * s, qc * (g.cost[:, None, :, 1:] - level_cost[..., None]))
            lam_lam += float(np.einsum("nk,nkla,nla->", omega, q, g.cost ** 2)
                             - np.einsum("nk,nkl->", omega, level_cost ** 2))
            np.add.at(hess, (pcols[:, :, None], pcols[:, None, :]), cov)
            np.add.at(hess, (pcols, d - 1), lam_col)
            np.add.at(hess, (d - 1, pcols), lam_col)
        hess[-1, -1] += lam_lam
        mean[:, -1] = -np.einsum("nk,nk->n", weight, cbar)
        kept[:, -1] = -cbar[n_idx, k_idx]
        grad = self.p @ mean
        grad[-1] += self.inst.radius
        # between-slope covariance (1/tau) sum_n p_n Cov_w(grad h_n.)
        kept *= np.sqrt(wp[n_idx, k_idx] / tau)[:, None]
        hess += kept.T @ kept
        centered = mean * np.sqrt(self.p / tau)[:, None]
        hess -= centered.T @ centered
        bv, bg, bh = self.barrier(theta, mu)
        return value + bv, grad + bg, hess + bh

    def refine_slopes(self, theta: np.ndarray, tau: float, width: float) -> None:
        """Move each sample's local slope slots to its active margins: for the ``LOCAL_PAIRS`` heaviest (sample,
        slope) pairs of each label sign, ``L'(E_q[u] + width o)`` for the offsets ``o`` in ``LOCAL_OFFSETS`` -- the
        tangents of ``L`` where the smoothed optimum's rows are, so that the grid's tangent error vanishes there
        as ``width`` shrinks with ``tau``."""
        from ...losses.conjugate import conjugate, slope_domain
        if not self.local.any():
            return
        _, weight, _, _, ubar = self._evaluate(theta, tau, True)
        lo, hi = slope_domain(self.inst.loss)
        N = weight.shape[0]
        offsets = np.asarray(LOCAL_OFFSETS, dtype=float)
        for sign in np.unique(self.sign[0]):
            entries = np.flatnonzero(self.sign[0] == sign)
            slots = entries[self.local[entries]]
            ranked = entries[np.argsort(-weight[:, entries], axis=1)[:, :LOCAL_PAIRS]]   # (N, pairs)
            centers = np.take_along_axis(ubar, ranked, axis=1)                             # (N, pairs)
            u = (centers[:, :, None] + width * offsets[None, None, :]).reshape(N, -1)[:, :slots.size]
            self.alpha[:, slots] = np.clip(np.asarray(self.inst.loss.derivative(u), dtype=float), lo, hi)
        local = np.flatnonzero(self.local)
        self.conj[:, local] = np.asarray(conjugate(self.inst.loss, self.alpha[:, local].ravel()),
                                         dtype=float).reshape(N, -1)

    def dual_point(self, theta: np.ndarray, tau: float):
        """The smoothed problem's dual point at ``theta``: masses ``p_n w_nk`` on the fractional rows of the
        (sample, slope) pairs -- each the product of its level distributions ``q_nkl`` -- with slopes
        ``alpha_nk``, for :func:`drokit.evaluation.lower_bound.lagrangian_bound`.  At a stationary point of
        ``F_tau`` the free-column conditions hold (``grad F_tau`` is their residual) and the bound is
        ``F_tau - tau`` (the entropies of ``w`` and ``q``)."""
        from ...evaluation.lower_bound import FractionalRows
        _, weight, parts, _, _ = self._evaluate(theta, tau, True)
        mass = weight * self.p[:, None]
        n_idx, k_idx = np.nonzero(mass > DUAL_MASS_DROP * self.p[:, None])
        P = n_idx.size
        rows = self.base[n_idx].copy()
        cost = self.kappa[n_idx, k_idx].copy()
        for g, q in zip(self.groups, parts):
            pcols = self.offset + g.cols[:, 1:]
            qq = q[n_idx, k_idx]
            if g.binary:
                rows[:, pcols[:, 0]] += qq * g.toward_one[n_idx]
                cost += np.einsum("pl,pl->p", qq, g.other_cost[n_idx])
                continue
            a = g.cols.shape[1]
            own = (g.own[n_idx][:, :, None] == np.arange(1, a)[None, None, :]).reshape(P, -1)
            rows[:, pcols.ravel()] += qq[..., 1:].reshape(P, -1) - own
            cost += np.einsum("pla,pla->p", qq, g.cost[n_idx])
        fractional = FractionalRows(sample=n_idx, flip=self.sign[n_idx, k_idx] < 0, cost=cost,
                                    matrix=sp.csr_matrix(rows))
        return fractional, mass[n_idx, k_idx], self.alpha[n_idx, k_idx].copy()

    def dominant_rows(self, theta: np.ndarray, tau: float, threshold: float = 1e-3) -> ConfigurationRows:
        """The most probable configuration of every (sample, slope) pair whose weight ``w_nk`` is at least
        ``threshold``: the rows the smoothed optimum leans on."""
        from ...oracles.base import configuration_rows
        _, weight, parts, _, _ = self._evaluate(theta, tau, True)
        n_idx, k_idx = np.nonzero(weight >= threshold)
        Z = self.inst.data.Z[n_idx].copy()
        mutable = self.inst.mutable_categorical()
        levels = np.asarray(self.inst.schema.levels)[mutable]
        for g, q in zip(self.groups, parts):
            feats = mutable[np.flatnonzero(levels == g.cols.shape[1])]
            if g.binary:
                own = g.own[n_idx]
                Z[:, feats] = np.where(q[n_idx, k_idx] > 0.5, 1 - own, own)
            else:
                Z[:, feats] = np.argmax(q[n_idx, k_idx], axis=2)
        distance = self.inst.metric.categorical_distance(Z, self.inst.data.Z[n_idx])
        return configuration_rows(self.inst, n_idx, Z, distance, self.sign[n_idx, k_idx] < 0)


@dataclass
class SlopeSplitResult:
    intercept: float
    coef: np.ndarray
    lam: float
    upper_bound: float             # exact objective at the best point (the oracle's)
    lower_bound: float             # the best repaired Lagrangian bound of the smoothed dual points (-inf: none)
    certified: bool                # upper - lower <= certify_tol max(1, |upper|)
    dual: object                   # the LowerBound that proves lower_bound (None: none)
    s: np.ndarray                  # per-sample maxima at the best point
    rows: ConfigurationRows        # the nominal rows, the oracle's maximizers and the dominant rows at the best point
    tau: float
    solves: int
    newton_steps: int
    oracle_calls: int
    seconds: float
    bound_seconds: float = 0.0
    objective: Optional[SlopeSplitObjective] = None   # with its slopes as refined at the end


def _polish(objective: SlopeSplitObjective, theta: np.ndarray, tau: float, mu: float,
            steps: int = POLISH_STEPS) -> tuple[np.ndarray, int]:
    """Full Newton steps, each kept only when it shrinks the gradient: the damped method stops at a decrement of
    ``1e-3 tau``, and the dual point's free-column conditions need the gradient near rounding (the repair then
    moves the slopes by that much only)."""
    free = objective.free
    _, grad, hess = objective.derivatives(theta, tau, mu)
    taken = 0
    for _ in range(steps):
        try:
            step = -np.linalg.solve(hess[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            break
        trial = theta.copy()
        trial[free] += step
        if not objective.barrier.feasible(trial):
            break
        _, g2, h2 = objective.derivatives(trial, tau, mu)
        if not np.max(np.abs(g2[free])) < np.max(np.abs(grad[free])):
            break
        theta, grad, hess, taken = trial, g2, h2, taken + 1
    return theta, taken


def slope_split_search(inst: DROInstance, oracle, *, tau0: float = 1e-1, tau_min: float = 1e-7,
                       certify_tol: Optional[float] = None, grid_size: int = GRID_SIZE,
                       log: Optional[Callable[[str], None]] = None, control=None) -> SlopeSplitResult:
    """Minimize ``F_tau`` for ``tau = tau0, tau0 / 10, ...`` (times ``max(1, |F|)`` at the start) by Newton's method
    from ``beta = 0``, ``lambda = 2 lip(L)``: the exact objective at each end point by the oracle (the best is
    kept), then -- with ``certify_tol`` -- the repaired Lagrangian bound of the smoothed dual point
    (:meth:`SlopeSplitObjective.dual_point`); stops when they agree to ``certify_tol`` (relative to
    ``max(1, |upper|)``) or below ``tau_min``.  Between temperatures each sample's local slopes move to its
    active margins (:meth:`SlopeSplitObjective.refine_slopes`, width ``sqrt(tau)``)."""
    from ...evaluation.lower_bound import lagrangian_bound
    from ...evaluation.worst_case import lambda_floor
    from ...oracles.enumeration import enumerate_configurations
    from .phase_one import _newton
    t0 = time.perf_counter()
    objective = SlopeSplitObjective(inst, grid_size)
    N = inst.n_samples
    zeros = np.zeros(N)

    def exact(theta_):
        intercept_, coef_, lam_ = objective._split(theta_)
        lam_ = max(lam_, lambda_floor(inst, coef_))
        sep_ = oracle.separate(intercept_, coef_, lam_, zeros)
        return float(lam_ * inst.radius + inst.p @ sep_.violation), sep_

    theta = np.zeros(objective.dim)
    theta[-1] = 2.0 * (float(inst.loss.lipschitz) + objective.barrier.lam0)
    upper, sep = exact(theta)
    best, best_sep, best_tau = theta.copy(), sep, tau0
    scale = max(1.0, abs(upper))
    tau, steps, calls, solves = tau0 * scale, 0, 1, 0
    lower, dual, bound_time, certified = -np.inf, None, 0.0, False
    while True:
        theta, k = _newton(objective, theta, tau, 0.1 * tau, max_steps=MAX_STEPS)
        polished = 0
        if certify_tol is not None:
            theta, polished = _polish(objective, theta, tau, 0.1 * tau)
        steps += k + polished
        solves += 1
        value, sep = exact(theta)
        calls += 1
        if value < upper:
            upper, best, best_sep, best_tau = value, theta.copy(), sep, tau
        if certify_tol is not None:
            tb = time.perf_counter()
            bound = lagrangian_bound(inst, *objective.dual_point(theta, tau), bvls=False)
            bound_time += time.perf_counter() - tb
            if lower < bound.value <= upper + 1e-9 * max(1.0, abs(upper)):    # above upper: wrongly evaluated
                lower, dual = bound.value, bound
            certified = upper - lower <= certify_tol * max(1.0, abs(upper))
        if log is not None:
            log(f"slope split: tau {tau:.0e}, {k} + {polished} Newton steps, exact {value:.9f}, best {upper:.9f}"
                + (f", lower {lower:.9f}" if np.isfinite(lower) else "") + f", {time.perf_counter() - t0:.2f} s")
        if control is not None:
            control.progress("slope split", f"smoothing {tau:.0e}, best value {upper:.9g}")
            if control.should_stop():
                break
        if certified or tau <= tau_min * scale * (1 + 1e-9):
            break
        objective.refine_slopes(theta, tau, np.sqrt(tau))
        tau *= 0.1
    intercept, coef, lam = objective._split(best)
    lam = max(lam, lambda_floor(inst, coef))
    dominant = objective.dominant_rows(best, best_tau)
    rows = unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True), best_sep.rows, dominant]))
    return SlopeSplitResult(intercept=intercept, coef=coef, lam=lam, upper_bound=upper, lower_bound=lower,
                            certified=certified, dual=dual, s=best_sep.violation, rows=rows, tau=tau, solves=solves,
                            newton_steps=steps, oracle_calls=calls, seconds=time.perf_counter() - t0,
                            bound_seconds=bound_time, objective=objective)


def use_slope_split(inst: DROInstance, search: str) -> str:
    """When the cutting plane searches with this method: ``"first"`` (``search="slope_split"``, where it applies;
    else :class:`~drokit.exceptions.ParameterError`), ``"fallback"`` (``search="auto"``: after a phase 1 that stopped
    unconverged -- its working set still churning -- where the split applies and its arrays hold at most
    ``AUTO_MAX_ENTRIES`` entries) or ``"never"``."""
    from ...exceptions import ParameterError
    if search == "phase_one":
        return "never"
    ok, why = slope_split_applies(inst)
    if search == "slope_split":
        if not ok:
            raise ParameterError(f"cutting-plane option search='slope_split' does not apply: {why}")
        return "first"
    if not ok:
        return "never"
    from .budget_cuts import weight_classes
    mutable, classes = weight_classes(inst)
    levels = np.asarray(inst.schema.levels)[mutable]
    entries = inst.n_samples * (GRID_SIZE + 2 * LOCAL_SLOPES) * int(np.sum(levels))
    wide = mutable.size >= FALLBACK_MIN_FEATURES and np.unique(classes).size >= FALLBACK_MIN_CLASSES
    return "fallback" if wide and entries <= AUTO_MAX_ENTRIES else "never"


def slope_split_phase_one(inst: DROInstance, oracle, *, certify_tol: Optional[float] = None,
                          log: Optional[Callable[[str], None]] = None, control=None):
    """:func:`slope_split_search` to ``SEARCH_TAU_MIN``, as the cutting plane's phase 1
    (:class:`~.phase_one.PhaseOneResult`, ``search="slope_split"``): its best point and exact value, its
    bound, and the rows it leans on (nominal rows, the oracle's maximizers, the dominant rows) as the bundle
    that seeds the masters."""
    from .phase_one import PhaseOneResult
    out = slope_split_search(inst, oracle, tau_min=SEARCH_TAU_MIN, certify_tol=certify_tol, log=log, control=control)
    return PhaseOneResult(intercept=out.intercept, coef=out.coef, lam=out.lam, s=out.s, upper_bound=out.upper_bound,
                          bundle=out.rows, rounds=out.solves, converged=True, newton_steps=out.newton_steps,
                          oracle_calls=out.oracle_calls, seconds=out.seconds, lower_bound=out.lower_bound,
                          certified=out.certified, dual=out.dual, bound_seconds=out.bound_seconds,
                          working_rows=int(out.rows.size), tau=out.tau, search="slope_split")

