"""Beyond the critical radius the constant model is optimal (drokit.certificates.constant_model).

Independent checks: the monolithic program (every configuration row, Clarabel) finds a nonzero model just below
``r_crit`` and the constant model's value at and above it (so ``r_crit`` is exact, not merely sufficient); the cutting
plane then certifies ``beta = 0`` with no master and the same objective; the dual point's bound is evaluated by the
Lagrangian (a broken plan is refused, mutation); level costs, sample weights and either class being the lighter one.
"""

import numpy as np
import pandas as pd
import pytest

import drokit as dk
import drokit.certificates.constant_model as cm
from drokit.certificates.constant_model import constant_model_bound, critical_point


def _data(n=40, seed=5, flip=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "a": pd.Categorical(rng.choice(list("pqr"), size=n)),
                      "b": pd.Categorical(rng.choice(list("uv"), size=n))})
    y = ((X["x"] + (X["a"] == "p") + rng.normal(size=n)) > 0.3).astype(int)
    return X, (1 - y) if flip else y


def _metric(categorical=None):
    return dk.GroundMetric(numerical=dk.NormCost(p=1, weights=1.0),
                           categorical=categorical or dk.MismatchCost(weights={"a": 0.7, "b": 1.3}))


def _r_crit(X, y, metric, sample_weight=None):
    inst = dk.Problem(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=1.0)).bind(
        X, y, sample_weight=sample_weight)
    return critical_point(inst)[0]


@pytest.mark.parametrize("flip", [False, True])
def test_r_crit_is_exact_against_the_monolithic_program(flip):
    X, y = _data(flip=flip)
    metric = _metric()
    rc = _r_crit(X, y, metric)
    assert 0 < rc < np.inf
    below = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.97 * rc), method="monolithic").fit(X, y)
    above = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=1.05 * rc), method="monolithic").fit(X, y)
    p_plus = float(np.mean(y))
    u0 = -(p_plus * np.log(p_plus) + (1 - p_plus) * np.log(1 - p_plus))       # the constant model's log-loss
    assert np.abs(below.coef_).max() > 1e-3 and below.result_.objective < u0 - 1e-6
    assert above.result_.objective == pytest.approx(u0, rel=1e-6)
    fit = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=1.05 * rc), method="cutting_plane").fit(X, y)
    assert fit.result_.solver == "constant_model" and fit.result_.status == "optimal"
    assert np.all(fit.coef_ == 0) and fit.result_.relative_gap <= 1e-9
    assert fit.result_.objective == pytest.approx(u0, rel=1e-12)
    assert fit.intercept_[0] == pytest.approx(np.log(p_plus / (1 - p_plus)), rel=1e-10)
    # just below: the cutting plane does not take it, and agrees with the monolithic program
    near = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.97 * rc), method="cutting_plane").fit(X, y)
    assert near.result_.solver != "constant_model"
    assert near.result_.objective == pytest.approx(below.result_.objective, rel=1e-6)


def test_level_costs_and_sample_weights():
    X, y = _data(n=50, seed=7)
    w = np.random.default_rng(8).uniform(0.2, 2.0, size=len(X))
    metric = _metric(dk.OrdinalCost(features={"a": ["p", "q", "r"]}, weights={"a": 0.6, "b": 1.1}))
    rc = _r_crit(X, y, metric, sample_weight=w)
    for radius in (0.95 * rc, 1.1 * rc):
        mono = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=radius), method="monolithic").fit(
            X, y, sample_weight=w)
        cp = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=radius), method="cutting_plane").fit(
            X, y, sample_weight=w)
        assert cp.result_.objective == pytest.approx(mono.result_.objective, rel=1e-6)
        assert (cp.result_.solver == "constant_model") == (radius > rc)


def test_the_bound_is_evaluated_not_trusted(monkeypatch):
    """A plan that moves nothing leaves the dummies' conditions unmet: the Lagrangian refuses it."""
    X, y = _data()
    metric = _metric()
    rc = _r_crit(X, y, metric)
    inst = dk.Problem(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=2 * rc)).bind(X, y)
    assert constant_model_bound(inst, 1e-6) is not None
    monkeypatch.setattr(cm, "_level_plan", lambda small, heavy, units: np.diag(small))
    assert constant_model_bound(inst, 1e-6) is None
    fit = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=2 * rc), method="cutting_plane").fit(X, y)
    assert fit.result_.solver != "constant_model"


def test_not_applied_where_it_does_not_hold():
    X, y = _data()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=1.0), categorical=dk.MismatchCost(weights=1.0),
                             label=dk.LabelCost(kappa=1.0))                     # labels may flip
    inst = dk.Problem(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=50.0)).bind(X, y)
    assert critical_point(inst) is None
    immutable = _metric(dk.MismatchCost(weights={"a": np.inf, "b": 1.0}))     # the classes differ in 'a'
    inst = dk.Problem(loss="logistic", ambiguity=dk.Wasserstein(immutable, radius=50.0)).bind(X, y)
    assert critical_point(inst) is None
    inst = dk.Problem(loss="hinge", ambiguity=dk.Wasserstein(_metric(), radius=50.0)).bind(X, y)
    assert critical_point(inst) is None                                       # piecewise-affine: not this argument


def test_immutable_feature_alike_in_both_classes_adds_nothing():
    """An immutable feature with the same level distribution in both classes moves nothing in the plan: the critical
    radius is that of the data without it (it was NaN: inf x 0 level costs), with no RuntimeWarning."""
    import warnings
    X, y = _data()
    doubled = pd.concat([X.assign(c="s"), X.assign(c="t")], ignore_index=True)
    doubled["c"] = pd.Categorical(doubled["c"])
    categorical = dk.MismatchCost(weights={"a": 0.7, "b": 1.3, "c": np.inf})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        rc = _r_crit(doubled, pd.concat([y, y], ignore_index=True), _metric(categorical))
    assert rc == pytest.approx(_r_crit(X, y, _metric()), rel=1e-12)


def test_cv_default_path_stops_beyond_the_critical_radius():
    from drokit.model_selection.criteria import default_radii
    from drokit.model_selection.cv_estimators import CRITICAL_CAP
    X, y = _data(n=60, seed=9)
    metric = _metric()
    rc = _r_crit(X, y, metric)
    uncapped = default_radii(4, X, metric)
    assert uncapped[-1] > CRITICAL_CAP * rc > uncapped[0]         # the default grid reaches past r_crit here
    cv = dk.DROClassifierCV(ambiguity=dk.Wasserstein(metric), radii=4, cv=2).fit(X, y)
    path = np.asarray(cv.path_["radius"], dtype=float)
    assert path[-1] == pytest.approx(CRITICAL_CAP * rc, rel=1e-9) and path[0] == pytest.approx(uncapped[0])
    assert int(cv.path_["n_uncertified_fits"].sum()) == 0
    given = dk.DROClassifierCV(ambiguity=dk.Wasserstein(metric), radii=list(uncapped), cv=2).fit(X, y)
    np.testing.assert_allclose(np.asarray(given.path_["radius"], dtype=float), uncapped)   # a list is kept
