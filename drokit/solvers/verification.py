"""Solver-independent verification of a conic solution.

An interior-point solver that stops a little short of its tolerances (Clarabel's ``AlmostSolved``, MOSEK's
and SCS's inaccurate statuses) still returns a primal point ``x`` and dual multipliers ``y``.  Whether that
answer is good enough is checked here from the program data alone, for

    minimize c^T x + c0   subject to   b - A x in K,

whose dual is  maximize -b^T y + c0  subject to  A^T y + c = 0,  y in K*:

* relative primal-dual gap  ``|p - d| / max(1, |p|)``  of the reported objectives;
* primal feasibility: the largest cone violation of ``s = b - A x`` (scaled by ``1 + max|b|``);
* dual residual  ``max |A^T y + c|``  (scaled by ``1 + max|c|``).

A solution within :data:`ACCEPT_ACCURACY` (gap, dual residual) and :data:`ACCEPT_FEASIBILITY` (primal) is
accepted as optimal: its primal objective is then the value of a feasible point (an upper bound) within the
gap of the optimum.  The thresholds are stricter than Clarabel's reduced "almost" tolerances (5e-5 gap,
1e-4 feasibility) and looser than its default 1e-8, which degenerate programs (optimal faces, an optimum at
beta = 0 where every exponential cone is tight) miss although the answer is exact to 1e-8.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from ..conic.program import ConicProgram

#: an inaccurate answer is accepted as optimal when its relative gap and dual residual are at most this
ACCEPT_ACCURACY = 1e-6
#: ... and its primal point's cone violation (absolute, scaled by ``1 + max|b|``) at most this
ACCEPT_FEASIBILITY = 1e-7


def certificate(program: ConicProgram, sol) -> Dict[str, float]:
    """Verified accuracy of ``sol`` (a :class:`~drokit.solvers.base.SolverSolution` of ``program``): the
    relative primal-dual ``gap``, the scaled ``primal_residual`` (cone violation of ``b - A x``) and
    ``dual_residual`` (``max|A^T y + c|``), and the solver's ``raw_status``; infinite when ``x`` or ``y`` is
    missing."""
    out = {"raw_status": sol.raw_status, "gap": np.inf, "primal_residual": np.inf, "dual_residual": np.inf}
    x, y = sol.x, sol.y
    if x is None or y is None:
        return out
    p, d = sol.primal_objective, sol.dual_objective
    if np.isfinite(p) and np.isfinite(d):
        out["gap"] = float(abs(p - d) / max(1.0, abs(p)))
    violation = max(program.residual_by_cone(x).values(), default=0.0)
    out["primal_residual"] = float(violation / (1.0 + np.max(np.abs(program.b), initial=0.0)))
    out["dual_residual"] = float(np.max(np.abs(program.A.T @ y + program.c), initial=0.0)
                                 / (1.0 + np.max(np.abs(program.c), initial=0.0)))
    return out


def is_verified_optimal(program: ConicProgram, sol) -> bool:
    """Whether ``sol`` passes the acceptance test of this module; stores the check in
    ``sol.info["certificate"]``."""
    cert = certificate(program, sol)
    sol.info["certificate"] = cert
    return (cert["gap"] <= ACCEPT_ACCURACY and cert["dual_residual"] <= ACCEPT_ACCURACY
            and cert["primal_residual"] <= ACCEPT_FEASIBILITY)
