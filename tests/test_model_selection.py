"""drokit.model_selection.cross_validate_grid: backends agree, grid keys reach the model, errors.

The data: 80 rows, one numerical and two pandas-categorical features (3 and 2 levels), a logistic
label.  Each sweep is 2-4 combinations x 3 folds; a fit takes a few hundredths of a second.  The
backends are the sequential run (``n_jobs=1``), loky with 2 workers, and dask.distributed: an
in-process ``LocalCluster`` (a ``Client``, and its address as a string) and, once, a temporary
``LocalCluster`` with worker processes started by the sweep itself.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, RepeatedStratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import drokit as dk
from drokit.model_selection import FitFailedError, SweepResult, cross_validate_grid

distributed = pytest.importorskip("distributed")

GRID = {"theta": [0.8, 0.95], "kappa": [1.0, np.inf]}
SEED = 3


def _data(n: int = 80, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    a = rng.choice(["u", "v", "w"], size=n)
    b = rng.choice(["p", "q"], size=n)
    logit = 1.2 * x + (a == "u") - 0.8 * (b == "q")
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    X = pd.DataFrame({"x": x, "a": pd.Categorical(a), "b": pd.Categorical(b)})
    return X, pd.Series(y, name="y")


X, Y = _data()


def _estimator(kappa: float = 1.0, radius: float = 0.1) -> dk.DROClassifier:
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=kappa))
    return dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=radius))


def _sweep(grid=GRID, **kwargs) -> SweepResult:
    kwargs = {"cv": 3, "seed": SEED, "progress": False, **kwargs}
    return cross_validate_grid(_estimator(), X, Y, grid, **kwargs)


def _without_times(result: SweepResult) -> pd.DataFrame:
    return result.results[[c for c in result.results.columns if "time" not in c]]


def _split_score(estimator, split, scoring="neg_log_loss") -> float:
    train, test = split
    model = clone(estimator).fit(X.iloc[train], Y.iloc[train])
    return get_scorer(scoring)(model, X.iloc[test], Y.iloc[test])


@pytest.fixture(scope="module")
def sequential() -> SweepResult:
    return _sweep(n_jobs=1)


# --------------------------------------------------------------------------- backends agree
def test_sequential_table_is_complete(sequential):
    table = sequential.results
    assert len(table) == 4 and len(sequential.splits) == 3
    assert list(table["params"]) == [{"theta": t, "kappa": k} for k in (1.0, np.inf) for t in (0.8, 0.95)]
    split_scores = table[[f"split{k}_test_score" for k in range(3)]].to_numpy()
    assert np.isfinite(split_scores).all() and (split_scores < 0).all()
    np.testing.assert_allclose(table["mean_test_score"], split_scores.mean(axis=1), rtol=1e-14)
    np.testing.assert_allclose(table["std_test_score"], split_scores.std(axis=1), rtol=1e-14)
    assert (table["n_failed_fits"] == 0).all() and (table["errors"] == "").all()
    assert (table["mean_fit_time"] > 0).all()
    best = int(np.argmax(table["mean_test_score"]))
    assert sequential.best_index_ == best and table.at[best, "rank_test_score"] == 1
    assert sequential.best_params_ == table.at[best, "params"]
    assert sequential.best_score_ == table.at[best, "mean_test_score"]
    assert sequential.best_estimator_.ambiguity.radius == pytest.approx(
        -math.log(sequential.best_params_["theta"]), rel=1e-14)
    assert hasattr(sequential.best_estimator_, "coef_")  # refit on all data
    assert len(sequential.fits) == 12 and (sequential.fits["error"] == "").all()


def _log_loss_checking(where):
    """neg_log_loss that fails (a failed fit) unless ``where()`` holds where it is computed."""
    log_loss = get_scorer("neg_log_loss")

    def scorer(estimator, X, y):
        if not where():
            raise RuntimeError("scored in the wrong place")
        return log_loss(estimator, X, y)
    return scorer


def test_loky_matches_sequential(sequential):
    parent = os.getpid()
    loky = _sweep(n_jobs=2, backend="loky", scoring=_log_loss_checking(lambda: os.getpid() != parent),
                  error_score="raise")
    pd.testing.assert_frame_equal(_without_times(loky), _without_times(sequential))
    assert loky.backend == "loky"


def _on_dask_worker() -> bool:
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


def test_dask_client_and_address_match_sequential(sequential):
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            with_client = _sweep(backend="dask", scheduler=client, error_score="raise",
                                 scoring=_log_loss_checking(_on_dask_worker))
            assert client.status == "running"  # a user's client is left open
        with_address = _sweep(backend="dask", scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(_without_times(with_client), _without_times(sequential))
    pd.testing.assert_frame_equal(_without_times(with_address), _without_times(sequential))


def test_dask_temporary_local_cluster_with_processes(sequential, monkeypatch):
    """scheduler=None: the sweep starts a LocalCluster with one worker process and closes it."""
    started = []

    class RecordedCluster(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append((self, kwargs))

    monkeypatch.setattr(distributed, "LocalCluster", RecordedCluster)
    result = _sweep(backend="dask", n_jobs=1)
    pd.testing.assert_frame_equal(_without_times(result), _without_times(sequential))
    (cluster, options), = started
    assert options["n_workers"] == 1 and options.get("processes", True)  # worker processes
    assert cluster.status.name == "closed"


def test_same_seed_same_splits_other_seed_other_splits(sequential):
    expected = list(RepeatedStratifiedKFold(n_splits=3, n_repeats=1, random_state=SEED).split(X, Y))
    for (tr, te), (etr, ete) in zip(sequential.splits, expected):
        np.testing.assert_array_equal(tr, etr)
        np.testing.assert_array_equal(te, ete)
    other = _sweep({"radius": [0.1]}, seed=SEED + 1, refit=False)
    assert any(not np.array_equal(a[1], b[1]) for a, b in zip(other.splits, sequential.splits))


def test_repeats_multiply_the_splits():
    result = _sweep({"radius": [0.1]}, cv=2, repeats=2, refit=False)
    assert len(result.splits) == 4
    assert [c for c in result.results.columns if c.startswith("split")] == \
        [f"split{k}_test_score" for k in range(4)]
    assert result.best_estimator_ is None


# --------------------------------------------------------------------------- grid keys reach the model
def test_theta_sets_radius_minus_log_theta(sequential):
    table = sequential.results
    np.testing.assert_allclose(table["param_radius"].astype(float),
                               -np.log(table["param_theta"].astype(float)), rtol=1e-15)
    row = table.iloc[1]  # theta = 0.95, kappa = 1
    direct = _estimator(kappa=1.0, radius=-math.log(0.95))
    assert row["split0_test_score"] == pytest.approx(_split_score(direct, sequential.splits[0]), rel=1e-10)
    assert sequential.best_estimator_params_["ambiguity__radius"] == pytest.approx(
        -math.log(sequential.best_params_["theta"]))


def test_kappa_reaches_the_label_cost_even_from_default_ambiguity():
    user = dk.DROClassifier()  # ambiguity=None: default ball, labels never flip
    result = cross_validate_grid(user, X, Y, {"kappa": [0.5, np.inf], "radius": [0.2]}, cv=3,
                                 seed=SEED, progress=False)
    assert user.ambiguity is None  # the user's estimator is not touched
    scores = result.results["split0_test_score"].to_numpy()
    for kappa, score in zip((0.5, np.inf), scores):
        direct = _estimator(kappa=kappa, radius=0.2)
        assert score == pytest.approx(_split_score(direct, result.splits[0]), rel=1e-10)
    assert abs(scores[0] - scores[1]) > 1e-3  # kappa changed the model
    best_kappa = result.best_params_["kappa"]
    assert result.best_estimator_.ambiguity.metric.label.kappa == best_kappa


def test_any_nested_parameter_and_pipelines():
    pipe = make_pipeline(FunctionTransformer(), _estimator())
    result = cross_validate_grid(pipe, X, Y, {"theta": [0.9], "droclassifier__loss": ["logistic"]},
                                 cv=3, seed=SEED, progress=False)
    assert result.best_estimator_[-1].ambiguity.radius == pytest.approx(-math.log(0.9))
    assert result.best_estimator_params_ == {"droclassifier__ambiguity__radius": -math.log(0.9),
                                             "droclassifier__loss": "logistic"}


# --------------------------------------------------------------------------- scikit-learn GridSearchCV
def test_gridsearchcv_agrees_with_cross_validate_grid():
    radii = [0.02, 0.3]
    ours = _sweep({"radius": radii})
    search = GridSearchCV(_estimator(), {"ambiguity__radius": radii}, cv=ours.splits,
                          scoring="neg_log_loss", n_jobs=1).fit(X, Y)
    for k in range(3):
        np.testing.assert_allclose(search.cv_results_[f"split{k}_test_score"],
                                   ours.results[f"split{k}_test_score"], rtol=1e-12)
    assert search.best_params_ == {"ambiguity__radius": ours.best_params_["radius"]}
    assert search.best_estimator_.ambiguity.radius == ours.best_estimator_.ambiguity.radius
    assert search.best_score_ == pytest.approx(ours.best_score_, rel=1e-12)


def test_nested_params_clone_and_set_params():
    metric = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical=0.7)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1))
    params = est.get_params(deep=True)
    assert params["ambiguity__radius"] == 0.1 and params["ambiguity__metric__label"] is None
    copy = clone(est).set_params(ambiguity__radius=0.3)
    assert copy.ambiguity.radius == 0.3 and est.ambiguity.radius == 0.1  # clone is a deep copy
    assert copy.ambiguity.metric is not metric
    assert copy.ambiguity.metric.calibration is not None  # not a parameter, but kept by clone
    # the default label cost (None, shown as LabelCost(kappa=inf)) is reachable: set_params stores it
    assert params["ambiguity__metric__label__kappa"] == np.inf
    copy.set_params(ambiguity__metric__label__kappa=1.0)
    assert copy.ambiguity.metric.label.kappa == 1.0 and metric.label is None
    assert copy.ambiguity.metric.calibration is not None  # a label cost does not change the weights
    with pytest.raises(dk.ParameterError, match="Invalid parameter 'rad' for Wasserstein"):
        copy.set_params(ambiguity__rad=1.0)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("grid, message", [
    ({}, "non-empty|empty"),
    ([], "non-empty"),
    ({"radius": []}, r"grid\['radius'\] has no values"),
    ({"radius": 0.1}, r"grid\['radius'\] must be a list"),
    ({"radius": [0.1], "theta": [0.9]}, "both 'radius' and 'theta'"),
    ({"radius": [0.1], "ambiguity__radius": [0.2]}, "both set 'ambiguity__radius'"),
    ({"theta": [1.5]}, "theta"),
    ({"radius": [-1.0]}, "radius"),
    ({"kappa": [0.0]}, "kappa"),
    ({"C": [1.0]}, "DROClassifier has no parameter 'C'"),
    ({"ambiguity__metric__label__kapa": [1.0]}, "no parameter 'ambiguity__metric__label__kapa'"),
])
def test_grid_errors(grid, message):
    with pytest.raises(dk.ParameterError, match=message):
        _sweep(grid)


def test_backend_errors(monkeypatch):
    with pytest.raises(dk.ParameterError, match="backend must be one of .*'dask'.*got 'spark'"):
        _sweep({"radius": [0.1]}, backend="spark")
    with pytest.raises(dk.ParameterError, match="scheduler is only used with backend='dask'"):
        _sweep({"radius": [0.1]}, scheduler="tcp://127.0.0.1:8786")
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)  # dask not installed
    with pytest.raises(ImportError, match=r"pip install drokit\[dask\]"):
        _sweep({"radius": [0.1]}, backend="dask")


def test_failed_fits_are_recorded_with_params_and_split():
    grid = {"method": ["auto", "closed_form"]}  # closed_form rejects mutable categorical features
    with pytest.warns(FitFailedWarning, match="3 of 6 fits failed"):
        result = _sweep(grid)
    table = result.results
    assert list(table["n_failed_fits"]) == [0, 3]
    assert np.isnan(table.at[1, "mean_test_score"]) and table.at[1, "rank_test_score"] == 2
    assert "split 0: fit: ParameterError: method='closed_form'" in table.at[1, "errors"]
    assert result.best_params_ == {"method": "auto"}
    with pytest.raises(FitFailedError, match=r"fit failed for method=closed_form on split \d "
                                             r"\(repeat 0, fold \d\): ParameterError"):
        _sweep(grid, error_score="raise")
    with pytest.raises(FitFailedError, match="all 3 fits failed"):
        _sweep({"method": ["closed_form"]})


def test_error_score_number_is_used():
    with pytest.warns(FitFailedWarning):
        result = _sweep({"method": ["closed_form", "auto"]}, error_score=-99.0)
    assert (result.results.loc[0, [f"split{k}_test_score" for k in range(3)]] == -99.0).all()
    assert result.best_params_ == {"method": "auto"}


# --------------------------------------------------------------------------- progress and report
def test_progress_lines_on_stderr_when_on(capsys):
    _sweep({"radius": [0.05, 0.2]}, progress=True)
    err = capsys.readouterr().err
    assert "[drokit sweep] 1/6 radius=" in err and "[drokit sweep] 6/6 radius=" in err
    assert "6 fits in" in err and "0 failed" in err and "refit radius=" in err


def test_progress_silent_when_off(capsys):
    _sweep({"radius": [0.05, 0.2]}, progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_to_markdown_lists_best_first(sequential):
    text = sequential.to_markdown()
    lines = text.splitlines()
    assert lines[0] == "| theta | radius | kappa | mean neg_log_loss | std | rank | fit time (s) | failed |"
    assert len(lines) == 2 + 4
    best = sequential.best_params_
    assert lines[2].startswith(f"| {best['theta']:.4g} | ") and "| 1 |" in lines[2]
    assert "best neg_log_loss" in str(sequential)


def test_every_combination_with_a_failure_cannot_be_refit():
    """Scoring fails on the split whose test rows hold row 0: one failed fit per combination."""
    def scorer(model, X_, y_):
        if 0 in X_.index:
            raise RuntimeError("row 0 cannot be scored")
        return -float(np.mean((model.predict_proba(X_)[:, 1] - y_) ** 2))

    grid = {"radius": [0.05, 0.2]}
    with pytest.warns(FitFailedWarning), pytest.raises(FitFailedError, match="every parameter combination"):
        _sweep(grid, scoring=scorer)
    with pytest.warns(FitFailedWarning):
        result = _sweep(grid, scoring=scorer, refit=False)
    assert list(result.results["n_failed_fits"]) == [1, 1]
    assert result.best_params_ is None and result.best_estimator_ is None and result.refit_time == 0.0


def test_fits_carry_the_drokit_certificate_and_refit_time(sequential):
    fits = sequential.fits
    assert (fits["status"] == "optimal").all() and (fits["relative_gap"] <= 1e-6).all()
    assert (sequential.results["n_uncertified_fits"] == 0).all()
    # the compile path of each fit: the grid's kappa = inf / 1 on mixed data, recomputed by a direct fit
    for row in sequential.fits.drop_duplicates("candidate").itertuples():
        params = sequential.results["params"][row.candidate]
        direct = _estimator(kappa=params["kappa"], radius=-math.log(params["theta"]))
        train, _ = sequential.splits[row.split]
        fitted = direct.fit(X.iloc[train], Y.iloc[train]).result_
        assert row.method == fitted.method != "" and row.solver == fitted.solver != ""
    assert sequential.refit_time > 0.0
    plain = cross_validate_grid(LogisticRegressionOnCodes(), X, Y, {"C": [0.5, 2.0]}, cv=3, seed=SEED,
                                progress=False)
    assert (plain.fits["status"] == "").all() and plain.fits["relative_gap"].isna().all()
    assert (plain.fits["method"] == "").all() and (plain.fits["solver"] == "").all()


class LogisticRegressionOnCodes(LogisticRegression):
    """scikit-learn's logistic regression on the numerical column and the categorical codes."""

    def fit(self, X_, y_):
        return super().fit(_codes(X_), y_)

    def predict_proba(self, X_):
        return super().predict_proba(_codes(X_))


def _codes(X_):
    return np.column_stack([X_["x"], X_["a"].cat.codes, X_["b"].cat.codes])


def test_fit_warnings_are_kept_per_fit(monkeypatch):
    """A fit's warnings (e.g. an uncertified cutting plane with on_inaccurate="warn") reach ``fits``."""
    from drokit.models import estimators

    original = estimators.DROClassifier.fit

    def warning_fit(self, X_, y_):
        warnings.warn("cutting plane not certified (test)", RuntimeWarning)
        return original(self, X_, y_)

    monkeypatch.setattr(estimators.DROClassifier, "fit", warning_fit)
    with pytest.warns(RuntimeWarning, match="not certified"):   # the refit's, in this process
        result = _sweep({"radius": [0.1]}, n_jobs=1)
    assert (result.fits["warnings"] == "cutting plane not certified (test)").all()


class _KappaWrapper(ClassifierMixin, BaseEstimator):
    """A user's wrapper whose own parameter is called ``kappa`` (and takes symbolic values)."""

    def __init__(self, kappa="K", theta=0.9):
        self.kappa = kappa
        self.theta = theta

    def fit(self, X, y):
        kappa = float(X.shape[1]) if self.kappa == "K" else float(self.kappa)
        self.model_ = dk.DROClassifier(ambiguity=dk.Wasserstein(
            dk.GroundMetric(label=dk.LabelCost(kappa=kappa)), radius=-math.log(self.theta))).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)

    def predict(self, X):
        return self.model_.predict(X)


def test_estimators_own_parameters_named_like_convenience_keys_are_theirs():
    """A grid key ``kappa`` / ``theta`` sets an estimator's own parameter of that name (no validation as a
    label cost, no theta -> radius translation); the scores equal direct fits."""
    result = cross_validate_grid(_KappaWrapper(), X, Y, {"kappa": ["K", 2.0], "theta": [0.9]}, cv=3,
                                 seed=SEED, progress=False)
    assert result.results["params"].tolist() == [{"kappa": "K", "theta": 0.9}, {"kappa": 2.0, "theta": 0.9}]
    for row, kappa in zip(result.results.itertuples(), ("K", 2.0)):
        direct = _split_score(_KappaWrapper(kappa=kappa, theta=0.9), result.splits[0])
        assert row.split0_test_score == pytest.approx(direct, rel=1e-10)
    assert result.best_estimator_.theta == 0.9
