"""Phase 1 of the cutting plane: a smoothed Newton search on the exact objective, driven by the oracle.

The parameter vector is tiny (``theta = (beta_0, beta, lambda)``: tens of numbers) while the number of
configuration rows is astronomically large.  The exact DRO objective (belbasi2023 (3), sun2025 (3))

    F(theta) = lambda eps + (1/N) sum_n max_k ( L(u_k(beta)) - lambda c_k )
    s.t.       lambda >= lambda_min(beta) = lip(L) ||Gamma^{-1} beta_x||_*

is convex, and one call of an exact separation oracle (at ``s = 0``) returns every maximum and its
maximizing row, hence ``F`` itself.  This phase minimizes it approximately, to find where the active
rows are, before the exact conic master certifies the optimum (:mod:`.cutting_plane`):

1. Keep a working set ``W_n`` of rows per sample (at first: the nominal row and the oracle's row).
2. Minimize the *entropic smoothing* of the restricted problem, with temperature ``tau``:

       F_tau(theta) = lambda eps + (1/N) sum_n tau log sum_{r in W_n} exp(v_r(theta) / tau)
                      - tau sum_j log g_j(theta),

   where ``v_r = L(u_r) - lambda c_r`` for smooth losses, and for piecewise-affine losses
   ``L = max_j (a_j e + b_j)`` every row is split into one term per piece, ``v_{r,j} = a_j u_r + b_j -
   lambda c_r``, so ``F_tau`` is smooth for every loss.  ``g_j >= 0`` are the constraints on
   ``(beta_x, lambda)`` with a logarithmic barrier (``lambda >= |lip beta_j / gamma_j|`` for the
   l1 cost's dual norm l_inf, the second-order cone for l2, ``lambda >= lip ||.||_q`` otherwise, and
   ``lambda >= 0``).  ``max <= softmax <= max + tau log |W_n|``.
3. The minimization is Newton's method with a backtracking line search: the Hessian is
   ``(1/N) [A' diag(p L'') A + (1/tau) (J' diag(p) J - G' G)]`` (softmax weights ``p``, row gradients
   ``J``, per-sample mean gradients ``G``) plus the barrier's, a dense (d+2) x (d+2) matrix built from
   sparse products, so every Newton step costs ``O(|W| d^2)``.
4. The oracle at the new point gives the exact ``F`` there (an upper bound: the point is feasible) and
   every sample's maximizing row, which joins ``W``; when it adds nothing significant, ``tau`` shrinks
   tenfold, down to ``tau_min``.

It returns the best point, its exact value (a certified upper bound on the optimal value) and the
*bundle*: the rows of ``W`` within ``margin`` of their sample's maximum at that point.  Seeding the exact
conic master with the bundle lets the cutting plane start where the active set already is, instead of
growing it one master at a time from the nominal rows (20 masters of up to 8,500 rows on credit-approval
without this phase; benchmarks/RESULTS.md).  The certificate still comes from the conic master.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ...models.instance import DROInstance
from ...oracles.enumeration import (ConfigurationRows, concat_rows, enumerate_configurations, row_keys,
                                    take_rows, unique_rows)
from .dual import row_design


@dataclass
class PhaseOneResult:
    intercept: float
    coef: np.ndarray
    lam: float                 # max(lambda_hat, lambda_min): feasible for the full problem
    s: np.ndarray              # per-sample maxima max_k (l_k - lam c_k) at the point
    upper_bound: float         # exact F at (beta_hat, lam) = lam eps + mean(s)
    bundle: ConfigurationRows  # near-active rows at the point (every sample's maximizer included)
    rounds: int                # Newton solves
    converged: bool            # tau reached tau_min with no significant row missing (not stopped by max_solves)
    newton_steps: int
    oracle_calls: int
    seconds: float


def near_active(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray,
                lam: float, margin: float) -> ConfigurationRows:
    """Rows whose ``l_k - lam c_k`` is within ``margin`` of their sample's maximum over ``rows``."""
    from ...evaluation.worst_case import row_losses
    value = row_losses(inst, rows, intercept, coef) - lam * rows.cost
    best = np.full(inst.n_samples, -np.inf)
    np.maximum.at(best, rows.sample, value)
    return take_rows(rows, np.flatnonzero(value >= best[rows.sample] - margin))


# --------------------------------------------------------------------------- the (beta_x, lambda) barrier
class _Barrier:
    """``-mu sum_j log g_j(theta)`` for the constraints on ``(beta_x, lambda)``; value, gradient, Hessian.

    ``theta = (params, lambda)``; ``cols`` are the positions of the numerical coefficients with
    ``0 < gamma_j < inf`` in ``params``, ``w_j = lip beta_j / gamma_j``.
    """

    def __init__(self, inst: DROInstance, cols: np.ndarray, scale: np.ndarray, dim: int):
        self.cols, self.scale, self.dim = cols, scale, dim
        self.q = inst.metric.dual_p

    def feasible(self, theta: np.ndarray) -> bool:
        lam = theta[-1]
        if lam <= 0:
            return False
        if self.cols.size == 0:
            return True
        w = theta[self.cols] * self.scale
        return bool(lam - np.linalg.norm(w, ord=self.q) > 0)

    def __call__(self, theta: np.ndarray, mu: float):
        d = self.dim
        lam = theta[-1]
        grad = np.zeros(d)
        hess = np.zeros((d, d))
        value = -mu * np.log(lam)
        grad[-1] -= mu / lam
        hess[-1, -1] += mu / lam ** 2
        if self.cols.size == 0:
            return value, grad, hess
        w = theta[self.cols] * self.scale
        idx = np.r_[self.cols, d - 1]
        if np.isinf(self.q):   # lam - w_j > 0 and lam + w_j > 0, linear
            for sign in (-1.0, 1.0):
                g = lam + sign * w
                value -= mu * float(np.sum(np.log(g)))
                # d g / d beta_j = sign * scale_j, d g / d lam = 1
                grad[self.cols] -= mu * sign * self.scale / g
                grad[-1] -= mu * float(np.sum(1.0 / g))
                c = mu / g ** 2
                hess[self.cols, self.cols] += c * self.scale ** 2
                hess[self.cols, -1] += c * sign * self.scale
                hess[-1, self.cols] += c * sign * self.scale
                hess[-1, -1] += float(c.sum())
            return value, grad, hess
        if self.q == 2:        # second-order cone lam^2 - ||w||^2 > 0 (with lam > 0)
            g = lam ** 2 - float(w @ w)
            dg = np.r_[-2.0 * w * self.scale, 2.0 * lam]
            d2g = np.diag(np.r_[-2.0 * self.scale ** 2, 2.0])
        else:                  # lam - ||w||_q > 0; Gauss-Newton curvature (the norm's Hessian dropped)
            a = np.sqrt(w ** 2 + 1e-24)
            norm = float(np.sum(a ** self.q) ** (1.0 / self.q))
            g = lam - norm
            dnorm = (a / norm) ** (self.q - 1) * (w / a) * self.scale
            dg = np.r_[-dnorm, 1.0]
            d2g = np.zeros((idx.size, idx.size))
        value -= mu * np.log(g)
        grad[idx] -= mu * dg / g
        hess[np.ix_(idx, idx)] += mu * (np.outer(dg, dg) / g ** 2 - d2g / g)
        return value, grad, hess


# --------------------------------------------------------------------------- the smoothed master
#: the smoothed master keeps a dense copy of its term design when it has at most this many entries
#: (8e6: 64 MB; nursery's bundles, 60,000 terms x 28 columns, are dense)
DENSE_TERMS_LIMIT = 8_000_000


class _SmoothedMaster:
    """``F_tau`` over a working set (module docstring, item 2), with value, gradient and Hessian."""

    def __init__(self, inst: DROInstance, rows: ConfigurationRows, free: np.ndarray, barrier: _Barrier):
        self.inst, self.free, self.barrier = inst, free, barrier
        self.center, self.prox = None, 0.0   # proximal term prox/2 ||theta - center||^2 (bundle step)
        rows = take_rows(rows, np.argsort(rows.sample, kind="stable"))
        self.rows = rows
        self.keys = set(row_keys(rows))
        A = row_design(inst, rows)
        if inst.fit_intercept:
            A = sp.hstack([sp.csr_matrix(np.ones((rows.size, 1))), A], format="csr")
        sigma, shift = inst.row_signs(rows.sample, rows.flip)
        pieces = inst.loss.pieces
        if pieces is None:
            self.slope = self.offset = None
            rep = np.arange(rows.size)
        else:   # one term per (row, piece)
            a, b = pieces
            rep = np.repeat(np.arange(rows.size), len(a))
            self.slope = np.tile(a, rows.size)
            self.offset = np.tile(b, rows.size)
        self.A = A[rep] if pieces is not None else A
        # dense copy when small: each Newton step's products are then BLAS calls, not scipy.sparse
        # constructions (balance-scale, unit weights: phase 1 was 80 % of a 0.1 s fit, mostly in
        # scipy.sparse overhead)
        shape = self.A.shape
        self.dense = self.A.toarray() if shape[0] * (shape[1] + 1) <= DENSE_TERMS_LIMIT else None
        self.sigma, self.shift, self.cost = sigma[rep], shift[rep], rows.cost[rep]
        self.sample = rows.sample[rep]
        self.starts = np.flatnonzero(np.r_[True, np.diff(self.sample) != 0])
        self.segment = np.repeat(np.arange(self.starts.size), np.diff(np.r_[self.starts, self.sample.size]))
        self.log_count = float(np.log(np.diff(np.r_[self.starts, self.sample.size]).max()))
        self.n_terms = self.sample.size

    def terms(self, theta: np.ndarray):
        u = self.sigma * ((self.A if self.dense is None else self.dense) @ theta[:-1]) - self.shift
        if self.slope is None:
            loss = self.inst.loss
            return u, loss.value(u), loss.derivative(u), loss.second_derivative(u)
        return u, self.slope * u + self.offset, self.slope, None

    def value(self, theta: np.ndarray, tau: float, mu: float) -> float:
        if not self.barrier.feasible(theta):
            return np.inf
        _, ell, _, _ = self.terms(theta)
        v = ell - theta[-1] * self.cost
        top = np.maximum.reduceat(v, self.starts)
        phi = top + tau * np.log(np.add.reduceat(np.exp((v - top[self.segment]) / tau), self.starts))
        bv, _, _ = self.barrier(theta, mu)
        return theta[-1] * self.inst.radius + float(phi.sum()) / self.inst.n_samples + bv + self._prox(theta)

    def _prox(self, theta: np.ndarray) -> float:
        if not self.prox:
            return 0.0
        d = theta - self.center
        return 0.5 * self.prox * float(d @ d)

    def derivatives(self, theta: np.ndarray, tau: float, mu: float):
        inst, N = self.inst, self.inst.n_samples
        _, ell, slope, curv = self.terms(theta)
        v = ell - theta[-1] * self.cost
        top = np.maximum.reduceat(v, self.starts)
        e = np.exp((v - top[self.segment]) / tau)
        total = np.add.reduceat(e, self.starts)
        phi = top + tau * np.log(total)
        p = e / total[self.segment]
        # row gradients J_r = [slope_r sigma_r a_r, -c_r]; G = per-sample sums of p_r J_r
        if self.dense is not None:
            J = np.column_stack([(slope * self.sigma)[:, None] * self.dense, -self.cost])
            pJ = p[:, None] * J
            grad = pJ.sum(axis=0) / N
            G = np.add.reduceat(pJ, self.starts, axis=0)
            hess = (J.T @ pJ - G.T @ G) / (tau * N)
        else:
            J = sp.hstack([sp.diags(slope * self.sigma) @ self.A, sp.csr_matrix(-self.cost[:, None])],
                          format="csr")
            grad = (J.T @ p) / N
            P = sp.csr_matrix((p, (self.segment, np.arange(self.n_terms))),
                              shape=(self.starts.size, self.n_terms))
            G = (P @ J).toarray()
            Jp = sp.diags(np.sqrt(p)) @ J
            hess = ((Jp.T @ Jp).toarray() - G.T @ G) / (tau * N)
        grad[-1] += inst.radius
        if curv is not None and np.any(curv):
            if self.dense is not None:
                hess[:-1, :-1] += self.dense.T @ ((p * curv)[:, None] * self.dense) / N
            else:
                Ac = sp.diags(np.sqrt(p * curv)) @ self.A
                hess[:-1, :-1] += (Ac.T @ Ac).toarray() / N
        bv, bg, bh = self.barrier(theta, mu)
        value = theta[-1] * inst.radius + float(phi.sum()) / N + bv + self._prox(theta)
        grad, hess = grad + bg, hess + bh
        if self.prox:
            grad = grad + self.prox * (theta - self.center)
            hess[np.diag_indices_from(hess)] += self.prox
        return value, grad, hess


def _newton(master: _SmoothedMaster, theta: np.ndarray, tau: float, mu: float,
            max_steps: int = 60) -> Tuple[np.ndarray, int]:
    """Newton's method with Levenberg-Marquardt damping ``(H + nu I) d = -g`` on the free coordinates.

    A step is taken when the actual decrease is at least a quarter of the quadratic model's; ``nu``
    grows fourfold after a rejected step and shrinks fourfold after a very good one (the softmax's
    curvature changes on the scale ``tau``, so undamped steps far from the minimizer overshoot).
    Stops when the Newton decrement ``g' H^{-1} g`` is below ``1e-3 tau``.
    """
    free = master.free
    value, grad, hess = master.derivatives(theta, tau, mu)
    nu = 0.0
    steps = 0
    for steps in range(1, max_steps + 1):
        g, H = grad[free], hess[np.ix_(free, free)]
        scale = max(1e-300, float(np.trace(H)) / H.shape[0])
        eye = np.eye(H.shape[0])
        try:
            newton = -np.linalg.solve(H + 1e-12 * scale * eye, g)
        except np.linalg.LinAlgError:
            newton = -g
        if -float(g @ newton) < 1e-3 * tau:
            break
        accepted = False
        for _ in range(30):
            d = newton if nu == 0.0 else -np.linalg.solve(H + nu * eye, g)
            predicted = -(float(g @ d) + 0.5 * float(d @ H @ d))
            step = np.zeros_like(theta)
            step[free] = d
            trial = master.value(theta + step, tau, mu)
            ratio = (value - trial) / predicted if predicted > 0 else -1.0
            if ratio >= 0.25:
                accepted = True
                break
            nu = max(4.0 * nu, 1e-6 * scale)
        if not accepted:
            break
        theta = theta + step
        if ratio > 0.75:
            nu = nu / 4.0 if nu > 1e-9 * scale else 0.0
        value, grad, hess = master.derivatives(theta, tau, mu)
    return theta, steps


def phase_one(inst: DROInstance, oracle, *, tau0: float = 1e-1, tau_min: float = 1e-4,
              margin: float = 1e-2, max_solves: int = 60, prox: float = 1.0,
              log: Optional[Callable[[str], None]] = None) -> PhaseOneResult:
    """Approximate minimization of the exact objective by smoothed Newton cutting planes (module
    docstring); returns the best point, its certified upper bound and the near-active bundle."""
    from ...evaluation.worst_case import lambda_floor
    t0 = time.perf_counter()
    N = inst.n_samples
    zeros = np.zeros(N)
    n_params = inst.schema.n_encoded + (1 if inst.fit_intercept else 0)
    dim = n_params + 1
    offset = 1 if inst.fit_intercept else 0
    gamma = inst.metric.gamma
    numerical = np.arange(inst.n_numerical)
    fixed = offset + numerical[gamma == 0]          # gamma = 0: beta_j = 0 (free to move at no cost)
    limited = numerical[np.isfinite(gamma) & (gamma > 0)]
    barrier = _Barrier(inst, offset + limited, float(inst.loss.lipschitz) / gamma[limited], dim)
    free = np.setdiff1d(np.arange(dim), fixed)

    def split(theta_):
        intercept = float(theta_[0]) if inst.fit_intercept else 0.0
        return intercept, theta_[offset:-1], float(theta_[-1])

    def exact(theta_):
        intercept, coef, lam = split(theta_)
        lam = max(lam, lambda_floor(inst, coef))
        sep = oracle.separate(intercept, coef, lam, zeros)
        return float(lam * inst.radius + inst.p @ sep.violation), sep

    theta = np.zeros(dim)
    theta[-1] = 2.0 * float(inst.loss.lipschitz)   # beta = 0: strictly feasible, maximizers nominal
    upper, sep = exact(theta)
    best, best_sep = theta.copy(), sep
    rows = concat_rows([enumerate_configurations(inst, nominal_only=True), sep.rows])
    master = _SmoothedMaster(inst, unique_rows(rows), free, barrier)
    tau, calls, steps, solves = tau0 * max(1.0, abs(upper)), 1, 0, 0
    floor = tau_min * max(1.0, abs(upper))
    converged = False
    while solves < max_solves:
        master.center, master.prox = best, prox * tau
        theta, k = _newton(master, theta, tau, tau / N)
        steps += k
        solves += 1
        value, sep = exact(theta)
        calls += 1
        if value < upper:
            upper, best, best_sep = value, theta.copy(), sep
        fresh = np.asarray([i for i, key in enumerate(row_keys(sep.rows)) if key not in master.keys], int)
        # the smoothed model's own maximum at theta: how much the new rows matter
        master.prox = 0.0
        model = master.value(theta, tau, 0.0) - tau * master.log_count
        if log is not None:
            log(f"phase 1 solve {solves:>3}: tau {tau:.0e} exact {value:.9f} best {upper:.9f} "
                f"model {model:.9f} rows {master.rows.size} new {fresh.size} ({k} Newton steps)")
        if fresh.size:
            master = _SmoothedMaster(inst, concat_rows([master.rows, take_rows(sep.rows, fresh)]), free, barrier)
        if value - model > 10 * tau and fresh.size:
            continue                       # the working set misses rows that matter at this tau
        if tau <= floor:
            converged = True
            break
        tau = max(floor, tau * 0.1)
    intercept, coef, lam = split(best)
    lam = max(lam, lambda_floor(inst, coef))
    # every row the oracle returned is in the master (new ones are added before any exit)
    bundle = near_active(inst, master.rows, intercept, coef, lam, margin * max(1.0, abs(upper)))
    return PhaseOneResult(intercept=intercept, coef=coef, lam=lam, s=best_sep.violation, upper_bound=upper,
                          bundle=bundle, rounds=solves, converged=converged, newton_steps=steps, oracle_calls=calls,
                          seconds=time.perf_counter() - t0)
