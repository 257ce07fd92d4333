"""Running a sweep's fits: the joblib backend, the dask client, one fit and score per task, progress lines.

Every (combination, split) fit is one task of :class:`joblib.Parallel`, run under
``joblib.parallel_config(backend=...)``: ``"loky"`` (local processes, the default), ``"threading"``,
``"sequential"``, ``"dask"`` (``dask.distributed``: a temporary ``LocalCluster``, a scheduler address or an
existing ``Client``) or any backend registered with joblib (e.g. ``"ray"`` after
``ray.util.joblib.register_ray()``); :func:`check_backend` rejects other names before any fit.  drokit
schedules nothing itself.

Each task fits a fresh clone on its split (:func:`fit_and_score`) and returns a record of the score, the
timings, the error and the drokit fit's certificate.  The fits are deterministic, so the same seed gives the
same scores on every backend.
"""

from __future__ import annotations

import math
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from numbers import Integral
from typing import Any, Dict, Iterator, Mapping, Optional

import numpy as np
from joblib import parallel_config
from sklearn.base import clone

from ..exceptions import ParameterError
from .result import FIT_RECORD_DEFAULTS, FitFailedError, Split, describe

_BUILTIN_BACKENDS = ("loky", "multiprocessing", "threading", "sequential", "dask")


# ---------------------------------------------------------------------------------- the backend
def check_backend(backend, scheduler) -> None:
    """Unknown backend names and a ``scheduler`` without dask raise :class:`ParameterError`."""
    from joblib import parallel as jp

    known = sorted(set(jp.BACKENDS) | set(getattr(jp, "EXTERNAL_BACKENDS", {})) | set(_BUILTIN_BACKENDS))
    if not isinstance(backend, str) or backend not in known:
        raise ParameterError(f"backend must be one of {known} (or a backend registered with "
                             f"joblib.register_parallel_backend), got {backend!r}")
    if scheduler is not None and backend != "dask":
        raise ParameterError(f"scheduler is only used with backend='dask', got backend={backend!r}")


@contextmanager
def joblib_backend(backend: str, scheduler, n_jobs) -> Iterator[Optional[int]]:
    """``joblib.parallel_config`` for the backend; for dask, with a client (temporary if needed).
    Yields the ``n_jobs`` to give ``Parallel``."""
    if backend != "dask":
        with parallel_config(backend=backend):
            yield n_jobs
        return
    with _dask_client(scheduler, n_jobs) as client:
        with parallel_config(backend="dask", client=client):
            yield -1


@contextmanager
def _dask_client(scheduler, n_jobs):
    """A ``distributed.Client``: the given one, one connected to an address or cluster, or one on a
    temporary ``LocalCluster``; the clients and clusters created here are closed on exit."""
    try:
        import distributed
    except ImportError:
        raise ImportError("backend='dask' needs dask.distributed; install it with "
                          "`pip install drokit[dask]`") from None
    if isinstance(scheduler, distributed.Client):
        yield scheduler
        return
    cluster = None
    if scheduler is None:
        workers = n_jobs if isinstance(n_jobs, Integral) and n_jobs > 0 else None
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                           dashboard_address=None)
        target = cluster
    elif isinstance(scheduler, str) or hasattr(scheduler, "scheduler_address"):
        target = scheduler
    else:
        raise ParameterError(f"scheduler must be None, a scheduler address, a distributed.Client "
                             f"or a dask cluster, got {type(scheduler).__name__}")
    client = distributed.Client(target, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ---------------------------------------------------------------------------------- one task
def fit_and_score(estimator, X, y, params: Dict[str, Any], split: Split, scorer, candidate: int,
                   k: int, split_name: str, shown: Mapping[str, Any], raise_errors: bool,
                   sample_weight: Optional[np.ndarray] = None) -> dict:
    """Fit a clone with ``params`` on the training rows, score it on the test rows.

    Returns ``{candidate, split, test_score, fit_time, score_time, error, status, method, solver,
    relative_gap, warnings}``; a failure is recorded in ``error`` (``"fit: Type: message"``) unless ``raise_errors``.
    ``sample_weight``: the weights of all rows; the training rows' go to ``fit``, the test rows' to the scorer.
    """
    return _fit_and_score(clone(estimator), X, y, params, split, scorer, candidate, k, split_name, shown,
                          raise_errors, sample_weight)


def fit_path_and_score(estimator, X, y, steps, split: Split, scorer, k: int, split_name: str, raise_errors: bool,
                       warm_key: str, sample_weight: Optional[np.ndarray] = None) -> list:
    """One clone, ``warm_key`` (its ``warm_start`` parameter) set, fitted in turn with each ``(candidate, params,
    shown)`` of ``steps`` on the training rows of ``split`` and scored on its test rows: every fit after the first
    starts from the last one's solution (a path over radii).  A list of :func:`fit_and_score`'s records."""
    model = clone(estimator).set_params(**{warm_key: True})
    return [_fit_and_score(model, X, y, params, split, scorer, candidate, k, split_name, shown, raise_errors,
                           sample_weight) for candidate, params, shown in steps]


def _fit_and_score(model, X, y, params: Dict[str, Any], split: Split, scorer, candidate: int, k: int,
                   split_name: str, shown: Mapping[str, Any], raise_errors: bool,
                   sample_weight: Optional[np.ndarray] = None) -> dict:
    train, test = split
    fit_weight = {} if sample_weight is None else {"sample_weight": sample_weight[train]}
    score_weight = {} if sample_weight is None else {"sample_weight": sample_weight[test]}
    record = {"candidate": candidate, "split": k, **FIT_RECORD_DEFAULTS}
    stage = "fit"
    try:
        model.set_params(**params)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(_rows(X, train), _rows(y, train), **fit_weight)
        record["fit_time"] = time.perf_counter() - start
        record["warnings"] = "; ".join(dict.fromkeys(str(w.message) for w in caught))
        result = _fit_result(model)
        if result is not None:
            record["status"], record["relative_gap"] = result.status, float(result.relative_gap)
            record["method"] = str(getattr(result, "method", ""))
            record["solver"] = str(getattr(result, "solver", ""))
        stage = "score"
        start = time.perf_counter()
        record["test_score"] = float(scorer(model, _rows(X, test), _rows(y, test), **score_weight))
        record["score_time"] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 -- recorded (error_score) or re-raised with context
        message = f"{stage}: {type(exc).__name__}: {exc}"
        if raise_errors:
            raise FitFailedError(f"{stage} failed for {describe(shown)} on {split_name}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        record["error"] = message
        record["traceback"] = traceback.format_exc()
    return record


def _fit_result(model):
    """The drokit ``FitResult`` of a fitted estimator (also the last step of a Pipeline), else None."""
    for candidate in (model, getattr(model, "steps", [(None, None)])[-1][1]):
        result = getattr(candidate, "result_", None)
        if result is not None and hasattr(result, "status"):
            return result
    return None


def _rows(data, index: np.ndarray):
    """The rows ``index`` of ``data``: ``iloc`` for pandas, indexing for an array (anything with a
    ``shape``), a list for a list (scikit-learn's row selection, without its private helper)."""
    if hasattr(data, "iloc"):
        return data.iloc[index]
    if hasattr(data, "shape"):
        return data[index]
    return [data[i] for i in index]


# ---------------------------------------------------------------------------------- progress
class Progress:
    """Progress lines on stderr: one per completed fit when there are at most ~50, otherwise about
    every 2%; every failure; updated in place on a terminal; silent when disabled."""

    def __init__(self, total: int, enabled: bool):
        self.total = total
        self.enabled = bool(enabled)
        self.done = 0
        self.failed = 0
        self.every = max(1, math.ceil(total / 50))
        self.stream = sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def update(self, record: dict, shown: Mapping[str, Any]) -> None:
        self.done += 1
        failed = bool(record["error"])
        self.failed += failed
        if not self.enabled:
            return
        what = f"[drokit sweep] {self.done}/{self.total} {describe(shown)} split {record['split']}: "
        if failed:
            self.line(what + f"FAILED ({record['error']})")
        elif self.tty:
            self._write("\r" + what + f"{record['test_score']:.6g} ({record['fit_time']:.2f} s)\x1b[K")
        elif self.done % self.every == 0 or self.done == self.total:
            self.line(what + f"{record['test_score']:.6g} ({record['fit_time']:.2f} s)")

    def close(self, elapsed: float) -> None:
        self.line(f"[drokit sweep] {self.total} fits in {elapsed:.2f} s, {self.failed} failed")

    def line(self, text: str) -> None:
        if self.enabled:
            self._write(("\r" if self.tty else "") + text + ("\x1b[K" if self.tty else "") + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
