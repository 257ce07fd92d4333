r"""A lower bound on a fixed model's worst-case risk over an intersection of two Wasserstein balls.

:func:`finite_support_lower_bound` maximizes ``E_Q[loss]`` of a fixed model over the distributions ``Q`` supported on
a finite candidate set (:func:`candidate_support`) that lie in both balls, by an LP (HiGHS) whose plans are repaired
into exactly feasible ones (:mod:`.intersection_plans`).  Every such ``Q`` is in the intersection, so the value is a
**lower bound** on the exact worst case; with :func:`.intersection.static_value_at` (an upper bound) it brackets the
exact value (selvi2025 thesis §4.5; spec ``selvi2025-thesis-dr-aro.md`` §2.5.3: the static program is only an upper
bound, so a fitted model's result reports both ends).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import ParameterError, ProblemTooLargeError, SolverError
from .intersection_inputs import IntersectionInputs, validate_inputs
from .intersection_plans import BUDGET_MARGIN, repaired_plans

#: largest number of transport variables of the finite-support lower-bound LP
MAX_LP_VARIABLES = 5_000_000


def candidate_support(X, X_aux, segment_points: int = 5, fractions=(), pairs=None) -> np.ndarray:
    """The candidate feature points: both samples, ``segment_points`` interior points on each segment
    ``[x_i, xhat_j]`` (equally spaced) and the points at each of ``fractions`` (in (0, 1)); duplicates
    removed.  ``pairs = (i, j)`` index arrays restrict the segments to those pairs (default: all N N_hat)."""
    X = np.asarray(X, dtype=float)
    Xa = np.asarray(X_aux, dtype=float)
    ts = list(np.linspace(0.0, 1.0, int(segment_points) + 2)[1:-1]) + [float(f) for f in fractions
                                                                        if 0.0 < f < 1.0]
    parts = [X, Xa]
    if ts:
        ts = np.unique(np.asarray(ts))
        if pairs is None:
            diff = Xa[None, :, :] - X[:, None, :]                                    # (N, Na, n)
            seg = X[:, None, None, :] + ts[None, None, :, None] * diff[:, :, None, :]  # (N, Na, T, n)
        else:
            i, j = (np.asarray(v, dtype=int) for v in pairs)
            seg = X[i, None, :] + ts[None, :, None] * (Xa[j] - X[i])[:, None, :]       # (P, T, n)
        parts.append(seg.reshape(-1, X.shape[1]))
    return np.unique(np.vstack(parts), axis=0)


def _costs(X: np.ndarray, y: np.ndarray, P: np.ndarray, labels: np.ndarray, d: IntersectionInputs) -> np.ndarray:
    """``d((x_i, y_i), (P_m, labels_m))`` as an (N, M) array (inf where the move is impossible)."""
    feat = d.norm.distance(X[:, None, :], P[None, :, :], d.gamma)
    mismatch = y[:, None] != labels[None, :]
    return feat + np.where(mismatch, d.kappa, 0.0)


def finite_support_lower_bound(intercept, coef, X, y, X_aux, y_aux, radius, radius_aux, loss, *, p=1,
                               gamma=None, kappa=np.inf, attack=None, segment_points: int = 5, pairs=None,
                               return_distribution: bool = False):
    r"""A lower bound on ``sup_{Q in B_eps(P_N) ∩ B_eps_aux(P_aux)} E_Q[loss]`` for the FIXED model
    ``(intercept, coef)``: the same supremum over the Q supported on a finite candidate set S, by an LP.

    S = the feature points of :func:`candidate_support` (both samples; ``segment_points`` interior points
    on every segment ``[x_i, xhat_j]``, plus the point at ``t* = eps / (eps + eps_aux)``, where the
    displacement interpolation of an optimal coupling lies, so that S meets the intersection whenever that
    coupling moves no label), each with each label (a label that cannot reach a sample -- kappa = inf --
    gets no transport variable).  The LP (HiGHS):

    ```text
    max  sum_m loss(s_m) q_m
    s.t. sum_m pi_im = 1/N,  sum_m pihat_jm = 1/N_aux,  sum_i pi_im = sum_j pihat_jm (= q_m),
         sum_im d(xi_i, s_m) pi_im <= eps,   sum_jm d(xihat_j, s_m) pihat_jm <= eps_aux,   pi, pihat >= 0
    ```

    (total mass exactly 1, not <= 1: spec §2.5.2).  Every feasible ``q`` is a distribution in both balls, so
    the value is a lower bound; HiGHS's answer (budgets tightened by
    :data:`~.intersection_plans.BUDGET_MARGIN`) is repaired into exactly feasible plans
    (:func:`~.intersection_plans.repaired_plans`) and the value is ``sum_m loss(s_m) q_m`` at the repaired ``q``, not the
    LP's objective; with :func:`static_value_at` (an upper bound) it brackets the exact worst
    case.  Returns ``-inf`` when no distribution on S lies in both balls (an empty intersection, or a
    support too coarse: increase ``segment_points``).  With ``return_distribution=True`` returns
    ``(value, points, labels, q)``.
    """
    from scipy.optimize import linprog

    d = validate_inputs(X, y, X_aux, y_aux, radius, radius_aux, loss, p, gamma, kappa, attack)
    coef = np.asarray(coef, dtype=float).ravel()
    if coef.shape != (d.n,):
        raise ParameterError(f"coef must have {d.n} entries, got shape {coef.shape}")
    b = 0.0 if intercept is None else float(intercept)
    fractions = (d.eps / (d.eps + d.eps_a),) if d.eps + d.eps_a > 0 else ()
    pts = candidate_support(d.X, d.Xa, segment_points, fractions, pairs)
    M0 = pts.shape[0]
    N, Na = d.X.shape[0], d.Xa.shape[0]
    if (N + Na) * 2 * M0 > MAX_LP_VARIABLES:
        raise ProblemTooLargeError(
            f"the finite-support LP would have up to {(N + Na) * 2 * M0:,} transport variables "
            f"(limit {MAX_LP_VARIABLES:,}); use fewer segment_points or fewer samples")
    P = np.vstack([pts, pts])
    labels = np.concatenate([-np.ones(M0), np.ones(M0)])
    C = _costs(d.X, d.y, P, labels, d)
    Ca = _costs(d.Xa, d.ya, P, labels, d)
    # candidates reachable from both samples only
    usable = np.isfinite(C).any(axis=0) & np.isfinite(Ca).any(axis=0)
    P, labels, C, Ca = P[usable], labels[usable], C[:, usable], Ca[:, usable]
    M = P.shape[0]
    if M == 0:
        return (-np.inf, P, labels, np.zeros(0)) if return_distribution else -np.inf
    losses = d.loss.value(labels * (b + P @ coef) - d.attack_shift(coef))

    ii, mm = np.nonzero(np.isfinite(C))
    jj, mh = np.nonzero(np.isfinite(Ca))
    nv, nh = ii.size, jj.size
    c_obj = -np.concatenate([losses[mm], np.zeros(nh)])
    # equalities: row sums (N + Na rows), shared marginal (M rows)
    cols = np.arange(nv + nh)
    A_rows = sp.csr_matrix((np.ones(nv), (ii, cols[:nv])), shape=(N, nv + nh))
    A_rows_a = sp.csr_matrix((np.ones(nh), (jj, cols[nv:])), shape=(Na, nv + nh))
    A_marg = sp.csr_matrix((np.concatenate([np.ones(nv), -np.ones(nh)]), (np.concatenate([mm, mh]), cols)),
                           shape=(M, nv + nh))
    A_eq = sp.vstack([A_rows, A_rows_a, A_marg], format="csr")
    b_eq = np.concatenate([np.full(N, 1.0 / N), np.full(Na, 1.0 / Na), np.zeros(M)])
    A_ub = sp.csr_matrix(np.vstack([np.concatenate([C[ii, mm], np.zeros(nh)]),
                                    np.concatenate([np.zeros(nv), Ca[jj, mh]])]))
    budgets = np.array([d.eps, d.eps_a])
    infeasible = (-np.inf, P, labels, np.zeros(M)) if return_distribution else -np.inf
    plans = None
    # budgets tightened by BUDGET_MARGIN first, so that the repaired plans stay inside the real ones; the real budgets
    # when that is infeasible (an intersection of (nearly) empty interior), kept only if the repair lands inside
    for margin in (BUDGET_MARGIN, 0.0):
        res = linprog(c_obj, A_ub=A_ub, b_ub=budgets * (1.0 - margin), A_eq=A_eq, b_eq=b_eq, bounds=(0, None),
                      method="highs")
        if res.status == 2:   # infeasible: no distribution on S lies in both balls
            continue
        if res.status != 0:
            raise SolverError(f"finite-support LP (HiGHS) ended with status {res.status}: {res.message}",
                              status="solver_error", raw_status=str(res.status), solver="highs")
        plans = repaired_plans(res.x, ii, mm, jj, mh, C[ii, mm], Ca[jj, mh], N, Na, M)
        if plans is not None and plans.cost <= d.eps and plans.cost_aux <= d.eps_a:
            break
        plans = None
    if plans is None:
        return infeasible
    value = float(losses @ plans.q)       # the repaired q is in both balls: a lower bound (module docstring)
    if return_distribution:
        return value, P, labels, plans.q
    return value


__all__ = ["MAX_LP_VARIABLES", "candidate_support", "finite_support_lower_bound"]
