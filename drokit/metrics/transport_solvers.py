"""The solvers of the transportation LP of :func:`drokit.metrics.transport.wasserstein_distance`, on the two samples
once encoded (one schema, class codes or label values, normalised weights).

For ``P = sum_i p_i delta_{xi_i}`` and ``Q = sum_j q_j delta_{xi'_j}`` and the ground cost
``d(xi, xi') = ||Gamma (x - x')||_p + D(z, z') + kappa d_y(y, y')`` (``_cost_matrix``: its finite part),
:func:`solve` returns the optimal value and an optimal plan (as sparse triplets) of (Villani 2009, Def. 6.1)

    W(P, Q) = min_{pi >= 0}  sum_ij d(xi_i, xi'_j) pi_ij
              s.t.           sum_j pi_ij = p_i  (i = 1..N),    sum_i pi_ij = q_j  (j = 1..N').

How it is solved
----------------
* Infinite costs (an immutable feature, ``gamma_j = inf`` or ``delta_l = inf``, that differs; a label
  that differs when ``kappa = inf``) are equalities of a *key* (the immutable values and, for
  ``kappa = inf``, the label).  The LP therefore splits into one independent block per key value, and
  ``W = inf`` exactly when some key carries different masses in ``P`` and ``Q`` (masses compared to
  ``1e-9``).  Infinite pairs never enter an LP.
* Block with equal numbers of atoms and one common weight: an optimal assignment is an optimal plan
  (Birkhoff-von Neumann), solved by :func:`scipy.optimize.linear_sum_assignment`.
* Other blocks: the LP above with sparse equality constraints, by HiGHS through
  :func:`scipy.optimize.linprog`.  Blocks with more than ``_DENSE_LP_MAX_PAIRS`` pairs are solved by
  column generation: the LP restricted to a sparse set of pairs (nearest neighbours plus a feasible
  north-west-corner plan) is solved, every pair's reduced cost ``d_ij - u_i - v_j`` is checked against
  its duals, the most violated pairs are added, until none is below ``-1e-9 max(1, max d)``.  The stop
  test is the LP optimality certificate of the full problem (to that tolerance), not a heuristic.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment, linprog

from ..exceptions import ProblemTooLargeError, SolverError
from ..schema import MixedData
from .ground import ResolvedMetric

#: blocks with at most this many pairs are solved as one LP over all pairs
_DENSE_LP_MAX_PAIRS = 40_000
#: largest block (pairs) whose cost matrix is built (8 bytes a pair)
_MAX_PAIRS = 50_000_000
#: masses of a key (class, immutable values) in P and Q closer than this are taken as equal
_MASS_TOL = 1e-9
_CG_NEIGHBOURS = 5      # initial pairs per row and per column
_CG_ADD = 3             # pairs added per row and per column and iteration
_CG_MAX_ITER = 200


def _keys(data: MixedData, labels, metric: ResolvedMetric, regression: bool) -> np.ndarray:
    """Per sample, the values that must agree for a finite cost (immutable features, labels at
    ``kappa = inf``), as a float matrix (``+ 0.0`` turns ``-0.0`` into ``0.0``)."""
    parts = [data.X[:, np.isinf(metric.gamma)], data.Z[:, np.isinf(metric.delta)].astype(float)]
    if labels is not None and np.isinf(metric.kappa):
        parts.append(labels[:, None])
    return np.hstack(parts) + 0.0


def _cost_matrix(Xp, Zp, lp, Xq, Zq, lq, metric: ResolvedMetric, regression: bool) -> np.ndarray:
    """The finite part of the ground cost between the rows of P and Q, shape (a, b), vectorized.

    Immutable columns and, at ``kappa = inf``, labels agree inside a block and add 0."""
    a, b = Xp.shape[0], Xq.shape[0]
    gamma, delta = metric.gamma, metric.delta
    num = np.flatnonzero(np.isfinite(gamma) & (gamma > 0))
    if num.size:          # N(Gamma (x - x')) between every pair (the l_p cost: scipy's cdist)
        C = metric.numerical.pairwise(Xp[:, num] * gamma[num], Xq[:, num] * gamma[num], num)
    else:
        C = np.zeros((a, b))
    cat = np.flatnonzero(np.isfinite(delta) & (delta > 0))
    if cat.size:
        cp_ = metric.categorical.validated_p()
        D = np.zeros((a, b))
        for l in cat:  # (delta_l U_l(z, z'))^p; U_l = 1 - I for the mismatch cost
            U = metric.units[l]
            D += (delta[l] * U[Zp[:, l][:, None], Zq[:, l][None, :]]) ** cp_
        if cp_ != 1:
            D **= 1.0 / cp_
        C += D
    kappa = metric.kappa
    if lp is not None and np.isfinite(kappa):
        if regression:
            C += kappa * np.abs(lp[:, None] - lq[None, :])
        else:
            C += kappa * (lp[:, None] != lq[None, :])
    return C


def solve(data_p: MixedData, data_q: MixedData, lab_p, lab_q, regression: bool, wp, wq,
          metric: ResolvedMetric):
    """``(W, rows, cols, plan values)`` in the original sample indices."""
    keep_p, keep_q = np.flatnonzero(wp > 0), np.flatnonzero(wq > 0)
    kp = _keys(data_p, lab_p, metric, regression)[keep_p]
    kq = _keys(data_q, lab_q, metric, regression)[keep_q]
    if kp.shape[1]:
        _, inv = np.unique(np.vstack([kp, kq]), axis=0, return_inverse=True)
        inv = inv.ravel()
        gp, gq = inv[:keep_p.size], inv[keep_p.size:]
    else:
        gp, gq = np.zeros(keep_p.size, int), np.zeros(keep_q.size, int)
    n_groups = int(max(gp.max(initial=-1), gq.max(initial=-1))) + 1
    mass_p = np.bincount(gp, weights=wp[keep_p], minlength=n_groups)
    mass_q = np.bincount(gq, weights=wq[keep_q], minlength=n_groups)
    if np.any(np.abs(mass_p - mass_q) > _MASS_TOL):
        return np.inf, None, None, None

    total, rows, cols, vals = 0.0, [], [], []
    for g in range(n_groups):
        ip, iq = keep_p[gp == g], keep_q[gq == g]
        a, b = ip.size, iq.size
        if a * b > _MAX_PAIRS:
            raise ProblemTooLargeError(
                f"the transport problem has a block of {a} x {b} = {a * b} pairs, more than the "
                f"{_MAX_PAIRS} whose dense cost matrix drokit builds; subsample P and Q")
        C = _cost_matrix(data_p.X[ip], data_p.Z[ip], None if lab_p is None else lab_p[ip],
                         data_q.X[iq], data_q.Z[iq], None if lab_q is None else lab_q[iq],
                         metric, regression)
        p = wp[ip]
        q = wq[iq] * (mass_p[g] / mass_q[g])  # exact balance (the masses agree to _MASS_TOL)
        r, c, v = _transport(C, p, q)
        total += float(np.dot(v, C[r, c]))
        rows.append(ip[r])
        cols.append(iq[c])
        vals.append(v)
    return total, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _transport(C: np.ndarray, p: np.ndarray, q: np.ndarray):
    """An optimal plan of the balanced transportation problem as ``(rows, cols, values)``."""
    a, b = C.shape
    if a == 1 or b == 1:  # one atom: every unit of mass goes to / comes from it
        r = np.zeros(b, int) if a == 1 else np.arange(a)
        c = np.arange(b) if a == 1 else np.zeros(a, int)
        return r, c, (q if a == 1 else p).copy()
    w = p[0]
    if a == b and np.allclose(p, w, rtol=1e-12, atol=0) and np.allclose(q, w, rtol=1e-12, atol=0):
        return _assignment(C, p)
    if a * b <= _DENSE_LP_MAX_PAIRS:
        rows = np.repeat(np.arange(a), b)
        cols = np.tile(np.arange(b), a)
        x, _ = _support_lp(rows, cols, C.ravel(), p, q)
        return _nonzero(rows, cols, x)
    return _column_generation(C, p, q)


def _assignment(C: np.ndarray, p: np.ndarray):
    """Equal sizes and equal weights: an optimal permutation is an optimal plan (Birkhoff)."""
    r, c = linear_sum_assignment(C)
    return r, c, p[r].copy()


def _nonzero(rows, cols, x):
    x = np.maximum(x, 0.0)
    nz = x > 0
    return rows[nz], cols[nz], x[nz]


def _support_lp(rows, cols, cost, p, q, fast: bool = False):
    """The transportation LP over the pairs ``(rows, cols)`` only; returns (plan values, duals)."""
    a, b, K = p.size, q.size, rows.size
    A = sp.csc_matrix((np.ones(2 * K), (np.concatenate([rows, a + cols]), np.tile(np.arange(K), 2))),
                      shape=(a + b, K))
    b_eq = np.concatenate([p, q])
    res = None
    if fast:  # interior point + crossover without presolve: about 2x faster on these sparse LPs
        res = linprog(cost, A_eq=A, b_eq=b_eq, bounds=(0, None), method="highs-ipm",
                      options={"presolve": False})
    if res is None or res.status != 0:
        res = linprog(cost, A_eq=A, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0 or res.x is None:
        raise SolverError(f"HiGHS did not solve the transportation LP ({a} x {b}, {K} pairs): "
                          f"{res.message}", status="solver_error", raw_status=str(res.status),
                          solver="highs")
    return res.x, res.eqlin.marginals


def _northwest_corner(p: np.ndarray, q: np.ndarray):
    """The pairs of the north-west-corner plan: a feasible support of ``a + b - 1`` pairs."""
    a, b = p.size, q.size
    rows, cols = np.empty(a + b, int), np.empty(a + b, int)
    pr, qr = p.copy(), q.copy()
    i = j = k = 0
    while i < a and j < b:
        rows[k], cols[k] = i, j
        k += 1
        m = min(pr[i], qr[j])
        pr[i] -= m
        qr[j] -= m
        if i == a - 1:
            j += 1
        elif j == b - 1 or pr[i] <= qr[j]:
            i += 1
        else:
            j += 1
    return rows[:k], cols[:k]


def _column_generation(C: np.ndarray, p: np.ndarray, q: np.ndarray):
    """The LP over all pairs, solved over a growing sparse support until every reduced cost is
    ``>= -tol``: then the restricted optimum is optimal for the full LP (LP duality)."""
    a, b = C.shape
    support = np.zeros((a, b), dtype=bool)
    k = min(_CG_NEIGHBOURS, b)
    support[np.arange(a)[:, None], np.argpartition(C, k - 1, axis=1)[:, :k]] = True
    k = min(_CG_NEIGHBOURS, a)
    support[np.argpartition(C, k - 1, axis=0)[:k, :], np.arange(b)[None, :]] = True
    r0, c0 = _northwest_corner(p, q)
    support[r0, c0] = True
    tol = 1e-9 * max(1.0, float(C.max()))
    for _ in range(_CG_MAX_ITER):
        rows, cols = np.nonzero(support)
        x, duals = _support_lp(rows, cols, C[rows, cols], p, q, fast=True)
        R = C - duals[:a, None]
        R -= duals[None, a:]
        R[support] = np.inf
        added = False
        k = min(_CG_ADD, b)
        idx = np.argpartition(R, k - 1, axis=1)[:, :k]
        sel = np.take_along_axis(R, idx, axis=1) < -tol
        if sel.any():
            support[np.broadcast_to(np.arange(a)[:, None], idx.shape)[sel], idx[sel]] = True
            added = True
        k = min(_CG_ADD, a)
        idx = np.argpartition(R, k - 1, axis=0)[:k, :]
        sel = np.take_along_axis(R, idx, axis=0) < -tol
        if sel.any():
            support[idx[sel], np.broadcast_to(np.arange(b)[None, :], idx.shape)[sel]] = True
            added = True
        if not added:
            return _nonzero(rows, cols, x)
    # did not converge (never seen): solve the full LP
    rows = np.repeat(np.arange(a), b)
    cols = np.tile(np.arange(b), a)
    x, _ = _support_lp(rows, cols, C.ravel(), p, q)
    return _nonzero(rows, cols, x)
