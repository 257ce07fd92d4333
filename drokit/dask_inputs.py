"""Dask collections as inputs (issue 25): recognised, checked and mapped over partitions without importing dask.

A fitted drokit model is a handful of numbers; its predictions and its exact worst-case risk are per-row work and sums
over rows.  On a ``dask.dataframe.DataFrame`` or a ``dask.array.Array`` that work runs partition by partition where the
data live, and only the results (a Dask collection of predictions, or a few numbers per partition) come back:

* :func:`map_rows`: ``f(pandas partition) -> (rows, k) array`` on every partition, as a Dask array with one chunk per
  partition (the estimators' ``decision_function`` / ``predict`` / ``predict_proba``);
* :func:`partition_triples`: the aligned ``(X, y, sample_weight)`` partitions as ``dask.delayed`` objects
  (:func:`drokit.evaluation.distributed_worst_case.worst_case_dask`).

dask is imported only when a Dask collection is passed (it is the optional ``dask`` extra).  Categorical columns must
have *known* categories (``ddf.categorize()``), as dask-ml requires: drokit's encoding is fixed at fit time and a
partition must not learn its own levels.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

from .exceptions import DataError


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a Dask DataFrame, Series or Array (duck-typed: ``__dask_graph__``; no dask import)."""
    return obj is not None and callable(getattr(obj, "__dask_graph__", None)) and not isinstance(obj, type)


def any_dask(*objects) -> bool:
    return any(is_dask_collection(o) for o in objects)


def _is_dask_frame(obj) -> bool:
    return is_dask_collection(obj) and hasattr(obj, "map_partitions") and hasattr(obj, "columns")


def check_known_categories(X, name: str = "X") -> None:
    """A Dask DataFrame's categorical columns must have known categories (one encoding for every partition)."""
    if not _is_dask_frame(X):
        return
    unknown = [str(c) for c, dtype in X.dtypes.items()
               if str(dtype) == "category" and not X[c].cat.known]
    if unknown:
        raise DataError(f"{name}: the categorical columns {unknown} have unknown categories in this Dask DataFrame; "
                        f"call {name} = {name}.categorize() (or astype a CategoricalDtype with the categories) first, "
                        f"so that every partition is encoded with the same levels")


def _row_blocks(X, name: str):
    """The row partitions of ``X`` as ``dask.delayed`` objects, and the number of partitions."""
    if is_dask_collection(X) and hasattr(X, "chunks"):             # dask.array
        if X.ndim == 2 and len(X.chunks[1]) != 1:
            X = X.rechunk({1: -1})                                 # every block holds whole rows
        blocks = list(np.ravel(X.to_delayed()))
        return blocks, len(blocks)
    if is_dask_collection(X) and hasattr(X, "to_delayed") and hasattr(X, "npartitions"):   # DataFrame, Series
        blocks = list(X.to_delayed())
        return blocks, len(blocks)
    raise DataError(f"{name} must be a Dask DataFrame, Series or Array here; got {type(X).__name__}")


def _row_chunks(X) -> Optional[Tuple[int, ...]]:
    """The known row counts of ``X``'s partitions (``None`` when dask does not know them)."""
    if hasattr(X, "chunks") and not hasattr(X, "columns") and not hasattr(X, "map_partitions"):
        rows = X.chunks[0]
        return None if any(np.isnan(r) for r in rows) else tuple(int(r) for r in rows)
    return None


def partition_triples(X, y, sample_weight=None, name: str = "X") -> List[tuple]:
    """``[(X_k, y_k, w_k)]``: the aligned partitions of ``X``, ``y`` and ``sample_weight`` (``w_k = None`` without
    weights) as ``dask.delayed`` objects.  ``y`` and ``sample_weight`` must be Dask collections partitioned as ``X``
    (e.g. columns of the same DataFrame, or arrays with the same row chunks)."""
    check_known_categories(X, name)
    xs, n = _row_blocks(X, name)
    ys, ny = _row_blocks(y, "y")
    if ny != n:
        raise DataError(f"y has {ny} partitions but {name} has {n}: partition them alike (e.g. take y as a column "
                        f"of the same Dask DataFrame, or rechunk the arrays to the same row chunks)")
    for other, label in ((y, "y"), (sample_weight, "sample_weight")):
        if other is None:
            continue
        a, b = _row_chunks(X), _row_chunks(other)
        if a is not None and b is not None and a != b:
            raise DataError(f"{label} has row chunks {b} but {name} has {a}: they must be partitioned alike")
        da, db = getattr(X, "divisions", None), getattr(other, "divisions", None)
        if da is not None and db is not None and None not in da and None not in db and tuple(da) != tuple(db):
            raise DataError(f"{label} and {name} have different divisions ({db} against {da}): partition them alike")
    if sample_weight is None:
        ws = [None] * n
    else:
        ws, nw = _row_blocks(sample_weight, "sample_weight")
        if nw != n:
            raise DataError(f"sample_weight has {nw} partitions but {name} has {n}: partition them alike")
    return list(zip(xs, ys, ws))


def map_rows(X, function: Callable, n_outputs: int, dtype=float):
    """``function(partition)`` on every row partition of ``X`` (a pandas DataFrame, a numpy block, ...), returning a
    numpy array of ``len(partition)`` rows (``n_outputs = 0``: one-dimensional) -- a Dask array with one chunk per
    partition (row counts unknown until computed; ``.compute()`` gives the numpy result of the whole ``X``)."""
    import dask
    import dask.array as da

    check_known_categories(X)
    blocks, _ = _row_blocks(X, "X")
    shape = (np.nan,) if n_outputs == 0 else (np.nan, n_outputs)
    empty = (0,) if n_outputs == 0 else (0, n_outputs)

    def on_block(block):            # an empty partition (a filter's) has an empty result, not a validation error
        return np.empty(empty, dtype=dtype) if len(block) == 0 else function(block)
    parts = [da.from_delayed(dask.delayed(on_block)(b), shape=shape, dtype=dtype) for b in blocks]
    if not parts:
        raise DataError("X has no partitions")
    return da.concatenate(parts, axis=0)


def refuse_dask(where: str, *objects) -> None:
    """A :class:`DataError` when any of ``objects`` is a Dask collection and ``where`` (``cross_validate_grid``) does
    not take them: its folds index rows, which a Dask collection does not offer cheaply."""
    if any_dask(*objects):
        raise DataError(f"{where} does not take Dask collections: its folds index rows.  DROClassifierCV / "
                        f"DRORegressorCV cross-validate the radius on Dask collections (folds dealt within the "
                        f"partitions, fits and scores by partition); or fit DROClassifier / DRORegressor on the Dask "
                        f"data at a chosen radius, or cross-validate on an in-memory sample")


def current_client(client=None):
    """``client``, else the current ``dask.distributed`` client, else ``None`` (then the local scheduler)."""
    if client is not None:
        return client
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        return None


__all__ = ["refuse_dask", "current_client", "is_dask_collection", "any_dask", "check_known_categories", "partition_triples", "map_rows"]
