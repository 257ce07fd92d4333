"""Data given to a fitted model: no silent wrong answers (issue 20 items 1 and 6, issue 21 item 5).

* Every entry point that takes ``X`` for a fitted model (``predict``, ``predict_proba``,
  ``predict_log_proba``, ``decision_function``, ``score``, ``dk.worst_case``, ``dk.stability``,
  ``dk.feature_stability``, ``dk.stability_curve``, ``dk.robustness_report``) checks it the way
  scikit-learn does: a DataFrame must have the columns seen at fit, in the same order (a clear
  :class:`~drokit.DataError` names ``X`` and the difference otherwise); a numpy array given to a model
  fitted on a DataFrame warns as scikit-learn does, and raises where a column mix-up is provable.
* Parameters that must be numbers are numbers (not strings, not booleans).
* ``predict_proba`` of a margin loss says why it is not there.
* A column of numbers stored as strings is not silently made a categorical feature.
* What an estimator's ``repr`` shows, ``get_params`` lists and ``set_params`` reaches (GridSearchCV over
  ``ambiguity__metric__label__kappa`` on the default metric).
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency

import drokit as dk

N = 40
FITTED_WITH_NAMES = "X does not have valid feature names, but DROClassifier was fitted with feature names"


def frame(seed=0, n=N):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.normal(0, 1, n), "income": rng.normal(0, 2, n),
                      "color": pd.Categorical(np.resize(["blue", "green", "red"], n)),
                      "city": np.resize(["paris", "rome"], n).astype(object)})
    signal = X["age"] + 0.5 * X["income"] + (X["color"] == "red") + rng.normal(0, 0.5, n)
    y = np.where(signal > np.median(signal), "bad", "good")
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = frame()
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    return clf, X, y


def small():
    X, y = frame(n=16)
    return X[["age", "income", "color"]], y


REORDERED = ["income", "age", "city", "color"]


def entry_points():
    """``name -> f(model, X, y)``: every public function that evaluates a fitted model on ``X``."""
    ot = dk.OTMoment(theta1=1.0, theta2=1.0)
    return {
        "predict": lambda m, X, y: m.predict(X),
        "predict_proba": lambda m, X, y: m.predict_proba(X),
        "predict_log_proba": lambda m, X, y: m.predict_log_proba(X),
        "decision_function": lambda m, X, y: m.decision_function(X),
        "score": lambda m, X, y: m.score(X, y),
        "worst_case": lambda m, X, y: dk.worst_case(m, X, y),
        "stability": lambda m, X, y: dk.stability(m, X, y, risk=1.0, ambiguity=ot),
        "feature_stability": lambda m, X, y: dk.feature_stability(m, X, y, risk=1.0, ambiguity=ot),
        "stability_curve": lambda m, X, y: dk.stability_curve(m, X, y, risks=[1.0], ambiguity=ot),
        "robustness_report": lambda m, X, y: dk.robustness_report(
            {"dro": m}, X, y, shift_model=dk.GroundMetric.calibrated(X, rho_numerical=0.8,
                                                                     rho_categorical=0.8),
            n_sets=2, seed=0),
    }


ENTRY_POINTS = entry_points()


# ---------------------------------------------------------------------------------------------------
# item 20.1: parameters that must be real numbers
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0.1", True, b"0.1", [0.1]])
def test_radius_must_be_a_real_number(value):
    X, y = small()
    with pytest.raises(dk.ParameterError, match=r"Wasserstein radius must be a real number"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(radius=value)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="radius"):
        dk.Problem("logistic", dk.Wasserstein(radius=value)).compile(X, y)


def test_numpy_and_integer_radius_are_fine():
    X, y = small()
    for radius in (np.float64(0.05), np.float32(0.05), 0, np.int64(0)):
        dk.DROClassifier(ambiguity=dk.Wasserstein(radius=radius)).fit(X, y)


RHO = {"rho_numerical": 0.8, "rho_categorical": 0.8}


@pytest.mark.parametrize("make,match", [
    (lambda v: dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(kappa=v))), "LabelCost kappa"),
    (lambda v: dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=v))), "NormCost p"),
    (lambda v: dk.Wasserstein(dk.GroundMetric(categorical=dk.MismatchCost(p=v))), "MismatchCost p"),
    (lambda v: dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights={"age": v}))),
     "numerical weight for 'age'"),
    (lambda v: dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights=[v, 1.0]))),
     "numerical weight for 'age'"),
    (lambda v: dk.Wasserstein(dk.GroundMetric(categorical=dk.MismatchCost(weights=v))),
     "categorical weight"),
    (lambda v: dk.CalibratedWasserstein(theta=v, **RHO), "theta"),
    (lambda v: dk.CalibratedWasserstein(half_width=v, **RHO), "half_width"),
    (lambda v: dk.CalibratedWasserstein(kappa=v, **RHO), "kappa"),
], ids=["kappa", "norm-p", "mismatch-p", "named-weight", "weight-array", "scalar-weight", "theta",
        "half_width", "calibrated-kappa"])
@pytest.mark.parametrize("value", ["2", True])
def test_ambiguity_numbers_must_be_real_numbers(make, match, value):
    X, y = small()
    with pytest.raises(dk.ParameterError, match=match + r".*(real number|must be a number|must be None, a number)"):
        dk.DROClassifier(ambiguity=make(value)).fit(X, y)


@pytest.mark.parametrize("name", ["theta1", "theta2"])
@pytest.mark.parametrize("value", ["1", True])
def test_otmoment_thetas_must_be_real_numbers(fitted, name, value):
    clf, X, y = fitted
    with pytest.raises(dk.ParameterError, match=f"OTMoment {name} must be a real number"):
        dk.stability(clf, X, y, risk=1.0, ambiguity=dk.OTMoment(**{name: value}))


# ---------------------------------------------------------------------------------------------------
# item 20.6: what repr shows is what get_params lists and set_params reaches
# ---------------------------------------------------------------------------------------------------
def test_default_metric_components_are_reachable():
    metric = dk.GroundMetric()
    assert "label=LabelCost(kappa=inf)" in repr(metric)
    params = metric.get_params(deep=True)
    for key in ("label__kappa", "numerical__p", "numerical__weights", "categorical__p", "categorical__weights"):
        assert key in params, key
    assert params["label__kappa"] == np.inf
    metric.set_params(label__kappa=2.0, numerical__p=2)
    assert metric.label.kappa == 2.0 and metric.numerical.p == 2
    assert repr(metric) == "GroundMetric(numerical=NormCost(p=2, weights=None), " \
                           "categorical=MismatchCost(weights=None, p=1), label=LabelCost(kappa=2.0))"


def test_otmoment_default_metric_is_reachable():
    amb = dk.OTMoment()
    assert amb.get_params(deep=True)["metric__numerical__p"] == 2
    amb.set_params(metric__label__kappa=3.0)
    assert amb.metric.label.kappa == 3.0 and amb.metric.numerical.p == 2


# ---------------------------------------------------------------------------------------------------
# issue 21.5: numbers stored as strings
# ---------------------------------------------------------------------------------------------------
def with_text_numbers(dtype=object):
    X, y = small()
    values = np.round(np.random.default_rng(1).normal(size=len(X)), 2)
    return X.assign(score=pd.Series([str(v) for v in values], dtype=dtype)), y


@pytest.mark.parametrize("dtype", [object, "string"])
def test_numbers_stored_as_strings_raise_with_the_fix(dtype):
    X, y = with_text_numbers(dtype)
    with pytest.raises(dk.DataError, match=r"column 'score' holds numbers stored as strings.*pd\.to_numeric"
                                           r".*categorical_features"):
        dk.DROClassifier().fit(X, y)
    with pytest.raises(dk.DataError, match="'score'"):
        dk.Problem("logistic").compile(X, y)


def test_numbers_in_an_object_column_raise():
    X, y = small()
    X = X.assign(score=pd.Series(list(np.arange(len(X)) * 1.5), dtype=object))
    with pytest.raises(dk.DataError, match=r"column 'score' holds numbers in a column of dtype object"):
        dk.DROClassifier().fit(X, y)


def test_converted_numbers_are_a_numerical_feature():
    X, y = with_text_numbers()
    X["score"] = pd.to_numeric(X["score"])
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    assert "score" in clf.schema_.numerical_names


def test_declared_categorical_strings_of_digits_stay_categorical():
    """Zip codes are digits but categorical: declaring them keeps them so (by name or by index)."""
    X, y = small()
    X = X.assign(zip=np.resize(["02139", "10001", "94103"], len(X)).astype(object))
    for spec in (["color", "zip"], [2, 3]):
        clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05), categorical_features=spec).fit(X, y)
        assert clf.schema_.categorical_names == ["color", "zip"]
        assert clf.schema_.categories[1] == ["02139", "10001", "94103"]
        clf.predict(X)
    cat = X.assign(zip=X["zip"].astype("category"))  # a category dtype is a declaration too
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(cat, y)
    assert "zip" in clf.schema_.categorical_names


def test_text_that_is_not_all_numbers_stays_categorical():
    X, y = small()
    X = X.assign(grade=np.resize(["1", "2", "3+"], len(X)).astype(object))
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    assert "grade" in clf.schema_.categorical_names
