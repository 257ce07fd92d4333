"""Phase 1 of the cutting plane: a smoothed Newton search on the exact objective, driven by the oracle.

The parameter vector is tiny (``theta = (beta_0, beta, lambda)``: tens of numbers) while the number of
configuration rows is astronomically large.  The exact DRO objective (belbasi2023 (3), sun2025 (3))

    F(theta) = lambda eps + sum_n p_n max_k ( L(u_k(beta)) - lambda c_k )      (p_n = 1/N unweighted)
    s.t.       lambda >= lambda_min(beta) = lip(L) ||Gamma^{-1} beta_x||_*

is convex, and one call of an exact separation oracle (at ``s = 0``) returns every maximum and its
maximizing row, hence ``F`` itself.  This phase minimizes it approximately, to find where the active
rows are, before the exact conic master certifies the optimum (:mod:`.cutting_plane`):

1. Keep a working set ``W_n`` of rows per sample (at first: the nominal row and the oracle's row at the start,
   ``beta = 0`` or, on large data, a subsample's point: :mod:`.warm_start`).
2. Minimize the *entropic smoothing* of the restricted problem, with temperature ``tau``:

       F_tau(theta) = lambda eps + sum_n p_n tau log sum_{r in W_n} exp(v_r(theta) / tau)
                      - tau sum_j log g_j(theta),

   where ``v_r = L(u_r) - lambda c_r`` for smooth losses, and for piecewise-affine losses
   ``L = max_j (a_j e + b_j)`` every row is split into one term per piece, ``v_{r,j} = a_j u_r + b_j -
   lambda c_r``, so ``F_tau`` is smooth for every loss.  ``g_j >= 0`` are the constraints on
   ``(beta_x, lambda)`` with a logarithmic barrier (``lambda >= |lip beta_j / gamma_j|`` for the
   l1 cost's dual norm l_inf, the second-order cone for l2, ``lambda >= lip ||.||_q`` otherwise, and
   ``lambda >= 0``).  ``max <= softmax <= max + tau log |W_n|``.
3. The minimization is Newton's method with a backtracking line search: the Hessian is
   ``sum_n p_n [A_n' diag(q L'') A_n + (1/tau) (J_n' diag(q) J_n - G_n' G_n)]`` (softmax weights ``q``, row gradients
   ``J``, per-sample mean gradients ``G``) plus the barrier's, a dense (d+2) x (d+2) matrix built from
   sparse products, so every Newton step costs ``O(|W| d^2)``.
4. The oracle at the new point gives the exact ``F`` there (an upper bound: the point is feasible) and
   every sample's maximizing row, which joins ``W``; when it adds nothing significant, ``tau`` shrinks
   tenfold, down to ``tau_min``.  At each lower temperature the rows far below their sample's maximum (by
   :data:`PRUNE_GAP`) leave ``W`` for a reserve, from which they return after any solve that brings them near it
   again: the early null steps' maximizers are not carried through every later Newton step.

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

from ..gaps import gap_scale

from ..certificates.lagrangian import lagrangian_bound
from ..instance import DROInstance
from ..oracles.enumeration import (ConfigurationRows, concat_rows, enumerate_configurations,
                                    take_rows, unique_rows)
from ..oracles.rows import lambda_floor, row_losses
from .row_terms import ConeBarrier, RowTerms, cone_barrier_refusal, parameter_layout, split_theta


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
    #: the best Lagrangian lower bound of the smoothed dual points (``-inf`` when none was computed) and the
    #: :class:`~drokit.certificates.lagrangian.LowerBound` that proves it
    lower_bound: float = -np.inf
    certified: bool = False    # upper - lower_bound <= certify_tol max(|upper|, GAP_FLOOR)
    dual: Optional[object] = None
    bound_seconds: float = 0.0
    working_rows: int = 0      # rows of the smoothed master at the end
    tau: float = np.nan        # the last temperature
    #: the search that produced it: ``"phase_one"`` (this module) or ``"slope_split"`` (:mod:`.slope_split`)
    search: str = "phase_one"


def phase_one_applies(inst: DROInstance) -> bool:
    """Whether phase 1 (and the barrier master after it) can work on ``inst``: its Newton model has no
    attack-shift term (an adversarial loss depends on the model), no penalty, starts from
    ``lambda = 2 lip(L)`` (a finite Lipschitz constant), and its cone barrier applies (an l_p ground norm:
    :func:`.row_terms.cone_barrier_refusal`; another numerical norm goes to the conic masters)."""
    return not hasattr(inst.loss, "at") and not inst.penalized and np.isfinite(float(inst.loss.lipschitz)) \
        and cone_barrier_refusal(inst) is None


def near_active(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray,
                lam: float, margin: float) -> ConfigurationRows:
    """Rows whose ``l_k - lam c_k`` is within ``margin`` of their sample's maximum over ``rows``."""
    value = row_losses(inst, rows, intercept, coef) - lam * rows.cost
    best = np.full(inst.n_samples, -np.inf)
    np.maximum.at(best, rows.sample, value)
    return take_rows(rows, np.flatnonzero(value >= best[rows.sample] - margin))


# --------------------------------------------------------------------------- the smoothed master
#: the cone barrier's weight is ``CONE_BARRIER_WEIGHT tau`` (it biases ``F_tau`` by about that times its
#: number of terms, below the smoothing's ``tau log |W_n|`` for the l2 cone).  ``tau / N`` made the cone nearly
#: hard from the first solve on, and Newton crawled along it: 53 + 60 steps at tau = 1e-2 on synthetic
#: 10 + 10, N = 100,000; 31 + 23 -> 7 + 9 steps at N = 10,000 with 0.1 tau
CONE_BARRIER_WEIGHT = 0.1
#: a smoothed master whose rows missed ``e = F(theta) - F_tau^W(theta)`` at the last point (the exact value
#: above the model's) is solved only until the Newton decrement is below ``INEXACT e`` (never below ``1e-3 tau``):
#: its minimizer moves when the missing rows join anyway.  Census-like 32,561 rows, kappa = inf, radius 0.1:
#: phase 1 57 s, 19 solves, ~560 Newton steps (60-step solves at tau = 1e-4) -> 12 s, 10 solves, 173 steps
INEXACT = 0.1
#: solves at one temperature that still find rows missing before phase 1 stops unconverged.  On the 300-level
#: table (5,000 rows, kappa = inf, radius 0.01) phase 1 spent 26 such solves at tau_min (45-60 Newton steps each)
#: creeping from 0.518 to 0.495: 76 s of an 84 s fit; stopped after 6, the trust-region masters finish in 5 rounds
#: (28 s).  At radius 0.1 the churn came at tau = 1e-3 (47 solves adding 500-2,900 rows each, 77 s, then the
#: 60-solve limit); counted per temperature, phase 1 stops after 6 there and the masters certify in 5 rounds
#: (8.5 s in all, was past 15 min).  Fits that settle need 1-5 per temperature (synthetic 10 + 10, census-like)
FLOOR_SOLVES = 6
#: the Hessian's Gram products skip the terms whose softmax weight is below this times ``tau``
#: (:meth:`SmoothedMaster.derivatives`)
HESSIAN_DROP = 1e-12
#: at each lower temperature the working set keeps the rows within ``PRUNE_GAP max(1, |F|)`` of their sample's
#: maximum at the current point; the others wait in a reserve and come back after any solve that brings them within
#: that gap of their sample's exact maximum (:func:`returning_rows`).  Most of them are the maximizers of the null steps
#: at ``tau = 1e-2`` (the smoothed model, before it has the rows that matter, jumps to a point whose exact value is
#: 2-15 times the optimum): each carried through every later Newton step, and changing 13 of 60 features on average
#: on the 60-feature table, against 0.1 near the optimum.  Measured over 20 cases (synthetic 10 + 10 at 1,000 and
#: 10,000 rows, census-like, the 300-level table, 60 and 20 categorical features with real weights, sun2025 data;
#: interleaved runs, the same runs' A/A spread 0.4 %): geometric mean of the fit times 0.956 at a gap of 1, 0.896 at
#: 0.3 and 1.10 at 0.1 (rows 0.1 below the maximum at a point 1 % above the optimum were active after the next move:
#: the model jumped again); over 60 sun2025 settings 0.983 at 1 and 0.996 at 0.3.  Nursery 8-10 %, the 60-feature
#: table 10-20 % faster (with :class:`.factored_design.NominalChanges`, which only pays once those rows are gone)
PRUNE_GAP = 1.0


def smoothed_global_value(master, theta: np.ndarray, mu: float, data: float) -> float:
    """``F_tau`` from its samples' part ``data`` (:meth:`SmoothedMaster.data_value`, or its sum over partitions) and the
    parts that are not sums over samples: ``lambda eps``, the cone barrier and the proximal term ``prox / 2 ||theta -
    center||^2`` (``master``: anything with ``inst.radius``, ``barrier``, ``center``, ``prox``; added in this order)."""
    value = theta[-1] * float(master.inst.radius) + data + master.barrier.value(theta, mu)
    if master.prox:
        d = theta - master.center
        value += 0.5 * master.prox * float(d @ d)
    return value


def smoothed_global_terms(master, theta: np.ndarray, mu: float, data: float, grad: np.ndarray, hess: np.ndarray):
    """``(value, grad, hess)`` of ``F_tau`` from the samples' part (:meth:`SmoothedMaster.data_derivatives`, or its sum
    over partitions) completed with ``lambda eps``, the cone barrier and the proximal term."""
    bv, bg, bh = master.barrier(theta, mu)
    grad[-1] += float(master.inst.radius)
    value = theta[-1] * float(master.inst.radius) + data + bv
    grad, hess = grad + bg, hess + bh
    if master.prox:
        d = theta - master.center
        value += 0.5 * master.prox * float(d @ d)
        grad = grad + master.prox * d
        hess[np.diag_indices_from(hess)] += master.prox
    return value, grad, hess


class SmoothedMaster(RowTerms):
    """``F_tau`` over a working set (module docstring, item 2), with value, gradient and Hessian."""

    def __init__(self, inst: DROInstance, rows: ConfigurationRows, free: np.ndarray, barrier: ConeBarrier,
                 factored: Optional[bool] = None):
        super().__init__(inst, rows, factored=factored)
        self.free, self.barrier = free, barrier
        self.center, self.prox = None, 0.0   # proximal term prox/2 ||theta - center||^2 (bundle step)
        self.segment_p = inst.p[self.sample[self.starts]]   # sample weights p_n (1/N unweighted)
        self.term_p = self.segment_p[self.segment]

    def value(self, theta: np.ndarray, tau: float, mu: float) -> float:
        if not self.barrier.feasible(theta):
            return np.inf
        return smoothed_global_value(self, theta, mu, self.data_value(theta, tau))

    def data_value(self, theta: np.ndarray, tau: float) -> float:
        """The samples' part of ``F_tau``: ``sum_n p_n tau log sum_{r in W_n} exp(v_r / tau)`` (a sum over samples:
        on partitioned data each partition returns its own, :mod:`.partition_fit`)."""
        _, ell, _, _ = self.terms(theta, derivatives=False)
        v = ell - theta[-1] * self.cost
        top = np.maximum.reduceat(v, self.starts)
        phi = top + tau * np.log(np.add.reduceat(np.exp((v - top[self.segment]) / tau), self.starts))
        return float(self.segment_p @ phi)

    def _softmax(self, theta: np.ndarray, tau: float):
        """Per term: ``u``, the loss slope and curvature, ``v = l - lambda c``, the per-sample softmax
        weights ``p`` (summing to 1 over a sample's terms) and the per-sample smoothed maxima ``phi``."""
        u, ell, slope, curv = self.terms(theta)
        v = ell - theta[-1] * self.cost
        top = np.maximum.reduceat(v, self.starts)
        e = np.exp((v - top[self.segment]) / tau)
        total = np.add.reduceat(e, self.starts)
        return u, slope, curv, v, e / total[self.segment], top + tau * np.log(total)

    def derivatives(self, theta: np.ndarray, tau: float, mu: float):
        """``F_tau``'s value, gradient and Hessian (module docstring, item 3).

        The gradient uses every term.  The Hessian's two Gram products use only the terms that matter: the
        loss curvature ``A' diag(p L'') A`` the terms with ``p > HESSIAN_DROP tau`` and the softmax part
        ``(1/tau) sum_n sum_r p_r (J_r - G_n)(J_r - G_n)' = (1/tau)(J' diag(p) J - G' G)`` only the samples
        with two such terms or more (a sample with one term has ``p = 1`` and contributes 0) -- near the
        optimum, the tied samples only.  A dropped term changes an entry by at most
        ``HESSIAN_DROP |J_r|^2``: a Newton direction, not a value, so the line search is unaffected."""
        value, grad, hess = self.data_derivatives(theta, tau)
        return smoothed_global_terms(self, theta, mu, value, grad, hess)

    def data_derivatives(self, theta: np.ndarray, tau: float):
        """The samples' part of :meth:`derivatives` (no ``lambda eps``, barrier or proximal term): sums over samples."""
        _, slope, curv, v, p, phi = self._softmax(theta, tau)
        ss = slope * self.sigma
        wp = p * self.term_p                  # softmax weights times the sample weight p_n
        grad = np.empty(theta.size)
        grad[:-1] = self.matvec_T(wp * ss)
        grad[-1] = -float(wp @ self.cost)
        keep = np.flatnonzero(p > HESSIAN_DROP * tau)
        hess = np.zeros((theta.size, theta.size))
        seg = self.segment[keep]
        multi = keep[np.bincount(seg, minlength=self.starts.size)[seg] >= 2]
        if multi.size:
            hess += self.centered_gram(multi, ss, p, wp / tau)[0]
        if curv is not None:
            hess[:-1, :-1] += self.curvature_gram(np.where(p > HESSIAN_DROP * tau, wp * curv, 0.0))
        return float(self.segment_p @ phi), grad, hess

    def within(self, theta: np.ndarray, gap: float) -> np.ndarray:
        """The rows (indices into ``self.rows``) whose value ``l - lambda c`` at ``theta`` is within ``gap`` of their
        sample's maximum over the working set, on any of its terms."""
        _, ell, _, _ = self.terms(theta, derivatives=False)
        v = ell - theta[-1] * self.cost
        top = np.maximum.reduceat(v, self.starts)
        near = v >= top[self.segment] - gap
        per_row = np.zeros(self.rows.size, dtype=bool)
        per_row[self.term_row[near]] = True
        return np.flatnonzero(per_row)

    def dual_point(self, theta: np.ndarray, tau: float):
        """The smoothed problem's dual point at ``theta``: masses ``m_r = p_n sum_j p_{r,j}`` on the working rows
        (the softmax weights of its terms, times the sample weight) and slopes ``alpha_r`` (``L'(u_r)``;
        for a piecewise-affine loss the softmax-weighted mean of the pieces' slopes, a subgradient
        of the convex hull).  At a minimizer of ``F_tau`` they satisfy stationarity up to the barrier
        and prox terms; :func:`drokit.certificates.lagrangian.lagrangian_bound` repairs and evaluates them
        (entropic duality: the bound is within ``tau`` times the mean per-sample entropy of ``F_tau``)."""
        _, slope, _, _, p, _ = self._softmax(theta, tau)
        return self.row_dual(p, slope)


def damped_newton(master: SmoothedMaster, theta: np.ndarray, tau: float, mu: float,
            max_steps: int = 60, tol: Optional[float] = None) -> Tuple[np.ndarray, int]:
    """Newton's method with Levenberg-Marquardt damping ``(H + nu I) d = -g`` on the free coordinates.

    A step is taken when the actual decrease is at least a quarter of the quadratic model's; ``nu``
    grows fourfold after a rejected step and shrinks fourfold after a very good one (the softmax's
    curvature changes on the scale ``tau``, so undamped steps far from the minimizer overshoot).
    Stops when the Newton decrement ``g' H^{-1} g`` is below ``tol`` (default ``1e-3 tau``).  (A damping scaled by diag(H)
    instead of ``I`` was measured and dropped: 0.44 -> 0.51 s, 2.41 -> 2.63 s, 15.7 -> 20.4 s on synthetic
    1k / 10k and highcard, 116 -> 176 s on audiology 1-decimal 0.6.)
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
        if -float(g @ newton) < (1e-3 * tau if tol is None else tol):
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


def returning_rows(inst: DROInstance, reserve: ConfigurationRows, theta: np.ndarray, maxima: np.ndarray, gap: float,
                   master: SmoothedMaster) -> Tuple[ConfigurationRows, Optional[ConfigurationRows]]:
    """``(reserve left, rows back or None)``: the pruned rows (:data:`PRUNE_GAP`) whose value ``l_k - lam' c_k`` is
    within ``gap`` of their sample's exact maximum ``maxima[n]`` at ``theta`` (a separation's ``violation``, at
    ``lam' = max(lambda, lambda_min)``), less those already in ``master``."""
    intercept, coef, lam = split_theta(inst, theta)
    lam = max(lam, lambda_floor(inst, coef))
    value = row_losses(inst, reserve, intercept, coef) - lam * reserve.cost
    back = value >= maxima[reserve.sample] - gap
    if not back.any():
        return reserve, None
    returning = take_rows(reserve, np.flatnonzero(back))
    returning = take_rows(returning, master.index.unseen(returning))
    return take_rows(reserve, np.flatnonzero(~back)), (returning if returning.size else None)


def exact_objective(inst: DROInstance, oracle, theta: np.ndarray):
    """``(F(theta), separation)``: the exact objective ``lam' eps + sum_n p_n max_k (l_k - lam' c_k)`` at
    ``lam' = max(lambda, lambda_min(beta))`` (a feasible point, so an upper bound on the optimum) and the oracle's
    separation there (every sample's maximizing row, at ``s = 0``)."""
    intercept, coef, lam = split_theta(inst, theta)
    lam = max(lam, lambda_floor(inst, coef))
    sep = oracle.separate(intercept, coef, lam, np.zeros(inst.n_samples))
    return float(lam * inst.radius + inst.p @ sep.violation), sep


class SettledSolves:
    """Phase 1's temperature schedule's bookkeeping (module docstring, item 4): the solves at the current temperature
    that found rows missing (``unsettled``) and that did not (``settled``).  :meth:`after` says what follows a solve:
    ``"stop"`` (``floor_solves`` unsettled solves at this temperature: the working set churns, the masters do better
    from here), ``"retry"`` (solve again at this temperature: rows were missing, or the first settled solve at the last
    temperature), ``"converged"`` (two settled solves at the last temperature) or ``"cool"`` (lower the temperature:
    :func:`next_temperature`, then :meth:`reset`)."""

    def __init__(self, floor_solves: int):
        self.floor_solves = floor_solves
        self.unsettled = self.settled = 0

    def after(self, settled: bool, at_floor: bool) -> str:
        if not settled:
            self.unsettled += 1
            return "stop" if self.unsettled >= self.floor_solves else "retry"
        self.settled += 1
        if at_floor:
            return "converged" if self.settled >= 2 else "retry"
        return "cool"

    def reset(self) -> None:
        self.unsettled = self.settled = 0


def next_temperature(tau: float, floor: float) -> float:
    """``tau / 10``, or ``floor`` when that is within 1 % of it or below."""
    return floor if tau * 0.1 < 1.01 * floor else tau * 0.1


def phase_one_start(inst: DROInstance, start: Optional[np.ndarray], dim: int, free: np.ndarray, barrier) -> np.ndarray:
    """Phase 1's first ``theta``: ``beta = 0`` with ``lambda = 2 (lip(L) + lambda_0)`` (strictly feasible), or ``start``
    with the fixed coordinates zeroed and ``lambda`` lifted strictly inside the cone barrier's region."""
    theta = np.zeros(dim)
    theta[-1] = 2.0 * (float(inst.loss.lipschitz) + barrier.lam0)   # beta = 0: strictly feasible
    if start is not None:
        theta = np.array(start, dtype=float)
        theta[~np.isin(np.arange(dim), free)] = 0.0
        intercept, coef, lam = split_theta(inst, theta)
        # strictly inside the cone barrier's region
        theta[-1] = max(lam, 1.01 * lambda_floor(inst, coef), 1.01 * barrier.lam0 + 1e-9)
        if not barrier.feasible(theta):
            theta[-1] = 2.0 * max(theta[-1], 1e-9)
    return theta


def phase_one(inst: DROInstance, oracle, *, tau0: float = 1e-1, tau_min: float = 1e-4,
              margin: float = 1e-2, max_solves: int = 60, prox: float = 1.0,
              inexact: float = INEXACT, floor_solves: int = FLOOR_SOLVES,
              certify_tol: Optional[float] = None, start: Optional[np.ndarray] = None, stage: str = "phase 1",
              log: Optional[Callable[[str], None]] = None, control=None) -> PhaseOneResult:
    """Approximate minimization of the exact objective by smoothed Newton cutting planes (module
    docstring); returns the best point, its certified upper bound and the near-active bundle.

    ``inexact``: each smoothed master is solved to a decrement of ``inexact`` times the last model error
    (:data:`INEXACT`), at least ``1e-3 tau``.

    ``floor_solves``: at most this many solves at one temperature that still find rows missing
    (:data:`FLOOR_SOLVES`); phase 1 then stops unconverged (its point and the maximizers there seed the conic masters).

    ``certify_tol``: also try to *certify* the point: at ``tau_min`` the smoothed dual point
    (:meth:`SmoothedMaster.dual_point`) gives a Lagrangian lower bound, and the fit needs no master when
    ``upper - lower <= certify_tol max(|upper|, 1e-2)`` (small or tie-free problems).  Smaller temperatures do
    not pay: Newton's region of fast convergence on ``F_tau`` shrinks with ``tau`` (60-step stalls below
    1e-5 on synthetic 10 + 10, N = 10,000); :mod:`.barrier_master` takes over from here.

    ``start``: ``theta = (beta_0, beta, lambda)`` to start from (``lambda`` lifted strictly inside the cone) instead
    of ``beta = 0`` (:mod:`.warm_start` gives a subsample's point, with ``tau0 = 1e-3``).  ``stage``: the name of its
    progress lines.

    ``control`` (a :class:`~drokit.run_control.RunControl`): progress lines, and a stop after the current
    solve (unconverged, with the best point) once the fit's time limit has passed or an interrupt arrived."""
    t0 = time.perf_counter()
    _, dim, free, barrier = parameter_layout(inst)

    def exact(theta_):
        return exact_objective(inst, oracle, theta_)

    theta = phase_one_start(inst, start, dim, free, barrier)
    upper, sep = exact(theta)
    best, best_sep = theta.copy(), sep
    rows = concat_rows([enumerate_configurations(inst, nominal_only=True), sep.rows])
    master = SmoothedMaster(inst, unique_rows(rows), free, barrier)
    scale = max(1.0, abs(upper))
    tau, calls, steps, solves = tau0 * scale, 1, 0, 0
    floor = tau_min * scale
    converged = certified = False
    lower, dual = -np.inf, None
    bound_time = 0.0
    model_error = 0.0
    reserve = None                         # rows pruned from the working set (returning_rows)
    counts = SettledSolves(floor_solves)   # solves at this temperature that found rows missing, or none
    while solves < max_solves:
        master.center, master.prox = best, prox * tau
        # a model that missed rows by ``model_error`` at the last point is solved only to a fraction of that
        theta, k = damped_newton(master, theta, tau, tau * CONE_BARRIER_WEIGHT, tol=max(1e-3 * tau, inexact * model_error))
        steps += k
        solves += 1
        value, sep = exact(theta)
        calls += 1
        if value < upper:
            upper, best, best_sep = value, theta.copy(), sep
        fresh = master.index.unseen(sep.rows)
        # the smoothed model's own maximum at theta: how much the new rows matter
        master.prox = 0.0
        model = master.value(theta, tau, 0.0) - tau * master.log_count
        settled = not (value - model > 10 * tau and fresh.size)
        model_error = value - model if fresh.size else 0.0
        if certify_tol is not None and settled and tau <= floor:
            tb = time.perf_counter()
            bound = lagrangian_bound(inst, *master.dual_point(theta, tau))
            bound_time += time.perf_counter() - tb
            if lower < bound.value <= upper + 1e-9 * max(1.0, abs(upper)):   # above upper: wrongly evaluated
                lower, dual = bound.value, bound
        if log is not None:
            log(f"phase 1 solve {solves:>3}: tau {tau:.0e} exact {value:.9f} best {upper:.9f} "
                f"model {model:.9f} rows {master.rows.size} new {fresh.size} ({k} Newton steps)"
                + (f" lower {lower:.9f}" if np.isfinite(lower) else ""))
        if control is not None:
            control.progress(stage, f"smoothing {tau:.0e}, best value {upper:.9g}, {master.rows.size:,} rows")
        returning = None
        if reserve is not None:
            reserve, returning = returning_rows(inst, reserve, theta, sep.violation, PRUNE_GAP * scale, master)
        if fresh.size or returning is not None:
            grown = concat_rows([master.rows, take_rows(sep.rows, fresh)])
            if returning is not None:      # an oracle row may be back from the reserve too
                grown = unique_rows(concat_rows([grown, returning]))
            master = None          # the old design is freed before the new one is built (peak memory at N = 1M)
            master = SmoothedMaster(inst, grown, free, barrier)
        if certify_tol is not None and upper - lower <= certify_tol * gap_scale(upper):
            converged = certified = True
            break
        if control is not None and control.should_stop():
            break                          # unconverged: the caller keeps the best point
        # "stop": still missing rows, the conic masters do better from here; "retry": the working set misses rows
        # that matter at this tau.  The last temperature needs two settled solves before "converged".  Measured: the
        # second one is what gives the barrier master a start it can center from (without it, synthetic N = 1,000
        # kappa = inf fell back to the conic masters, 0.36 -> 2.3 s; radius 0.1, 0.37 -> 0.59 s with a restart)
        action = counts.after(settled, tau <= floor)
        if action == "retry":
            continue
        if action != "cool":                # "stop" or "converged"
            converged = action == "converged"
            break
        # "cool": the rows far below their maximum leave for the reserve, then the next temperature
        keep = master.within(theta, PRUNE_GAP * scale)
        if keep.size < master.rows.size:
            rows_now, gone = master.rows, np.ones(master.rows.size, dtype=bool)
            gone[keep] = False
            pruned = take_rows(rows_now, np.flatnonzero(gone))
            reserve = pruned if reserve is None else concat_rows([reserve, pruned])
            master = None      # freed before the smaller design is built
            master = SmoothedMaster(inst, take_rows(rows_now, keep), free, barrier)
        tau = next_temperature(tau, floor)
        counts.reset()
    intercept, coef, lam = split_theta(inst, best)
    lam = max(lam, lambda_floor(inst, coef))
    # every row the oracle returned is in the master (new ones are added before any exit)
    working = master.rows
    master = None                          # its design freed first (peak memory at N = 1,000,000)
    bundle = near_active(inst, working, intercept, coef, lam, margin * max(1.0, abs(upper)))
    return PhaseOneResult(intercept=intercept, coef=coef, lam=lam, s=best_sep.violation, upper_bound=upper,
                          bundle=bundle, rounds=solves, converged=converged, newton_steps=steps, oracle_calls=calls,
                          seconds=time.perf_counter() - t0, lower_bound=lower, certified=certified, dual=dual,
                          bound_seconds=bound_time, working_rows=int(working.size), tau=tau)
