"""Cross-validated sweeps over ambiguity grids (radius or theta, kappa, any estimator parameter).

:func:`cross_validate_grid` scores every parameter combination of a grid on the same repeated
(stratified) K-fold splits and returns a :class:`SweepResult`.  Every (combination, split) fit is one
task of :class:`joblib.Parallel`, run under ``joblib.parallel_config(backend=...)``: ``"loky"`` (local
processes, the default), ``"threading"``, ``"sequential"``, ``"dask"`` (``dask.distributed``: a
temporary ``LocalCluster``, a scheduler address or an existing ``Client``) or any backend registered
with joblib (e.g. ``"ray"`` after ``ray.util.joblib.register_ray()``).  drokit schedules nothing
itself.

The splits are drawn once, in the calling process, from the seed; each task fits a fresh clone on its
split.  The fits are deterministic, so the same seed gives the same scores on every backend.

Convenience grid keys (besides any ``set_params`` name such as ``ambiguity__radius``):

* ``radius``: the Wasserstein radius ``eps`` (``ambiguity__radius``);
* ``theta``: the likelihood-ratio level of sun2025 §3.3, mapped to ``eps = -log(theta)``
  (:func:`drokit.radius_from_theta`); exclusive with ``radius``;
* ``kappa``: the label-flip cost of the ground metric (``ambiguity__metric__label__kappa``).

A ``None`` ambiguity, metric or label cost on the path of a grid key stands for its default object
(``Wasserstein()``, ``GroundMetric()``, ``LabelCost()``): ``get_params(deep=True)`` lists its nested names
and ``set_params`` stores it before setting them (:mod:`drokit.params`), as in ``GridSearchCV``.
"""

from __future__ import annotations

import math
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Callable, Collection, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config
from sklearn.base import clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid, RepeatedKFold, RepeatedStratifiedKFold

from ..ambiguity import Wasserstein
from ..exceptions import DrokitError, ParameterError
from ..metrics import LabelCost, radius_from_theta
from ..models import DROClassifier, DRORegressor

#: convenience grid keys -> the nested parameter they set on a drokit estimator
CONVENIENCE_KEYS = {"radius": "ambiguity__radius", "theta": "ambiguity__radius",
                    "kappa": "ambiguity__metric__label__kappa"}

_BUILTIN_BACKENDS = ("loky", "multiprocessing", "threading", "sequential", "dask")

Grid = Union[Mapping[str, Sequence], Sequence[Mapping[str, Sequence]]]
Split = Tuple[np.ndarray, np.ndarray]


class FitFailedError(DrokitError, RuntimeError):
    """A fit (or its scoring) failed during a sweep with ``error_score="raise"``, or every fit failed.

    The message names the parameters and the split; the original exception is the ``__cause__``.
    """


# --------------------------------------------------------------------------------------- result
@dataclass
class SweepResult:
    """Outcome of :func:`cross_validate_grid`.

    Attributes
    ----------
    results : one row per parameter combination, in grid order: ``params`` (the grid's keys),
        ``param_<key>`` columns (``param_radius`` is added for a ``theta`` grid), ``mean_test_score``,
        ``std_test_score`` (population std over splits), ``rank_test_score`` (1 = best; rows with a
        failed fit rank last), ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``n_failed_fits``, ``n_uncertified_fits`` (drokit fits whose status is not ``"optimal"``),
        ``errors`` (one ``"split k (repeat r, fold f): Type: message"`` per failed
        fit, ``""`` if none) and ``split<k>_test_score`` for every split ``k``.
    fits : one row per fit: ``candidate`` (row of ``results``), ``split``, ``test_score``,
        ``fit_time``, ``score_time``, ``error``, and for drokit estimators the fit's certificate:
        ``status`` (``result_.status``; ``""`` otherwise), ``method`` (``result_.method``, the compile path
        ``auto`` chose; ``""`` otherwise), ``solver`` (``result_.solver``, e.g. ``"barrier"`` or
        ``"clarabel"``; ``""`` otherwise), ``relative_gap`` (NaN otherwise) and
        ``warnings`` (the messages the fit warned, e.g. an uncertified cutting plane with
        ``on_inaccurate="warn"``; warnings raised in worker processes are otherwise lost).
    best_index_ : row of the best combination (highest mean score among those without failures), or
        ``None`` when every combination had a failed fit (only with ``refit=False``; with a refit
        that raises :class:`FitFailedError`).
    best_params_ : its grid parameters (``{"theta": 0.9, "kappa": 1.0}``), or ``None``.
    best_score_ : its mean test score (NaN when there is none).
    best_estimator_ : a clone with ``best_params_``, refit on all of ``X, y`` (``refit=True``), else None.
    best_estimator_params_ : ``best_params_`` translated to ``set_params`` names (``ambiguity__radius``).
    splits : the (train, test) index arrays, in split order: pass ``cv=result.splits`` to reproduce
        them (e.g. in ``GridSearchCV``).
    scoring : the scorer's name.
    backend : the joblib backend that ran the fits.
    elapsed : wall-clock seconds of the sweep (without the refit).
    refit_time : seconds of the refit (0 without one).
    """

    results: pd.DataFrame
    fits: pd.DataFrame
    best_index_: Optional[int]
    best_params_: Optional[Dict[str, Any]]
    best_score_: float
    best_estimator_: Any
    best_estimator_params_: Optional[Dict[str, Any]]
    splits: List[Split] = field(repr=False)
    scoring: str = ""
    backend: str = ""
    elapsed: float = 0.0
    refit_time: float = 0.0

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table of the combinations, best first: parameters, mean +- std score, rank,
        mean fit time and failed fits."""
        table = self.results.sort_values("rank_test_score", kind="stable")
        params = [c for c in table.columns if c.startswith("param_")]
        head = [c[len("param_"):] for c in params] + [f"mean {self.scoring}", "std", "rank",
                                                       "fit time (s)", "failed"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for _, row in table.iterrows():
            cells = [_fmt(row[c], digits) for c in params]
            cells += [_fmt(row["mean_test_score"], digits), _fmt(row["std_test_score"], digits),
                      str(int(row["rank_test_score"])), _fmt(row["mean_fit_time"], 3),
                      str(int(row["n_failed_fits"]))]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def __str__(self) -> str:
        best = "none (every combination had a failed fit)" if self.best_params_ is None else \
            f"{_describe(self.best_params_)}: {self.best_score_:.6g}"
        return (f"SweepResult: {len(self.results)} combinations x {len(self.splits)} splits on "
                f"backend {self.backend!r} in {self.elapsed:.2f} s; best {self.scoring}: {best}")


def _fmt(value, digits: int) -> str:
    if isinstance(value, (float, np.floating)):
        return "nan" if np.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def _describe(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_fmt(v, 4)}" for k, v in params.items()) or "(no parameters)"


# ------------------------------------------------------------------------------------- the sweep
def cross_validate_grid(estimator, X, y, grid: Grid, *, cv=5, repeats: int = 1, scoring=None,
                        n_jobs: Optional[int] = None, backend: str = "loky", scheduler=None,
                        seed: Optional[int] = None, progress: bool = False, refit: bool = True,
                        error_score="nan") -> SweepResult:
    """Cross-validate every combination of ``grid`` on repeated K-fold splits, in parallel via joblib.

    For each combination ``c`` and split ``k`` the score ``s_{c,k}`` is ``scoring`` of a clone of
    ``estimator`` with ``c``, fit on the split's training rows and scored on its test rows.  The
    table reports ``mean_k s_{c,k}`` and its (population) standard deviation; the best combination
    maximises the mean (scorers are "greater is better", as in scikit-learn).

    Parameters
    ----------
    estimator : a scikit-learn estimator, typically a :class:`~drokit.DROClassifier` or
        :class:`~drokit.DRORegressor` (or a ``Pipeline`` ending in one; the convenience keys then reach
        the drokit step).  It is not modified.
    X, y : training data (DataFrame or array; categorical dtypes recognised as in ``fit``).
    grid : ``{name: values}`` (or a list of such dicts, as ``ParameterGrid``); names are ``radius``,
        ``theta``, ``kappa`` or any ``set_params`` name, e.g. ``"ambiguity__metric__numerical__p"``
        or ``"loss"``.  Every combination of the values is evaluated.
    cv : number of folds (``RepeatedStratifiedKFold`` for classifiers, ``RepeatedKFold`` otherwise,
        ``repeats`` times with ``random_state=seed``), or a scikit-learn splitter, or an iterable of
        ``(train, test)`` index arrays (then ``repeats`` must be 1).
    repeats : repetitions of the K-fold split with different shuffles.
    scoring : a scikit-learn scorer name (``"neg_log_loss"``, ``"roc_auc"``, ``"accuracy"``, ...) or a
        callable ``scorer(estimator, X, y)``.  ``None``: ``"neg_log_loss"`` for a classifier with
        ``predict_proba`` (the logistic loss), else the estimator's ``score`` (accuracy or R^2).
    n_jobs : parallel workers (joblib convention: ``None`` = 1 outside a joblib context, -1 = all
        cores).  With ``backend="dask"`` the cluster's threads are used and ``n_jobs`` only sets the
        number of workers of a temporary ``LocalCluster``.
    backend : ``"loky"`` (default), ``"threading"``, ``"multiprocessing"``, ``"sequential"``,
        ``"dask"`` or another backend registered with joblib.
    scheduler : only for ``backend="dask"``: ``None`` (start a ``LocalCluster`` for this call and
        close it afterwards), a scheduler address such as ``"tcp://10.0.0.5:8786"``, a
        ``distributed.Client`` (used as is, left open) or a cluster object (``LocalCluster``, ...).
    seed : random state of the splits; the same seed gives the same splits and the same scores on
        every backend.  ``None`` draws new splits on every call.
    progress : print one line per completed fit (at most about 50 lines; every failure; a counter
        updated in place on a terminal) and a summary to stderr.  Off by default, like the estimators'
        ``verbose`` (scikit-learn's convention).
    refit : refit the best combination on all of ``X, y`` (``best_estimator_``).
    error_score : what a failed fit (or scoring) scores: ``"nan"`` (default) or a number records it
        and warns (``FitFailedWarning``); the error text is kept in ``results["errors"]``, and a
        combination with a failure cannot be best.  ``"raise"`` stops at the first failure with a
        :class:`FitFailedError` naming the parameters and the split.  If every fit fails, or
        ``refit=True`` and every combination has a failed fit, :class:`FitFailedError` is raised in
        any case.

    Returns
    -------
    :class:`SweepResult` with ``results``, ``best_params_``, ``best_score_``, ``best_estimator_``.

    Raises
    ------
    ParameterError : an empty grid or value list, both ``radius`` and ``theta``, a grid name the
        estimator does not have, an invalid radius / theta / kappa value, an unknown backend, a
        ``scheduler`` without ``backend="dask"``, a bad ``repeats`` or ``error_score``.
    ImportError : ``backend="dask"`` without ``dask.distributed`` (``pip install drokit[dask]``).
    FitFailedError : see ``error_score``.
    """
    started = time.perf_counter()
    _check_backend(backend, scheduler)
    error_score = _check_error_score(error_score)
    base = clone(estimator)
    own = _own_convenience_names(base)
    user_grid = _check_grid(grid, own)
    candidates = _candidates(user_grid)
    prefix = _drokit_prefix(base)
    translated = [_translate(c, prefix, own) for c in candidates]
    _check_names(base, translated, candidates)
    splits = _make_splits(base, X, y, cv, repeats, seed)
    scorer, scoring_name = _scorer(base, scoring)
    fold_count = cv if isinstance(cv, Integral) else None

    tasks = [(i, k) for i in range(len(candidates)) for k in range(len(splits))]
    reporter = _Progress(len(tasks), enabled=progress)
    records: Dict[Tuple[int, int], dict] = {}
    with _joblib_backend(backend, scheduler, n_jobs) as n_jobs_:
        run = Parallel(n_jobs=n_jobs_, return_as="generator_unordered")(
            delayed(_fit_and_score)(base, X, y, translated[i], splits[k], scorer, i, k,
                                    _split_name(k, fold_count), candidates[i], error_score == "raise")
            for i, k in tasks)
        for record in run:
            records[record["candidate"], record["split"]] = record
            reporter.update(record, candidates[record["candidate"]])
    elapsed = time.perf_counter() - started
    reporter.close(elapsed)

    fits = _fits_table(records, tasks, error_score)
    results = _results_table(fits, candidates, len(splits))
    _warn_failures(fits, results)
    best = _best_index(results)
    best_estimator, refit_time = None, 0.0
    if refit and best is None:
        raise FitFailedError(f"every parameter combination had a failed fit, so none can be refit; "
                             f"first failure: {results.loc[results['n_failed_fits'] > 0, 'errors'].iloc[0]}")
    if refit:
        start = time.perf_counter()
        best_estimator = clone(base).set_params(**translated[best]).fit(X, y)
        refit_time = time.perf_counter() - start
        reporter.line(f"[drokit sweep] refit {_describe(candidates[best])} on all {len(y)} rows in "
                      f"{refit_time:.2f} s")
    return SweepResult(results=results, fits=fits, best_index_=best,
                       best_params_=None if best is None else dict(candidates[best]),
                       best_score_=float("nan") if best is None else
                       float(results.at[best, "mean_test_score"]),
                       best_estimator_=best_estimator,
                       best_estimator_params_=None if best is None else dict(translated[best]),
                       splits=splits, scoring=scoring_name, backend=backend, elapsed=elapsed,
                       refit_time=refit_time)


# ------------------------------------------------------------------------------------ validation
def _check_backend(backend, scheduler) -> None:
    """Unknown backend names and a ``scheduler`` without dask raise :class:`ParameterError`."""
    from joblib import parallel as jp

    known = sorted(set(jp.BACKENDS) | set(getattr(jp, "EXTERNAL_BACKENDS", {})) | set(_BUILTIN_BACKENDS))
    if not isinstance(backend, str) or backend not in known:
        raise ParameterError(f"backend must be one of {known} (or a backend registered with "
                             f"joblib.register_parallel_backend), got {backend!r}")
    if scheduler is not None and backend != "dask":
        raise ParameterError(f"scheduler is only used with backend='dask', got backend={backend!r}")


def _check_error_score(error_score):
    if isinstance(error_score, str) and error_score in ("nan", "raise"):
        return float("nan") if error_score == "nan" else "raise"
    if isinstance(error_score, Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise ParameterError(f"error_score must be 'nan', 'raise' or a number, got {error_score!r}")


def _own_convenience_names(estimator) -> set:
    """The convenience keys (``radius``, ``theta``, ``kappa``) that ``estimator`` has as parameters of its
    own (a user's wrapper with a ``kappa`` argument): those grid keys set the estimator's parameter, not
    the nested drokit one."""
    return set(CONVENIENCE_KEYS) & set(estimator.get_params(deep=False))


def _check_grid(grid: Grid, own: Collection[str] = ()) -> List[Dict[str, list]]:
    """The grid as a non-empty list of ``{name: non-empty list of values}``; the values of convenience keys
    (except the estimator's ``own`` parameters of those names) are validated."""
    grids = [grid] if isinstance(grid, Mapping) else grid
    if not isinstance(grids, Sequence) or isinstance(grids, str) or not grids:
        raise ParameterError(f"grid must be a non-empty {{name: [values]}} dict (or a list of such "
                             f"dicts), got {grid!r}")
    out = []
    for g in grids:
        if not isinstance(g, Mapping) or not g:
            raise ParameterError(f"grid must map parameter names to lists of values; got the empty "
                                 f"or invalid entry {g!r}")
        checked = {}
        for name, values in g.items():
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise ParameterError(f"grid[{name!r}] must be a list of values, got {values!r}")
            values = list(values)
            if not values:
                raise ParameterError(f"grid[{name!r}] has no values")
            checked[name] = values
        if "radius" in checked and "theta" in checked and not {"radius", "theta"} & set(own):
            raise ParameterError("grid has both 'radius' and 'theta'; theta sets the radius "
                                 "(radius = -log(theta)), give one of them")
        _check_convenience_values({k: v for k, v in checked.items() if k not in own})
        out.append(checked)
    return out


def _check_convenience_values(grid: Mapping[str, list]) -> None:
    """Radius, theta and kappa values are validated before any fit (ParameterError)."""
    for r in grid.get("radius", []):
        Wasserstein(radius=r).validated_radius()
    for t in grid.get("theta", []):
        radius_from_theta(t)
    for k in grid.get("kappa", []):
        LabelCost(kappa=k).validated_kappa()


def _candidates(grids: List[Dict[str, list]]) -> List[Dict[str, Any]]:
    """Every combination, keys in the grid's order (``ParameterGrid`` order of combinations)."""
    out = []
    for g in grids:
        for combo in ParameterGrid(g):
            out.append({name: combo[name] for name in g})
    return out


def _drokit_prefix(estimator) -> str:
    """``""`` for a drokit estimator; ``"step__"`` for a meta-estimator holding exactly one."""
    if isinstance(estimator, (DROClassifier, DRORegressor)):
        return ""
    inner = [name for name, value in estimator.get_params(deep=True).items()
             if isinstance(value, (DROClassifier, DRORegressor))]
    return inner[0] + "__" if len(inner) == 1 else ""


def _translate(params: Mapping[str, Any], prefix: str, own: Collection[str] = ()) -> Dict[str, Any]:
    """Grid keys -> ``set_params`` names; ``theta`` becomes the radius ``-log(theta)``.  A convenience key
    that is one of the estimator's ``own`` parameters is passed through unchanged."""
    out, source = {}, {}
    for name, value in params.items():
        convenience = name in CONVENIENCE_KEYS and name not in own
        target = prefix + CONVENIENCE_KEYS[name] if convenience else name
        if target in out:
            raise ParameterError(f"grid keys {source[target]!r} and {name!r} both set {target!r}; "
                                 f"give one of them")
        out[target], source[target] = (radius_from_theta(value) if convenience and name == "theta"
                                       else value), name
    return out


def _rows(data, index: np.ndarray):
    """The rows ``index`` of ``data``: ``iloc`` for pandas, indexing for an array (anything with a
    ``shape``), a list for a list (scikit-learn's row selection, without its private helper)."""
    if hasattr(data, "iloc"):
        return data.iloc[index]
    if hasattr(data, "shape"):
        return data[index]
    return [data[i] for i in index]


def _check_names(estimator, translated: List[Dict[str, Any]], candidates) -> None:
    """Every grid name must be a parameter of the estimator; each combination must apply."""
    valid = estimator.get_params(deep=True)
    for params, original in zip(translated, candidates):
        for (target, _), key in zip(params.items(), original):
            if target not in valid:
                via = "" if target == key else f" (grid key {key!r})"
                raise ParameterError(f"{type(estimator).__name__} has no parameter {target!r}{via}; "
                                     f"its parameters are {sorted(valid)}")
        try:
            clone(estimator).set_params(**params)
        except (ValueError, AttributeError, TypeError) as exc:
            raise ParameterError(f"cannot set {_describe(original)} on "
                                 f"{type(estimator).__name__}: {exc}") from exc


def _make_splits(estimator, X, y, cv, repeats, seed) -> List[Split]:
    """The (train, test) index arrays, drawn once in this process."""
    if not (isinstance(repeats, Integral) and repeats >= 1):
        raise ParameterError(f"repeats must be a positive integer, got {repeats!r}")
    if isinstance(cv, Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ParameterError(f"cv must be at least 2 folds, got {cv!r}")
        kind = RepeatedStratifiedKFold if is_classifier(estimator) else RepeatedKFold
        splitter = kind(n_splits=int(cv), n_repeats=int(repeats), random_state=seed)
        return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(X, y)]
    if repeats != 1:
        raise ParameterError("repeats applies to an integer cv only; repeat inside your splitter")
    split = cv.split(X, y) if hasattr(cv, "split") else cv
    splits = [(np.asarray(tr), np.asarray(te)) for tr, te in split]
    if not splits:
        raise ParameterError(f"cv produced no splits: {cv!r}")
    return splits


def _scorer(estimator, scoring) -> Tuple[Callable, str]:
    """The scorer callable and a name for the table."""
    if scoring is None:
        if is_classifier(estimator) and hasattr(estimator, "predict_proba"):
            scoring = "neg_log_loss"
        else:
            return check_scoring(estimator, scoring=None), "score"
    name = scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "score")
    try:
        return check_scoring(estimator, scoring=scoring), name
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"invalid scoring {scoring!r}: {exc}") from None


def _split_name(k: int, folds: Optional[int]) -> str:
    return f"split {k}" + (f" (repeat {k // folds}, fold {k % folds})" if folds else "")


# ---------------------------------------------------------------------------------- the backend
@contextmanager
def _joblib_backend(backend: str, scheduler, n_jobs) -> Iterator[Optional[int]]:
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
#: the columns of the fits table after ``candidate`` and ``split``, with the value of a fit that did not
#: set them (a failed fit, or an estimator without a drokit ``result_``)
FIT_RECORD_DEFAULTS = {"test_score": float("nan"), "fit_time": float("nan"), "score_time": float("nan"),
                       "error": "", "status": "", "method": "", "solver": "", "relative_gap": float("nan"),
                       "warnings": ""}


def _fit_and_score(estimator, X, y, params: Dict[str, Any], split: Split, scorer, candidate: int,
                   k: int, split_name: str, shown: Mapping[str, Any], raise_errors: bool) -> dict:
    """Fit a clone with ``params`` on the training rows, score it on the test rows.

    Returns ``{candidate, split, test_score, fit_time, score_time, error, status, method, solver,
    relative_gap, warnings}``; a failure is recorded in ``error`` (``"fit: Type: message"``) unless ``raise_errors``.
    """
    train, test = split
    record = {"candidate": candidate, "split": k, **FIT_RECORD_DEFAULTS}
    stage = "fit"
    try:
        model = clone(estimator).set_params(**params)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(_rows(X, train), _rows(y, train))
        record["fit_time"] = time.perf_counter() - start
        record["warnings"] = "; ".join(dict.fromkeys(str(w.message) for w in caught))
        result = _fit_result(model)
        if result is not None:
            record["status"], record["relative_gap"] = result.status, float(result.relative_gap)
            record["method"] = str(getattr(result, "method", ""))
            record["solver"] = str(getattr(result, "solver", ""))
        stage = "score"
        start = time.perf_counter()
        record["test_score"] = float(scorer(model, _rows(X, test), _rows(y, test)))
        record["score_time"] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 -- recorded (error_score) or re-raised with context
        message = f"{stage}: {type(exc).__name__}: {exc}"
        if raise_errors:
            raise FitFailedError(f"{stage} failed for {_describe(shown)} on {split_name}: "
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


# ---------------------------------------------------------------------------------- the tables
def _fits_table(records: Mapping[Tuple[int, int], dict], tasks, error_score) -> pd.DataFrame:
    """One row per fit in (candidate, split) order; failed fits score ``error_score``."""
    rows = [records[key] for key in tasks]
    fits = pd.DataFrame(rows, columns=["candidate", "split", *FIT_RECORD_DEFAULTS])
    failed = fits["error"] != ""
    if failed.any():  # never with error_score="raise": the first failure raised
        fits.loc[failed, "test_score"] = error_score
    if failed.all():
        first = rows[0]
        raise FitFailedError(f"all {len(rows)} fits failed; the first (candidate "
                             f"{first['candidate']}, split {first['split']}): {first['error']}\n"
                             f"{first.get('traceback', '')}")
    return fits


def _results_table(fits: pd.DataFrame, candidates: List[Dict[str, Any]], n_splits: int) -> pd.DataFrame:
    """One row per combination: parameters, score statistics, timings, failures, split scores."""
    def per_candidate(column: str, dtype=float) -> np.ndarray:  # (candidate, split) matrix
        return fits[column].to_numpy(dtype).reshape(len(candidates), n_splits)

    scores, fit_time, score_time = (per_candidate(c) for c in ("test_score", "fit_time", "score_time"))
    errors = per_candidate("error", object)
    table = pd.DataFrame({"params": [dict(c) for c in candidates]})
    for key in dict.fromkeys(k for c in candidates for k in c):
        table[f"param_{key}"] = pd.Series([c.get(key, np.nan) for c in candidates], dtype=object)
        if key == "theta":
            table["param_radius"] = [radius_from_theta(c[key]) if key in c else np.nan
                                     for c in candidates]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows of timings
        table["mean_test_score"] = scores.mean(axis=1)
        table["std_test_score"] = scores.std(axis=1)
        table["mean_fit_time"] = np.nanmean(fit_time, axis=1)
        table["std_fit_time"] = np.nanstd(fit_time, axis=1)
        table["mean_score_time"] = np.nanmean(score_time, axis=1)
    failed = errors != ""
    table["n_failed_fits"] = failed.sum(axis=1)
    status = per_candidate("status", object)
    table["n_uncertified_fits"] = ((status != "") & (status != "optimal")).sum(axis=1)
    table["errors"] = ["; ".join(f"split {k}: {errors[i, k]}" for k in np.flatnonzero(failed[i]))
                       for i in range(len(candidates))]
    ranked = np.where(failed.any(axis=1), np.nan, table["mean_test_score"])
    table["rank_test_score"] = pd.Series(ranked).rank(method="min", ascending=False,
                                                      na_option="bottom").astype(int)
    for k in range(n_splits):
        table[f"split{k}_test_score"] = scores[:, k]
    return table


def _best_index(results: pd.DataFrame) -> Optional[int]:
    ok = results["n_failed_fits"].to_numpy() == 0
    if not ok.any():
        return None
    means = np.where(ok, results["mean_test_score"].to_numpy(float), -np.inf)
    return int(np.argmax(means))  # the first of equal means, as scikit-learn's rank 1


def _warn_failures(fits: pd.DataFrame, results: pd.DataFrame) -> None:
    n_failed = int((fits["error"] != "").sum())
    if n_failed:
        first = results.loc[results["n_failed_fits"] > 0, "errors"].iloc[0].split("; ")[0]
        warnings.warn(f"{n_failed} of {len(fits)} fits failed and score error_score; their "
                      f"combinations cannot be best; see results['errors']. First: {first}",
                      FitFailedWarning, stacklevel=3)


# ---------------------------------------------------------------------------------- progress
class _Progress:
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
        what = f"[drokit sweep] {self.done}/{self.total} {_describe(shown)} split {record['split']}: "
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
