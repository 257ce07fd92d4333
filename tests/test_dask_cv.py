"""``DROClassifierCV`` / ``DRORegressorCV`` on Dask collections (issue 25: drokit/model_selection/dask_cv.py,
dask_scores.py, ``PartitionFit.select``).

Independent checks, each able to fail:

* the Dask CV equals the in-memory CV **on the same folds** (the partitions' fold numbers, concatenated in partition
  order, given to the in-memory CV as a ``PredefinedSplit``): every validation score to 1e-5 (each fit is certified
  within 1e-6 of its optimum, so the scores move by about that), the chosen radius and label cost equal, the refit's
  objective within 2e-6 and its coefficients close -- for the logistic classifier with sample weights (some 0) over
  three partitions, the Huber regressor (R^2), the worst-case criterion, the shift criterion (one partition: the same
  shifted copies), two label costs in both orders (the refit on the bound partitions and bound again), a user's fold
  column with ``-1`` rows, and the default path (the same radii: ``N`` below the path's row sample);
* the sum-based scores equal scikit-learn's scorers on all rows, for every name of ``SUM_SCORES``, with weights,
  whatever the split of the rows into partitions (an error in a sum or in the combination breaks it);
* the fold numbers: every fold used, stratified counts within one of each other per class and partition,
  deterministic, different across seeds;
* ``PartitionFit.select``: fold ``k``'s probabilities after ``globalize`` are those of binding the rows outside ``k``
  directly, the radius set, ``select(None)`` every row again;
* on a LocalCluster of worker processes (the actor path): equal to the in-memory CV, progress lines per fit;
* a lost partition during the CV raises ``PartitionLostError`` at once (not one failed fit per candidate); a fold whose
  training rows have one class is a failed fit, all failed -> ``FitFailedError``;
* clear errors: ``scoring="roc_auc"``, ``criterion="rwpi"``, a splitter object as ``cv``, an in-memory ``y``, shift on
  a Dask array, a fold column partitioned otherwise or with one fold, a ``scheduler`` that is not a Client.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.metrics import check_scoring
from sklearn.model_selection import PredefinedSplit

import drokit as dk
from drokit.exceptions import DataError, ParameterError, PartitionLostError
from drokit.model_selection import FitFailedError
from drokit.model_selection.dask_scores import (SUM_SCORES, combined_scores, fold_numbers, held_out_sums,
                                                sum_score)

from test_dask_fit import FEATURES, _frame

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

SCORE_ATOL = 1e-5
OBJ_RTOL = 2e-6
RADII = [0.01, 0.1]


@pytest.fixture(autouse=True)
def _sync_scheduler():
    """The local scheduler in this process: the partitions are objects here (``LocalParts``), the fits the same."""
    with dask.config.set(scheduler="sync"):
        yield


def _dask_frame(frame, parts):
    return dd.from_pandas(frame, npartitions=parts, sort=True)


def _same_folds(ddf, k, stratify=True, seed=0):
    """The in-memory rows in partition order and the Dask CV's fold of each (``fold_numbers`` per partition)."""
    pieces = [ddf.get_partition(i).compute() for i in range(ddf.npartitions)]
    ids = np.concatenate([fold_numbers(p["y"].to_numpy(), k, seed, i, stratify) for i, p in enumerate(pieces)])
    return pd.concat(pieces), ids


def _pair(estimator, frame, parts=3, folds=3, weights=True, cv_column=None):
    """The Dask CV and the in-memory CV on the same folds."""
    ddf = _dask_frame(frame, parts)
    weight = {"sample_weight": ddf["w"]} if weights else {}
    dask_cv = clone(estimator).set_params(cv=folds if cv_column is None else ddf[cv_column])
    dask_cv.fit(ddf[FEATURES], ddf["y"], **weight)
    if cv_column is None:
        full, ids = _same_folds(ddf, folds, stratify=dask_cv._task == "classification")
    else:
        full = ddf.compute()
        ids = full[cv_column].to_numpy()
    memory = clone(estimator).set_params(cv=PredefinedSplit(ids))
    memory.fit(full[FEATURES], full["y"], **({"sample_weight": full["w"]} if weights else {}))
    return dask_cv, memory


def _assert_same_selection(dsk, mem):
    np.testing.assert_allclose(dsk.radii_, mem.radii_, rtol=1e-12)
    assert dsk.scores_.shape == mem.scores_.shape
    np.testing.assert_allclose(dsk.scores_, mem.scores_, atol=SCORE_ATOL, rtol=0)
    assert dsk.radius_ == mem.radius_ and dsk.kappa_ == mem.kappa_
    assert dsk.scoring_ == mem.scoring_
    assert list(dsk.path_.columns) == list(mem.path_.columns)
    assert (dsk.path_["n_failed_fits"] == 0).all() and (dsk.path_["n_uncertified_fits"] == 0).all()
    assert dsk.path_["max_relative_gap"].max() <= 1e-6
    assert dsk.sweep_.splits == [] and dsk.best_index_ == mem.best_index_
    if mem.refit:
        assert dsk.result_.objective == pytest.approx(mem.result_.objective, rel=OBJ_RTOL)
        assert dsk.result_.lower_bound <= mem.result_.objective + 1e-9
        assert mem.result_.lower_bound <= dsk.result_.objective + 1e-9
        assert dsk.ambiguity_.radius == mem.radius_
        np.testing.assert_allclose(dsk.coef_, mem.coef_, atol=2e-3)


# ---------------------------------------------------------------------------------------------------- equal to memory
def test_classifier_with_weights_equals_in_memory_cv():
    frame = _frame(360, seed=1)
    dsk, mem = _pair(dk.DROClassifierCV(radii=[0.003, 0.03, 0.3], random_state=0), frame)
    _assert_same_selection(dsk, mem)
    assert dsk.scoring_ == "neg_log_loss" and dsk.cv_results_.shape[0] == 3
    proba = dsk.predict_proba(_dask_frame(frame, 3)[FEATURES]).compute()
    np.testing.assert_allclose(proba, mem.predict_proba(frame[FEATURES]), atol=1e-4)


def test_regressor_r2_equals_in_memory_cv():
    frame = _frame(300, seed=2, task="regression")
    dsk, mem = _pair(dk.DRORegressorCV(radii=RADII, random_state=0), frame, parts=2)
    _assert_same_selection(dsk, mem)
    assert dsk.scoring_ == "score"


def test_worst_case_criterion_equals_in_memory_cv():
    frame = _frame(240, seed=3)
    dsk, mem = _pair(dk.DROClassifierCV(radii=RADII, criterion="worst_case", validation_radius=0.05,
                                        random_state=0), frame, parts=2, folds=2)
    _assert_same_selection(dsk, mem)
    assert dsk.scoring_.startswith("-worst-case risk at radius 0.05")


def test_shift_criterion_one_partition_equals_in_memory_cv():
    """One partition draws the shifted copies an in-memory ShiftScorer draws (seed + 0)."""
    frame = _frame(240, seed=4)
    dsk, mem = _pair(dk.DROClassifierCV(radii=RADII, criterion="shift", n_shift_sets=3, shift_aggregate="worst",
                                        random_state=0, refit=False), frame, parts=1, folds=2)
    _assert_same_selection(dsk, mem)
    assert not hasattr(dsk, "result_")


def test_shift_criterion_over_partitions_scores_differ_from_clean():
    frame = _frame(240, seed=4)
    ddf = _dask_frame(frame, 3)
    shift = dk.DROClassifierCV(radii=RADII, criterion="shift", n_shift_sets=3, cv=2, refit=False)
    clean = clone(shift).set_params(criterion="clean")
    shift.fit(ddf[FEATURES], ddf["y"])
    clean.fit(ddf[FEATURES], ddf["y"])
    assert np.all(np.isfinite(shift.scores_))
    assert np.all(shift.scores_ < clean.scores_)          # the shifted copies are harder than the clean rows


@pytest.mark.parametrize("kappas", [[1.0, np.inf], [np.inf, 1.0]])
def test_label_costs_equal_in_memory_cv(kappas):
    """Both orders: the chosen label cost was bound last (refit on the bound partitions) or first (bound again)."""
    frame = _frame(240, seed=5)
    dsk, mem = _pair(dk.DROClassifierCV(radii=RADII, kappas=kappas, random_state=0), frame, parts=2, folds=2,
                     weights=False)
    _assert_same_selection(dsk, mem)
    assert list(dsk.path_["kappa"]) == list(mem.path_["kappa"])


def test_user_fold_column_equals_predefined_split():
    frame = _frame(240, seed=6)
    rng = np.random.default_rng(0)
    frame["fold"] = rng.choice([-1, 0, 1, 2], size=len(frame), p=[0.1, 0.3, 0.3, 0.3])
    dsk, mem = _pair(dk.DROClassifierCV(radii=RADII, random_state=0), frame, parts=3, cv_column="fold")
    _assert_same_selection(dsk, mem)
    assert dsk.scores_.shape == (2, 3)


def test_default_path_equals_in_memory_path():
    """Fewer rows than the path's sample: the Dask default path's unit ``d`` comes from every row, in the in-memory
    order, so the radii are the in-memory ones (capped at the critical radius alike)."""
    frame = _frame(200, seed=7)
    dsk, mem = _pair(dk.DROClassifierCV(radii=3, random_state=0, refit=False), frame, parts=2, folds=2)
    _assert_same_selection(dsk, mem)


# ---------------------------------------------------------------------------------------------------- sums
@pytest.mark.parametrize("name", sorted(SUM_SCORES))
def test_sum_scores_equal_sklearn_scorers(name):
    """Sums over random partitions of the rows, combined, equal scikit-learn's scorer on all rows (weights too)."""
    task = SUM_SCORES[name]
    frame = _frame(200, seed=8, task=task)
    est = dk.DROClassifier() if task == "classification" else dk.DRORegressor()
    est.set_params(ambiguity=dk.Wasserstein(radius=0.05)).fit(frame[FEATURES], frame["y"])
    classes = np.unique(frame["y"]) if task == "classification" else None
    score, _ = sum_score(name, task == "classification", classes)
    w = frame["w"].to_numpy()
    expected = check_scoring(est, scoring=name)(est, frame[FEATURES], frame["y"], sample_weight=w)
    cuts = np.sort(np.random.default_rng(1).choice(np.arange(1, 200), size=4, replace=False))
    pieces = []
    for rows in np.split(np.arange(200), cuts):
        part = frame.iloc[rows]
        pieces.append(held_out_sums(part[FEATURES], part["y"], part["w"].to_numpy(), np.zeros(rows.size),
                                    [(0, est)], score, 0))
    value, errors = combined_scores(pieces, score)
    assert errors == [""]
    assert value[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_sum_score_refusals_and_r2_constant_labels():
    with pytest.raises(ParameterError, match=r"scoring='roc_auc'.*sums"):
        sum_score("roc_auc", True, np.array([0, 1]))
    with pytest.raises(ParameterError, match=r"scoring='r2'"):
        sum_score("r2", True, np.array([0, 1]))               # a regression score for a classifier
    with pytest.raises(ParameterError, match="scoring=<function"):
        sum_score(lambda est, X, y: 0.0, False, None)
    score, name = sum_score(None, False, None)
    assert name == "score"
    assert score.value(np.array([2.0, 2.0, 2.0, 0.0])) == 1.0       # constant labels, perfect fit
    assert score.value(np.array([2.0, 2.0, 2.0, 0.5])) == 0.0       # constant labels, not perfect


def test_fold_numbers_stratified_balanced_deterministic():
    y = np.r_[np.zeros(53), np.ones(20)].astype(int)
    folds = fold_numbers(y, 4, 3, 2, True)
    assert set(folds) == {0, 1, 2, 3}
    for label in (0, 1):
        counts = np.bincount(folds[y == label], minlength=4)
        assert counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(folds, fold_numbers(y, 4, 3, 2, True))
    assert not np.array_equal(folds, fold_numbers(y, 4, 4, 2, True))
    assert not np.array_equal(folds, fold_numbers(y, 4, 3, 1, True))
    plain = fold_numbers(y, 5, 0, 0, False)
    assert np.bincount(plain).max() - np.bincount(plain).min() <= 1


def test_partition_select_matches_binding_the_rows():
    """Fold k's probabilities after ``globalize`` equal those of binding the rows outside k alone."""
    import functools
    from drokit.models.dask_fit import bind_partition
    from drokit.reformulations.partition_fit import PartitionFit
    from drokit.schema import FeatureSchema
    frame = _frame(120, seed=9)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1))
    problem = est._problem()
    schema = FeatureSchema.infer(frame[FEATURES].iloc[:0], None, "auto")
    binder = functools.partial(bind_partition, problem, schema, np.array([0, 1]), "error")
    folds = np.arange(120) % 3
    part = PartitionFit(binder, frame[FEATURES], frame["y"], frame["w"].to_numpy(), folds)
    rows, weight, labels = part.select(1, 0.25)
    keep = folds != 1
    assert rows == keep.sum() and weight == pytest.approx(frame["w"].to_numpy()[keep].sum())
    part.globalize(weight)
    alone = PartitionFit(binder, frame[FEATURES][keep], frame["y"][keep], frame["w"].to_numpy()[keep])
    alone.globalize(weight)
    np.testing.assert_allclose(part.cold.p, alone.cold.p, rtol=1e-14)
    np.testing.assert_array_equal(part.cold.data.Z, alone.cold.data.Z)
    assert part.cold.radius == 0.25 and alone.cold.radius == 0.1
    assert part.select(None)[0] == 120 and part.cold.radius == 0.1
    with pytest.raises(ValueError, match="folds has 5 entries"):
        PartitionFit(binder, frame[FEATURES], frame["y"], None, np.zeros(5))


# ---------------------------------------------------------------------------------------------------- failures
def test_lost_partition_stops_the_cv_at_once(monkeypatch):
    import drokit.models.dask_fit as dask_fit
    calls = []

    def lost(*args, **kwargs):
        calls.append(1)
        raise PartitionLostError("the Dask worker tcp://x holding a partition of the fit was lost")
    monkeypatch.setattr(dask_fit, "fit_bound_parts", lost)
    ddf = _dask_frame(_frame(120, seed=10), 2)
    cv = dk.DROClassifierCV(radii=RADII, cv=2)
    with pytest.raises(PartitionLostError, match="was lost"):
        cv.fit(ddf[FEATURES], ddf["y"])
    assert calls == [1] and not hasattr(cv, "radius_")


def test_fold_with_one_class_is_a_failed_fit():
    frame = _frame(120, seed=11)
    frame["fold"] = np.where(frame["y"] == 1, 0, 1)          # outside fold 0: class 0 only; outside fold 1: class 1
    ddf = _dask_frame(frame, 2)
    cv = dk.DROClassifierCV(radii=RADII, cv=ddf["fold"])
    with pytest.raises(FitFailedError, match="one class only"):
        cv.fit(ddf[FEATURES], ddf["y"])


def test_clear_errors():
    frame = _frame(120, seed=12)
    ddf = _dask_frame(frame, 2)
    X, y = ddf[FEATURES], ddf["y"]
    cases = [
        (dict(scoring="roc_auc"), ParameterError, r"scoring='roc_auc'"),
        (dict(criterion="rwpi"), ParameterError, r"criterion='rwpi'.*in-memory sample"),
        (dict(cv=PredefinedSplit(np.zeros(120))), ParameterError, r"cv on Dask collections must be an int"),
        (dict(cv=1), ParameterError, r"cv on Dask collections must be an int >= 2"),
        (dict(scheduler="tcp://127.0.0.1:1"), ParameterError, r"scheduler=<Client>"),
        (dict(cv=dd.from_pandas(pd.Series(np.zeros(120, int)), npartitions=3)), DataError, r"cv has 3 partitions"),
        (dict(cv=ddf["x1"].map_partitions(lambda s: (s * 0).astype(int), meta=("x1", int))), DataError,
         r"at least two folds"),
    ]
    for params, error, message in cases:
        with pytest.raises(error, match=message):
            dk.DROClassifierCV(radii=RADII, **params).fit(X, y)
    with pytest.raises(DataError, match="all be Dask collections"):
        dk.DROClassifierCV(radii=RADII).fit(X, frame["y"])
    Xa = da.from_array(frame[["x1", "x2", "x3"]].to_numpy(), chunks=(60, 3))
    ya = da.from_array(frame["y"].to_numpy(), chunks=60)
    with pytest.raises(DataError, match="criterion='shift'.*DataFrame"):
        dk.DROClassifierCV(radii=RADII, criterion="shift").fit(Xa, ya)


# ---------------------------------------------------------------------------------------------------- actors
def test_worker_processes_equal_in_memory_cv(capsys):
    """Worker processes (the actors hold the partitions and their folds): equal to the in-memory CV; a line per fit."""
    distributed = pytest.importorskip("distributed")
    frame = _frame(200, seed=13)
    with dask.config.set(scheduler="threads"), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, distributed.Client(cluster):
        dsk, mem = _pair(dk.DROClassifierCV(radii=RADII, random_state=0, progress=True), frame, parts=3, folds=2)
    _assert_same_selection(dsk, mem)
    err = capsys.readouterr().err
    assert "[drokit cv on dask] fit 4/4 radius=0.1 fold" in err and "scored 4 fits" in err
