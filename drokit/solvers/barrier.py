"""A structured barrier method for the closed-form Wasserstein logistic program (and, at radius 0, Newton's
method for plain logistic regression, :func:`_solve_erm`).

With numerical features only, the Wasserstein logistic model has the closed form (belbasi2023 Lemma 1 and
Prop. 1, the program of :func:`drokit.reformulations.dual.build_dual_program` with the nominal rows
and, for a finite label cost ``kappa``, the flipped rows):

    minimize   eps lambda + sum_n p_n h(u_n, lambda)
    subject to ||phi||_q <= lambda,                 u_n = y_n (x~_n^T phi + b),

with ``phi = Gamma^{-1} beta`` the scaled coefficients, ``x~_n = Gamma x_n``, ``q`` the dual exponent of the
ground norm and

    h(u, lambda) = max(L(u), L(-u) - kappa lambda) = L(u) + (u - kappa lambda)_+ ,   L(u) = log(1 + e^-u)

(``L(-u) = L(u) + u``; with ``kappa = inf`` only ``L(u)``).  As a conic program it has two exponential cones
per sample (four with a finite kappa), and an interior-point solver spends each iteration on the N-cone
step-length search and a KKT system of size ~5N.  Here the problem is solved in its own d + 2 variables
(plus one epigraph variable ``t_n >= (u_n - kappa lambda)_+`` per sample for a finite kappa, eliminated
from every Newton system by a Schur complement): a primal barrier method (Boyd & Vandenberghe, *Convex
Optimization*, §11.3) minimizes ``tau F + B`` for ``tau`` growing 50-fold, ``B`` the logarithmic barrier of
the norm cone (``-log(lambda^2 - ||phi||_2^2)``, or the ``2d (+1)`` linear inequalities of the l-inf / l1
norm) and of ``t_n >= 0``, ``t_n >= u_n - kappa lambda`` (weighted by ``p_n``).  Each Newton step costs one
``N x (d + 2)`` weighted Gram product.

**Certificate.**  Every outer iteration builds a dual point and its value, a lower bound on the optimum
(Lagrange duality): for any ``a_n, pi_n`` in [0, 1], ``L(u) >= -a u + H(a)`` (``H(a) = -a log a - (1 - a)
log(1 - a)``, the conjugate of the log-loss) and ``(u - kappa lambda)_+ >= pi (u - kappa lambda)``; summing,
the minimum over ``(phi, b, lambda)`` of the resulting linear function is ``sum_n p_n H(a_n)`` when

    sum_n p_n (a_n - pi_n) y_n z_n = 0   (z_n: 1 for the intercept, the columns of immutable features),
    ||sum_n p_n (a_n - pi_n) y_n x~_n||_p + kappa sum_n p_n pi_n <= eps

(``p`` the ground norm's exponent, dual to ``q``), and minus infinity otherwise.  So

    OPT >= sum_n p_n H(a_n)   for every such (a, pi).

The method takes ``a_n = sigma(-u_n)`` (the loss's slope) and ``pi_n = 1 / (tau (t_n - u_n + kappa
lambda))`` (the barrier's multiplier), restores the equality conditions exactly (the intercept's by
rescaling one class's ``a_n``, those of immutable features' columns by a weighted least-norm change,
:meth:`_ScaledProblem.repaired`) and the budget by scaling ``(a, pi)`` by ``eps / budget`` when it is
exceeded (both kinds of condition are homogeneous).  Near the optimum the samples at the kink ``u_n = kappa lambda`` defeat
the barrier's multipliers (:meth:`_ScaledProblem.polished_flip_multipliers` re-optimizes them).  The
method stops when the value ``F(w)`` of its feasible point and this bound agree to ``tol`` (relative); both
are reported, so the answer carries its own proof of optimality, independent of the Newton iterations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import scipy.linalg
from scipy.special import entr, expit

from ..exceptions import ParameterError
from ..gaps import gap_scale, relative_gap
from ..metrics.costs import NormCost

#: relative gap ``(F - lower) / max(1, |F|)`` at which the method stops (Clarabel's ``tol_gap_rel``)
DEFAULT_TOL = 1e-8
#: Newton steps over all outer iterations before giving up
DEFAULT_MAX_ITER = 400
#: factor by which the barrier weight ``tau`` grows per outer iteration
TAU_GROWTH = 50.0
#: centering stops when half the squared Newton decrement is below this
CENTERING_TOL = 1e-12
#: relative ridge added to every (scaled) Newton system, see :meth:`_ScaledProblem._solve`
NEWTON_RIDGE = 1e-10
#: below this squared Newton decrement, full Newton steps are taken (the quadratically convergent region)
QUADRATIC_REGION = 0.1
#: the norms this method handles: dual exponents q of the ground norm (l-inf, l2, l1 ground norms)
SUPPORTED_DUAL_EXPONENTS = (1.0, 2.0, np.inf)
#: largest dense design (samples x columns) the method builds (8 bytes each: 400 MB)
MAX_DENSE_ENTRIES = 50_000_000
#: plain logistic regression (radius 0) iterates to ``tol`` times this (quadratic convergence: one or two
#: Newton steps more) so that the coefficients, not only the value, are accurate
ERM_EXTRA_ACCURACY = 1e-3
OPTIONS = ("tol", "max_iter")
#: relative gap below which the flip multipliers are re-optimized on the kink samples (finite kappa)
POLISH_GAP = 1e-4
#: flip multipliers strictly between this and 1 minus this mark the samples at the kink
KINK_PI = 1e-4


@dataclass
class BarrierResult:
    """The barrier method's answer: the model, its value ``objective`` (an upper bound: the value of a
    feasible point) and the certified ``lower_bound``."""

    status: str                 # "optimal" (gap <= tol), "stalled" (the gap stopped shrinking above tol)
                                # or "max_iterations"
    coef: np.ndarray            # beta in the instance's numerical columns (the fixed ones 0)
    intercept: float
    lam: float
    s: np.ndarray               # h(u_n, lambda): the per-sample epigraph values
    objective: float
    lower_bound: float
    iterations: int             # Newton steps
    outer_iterations: int
    solve_time: float
    #: the problem solved: ``variables``, ``barrier terms`` and, per kind, the terms of the objective and
    #: constraints (``logistic`` loss terms, ``SOC`` norm cone, ``NONNEG`` linear inequalities)
    size: Dict[str, int] = field(default_factory=dict)
    history: List[Dict[str, float]] = field(default_factory=list)

    @property
    def relative_gap(self) -> float:
        return relative_gap(self.lower_bound, self.objective)


def ineligibility(inst) -> Optional[str]:
    """``None`` when the barrier method solves ``inst`` (a :class:`~drokit.instance.DROInstance`
    fitted with ``method="closed_form"``), otherwise the reason it does not."""
    from ..losses.builtin import Logistic
    if type(inst.loss) is not Logistic:
        return f"the loss is {getattr(inst.loss, 'name', type(inst.loss).__name__)!r}, not the plain logistic loss"
    if inst.l2_penalty:
        return "an l2 penalty is set"
    if inst.l1_penalty and inst.radius > 0:
        return "an l1 penalty is set at a positive radius (two norms)"
    columns = inst.schema.n_encoded + 1
    if inst.n_samples * columns > MAX_DENSE_ENTRIES:
        return (f"its dense design would have {inst.n_samples:,} x {columns} entries (more than "
                f"{MAX_DENSE_ENTRIES:,})")
    if inst.radius == 0:
        return None                                        # (lasso) logistic regression, any columns
    if inst.mutable_categorical().size:
        return "a categorical feature can change (the closed form needs them all immutable)"
    if inst.n_numerical and inst.metric.numerical.dual_p not in SUPPORTED_DUAL_EXPONENTS:
        return f"the ground norm's p = {inst.metric.numerical.p} (only p in 1, 2, inf)"
    if _priced_numerical(inst).size == 0:
        return "no numerical feature can move at a cost (none, or all immutable / free)"
    return None


def _priced_numerical(inst) -> np.ndarray:
    """Positions of the numerical coefficients under the norm constraint: not fixed at 0, weight
    ``0 < gamma_j < inf``."""
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    fixed = np.asarray(inst.fixed_zero, dtype=int)
    priced = np.isfinite(gamma) & (gamma > 0)
    priced[fixed[fixed < gamma.size]] = False
    return np.flatnonzero(priced)


def solve_closed_form_logistic(inst, *, tol: Optional[float] = None, max_iter: Optional[int] = None,
                               verbose: bool = False) -> BarrierResult:
    """Solve the program of the module docstring for an eligible instance (:func:`ineligibility`).

    ``tol``: relative gap between the value and the dual bound at which to stop (default
    :data:`DEFAULT_TOL`); ``max_iter``: Newton steps in all (default :data:`DEFAULT_MAX_ITER`);
    ``verbose``: one line per outer iteration (barrier weight, Newton steps so far, value, bound, gap)."""
    tol = DEFAULT_TOL if tol is None else tol
    max_iter = DEFAULT_MAX_ITER if max_iter is None else max_iter
    reason = ineligibility(inst)
    if reason is not None:
        raise ParameterError(f"solver 'barrier' does not apply: {reason}; use solver='clarabel'")
    if not (np.isfinite(tol) and tol > 0):
        raise ParameterError(f"barrier option tol must be > 0, got {tol!r}")
    if int(max_iter) < 1:
        raise ParameterError(f"barrier option max_iter must be >= 1, got {max_iter!r}")
    start = time.perf_counter()
    problem = _ScaledProblem.from_instance(inst)
    if inst.radius == 0 and not inst.l1_penalty:
        return _solve_erm(problem, tol, int(max_iter), verbose, start)
    state = problem.initial_point()
    tau = problem.nu / max(problem.value(state), 1e-2)
    steps, history = 0, []
    lower = -np.inf
    status = "max_iterations"
    for outer in range(1, 200):
        steps += problem.center(state, tau, max_iter - steps)
        upper = problem.value(state)
        polish = upper - lower <= POLISH_GAP * gap_scale(upper)
        lower = max(lower, problem.lower_bound(state, tau, polish=polish))
        gap = relative_gap(lower, upper)
        history.append({"tau": tau, "newton_steps": steps, "upper": upper, "lower": lower, "gap": gap})
        if verbose:
            print(f"barrier {outer:3d}: tau {tau:9.2e}  Newton steps {steps:4d}  F {upper:.12g}  "
                  f"lower {lower:.12g}  gap {gap:.2e}")
        if gap <= tol:
            status = "optimal"
            break
        if steps >= max_iter:
            break
        if problem.nu / tau < 1e-3 * tol * gap_scale(upper):   # far past the central path's gap
            status = "stalled"
            break
        tau *= TAU_GROWTH
    coef, intercept, lam, s = problem.model(state)
    if inst.radius == 0:                  # lasso: lambda is ||beta||_1 here, not a multiplier of a ball
        lam = float("nan")
    return BarrierResult(status=status, coef=coef, intercept=intercept, lam=lam, s=s,
                         objective=problem.value(state), lower_bound=float(lower), iterations=steps,
                         outer_iterations=len(history), solve_time=time.perf_counter() - start,
                         size=problem.size(), history=history)


@dataclass
class _State:
    w: np.ndarray                     # (phi, free columns, [b], lambda, [r for q = 1])
    t: Optional[np.ndarray]           # hinge epigraphs (finite kappa)


class _ScaledProblem:
    """The program in scaled coordinates ``phi = beta / gamma`` over the active numerical columns."""

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
    def from_instance(cls, inst) -> "_ScaledProblem":
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
            active = _priced_numerical(inst)
            scale = gamma[active]
            unconstrained = kept.copy()                    # immutable numerical features and dummies
            unconstrained[active] = False
            unconstrained[:n] &= gamma != 0                # weight 0: beta_j = 0
            free = np.flatnonzero(unconstrained)
            eps, kappa = float(inst.radius), float(inst.metric.kappa)
            q = float(inst.metric.numerical.dual_p)
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

    def initial_point(self) -> _State:
        w = np.zeros(self.n_w)
        w[self.lam_at] = 1.0
        if self.q == 1:
            w[self.lam_at + 1:] = 0.5 / self.d
        t = np.ones(self.A.shape[0]) if self.flips else None
        return _State(w, t)

    def value(self, state: _State) -> float:
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
    def newton_step(self, state: _State, tau: float):
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
        dw = self._solve(H, -g)
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
    def _solve(H: np.ndarray, rhs: np.ndarray) -> np.ndarray:
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

    def center(self, state: _State, tau: float, budget: int) -> int:
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

    # ------------------------------------------------------------------ certificate
    def lower_bound(self, state: _State, tau: float, polish: bool = False) -> float:
        """The dual bound of the module docstring at the multipliers of ``state``; with ``polish`` (finite
        kappa) also at the multipliers re-optimized on the kink samples (:meth:`polished_flip_multipliers`),
        and the larger of the two."""
        u = self.margins(state.w)
        a = expit(-u)
        pi = self.flip_multipliers(state, tau, u)
        bound = self.dual_value(a, pi)
        if polish and self.flips:
            polished = self.polished_flip_multipliers(a, pi)
            if polished is not None:
                bound = max(bound, self.dual_value(a, polished))
        return bound

    def flip_multipliers(self, state: _State, tau: float, u: np.ndarray) -> np.ndarray:
        """``pi_n``: the barrier's multiplier of ``t_n >= u_n - kappa lambda`` (0 without label flips)."""
        if not self.flips:
            return np.zeros_like(u)
        t = state.t
        h = t - u + self.kappa * state.w[self.lam_at]
        # 1 / (tau h) = 1 - 1 / (tau t) when centered: use the form without cancellation (h << t means
        # h = t - (u - kappa lambda) lost its digits, and 1 / (tau t) is then the accurate term)
        scale = 1.0 / (tau * self.p)                    # p > 0: samples of weight 0 are left out
        return np.clip(np.where(h >= t, scale / h, 1.0 - scale / t), 0.0, 1.0)

    def budget(self, a: np.ndarray, pi: np.ndarray) -> float:
        """``||sum_n p_n (a_n - pi_n) y_n x~_n||_p + kappa sum_n p_n pi_n``: dual feasible when <= eps."""
        v = self.A[:, : self.d].T @ (self.p * (a - pi))
        out = float(np.linalg.norm(v, ord=self.ground_exponent))
        return out + (self.kappa * float(self.p @ pi) if self.flips else 0.0)

    @property
    def ground_exponent(self) -> float:
        """The ground norm's exponent ``p``: the dual of the dual-norm exponent ``q``."""
        return NormCost(p=self.q).dual_p

    def dual_value(self, a: np.ndarray, pi: np.ndarray) -> float:
        """``sum_n p_n H(a_n)`` after making ``(a, pi)`` dual feasible: the free columns' conditions by
        :meth:`repaired`, the budget by scaling ``(a, pi)`` by ``eps / budget`` when it exceeds eps
        (the scaled point keeps the intercept condition: it is linear and homogeneous)."""
        a = self.repaired(a, pi)
        if a is None:
            return -np.inf
        spent = self.budget(a, pi)
        if spent > self.eps:
            a = a * (self.eps / spent)
        return float(self.p @ (entr(a) + entr(1.0 - a)))

    def polished_flip_multipliers(self, a: np.ndarray, pi: np.ndarray) -> Optional[np.ndarray]:
        """Flip multipliers re-optimized where the barrier cannot resolve them.

        At large ``tau`` the samples at the kink ``u_n = kappa lambda`` have both ``t_n`` and
        ``t_n - u_n + kappa lambda`` near 1 / tau; their Newton systems lose every digit and the barrier's
        ``pi_n`` (between 0 and 1 there) no longer satisfies stationarity.  Here ``pi_n`` is rounded to 0
        or 1 off the kink and chosen on the kink set ``K`` (``1e-4 < pi_n < 1 - 1e-4``: ``t_n`` and the slack
        both below ``1e4 / tau``; a kink multiplier can be small, e.g. ``eps / kappa`` when every sample is at
        the kink) to minimize the budget
        subject to the intercept condition, a small conic program solved by Clarabel:

            minimize ||v_0 - sum_{n in K} p_n pi_n y_n x~_n||_p + kappa sum_{n in K} p_n pi_n
            s.t.     sum_{n in K} p_n pi_n y_n = sum_n p_n a_n y_n - sum_{n not in K} p_n pi_n y_n,
                     0 <= pi_K <= 1.

        Any ``pi`` in [0, 1] gives a valid bound; this one is the best for the given ``a``.  ``None``
        when there is no kink set, it is too large (> 2,000 samples) or the small program fails."""
        from ..conic.builder import Affine, ProgramBuilder
        from .base import solve_with_retries
        from .clarabel import ClarabelBackend
        kink = np.flatnonzero((pi > KINK_PI) & (pi < 1.0 - KINK_PI))
        if kink.size == 0 or kink.size > 2000:
            return None
        fixed = np.round(pi)
        fixed[kink] = 0.0
        pk = self.p[kink]
        v0 = self.A[:, : self.d].T @ (self.p * (a - fixed))
        M = self.A[kink, : self.d].T * pk                 # columns p_n y_n x~_n (A holds y_n x~_n)
        pb = ProgramBuilder()
        x, z = pb.var("pi", kink.size), pb.var("z", 1)
        pb.add_nonneg(Affine.vstack([x, 1.0 - x]))
        NormCost(p=self.q).add_dual_norm_leq(pb, x.premultiply(-M) + v0, z, np.ones(self.d))
        if self.k > self.d:                                # the free columns' conditions
            F = self.A[:, self.d:]
            rhs = F.T @ (self.p * (a - fixed))
            pb.add_zero(x.premultiply((F[kink] * pk[:, None]).T) - rhs)
        pb.minimize(z + x.premultiply((self.kappa * pk)[None, :]))
        try:
            sol = solve_with_retries(ClarabelBackend(), pb.build())
        except Exception:                                  # the bound only improves on success
            return None
        if sol.x is None or sol.status not in ("optimal", "optimal_inaccurate"):
            return None
        out = fixed.copy()
        out[kink] = np.clip(sol.x[:kink.size], 0.0, 1.0)
        return out

    def repaired(self, a: np.ndarray, pi: np.ndarray) -> Optional[np.ndarray]:
        """``a`` changed so that ``sum_n p_n (a_n - pi_n) y_n z_n = 0`` for every free column ``z`` (the
        intercept's ``1`` included), staying in [0, 1]; ``None`` if that fails.

        The intercept alone: :func:`_balanced` (one class rescaled).  Several free columns: the change
        ``a_n + r_n (F c)_n`` with ``r_n = min(a_n, 1 - a_n)`` (room in [0, 1]) and ``F`` the free columns
        times ``y_n``, ``c`` solving ``F^T diag(p r) F c = -F^T (p (a - pi))``; valid when every
        ``|(F c)_n| <= 1``."""
        m = self.k - self.d
        if m == 0:
            return a
        if m == 1 and self.fit_intercept:
            return _balanced(a, pi, self.p, self.y)
        F = self.A[:, self.d:]
        residual = F.T @ (self.p * (a - pi))
        if not np.any(residual):
            return a
        room = np.minimum(a, 1.0 - a)
        gram = F.T @ (F * (self.p * room)[:, None])
        c = np.linalg.lstsq(gram, -residual, rcond=None)[0]
        step = F @ c
        if not np.all(np.abs(step) <= 1.0):
            return None
        return np.clip(a + room * step, 0.0, 1.0)

    def model(self, state: _State):
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


def _balanced(a: np.ndarray, pi: np.ndarray, p: np.ndarray, y: np.ndarray) -> Optional[np.ndarray]:
    """``a`` changed on one class so that ``sum_n p_n (a_n - pi_n) y_n = 0`` exactly, staying in [0, 1]
    (scale the class with the excess down, or else move the other class toward 1); ``None`` if impossible."""
    pos = y > 0
    target = float(p @ (pi * y))                     # needed: A_plus - A_minus = target
    a_plus, a_minus = float(p[pos] @ a[pos]), float(p[~pos] @ a[~pos])
    excess = a_plus - a_minus - target
    out = a.copy()
    if excess == 0.0:
        return out
    big, small = (pos, ~pos) if excess > 0 else (~pos, pos)
    a_big, a_small = (a_plus, a_minus) if excess > 0 else (a_minus, a_plus)
    need = a_big - abs(excess)                       # what the bigger side must sum to
    if need >= 0 and a_big > 0:
        out[big] *= need / a_big
        return out
    room = float(p[small] @ (1.0 - a[small]))        # or raise the other side toward 1
    if room > 0 and abs(excess) <= room:
        out[small] += (abs(excess) / room) * (1.0 - a[small])
        return out
    return None


def _solve_erm(problem: _ScaledProblem, tol: float, max_iter: int, verbose: bool, start: float) -> BarrierResult:
    """Radius 0: plain logistic regression ``min sum_n p_n L(u_n)`` over every column (no ball, no
    lambda), by Newton's method with a backtracking line search.  The same dual bound certifies it
    (``a_n = sigma(-u_n)`` repaired for every column's condition, :meth:`_ScaledProblem.repaired`).  On
    separable data the infimum 0 is not attained: the iterates grow until value and bound (both -> 0)
    meet to ``tol``, as an interior-point solver stops at its tolerance."""
    A, p, k = problem.A, problem.p, problem.k
    z = np.zeros(k)
    value = float(p @ np.logaddexp(0.0, -(A @ z)))
    # the log-loss is positive, so 0 bounds the optimum (the bound that certifies separable data)
    lower, history, steps, status = 0.0, [], 0, "max_iterations"
    while steps < max_iter:
        u = A @ z
        a = expit(-u)
        lower = max(lower, problem.dual_value(a, np.zeros_like(a)))
        gap = relative_gap(lower, value)
        history.append({"newton_steps": steps, "upper": value, "lower": lower, "gap": gap})
        if verbose:
            print(f"barrier (ERM) Newton step {steps:4d}  F {value:.12g}  lower {lower:.12g}  gap {gap:.2e}")
        status = "optimal" if gap <= tol else status
        if gap <= ERM_EXTRA_ACCURACY * tol:       # Newton converges quadratically: a step or two more
            break                                # makes the coefficients accurate too, not only the value
        grad = -(A.T @ (p * a))
        hess = A.T @ (A * (p * a * (1.0 - a))[:, None])
        direction = problem._solve(hess, -grad)
        decrease = -float(grad @ direction)
        if not decrease > 0:
            status = "optimal" if gap <= tol else "stalled"
            break
        step, trial = 1.0, np.inf
        while step > 1e-12:
            trial = float(p @ np.logaddexp(0.0, -(A @ (z + step * direction))))
            if trial <= value - 0.25 * step * decrease:
                break
            step *= 0.5
        else:
            status = "optimal" if gap <= tol else "stalled"
            break
        z, value = z + step * direction, trial
        steps += 1
    w = np.zeros(problem.n_w)
    w[:k] = z
    coef, intercept, _, s = problem.model(_State(w, None))
    return BarrierResult(status=status, coef=coef, intercept=intercept, lam=0.0, s=s, objective=value,
                         lower_bound=float(lower), iterations=steps, outer_iterations=len(history),
                         solve_time=time.perf_counter() - start,
                         size={"variables": k, "barrier terms": 0, "logistic": A.shape[0]}, history=history)
