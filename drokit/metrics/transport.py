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

The samples are encoded here (one feature schema, inferred from ``P`` and applied to ``Q``; labels as class codes
or values; normalised weights); the LP is solved by :mod:`drokit.metrics.transport_solvers` (one block per value
of the immutable features and, at ``kappa = inf``, the label; an assignment, HiGHS, or column generation).
"""

from __future__ import annotations

import copy
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..exceptions import DataError, ParameterError
from ..schema import FeatureSchema, MixedData, as_int, is_dataframe, is_missing, level_key
from .ground import GroundMetric
from .scales import fitted_metric
from .transport_solvers import solve

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None

__all__ = ["wasserstein_distance"]


# --------------------------------------------------------------------------------- public API
def wasserstein_distance(P, Q, metric: Optional[GroundMetric] = None, *, weights_p=None, weights_q=None,
                         categorical_features=None, return_plan: bool = False, task: Optional[str] = None,
                         schema: Optional[FeatureSchema] = None, unseen_levels: str = "error"):
    """Type-1 Wasserstein distance ``W(P, Q)`` between two empirical distributions of mixed data.

    ``W(P, Q) = min { sum_ij d(xi_i, xi'_j) pi_ij : pi >= 0, sum_j pi_ij = p_i, sum_i pi_ij = q_j }``
    with the ground metric ``d = ||Gamma (x - x')||_p + D(z, z') + kappa d_y(y, y')`` of ``metric``
    (the transportation LP; Villani 2009, Def. 6.1).  selvi2025 (thesis §4.6) needs it for the
    non-emptiness condition ``eps + eps_hat >= W(P_N, P_hat)`` of two intersecting balls.  See
    :mod:`drokit.metrics.transport_solvers` for how the LP is solved (blocks, assignment, HiGHS, column generation).

    Parameters
    ----------
    P, Q : array_like or tuple
        The samples, each ``X`` (feature-only distribution) or a tuple ``(X, y)``; ``(X, None)`` is
        ``X``.  ``X`` is a pandas DataFrame or a 2-d array (a 1-d array is refused: reshape it with
        ``.reshape(-1, 1)`` for one feature).  Either both have labels or neither.
    metric : GroundMetric or None
        :class:`GroundMetric` (default ``GroundMetric()``: ``||x - x'||_1`` + mismatch count,
        ``kappa = inf``).  Its weights may name columns; ``inf`` weights make features immutable.
    weights_p, weights_q : array_like or None
        Non-negative sample weights (default uniform), normalised to sum 1.  Atoms of weight 0 are
        dropped (their rows / columns of the plan are zero).
    categorical_features : array_like or None
        As :meth:`FeatureSchema.infer` (indices, names or a mask); by default DataFrame columns of
        object / category / bool / string dtype are categorical and every column of an array is
        numerical.
    return_plan : bool
        Also return the optimal plan, a ``scipy.sparse.csr_matrix`` of shape ``(len(P), len(Q))``
        whose entries sum to 1 (``None`` when ``W = inf``).
    task : str or None
        How labels are compared: ``"classification"`` (``kappa 1[y != y']``, any labels),
        ``"regression"`` (``kappa |y - y'|``, as :class:`LabelCost` and ``DRORegressor``), or ``None``
        (default): regression when the labels are numbers (not bool) with more than two distinct
        values in ``P`` and ``Q`` together, classification otherwise.
    schema : FeatureSchema or None
        A :class:`FeatureSchema` to encode both samples with (e.g. a fitted model's ``schema_``; it is
        not modified); by default it is inferred from ``P``.
    unseen_levels : {"error", "allow"}
        ``"error"`` (default) or ``"allow"``: what a categorical level of ``Q`` that ``P`` does not
        have does.

    Returns
    -------
    float or tuple
        ``float`` (``np.inf`` when the masses cannot be matched at finite cost, e.g. ``kappa = inf``
        and different class proportions, or an immutable feature whose value distributions differ), or
        ``(float, plan)`` with ``return_plan``.

    Raises
    ------
    DataError
        Empty samples, NaN / inf values, different columns, unseen levels, label trouble, bad weights
        (negative, NaN, zero sum, wrong length).
    ParameterError
        A metric that is not a :class:`GroundMetric`, an unknown ``task``.
    ProblemTooLargeError
        A block with more than 5e7 pairs (the dense cost matrix would not fit).
    SolverError
        HiGHS failed.

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

    value, rows, cols, vals = solve(data_p, data_q, lab_p, lab_q, regression, wp, wq, resolved)
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
