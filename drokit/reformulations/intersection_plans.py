"""Exactly feasible transport plans from the finite-support LP of the intersection's lower bound (issue 21).

:func:`drokit.reformulations.intersection_bound.finite_support_lower_bound` maximizes ``sum_m loss(s_m) q_m`` over the
distributions ``q`` on a finite candidate set that lie in both balls: plans ``pi`` (training samples x candidates) and
``pihat`` (auxiliary samples x candidates) with rows ``1/N`` and ``1/N_aux``, one shared column marginal ``q`` and
costs ``<pi, C> <= eps``, ``<pihat, C_aux> <= eps_aux``.  HiGHS returns them up to its tolerances (1e-7 on the rows,
the marginals and the budgets), so its objective is a bound only up to those.  :func:`repaired_plans` makes them
exact up to rounding: negative entries dropped, ``pi``'s rows scaled to exactly ``1/N`` (which fixes ``q`` as its
column sums), ``pihat`` brought to rows ``1/N_aux`` and columns ``q`` by alternating scalings (Sinkhorn's iteration on
the LP's support), and the two costs evaluated; the caller solves the LP with budgets tightened by
:data:`BUDGET_MARGIN` so that the repaired plans, a rounding away from HiGHS's, stay inside the real ones.  The value
``sum_m loss(s_m) q_m`` of such a ``q`` is then a lower bound on the worst case over the intersection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

#: the LP's budgets are ``eps (1 - BUDGET_MARGIN)`` (and the same for ``eps_aux``): room for the repair's changes
#: (the plans move by HiGHS's residuals, ~1e-9 of a budget), paid for with at most that relative loss of value
BUDGET_MARGIN = 1e-9
#: the repaired auxiliary plan's rows must be within this of ``1/N_aux`` (relative) after the scalings
ROW_RTOL = 1e-12
#: alternating scalings of the auxiliary plan at most
MAX_SCALINGS = 2_000


@dataclass
class RepairedPlans:
    """Plans with exact row sums ``1/N`` (``pi``) and exact columns ``q`` (``pihat``, rows within :data:`ROW_RTOL` of
    ``1/N_aux``), on the LP's entries, and their transport costs."""

    pi: np.ndarray
    pihat: np.ndarray
    q: np.ndarray
    cost: float
    cost_aux: float
    row_residual: float


def repaired_plans(x: np.ndarray, ii: np.ndarray, mm: np.ndarray, jj: np.ndarray, mh: np.ndarray,
                   c: np.ndarray, c_aux: np.ndarray, n: int, n_aux: int, m: int) -> Optional[RepairedPlans]:
    """Repair the LP's answer ``x = [pi entries (ii, mm), pihat entries (jj, mh)]`` (module docstring); ``c`` /
    ``c_aux`` the costs of those entries.  ``None`` when a training or auxiliary row, or a column of ``q``, has no mass
    left to scale (the LP's answer is too far from feasible to repair)."""
    nv = ii.size
    pi = np.maximum(np.asarray(x[:nv], dtype=float), 0.0)
    pihat = np.maximum(np.asarray(x[nv:], dtype=float), 0.0)
    rows = np.bincount(ii, weights=pi, minlength=n)
    if np.any(rows <= 0):
        return None
    pi = pi * ((1.0 / n) / rows[ii])
    q = np.bincount(mm, weights=pi, minlength=m)
    residual = np.inf
    for _ in range(MAX_SCALINGS):
        rows_aux = np.bincount(jj, weights=pihat, minlength=n_aux)
        if np.any(rows_aux <= 0):
            return None
        pihat = pihat * ((1.0 / n_aux) / rows_aux[jj])
        cols = np.bincount(mh, weights=pihat, minlength=m)
        if np.any((cols <= 0) & (q > 0)):
            return None
        pihat = pihat * np.divide(q, cols, out=np.zeros(m), where=cols > 0)[mh]
        residual = float(np.max(np.abs(np.bincount(jj, weights=pihat, minlength=n_aux) * n_aux - 1.0)))
        if residual <= ROW_RTOL:
            break
    if residual > ROW_RTOL:
        return None
    return RepairedPlans(pi, pihat, q, float(pi @ c), float(pihat @ c_aux), residual)
