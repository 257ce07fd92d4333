"""A dual point for adversarial classification (DR-ARO) from a smoothed primal, for the Lagrangian certificate.

The Lagrangian bound (:mod:`.lagrangian`) needs masses ``m_k`` on configuration rows and slopes ``alpha_k``.  At the
worst-case distribution of a model that is optimal only to a conic solver's tolerance two things keep it from the
optimum: the samples whose rows are tied (or nearly) at the optimum get all their mass on one row (the knapsack of
:mod:`.support` breaks ties) while the KKT multipliers split it, and the slopes ``L'(u_k)`` at the model carry its
first-order error.  DR-ARO on 10,000 x 10 synthetic rows (``benchmarks/bench_adversarial.py``): the bound 7e-6
relative below the optimum; with the best slopes for those masses 1.8e-7 (the tie-break alone), 4.5e-6 at 10,000 x 50.
The KKT multiplier program (:func:`~drokit.certificates.lower_bound.kkt_multipliers`) resolves both, but it is a conic
program over every row (two exponential cones each): seconds at 10,000 rows.

Here the point comes from Newton's method on the primal restricted to candidate rows ``R_n`` per sample, in its own
``d + 1`` variables ``(theta, lam)`` (``theta`` the columns not fixed at 0), every kink smoothed at a temperature
``mu`` (selvi2025 thesis Cor. 8 for the attacked loss, belbasi2023 Prop. 1 for the program):

    Phi_mu(theta, lam) = lam eps + sum_n p_n mu log sum_{k in R_n} exp((l_k(theta) - lam c_k) / mu)
                         - w log(lam - lip N_q(Gamma^{-1} beta_L)),        w = BARRIER_WEIGHT mu,
    l_k(theta) = L(sigma_k a_k' theta - shift_k - alpha N_{p*}(beta_x)),

``L`` the attacked (inner) loss, non-increasing; ``N_r`` a smooth upper approximation of ``||.||_r`` whose gradient
lies in the dual unit ball (:func:`smoothed_norm`); ``q`` the dual exponent of the ground norm, ``p*`` that of the
attack.  ``Phi_mu`` is convex (a log-sum-exp of convex functions; a log barrier of a concave function).  At its
minimizer, with the softmax masses ``m_k = p_n exp((l_k - lam c_k) / mu) / sum_{j in R_n} exp(...)`` and the slopes
``alpha_k = L'(u_k)``, stationarity reads (``d = lam - lip N_q``):

* in ``lam``: ``S_c = sum_k m_k c_k = eps - w / d < eps``;
* in the free columns: ``g_F = sum_k m_k alpha_k sigma_k a_kF = 0``;
* in the norm-priced ones: ``g_L = h + g_1`` with ``h = -A grad N_{p*}`` (``A = alpha sum_k m_k |alpha_k|``, so
  ``||h||_p <= A``: the attack's part) and ``g_1 = -(w / d) lip Gamma^{-1} grad N_q`` (so ``||Gamma g_1||_p / lip <=
  w / d = eps - S_c``: the budget's part),

which is the feasibility the Lagrangian bound asks (its module docstring).  The smoothed program's dual function is
the Lagrangian one plus ``mu`` times the masses' entropy (at most ``p_n mu log |R_n|`` per sample, and only where a
sample's rows are within ``~mu`` of each other), and the barrier costs ``w``: the masses are within ``O(mu)`` of
optimal.

Each temperature's masses then get the slopes that are best for them, the minimizer of the fixed-mass problem

    Psi(theta) = sum_k m_k l_k(theta) + rho lip N_q(Gamma^{-1} beta_L),      rho = eps - S_c >= 0

(:meth:`_Smoothed.fixed_mass`; the Lagrangian's minimum over ``lam`` at fixed masses, belbasi2023 Prop. 1 read at
fixed ``m``, as :mod:`.erm_polish` does for the free columns alone), after :meth:`_Smoothed.within_budget` has moved any
excess of ``S_c`` over ``eps`` (Newton's residual) to each sample's cheapest row.  Its stationarity gives the same
split exactly, without the temperature's ill-conditioning, so the point's only infeasibility is rounding.
:func:`~drokit.certificates.lagrangian.lagrangian_bound` then repairs and evaluates it exactly: the bound holds
whatever this module computes (weak duality), and only its tightness depends on the iterations.  Measured
(benchmarks/bench_adversarial.py, DR-ARO 10,000 x 10 and 10,000 x 50): 1e-8 relative below the exact upper bound at
the first temperature (``1e-5``: the barrier's ``w = 1e-8``), 8 and 10 Newton steps, 0.02 and 0.08 s.

Applies to classification losses (adversarial ones, :class:`~drokit.losses.Adversarial`, in the certificate; plain
ones in the tests) that are smooth with a finite Lipschitz constant, no penalty and an l_p ground norm (no
``NormCost(matrix=...)``, no other :class:`~drokit.metrics.norms.NumericalNorm`: the multiplier program of
:mod:`.lower_bound` serves them); at radius 0 (ARO) without ``lam`` and the barrier.  Newton's systems are dense ``(d +
1)``-square; the candidate rows' design is densified (at most :data:`MAX_DENSE_ENTRIES` entries).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.rows import ConfigurationRows
from .lagrangian import attacked_loss, row_matrix
from .repair import column_roles

#: the temperatures ``mu`` relative to ``max(|objective|, 1e-2)``, each stage warm-started from the last
TEMPERATURES = (1e-5, 1e-6, 1e-7, 1e-8)

#: the norms' smoothing relative to ``max(1, max |beta|)`` at each stage is the temperature's relative size
#: times this (``N_1``: ``sum sqrt(beta_j^2 + nu^2)``, ``N_inf``: ``nu log sum exp(+-beta_j / nu)``)
NORM_SMOOTHING = 1.0

#: the barrier's weight relative to the temperature: its duality gap is its weight (the masses leave ``weight / (lam -
#: floor)`` of the budget unspent), while the entropy's is ``mu`` times the tied samples' mass only
BARRIER_WEIGHT = 1e-3

#: the barrier's weights (relative to the temperature) tried in turn where Newton's method does not converge with
#: :data:`BARRIER_WEIGHT` at once (from an arbitrary model: 50 steps left DR-ARO's gradient at 2e5, these converge in
#: 13-20 steps each)
BARRIER_STEPS = (1.0, 1e-1, 1e-2, BARRIER_WEIGHT)

#: Newton steps per temperature at most
MAX_NEWTON_STEPS = 50

#: a temperature's Newton iterations stop at a decrement below this times the scale
DECREMENT_RTOL = 1e-26

#: below this predicted decrease (times the scale) Newton's steps are judged by the decrement, not the value
ROUNDING_DECREASE = 1e-12

#: largest candidate design (rows x columns) densified
MAX_DENSE_ENTRIES = 8_000_000

#: ridge of Newton's systems, relative to their largest diagonal entry
RIDGE = 1e-13


@dataclass
class SmoothedPoint:
    """The point of the smoothed primal: ``rows``, their softmax ``mass`` and ``slopes``, the primal ``theta =
    [intercept, coef]`` and ``lam`` it came from, the last temperature and the Newton steps taken."""

    rows: ConfigurationRows
    mass: np.ndarray
    slopes: np.ndarray
    theta: np.ndarray
    lam: float
    mu: float
    newton_steps: int


def smoothed_applies(inst: DROInstance, adversarial_only: bool = True) -> bool:
    """Whether :func:`smoothed_points` runs: a classification loss, adversarial unless ``adversarial_only`` is False
    (the certificate uses it for adversarial losses only; plain ones check its validity in the tests), smooth (not
    piecewise affine, not an outer approximation) with a finite Lipschitz constant; no penalty; an l_p ground norm
    (:attr:`~drokit.metrics.norms.NumericalNorm.lp_exponent`)."""
    if not inst.is_classification or inst.penalized or (adversarial_only and not hasattr(inst.loss, "at")):
        return False
    loss = attacked_loss(inst)[0]
    if loss.is_piecewise_affine or getattr(loss, "outer_approximation", False):
        return False
    # the smoothed norms are the l_q ones: a matrix cost (unbound) or a user norm (NumericalNorm) is not elementwise
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    unpriced = inst.radius == 0 or not np.any(np.isfinite(gamma) & (gamma > 0))
    return bool(np.isfinite(float(loss.lipschitz))) and (unpriced or inst.metric.numerical.lp_exponent is not None)


def smoothed_norm(v: np.ndarray, r: float, nu: float):
    """``(N, grad N, hess N)`` of a smooth upper approximation of ``||v||_r`` whose gradient lies in the dual unit ball:
    ``N = (sum_j (v_j^2 + nu^2)^(r/2))^(1/r)`` for ``1 <= r < inf`` (so ``||grad N||_{r*} <= 1``: ``|v_j| <= (v_j^2 +
    nu^2)^(1/2)``), ``N = nu log sum_j (exp(v_j / nu) + exp(-v_j / nu))`` for ``r = inf`` (a softmax gradient, ``||grad
    N||_1 <= 1``).  ``||v||_r <= N <= ||v||_r + nu k^(1/r)`` (``nu log 2k`` for ``r = inf``)."""
    v = np.asarray(v, dtype=float)
    k = v.size
    if k == 0:
        return 0.0, np.zeros(0), np.zeros((0, 0))
    if np.isinf(r):
        z = np.concatenate([v, -v]) / nu
        top = float(np.max(z))
        e = np.exp(z - top)
        total = float(np.sum(e))
        w = e / total
        grad = w[:k] - w[k:]
        hess = (np.diag(w[:k] + w[k:]) - np.outer(grad, grad)) / nu
        return nu * (top + np.log(total)), grad, hess
    root = np.sqrt(v ** 2 + nu ** 2)
    if r == 1.0:
        return float(np.sum(root)), v / root, np.diag(nu ** 2 / root ** 3)
    total = float(np.sum(root ** r))
    N = total ** (1.0 / r)
    w = root ** (r - 2) * v
    grad = N ** (1 - r) * w
    hess = N ** (1 - r) * np.diag(root ** (r - 4) * ((r - 1) * v ** 2 + nu ** 2)) \
        - (r - 1) * N ** (1 - 2 * r) * np.outer(w, w)
    return N, grad, hess


class _Smoothed:
    """The smoothed primal ``Phi_mu`` and the fixed-mass problem ``Psi`` (module docstring) on fixed candidate rows:
    values, gradients and Hessians in ``z = [theta_C, lam]`` (``theta_C`` the columns not fixed at 0; no ``lam`` at
    radius 0, nor in ``Psi``).  ``S``: the rows' signed design ``sigma_k a_k`` on those columns, dense."""

    def __init__(self, inst: DROInstance, rows: ConfigurationRows):
        from ..losses.adversarial import dual_exponent
        loss, attack_p, alpha = attacked_loss(inst)
        self.loss, self.alpha = loss, float(alpha)
        self.p_star = dual_exponent(attack_p) if attack_p is not None else 2.0
        self.lip = float(loss.lipschitz)
        self.eps = float(inst.radius)
        free, limited = column_roles(inst)
        self.cols = np.sort(np.concatenate([free, limited]))
        offset = 1 if inst.fit_intercept else 0
        self.attacked = np.flatnonzero(np.isin(self.cols, offset + np.arange(inst.n_numerical)))   # positions in cols
        self.priced = np.flatnonzero(np.isin(self.cols, limited))
        self.q = inst.metric.numerical.lp_dual_exponent if self.priced.size else 2.0
        gamma = np.asarray(inst.metric.gamma, dtype=float)
        self.inv_gamma = 1.0 / gamma[self.cols[self.priced] - offset]
        sigma, self.shift = inst.row_signs(rows.sample, rows.flip)
        A = sp.csr_matrix(row_matrix(inst, rows))[:, self.cols]
        self.S = A.multiply(sigma[:, None]).toarray()
        self.rows = rows
        self.cost = np.asarray(rows.cost, dtype=float)
        self.sample = rows.sample
        self.N = inst.n_samples
        self.p = inst.p
        self.multi = np.bincount(rows.sample, minlength=self.N)[rows.sample] > 1      # rows of samples with a choice
        self.with_lam = self.eps > 0
        self.d = self.cols.size

    def split(self, z):
        return z[: self.d], (float(z[-1]) if self.with_lam else 0.0)

    def floor(self, theta, nu):
        """``(lip N_q(Gamma^{-1} beta_L), its gradient, its Hessian)`` in ``theta_C``'s priced positions."""
        n_q, g_q, h_q = smoothed_norm(theta[self.priced] * self.inv_gamma, self.q, nu)
        scaled = self.inv_gamma[:, None] * h_q * self.inv_gamma[None, :]
        return self.lip * n_q, self.lip * g_q * self.inv_gamma, self.lip * scaled

    def losses(self, theta, nu):
        """The rows' attacked arguments ``u = S theta - shift - alpha N_att(beta_x)``, ``(L, L', L'')`` there, and the
        gradient and Hessian of ``N_att`` (so ``u``'s Jacobian is ``S - alpha 1 grad N_att'``)."""
        n_att, g_att, h_att = smoothed_norm(theta[self.attacked], self.p_star, nu)
        u = self.S @ theta - self.shift - self.alpha * n_att
        values, first, second = self.loss.value_and_derivatives(u)
        return u, values, first, second, g_att, h_att

    def _loss_derivatives(self, mass, first, second, g_att, h_att, order: int):
        """``grad`` and (``order`` 2) ``hess`` of ``sum_k m_k l_k`` in ``theta_C``: the rows' Jacobian is ``J = S -
        alpha 1 g'`` (``g = grad N_att`` on the attacked positions), so ``J' diag(v) J`` is ``S' diag(v) S`` with a
        rank-two correction."""
        w = mass * first
        at = self.attacked
        grad = self.S.T @ w
        grad[at] -= self.alpha * float(np.sum(w)) * g_att
        if order < 2:
            return grad, None
        v = mass * np.maximum(second, 0.0)
        hess = weighted_outer(self.S, v)
        sv = self.S.T @ v
        cross = np.zeros_like(sv)
        cross[at] = self.alpha * g_att
        hess -= np.outer(sv, cross) + np.outer(cross, sv) - float(np.sum(v)) * np.outer(cross, cross)
        # -alpha L'(u) hess N_att with L' <= 0 (non-increasing): PSD
        hess[np.ix_(at, at)] += self.alpha * float(mass @ np.abs(first)) * h_att
        return grad, hess

    def jacobian_rows(self, index, g_att):
        """Rows ``index`` of ``J = S - alpha 1 g'``."""
        J = self.S[index].copy()
        J[:, self.attacked] -= self.alpha * g_att[None, :]
        return J

    def softmax(self, psi, mu):
        """Each sample's softmax of ``psi / mu`` over its rows, times ``p_n``; and ``sum_n p_n mu log sum exp``."""
        top = np.full(self.N, -np.inf)
        np.maximum.at(top, self.sample, psi)
        e = np.exp((psi - top[self.sample]) / mu)
        total = np.bincount(self.sample, weights=e, minlength=self.N)
        has = total > 0
        return self.p[self.sample] * e / total[self.sample], float(self.p[has] @ (top[has] + mu * np.log(total[has])))

    def smoothed(self, z: np.ndarray, mu: float, nu: float, order: int = 2, barrier: float = BARRIER_WEIGHT):
        """``(Phi_mu, grad, hess, (mass, slopes, theta, lam))``; ``Phi = inf`` outside the barrier's domain; ``order``
        0: no derivatives."""
        theta, lam = self.split(z)
        u, values, first, second, g_att, h_att = self.losses(theta, nu)
        mass, phi = self.softmax(values - lam * self.cost, mu)
        if self.with_lam:
            floor, g_f, h_f = self.floor(theta, nu)
            gap = lam - floor
            if not gap > 0:
                return np.inf, None, None, None
            phi += lam * self.eps - barrier * mu * np.log(gap)
        parts = (mass, first, theta, lam)
        if order == 0:
            return phi, None, None, parts
        grad = np.zeros(self.d + self.with_lam)
        grad[: self.d], h_loss = self._loss_derivatives(mass, first, second, g_att, h_att, order)
        if self.with_lam:            # lam eps - w log(lam - floor(beta)), w = barrier mu
            weight = barrier * mu
            grad[-1] = self.eps - float(mass @ self.cost)
            db = np.zeros(grad.size)
            db[self.priced] = -g_f
            db[-1] = 1.0
            grad -= weight * db / gap
        if order < 2:
            return phi, grad, None, parts
        hess = np.zeros((grad.size, grad.size))
        hess[: self.d, : self.d] = h_loss
        # the softmax's covariance over each sample's rows: (1 / mu) (sum_k m_k w_k w_k' - sum_n M_n M_n' / p_n),
        # w_k = grad (l_k - lam c_k), M_n = sum_{k of n} m_k w_k
        multi = np.flatnonzero(self.multi & (mass > 0))
        if multi.size:
            W = self.jacobian_rows(multi, g_att) * first[multi, None]
            if self.with_lam:
                W = np.hstack([W, -self.cost[multi, None]])
            M = np.zeros((self.N, W.shape[1]))
            np.add.at(M, self.sample[multi], mass[multi, None] * W)
            used = np.unique(self.sample[multi])
            cov = weighted_outer(W, mass[multi]) - weighted_outer(M[used], 1.0 / self.p[used])
            hess[: W.shape[1], : W.shape[1]] += cov / mu
        if self.with_lam:
            hess += weight * np.outer(db, db) / gap ** 2
            hess[np.ix_(self.priced, self.priced)] += (weight / gap) * h_f
        return phi, grad, hess, parts

    def fixed_mass(self, theta: np.ndarray, mass: np.ndarray, rho: float, nu: float, order: int = 2):
        """``(Psi, grad, hess, slopes)`` of ``Psi(theta) = sum_k m_k l_k(theta) + rho lip N_q(Gamma^{-1} beta_L)``."""
        u, values, first, second, g_att, h_att = self.losses(theta, nu)
        psi = float(mass @ values)
        if rho > 0 and self.priced.size:
            floor, g_f, h_f = self.floor(theta, nu)
            psi += rho * floor
        if order == 0:
            return psi, None, None, first
        grad, hess = self._loss_derivatives(mass, first, second, g_att, h_att, order)
        if rho > 0 and self.priced.size:
            grad[self.priced] += rho * g_f
            if order >= 2:
                hess[np.ix_(self.priced, self.priced)] += rho * h_f
        return psi, grad, hess, first

    def budget_room(self, mass: np.ndarray) -> float:
        """``rho = eps - S_c >= 0``: the budget the masses leave to the norm-priced columns (the fixed-mass step prices
        ``beta_L`` by ``rho lip N_q``, so that its slopes spend it: the bound then meets the dual function at the
        masses, labels fixed or not)."""
        return max(self.eps - float(mass @ self.cost), 0.0)

    def within_budget(self, mass: np.ndarray) -> np.ndarray:
        """Masses with ``S_c = sum_k m_k c_k <= eps``: when over, every row hands the same fraction ``1 - t`` of its mass
        to its sample's cheapest row, ``t = (eps - S_0) / (S_c - S_0)`` (``S_0``: every mass on its cheapest row), just
        below, so that ``S_c`` becomes ``eps``; unchanged when ``S_0 >= eps``.  Each sample keeps its ``p_n``."""
        spent = float(mass @ self.cost)
        if spent <= self.eps:
            return mass
        cheapest = np.full(self.N, np.inf)
        np.minimum.at(cheapest, self.sample, self.cost)
        sink_cost = cheapest[self.sample]
        base = float(mass @ sink_cost)
        if not base < self.eps:
            return mass
        t = (self.eps - base) / (spent - base) * (1.0 - 4 * np.finfo(float).eps)
        order = np.lexsort((self.cost, self.sample))
        owners, start = np.unique(self.sample[order], return_index=True)
        first_of = np.zeros(self.N, dtype=int)
        first_of[owners] = order[start]                                  # a cheapest row per sample
        moved = np.where(self.cost > sink_cost, (1.0 - t) * mass, 0.0)
        out = mass - moved
        np.add.at(out, first_of[self.sample], moved)
        return out


def weighted_outer(W: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``W' diag(w) W`` for ``w >= 0`` (one symmetric product)."""
    X = W * np.sqrt(np.maximum(w, 0.0))[:, None]
    return X.T @ X


def smoothed_points(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, lam: float,
                    scale: float, adversarial_only: bool = True, temperatures=None):
    """Newton's method on ``Phi_mu`` (module docstring) over the candidate ``rows`` from the model ``(intercept, coef,
    lam)``, for each temperature of :data:`TEMPERATURES` (times ``scale``), each followed by the fixed-mass Newton of
    :meth:`_Smoothed.fixed_mass` at its masses (brought within the budget): yields a :class:`SmoothedPoint` per
    temperature, to be evaluated by the Lagrangian bound (the caller stops when it is tight).  Yields nothing where
    the method does not apply, and stops when an iteration fails (a non-finite step)."""
    if not smoothed_applies(inst, adversarial_only) or rows.size == 0:
        return
    offset = 1 if inst.fit_intercept else 0
    if rows.size * (offset + inst.schema.n_encoded + 1) > MAX_DENSE_ENTRIES:
        return
    problem = _Smoothed(inst, rows)
    theta_full = np.concatenate([[float(intercept)] if inst.fit_intercept else [], np.asarray(coef, dtype=float)])
    beta_scale = max(1.0, float(np.max(np.abs(theta_full), initial=0.0)))
    z = theta_full[problem.cols].copy()
    if problem.with_lam:
        z = np.append(z, float(lam) if np.isfinite(lam) else 0.0)
    steps = 0
    for rel in (TEMPERATURES if temperatures is None else temperatures):
        mu, nu = rel * scale, rel * NORM_SMOOTHING * beta_scale
        if problem.with_lam:       # inside the barrier's domain (the smoothed floor is above the exact one)
            floor = problem.floor(problem.split(z)[0], nu)[0]
            if not z[-1] > floor:
                z[-1] = floor + max(1e-6 * max(1.0, floor), 1e3 * mu)
        z, taken = _centered(problem, z, mu, nu, scale)
        steps += taken
        if z is None:
            return
        mass, _, theta, lam_z = problem.smoothed(z, mu, nu, order=0)[3]
        mass = problem.within_budget(mass)
        rho = problem.budget_room(mass)
        fixed, taken, _ = _newton(lambda x, order=2: problem.fixed_mass(x, mass, rho, nu, order), theta.copy(), scale)
        steps += taken
        if fixed is None:
            return
        slopes = problem.fixed_mass(fixed, mass, rho, nu, order=0)[3]
        full = theta_full.copy()
        full[problem.cols] = fixed
        yield SmoothedPoint(rows, mass, np.asarray(slopes, dtype=float), full, lam_z, mu, steps)


def _centered(problem: _Smoothed, z: np.ndarray, mu: float, nu: float, scale: float):
    """The minimizer of ``Phi_mu`` from ``z`` with the barrier's weight :data:`BARRIER_WEIGHT` ``mu``; when Newton's
    method does not converge from ``z`` (a start far from the optimum: a barrier this light leaves the iterates
    hugging the floor), the weight is brought down from ``mu`` by :data:`BARRIER_STEPS` instead.  ``(z, steps)``."""
    start = z
    z, steps, converged = _newton(lambda x, order=2: problem.smoothed(x, mu, nu, order), start, scale)
    if converged or not problem.with_lam:
        return z, steps
    z = start
    for barrier in BARRIER_STEPS:
        z, taken, converged = _newton(lambda x, order=2: problem.smoothed(x, mu, nu, order, barrier), z, scale)
        steps += taken
        if z is None:
            break
    return z, steps


def _newton(fun, z: np.ndarray, scale: float):
    """Damped Newton on ``fun`` (``fun(z, order)`` -> value, gradient, Hessian, ...) from ``z``: backtracking (Armijo)
    while the predicted decrease is above :data:`ROUNDING_DECREASE` times ``scale``; below it the value's changes
    drown in rounding (the softmax of a tied sample needs its arguments to ``mu``, far below the value's last digit),
    and a step ``t s`` is taken when the slope along it at its end is at most half the start's ``|grad' s|`` (on a
    quadratic, the value then went down: ``t (grad' s + slope_end) / 2 <= 0``).  Stops at a decrement below
    :data:`DECREMENT_RTOL` times ``scale``.  Returns ``(z, steps, converged)``, ``z`` None when the start is outside
    the domain or the iterations turn non-finite; ``converged``: the decrement met the rule, or the line search
    failed below rounding."""
    phi, grad, hess, _ = fun(z)
    if not np.isfinite(phi):
        return None, 0, False

    def direction(grad, hess):
        H = hess.copy()
        H[np.diag_indices_from(H)] += RIDGE * max(float(np.max(np.diag(H), initial=0.0)), 1e-300)
        try:
            step = np.linalg.solve(H, -grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, -grad, rcond=None)[0]
        return step, float(grad @ step)

    step, decrease = direction(grad, hess)
    for step_count in range(1, MAX_NEWTON_STEPS + 1):
        if not (np.all(np.isfinite(step)) and decrease < 0) or -decrease <= DECREMENT_RTOL * scale:
            return z, step_count, True
        rounding = -decrease <= ROUNDING_DECREASE * scale
        t = 1.0
        while t > 1e-12:
            trial = z + t * step
            if rounding:     # the value's changes drown in rounding: judged by the slope along the step at its end
                value, g_t = fun(trial, 1)[:2]
                if np.isfinite(value) and np.all(np.isfinite(g_t)) and float(g_t @ step) <= -0.5 * decrease:
                    break
            else:
                value = fun(trial, 0)[0]
                if np.isfinite(value) and value <= phi + 1e-4 * t * decrease:
                    break
            t *= 0.5
        else:
            return z, step_count, rounding
        z = trial
        phi, grad, hess, _ = fun(z)
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
            return None, step_count, False
        step, decrease = direction(grad, hess)
    return z, MAX_NEWTON_STEPS, False
