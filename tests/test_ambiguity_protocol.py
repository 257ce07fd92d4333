"""The AmbiguitySet protocol (sets built from existing ones on the training data) and its worked example
CalibratedWasserstein (issue 7, item 3)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

import drokit as dk
from factories import two_plus_two_frame


class RootNBall(dk.AmbiguitySet):
    """A user's set: the ball of radius ``c / sqrt(N)`` (the rate of the Wasserstein concentration
    bounds), N the number of training rows; records the sizes it was built on."""

    built_on = []

    def __init__(self, metric=None, c=0.5):
        self.metric = metric
        self.c = c

    def build(self, X, y, schema, sample_weight=None):
        RootNBall.built_on.append(len(y))
        return dk.Wasserstein(self.metric, radius=self.c / np.sqrt(len(y)))


def test_calibrated_ball_equals_calibrating_by_hand():
    X, y = two_plus_two_frame(n=40)
    amb = dk.CalibratedWasserstein(theta=0.9, rho_numerical=0.5, rho_categorical=0.8, round=1, kappa=2.0)
    clf = dk.DROClassifier(ambiguity=amb).fit(X, y)
    metric = dk.GroundMetric.calibrated(X, rho_numerical=0.5, rho_categorical=0.8, round=1)
    metric.label = dk.LabelCost(kappa=2.0)
    ref = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, dk.radius_from_theta(0.9))).fit(X, y)
    assert clf.result_.objective == pytest.approx(ref.result_.objective, rel=1e-9)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-7)
    # the fitted set is kept, with its calibration, and evaluation uses it (not a re-calibration)
    assert clf.ambiguity_.radius == pytest.approx(-np.log(0.9))
    assert clf.ambiguity_.metric.calibration is not None
    X_new, y_new = two_plus_two_frame(n=15, seed=9)
    assert dk.worst_case(clf, X_new, y_new).value == pytest.approx(
        dk.worst_case(clf, X_new, y_new, ambiguity=ref.ambiguity).value, rel=1e-9)


def test_each_cross_validation_fold_builds_its_own_set():
    X, y = two_plus_two_frame(n=30)
    RootNBall.built_on.clear()
    clf = dk.DROClassifier(ambiguity=RootNBall(c=0.5))
    cross_val_score(clf, X, y, cv=KFold(3))
    assert RootNBall.built_on == [20, 20, 20]
    fitted = clf.fit(X, y)
    assert fitted.ambiguity_.radius == pytest.approx(0.5 / np.sqrt(30))
    explicit = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.5 / np.sqrt(30))).fit(X, y)
    assert fitted.result_.objective == pytest.approx(explicit.result_.objective, rel=1e-9)


def test_parameters_of_a_built_set_reach_grid_search_and_clone():
    X, y = two_plus_two_frame(n=30)
    clf = dk.DROClassifier(ambiguity=dk.CalibratedWasserstein(theta=0.9, rho_numerical=0.5,
                                                              rho_categorical=0.8))
    assert clf.get_params()["ambiguity__theta"] == 0.9
    assert clone(clf).set_params(ambiguity__theta=0.7).ambiguity.theta == 0.7
    assert clf.ambiguity.theta == 0.9
    gs = GridSearchCV(clf, {"ambiguity__theta": [0.6, 0.99]}, cv=3).fit(X, y)
    assert gs.best_params_["ambiguity__theta"] in (0.6, 0.99)


def test_bad_sets_get_clear_errors():
    X, y = two_plus_two_frame(n=20)

    class ReturnsJunk(dk.AmbiguitySet):
        def build(self, X, y, schema, sample_weight=None):
            return 0.1

    class ReturnsItself(dk.AmbiguitySet):
        def build(self, X, y, schema, sample_weight=None):
            return self

    with pytest.raises(dk.ParameterError, match="AmbiguitySet that builds one"):
        dk.DROClassifier(ambiguity=ReturnsJunk()).fit(X, y)
    with pytest.raises(dk.ParameterError, match="build returning itself"):
        dk.DROClassifier(ambiguity=ReturnsItself()).fit(X, y)
    with pytest.raises(dk.ParameterError, match="theta must be in"):
        dk.DROClassifier(ambiguity=dk.CalibratedWasserstein(theta=1.5)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="CalibratedWasserstein: .*rho_numerical is required"):
        dk.DROClassifier(ambiguity=dk.CalibratedWasserstein(theta=0.9)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="built from the training data"):
        dk.Problem("logistic", RootNBall()).resolved_ambiguity()
