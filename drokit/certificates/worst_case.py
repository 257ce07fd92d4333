"""Worst-case expected loss of a FIXED model over the Wasserstein ball, computed without a conic solver.

For fixed ``beta`` the dual of ``sup_{Q in B_eps} E_Q[loss]`` is one-dimensional (belbasi2023 (3) with
beta fixed; sun2025 §2.5):

    WC(beta) = min_{lambda >= lambda_min}  lambda eps + (1/N) sum_n max_k ( l_k - lambda c_k )

over the configuration rows ``k`` of sample ``n`` (loss ``l_k`` and cost ``c_k``), with
``lambda_min = lip(L) ||Gamma^{-1} beta_x||_*`` (and ``>= lip(L) / kappa`` in regression), below which the
numerical features make the supremum infinite.  It is an LP in ``(lambda, s)``, solved exactly by HiGHS;
its dual multipliers are the worst-case masses of the rows.  ``WC(beta_hat) >= optimal value`` for any
``beta_hat``, so it is the certified upper bound reported with every fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..exceptions import ProblemTooLargeError, SolverError
from ..instance import DROInstance
from ..oracles.enumeration import (ConfigurationRows, count_configuration_rows,
                                   enumerate_configurations)
# the row algebra of a fixed model lives in drokit.oracles.rows; its names stay importable from here
from ..oracles.rows import lambda_floor, row_losses
from .support import MAX_EVALUATION_ROWS, worst_case_support
from .lambda_search import LinePoint, minimize_line

#: above this many configuration rows the certificate uses the oracle instead of the enumeration LP
CERTIFICATE_ENUMERATION_ROWS = 5_000


@dataclass
class WorstCaseValue:
    """The worst-case risk ``value`` of a fixed model, the optimal ``lam`` (``inf`` at radius 0, where the
    budget constraint ``sum mass * cost <= 0`` has no finite multiplier) and its floor ``lam_min``, the
    configuration ``rows`` with their losses, and the worst-case distribution as a mass per row: ``1/N``
    per sample, ``sum mass * losses = value`` (without the numerical tail).  At radius 0 it is the
    empirical distribution (``1/N`` on a nominal row of each sample); masses are all zero only when the
    risk is unbounded (``lam_min = inf``)."""

    value: float
    lam: float
    lam_min: float
    rows: ConfigurationRows
    losses: np.ndarray   # l_k per row
    mass: np.ndarray     # worst-case probability mass per row (sums to 1 without the numerical tail)


def worst_case_value(inst: DROInstance, intercept: float, coef: np.ndarray,
                     rows: ConfigurationRows | None = None) -> WorstCaseValue:
    """Exact worst-case risk of the fixed model (enumerating all configuration rows by default)."""
    inst = inst.evaluated_at(coef)
    if rows is None:
        if inst.radius == 0:
            rows = enumerate_configurations(inst, nominal_only=True)
        else:
            size = count_configuration_rows(inst)
            if size > MAX_EVALUATION_ROWS:
                raise ProblemTooLargeError(
                    f"exact worst-case evaluation would enumerate {size:,} configuration rows "
                    f"(limit {MAX_EVALUATION_ROWS:,})")
            rows = enumerate_configurations(inst)
    losses = row_losses(inst, rows, intercept, coef)
    lam_min = lambda_floor(inst, coef)
    if inst.radius == 0:
        # the ball is {P_N} (moves of cost 0 included): each sample's mass p_n (1/N) on its costless, label-kept
        # row of largest loss -- the observed row itself when ``rows`` are the nominal ones
        value, mass = costless_worst_case(losses, (rows.cost == 0) & ~rows.flip, rows.sample, inst.p)
        return WorstCaseValue(value, np.inf, lam_min, rows, losses, mass)
    if not np.isfinite(lam_min):
        return WorstCaseValue(np.inf, np.inf, lam_min, rows, losses, np.zeros(rows.size))
    value, lam, mass = minimize_over_lambda(losses, rows.cost, rows.sample, inst.p, inst.radius, lam_min)
    return WorstCaseValue(value, lam, lam_min, rows, losses, mass)


def costless_worst_case(losses: np.ndarray, costless: np.ndarray, sample: np.ndarray, p: np.ndarray):
    """``(value, mass)`` at radius 0: each sample's mass ``p_n`` on its ``costless`` row of largest loss."""
    N = p.size
    nominal = np.flatnonzero(costless)
    order = nominal[np.lexsort((-losses[nominal], sample[nominal]))]
    leads = np.ones(order.size, dtype=bool)
    leads[1:] = sample[order][1:] != sample[order][:-1]
    first = order[leads]
    per = np.full(N, -np.inf)
    per[sample[first]] = losses[first]
    mass = np.zeros(losses.size)
    mass[first] = p[sample[first]]
    return float(p @ per), mass


def minimize_over_lambda(losses: np.ndarray, cost: np.ndarray, sample: np.ndarray, p: np.ndarray, radius: float,
                         lam_min: float):
    """``(F(lam), lam, mass)`` for ``F(lam) = lam eps + sum_n p_n max_{k of n} (l_k - lam c_k)`` over ``lam >= lam_min``:
    ``lam`` from an LP (HiGHS; its multipliers are the worst-case distribution's ``mass`` per row), then ``F`` evaluated
    exactly there (the LP's value is ``F`` only up to HiGHS's feasibility tolerance: it put the constant model 1.8e-9
    below log 2; ``F(lam)`` for any ``lam >= lam_min`` is an upper bound)."""
    N, K = p.size, losses.size
    # variables [lambda, s_1..s_N]; rows: -c_k lambda - s_{n_k} <= -l_k
    A = sp.hstack([sp.csr_matrix(-cost.reshape(-1, 1)),
                   sp.csr_matrix((-np.ones(K), (np.arange(K), sample)), shape=(K, N))], format="csr")
    res = linprog(np.concatenate([[radius], p]), A_ub=A, b_ub=-losses, bounds=[(lam_min, None)] + [(None, None)] * N,
                  method="highs")
    if res.status != 0:
        raise SolverError(f"worst-case evaluation LP failed: {res.message}", status="solver_error",
                          raw_status=str(res.status), solver="highs")
    lam = max(float(res.x[0]), lam_min)
    per = np.full(N, -np.inf)
    np.maximum.at(per, sample, losses - lam * cost)
    return float(lam * radius + p @ per), lam, -np.asarray(res.ineqlin.marginals)


def worst_case_value_oracle(inst: DROInstance, intercept: float, coef: np.ndarray, oracle=None,
                            tol: float = 1e-10, max_iter: int = 200,
                            lam_hint: Optional[float] = None) -> WorstCaseValue:
    """Worst-case risk of a fixed model with a separation oracle instead of the enumeration.

    ``F(lambda) = lambda eps + mean_n max_k (l_k - lambda c_k)`` is convex and piecewise linear in
    lambda; the oracle (called with ``s = 0``) returns ``F`` and a subgradient ``eps - mean_n c_{k*}``, and
    :func:`.lambda_search.minimize_line` (Kelley's method) finds the minimum.  The returned value is ``F`` at the
    best lambda found, so it is always an upper bound on ``WC(beta)`` (and equal to it at convergence, within
    ``tol``).

    ``lam_hint``: a lambda near the minimizer (the fit's own): the bracket then grows from it by factors of 4
    from a relative width 1e-6, instead of from ``lambda_min`` (17 oracle calls at 100,000 rows, 6 s of a fit,
    before; the result does not depend on the hint, only the number of calls).
    """
    from ..oracles import make_oracle
    inst = inst.evaluated_at(coef)
    if oracle is None:
        oracle = make_oracle(inst, "auto")
    N = inst.n_samples
    lam_min = lambda_floor(inst, coef)
    zeros = np.zeros(N)
    if inst.radius == 0:  # the nominal rows only: no enumeration either way
        return worst_case_value(inst, intercept, coef)
    if not np.isfinite(lam_min):
        return WorstCaseValue(np.inf, np.inf, lam_min, None, np.zeros(0), np.zeros(0))

    # the oracle's tables of this model (the DP's per-budget gains, the hull's points) are computed once
    # (``oracle.fixed_model``): each lambda then costs its terminal step only, and the maximizing rows are recovered
    # at the best lambda alone
    fixed = oracle.fixed_model(intercept, coef)

    def line(lam):
        if fixed is not None:
            violation, cost = fixed.values(lam)
            return LinePoint(lam, lam * inst.radius + float(inst.p @ violation), inst.radius - float(inst.p @ cost))
        sep = oracle.separate(intercept, coef, lam, zeros)
        p = inst.p[sep.rows.sample]
        return LinePoint(lam, lam * inst.radius + float(p @ sep.violation), inst.radius - float(p @ sep.rows.cost), sep)

    search = minimize_line(line, lam_min, tol=tol, interval_tol=tol, max_iter=max_iter, lam_max=1e12,
                           hint=lam_hint if lam_hint is not None and np.isfinite(lam_hint) else None)
    best = search.best
    rows = best.data.rows if best.data is not None else fixed.separation(best.lam).rows
    return WorstCaseValue(best.value, best.lam, lam_min, rows, np.zeros(0), np.zeros(0))


def worst_case_value_numerical(inst: DROInstance, intercept: float, coef: np.ndarray) -> float:
    """Worst-case risk of a fixed model when no categorical feature can change (the closed form's setting):
    each sample has its nominal row (cost 0) and, with label flips, its flipped row (cost kappa), so

        WC(beta) = min_{lambda >= lambda_min}  lambda eps + sum_n p_n l_n + sum_n p_n (d_n - kappa lambda)_+,

    ``l_n`` the nominal loss and ``d_n`` the gain of the flip.  The function is convex and piecewise linear
    in lambda with breakpoints ``d_n / kappa`` and slope ``eps - kappa (mass of the breakpoints above
    lambda)``: sorting the breakpoints gives the minimizer exactly, in O(N log N), without an LP (the
    HiGHS LP of :func:`worst_case_value` solves the same problem to its feasibility tolerance, ~1e-9)."""
    inst = inst.evaluated_at(coef)
    f = inst.scores(intercept, coef)
    families = inst.label_families()
    nominal = families[0]
    losses = inst.loss.value(nominal.sigma * f - nominal.shift)
    lam_min = lambda_floor(inst, coef)
    if not np.isfinite(lam_min):
        return np.inf
    p, eps = inst.p, float(inst.radius)
    base = float(p @ losses)
    if len(families) == 1:
        return lam_min * eps + base
    flip = families[1]
    kappa = float(flip.extra_cost)
    gain = inst.loss.value(flip.sigma * f - flip.shift) - losses
    breaks = gain / kappa
    order = np.argsort(-breaks)
    above = np.cumsum(p[order])                          # mass of the breakpoints >= breaks[order[j]]
    j = int(np.searchsorted(above, eps / kappa, side="right"))
    lam = max(lam_min, float(breaks[order[j]]) if j < order.size else -np.inf, 0.0)
    return float(lam * eps + base + p @ np.maximum(gain - kappa * lam, 0.0))


def certified_upper_bound(inst: DROInstance, intercept: float, coef: np.ndarray,
                          lam_hint: Optional[float] = None) -> float:
    """Exact worst-case risk of the model, computed without the conic solver: the enumeration LP (HiGHS)
    when it has at most :data:`CERTIFICATE_ENUMERATION_ROWS` rows, else the DP oracle's one-dimensional
    minimization over lambda (:func:`worst_case_value_oracle`, equal to the LP in the tests).  Both
    return the value of a feasible point of the dual, so the result is an upper bound even if the
    lambda search stopped early.  The oracle path is milliseconds where the LP takes seconds (balance-
    scale: 360,000 rows, 0.9 s by the LP; hayes-roth: 8,448 rows, 0.018 s by the LP, 0.002 s by the
    oracle; benchmarks/RESULTS.md).  When no categorical feature can change, the exact sort of
    :func:`worst_case_value_numerical`.  ``lam_hint`` (the fit's lambda) only shortens the oracle's search."""
    if inst.mutable_categorical().size == 0:
        return worst_case_value_numerical(inst, intercept, coef)
    if inst.radius == 0 or count_configuration_rows(inst) <= CERTIFICATE_ENUMERATION_ROWS:
        # F at the LP's lambda and at the exact minimizer over the enumerated rows (Kelley on the piecewise-
        # linear F, tolerance 1e-13): both are upper bounds; the LP's lambda alone left F up to 5e-8 above its
        # minimum (fuzz seed 7454)
        exact = worst_case_support(inst.evaluated_at(coef), intercept, coef, method="enumeration").value
        return min(worst_case_value(inst, intercept, coef).value, exact)
    return worst_case_value_oracle(inst, intercept, coef, lam_hint=lam_hint).value
