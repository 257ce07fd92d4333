"""Calibration of weights and radius from probabilities of certainty (sun2025 §3, spec §3.5, §6.2).

The example values are the spec's §3.5 table, to the printed number of decimals.  Every bad input
raises a ParameterError whose message names the argument (and the column, in ``calibrate``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import drokit as dk
from drokit.metrics import (calibrate, categorical_weight, laplace_scale, numerical_weight,
                            radius_from_theta, round_weights, sample_certainty,
                            sample_feature_certainty)
from drokit.schema import FeatureSchema

# spec §3.5: rho -> (gamma sigma for u = 0.4 sigma, delta |C|=2, delta |C|=3, delta |C|=5)
TABLE = {0.6: (2.2907, 0.4055, 1.0986, 1.7918),
         0.7: (3.0099, 0.8473, 1.5404, 2.2336),
         0.8: (4.0236, 1.3863, 2.0794, 2.7726),
         0.9: (5.7565, 2.1972, 2.8904, 3.5835)}
THETAS = [0.5, 0.65, 0.75, 0.8, 0.85, 0.9, 0.93, 0.96, 0.99]
EPSILONS = [0.69315, 0.43078, 0.28768, 0.22314, 0.16252, 0.10536, 0.07257, 0.04082, 0.01005]


# ------------------------------------------------------------------ the example table
@pytest.mark.parametrize("rho", sorted(TABLE))
@pytest.mark.parametrize("sigma", [1.0, 3.7])
def test_numerical_weight_table(rho, sigma):
    gamma = numerical_weight(rho, 0.4 * sigma)
    assert round(gamma * sigma, 4) == TABLE[rho][0]
    assert laplace_scale(rho, 0.4 * sigma) == pytest.approx(1 / gamma)


@pytest.mark.parametrize("rho", sorted(TABLE))
def test_categorical_weight_table(rho):
    for levels, expected in zip((2, 3, 5), TABLE[rho][1:]):
        assert round(categorical_weight(rho, levels), 4) == expected
    assert categorical_weight(0.8, 3) == pytest.approx(np.log(8), abs=1e-15)


def test_radius_table():
    assert np.round(radius_from_theta(THETAS), 5).tolist() == EPSILONS
    assert round(radius_from_theta(0.9), 5) == 0.10536
    assert isinstance(radius_from_theta(0.9), float)


def test_vectorized():
    rhos = np.array(sorted(TABLE))
    assert np.round(numerical_weight(rhos, 0.4), 4).tolist() == [v[0] for v in TABLE.values()]
    got = categorical_weight(rhos[:, None], np.array([2, 3, 5]))
    assert np.round(got, 4).tolist() == [list(v[1:]) for v in TABLE.values()]


def test_laplace_model_matches_rho():
    """P(|Laplace(0, b)| <= u) = rho with b = 1/gamma (spec §10.2 item 9), by Monte Carlo."""
    rng = np.random.default_rng(0)
    for rho in (0.6, 0.8, 0.95):
        b = laplace_scale(rho, 0.4)
        inside = np.mean(np.abs(rng.laplace(0.0, b, 200_000)) <= 0.4)
        assert abs(inside - rho) < 5 * np.sqrt(rho * (1 - rho) / 200_000)


# ------------------------------------------------------------------------------ limits
def test_limits():
    assert numerical_weight(1.0, 0.4) == np.inf
    assert laplace_scale(1.0, 0.4) == 0.0
    assert numerical_weight(1 - 1e-12, 0.4) > 60
    for levels in range(2, 8):
        assert categorical_weight(1.0, levels) == np.inf
        assert categorical_weight(1.0 / levels, levels) == 0.0
        assert categorical_weight(1 - 1e-12, levels) > 25
    assert radius_from_theta(1.0) == 0.0
    assert np.copysign(1.0, radius_from_theta(1.0)) == 1.0  # +0, not -0
    assert radius_from_theta(1e-300) == pytest.approx(300 * np.log(10))
    # monotone: more certainty, larger cost
    rhos = np.linspace(0.51, 0.999, 50)
    assert np.all(np.diff(categorical_weight(rhos, 2)) > 0)
    assert np.all(np.diff(numerical_weight(rhos, 1.0)) > 0)


# ---------------------------------------------------------------------------- rounding
def test_rounding_pitfall_raises_by_default():
    delta = {"sex": categorical_weight(0.6, 2), "color": categorical_weight(0.8, 3)}
    with pytest.raises(dk.ParameterError, match=r"'sex'.*free to change"):
        round_weights(delta, 0)
    assert round_weights(delta, 1) == {"sex": 0.4, "color": 2.1}


def test_rounding_warn_and_ignore():
    delta = {"sex": categorical_weight(0.6, 2), "color": categorical_weight(0.8, 3), "id": np.inf}
    with pytest.warns(UserWarning, match="'sex'") as record:
        out = round_weights(delta, 0, on_zero="warn")
    assert out == {"sex": 0.0, "color": 2.0, "id": np.inf}
    assert record[0].filename == __file__  # points at the caller, not into drokit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert round_weights(delta, 0, on_zero="ignore")["sex"] == 0.0
        assert round_weights({"free": 0.0, "x": 1.26}, 0) == {"free": 0.0, "x": 1.0}  # 0 stays 0
    assert round_weights(np.array([1.26, np.inf]), 1).tolist() == [1.3, np.inf]
    assert round_weights(2.5, 0) == 2.0  # ties to even, as numpy and Julia's round
    with pytest.raises(dk.ParameterError, match="index"):
        round_weights(np.array([2.0, 0.3]), 0)


# ---------------------------------------------------------------------------- bad input
BAD = [
    (lambda: numerical_weight(np.nan, 0.4), "rho", "nan"),
    (lambda: numerical_weight(0.0, 0.4), "rho", "0.0"),
    (lambda: numerical_weight(1.2, 0.4), "rho", "1.2"),
    (lambda: numerical_weight([0.5, -0.1], 0.4), "rho", "-0.1"),
    (lambda: numerical_weight("high", 0.4), "rho", "high"),
    (lambda: numerical_weight(0.5, 0.0), "half_width", "0.0"),
    (lambda: numerical_weight(0.5, -2.0), "half_width", "-2.0"),
    (lambda: numerical_weight(0.5, np.inf), "half_width", "inf"),
    (lambda: numerical_weight(0.5, np.nan), "half_width", "nan"),
    (lambda: numerical_weight([0.5, 0.6], [1.0, 2.0, 3.0]), "rho and half_width", "(2,)"),
    (lambda: categorical_weight(0.2, 3), "rho", "0.2"),
    (lambda: categorical_weight(1.01, 3), "rho", "1.01"),
    (lambda: categorical_weight(np.nan, 3), "rho", "nan"),
    (lambda: categorical_weight(0.7, 1), "n_levels", "1"),
    (lambda: categorical_weight(0.7, 2.5), "n_levels", "2.5"),
    (lambda: categorical_weight(0.7, np.nan), "n_levels", "nan"),
    (lambda: radius_from_theta(0.0), "theta", "0.0"),
    (lambda: radius_from_theta(1.5), "theta", "1.5"),
    (lambda: radius_from_theta(-0.1), "theta", "-0.1"),
    (lambda: radius_from_theta(np.nan), "theta", "nan"),
    (lambda: round_weights([1.0, -1.0], 0), "weights", "-1.0"),
    (lambda: round_weights([1.0, np.nan], 0), "weights", "nan"),
    (lambda: round_weights({"a": "x"}, 0), "'a'", "x"),
    (lambda: round_weights(1.0, -1), "decimals", "-1"),
    (lambda: round_weights(1.0, 0.5), "decimals", "0.5"),
    (lambda: round_weights(1.0, 0, on_zero="drop"), "on_zero", "drop"),
    (lambda: sample_certainty(0, np.nan), "mean", "nan"),
    (lambda: sample_certainty(0, 0.6, sd=0.0), "sd", "0.0"),
    (lambda: sample_certainty(0, 0.6, sd=-1), "sd", "-1"),
    (lambda: sample_certainty(0, 0.6, n_levels=[3, 1]), "n_levels", "1"),
    (lambda: sample_certainty(0, 0.6, n_levels=3, size=4), "size", "4"),
    (lambda: sample_certainty(0, 0.6, size=-1), "size", "-1"),
    (lambda: sample_certainty(0, 5.0, sd=0.01), "mean", "5.0"),  # rejection would never end
]


@pytest.mark.parametrize("call, argument, value", BAD)
def test_bad_input_names_argument_and_value(call, argument, value):
    with pytest.raises(dk.ParameterError, match=argument) as info:
        call()
    assert value.lower() in str(info.value).lower()


# --------------------------------------------------------------- calibrated metric
def frame(N=12, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.normal(40.0, 10.0, N),
        "income": rng.normal(3.0, 1.0, N),
        "color": pd.Categorical(np.resize(["red", "green", "blue"], N),
                                categories=["red", "green", "blue", "black"]),  # 4 levels, 1 unused
        "sex": np.resize(["f", "m"], N).astype(object),
    })


def test_calibrated_weights_by_hand():
    X = frame()
    rho_x = {"age": 0.8, "income": 0.6}
    rho_z = {"color": 0.7, "sex": 0.9}
    m = dk.GroundMetric.calibrated(X, rho_numerical=rho_x, rho_categorical=rho_z)
    s_age, s_inc = X["age"].std(ddof=1), X["income"].std(ddof=1)
    assert m.numerical.weights == pytest.approx({"age": -np.log(0.2) / (0.4 * s_age),
                                                 "income": -np.log(0.4) / (0.4 * s_inc)}, rel=1e-12)
    # the table, per unit of std: gamma sigma = 4.0236 at rho = 0.8
    assert round(m.numerical.weights["age"] * s_age, 4) == 4.0236
    assert m.categorical.weights == pytest.approx({"color": np.log(0.7 * 3 / 0.3),  # 4 categories
                                                   "sex": np.log(9.0)}, rel=1e-12)
    assert m.numerical.p == 1 and m.categorical.p == 1 and m.kappa == np.inf
    cal = m.calibration
    assert cal.rho_numerical == rho_x and cal.rho_categorical == rho_z
    assert cal.half_width == pytest.approx({"age": 0.4 * s_age, "income": 0.4 * s_inc})
    assert cal.n_levels == {"color": 4, "sex": 2}
    # resolves against the estimators' schema
    resolved = m.resolve(FeatureSchema.infer(X))
    assert np.all(np.isfinite(resolved.gamma)) and np.all(resolved.delta > 0)


def test_calibrated_scalar_rho_absolute_width_and_immutable():
    X = frame()
    m = dk.GroundMetric.calibrated(X, rho_numerical=0.9, rho_categorical={"color": 1.0, "sex": 0.6},
                                   half_width={"age": 2.0, "income": 0.5}, half_width_in_std=False)
    assert m.numerical.weights == pytest.approx({"age": -np.log(0.1) / 2.0, "income": -np.log(0.1) / 0.5})
    assert m.categorical.weights["color"] == np.inf
    m1 = dk.GroundMetric.calibrated(X, rho_numerical={"age": 1.0, "income": 0.7}, rho_categorical=0.8,
                                    half_width=0.25)
    assert m1.numerical.weights["age"] == np.inf
    assert m1.calibration.half_width["income"] == pytest.approx(0.25 * X["income"].std(ddof=1))


def test_calibrated_rounding_guard():
    X = frame()
    with pytest.raises(dk.ParameterError, match="'sex'"):
        dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical={"color": 0.8, "sex": 0.6},
                                   round=0)
    with pytest.warns(UserWarning, match="'sex'"):
        m = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical={"color": 0.8, "sex": 0.6},
                                       round=0, on_zero="warn")
    assert m.categorical.weights == {"color": 2.0, "sex": 0.0}  # log(0.8*3/0.2) = 2.48 -> 2
    exact = m.calibration.gamma
    assert m.numerical.weights == exact  # numerical weights are never rounded
    m1 = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical={"color": 0.8, "sex": 0.6},
                                    round=1)
    assert m1.categorical.weights == {"color": 2.5, "sex": 0.4}


@pytest.mark.parametrize("kwargs, match", [
    (dict(rho_numerical=1.5, rho_categorical=0.8), r"rho_numerical.*'age'.*1\.5"),
    (dict(rho_numerical={"age": 0.8, "income": 0.0}, rho_categorical=0.8), r"rho_numerical.*'income'"),
    (dict(rho_numerical=0.8, rho_categorical={"color": 0.2, "sex": 0.8}), r"rho_categorical.*'color'.*0\.2"),
    (dict(rho_numerical=0.8, rho_categorical={"sex": 0.8}), r"rho_categorical.*\['color'\]"),
    (dict(rho_numerical=0.8, rho_categorical={"color": 0.8, "sex": 0.8, "zip": 0.9}),
     r"rho_categorical.*unknown.*'zip'"),
    (dict(rho_categorical=0.8), r"rho_numerical is required"),
    (dict(rho_numerical=0.8), r"rho_categorical is required"),
    (dict(rho_numerical="high", rho_categorical=0.8), r"rho_numerical.*'high'"),
    (dict(rho_numerical=0.8, rho_categorical=0.8, half_width=0.0), r"half_width.*'age'"),
    (dict(rho_numerical=0.8, rho_categorical=0.8, half_width={"age": 1.0, "income": -1.0}),
     r"half_width.*'income'.*-1"),
    (dict(rho_numerical=0.8, rho_categorical=0.8, round=-1), r"decimals.*-1"),
    (dict(rho_numerical=0.8, rho_categorical=0.8, on_zero="maybe", round=0), r"on_zero.*maybe"),
])
def test_calibrated_bad_input(kwargs, match):
    with pytest.raises(dk.ParameterError, match=match):
        dk.GroundMetric.calibrated(frame(), **kwargs)


def test_calibrated_constant_column():
    X = frame().assign(income=1.0)
    with pytest.raises(dk.ParameterError, match="'income' is constant"):
        dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical=0.8)
    m = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical=0.8, half_width=1.0,
                                   half_width_in_std=False)
    assert m.numerical.weights["income"] == pytest.approx(-np.log(0.2))


@pytest.mark.filterwarnings("ignore:the training data are linearly separable")  # radius-0 fits on separable data
def test_calibrated_metric_fits_and_equals_hand_built_metric():
    X = frame(N=16, seed=3)
    y = np.where(X["age"] + 5 * (X["sex"] == "m") > 42, "yes", "no")
    m = dk.GroundMetric.calibrated(X, rho_numerical={"age": 0.8, "income": 0.7},
                                   rho_categorical={"color": 0.7, "sex": 1.0}, round=1)
    radius = dk.radius_from_theta(0.9)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(m, radius=radius)).fit(X, y)
    hand = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=dict(m.numerical.weights)),
                           categorical=dk.MismatchCost(weights=dict(m.categorical.weights)))
    ref = dk.DROClassifier(ambiguity=dk.Wasserstein(hand, radius=radius)).fit(X, y)
    assert clf.result_.objective == pytest.approx(ref.result_.objective, rel=1e-6)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-5)
    # robustness costs something: the DRO value is above the empirical loss of the same model
    erm = dk.DROClassifier(ambiguity=dk.Wasserstein(m, radius=0.0)).fit(X, y)
    assert clf.result_.objective > erm.result_.objective + 1e-4


# ---------------------------------------------------------------------- rho sampling
def test_sample_certainty_ranges():
    levels = np.resize([2, 3, 5, 10], 20_000)
    for mean in (0.6, 0.7, 0.8, 0.9):
        rho = sample_certainty(1, mean, n_levels=levels)
        assert rho.shape == levels.shape
        assert np.all(rho > 1.0 / levels) and np.all(rho < 1.0)
        rho_x = sample_certainty(1, mean, size=5000)
        assert rho_x.shape == (5000,) and np.all((rho_x > 0) & (rho_x < 1))
    assert isinstance(sample_certainty(0, 0.6), float)
    assert isinstance(sample_certainty(0, 0.6, n_levels=3), float)
    assert sample_certainty(0, 0.6, size=(2, 3)).shape == (2, 3)


def test_sample_certainty_is_a_truncated_normal():
    """Rejection sampling, not clipping: the law is N(0.6, 0.2) truncated to (1/2, 1) (binary)."""
    rho = sample_certainty(7, 0.6, 0.2, n_levels=np.full(20_000, 2))
    law = stats.truncnorm((0.5 - 0.6) / 0.2, (1.0 - 0.6) / 0.2, loc=0.6, scale=0.2)
    assert stats.kstest(rho, law.cdf).pvalue > 1e-3
    assert abs(rho.mean() - law.mean()) < 5 * law.std() / np.sqrt(rho.size)
    rho_x = sample_certainty(7, 0.9, 0.2, size=20_000)
    law_x = stats.truncnorm((0 - 0.9) / 0.2, (1 - 0.9) / 0.2, loc=0.9, scale=0.2)
    assert stats.kstest(rho_x, law_x.cdf).pvalue > 1e-3


def test_sample_certainty_reproducible():
    a = sample_certainty(42, 0.7, n_levels=[2, 3, 4])
    assert np.array_equal(a, sample_certainty(42, 0.7, n_levels=[2, 3, 4]))
    assert not np.array_equal(a, sample_certainty(43, 0.7, n_levels=[2, 3, 4]))
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(sample_certainty(g1, 0.8, size=4), sample_certainty(g2, 0.8, size=4))
    assert not np.array_equal(sample_certainty(g1, 0.8, size=4), sample_certainty(5, 0.8, size=4))


def test_sample_feature_certainty_feeds_calibrated():
    X = frame()
    rho_x, rho_z = sample_feature_certainty(X, 0.6, seed=3)
    assert list(rho_x) == ["age", "income"] and list(rho_z) == ["color", "sex"]
    assert rho_z["color"] > 1 / 4 and rho_z["sex"] > 1 / 2 and max(rho_z.values()) < 1
    assert (rho_x, rho_z) == sample_feature_certainty(X, 0.6, seed=3)
    m = dk.GroundMetric.calibrated(X, rho_numerical=rho_x, rho_categorical=rho_z)
    assert all(0 < w < np.inf for w in m.categorical.weights.values())


def test_calibrate_returns_the_shift_model():
    X = frame()
    cal = calibrate(X, rho_numerical=0.8, rho_categorical=0.7)
    assert cal.categories == {"color": ["red", "green", "blue", "black"], "sex": ["f", "m"]}
    assert cal.laplace_scale["age"] == pytest.approx(1 / cal.gamma["age"])
    assert cal.delta["sex"] == pytest.approx(np.log(0.7 / 0.3))
