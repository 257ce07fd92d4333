"""A structured barrier method for the closed-form Wasserstein logistic program (and, at radius 0, Newton's
method for plain logistic regression, :func:`_solve_erm`).

With numerical features only, the Wasserstein logistic model has the closed form (belbasi2023 Lemma 1 and
Prop. 1, the program of :func:`drokit.reformulations.dual.build_dual_program` with the nominal rows
and, for a finite label cost ``kappa``, the flipped rows):

    minimize   eps lambda + sum_n p_n h(u_n, lambda)
    subject to ||phi||_q <= lambda,                 u_n = y_n (x~_n^T phi + b),

with ``phi = Gamma^{-1} beta`` the scaled coefficients, ``x~_n = Gamma x_n``, ``q`` the dual exponent of the
ground norm and ``h(u, lambda) = max(L(u), L(-u) - kappa lambda)``, ``L`` the log-loss.  As a conic program it has
two exponential cones per sample (four with a finite kappa), and an interior-point solver spends each iteration on
the N-cone step-length search and a KKT system of size ~5N.  Here the problem is solved in its own d + 2
variables by a primal barrier method: the problem and its barrier, Newton step and centering are
:class:`~drokit.solvers.barrier_problem.ScaledProblem`; :func:`solve_closed_form_logistic` runs the outer loop,
``tau`` growing :data:`TAU_GROWTH`-fold.

**Certificate.**  Every outer iteration builds a dual point and its value, a lower bound on the optimum
(Lagrange duality, :mod:`drokit.solvers.barrier_dual`).  The method stops when the value ``F(w)`` of its feasible
point and this bound agree to ``tol`` (relative); both are reported, so the answer carries its own proof of
optimality, independent of the Newton iterations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
from scipy.special import expit

from ..exceptions import ParameterError
from ..gaps import gap_scale, relative_gap
from .barrier_dual import CertifiedProblem
from .barrier_problem import State, priced_numerical

#: relative gap ``(F - lower) / max(1, |F|)`` at which the method stops (Clarabel's ``tol_gap_rel``)
DEFAULT_TOL = 1e-8
#: Newton steps over all outer iterations before giving up
DEFAULT_MAX_ITER = 400
#: factor by which the barrier weight ``tau`` grows per outer iteration
TAU_GROWTH = 50.0
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
    q = inst.metric.numerical.lp_dual_exponent           # None: not an l_p norm (a NumericalNorm of the user's)
    if inst.n_numerical and q is None and priced_numerical(inst).size:
        return (f"the numerical cost {inst.metric.numerical!r} is not an l_p norm (its dual norm has no closed-form "
                f"barrier here; Clarabel solves it)")
    if inst.n_numerical and q is not None and q not in SUPPORTED_DUAL_EXPONENTS:
        return f"the ground norm's p = {inst.metric.numerical.p} (only p in 1, 2, inf)"
    if priced_numerical(inst).size == 0:
        return "no numerical feature can move at a cost (none, or all immutable / free)"
    return None


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
    problem = CertifiedProblem.from_instance(inst)
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


def _solve_erm(problem: CertifiedProblem, tol: float, max_iter: int, verbose: bool, start: float) -> BarrierResult:
    """Radius 0: plain logistic regression ``min sum_n p_n L(u_n)`` over every column (no ball, no
    lambda), by Newton's method with a backtracking line search.  The same dual bound certifies it
    (``a_n = sigma(-u_n)`` repaired for every column's condition,
    :meth:`~drokit.solvers.barrier_dual.CertifiedProblem.repaired`).  On separable data the infimum 0 is not
    attained: the iterates grow until value and bound (both -> 0) meet to ``tol``, as an interior-point solver
    stops at its tolerance."""
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
        direction = problem.solve_newton_system(hess, -grad)
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
    coef, intercept, _, s = problem.model(State(w, None))
    return BarrierResult(status=status, coef=coef, intercept=intercept, lam=0.0, s=s, objective=value,
                         lower_bound=float(lower), iterations=steps, outer_iterations=len(history),
                         solve_time=time.perf_counter() - start,
                         size={"variables": k, "barrier terms": 0, "logistic": A.shape[0]}, history=history)
