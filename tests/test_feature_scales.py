"""Numerical features measured in their spread (issue 20, item 2): ``NormCost(scale="std" | "mad" | "range")`` is
the raw-unit cost with weights ``gamma_j / s_j``, ``s_j`` measured on the training rows, kept in the fitted model
and used by ``dk.worst_case`` and ``dk.stability`` of that model; raw units that differ by orders of magnitude
warn; the Pipeline recipe works."""

import warnings

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.metrics.scales import MAD_TO_STD, feature_spreads
from drokit.schema import FeatureSchema


def _data(n, income_sd, seed, constant=False):
    r = np.random.default_rng(seed)
    X = pd.DataFrame({"income": r.normal(50_000, income_sd, n), "age": r.normal(40, 12, n),
                      "tenure": r.exponential(3.0, n) + (r.random(n) < 0.05) * 40,        # a few outliers
                      "city": pd.Categorical(r.choice(list("abc"), n))})
    if constant:
        X["flag"] = 1.0
    y = ((X.income - 50_000) / 15_000 + (X.age - 40) / 12 - 0.2 * X.tenure + r.normal(0, 1, n) > 0).astype(int)
    return X, y


NUMERICAL = ["income", "age", "tenure"]


def _spreads(X, kind):
    A = X[NUMERICAL].to_numpy()
    if kind == "std":
        return A.std(axis=0, ddof=1)
    if kind == "mad":
        return MAD_TO_STD * np.median(np.abs(A - np.median(A, axis=0)), axis=0)
    return A.max(axis=0) - A.min(axis=0)


def _fit(num_cost, X, y, **kw):
    ball = dk.Wasserstein(dk.GroundMetric(numerical=num_cost), radius=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return dk.DROClassifier(ambiguity=ball, **kw).fit(X, y)


@pytest.fixture(scope="module")
def train():
    return _data(300, 15_000, 0)


@pytest.fixture(scope="module")
def test_rows():
    return _data(200, 40_000, 1)          # another spread of income: the model's spreads must be used, not these


@pytest.mark.parametrize("kind", ["std", "mad", "range"])
@pytest.mark.parametrize("p", [1, 2])
def test_a_scaled_cost_is_the_raw_cost_with_weights_over_the_training_spreads(train, kind, p):
    X, y = train
    weights = {"income": 2.0, "age": 1.0, "tenure": np.inf}            # explicit weights and an immutable feature
    scaled = _fit(dk.NormCost(p=p, weights=weights, scale=kind), X, y)
    s = _spreads(X, kind)
    manual = _fit(dk.NormCost(p=p, weights={c: weights[c] / s[j] for j, c in enumerate(NUMERICAL)}), X, y)
    assert scaled.result_.status == manual.result_.status == "optimal"
    assert scaled.result_.objective == pytest.approx(manual.result_.objective, rel=1e-7)
    assert np.allclose(scaled.coef_, manual.coef_, atol=1e-5)
    fitted = scaled.ambiguity_.metric.numerical
    assert fitted.scale is None and fitted.fitted_scale["kind"] == kind
    assert np.allclose(list(fitted.fitted_scale["spreads"].values()), s)
    assert np.isinf(fitted.weights[2])                                   # immutable stays immutable
    assert scaled.get_params()["ambiguity"].metric.numerical.scale == kind   # the declaration is untouched


def test_the_fitted_spreads_are_used_on_other_data(train, test_rows):
    X, y = train
    Xt, yt = test_rows
    scaled = _fit(dk.NormCost(scale="std"), X, y)
    s = _spreads(X, "std")
    manual_ball = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights=1.0 / s)), radius=0.1)
    on_test = dk.worst_case(scaled, Xt, yt)
    assert on_test.value == pytest.approx(dk.worst_case(scaled, Xt, yt, ambiguity=manual_ball).value, rel=1e-8)
    # an explicit scaled ball given with the model measures in the model's spreads too
    explicit = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(scale="std")), radius=0.1)
    assert dk.worst_case(scaled, Xt, yt, ambiguity=explicit).value == pytest.approx(on_test.value, rel=1e-8)
    # ... and not in the test rows' (income twice as spread there): a different ball, a different value
    s_test = _spreads(Xt, "std")
    test_ball = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights=1.0 / s_test)), radius=0.1)
    assert abs(dk.worst_case(scaled, Xt, yt, ambiguity=test_ball).value - on_test.value) > 1e-4


def test_stability_of_a_scaled_model_uses_its_spreads(train, test_rows):
    X, y = train
    Xt, yt = test_rows
    scaled = _fit(dk.NormCost(p=2, scale="std"), X, y)
    s = _spreads(X, "std")
    by_scale = dk.OTMoment(metric=dk.GroundMetric(numerical=dk.NormCost(p=2, scale="std")))
    by_hand = dk.OTMoment(metric=dk.GroundMetric(numerical=dk.NormCost(p=2, weights=1.0 / s)))
    a = dk.stability(scaled, Xt, yt, risk=0.75, ambiguity=by_scale)
    b = dk.stability(scaled, Xt, yt, risk=0.75, ambiguity=by_hand)
    assert a.value == pytest.approx(b.value, rel=1e-8)


def test_weighted_std_and_constant_columns():
    A = np.array([[1.0, 5.0], [2.0, 5.0], [4.0, 5.0]])
    p = np.array([0.5, 0.25, 0.25])
    mean = p @ A[:, 0]
    assert feature_spreads(A, "std", p)[0] == pytest.approx(np.sqrt(p @ (A[:, 0] - mean) ** 2))
    assert feature_spreads(A, "std")[1] == 1.0 and feature_spreads(A, "range")[1] == 1.0   # constant: raw units
    X, y = _data(200, 15_000, 3, constant=True)
    fitted = _fit(dk.NormCost(scale="std"), X, y).ambiguity_.metric.numerical
    assert fitted.fitted_scale["spreads"]["flag"] == 1.0


def test_sample_weights_weigh_the_spreads(train):
    X, y = train
    w = np.where(np.arange(len(y)) < 100, 3.0, 1.0)
    fitted = _fit(dk.NormCost(scale="std"), X, y).ambiguity_.metric.numerical
    weighted = dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(scale="std")),
                                                         radius=0.1)).fit(X, y, sample_weight=w)
    p = w / w.sum()
    A = X[NUMERICAL].to_numpy()
    expected = np.sqrt(p @ (A - p @ A) ** 2)
    got = list(weighted.ambiguity_.metric.numerical.fitted_scale["spreads"].values())
    assert np.allclose(got, expected) and not np.allclose(got, list(fitted.fitted_scale["spreads"].values()))


@pytest.mark.parametrize("bad", ["zscore", 1, True])
def test_bad_scale_is_refused_by_name(train, bad):
    X, y = train
    with pytest.raises(dk.ParameterError, match="scale"):
        _fit(dk.NormCost(scale=bad), X, y)


def test_an_unfitted_scaled_cost_says_how_to_fit_it(train):
    X, _ = train
    metric = dk.GroundMetric(numerical=dk.NormCost(scale="std"))
    with pytest.raises(dk.ParameterError, match="fit_scales"):
        metric.resolve(FeatureSchema.infer(X))
    fitted = metric.fit_scales(X)
    assert np.allclose(fitted.numerical.weights, 1.0 / _spreads(X, "std"))
    # wasserstein_distance measures a scaled cost on P's rows
    Xq = X.copy()
    Xq["age"] = Xq["age"] + 1.0
    assert dk.wasserstein_distance((X, None), (Xq, None), metric) == pytest.approx(1.0 / X["age"].std(), rel=1e-6)


def test_raw_units_that_differ_by_orders_of_magnitude_warn(train):
    X, y = train
    with pytest.warns(UserWarning, match="raw units.*'income'.*NormCost\\(scale='std'\\)"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _fit(dk.NormCost(scale="std"), X, y)                                        # scaled
        dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights=1.0)),
                                                  radius=0.1)).fit(X, y)            # explicit weights: deliberate
        Xz = X.copy()
        Xz[NUMERICAL] = (Xz[NUMERICAL] - Xz[NUMERICAL].mean()) / Xz[NUMERICAL].std()
        dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1)).fit(Xz, y)          # comparable spreads


def test_pipeline_recipe(train, test_rows):
    """Standardizing in a Pipeline (statistics of the training folds only) gives the same model as scale='std'."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = train
    Xt, _ = test_rows
    scaler = ColumnTransformer([("num", StandardScaler(), NUMERICAL)], remainder="passthrough",
                               verbose_feature_names_out=False).set_output(transform="pandas")
    pipe = make_pipeline(scaler, dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1))).fit(X, y)
    # StandardScaler divides by the population std (ddof 0): the same ball as scale="std" up to sqrt(N/(N-1))
    s = X[NUMERICAL].std(ddof=0).to_numpy()
    by_hand = _fit(dk.NormCost(weights=1.0 / s), X, y)
    assert pipe[-1].result_.objective == pytest.approx(by_hand.result_.objective, rel=1e-7)
    assert np.allclose(pipe.predict_proba(Xt), by_hand.predict_proba(Xt), atol=1e-5)
