"""The closed-form Wasserstein logistic program of :mod:`drokit.solvers.barrier` in its own variables, and its
primal barrier: the problem data, the barrier objective, the Newton step and the centering.

The program (belbasi2023 Lemma 1 and Prop. 1), in the scaled coordinates ``phi = Gamma^{-1} beta`` of the
norm-constrained columns (:meth:`ScaledProblem.from_instance`: the immutable columns and the intercept are free),

    minimize   F = eps lambda + sum_n p_n h(u_n, lambda)
    subject to ||phi||_q <= lambda,                 u_n = y_n (x~_n^T phi + b),

with ``x~_n = Gamma x_n``, ``q`` the dual exponent of the ground norm and

    h(u, lambda) = max(L(u), L(-u) - kappa lambda) = L(u) + (u - kappa lambda)_+ ,   L(u) = log(1 + e^-u)

(``L(-u) = L(u) + u``; with ``kappa = inf`` only ``L(u)``).  It is solved in its own d + 2 variables (plus one
epigraph variable ``t_n >= (u_n - kappa lambda)_+`` per sample for a finite kappa, eliminated from every Newton
system by a Schur complement, :meth:`ScaledProblem.newton_step`): a primal barrier method (Boyd & Vandenberghe,
*Convex Optimization*, §11.3) minimizes ``tau F + B`` (:meth:`ScaledProblem.barrier_objective`; the outer loop
that grows ``tau`` is :func:`drokit.solvers.barrier.solve_closed_form_logistic`), ``B`` the logarithmic barrier of
the norm cone (``-log(lambda^2 - ||phi||_2^2)``, or the ``2d (+1)`` linear inequalities of the l-inf / l1 norm)
and of ``t_n >= 0``, ``t_n >= u_n - kappa lambda``.  Each Newton step costs one ``N x (d + 2)`` weighted Gram
product; :meth:`ScaledProblem.center` runs Newton's method on ``tau F + B`` (damped, then full steps).

The dual bound that certifies the answer is in :mod:`drokit.solvers.barrier_dual`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import scipy.linalg
from scipy.special import expit

#: centering stops when half the squared Newton decrement is below this
CENTERING_TOL = 1e-12
#: relative ridge added to every (scaled) Newton system, see :meth:`ScaledProblem.solve_newton_system`
NEWTON_RIDGE = 1e-10
#: below this squared Newton decrement, full Newton steps are taken (the quadratically convergent region)
QUADRATIC_REGION = 0.1


def priced_numerical(inst) -> np.ndarray:
    """Positions of the numerical coefficients under the norm constraint: not fixed at 0, weight
    ``0 < gamma_j < inf``."""
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    fixed = np.asarray(inst.fixed_zero, dtype=int)
    priced = np.isfinite(gamma) & (gamma > 0)
    priced[fixed[fixed < gamma.size]] = False
    return np.flatnonzero(priced)


@dataclass
class State:
    w: np.ndarray                     # (phi, free columns, [b], lambda, [r for q = 1])
    t: Optional[np.ndarray]           # hinge epigraphs (finite kappa)


class ScaledProblem:
    """The program in scaled coordinates ``phi = beta / gamma`` over the active numerical columns, and its primal
    barrier (the dual bound: :class:`~drokit.solvers.barrier_dual.CertifiedProblem`)."""

    def __init__(self, A: np.ndarray, p: np.ndarray, y: np.ndarray, eps: float, kappa: float, q: float,
                 fit_intercept: bool, active: np.ndarray, gamma: np.ndarray, n_coef: int,
                 free: Optional[np.ndarray] = None):
        self.A = A                    # (N, k): y_n [x~_n, z_n, 1]: scaled mutable, free columns, intercept
        self.p, self.y, self.eps, self.kappa, self.q = p, y, eps, kappa, q
        self.fit_intercept = fit_intercept
        #: positions in ``coef`` of the norm-constrained columns, and ``beta = scale * phi`` there
        self.active, self.scale, self.n_coef = active, gamma, n_coef
        #: positions in ``coef`` of the free columns (immutable numerical features, dummies of immutable
        #: categorical ones): unconstrained by the norm, like the intercept
        self.free = np.zeros(0, dtype=int) if free is None else free
        #: ``(positions, rows of A)`` of samples of weight 0, left out of the problem (None: none)
        self.unweighted: Optional[tuple] = None
        self.d = active.size
        self.k = A.shape[1]
        self.lam_at = self.k
        self.n_w = self.k + 1 + (self.d if q == 1 else 0)
        self.flips = bool(np.isfinite(kappa))
        self.norm_rows = self._norm_rows()
        # each sample's two hinge barriers ``-log t_n - log(t_n - u_n + kappa lambda)`` have weight 1: weights
        # p_n (a parameter summing to 2) stalled the damped Newton phase (benchmarks/RESULTS.md)
        # barrier parameter: the norm cone's (2 for the second-order cone, else its rows) + the hinges'
        self.nu = (2.0 if q == 2 else float(self.norm_rows[0].shape[0])) \
            + (2.0 * p.size if self.flips else 0.0)

    @classmethod
    def from_instance(cls, inst) -> "ScaledProblem":
        """Columns: the norm-constrained ones (scaled), then the free ones, then the intercept; fixed
        coefficients (``fixed_zero``, and gamma = 0 at a positive radius) are left out.

        * radius > 0: the mutable numerical features scaled by gamma are constrained; immutable ones
          (gamma = inf) and the dummies of the (immutable) categorical features are free;
        * radius 0 (ERM): every column is free; with an l1 penalty ``gamma ||beta||_1`` every column is
          constrained instead (scale 1) and the penalty takes the radius' place, ``eps = gamma``, with the
          l1 norm (``q = 1``): the same program."""
        n, n_enc = inst.n_numerical, inst.schema.n_encoded
        gamma = np.asarray(inst.metric.gamma, dtype=float)
        kept = np.ones(n_enc, dtype=bool)
        kept[np.asarray(inst.fixed_zero, dtype=int)] = False
        columns = np.arange(n_enc)
        if inst.radius > 0:
            active = priced_numerical(inst)
            scale = gamma[active]
            unconstrained = kept.copy()                    # immutable numerical features and dummies
            unconstrained[active] = False
            unconstrained[:n] &= gamma != 0                # weight 0: beta_j = 0
            free = np.flatnonzero(unconstrained)
            eps, kappa = float(inst.radius), float(inst.metric.kappa)
            q = inst.metric.numerical.lp_dual_exponent        # an l_p norm (solvers.barrier.ineligibility)
            q = 2.0 if q is None else float(q)                # (another norm: no priced column, no cone)
        elif inst.l1_penalty:                             # lasso logistic regression: the l1 "ball" of radius
            active, free = columns[kept], np.zeros(0, dtype=int)        # gamma over every coefficient
            scale, eps, kappa, q = np.ones(active.size), float(inst.l1_penalty), np.inf, 1.0
        else:                                             # ERM: no ball, every coefficient is free
            active, free = np.zeros(0, dtype=int), columns[kept]
            scale, eps, kappa, q = np.ones(0), 0.0, np.inf, 2.0
        y = np.asarray(inst.y, dtype=float)
        X = np.asarray(inst.data.X, dtype=float)
        d, m = active.size, free.size
        A = np.empty((X.shape[0], d + m + int(bool(inst.fit_intercept))))   # in place: 100,000 x 50 is 40 MB
        dummies = inst.schema.dummies(inst.data.Z) if n_enc > n else None
        for cols, start in ((active, 0), (free, d)):
            numeric, categorical = cols[cols < n], cols[cols >= n] - n
            if numeric.size:
                A[:, start:start + numeric.size] = X if numeric.size == X.shape[1] else X[:, numeric]
            if categorical.size:
                A[:, start + numeric.size:start + cols.size] = dummies[:, categorical].toarray()
        A[:, :d] *= scale
        if inst.fit_intercept:
            A[:, d + m] = 1.0
        A *= y[:, None]
        p = np.asarray(inst.p, dtype=float)
        # a sample of weight 0 adds nothing to F, and its hinge epigraph would have no objective pulling it
        # down (the centering diverges): it is left out, and its loss evaluated at the end
        weighted = p > 0
        dropped = None if weighted.all() else A[~weighted]
        if dropped is not None:
            A, p, y = A[weighted], p[weighted], y[weighted]
        out = cls(A, p, y, eps, kappa, q, bool(inst.fit_intercept), active, scale, n_enc, free)
        out.unweighted = (np.flatnonzero(~weighted), dropped) if dropped is not None else None
        return out

    def size(self) -> Dict[str, int]:
        n = self.A.shape[0]
        linear = self.norm_rows[0].shape[0] + (2 * n if self.flips else 0)
        out = {"variables": self.n_w + (n if self.flips else 0),
               "barrier terms": linear + (1 if self.q == 2 else 0), "logistic": n}
        if self.q == 2:
            out["SOC"] = 1
        if linear:
            out["NONNEG"] = linear
        return out

    # ------------------------------------------------------------------ pieces
    def _norm_rows(self):
        """``(C, c0)`` with the norm constraint's linear slacks ``C w + c0 > 0`` (l-inf and l1 dual norms)."""
        d, n_w, lam = self.d, self.n_w, self.lam_at
        I = np.eye(d)
        if self.q == np.inf:   # lambda - phi_j > 0, lambda + phi_j > 0
            C = np.zeros((2 * d, n_w))
            C[:d, :d], C[d:, :d] = -I, I
            C[:, lam] = 1.0
            return C, np.zeros(2 * d)
        if self.q == 1:        # r_j - phi_j > 0, r_j + phi_j > 0, lambda - sum r > 0
            C = np.zeros((2 * d + 1, n_w))
            r = slice(lam + 1, lam + 1 + d)
            C[:d, :d], C[d:2 * d, :d] = -I, I
            C[:d, r], C[d:2 * d, r] = I, I
            C[2 * d, lam], C[2 * d, r] = 1.0, -1.0
            return C, np.zeros(2 * d + 1)
        return np.zeros((0, n_w)), np.zeros(0)

    def margins(self, w: np.ndarray) -> np.ndarray:
        return self.A @ w[: self.k]

    def initial_point(self) -> State:
        w = np.zeros(self.n_w)
        w[self.lam_at] = 1.0
        if self.q == 1:
            w[self.lam_at + 1:] = 0.5 / self.d
        t = np.ones(self.A.shape[0]) if self.flips else None
        return State(w, t)

    def value(self, state: State) -> float:
        """``F = eps lambda + sum_n p_n h(u_n, lambda)`` (the exact objective, not the epigraph's)."""
        return float(self.eps * state.w[self.lam_at] + self.p @ self.losses(state.w))

    def losses(self, w: np.ndarray, rows: Optional[np.ndarray] = None) -> np.ndarray:
        """``h(u_n, lambda)`` of every (kept) sample, or of the rows ``rows`` of the same layout as ``A``."""
        u = self.margins(w) if rows is None else rows @ w[: self.k]
        out = np.logaddexp(0.0, -u)
        if self.flips:
            out += np.maximum(u - self.kappa * w[self.lam_at], 0.0)
        return out

    def slacks(self, w: np.ndarray, t: Optional[np.ndarray], u: np.ndarray):
        """Every barrier's argument (all must stay > 0) at ``w``, ``t`` and the margins ``u = A w``: the norm
        cone's, and ``t``, ``t - u + kappa lambda``."""
        if self.q == 2:
            phi, lam = w[: self.d], w[self.lam_at]
            norm = [np.array([lam - np.linalg.norm(phi)]), np.array([lam])]
        else:
            C, c0 = self.norm_rows
            norm = [C @ w + c0]
        if not self.flips:
            return norm
        return norm + [t, t - u + self.kappa * w[self.lam_at]]

    def barrier_objective(self, w: np.ndarray, t: Optional[np.ndarray], tau: float) -> float:
        u = self.margins(w)                          # one product with A per line-search trial
        pieces = self.slacks(w, t, u)
        if any(np.any(s <= 0) for s in pieces):
            return np.inf
        f = tau * (self.eps * w[self.lam_at] + self.p @ np.logaddexp(0.0, -u))
        if self.q == 2:
            phi, lam = w[: self.d], w[self.lam_at]
            f -= np.log(lam * lam - phi @ phi)
        else:
            f -= np.sum(np.log(pieces[0]))
        if self.flips:
            f += tau * (self.p @ t) - np.sum(np.log(pieces[-2])) - np.sum(np.log(pieces[-1]))
        return float(f)

    # ------------------------------------------------------------------ Newton
    def newton_step(self, state: State, tau: float):
        """``(dw, dt, decrement^2)`` of ``tau F_epi + B`` at ``state``; ``t`` eliminated by its Schur
        complement (its Hessian block is diagonal)."""
        w, t = state.w, state.t
        k, lam = self.k, self.lam_at
        p, A = self.p, self.A
        u = A @ w[:k]
        sig = expit(-u)                                  # -L'(u)
        curv = sig * (1.0 - sig)                         # L''(u)
        g = np.zeros(self.n_w)
        g[:k] = -tau * (A.T @ (p * sig))
        g[lam] += tau * self.eps
        H = np.zeros((self.n_w, self.n_w))
        weights = tau * p * curv
        zl = None
        if self.flips:
            h = t - u + self.kappa * w[lam]              # slack of t >= u - kappa lambda
            ih, it = 1.0 / h, 1.0 / t
            gt = tau * p - it - ih                       # gradient in t
            Dt = it * it + ih * ih                       # Hessian in t (diagonal)
            cross = ih * ih                              # d2/(dt d h-argument)
            # gradient of -log h in (z, lambda): -1/h * (-a_n, kappa)
            g[:k] += A.T @ ih
            g[lam] -= self.kappa * ih.sum()
            # Schur complement: weight of c_n c_n^T with c_n = (-a_n, kappa), and the reduced gradient
            omega = cross - cross * cross / Dt
            red = cross * gt / Dt                        # the reduced gradient is g - sum_n red_n c_n
            g_full = g.copy()
            g[:k] += A.T @ red
            g[lam] -= self.kappa * red.sum()
            weights = weights + omega
            zl = -self.kappa * (A.T @ omega)
            H[lam, lam] += self.kappa ** 2 * omega.sum()
        H[:k, :k] += A.T @ (A * weights[:, None])
        if zl is not None:
            H[:k, lam] += zl
            H[lam, :k] += zl
        norm_g = np.zeros(self.n_w)
        self._add_norm_barrier(w, norm_g, H)
        g += norm_g
        dw = self.solve_newton_system(H, -g)
        if not self.flips:
            return dw, None, max(float(-(g @ dw)), 0.0)
        dh = -(A @ dw[:k]) + self.kappa * dw[lam]        # c_n^T dw: the change of h_n along dw
        dt = -(gt + cross * dh) / Dt
        return dw, dt, max(float(-((g_full + norm_g) @ dw) - gt @ dt), 0.0)

    def _add_norm_barrier(self, w, g, H) -> None:
        if self.q == 2:
            d, lam = self.d, self.lam_at
            phi, l = w[:d], w[lam]
            s = l * l - phi @ phi
            ds = np.zeros(self.n_w)
            ds[:d], ds[lam] = -2.0 * phi, 2.0 * l
            g -= ds / s
            H += np.outer(ds, ds) / (s * s)
            idx = np.arange(d)
            H[idx, idx] += 2.0 / s
            H[lam, lam] -= 2.0 / s
            return
        C, c0 = self.norm_rows
        s = C @ w + c0
        g -= C.T @ (1.0 / s)
        H += C.T @ (C / (s * s)[:, None])

    @staticmethod
    def solve_newton_system(H: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """``H^{-1} rhs`` by Cholesky on the symmetrically scaled ``D H D`` (``D = diag(H)^{-1/2}``: features
        on different scales and the barrier's large diagonal terms otherwise cost digits), least squares
        if ``H`` is not numerically positive definite."""
        diag = np.sqrt(np.maximum(np.diag(H), np.finfo(float).tiny))
        scaled = H / np.outer(diag, diag)
        # a relative ridge of 1e-10: collinear columns (e.g. two categorical features coding the same
        # split) make H singular, and an unregularized solve then moves the coefficients by ~1e148 along
        # the null space, where the objective does not change
        scaled[np.diag_indices_from(scaled)] += NEWTON_RIDGE
        try:
            z = scipy.linalg.cho_solve(scipy.linalg.cho_factor(scaled, check_finite=False), rhs / diag,
                                       check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            z = np.linalg.lstsq(scaled, rhs / diag, rcond=None)[0]
        return z / diag

    def center(self, state: State, tau: float, budget: int) -> int:
        """Newton's method on ``tau F + B`` from ``state`` (updated in place); returns the number of steps
        taken (at most ``budget``).

        Damped phase: a backtracking line search (Armijo, factor 1/2) while the squared Newton decrement is
        at least :data:`QUADRATIC_REGION`; then full steps (only kept strictly feasible), which converge
        quadratically and, unlike an Armijo test, do not stall when ``tau`` is so large (1e8-1e10) that the
        decrease is below the rounding of ``tau F + B``.  Stops at a decrement of :data:`CENTERING_TOL`, or
        when a full step no longer halves it (the floating-point floor)."""
        steps = 0
        current = self.barrier_objective(state.w, state.t, tau)
        previous = np.inf
        while steps < budget:
            dw, dt, dec = self.newton_step(state, tau)
            if dec / 2.0 <= CENTERING_TOL:
                break
            quadratic = dec < QUADRATIC_REGION
            if quadratic and dec > previous / 2.0:
                break                                    # the rounding floor: no more progress
            steps += 1
            step = 1.0
            while step > 1e-12:
                w = state.w + step * dw
                t = state.t + step * dt if dt is not None else None
                trial = self.barrier_objective(w, t, tau)
                if np.isfinite(trial) and (quadratic or trial <= current - 0.25 * step * dec):
                    break
                step *= 0.5
            else:
                break                                    # no decrease in floating point: centered
            state.w, state.t, current = w, t, trial
            previous = dec if quadratic and step == 1.0 else np.inf
        return steps

    def model(self, state: State):
        w = state.w
        coef = np.zeros(self.n_coef)
        coef[self.active] = w[: self.d] * self.scale
        coef[self.free] = w[self.d:self.d + self.free.size]
        intercept = float(w[self.k - 1]) if self.fit_intercept else 0.0
        s = self.losses(w)
        if self.unweighted is not None:              # every sample's epigraph value, weight 0 ones included
            where, rows = self.unweighted
            full = np.empty(s.size + where.size)
            kept = np.ones(full.size, dtype=bool)
            kept[where] = False
            full[kept] = s
            full[where] = self.losses(w, rows)
            s = full
        return coef, intercept, float(w[self.lam_at]), s
