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

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..exceptions import ProblemTooLargeError, SolverError
from ..models.instance import DROInstance
from ..oracles.enumeration import (ConfigurationRows, count_configuration_rows,
                                   enumerate_configurations)

#: largest enumeration the exact evaluator builds (configuration rows)
MAX_EVALUATION_ROWS = 2_000_000


@dataclass
class WorstCaseValue:
    value: float
    lam: float
    lam_min: float
    rows: ConfigurationRows
    losses: np.ndarray   # l_k per row
    mass: np.ndarray     # worst-case probability mass per row (sums to 1 without the numerical tail)


def row_losses(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray) -> np.ndarray:
    """``L(u_k)`` for every configuration row at the fixed model."""
    from ..conic.reformulations.dual import row_design
    f = row_design(inst, rows) @ coef + intercept
    y = inst.y[rows.sample]
    u = f * y * np.where(rows.flip, -1.0, 1.0) if inst.is_classification else f - y
    return inst.loss.value(u)


def lambda_floor(inst: DROInstance, coef: np.ndarray) -> float:
    """``lip(L) ||Gamma^{-1} beta_x||_*`` (and ``lip(L)/kappa`` in regression)."""
    lip = float(inst.loss.lipschitz)
    lam_min = lip * inst.metric.dual_norm(np.asarray(coef)[: inst.n_numerical])
    if not inst.is_classification and np.isfinite(inst.metric.kappa):
        lam_min = max(lam_min, lip / inst.metric.kappa)
    return float(lam_min)


def worst_case_value(inst: DROInstance, intercept: float, coef: np.ndarray,
                     rows: ConfigurationRows | None = None) -> WorstCaseValue:
    """Exact worst-case risk of the fixed model (enumerating all configuration rows by default)."""
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
    N = inst.n_samples
    lam_min = lambda_floor(inst, coef)
    if inst.radius == 0:
        nominal = (rows.cost == 0) & ~rows.flip
        per = np.full(N, -np.inf)
        np.maximum.at(per, rows.sample[nominal], losses[nominal])
        mass = np.zeros(rows.size)
        return WorstCaseValue(float(per.mean()), np.inf, lam_min, rows, losses, mass)
    if not np.isfinite(lam_min):
        return WorstCaseValue(np.inf, np.inf, lam_min, rows, losses, np.zeros(rows.size))
    K = rows.size
    # variables [lambda, s_1..s_N]; rows: -c_k lambda - s_{n_k} <= -l_k
    A = sp.hstack([sp.csr_matrix(-rows.cost.reshape(-1, 1)),
                   sp.csr_matrix((-np.ones(K), (np.arange(K), rows.sample)), shape=(K, N))], format="csr")
    c = np.concatenate([[inst.radius], np.full(N, 1.0 / N)])
    bounds = [(lam_min, None)] + [(None, None)] * N
    res = linprog(c, A_ub=A, b_ub=-losses, bounds=bounds, method="highs")
    if res.status != 0:
        raise SolverError(f"worst-case evaluation LP failed: {res.message}", status="solver_error",
                          raw_status=str(res.status), solver="highs")
    mass = -np.asarray(res.ineqlin.marginals)
    return WorstCaseValue(float(res.fun), float(res.x[0]), lam_min, rows, losses, mass)
