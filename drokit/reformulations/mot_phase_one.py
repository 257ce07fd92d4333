"""MOT phase 1: a smoothed Newton search on the MOT-DRO objective, driven by the oracle (the MOT counterpart of the
Wasserstein fits' :mod:`.phase_one`).

Program (D) of ``spec/mot-dro-training.md`` at ``theta = (beta_0, beta, mu)``, ``mu = lambda theta1`` the rows'
multiplier (the Wasserstein ``lambda`` of cost ``d``), with the moment multiplier eliminated (note (D-KL)):

    F(theta) = mu rho / theta1 + A(S(theta), h),        h = mu theta2 / theta1,
    S_n(theta) = max_k L(u_k) - mu c_k                  (the oracle's separation value of sample n),
    A(S, h) = h log sum_n p_n exp(S_n / h)              (KL;  sum_n p_n S_n with theta2 = inf: the weights fixed at 1),

convex in ``theta`` (``A`` is the perspective of a log-sum-exp, nondecreasing in ``S``; each ``S_n`` a maximum of
convex functions).  One oracle call gives ``F(theta)`` exactly: an upper bound on the optimum at every point.  As in
:mod:`.phase_one` the maxima are smoothed over a working set ``W_n`` of rows that the oracle grows,

    S_n^tau(theta) = tau log sum_{k in W_n} exp((L(u_k) - mu c_k) / tau),
    F_tau(theta)   = mu rho / theta1 + A(S^tau(theta), h) - tau_b sum log g(theta) + prox / 2 ||theta - center||^2,

(a piecewise-affine loss split into one term per piece, :class:`.row_terms.RowTerms`; the cone barrier
:class:`.row_terms.ConeBarrier` keeps ``mu > lip ||Gamma^{-1} beta_x||_*``), smooth and convex, minimized by damped
Newton (:func:`.phase_one.damped_newton`) at temperatures ``tau`` shrinking tenfold, with the proximal term around the
best point so far.  Its gradient is ``sum_n w_n grad S_n^tau`` plus the ``h`` terms and its Hessian, with ``w_n = p_n
exp((S_n - A) / h)`` the worst-case weights (sum 1) and ``G_n = grad S_n^tau``,

    sum_n w_n hess S_n^tau + (1 / h) (M' diag(w) M - (M' w)(M' w)'),     M_n = G_n - ((S_n - w'S) / h) dh/dtheta,

(the perspective's Hessian; with ``theta2 = inf`` the last term is absent and ``w = p``).  After each Newton solve the
oracle gives ``F`` at the new point and each sample's maximizing row, which joins ``W``; a temperature ends when the
new rows no longer matter (the exact value within ``10 tau`` of the smoothed model's maximum), after at most
:data:`~.phase_one.FLOOR_SOLVES` solves that still miss rows.

It returns the best point, its exact value and the rows near their sample's maximum there: the start and the first
working set of the cutting plane that certifies (:mod:`drokit.models.mot_problem`: the slope-cut masters of
:mod:`.mot_slope_search`, or the masters over configuration rows).  Nursery (10,368 training rows, KL 0.05): the masters
over nominal rows needed minutes; from phase 1's 23,764 rows one master certifies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ..ambiguity.divergences import get_divergence
from ..instance import DROInstance
from ..oracles.design import GRAM_CHUNK
from ..oracles.enumeration import ConfigurationRows, concat_rows, enumerate_configurations, take_rows, unique_rows
from ..oracles.rows import lambda_floor, row_losses
from .phase_one import FLOOR_SOLVES, SettledSolves, damped_newton, next_temperature, phase_one_applies
from .row_terms import RowTerms, parameter_layout, split_theta

#: the cone barrier's weight relative to ``tau`` (:data:`.phase_one.CONE_BARRIER_WEIGHT`)
CONE_BARRIER_WEIGHT = 0.1
#: the Hessian leaves out the terms whose weight ``w_n q_k`` is below this times ``tau``
HESSIAN_DROP = 1e-12
#: Newton solves at most
MAX_SOLVES = 60


def mot_phase_one_applies(inst: DROInstance, theta1: float, theta2: float, divergence) -> bool:
    """Whether MOT phase 1 applies to the training data ``inst``: samples that move (``theta1 < inf``), the KL
    divergence or weights fixed (``theta2 = inf``), and the Wasserstein phase 1's conditions
    (:func:`.phase_one.phase_one_applies`: no attack or penalty, a finite Lipschitz constant, an l_p ground norm)."""
    if not np.isfinite(theta1):
        return False
    if np.isfinite(theta2) and get_divergence(divergence).name != "kl":
        return False
    return phase_one_applies(inst)


def aggregate(S: np.ndarray, p: np.ndarray, h: float):
    """``(A, w, dA/dh)`` of the module docstring at ``h`` (``h = inf``: ``p'S``, ``p``, 0)."""
    if not np.isfinite(h):
        return float(p @ S), p, 0.0
    value = float(h * logsumexp(S / h, b=p))
    w = p * np.exp((S - value) / h)
    return value, w, (value - float(w @ S)) / h


class _MOTSmoothed(RowTerms):
    """``F_tau`` over a working set (module docstring), with value, gradient and Hessian for
    :func:`.phase_one.damped_newton`.  Every sample has a row in the working set (its nominal one)."""

    def __init__(self, inst: DROInstance, rows: ConfigurationRows, free: np.ndarray, barrier, rate: float,
                 ratio: float):
        super().__init__(inst, rows)
        self.free, self.barrier, self.rate, self.ratio = free, barrier, rate, ratio
        self.center, self.prox = None, 0.0

    def _prox(self, theta: np.ndarray) -> float:
        if not self.prox:
            return 0.0
        d = theta - self.center
        return 0.5 * self.prox * float(d @ d)

    def _smoothed(self, theta: np.ndarray, tau: float, derivatives: bool = True):
        """``(S^tau, q, slope, curvature, top)``: per-sample smoothed maxima, per-term softmax weights, the terms'
        loss derivatives and each sample's maximum over its terms."""
        _, ell, slope, curv = self.terms(theta, derivatives)
        v = ell - theta[-1] * self.cost
        top = np.maximum.reduceat(v, self.starts)
        e = np.exp((v - top[self.segment]) / tau)
        z = np.add.reduceat(e, self.starts)
        return top + tau * np.log(z), e / z[self.segment], slope, curv, top

    def value(self, theta: np.ndarray, tau: float, mu_b: float) -> float:
        if not self.barrier.feasible(theta):
            return np.inf
        S = self._smoothed(theta, tau, derivatives=False)[0]
        return theta[-1] * self.rate + aggregate(S, self.inst.p, self.ratio * theta[-1])[0] \
            + self.barrier.value(theta, mu_b) + self._prox(theta)

    def model(self, theta: np.ndarray) -> float:
        """The restricted objective (no smoothing) over the working set at ``theta``."""
        top = self._smoothed(theta, 1.0, derivatives=False)[4]
        return theta[-1] * self.rate + aggregate(top, self.inst.p, self.ratio * theta[-1])[0]

    def derivatives(self, theta: np.ndarray, tau: float, mu_b: float):
        mu = theta[-1]
        S, q, slope, curv, _ = self._smoothed(theta, tau)
        h = self.ratio * mu
        A, w, dAdh = aggregate(S, self.inst.p, h)
        ss = (slope if self.slope is None else self.slope) * self.sigma
        wq = w[self.segment] * q
        D = theta.size
        grad = np.empty(D)
        grad[:-1] = self.matvec_T(wq * ss)
        grad[-1] = -float(wq @ self.cost) + self.rate + (self.ratio * dAdh if np.isfinite(h) else 0.0)
        hess = np.zeros((D, D))
        keep = np.flatnonzero(wq > HESSIAN_DROP * tau)
        seg = self.segment[keep]
        multi = keep[np.bincount(seg, minlength=self.starts.size)[seg] >= 2]
        if multi.size:
            hess += self.centered_gram(multi, ss, q, wq / tau)[0]
        if curv is not None:
            hess[:-1, :-1] += self.curvature_gram(np.where(wq > HESSIAN_DROP * tau, wq * curv, 0.0))
        if np.isfinite(h):                  # the perspective's curvature
            M = self._sample_gradients(q, ss)
            M[:, -1] -= self.ratio * (S - float(w @ S)) / h
            m = M.T @ w
            hess += ((M * w[:, None]).T @ M - np.outer(m, m)) / h
        bv, bg, bh = self.barrier(theta, mu_b)
        value = mu * self.rate + A + bv + self._prox(theta)
        grad, hess = grad + bg, hess + bh
        if self.prox:
            grad = grad + self.prox * (theta - self.center)
            hess[np.diag_indices_from(hess)] += self.prox
        return value, grad, hess

    def _sample_gradients(self, q: np.ndarray, ss: np.ndarray) -> np.ndarray:
        """``G_n = grad S_n^tau = sum_k q_k J_k`` per sample, ``(N, D)``, :data:`GRAM_CHUNK` terms at a time."""
        N, D = self.starts.size, self.n_columns + 1
        G = np.zeros((N, D))
        for start in range(0, self.n_terms, GRAM_CHUNK):
            idx = np.arange(start, min(self.n_terms, start + GRAM_CHUNK))
            J = self.gradients(idx, ss)
            G += sp.csr_matrix((q[idx], (self.segment[idx], np.arange(idx.size))), shape=(N, idx.size)) @ J
        return G


@dataclass
class MOTPhaseOneResult:
    """MOT phase 1's best point (``mu`` lifted to the numerical floor), its exact value ``upper_bound`` (an upper bound
    on the optimum), the rows within ``margin`` of their sample's maximum there (``bundle``) and the working set."""

    intercept: float
    coef: np.ndarray
    mu: float
    upper_bound: float
    bundle: ConfigurationRows
    working: ConfigurationRows
    rounds: int
    newton_steps: int
    converged: bool
    seconds: float
    tau: float


def exact_value(inst: DROInstance, oracle, theta: np.ndarray, rate: float, ratio: float):
    """``(F(theta), separation)`` at ``mu' = max(mu, floor)`` (module docstring): an upper bound on the optimum."""
    intercept, coef, mu = split_theta(inst, theta)
    mu = max(mu, lambda_floor(inst, coef))
    sep = oracle.separate(intercept, coef, mu, np.zeros(inst.n_samples))
    S = np.empty(inst.n_samples)
    S[sep.rows.sample] = sep.violation
    h = ratio * mu if np.isfinite(ratio) else np.inf
    if h <= 0:
        return mu * rate + float(S.max()), sep
    return mu * rate + aggregate(S, inst.p, h)[0], sep


def mot_phase_one(inst: DROInstance, oracle, *, rho: float, theta1: float, theta2: float, tau0: float = 1e-1,
                  tau_min: float = 1e-4, margin: float = 1e-2, max_solves: int = MAX_SOLVES, prox: float = 1.0,
                  floor_solves: int = FLOOR_SOLVES, log: Optional[Callable[[str], None]] = None,
                  control=None) -> MOTPhaseOneResult:
    """The search of the module docstring from ``beta = 0``, ``mu = 2 lip(L)``; ``tau`` relative to ``max(1, |F|)``
    at the start, from ``tau0`` to ``tau_min``; the bundle's ``margin`` likewise.  ``control``: progress lines, and
    a stop after the current solve once the fit must stop."""
    t0 = time.perf_counter()
    _, dim, free, barrier = parameter_layout(inst)
    rate, ratio = rho / theta1, theta2 / theta1
    theta = np.zeros(dim)
    theta[-1] = 2.0 * (float(inst.loss.lipschitz) + barrier.lam0)
    upper, sep = exact_value(inst, oracle, theta, rate, ratio)
    best = theta.copy()
    master = _MOTSmoothed(inst, unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True),
                                                         sep.rows])), free, barrier, rate, ratio)
    scale = max(1.0, abs(upper))
    tau, floor = tau0 * scale, tau_min * scale
    steps = solves = 0
    counts = SettledSolves(floor_solves)
    converged = False
    while solves < max_solves:
        master.center, master.prox = best, prox * tau
        theta, k = damped_newton(master, theta, tau, tau * CONE_BARRIER_WEIGHT)
        steps += k
        solves += 1
        value, sep = exact_value(inst, oracle, theta, rate, ratio)
        if value < upper:
            upper, best = value, theta.copy()
        fresh = master.index.unseen(sep.rows)
        model = master.model(theta)
        settled = not (value - model > 10 * tau and fresh.size)
        if log is not None:
            log(f"mot phase 1 solve {solves:>3}: tau {tau:.0e} exact {value:.9f} best {upper:.9f} model {model:.9f} "
                f"rows {master.rows.size} new {fresh.size} ({k} Newton steps)")
        if control is not None:
            control.progress("MOT-DRO phase 1", f"smoothing {tau:.0e}, best value {upper:.9g}, "
                                                f"{master.rows.size:,} rows")
        if fresh.size:
            grown = concat_rows([master.rows, take_rows(sep.rows, fresh)])
            master = None                  # the old design freed first
            master = _MOTSmoothed(inst, grown, free, barrier, rate, ratio)
        if control is not None and control.should_stop():
            break
        action = counts.after(settled, tau <= floor)   # "stop": still missing rows, the masters do better from here
        if action == "retry":
            continue
        if action != "cool":                # "stop" or "converged"
            converged = action == "converged"
            break
        tau = next_temperature(tau, floor)
        counts.reset()
    intercept, coef, mu = split_theta(inst, best)
    mu = max(mu, lambda_floor(inst, coef))
    working = master.rows
    master = None
    phi = row_losses(inst, working, intercept, coef) - mu * working.cost
    top = np.full(inst.n_samples, -np.inf)
    np.maximum.at(top, working.sample, phi)
    bundle = take_rows(working, np.flatnonzero(phi >= top[working.sample] - margin * scale))
    return MOTPhaseOneResult(intercept=intercept, coef=np.array(coef, dtype=float), mu=float(mu),
                             upper_bound=float(upper), bundle=bundle, working=working, rounds=solves,
                             newton_steps=steps, converged=converged, seconds=time.perf_counter() - t0, tau=tau)


__all__ = ["MOTPhaseOneResult", "mot_phase_one", "mot_phase_one_applies", "exact_value", "aggregate"]
