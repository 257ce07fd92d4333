"""Cross-validated sweeps over ambiguity grids (radius or theta, kappa, any estimator parameter).

:func:`cross_validate_grid` scores every parameter combination of a grid on the same repeated
(stratified) K-fold splits and returns a :class:`~drokit.model_selection.SweepResult`.  Every
(combination, split) fit is one task of :class:`joblib.Parallel`, run under
``joblib.parallel_config(backend=...)``: ``"loky"`` (local processes, the default), ``"threading"``,
``"sequential"``, ``"dask"`` (``dask.distributed``) or any backend registered with joblib.  drokit
schedules nothing itself.

The splits are drawn once, in the calling process, from the seed; each task fits a fresh clone on its
split.  The fits are deterministic, so the same seed gives the same scores on every backend.

The pieces live in their own modules: :mod:`~drokit.model_selection.grid` (the grid, its convenience
keys ``radius`` / ``theta`` / ``kappa``, the splits and the scorer), :mod:`~drokit.model_selection.execution`
(the backends, one fit per task, progress lines) and :mod:`~drokit.model_selection.result`
(:class:`~drokit.model_selection.SweepResult` and its tables).
"""

from __future__ import annotations

import time
from numbers import Integral
from typing import Dict, Optional, Tuple

from joblib import Parallel, delayed
from sklearn.base import clone

from ..dask_inputs import refuse_dask
from .execution import Progress, check_backend, fit_and_score, fit_path_and_score, joblib_backend
from .grid import (Grid, check_error_score, check_grid, check_names, check_sample_weight, drokit_prefix,
                   grid_candidates, make_splits, own_convenience_names, path_lines, resolve_scorer, split_name,
                   translate, warm_start_name)
from .result import FitFailedError, SweepResult, best_index, describe, fits_table, results_table, warn_failures


# ------------------------------------------------------------------------------------- the sweep
def cross_validate_grid(estimator, X, y, grid: Grid, *, cv=5, repeats: int = 1, scoring=None,
                        n_jobs: Optional[int] = None, backend: str = "loky", scheduler=None,
                        seed: Optional[int] = None, progress: bool = False, refit: bool = True,
                        error_score="nan", path: Optional[str] = None, sample_weight=None) -> SweepResult:
    """Cross-validate every combination of ``grid`` on repeated K-fold splits, in parallel via joblib.

    For each combination ``c`` and split ``k`` the score ``s_{c,k}`` is ``scoring`` of a clone of
    ``estimator`` with ``c``, fit on the split's training rows and scored on its test rows.  The
    table reports ``mean_k s_{c,k}`` and its (population) standard deviation; the best combination
    maximises the mean (scorers are "greater is better", as in scikit-learn).

    Parameters
    ----------
    estimator : estimator
        A scikit-learn estimator, typically a :class:`~drokit.DROClassifier` or
        :class:`~drokit.DRORegressor` (or a ``Pipeline`` ending in one; the convenience keys then reach
        the drokit step).  It is not modified.
    X, y : array_like
        Training data (DataFrame or array; categorical dtypes recognised as in ``fit``).
    grid : dict or list of dict
        ``{name: values}`` (or a list of such dicts, as ``ParameterGrid``); names are ``radius``,
        ``theta``, ``kappa`` or any ``set_params`` name, e.g. ``"ambiguity__metric__numerical__p"``
        or ``"loss"``.  Every combination of the values is evaluated.
    cv : int, cross-validation generator or iterable
        Number of folds (``RepeatedStratifiedKFold`` for classifiers, ``RepeatedKFold`` otherwise,
        ``repeats`` times with ``random_state=seed``), or a scikit-learn splitter, or an iterable of
        ``(train, test)`` index arrays (then ``repeats`` must be 1).
    repeats : int
        Repetitions of the K-fold split with different shuffles.
    scoring : str or callable or None
        A scikit-learn scorer name (``"neg_log_loss"``, ``"roc_auc"``, ``"accuracy"``, ...) or a
        callable ``scorer(estimator, X, y)``.  ``None``: ``"neg_log_loss"`` for a classifier with
        ``predict_proba`` (the logistic loss), else the estimator's ``score`` (accuracy or R^2).
    n_jobs : int or None
        Parallel workers (joblib convention: ``None`` = 1 outside a joblib context, -1 = all cores).
        With ``backend="dask"`` the cluster's threads are used and ``n_jobs`` only sets the number of
        workers of a temporary ``LocalCluster``.
    backend : str
        ``"loky"`` (default), ``"threading"``, ``"multiprocessing"``, ``"sequential"``, ``"dask"`` or
        another backend registered with joblib.
    scheduler : str or distributed.Client or cluster or None
        Only for ``backend="dask"``: ``None`` (start a ``LocalCluster`` for this call and close it
        afterwards), a scheduler address such as ``"tcp://10.0.0.5:8786"``, a
        ``distributed.Client`` (used as is, left open) or a cluster object (``LocalCluster``, ...).
    seed : int or None
        Random state of the splits; the same seed gives the same splits and the same scores on every
        backend.  ``None`` draws new splits on every call.
    progress : bool
        Print one line per completed fit (at most about 50 lines; every failure; a counter updated in
        place on a terminal) and a summary to stderr.  Off by default, like the estimators'
        ``verbose`` (scikit-learn's convention).
    refit : bool
        Refit the best combination on all of ``X, y`` (``best_estimator_``).
    error_score : str or float
        What a failed fit (or scoring) scores: ``"nan"`` (default) or a number records it and warns
        (``FitFailedWarning``); the error text is kept in ``results["errors"]``, and a combination
        with a failure cannot be best.  ``"raise"`` stops at the first failure with a
        :class:`FitFailedError` naming the parameters and the split.  If every fit fails, or
        ``refit=True`` and every combination has a failed fit, :class:`FitFailedError` is raised in
        any case.
    sample_weight : array_like or None
        Weights of the rows of ``X``: each fit gets its training rows' weights, each score its test rows' (the scorer
        must take ``sample_weight``, as scikit-learn's do), the refit all of them.  The splits ignore them.
    path : str or None
        A grid key (``"radius"``) whose values are fitted *in turn* on each split, from the largest down, each fit
        starting from the previous one's solution (the drokit estimator's ``warm_start``): one task per (split,
        combination of the other keys) instead of one per fit.  The scores are those of cold fits up to the fits'
        certified gaps (only the starts move).  ``None`` (default): every fit from scratch.

    Returns
    -------
    SweepResult
        With ``results``, ``best_params_``, ``best_score_``, ``best_estimator_``.

    Raises
    ------
    ParameterError
        An empty grid or value list, both ``radius`` and ``theta``, a grid name the estimator does not
        have, an invalid radius / theta / kappa value, an unknown backend, a ``scheduler`` without
        ``backend="dask"``, a bad ``repeats`` or ``error_score``.
    ImportError
        ``backend="dask"`` without ``dask.distributed`` (``pip install drokit[dask]``).
    FitFailedError
        See ``error_score``.
    """
    refuse_dask("cross_validate_grid", X, y, sample_weight)
    started = time.perf_counter()
    check_backend(backend, scheduler)
    error_score = check_error_score(error_score)
    base = clone(estimator)
    own = own_convenience_names(base)
    user_grid = check_grid(grid, own)
    candidates = grid_candidates(user_grid)
    prefix = drokit_prefix(base)
    translated = [translate(c, prefix, own) for c in candidates]
    check_names(base, translated, candidates)
    splits = make_splits(base, X, y, cv, repeats, seed)
    weight = check_sample_weight(sample_weight, len(y))
    scorer, scoring_name = resolve_scorer(base, scoring)
    fold_count = cv if isinstance(cv, Integral) else None

    tasks = [(i, k) for i in range(len(candidates)) for k in range(len(splits))]
    reporter = Progress(len(tasks), enabled=progress)
    records: Dict[Tuple[int, int], dict] = {}
    raise_errors = error_score == "raise"
    with joblib_backend(backend, scheduler, n_jobs) as n_jobs_:
        if path is None:
            run = Parallel(n_jobs=n_jobs_, return_as="generator_unordered")(
                delayed(fit_and_score)(base, X, y, translated[i], splits[k], scorer, i, k,
                                       split_name(k, fold_count), candidates[i], raise_errors, weight)
                for i, k in tasks)
            batches = ([record] for record in run)
        else:
            warm_key = warm_start_name(base, prefix)
            steps = [[(i, translated[i], candidates[i]) for i in line] for line in path_lines(candidates, path)]
            batches = Parallel(n_jobs=n_jobs_, return_as="generator_unordered")(
                delayed(fit_path_and_score)(base, X, y, line, splits[k], scorer, k, split_name(k, fold_count),
                                            raise_errors, warm_key, weight)
                for line in steps for k in range(len(splits)))
        for batch in batches:
            for record in batch:
                records[record["candidate"], record["split"]] = record
                reporter.update(record, candidates[record["candidate"]])
    elapsed = time.perf_counter() - started
    reporter.close(elapsed)

    fits = fits_table(records, tasks, error_score)
    results = results_table(fits, candidates, len(splits))
    warn_failures(fits, results)
    best = best_index(results)
    best_estimator, refit_time = None, 0.0
    if refit and best is None:
        raise FitFailedError(f"every parameter combination had a failed fit, so none can be refit; "
                             f"first failure: {results.loc[results['n_failed_fits'] > 0, 'errors'].iloc[0]}")
    if refit:
        start = time.perf_counter()
        best_estimator = clone(base).set_params(**translated[best]).fit(
            X, y, **({} if weight is None else {"sample_weight": weight}))
        refit_time = time.perf_counter() - start
        reporter.line(f"[drokit sweep] refit {describe(candidates[best])} on all {len(y)} rows in "
                      f"{refit_time:.2f} s")
    return SweepResult(results=results, fits=fits, best_index_=best,
                       best_params_=None if best is None else dict(candidates[best]),
                       best_score_=float("nan") if best is None else
                       float(results.at[best, "mean_test_score"]),
                       best_estimator_=best_estimator,
                       best_estimator_params_=None if best is None else dict(translated[best]),
                       splits=splits, scoring=scoring_name, backend=backend, elapsed=elapsed,
                       refit_time=refit_time)
