"""DROClassifierCV / DRORegressorCV (issue 24): the scikit-learn contract, the path, the three criteria checked
against hand loops, the refit against a plain fit at the chosen radius, and the errors for bad paths."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import drokit as dk
from drokit.model_selection.criteria import ShiftScorer, WorstCaseScorer, default_radii, typical_distance
from tests.factories import two_plus_two_frame

FAST = dict(radii=[0.01, 0.1], cv=2, backend="sequential")


def _expected_failed_checks(estimator):
    # As scikit-learn's own LogisticRegressionCV: repeating a row is not weighting it once the folds are drawn (the
    # repeated rows land in different folds, so the validation scores and possibly the chosen radius differ); at
    # a fixed radius weights and repeats agree (tests/test_sample_weight.py)
    return {"check_sample_weight_equivalence_on_dense_data":
            "the K-fold splits of repeated rows are not those of weighted rows: the selection may differ"}


#: scikit-learn's checks fit dozens of times: one radius keeps each fit to two folds and the refit (the selection over
#: several radii is tested below)
CHECKS = dict(radii=[0.05], cv=2, backend="sequential")


@parametrize_with_checks([dk.DROClassifierCV(**CHECKS), dk.DRORegressorCV(**CHECKS)],
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


def _data(n=80, seed=3):
    X, y = two_plus_two_frame(n, seed, labels=(0, 1))
    return X, y


def test_the_chosen_radius_maximizes_the_mean_validation_score_and_the_refit_is_the_plain_fit_there():
    X, y = _data()
    cv = dk.DROClassifierCV(radii=[0.003, 0.03, 0.3, 1.0], cv=3, backend="sequential").fit(X, y)
    assert cv.radius_ == pytest.approx(cv.path_["radius"].iloc[int(np.argmax(cv.path_["mean_test_score"]))])
    assert cv.best_score_ == pytest.approx(cv.path_["mean_test_score"].max())
    assert cv.scores_.shape == (4, 3)
    np.testing.assert_allclose(cv.scores_.mean(axis=1), cv.path_["mean_test_score"])
    # the same splits and scores as a sweep written by hand
    sweep = dk.cross_validate_grid(dk.DROClassifier(), X, y, {"radius": [0.003, 0.03, 0.3, 1.0]}, cv=3, seed=0,
                                   backend="sequential", refit=False)
    np.testing.assert_allclose(sweep.results["mean_test_score"], cv.path_["mean_test_score"], rtol=1e-6)
    plain = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=cv.radius_)).fit(X, y)
    np.testing.assert_allclose(cv.coef_, plain.coef_, atol=1e-5)
    assert cv.result_.objective == pytest.approx(plain.result_.objective, rel=1e-6)
    assert cv.ambiguity_.radius == cv.radius_ and cv.ambiguity is None      # the declared parameter is untouched


def test_kappas_are_cross_validated_with_the_radii_and_the_user_ambiguity_is_not_modified():
    X, y = _data()
    declared = dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(kappa=2.0)), radius=0.5)
    cv = dk.DROClassifierCV(ambiguity=declared, radii=[0.01, 0.1], kappas=[0.5, np.inf], cv=2,
                            backend="sequential").fit(X, y)
    assert len(cv.path_) == 4 and set(cv.path_["kappa"]) == {0.5, np.inf}
    best = cv.path_.iloc[int(np.argmax(cv.path_["mean_test_score"]))]
    assert (cv.radius_, cv.kappa_) == (best["radius"], best["kappa"])
    assert declared.radius == 0.5 and declared.metric.label.kappa == 2.0
    assert cv.ambiguity_.metric.kappa == cv.kappa_


def test_worst_case_criterion_is_minus_the_exact_worst_case_validation_risk():
    X, y = _data(seed=5)
    model = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X.iloc[:50], y[:50])
    scorer = WorstCaseScorer(0.2)
    expected = dk.worst_case(model, X.iloc[50:], y[50:], ambiguity=dk.Wasserstein(radius=0.2)).value
    assert scorer(model, X.iloc[50:], y[50:]) == pytest.approx(-expected, rel=1e-9)
    # at radius 0 it is the nominal validation log-loss
    p = model.predict_proba(X.iloc[50:])
    assert WorstCaseScorer(0.0)(model, X.iloc[50:], y[50:]) == pytest.approx(-log_loss(y[50:], p), rel=1e-7)
    cv = dk.DROClassifierCV(criterion="worst_case", validation_radius=0.2, radii=[0.01, 0.3], cv=2,
                            backend="sequential").fit(X, y)
    folds = list(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    train, test = cv.sweep_.splits[0]
    fold_model = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.01)).fit(X.iloc[train], y[train])
    by_hand = -dk.worst_case(fold_model, X.iloc[test], y[test], ambiguity=dk.Wasserstein(radius=0.2)).value
    assert cv.scores_[0, 0] == pytest.approx(by_hand, rel=1e-6)
    assert len(folds) == 2


def test_shift_criterion_equals_a_hand_loop_over_simulate_shift():
    X, y = _data(seed=7)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=2.0))
    model = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.05)).fit(X.iloc[:50], y[:50])
    Xv, yv = X.iloc[50:], y[50:]
    sets = list(dk.simulate_shift(Xv, metric, 7, seed=11))
    losses = np.array([log_loss(yv, model.predict_proba(S), labels=[0, 1]) for S in sets])
    from sklearn.metrics import get_scorer
    scorer = get_scorer("neg_log_loss")
    assert ShiftScorer(scorer, None, 7, "mean", seed=11)(model, Xv, yv) == pytest.approx(-losses.mean(), rel=1e-9)
    assert ShiftScorer(scorer, None, 7, "worst", seed=11)(model, Xv, yv) == pytest.approx(-losses.max(), rel=1e-9)
    # a user shift model is used instead of the model's metric
    other = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=0.5))
    shifted = list(dk.simulate_shift(Xv, other, 3, seed=11))
    by_hand = -np.mean([log_loss(yv, model.predict_proba(S), labels=[0, 1]) for S in shifted])
    assert ShiftScorer(scorer, other, 3, "mean", seed=11)(model, Xv, yv) == pytest.approx(by_hand, rel=1e-9)


def test_shift_selection_prefers_larger_radii_than_clean_selection_under_a_strong_shift():
    """The reason the criterion exists: a strong feature shift makes the clean-CV radius look too small."""
    X, y = _data(n=120, seed=9)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=0.5))
    kw = dict(ambiguity=dk.Wasserstein(metric), radii=[0.001, 0.03, 1.0], cv=3, backend="sequential", refit=False)
    clean = dk.DROClassifierCV(**kw).fit(X, y)
    shift = dk.DROClassifierCV(criterion="shift", n_shift_sets=10, **kw).fit(X, y)
    assert shift.radius_ >= clean.radius_
    assert not hasattr(shift, "coef_")                   # refit=False: the selection only


def test_default_path_is_a_log_grid_around_the_rule_of_thumb():
    X, y = _data()
    cv = dk.DROClassifierCV(radii=5, cv=2, backend="sequential", refit=False).fit(X, y)
    d = typical_distance(X, None, seed=0)
    r0 = d / np.sqrt(len(X))
    np.testing.assert_allclose(default_radii(5, X), np.geomspace(r0 / 100, 10 * r0, 5))
    # the estimator's path stops at 1.5 times the critical radius when that is below 10 r0 (test_constant_model.py)
    from drokit.certificates.constant_model import critical_point
    r_crit = critical_point(dk.Problem(loss="logistic", ambiguity=dk.Wasserstein(radius=1.0)).bind(X, y))[0]
    np.testing.assert_allclose(cv.radii_, np.geomspace(r0 / 100, min(10 * r0, 1.5 * r_crit), 5))
    kl = dk.DROClassifierCV(ambiguity=dk.KLBall(), radii=3, cv=2, backend="sequential", refit=False).fit(X, y)
    np.testing.assert_allclose(kl.radii_, [1e-3, np.sqrt(1e-3), 1.0])
    assert np.isnan(kl.kappa_)


def test_typical_distance_is_the_median_single_pair_transport_distance():
    X, _ = _data(n=30, seed=2)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=[1.0, 3.0]),
                             categorical=dk.MismatchCost(weights=[0.5, 2.0]))
    rng = np.random.default_rng(4)
    first = rng.integers(0, 30, size=40)
    second = (first + rng.integers(1, 30, size=40)) % 30
    by_hand = [dk.wasserstein_distance(X.iloc[[i]], X.iloc[[j]], metric) for i, j in zip(first, second)]
    by_hand = np.array(by_hand)
    assert typical_distance(X, metric, pairs=40, seed=4) == pytest.approx(np.median(by_hand[by_hand > 0]))


def test_regressor_cv_chooses_and_refits():
    X, _ = _data(n=60, seed=4)
    y = 2 * X["a"].to_numpy() - X["b"].to_numpy() + 0.3 * np.random.default_rng(0).normal(size=60)
    cv = dk.DRORegressorCV(radii=[0.001, 0.1, 2.0], cv=3, backend="sequential",
                           scoring="neg_mean_absolute_error").fit(X, y)
    assert cv.radius_ in (0.001, 0.1, 2.0)
    plain = dk.DRORegressor(ambiguity=dk.Wasserstein(radius=cv.radius_)).fit(X, y)
    np.testing.assert_allclose(cv.predict(X), plain.predict(X), atol=1e-4)


def test_clone_pickle_and_grid_search_nesting():
    X, y = _data(n=60)
    cv = dk.DROClassifierCV(**FAST)
    assert clone(cv).get_params() == cv.get_params()
    cv.fit(X, y)
    again = pickle.loads(pickle.dumps(cv))
    np.testing.assert_allclose(again.predict_proba(X), cv.predict_proba(X))
    assert again.radius_ == cv.radius_
    outer = GridSearchCV(dk.DROClassifierCV(**FAST), {"l2_penalty": [0.0, 0.1]}, cv=2).fit(X, y)
    assert outer.best_estimator_.radius_ in (0.01, 0.1)


def test_plot_path(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = _data(n=60)
    cv = dk.DROClassifierCV(radii=[0.01, 0.1], kappas=[1.0, np.inf], cv=2, backend="sequential",
                            refit=False).fit(X, y)
    ax = cv.plot_path()
    assert len(ax.lines) >= 3 and ax.get_xscale() == "log"


@pytest.mark.parametrize("kwargs,match", [
    (dict(radii=[]), "empty"),
    (dict(radii=[0.1, -0.1]), ">= 0"),
    (dict(radii=[0.1, 0.1]), "repeated"),
    (dict(radii=[0.1, np.nan]), "finite"),
    (dict(radii="big"), "radii"),
    (dict(radii=0), "positive int"),
    (dict(kappas=[]), "kappas"),
    (dict(kappas=[1.0, -1.0]), "kappas"),
    (dict(criterion="accuracy"), "criterion"),
    (dict(criterion="worst_case", scoring="accuracy"), "scoring must be None"),
    (dict(validation_radius=0.1), "validation_radius"),
    (dict(criterion="worst_case", validation_radius=-1.0), "validation_radius"),
    (dict(criterion="shift", n_shift_sets=0), "n_shift_sets"),
    (dict(criterion="shift", shift_aggregate="median"), "shift_aggregate"),
    (dict(ambiguity=dk.CVaRSet(0.2)), "has none"),
])
def test_bad_paths_and_criteria_raise_clear_errors(kwargs, match):
    X, y = _data(n=40)
    with pytest.raises(dk.ParameterError, match=match):
        dk.DROClassifierCV(**{**FAST, **kwargs}).fit(X, y)


def test_shift_criterion_needs_a_dataframe():
    X, y = _data(n=40)
    with pytest.raises(dk.DataError, match="DataFrame"):
        dk.DROClassifierCV(criterion="shift", **FAST).fit(X[["a", "b"]].to_numpy(), y)


# ---------------------------------------------------------------------------------------------------
# warm starts: the estimators' warm_start and the sweep's path
# ---------------------------------------------------------------------------------------------------
def test_warm_start_starts_phase_one_from_the_last_solution_and_changes_no_answer(monkeypatch):
    import drokit.reformulations.own_solvers as own
    X, y = _data(n=150, seed=8)
    starts = []
    original = own.warm_phase_one

    def spy(*args, **kwargs):
        starts.append(kwargs.get("start"))
        return original(*args, **kwargs)
    monkeypatch.setattr(own, "warm_phase_one", spy)
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=1.0))
    warm = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.3), method="cutting_plane", warm_start=True)
    warm.fit(X, y)
    first = np.r_[np.ravel(warm.intercept_), warm.coef_.ravel(), warm.lambda_]
    warm.set_params(ambiguity__radius=0.1).fit(X, y)
    assert starts[0] is None
    np.testing.assert_allclose(starts[1], first)
    cold = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1), method="cutting_plane").fit(X, y)
    assert warm.result_.status == "optimal"
    assert warm.result_.objective == pytest.approx(cold.result_.objective, rel=2e-6)
    # a start of another length (a new level, so another design) is ignored, and the fit is still right
    X2 = X.copy()
    X2["c"] = X2["c"].cat.add_categories(["s"])
    X2.loc[X2.index[:5], "c"] = "s"
    warm.fit(X2, y)
    fresh = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1), method="cutting_plane").fit(X2, y)
    assert warm.result_.objective == pytest.approx(fresh.result_.objective, rel=2e-6)


def test_a_warm_path_sweep_scores_as_the_cold_sweep():
    X, y = _data(n=120, seed=6)
    grid = {"radius": [0.02, 0.2, 0.6], "kappa": [1.0, np.inf]}
    kw = dict(cv=3, seed=1, backend="sequential", refit=False)
    est = dk.DROClassifier(method="cutting_plane")
    cold = dk.cross_validate_grid(est, X, y, grid, **kw)
    warm = dk.cross_validate_grid(est, X, y, grid, path="radius", **kw)
    np.testing.assert_allclose(warm.results["mean_test_score"], cold.results["mean_test_score"], atol=1e-4)
    assert list(warm.results["param_radius"]) == list(cold.results["param_radius"])
    assert (warm.fits["status"] == "optimal").all()


def test_path_sweep_errors():
    from sklearn.tree import DecisionTreeClassifier
    X, y = _data(n=40)
    with pytest.raises(dk.ParameterError, match="path='theta'"):
        dk.cross_validate_grid(dk.DROClassifier(), X, y, {"radius": [0.1, 0.2]}, cv=2, path="theta")
    with pytest.raises(dk.ParameterError, match="warm_start"):
        dk.cross_validate_grid(DecisionTreeClassifier(), X[["a", "b"]], y, {"max_depth": [1, 2]}, cv=2,
                               path="max_depth")


def test_sample_weights_reach_every_fit_score_and_the_refit():
    X, y = _data(n=90, seed=12)
    w = np.random.default_rng(1).uniform(0.2, 2.0, size=90)
    cv = dk.DROClassifierCV(radii=[0.02, 0.3], cv=3, backend="sequential").fit(X, y, sample_weight=w)
    train, test = cv.sweep_.splits[1]
    fold = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.3)).fit(X.iloc[train], y[train],
                                                                     sample_weight=w[train])
    expected = -log_loss(y[test], fold.predict_proba(X.iloc[test]), sample_weight=w[test], labels=[0, 1])
    assert cv.scores_[1, 1] == pytest.approx(expected, rel=1e-6)
    refit = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=cv.radius_)).fit(X, y, sample_weight=w)
    assert cv.result_.objective == pytest.approx(refit.result_.objective, rel=1e-6)
    with pytest.raises(dk.DataError, match="sample_weight"):
        dk.DROClassifierCV(**FAST).fit(X, y, sample_weight=np.zeros(90))
