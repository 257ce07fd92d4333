"""Exact type-1 Wasserstein distance between two empirical distributions of mixed data.

For ``P = sum_i p_i delta_{xi_i}`` and ``Q = sum_j q_j delta_{xi'_j}`` (``xi = (x, z, y)``: numerical
features, categorical codes, optional label) and the ground metric of :class:`GroundMetric`,

    d(xi, xi') = ||Gamma (x - x')||_p + D(z, z') + kappa d_y(y, y'),

the distance is the optimal value of the transportation LP (Kantorovich's problem; Villani 2009,
*Optimal Transport: Old and New*, Def. 6.1)

    W(P, Q) = min_{pi >= 0}  sum_ij d(xi_i, xi'_j) pi_ij
              s.t.           sum_j pi_ij = p_i  (i = 1..N),    sum_i pi_ij = q_j  (j = 1..N').

selvi2025 (thesis §4.6) uses it to check that two Wasserstein balls intersect,
``eps + eps_hat >= W(P_N, P_hat)``, and to discard radius pairs that violate this in cross-validation;
see :mod:`drokit.metrics.radius`.

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

import copy
from typing import Optional

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment, linprog
from scipy.spatial.distance import cdist

from ..exceptions import DataError, ParameterError, ProblemTooLargeError, SolverError
from ..schema import FeatureSchema, MixedData, as_int, is_dataframe, is_missing, level_key
from .ground import GroundMetric, ResolvedMetric
from .scales import fitted_metric

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None

__all__ = ["wasserstein_distance"]

#: blocks with at most this many pairs are solved as one LP over all pairs
_DENSE_LP_MAX_PAIRS = 40_000
#: largest block (pairs) whose cost matrix is built (8 bytes a pair)
_MAX_PAIRS = 50_000_000
#: masses of a key (class, immutable values) in P and Q closer than this are taken as equal
_MASS_TOL = 1e-9
_CG_NEIGHBOURS = 5      # initial pairs per row and per column
_CG_ADD = 3             # pairs added per row and per column and iteration
_CG_MAX_ITER = 200


# --------------------------------------------------------------------------------- public API
def wasserstein_distance(P, Q, metric: Optional[GroundMetric] = None, *, weights_p=None, weights_q=None,
                         categorical_features=None, return_plan: bool = False, task: Optional[str] = None,
                         schema: Optional[FeatureSchema] = None, unseen_levels: str = "error"):
    """Type-1 Wasserstein distance ``W(P, Q)`` between two empirical distributions of mixed data.

    ``W(P, Q) = min { sum_ij d(xi_i, xi'_j) pi_ij : pi >= 0, sum_j pi_ij = p_i, sum_i pi_ij = q_j }``
    with the ground metric ``d = ||Gamma (x - x')||_p + D(z, z') + kappa d_y(y, y')`` of ``metric``
    (the transportation LP; Villani 2009, Def. 6.1).  selvi2025 (thesis §4.6) needs it for the
    non-emptiness condition ``eps + eps_hat >= W(P_N, P_hat)`` of two intersecting balls.  See the
    module docstring for how the LP is solved (blocks, assignment, HiGHS, column generation).

    Parameters
    ----------
    P, Q : the samples, each ``X`` (feature-only distribution) or a tuple ``(X, y)``; ``(X, None)`` is
        ``X``.  ``X`` is a pandas DataFrame or a 2-d array (a 1-d array is refused: reshape it with
        ``.reshape(-1, 1)`` for one feature).  Either both have labels or neither.
    metric : :class:`GroundMetric` (default ``GroundMetric()``: ``||x - x'||_1`` + mismatch count,
        ``kappa = inf``).  Its weights may name columns; ``inf`` weights make features immutable.
    weights_p, weights_q : non-negative sample weights (default uniform), normalised to sum 1.
        Atoms of weight 0 are dropped (their rows / columns of the plan are zero).
    categorical_features : as :meth:`FeatureSchema.infer` (indices, names or a mask); by default
        DataFrame columns of object / category / bool / string dtype are categorical and every column
        of an array is numerical.
    return_plan : also return the optimal plan, a ``scipy.sparse.csr_matrix`` of shape
        ``(len(P), len(Q))`` whose entries sum to 1 (``None`` when ``W = inf``).
    task : how labels are compared: ``"classification"`` (``kappa 1[y != y']``, any labels),
        ``"regression"`` (``kappa |y - y'|``, as :class:`LabelCost` and ``DRORegressor``), or ``None``
        (default): regression when the labels are numbers (not bool) with more than two distinct
        values in ``P`` and ``Q`` together, classification otherwise.
    schema : a :class:`FeatureSchema` to encode both samples with (e.g. a fitted model's
        ``schema_``; it is not modified); by default it is inferred from ``P``.
    unseen_levels : ``"error"`` (default) or ``"allow"``: what a categorical level of ``Q`` that ``P``
        does not have does.

    Returns
    -------
    ``float`` (``np.inf`` when the masses cannot be matched at finite cost, e.g. ``kappa = inf`` and
    different class proportions, or an immutable feature whose value distributions differ), or
    ``(float, plan)`` with ``return_plan``.

    Raises
    ------
    DataError : empty samples, NaN / inf values, different columns, unseen levels, label trouble,
        bad weights (negative, NaN, zero sum, wrong length).
    ParameterError : a metric that is not a :class:`GroundMetric`, an unknown ``task``.
    ProblemTooLargeError : a block with more than 5e7 pairs (the dense cost matrix would not fit).
    SolverError : HiGHS failed.

    Notes
    -----
    The feature schema is inferred from ``P`` and applied to ``Q``: ``Q`` must have the same columns
    (a DataFrame's are matched by name), and a categorical level of ``Q`` not seen in ``P`` raises
    :class:`DataError` naming the column and the level (it is often a spelling or coding mismatch,
    ``"Male"`` vs ``"male"``), unless it is declared in a pandas ``Categorical`` dtype of that column
    (in ``P`` or ``Q``) or ``unseen_levels="allow"``.  A level seen only in ``P`` is fine.  The
    distance itself only compares levels for equality, so the level sets do not change it.
    """
    if metric is None:
        metric = GroundMetric()
    if not isinstance(metric, GroundMetric):
        raise ParameterError(f"metric must be a drokit GroundMetric (or None for the default), "
                             f"got {type(metric).__name__}")
    if task not in (None, "auto", "classification", "regression"):
        raise ParameterError(f"task must be None, 'classification' or 'regression', got {task!r}")
    Xp, yp = _split(P, "P")
    Xq, yq = _split(Q, "Q")
    if (yp is None) != (yq is None):
        raise DataError("either both P and Q carry labels y or neither does: got labels for "
                        f"{'P' if yp is not None else 'Q'} only")
    if unseen_levels not in ("error", "allow"):
        raise ParameterError(f"unseen_levels must be 'error' or 'allow', got {unseen_levels!r}")
    if schema is None:
        _check_columns(Xp, Xq)
        schema = FeatureSchema.infer(Xp, categorical_features=categorical_features)
    elif not isinstance(schema, FeatureSchema):
        raise ParameterError(f"schema must be a drokit FeatureSchema, got {type(schema).__name__}")
    else:
        schema = copy.deepcopy(schema)
    _add_q_levels(schema, Xq, allow=unseen_levels == "allow")
    data_p = _encode(schema, Xp, "P")
    data_q = _encode(schema, Xq, "Q")
    n_p, n_q = data_p.n_samples, data_q.n_samples
    # a scaled numerical cost (NormCost(scale=...)) is measured on P's rows
    resolved = fitted_metric(metric, data_p.X, schema.numerical_names).resolve(schema)
    lab_p, lab_q, regression = _labels(yp, yq, n_p, n_q, task)
    wp = _weights(weights_p, n_p, "weights_p")
    wq = _weights(weights_q, n_q, "weights_q")

    value, rows, cols, vals = _solve(data_p, data_q, lab_p, lab_q, regression, wp, wq, resolved)
    if not return_plan:
        return value
    if not np.isfinite(value):
        return value, None
    plan = sp.csr_matrix((vals, (rows, cols)), shape=(n_p, n_q))
    return value, plan


# ------------------------------------------------------------------------------- input checks
def _split(P, name: str):
    if isinstance(P, tuple):
        if len(P) != 2:
            raise DataError(f"{name} must be X or a tuple (X, y), got a tuple of length {len(P)}")
        X, y = P
    else:
        X, y = P, None
    if X is None:
        raise DataError(f"{name} has no features (X is None)")
    if not is_dataframe(X):
        arr = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
        if arr.ndim != 2:
            raise DataError(f"{name}: X must be 2-dimensional (samples x features), got shape "
                            f"{np.shape(X)}; use X.reshape(-1, 1) for a single feature")
        X = arr
    if X.shape[0] == 0:
        raise DataError(f"{name} is empty (0 samples)")
    if y is not None:
        if pd is not None and isinstance(y, (pd.Series, pd.DataFrame)):
            y = y.to_numpy()
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise DataError(f"{name}: y must be 1-dimensional, got shape {y.shape}")
        if y.shape[0] != X.shape[0]:
            raise DataError(f"{name}: X and y have different lengths ({X.shape[0]} rows, "
                            f"{y.shape[0]} labels)")
        if y.dtype == object and is_missing(y).any():
            raise DataError(f"{name}: y has {int(is_missing(y).sum())} missing value(s)")
        if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
            bad = ~np.isfinite(y)
            raise DataError(f"{name}: y has {int(bad.sum())} NaN/inf value(s) (first at row "
                            f"{int(np.argmax(bad))})")
    return X, y


def _check_columns(Xp, Xq) -> None:
    if is_dataframe(Xp) and is_dataframe(Xq):
        cp_, cq_ = [str(c) for c in Xp.columns], [str(c) for c in Xq.columns]
        missing = [c for c in cp_ if c not in cq_]
        extra = [c for c in cq_ if c not in cp_]
        if missing or extra:
            raise DataError(f"P and Q must have the same columns: Q lacks {missing} and has extra "
                            f"{extra}")
    elif Xp.shape[1] != Xq.shape[1]:
        raise DataError(f"P has {Xp.shape[1]} columns but Q has {Xq.shape[1]}")


def _column(schema: FeatureSchema, X, j: int):
    """Column ``j`` of the schema in ``X`` (by name for a DataFrame fitted on one, else position);
    ``None`` when it is absent (``transform`` reports that)."""
    if is_dataframe(X):
        names = [str(c) for c in X.columns]
        if schema.from_dataframe:
            name = schema.feature_names[j]
            return X.iloc[:, names.index(name)] if name in names else None
        return X.iloc[:, j] if j < X.shape[1] else None
    return X[:, j] if j < X.shape[1] else None


def _add_q_levels(schema: FeatureSchema, Xq, allow: bool) -> None:
    """Extend the schema's levels by those declared in ``Q``'s pandas ``Categorical`` columns, and by
    the levels ``Q`` has and ``P`` lacks when ``allow``; otherwise raise naming them."""
    for k, j in enumerate(schema.categorical):
        col = _column(schema, Xq, j)
        if col is None:
            continue
        cats = list(schema.categories[k])
        declared = isinstance(getattr(col, "dtype", None), pd.CategoricalDtype) if pd is not None else False
        if declared:
            values = list(col.cat.categories)
        else:
            distinct = np.asarray(pd.unique(np.asarray(col, dtype=object)), dtype=object)
            values = list(distinct[~is_missing(distinct)])  # missing values: transform reports them
        index = {level_key(c) for c in cats}
        unseen = [v for v in values if level_key(v) not in index and as_int(v) not in index]
        if not unseen:
            continue
        if declared or allow:
            schema.categories[k] = cats + unseen
            continue
        shown = [str(v) for v in unseen[:5]]
        raise DataError(f"Q: categorical column {schema.feature_names[j]!r} has level(s) {shown} that P "
                        f"does not have (P's levels: {[str(c) for c in cats][:10]}); declare them in a "
                        f"pandas Categorical dtype of the column, or pass unseen_levels='allow'")


def _encode(schema: FeatureSchema, X, name: str) -> MixedData:
    try:
        return schema.transform(X, handle_unknown="error")
    except DataError as exc:
        raise DataError(f"{name}: {exc}") from None


def _labels(yp, yq, n_p: int, n_q: int, task):
    """Labels as comparable float arrays (class codes, or the values in regression) and whether
    they are compared as real numbers (``kappa |y - y'|``) rather than as classes."""
    if yp is None:
        return None, None, False
    if yp.dtype.kind in "iuf" and yq.dtype.kind in "iuf":
        both = np.concatenate([yp, yq]).astype(float)
        numeric = True
    else:
        both = np.concatenate([yp.astype(object), yq.astype(object)])
        numeric = all(isinstance(v, (int, float, np.integer, np.floating))
                      and not isinstance(v, (bool, np.bool_)) for v in both)
    if task in (None, "auto"):
        regression = numeric and np.unique(both.astype(float)).size > 2
    else:
        regression = task == "regression"
    if regression:
        if not numeric:
            raise DataError("task='regression' needs numeric labels y, got labels of type(s) "
                            f"{sorted({type(v).__name__ for v in both})}")
        values = both.astype(float)
        return values[:n_p], values[n_p:], True
    try:
        _, codes = np.unique(both, return_inverse=True)
    except TypeError:
        raise DataError(f"y mixes label types ({sorted({type(v).__name__ for v in both})}); use labels "
                        f"of one type") from None
    codes = codes.ravel().astype(float)
    return codes[:n_p], codes[n_p:], False


def _weights(w, n: int, name: str) -> np.ndarray:
    if w is None:
        return np.full(n, 1.0 / n)
    if pd is not None and isinstance(w, (pd.Series, pd.DataFrame)):
        w = w.to_numpy()
    try:
        w = np.asarray(w, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be numbers, got {w!r}") from None
    if w.ndim != 1 or w.shape[0] != n:
        raise DataError(f"{name} has shape {w.shape}, expected ({n},): one weight per sample")
    if not np.all(np.isfinite(w)):
        raise DataError(f"{name} has {int((~np.isfinite(w)).sum())} NaN/inf value(s)")
    if np.any(w < 0):
        raise DataError(f"{name} must be >= 0, got {int((w < 0).sum())} negative value(s) "
                        f"(first at {int(np.argmax(w < 0))})")
    total = w.sum()
    if not total > 0:
        raise DataError(f"{name} sum to 0: there is no mass to transport")
    return w / total


# ----------------------------------------------------------------------------- the solver
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
    num = np.isfinite(gamma) & (gamma > 0)
    if num.any():
        p = metric.numerical.validated_p()
        A, B = Xp[:, num] * gamma[num], Xq[:, num] * gamma[num]
        if p == 1:
            C = cdist(A, B, "cityblock")
        elif p == 2:
            C = cdist(A, B, "euclidean")
        elif np.isinf(p):
            C = cdist(A, B, "chebyshev")
        else:
            C = cdist(A, B, "minkowski", p=p)
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


def _solve(data_p: MixedData, data_q: MixedData, lab_p, lab_q, regression: bool, wp, wq,
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
