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
above ``WEIGHT_DROP``) and per-feature level covariances.  Newton's method (:func:`.phase_one.damped_newton`) runs
on ``F_tau`` for ``tau`` shrinking tenfold; the oracle gives the exact objective at each end point (a
certified upper bound) and every sample's maximizing row.

The search that minimizes it, bounds it and hands over to the cutting plane's masters is
:mod:`.slope_search`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import List

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, FractionalRows
from .row_terms import cone_barrier_refusal, parameter_layout, split_theta

#: margins ``u`` of the slope grid of a smooth loss
GRID_SIZE = 33
#: (sample, slope) pairs whose weight ``p_n w_nk`` is below this are left out of the Hessian's Gram product
WEIGHT_DROP = 1e-14
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
    least two mutable categorical features, an l_p ground norm (its Newton model's cone barrier)."""
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
    refusal = cone_barrier_refusal(inst)
    if refusal is not None:
        return False, refusal
    return True, ""


def slope_grid(loss, size: int = GRID_SIZE) -> np.ndarray:
    """The slopes ``alpha_k``: a piecewise-affine loss's piece slopes (``L`` is their maximum: exact), else
    ``L'(u)`` at ``size`` margins evenly spaced over ``[-U, U]``, ``U`` the first power of two where ``L'`` is
    within ``1e-9`` of the slope domain's ends, plus the ends themselves."""
    from ..losses.conjugate import slope_domain
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

    @cached_property
    def other_cost(self) -> np.ndarray:
        """Binary features: the cost of the other level ``(N, m)`` (the own level costs 0)."""
        return np.take_along_axis(self.cost, (1 - self.own)[:, :, None], axis=2)[:, :, 0]

    @cached_property
    def toward_one(self) -> np.ndarray:
        """Binary features: ``+1`` where the other level is level 1 (the one with a column), else ``-1``."""
        return 1.0 - 2.0 * self.own


class SlopeSplitObjective:
    """``F_tau`` (module docstring) with value, gradient and Hessian in the interface of
    :func:`.phase_one.damped_newton` (``free``, ``value``, ``derivatives``)."""

    def __init__(self, inst: DROInstance, grid_size: int = GRID_SIZE):
        from ..losses.conjugate import conjugate
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
    def _evaluate(self, theta: np.ndarray, tau: float, derivatives: bool):
        """``F_tau`` at ``theta``; with ``derivatives`` also the slope weights ``w`` (N, K), the level
        probabilities per group, the signed slopes ``alpha_nk sign_nk`` and the expected margins
        ``E_q[u]`` (N, K) of the (sample, slope) pairs."""
        intercept, coef, lam = split_theta(self.inst, theta)
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
        return self._evaluate(theta, tau, False) + self.barrier.value(theta, mu)

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
        from ..losses.conjugate import conjugate, slope_domain
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
        ``alpha_nk``, for :func:`drokit.certificates.lagrangian.lagrangian_bound`.  At a stationary point of
        ``F_tau`` the free-column conditions hold (``grad F_tau`` is their residual) and the bound is
        ``F_tau - tau`` (the entropies of ``w`` and ``q``)."""
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
        from ..oracles.base import configuration_rows
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
        distance = self.inst.metric.categorical_distance(self.inst.data.Z[n_idx], Z)
        return configuration_rows(self.inst, n_idx, Z, distance, self.sign[n_idx, k_idx] < 0)
