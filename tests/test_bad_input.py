"""Bad input: a clear drokit error that names the offending argument, and nothing half-fitted.

Every ``pytest.raises`` matches on the argument's name (or the column's), so a test fails if a
message stops saying *what* is wrong.  After a failed ``fit`` a fresh estimator has no fitted
attribute (nothing ending in ``_``), and a previously fitted one keeps its complete previous state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import drokit as dk

N = 10


def data(seed=0):
    """Columns x0, x1 (numerical), x2 (3 levels), x3 (2 levels); labels +-1."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=(N, 2)), np.resize([0, 1, 2], N), np.resize([0, 1], N)])
    y = np.tile([1.0, -1.0], N // 2)
    return X.astype(float), y


def frame(seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.normal(size=N), "income": rng.normal(size=N),
                       "color": pd.Categorical(np.resize(["red", "green", "blue"], N)),
                       "city": pd.Series(np.resize(["paris", "rome"], N), dtype=object)})
    return df, np.resize(["no", "yes"], N)


CAT = [2, 3]


def fitted_attributes(est):
    return sorted(k for k in vars(est) if k.endswith("_") and not k.startswith("_"))


def assert_fit_fails(est, X, y, error, match):
    """``fit`` raises ``error`` with ``match`` in its message and leaves ``est`` unfitted."""
    with pytest.raises(error, match=match):
        est.fit(X, y)
    assert fitted_attributes(est) == [], fitted_attributes(est)


def clf(**kw):
    kw.setdefault("categorical_features", CAT)
    return dk.DROClassifier(**kw)


def reg(**kw):
    kw.setdefault("categorical_features", CAT)
    return dk.DRORegressor(**kw)


def amb(radius=0.1, **metric):
    return dk.Wasserstein(dk.GroundMetric(**metric), radius=radius)


# ---------------------------------------------------------------------------------------------------
# X: NaN / inf / missing categories
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("make", [clf, reg])
def test_nan_or_inf_in_numerical_column(make, bad):
    X, y = data()
    X[3, 1] = bad
    assert_fit_fails(make(), X, y, dk.DataError, r"X column 'x1' has 1 NaN/inf.*row 3")


def test_nan_in_numpy_categorical_column():
    X, y = data()
    X[0, 2] = np.nan
    assert_fit_fails(clf(), X, y, dk.DataError, r"categorical column 'x2' has 1 missing")


@pytest.mark.parametrize("column,missing", [("color", np.nan), ("city", None), ("city", np.nan)])
def test_missing_value_in_dataframe_categorical_column(column, missing):
    df, y = frame()
    df.loc[4, column] = missing
    assert_fit_fails(dk.DROClassifier(), df, y, dk.DataError, f"categorical column '{column}' has 1 missing")


def test_missing_value_in_string_dtype_column():
    df, y = frame()
    df["city"] = df["city"].astype("string")
    df.loc[0, "city"] = pd.NA
    assert_fit_fails(dk.DROClassifier(), df, y, dk.DataError, "categorical column 'city' has 1 missing")


def test_nan_in_dataframe_numerical_column():
    df, y = frame()
    df.loc[7, "income"] = np.nan
    assert_fit_fails(dk.DROClassifier(), df, y, dk.DataError, "X column 'income'.*row 7")


def test_non_numeric_value_in_numerical_column():
    X, y = data()
    X = X.astype(object)
    X[0, 0] = "abc"
    assert_fit_fails(clf(), X, y, dk.DataError, "numerical column 'x0'.*categorical_features")


def test_missing_value_at_predict_time():
    df, y = frame()
    est = dk.DROClassifier().fit(df, y)
    df.loc[0, "city"] = None
    with pytest.raises(dk.DataError, match="categorical column 'city' has 1 missing"):
        est.predict(df)
    df, _ = frame()
    df.loc[0, "age"] = np.inf
    with pytest.raises(dk.DataError, match="X column 'age'"):
        est.predict(df)


# ---------------------------------------------------------------------------------------------------
# y
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [clf, reg])
def test_nan_in_y(make):
    X, y = data()
    y[5] = np.nan
    assert_fit_fails(make(), X, y, dk.DataError, r"y has 1 NaN/inf")


def test_missing_label_in_object_y():
    X, _ = data()
    y = np.resize(np.array(["a", "b"], dtype=object), N)
    y[2] = None
    assert_fit_fails(clf(), X, y, dk.DataError, "y has 1 missing")


def test_inf_in_regression_target():
    X, y = data()
    y[0] = np.inf
    assert_fit_fails(reg(), X, y, dk.DataError, r"y has 1 NaN/inf.*row 0")


def test_non_numeric_regression_target():
    X, _ = data()
    assert_fit_fails(reg(), X, np.resize(["a", "b"], N), dk.DataError, "y must be numeric")


def test_one_class_only():
    X, _ = data()
    assert_fit_fails(clf(), X, np.ones(N), dk.DataError, "y has only one class")


@pytest.mark.parametrize("y", [np.resize([0, 1, 2], N), np.resize(["a", "b", "c"], N)])
def test_more_than_two_classes_with_a_margin_loss(y):
    """Three classes fit the multinomial model with the logistic loss (tests/test_multinomial.py); a margin loss has
    none, and the error names the alternatives."""
    X, _ = data()
    assert_fit_fails(clf(loss="hinge"), X, y, dk.DataError,
                     "Only binary classification is supported with loss 'hinge'.*y has 3 classes.*loss='logistic'"
                     ".*OneVsRestClassifier")
    assert clf().fit(X, y).result_.status == "optimal"


def test_the_error_s_one_vs_rest_recipe_fits_and_certifies_every_class():
    """What the message proposes works: one certified binary DRO model per class, each equal to the binary fit
    of "class k against the rest", and probabilities over the three classes."""
    from sklearn.multiclass import OneVsRestClassifier
    X, _ = data()
    y = np.resize(["a", "b", "c"], N)
    ovr = OneVsRestClassifier(clf()).fit(X, y)
    assert list(ovr.classes_) == ["a", "b", "c"]
    for k, model in zip(ovr.classes_, ovr.estimators_):
        assert model.result_.status == "optimal"
        alone = clf().fit(X, (y == k).astype(int))
        assert model.result_.objective == pytest.approx(alone.result_.objective, rel=1e-9)
    proba = ovr.predict_proba(X)
    assert proba.shape == (N, 3) and np.allclose(proba.sum(axis=1), 1.0)


def test_continuous_target_for_classifier():
    X, _ = data()
    y = np.linspace(0.1, 1.7, N)
    assert_fit_fails(clf(), X, y, dk.DataError, "y is continuous")


def test_labels_of_mixed_types():
    X, _ = data()
    y = np.array([1, "a"] * (N // 2), dtype=object)
    assert_fit_fails(clf(), X, y, dk.DataError, "y mixes label types")


@pytest.mark.parametrize("make", [clf, reg])
@pytest.mark.parametrize("n_y", [N - 1, N + 3])
def test_x_and_y_of_different_lengths(make, n_y):
    X, y = data()
    y = np.resize(y, n_y)
    assert_fit_fails(make(), X, y, dk.DataError, f"X and y have different lengths: X has {N} rows, "
                                                 f"y has {n_y}")


@pytest.mark.parametrize("make", [clf, reg])
def test_y_none_and_2d_y(make):
    X, y = data()
    assert_fit_fails(make(), X, None, dk.DataError, "target y is None")
    assert_fit_fails(make(), X, np.column_stack([y, y]), dk.DataError, "y must be 1-dimensional")


# ---------------------------------------------------------------------------------------------------
# unseen categories at predict time
# ---------------------------------------------------------------------------------------------------
def test_unseen_category_raises_by_default():
    df, y = frame()
    est = dk.DROClassifier().fit(df, y)
    new = df.copy()
    new["city"] = new["city"].astype(object)
    new.loc[2, "city"] = "oslo"
    with pytest.raises(dk.DataError, match=r"categorical column 'city' has level\(s\) \['oslo'\] not seen "
                                           r"at fit.*handle_unknown='ignore'"):
        est.predict(new)


@pytest.mark.parametrize("how", ["init", "set_params"])
def test_unseen_category_ignored_is_the_reference_level(how):
    """handle_unknown='ignore' encodes an unseen level as the reference (first) level."""
    df, y = frame()
    est = dk.DROClassifier(handle_unknown="ignore" if how == "init" else "error").fit(df, y)
    if how == "set_params":
        est.set_params(handle_unknown="ignore")  # a predict-time setting: no refit needed
    reference = est.schema_.categories[est.schema_.categorical_names.index("city")][0]
    new = df.copy()
    new["city"] = new["city"].astype(object)
    new.loc[[1, 6], "city"] = "oslo"
    as_reference = df.copy()
    as_reference.loc[[1, 6], "city"] = reference
    np.testing.assert_array_equal(est.decision_function(new), est.decision_function(as_reference))
    np.testing.assert_array_equal(est.predict(new), est.predict(as_reference))
    # row 1 was not at the reference level, so the encoding really changed (the test is not vacuous)
    assert df.loc[1, "city"] != reference
    assert est.decision_function(new)[1] != pytest.approx(est.decision_function(df)[1], abs=1e-6)


def test_unseen_numpy_category_ignored_is_the_reference_level():
    X, y = data()
    est = reg(handle_unknown="ignore").fit(X, y)
    new = X.copy()
    new[0, 2] = 7.0   # level 7 of x2 was never seen; reference level is 0
    ref = X.copy()
    ref[0, 2] = 0.0
    np.testing.assert_array_equal(est.predict(new), est.predict(ref))
    with pytest.raises(dk.DataError, match=r"categorical column 'x2' has level\(s\) \['7.0'\] not seen"):
        reg().fit(X, y).predict(new)  # handle_unknown='error' is the default


def test_handle_unknown_checked_at_predict():
    X, y = data()
    est = clf().fit(X, y)
    est.set_params(handle_unknown="drop")
    with pytest.raises(dk.ParameterError, match="handle_unknown"):
        est.predict(X)


def test_level_outside_declared_categories_at_fit():
    X, y = data()
    assert_fit_fails(clf(categories=[[0.0, 1.0], [0.0, 1.0]]), X, y, dk.DataError,
                     r"categorical column 'x2' has level\(s\) \['2.0'\].*not in its categories")


def test_duplicate_dataframe_column_names():
    df, y = frame()
    dup = df.set_axis(["age", "age", "color", "city"], axis=1)
    assert_fit_fails(dk.DROClassifier(), dup, y, dk.DataError, r"duplicate column names \['age'\]")
    clashing = df.set_axis([1, "1", "color", "city"], axis=1)  # equal once turned into strings
    assert_fit_fails(dk.DROClassifier(), clashing, y, dk.DataError, r"duplicate column names \['1'\]")
    est = dk.DROClassifier().fit(df, y)
    with pytest.raises(dk.DataError, match="duplicate column names"):
        est.predict(dup)


@pytest.mark.parametrize("make", [clf, reg])
def test_empty_dataframe(make):
    df, y = frame()
    assert_fit_fails(make(categorical_features=None), df.iloc[:0], y[:0], ValueError, "at least 1 sample")
    assert_fit_fails(make(categorical_features=None), df[[]], y, ValueError, "1 feature")


def test_predict_with_wrong_columns():
    df, y = frame()
    est = dk.DROClassifier().fit(df, y)
    with pytest.raises(dk.DataError, match=r"X does not have the columns DROClassifier was fitted on: missing "
                                           r"column\(s\) \['city'\] "):
        est.predict(df[["age", "income", "color"]])
    with pytest.raises(dk.DataError, match=r"missing column\(s\) \['age'\]; unexpected column\(s\) \['AGE'\]"):
        est.predict(df.rename(columns={"age": "AGE"}))
    with pytest.raises(dk.DataError, match=r"X has the columns seen at fit by DROClassifier, but in another "
                                           r"order: \['income', 'age', 'color', 'city'\] instead of"):
        est.predict(df[["income", "age", "color", "city"]])
    with pytest.warns(UserWarning, match="X does not have valid feature names"), \
            pytest.raises(ValueError, match="X has 3 features.*expecting 4"):
        est.predict(df[["age", "income", "color"]].to_numpy())
    X, y = data()
    est = clf().fit(X, y)
    with pytest.raises(ValueError, match="X has 5 features.*expecting 4"):
        est.predict(np.column_stack([X, X[:, 0]]))


# ---------------------------------------------------------------------------------------------------
# model arguments
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [-0.1, np.nan, np.inf, "big", None])
def test_bad_radius(radius):
    X, y = data()
    assert_fit_fails(clf(ambiguity=dk.Wasserstein(radius=radius)), X, y, dk.ParameterError,
                     "Wasserstein radius")


@pytest.mark.parametrize("kappa", [0, -1.0, -np.inf, np.nan, "x"])
@pytest.mark.parametrize("make", [clf, reg])
def test_bad_kappa(make, kappa):
    X, y = data()
    assert_fit_fails(make(ambiguity=amb(label=dk.LabelCost(kappa=kappa))), X, y, dk.ParameterError,
                     "LabelCost kappa")


FIRST_COLUMN = {"numerical": "x0", "categorical": "x2"}


@pytest.mark.parametrize("kind", ["numerical", "categorical"])
@pytest.mark.parametrize("weights,match", [
    ([-1.0, 1.0], "weight for 'x.' must be a number >= 0"),
    ([np.nan, 1.0], "weight for 'x.' must be a number >= 0"),
    (-2.0, "weight for 'all' must be a number >= 0"),
    ([1.0, 1.0, 1.0], r"weights have shape \(3,\), but there are 2"),
    ([1.0], r"weights have shape \(1,\), but there are 2"),
    ([[1.0, 1.0]], r"weights have shape \(1, 2\)"),
    ("heavy", "weights must be None, a number"),
    ({"nope": 1.0}, r"weights name unknown column\(s\) \['nope'\]"),
    ({"FIRST": -1.0}, "weight for 'x.' must be a number >= 0"),
    ({"FIRST": np.nan}, "weight for 'x.' must be a number >= 0"),
], ids=["negative", "nan", "negative-scalar", "too-long", "too-short", "2d", "string", "unknown-name",
        "negative-named", "nan-named"])
def test_bad_weights(kind, weights, match):
    X, y = data()
    if isinstance(weights, dict) and "FIRST" in weights:  # a valid column name of this kind
        weights = {FIRST_COLUMN[kind]: weights["FIRST"]}
    cost = dk.NormCost(weights=weights) if kind == "numerical" else dk.MismatchCost(weights=weights)
    assert_fit_fails(clf(ambiguity=amb(**{kind: cost})), X, y, dk.ParameterError, f"{kind} {match}")


def test_weight_names_of_the_other_kind_are_unknown():
    """A categorical column named in the numerical weights is an unknown numerical column."""
    df, y = frame()
    assert_fit_fails(dk.DROClassifier(ambiguity=amb(numerical=dk.NormCost(weights={"color": 2.0}))),
                     df, y, dk.ParameterError, r"numerical weights name unknown column\(s\) \['color'\]")


@pytest.mark.parametrize("cost,match", [(dk.NormCost(p=0.5), "NormCost p"),
                                        (dk.NormCost(p="l2"), "NormCost p"),
                                        (dk.MismatchCost(p=0), "MismatchCost p"),
                                        (dk.MismatchCost(p=np.inf), "MismatchCost p")])
def test_bad_exponent(cost, match):
    X, y = data()
    key = "numerical" if isinstance(cost, dk.NormCost) else "categorical"
    assert_fit_fails(clf(ambiguity=amb(**{key: cost})), X, y, dk.ParameterError, match)


def test_metric_parts_of_the_wrong_type():
    X, y = data()
    assert_fit_fails(clf(ambiguity=amb(numerical=dk.MismatchCost())), X, y, dk.ParameterError,
                     "GroundMetric numerical must be a drokit NormCost")
    assert_fit_fails(clf(ambiguity=dk.Wasserstein(metric="l1")), X, y, dk.ParameterError,
                     "Wasserstein metric")
    assert_fit_fails(clf(ambiguity=0.1), X, y, dk.ParameterError, "ambiguity must be")


@pytest.mark.parametrize("name,value,match", [
    ("loss", "squared", "unknown loss 'squared'"),
    ("method", "lattice", "method must be one of"),
    ("solver", "gurobi", "solver must be one of"),
    ("solver", None, "solver must be one of"),
    ("handle_unknown", "drop", "handle_unknown must be one of"),
    ("on_inaccurate", "ignore", "on_inaccurate must be one of"),
    ("max_configurations", 0, "max_configurations must be a positive integer"),
    ("max_configurations", 2.5, "max_configurations must be a positive integer"),
    ("fit_intercept", "yes", "fit_intercept must be True or False"),
    ("categorical_features", [9], "categorical_features index 9 is out of range"),
    ("categorical_features", ["age"], "categorical_features names unknown column 'age'"),
    ("categorical_features", [True, 2], "categorical_features mixes booleans"),
    ("categories", [[0, 1, 2]], "categories has 1 entries but there are 2 categorical features"),
    ("categories", [[0, 0, 1], [0, 1]], "categories of feature 'x2' must be a non-empty list of distinct"),
    ("method_options", {"gap_tol": 1e-6}, "method_options are not used by method 'monolithic'"),
])
@pytest.mark.parametrize("make", [clf, reg])
def test_bad_named_argument(make, name, value, match):
    X, y = data()
    assert_fit_fails(make(**{name: value}), X, y, dk.ParameterError, match)


def test_unknown_names_in_the_problem_api():
    X, y = data()
    with pytest.raises(dk.ParameterError, match="unknown loss 'squared'"):
        dk.Problem("squared").compile(X, y, categorical_features=CAT)
    problem = dk.Problem("logistic", dk.Wasserstein(radius=0.1))
    with pytest.raises(dk.ParameterError, match="unknown method 'lattice'"):
        problem.compile(X, y, method="lattice", categorical_features=CAT)
    compiled = problem.compile(X, y, categorical_features=CAT)
    with pytest.raises(dk.ParameterError, match="unknown solver 'gurobi'"):
        compiled.solve(solver="gurobi")
    with pytest.raises(dk.ParameterError, match="on_inaccurate must be one of"):
        compiled.solve(on_inaccurate="ignore")


def test_unavailable_solver_leaves_nothing_fitted():
    if "mosek" in dk.solvers.available_solvers():
        pytest.skip("MOSEK is installed here")
    X, y = data()
    assert_fit_fails(clf(solver="mosek"), X, y, dk.SolverNotAvailableError, "mosek is not installed")


def test_unknown_solver_option():
    X, y = data()
    assert_fit_fails(clf(solver_options={"tolerance": 1e-9}), X, y, dk.ParameterError,
                     "unknown option 'tolerance' for solver 'clarabel'")


@pytest.mark.parametrize("make,loss,match", [
    (reg, "hinge", "loss 'hinge' is a classification loss but task is 'regression'"),
    (reg, "logistic", "loss 'logistic' is a classification loss but task is 'regression'"),
    (clf, "huber", "loss 'huber' is a regression loss but task is 'classification'"),
    (clf, dk.losses.Pinball(), "loss 'pinball' is a regression loss"),
])
def test_loss_task_mismatch(make, loss, match):
    X, y = data()
    assert_fit_fails(make(loss=loss), X, y, dk.ParameterError, match)


def test_problem_loss_task_mismatch():
    X, y = data()
    with pytest.raises(dk.ParameterError, match="loss 'hinge' is a classification loss but task is "
                                                "'regression'"):
        dk.Problem("hinge", task="regression").compile(X, y, categorical_features=CAT)
    with pytest.raises(dk.ParameterError, match="task must be 'classification' or 'regression'"):
        dk.Problem("hinge", task="ranking").compile(X, y, categorical_features=CAT)


def test_bad_loss_parameter():
    X, y = data()
    assert_fit_fails(reg(loss=dk.losses.Huber(delta=-1)), X, y, dk.ParameterError, "Huber delta")
    assert_fit_fails(reg(loss=dk.losses.Pinball(tau=2)), X, y, dk.ParameterError, "Pinball tau")


def test_explicit_methods_that_do_not_apply():
    X, y = data()
    assert_fit_fails(clf(method="erm"), X, y, dk.ParameterError, "method='erm'.*radius=0.1")
    assert_fit_fails(clf(method="closed_form"), X, y, dk.ParameterError,
                     "method='closed_form'.*2 categorical features can change")


# ---------------------------------------------------------------------------------------------------
# size limit
# ---------------------------------------------------------------------------------------------------
def test_monolithic_too_large_problem():
    X, y = data()
    # N * |Z| = 10 * 6 = 60 configuration rows
    problem = dk.Problem("logistic", dk.Wasserstein(radius=0.1))
    with pytest.raises(dk.ProblemTooLargeError,
                       match=r"(?s)60 configuration rows.*max_configurations=59.*cutting_plane"):
        problem.compile(X, y, method="monolithic", categorical_features=CAT, max_configurations=59)
    # the limit is inclusive, and label flips double the rows
    problem.compile(X, y, method="monolithic", categorical_features=CAT, max_configurations=60)
    flips = dk.Problem("logistic", amb(label=dk.LabelCost(kappa=1.0)))
    with pytest.raises(dk.ProblemTooLargeError, match="120 configuration rows"):
        flips.compile(X, y, method="monolithic", categorical_features=CAT, max_configurations=60)


@pytest.mark.parametrize("kappa,factor", [(np.inf, ""), (1.0, r" x 2 labels")])
def test_enumeration_size_message_states_the_count_it_compares(kappa, factor):
    """The limit counts configuration rows = samples x categorical configurations (x 2 labels when they
    may flip); the message's product equals the number it compares with max_configurations."""
    X, y = data()
    size = N * 6 * (2 if np.isfinite(kappa) else 1)
    problem = dk.Problem("logistic", amb(label=dk.LabelCost(kappa=kappa)))
    with pytest.raises(dk.ProblemTooLargeError,
                       match=rf"{size} configuration rows \({N} samples x 6 categorical configurations"
                             rf"{factor}\), above max_configurations={size - 1}"):
        problem.compile(X, y, method="monolithic", categorical_features=CAT, max_configurations=size - 1)
    # regression: a finite kappa moves the response, it adds no enumerated rows
    reg_problem = dk.Problem("huber", amb(label=dk.LabelCost(kappa=1.0)))
    with pytest.raises(dk.ProblemTooLargeError, match=rf"{N * 6} configuration rows \({N} samples x 6 "
                                                      rf"categorical configurations\), above"):
        reg_problem.compile(X, y, method="monolithic", categorical_features=CAT, max_configurations=59)


def test_astronomic_configuration_count_is_exact_and_refused_cleanly():
    """10^330 configurations per sample overflow a float: the count is an exact integer, monolithic is
    refused with ProblemTooLargeError (not an OverflowError) and auto falls back to the cutting plane."""
    from drokit.oracles import count_configuration_rows
    m = 330
    Z = np.column_stack([np.resize(np.arange(10), N)] * m)
    y = np.tile([1.0, -1.0], N // 2)
    kw = dict(categorical_features=list(range(m)), categories=[list(range(10))] * m)
    problem = dk.Problem("hinge", amb(label=dk.LabelCost(kappa=1.0)))
    assert count_configuration_rows(problem.bind(Z, y, **kw)) == N * 10 ** m * 2
    with pytest.raises(dk.ProblemTooLargeError, match=rf"{N * 10 ** m * 2:,} configuration rows"):
        problem.compile(Z, y, method="monolithic", **kw)
    assert problem.compile(Z, y, method="auto", **kw).method == "cutting_plane"


def test_estimator_too_large_problem():
    X, y = data()
    assert_fit_fails(clf(method="monolithic", max_configurations=30), X, y, dk.ProblemTooLargeError,
                     r"(?s)max_configurations=30.*(cutting_plane|mutable)")


def test_auto_falls_back_to_the_cutting_plane_above_the_limit():
    X, y = data()
    est = clf(method="auto", max_configurations=30).fit(X, y)
    assert est.result_.method == "cutting_plane"
    assert est.result_.status == "optimal"


def test_immutable_features_do_not_count_toward_the_limit():
    X, y = data()
    est = clf(method="monolithic", max_configurations=30,
              ambiguity=amb(categorical=dk.MismatchCost(weights=[np.inf, 1.0])))
    assert est.fit(X, y).result_.n_configuration_rows == 20


# ---------------------------------------------------------------------------------------------------
# nothing half-fitted
# ---------------------------------------------------------------------------------------------------
def test_failed_refit_keeps_the_previous_model():
    X, y = data()
    est = clf(ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    before = (est.result_, est.coef_.copy(), est.classes_.copy(), est.predict(X))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(dk.DataError):
        est.fit(bad, y)
    est.set_params(ambiguity=dk.Wasserstein(radius=-1.0))
    with pytest.raises(dk.ParameterError):
        est.fit(X, y)
    assert est.result_ is before[0]
    np.testing.assert_array_equal(est.coef_, before[1])
    np.testing.assert_array_equal(est.classes_, before[2])
    np.testing.assert_array_equal(est.predict(X), before[3])


def test_solver_failure_leaves_nothing_fitted():
    X, y = data()
    est = clf(solver_options={"max_iter": 1})
    with pytest.raises(dk.SolverError) as info:
        est.fit(X, y)
    assert info.value.status != "optimal" and info.value.solver == "clarabel"
    assert fitted_attributes(est) == []
