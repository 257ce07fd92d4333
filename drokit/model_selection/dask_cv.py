"""``DROClassifierCV.fit`` / ``DRORegressorCV.fit`` on Dask collections (issue 25): the radius path cross-validated
with the rows in their partitions.

* **Folds are numbers per row, not index lists.**  With ``cv = K`` each partition deals its rows to ``K`` folds
  (:func:`~drokit.model_selection.dask_scores.fold_numbers`: shuffled by ``(random_state, partition)``, stratified by
  class for a classifier); ``cv`` may also be a Dask Series / Array of fold numbers partitioned like ``X`` (``-1``:
  always trained on, as scikit-learn's ``PredefinedSplit``).
* **Bound once per label cost.**  The partitions are bound once (:func:`drokit.models.dask_fit.bound_parts`, with their
  fold numbers); fold ``k`` at radius ``r`` is :meth:`PartitionFit.select` ``(k, r)`` -- the rows outside fold ``k``,
  their weights renormalized, the fit state reset -- and the same certified distributed fit as ``DROClassifier.fit``
  on Dask (:func:`~drokit.models.dask_fit.fit_bound_parts`).  Every ``kappa`` of ``kappas`` binds again (the label
  cost is part of the bound metric).
* **Scores are sums.**  ``"clean"`` and ``"shift"``: one pass over the partitions scores every fitted model on its
  held-out rows (:func:`~drokit.model_selection.dask_scores.held_out_sums`; the shifted copies drawn per partition);
  ``"worst_case"``: the exact worst-case risk of each model on its held-out rows by partition
  (:func:`~drokit.evaluation.distributed_worst_case.worst_case_of_partitions`).  Scores that need every held-out row
  at once (``roc_auc``) are refused, as is ``criterion="rwpi"`` (its multiplier set has a constraint per training
  row).
* **The default path** is the in-memory one, ``[r0 / 100, min(10 r0, 1.5 r_crit)]`` with ``r0 = d / sqrt(N)``: ``N``
  the rows of the table, ``d`` the median distance of 200 pairs of a sample of :data:`PATH_SAMPLE` rows, ``r_crit``
  from partition sums (:func:`~drokit.models.dask_fit.critical_radius_of_parts`).

The tables are those of the in-memory CV (``cv_results_``, ``path_``, ``scores_``, ``sweep_`` with
``splits = []``: the folds are the partitions' numbers), and the refit is the Dask fit at the chosen radius on every
row (on the bound partitions when its label cost was bound last).  ``warm_path``, ``n_jobs`` and ``backend`` are for
in-memory sweeps: here every fit is distributed over the partitions of the current ``dask.distributed`` client (or
``scheduler=`` a ``Client``), each from its own subsample's warm start.
"""

from __future__ import annotations

import functools
import time
import warnings
from numbers import Integral
from typing import List, Optional

import numpy as np
from sklearn.base import is_classifier

from ..dask_inputs import current_client, is_dask_collection, partition_triples
from ..exceptions import DataError, ParameterError, PartitionLostError
from ..params import component
from .criteria import ShiftScorer, WorstCaseScorer, capped_path, check_radii, data_rule_of_thumb, default_radii
from .dask_scores import (ShiftSums, combined_scores, fold_numbers, held_out_sums, rows_of_fold, sum_score,
                          user_folds)
from .execution import Progress
from .grid import grid_candidates, nested_choice
from .result import FIT_RECORD_DEFAULTS, SweepResult, best_index, describe, fits_table, results_table, warn_failures

#: rows sampled from the partitions for the default path's unit of distance ``d`` (and the worst-case criterion's
#: default validation radius)
PATH_SAMPLE = 2_000


def _blocks(collection) -> list:
    """A Dask collection's row blocks as ``dask.delayed`` objects (one per partition)."""
    if hasattr(collection, "chunks") and not hasattr(collection, "map_partitions"):
        return list(np.ravel(collection.to_delayed()))
    return list(collection.to_delayed())


def _compute(client, tasks: list) -> list:
    import dask
    if client is not None:
        return client.gather(client.compute(tasks))
    return list(dask.compute(*tasks))


def _sample_block(block, fraction: float, seed: int, partition: int):
    rng = np.random.default_rng([int(seed), int(partition), 7])
    take = np.flatnonzero(rng.random(len(block)) < fraction)
    return block.iloc[take] if hasattr(block, "iloc") else np.asarray(block)[take]


def _row_sample(client, X, n_rows: int, seed: int):
    """About :data:`PATH_SAMPLE` rows of ``X`` (each kept with the same probability), in this process."""
    import dask
    import pandas as pd
    fraction = min(1.0, PATH_SAMPLE / max(n_rows, 1))
    pieces = _compute(client, [dask.delayed(_sample_block)(b, fraction, seed, i) for i, b in enumerate(_blocks(X))])
    pieces = [p for p in pieces if len(p)] or pieces[:1]
    return pd.concat(pieces) if hasattr(pieces[0], "iloc") else np.vstack(pieces)


class _Folds:
    """The fold of every row, per partition, as ``dask.delayed`` arrays, and the fold numbers."""

    def __init__(self, cv, X, y, classifier: bool, seed: int, client):
        import dask
        ys = [t[1] for t in partition_triples(X, y)]
        if is_dask_collection(cv):
            blocks = _blocks(cv)
            if len(blocks) != len(ys):
                raise DataError(f"cv has {len(blocks)} partitions but X has {len(ys)}: partition the fold numbers "
                                f"like X (e.g. a column of the same Dask DataFrame)")
            self.blocks = [dask.delayed(np.asarray)(b) for b in blocks]
            self.numbers = user_folds(np.concatenate(_compute(client, [dask.delayed(np.unique)(b)
                                                                       for b in self.blocks])))
        elif isinstance(cv, Integral) and not isinstance(cv, bool) and cv >= 2:
            self.blocks = [dask.delayed(fold_numbers)(b, int(cv), seed, i, classifier) for i, b in enumerate(ys)]
            self.numbers = np.arange(int(cv))
        else:
            raise ParameterError(f"cv on Dask collections must be an int >= 2 (folds dealt within each partition) or "
                                 f"a Dask Series / Array of fold numbers partitioned like X; got {cv!r}")


def fit_cv_dask(cv_estimator, X, y, sample_weight=None):
    """:meth:`DROClassifierCV.fit` / :meth:`DRORegressorCV.fit` on Dask collections (module docstring); the
    estimator's selection attributes are set and, with ``refit``, it is fitted at the chosen radius on every row."""
    from ..models.dask_fit import bound_parts, check_distributable, close_parts, critical_radius_of_parts
    started = time.perf_counter()
    self = cv_estimator
    if not all(o is None or is_dask_collection(o) for o in (X, y, sample_weight)):
        raise DataError(f"{type(self).__name__}.fit: X, y and sample_weight must all be Dask collections (partitioned "
                        f"alike) or all in memory")
    if self.criterion == "rwpi":
        raise ParameterError("criterion='rwpi' builds its multiplier set from a constraint per training row, which a "
                             "Dask fit does not gather; compute the radius on an in-memory sample with "
                             "dk.model_selection.rwpi_radius and note that it scales as 1/sqrt(rows of the sample), or "
                             "use criterion='clean', 'worst_case' or 'shift'")
    client = _client(self.scheduler)
    base = self._estimator_class(**self._estimator_params())
    base._validate_params()
    problem = base._problem()
    check_distributable(base, problem)
    classifier = is_classifier(base)
    if self.criterion == "shift" and not hasattr(X, "map_partitions"):
        raise DataError("criterion='shift' perturbs the validation folds with drokit.simulate_shift, which needs a "
                        f"DataFrame (categorical columns by dtype); got a {type(X).__name__}")
    if self.criterion == "worst_case" and self.scoring is not None:
        raise ParameterError("criterion='worst_case' scores the exact worst-case validation risk of the model's own "
                             "loss; scoring must be None")
    if self.criterion != "worst_case":
        sum_score(self.scoring, classifier, np.arange(2))          # the scoring's name checked before any binding
    seed = self._seed()
    folds = _Folds(self.cv, X, y, classifier, seed, client)
    kappas = self._check_kappas()
    radii = check_radii(self.radii)
    groups = [None] if kappas is None else kappas
    parts = schema = classes = None
    records, models, candidates, tasks = {}, {}, None, None
    try:
        for g, kappa in enumerate(groups):
            estimator = _candidate(self, radii[0] if radii is not None else None, kappa)
            parts, schema, classes = bound_parts(estimator, estimator._problem(), X, y, sample_weight, client,
                                                 folds.blocks)
            if candidates is None:
                n_rows = int(sum(s[0] for s in parts.call("summary")))
                sample = functools.lru_cache(maxsize=1)(lambda: _row_sample(client, X, n_rows, seed))
                if radii is None:
                    radii = _default_path(self, parts, sample(), n_rows, seed, critical_radius_of_parts)
                scorer, name = _scorer(self, classifier, classes, sample, n_rows, seed)
                grid = {"radius": [float(r) for r in radii]}
                if kappas is not None:
                    grid["kappa"] = kappas
                candidates = grid_candidates([grid])
                tasks = [(i, k) for i in range(len(candidates)) for k in range(folds.numbers.size)]
                reporter = Progress(len(tasks), enabled=self.progress)
            for i, candidate in enumerate(candidates):
                if kappas is not None and candidate["kappa"] != kappa:
                    continue
                for k, fold in enumerate(folds.numbers):
                    record, model = _fit_fold(self, parts, schema, classes, X, candidate, kappa, int(fold), i, k)
                    records[i, k], models[i, k] = record, model
                    _report(reporter, record, candidate, fold)
            if g < len(groups) - 1:
                close_parts(parts)
                parts = None
        t_score = time.perf_counter()
        _score(self, scorer, records, models, tasks, folds, X, y, sample_weight, client)
        reporter.line(f"[drokit cv on dask] scored {len(tasks)} fits on their held-out rows in "
                      f"{time.perf_counter() - t_score:.2f} s")
        elapsed = time.perf_counter() - started
        reporter.close(elapsed)
        fits = fits_table(records, tasks, float("nan"))
        results = results_table(fits, candidates, folds.numbers.size)
        warn_failures(fits, results)
        best = best_index(results)
        sweep = SweepResult(results=results, fits=fits, best_index_=best,
                            best_params_=None if best is None else dict(candidates[best]),
                            best_score_=float("nan") if best is None else float(results.at[best, "mean_test_score"]),
                            best_estimator_=None, best_estimator_params_=None, splits=[], scoring=name,
                            backend="dask partitions", elapsed=elapsed)
        self._record_selection(sweep, np.asarray(radii, dtype=float), name)
        if self.refit:
            last = groups[-1]
            reuse = parts is not None and (last is None or self.kappa_ == last)
            _refit(self, X, y, sample_weight, parts if reuse else None, schema, classes)
    finally:
        if parts is not None:
            close_parts(parts)
    return self


def _client(scheduler):
    """The ``dask.distributed`` client of the fits: ``scheduler`` when it is a ``Client``, else the current one."""
    if scheduler is None:
        return current_client()
    if hasattr(scheduler, "submit") and hasattr(scheduler, "gather"):
        return scheduler
    raise ParameterError(f"on Dask collections the fits run on a dask.distributed Client: pass scheduler=<Client> or "
                         f"make one current; got scheduler={scheduler!r}")


def _candidate(cv_estimator, radius, kappa):
    """The wrapped estimator at ``radius`` (``None``: the declared one) and ``kappa`` (``None``: the declared one)."""
    chosen = nested_choice(radius, kappa)
    estimator = cv_estimator._estimator_class(**cv_estimator._estimator_params())
    if chosen:
        estimator.ambiguity = cv_estimator._chosen_ambiguity(chosen)
    return estimator


def _default_path(cv_estimator, parts, sample, n_rows: int, seed: int, critical_radius) -> np.ndarray:
    """The in-memory default path (:meth:`_DROCV._path`, :meth:`_DROCV._capped`) from a row sample and partition
    sums (module docstring)."""
    metric = cv_estimator._declared_ambiguity().get_params(deep=False).get("metric")
    radii = default_radii(cv_estimator.radii, sample, metric, categorical_features=cv_estimator.categorical_features,
                          seed=seed, n_rows=n_rows)
    if radii.size < 2:
        return radii
    parts.call("select", None, None)
    return capped_path(radii, critical_radius(parts))


def _scorer(cv_estimator, classifier: bool, classes, sample, n_rows: int, seed: int):
    """``(score, name)`` of the criterion on Dask (module docstring); ``sample()``: the rows sampled for the default
    validation radius (drawn once per fit, shared with the default path)."""
    criterion = cv_estimator.criterion
    if criterion == "worst_case":
        radius = cv_estimator.validation_radius
        if radius is None:
            metric = cv_estimator._declared_ambiguity().get_params(deep=False).get("metric")
            radius = data_rule_of_thumb(sample(), metric,
                                        categorical_features=cv_estimator.categorical_features, seed=seed,
                                        n_rows=n_rows)
        return WorstCaseScorer(radius), f"-worst-case risk at radius {float(radius):.3g}"
    score, name = sum_score(cv_estimator.scoring, classifier, classes)
    if criterion == "clean":
        return score, name
    shift = ShiftScorer(None, cv_estimator.shift_model, cv_estimator.n_shift_sets, cv_estimator.shift_aggregate,
                        seed=seed)
    return ShiftSums(score, shift), f"{cv_estimator.shift_aggregate} {name} under shift ({cv_estimator.n_shift_sets} sets)"


def _fit_fold(cv_estimator, parts, schema, classes, X, candidate: dict, kappa, fold: int, i: int, k: int):
    """Fit candidate ``i`` on the rows outside ``fold`` (split ``k``): ``(record, fitted model or None)``."""
    from ..models.dask_fit import fit_bound_parts
    record = {"candidate": i, "split": k, **FIT_RECORD_DEFAULTS}
    model = _candidate(cv_estimator, candidate["radius"], kappa)
    try:
        start = time.perf_counter()
        summaries = parts.call("select", fold, float(candidate["radius"]))
        if classes is not None:
            present = np.unique(np.concatenate([s[2] for s in summaries]))
            if present.size < 2:
                raise DataError(f"the training rows outside fold {fold} have one class only")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, _, _ = fit_bound_parts(model, parts, schema, classes, start)
        model._remember(X, schema, component(model._problem(), "ambiguity"), result)
        model._store_model(result, classes)
        record["fit_time"] = time.perf_counter() - start
        record["warnings"] = "; ".join(dict.fromkeys(str(w.message) for w in caught))
        record["status"], record["relative_gap"] = result.status, float(result.relative_gap)
        record["method"], record["solver"] = str(result.method), str(result.solver)
        return record, model
    except PartitionLostError:
        raise
    except Exception as exc:  # noqa: BLE001 -- recorded as a failed fit (error_score nan), as in memory
        record["error"] = f"fit: {type(exc).__name__}: {exc}"
        return record, None


def _report(reporter: Progress, record: dict, candidate: dict, fold: int) -> None:
    reporter.done += 1
    failed = bool(record["error"])
    reporter.failed += failed
    if not reporter.enabled or not (failed or reporter.done % reporter.every == 0 or reporter.done == reporter.total):
        return
    what = f"[drokit cv on dask] fit {reporter.done}/{reporter.total} {describe(candidate)} fold {fold}: "
    reporter.line(what + (f"FAILED ({record['error']})" if failed else
                          f"{record['status']}, gap {record['relative_gap']:.1e} ({record['fit_time']:.2f} s)"))


def _score(cv_estimator, scorer, records, models, tasks, folds: _Folds, X, y, sample_weight, client) -> None:
    """Every fitted model's validation score on its held-out rows, into its record."""
    import dask
    start = time.perf_counter()
    triples = partition_triples(X, y, sample_weight)
    fitted = [(i, k) for i, k in tasks if models[i, k] is not None]
    if isinstance(scorer, WorstCaseScorer):
        from ..evaluation.distributed_worst_case import worst_case_of_partitions
        for i, k in fitted:
            model, fold = models[i, k], int(folds.numbers[k])
            held = [tuple(None if b is None else dask.delayed(rows_of_fold)(b, f, fold) for b in triple)
                    for triple, f in zip(triples, folds.blocks)]
            try:
                value = worst_case_of_partitions(model, held, scorer.ambiguity(model), client=client).value
                records[i, k]["test_score"] = -float(value)
            except PartitionLostError:
                raise
            except Exception as exc:  # noqa: BLE001 -- recorded, as in memory
                records[i, k]["error"] = f"score: {type(exc).__name__}: {exc}"
    elif fitted:
        pairs = [(int(folds.numbers[k]), models[i, k]) for i, k in fitted]
        pieces = _compute(client, [dask.delayed(held_out_sums)(x, yy, w, f, pairs, scorer, p)
                                   for p, ((x, yy, w), f) in enumerate(zip(triples, folds.blocks))])
        scores, errors = combined_scores(pieces, scorer)
        for (i, k), value, error in zip(fitted, scores, errors):
            if error:
                records[i, k]["error"] = error
            else:
                records[i, k]["test_score"] = float(value)
    each = (time.perf_counter() - start) / max(len(fitted), 1)
    for i, k in fitted:
        records[i, k]["score_time"] = each


def _refit(cv_estimator, X, y, sample_weight, parts, schema, classes) -> None:
    """The CV estimator fitted at the chosen radius and label cost on every row: on ``parts`` (bound with that label
    cost) when given, else bound again (:meth:`DROClassifier.fit` on Dask)."""
    from ..models.dask_fit import fit_bound_parts
    kappa = cv_estimator.kappa_ if cv_estimator.kappas is not None else None
    cv_estimator._selected_ambiguity = cv_estimator._chosen_ambiguity(nested_choice(cv_estimator.radius_, kappa))
    try:
        if parts is None:
            cv_estimator._estimator_class.fit(cv_estimator, X, y, sample_weight=sample_weight)
            return
        start = time.perf_counter()
        parts.call("select", None, cv_estimator.radius_)
        result, _, _ = fit_bound_parts(cv_estimator, parts, schema, classes, start)
        cv_estimator._remember(X, schema, component(cv_estimator._problem(), "ambiguity"), result)
        cv_estimator._store_model(result, classes)
    finally:
        del cv_estimator._selected_ambiguity


__all__ = ["fit_cv_dask", "PATH_SAMPLE"]
