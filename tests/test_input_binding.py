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


# ---------------------------------------------------------------------------------------------------
# item 20.1: DataFrames with other columns
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_reordered_dataframe_raises_at_every_entry_point(fitted, entry):
    clf, X, y = fitted
    with pytest.raises(dk.DataError, match=r"X has the columns seen at fit.*in another order"):
        ENTRY_POINTS[entry](clf, X[REORDERED], y)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_renamed_column_raises_at_every_entry_point(fitted, entry):
    clf, X, y = fitted
    with pytest.raises(dk.DataError, match=r"X .*missing column\(s\) \['age'\].*unexpected column\(s\) "
                                           r"\['AGE'\]"):
        ENTRY_POINTS[entry](clf, X.rename(columns={"age": "AGE"}), y)


@pytest.mark.parametrize("entry", ["predict", "worst_case", "stability"])
def test_missing_and_extra_columns_are_named(fitted, entry):
    clf, X, y = fitted
    with pytest.raises(dk.DataError, match=r"missing column\(s\) \['city'\]") as info:
        ENTRY_POINTS[entry](clf, X.drop(columns="city"), y)
    assert "unexpected" not in str(info.value)
    with pytest.raises(dk.DataError, match=r"unexpected column\(s\) \['extra'\]") as info:
        ENTRY_POINTS[entry](clf, X.assign(extra=1.0), y)
    assert "missing" not in str(info.value)


def test_the_message_says_how_to_fix_the_order(fitted):
    clf, X, _ = fitted
    with pytest.raises(dk.DataError) as info:
        clf.predict(X[REORDERED])
    message = str(info.value)
    assert "DROClassifier" in message and str(REORDERED) in message and str(list(X.columns)) in message
    assert "feature_names_in_" in message


def test_same_columns_same_order_are_accepted_silently(fitted):
    clf, X, y = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(X)
        dk.worst_case(clf, X, y)


def test_sklearn_column_names_consistency_check_passes():
    """scikit-learn's own check (not run by check_estimator) now passes: reordered names raise."""
    check_dataframe_column_names_consistency("DROClassifier", dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.01)))
    check_dataframe_column_names_consistency("DRORegressor", dk.DRORegressor(ambiguity=dk.Wasserstein(radius=0.01)))


# ---------------------------------------------------------------------------------------------------
# item 20.1: numpy arrays given to a model fitted with names
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_numpy_array_warns_like_sklearn(fitted, entry):
    if entry == "robustness_report":
        pytest.skip("robustness_report takes a DataFrame X_test only")
    clf, X, y = fitted
    with pytest.warns(UserWarning, match=FITTED_WITH_NAMES):
        ENTRY_POINTS[entry](clf, X.to_numpy(), y)


def test_numpy_array_in_the_fitted_order_predicts_the_same(fitted):
    clf, X, _ = fitted
    with pytest.warns(UserWarning, match=FITTED_WITH_NAMES):
        np.testing.assert_array_equal(clf.decision_function(X.to_numpy()), clf.decision_function(X))


@pytest.mark.parametrize("handle_unknown", ["error", "ignore"])
@pytest.mark.parametrize("entry", ["predict", "worst_case", "stability"])
def test_numpy_array_with_numbers_at_a_categorical_position_raises(fitted, entry, handle_unknown):
    """Columns (age, income, age, city): the numbers at the position of 'color' are never among its levels
    ['blue', 'green', 'red'], even with handle_unknown='ignore'."""
    clf, X, y = fitted
    model = clone(clf).set_params(handle_unknown=handle_unknown).fit(X, y)
    bad = X[["age", "income", "age", "city"]].to_numpy()
    with pytest.warns(UserWarning, match=FITTED_WITH_NAMES), \
            pytest.raises(dk.DataError, match=r"'color'.*(not among|not seen).*blue.*column order"):
        ENTRY_POINTS[entry](model, bad, y)


@pytest.mark.parametrize("entry", ["predict", "worst_case", "stability"])
def test_numpy_array_with_text_at_a_numerical_position_raises(fitted, entry):
    clf, X, y = fitted
    bad = X[["color", "income", "age", "city"]].to_numpy()   # levels at the position of 'age'
    with pytest.warns(UserWarning, match=FITTED_WITH_NAMES), \
            pytest.raises(dk.DataError, match=r"numerical column 'age' holds values that are not numbers"
                                              r".*column order"):
        ENTRY_POINTS[entry](clf, bad, y)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.parametrize("entry", ["predict", "score", "worst_case", "stability"])
def test_numpy_array_with_the_wrong_number_of_columns_raises(fitted, entry):
    clf, X, y = fitted
    with pytest.raises(ValueError, match=r"X has 3 features, but DROClassifier is expecting 4 features"):
        ENTRY_POINTS[entry](clf, X[["age", "income", "color"]].to_numpy(), y)


def test_ignore_still_maps_an_unseen_level_of_the_right_kind(fitted):
    """handle_unknown='ignore' keeps its meaning: an unseen *level* (a string like the levels) is the
    reference level; only a value that cannot be a level at all raises."""
    clf, X, y = fitted
    model = clone(clf).set_params(handle_unknown="ignore").fit(X, y)
    new = X.copy()
    new["color"] = new["color"].astype(object)
    new.loc[0, "color"] = "purple"
    ref = X.copy()
    ref.loc[0, "color"] = "blue"
    np.testing.assert_allclose(model.decision_function(new), model.decision_function(ref))
    new.loc[0, "color"] = 3.5
    with pytest.raises(dk.DataError, match=r"'color' has value\(s\) \['3.5'\] .*not among its levels"):
        model.predict(new)


def test_model_fitted_on_numpy_warns_on_a_dataframe():
    X, y = frame()
    arr = X.to_numpy()
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05), categorical_features=[2, 3]).fit(arr, y)
    with pytest.warns(UserWarning, match="X has feature names, but DROClassifier was fitted without "
                                         "feature names"):
        clf.predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(arr)


# ---------------------------------------------------------------------------------------------------
# unseen categorical levels: a clear error naming the feature and the levels, at every entry point
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["predict", "predict_proba", "worst_case", "stability"])
def test_unseen_level_names_the_feature_and_the_levels(fitted, entry):
    clf, X, y = fitted
    new = X.copy()
    new["city"] = new["city"].astype(object)
    new.loc[3, "city"] = "oslo"
    with pytest.raises(dk.DataError, match=r"categorical column 'city' has level\(s\) \['oslo'\] not seen "
                                           r"at fit.*known: \['paris', 'rome'\]"):
        ENTRY_POINTS[entry](clf, new, y)


# ---------------------------------------------------------------------------------------------------
# item 20.1: predict_proba of a margin loss
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["hinge", "smooth_hinge"])
def test_predict_proba_of_a_margin_loss_says_why(loss):
    X, y = small()
    clf = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    for method in ("predict_proba", "predict_log_proba"):
        with pytest.raises(AttributeError, match=rf"{method}.*'{loss}' is a margin loss.*no probabilities"
                                                 r".*decision_function.*loss='logistic'"):
            getattr(clf, method)(X)
    assert hasattr(dk.DROClassifier(), "predict_proba")  # logistic: available (before and after fit)


# ---------------------------------------------------------------------------------------------------
# item 20.1 / 20.6: the estimators' own parameters
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["l1_penalty", "l2_penalty"])
def test_penalties_must_be_real_numbers(name):
    X, y = small()
    with pytest.raises(dk.ParameterError, match=f"{name} must be a real number"):
        dk.DROClassifier(**{name: "0.1"}).fit(X, y)


def test_nested_names_through_default_components_of_the_estimator():
    for est in (dk.DROClassifier(), dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1))):
        params = est.get_params(deep=True)
        assert params["ambiguity__radius"] == 0.1
        assert params["ambiguity__metric__label__kappa"] == np.inf
        copy = clone(est).set_params(ambiguity__metric__label__kappa=1.5, ambiguity__radius=0.2)
        assert copy.ambiguity.metric.label.kappa == 1.5 and copy.ambiguity.radius == 0.2
        assert est.get_params(deep=True)["ambiguity__metric__label__kappa"] == np.inf  # original untouched
        again = clone(copy)
        assert again.ambiguity.metric.label.kappa == 1.5 and again.ambiguity is not copy.ambiguity
    with pytest.raises(dk.ParameterError, match="Invalid parameter 'kapa' for LabelCost"):
        dk.DROClassifier().set_params(ambiguity__metric__label__kapa=1.0)


@pytest.mark.parametrize("ambiguity", [None, dk.Wasserstein(radius=0.1)], ids=["default", "default-metric"])
def test_gridsearchcv_over_kappa_and_radius_on_the_default_metric(ambiguity):
    X, y = small()
    grid = {"ambiguity__metric__label__kappa": [1.0, np.inf], "ambiguity__radius": [0.02, 0.1]}
    search = GridSearchCV(dk.DROClassifier(ambiguity=ambiguity), grid, cv=2, error_score="raise").fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    best = search.best_estimator_
    assert best.ambiguity.metric.label.kappa == search.best_params_["ambiguity__metric__label__kappa"]
    assert best.ambiguity.radius == search.best_params_["ambiguity__radius"]
    kappas = [est.ambiguity_.metric.label.kappa for est in [clone(dk.DROClassifier(ambiguity=ambiguity))
                                                            .set_params(**p).fit(X, y)
                                                            for p in search.cv_results_["params"]]]
    assert sorted(kappas) == [1.0, 1.0, np.inf, np.inf]


def test_no_private_sklearn_indexing_helper():
    root = pathlib.Path(dk.__file__).parent
    users = [str(p.relative_to(root)) for p in root.rglob("*.py") if "_safe_indexing" in p.read_text()]
    assert users == []


def test_sweep_over_default_components_and_row_selection_of_lists():
    X, y = small()
    result = dk.cross_validate_grid(dk.DROClassifier(), X, y, {"kappa": [1.0], "radius": [0.05]}, cv=2,
                                    progress=False)
    assert result.best_estimator_.ambiguity.metric.label.kappa == 1.0
    numbers = X[["age", "income"]]
    listed = dk.cross_validate_grid(dk.DROClassifier(), numbers.to_numpy().tolist(), list(y),
                                    {"radius": [0.05]}, cv=2, progress=False)
    framed = dk.cross_validate_grid(dk.DROClassifier(), numbers, y, {"radius": [0.05]}, cv=listed.splits,
                                    progress=False)
    assert listed.best_score_ == pytest.approx(framed.best_score_, rel=1e-9)
