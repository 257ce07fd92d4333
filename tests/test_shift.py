"""The test-set shift simulator (sun2025 §5.2, spec §6.4): statistics of the perturbations.

Counts are checked against their exact laws with wide margins (binomial: 5 standard errors;
chi-square and Kolmogorov-Smirnov: p > 1e-3) under fixed seeds, so the tests are deterministic
and still fail for a wrong switch rate, a switch that can land on the original level, a wrong
Laplace scale, or a scenario that does not change rho as specified.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import drokit as dk
from drokit.evaluation import PAPER_SCENARIOS, simulate_shift
from drokit.metrics import calibrate

LEVELS = ["a", "b", "c", "d"]
RHO_X = {"x": 0.8, "w": 0.6, "fixed": 1.0}
RHO_Z = {"color": 0.7, "sex": 0.6, "kept": 1.0}
U = {"x": 1.0, "w": 0.5, "fixed": 1.0}  # absolute half-widths


def frame(N=500, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x": rng.normal(size=N),
        "color": pd.Categorical(rng.choice(LEVELS, N), categories=LEVELS),
        "w": rng.normal(size=N).astype(np.float32),
        "sex": rng.choice(["f", "m"], N).astype(object),
        "fixed": rng.integers(0, 100, N),
        "kept": pd.Categorical(rng.choice(["u", "v", "z"], N), categories=["u", "v", "z"]),
    }, index=pd.RangeIndex(100, 100 + N, name="id"))


@pytest.fixture(scope="module")
def X():
    return frame()


@pytest.fixture(scope="module")
def cal(X):
    return calibrate(X, rho_numerical=RHO_X, rho_categorical=RHO_Z, half_width=U, half_width_in_std=False)


def stacked(sets, column):
    return np.stack([np.asarray(df[column].astype(object) if df[column].dtype == "category"
                                else df[column]) for df in sets])


def assert_binomial(successes, n, p):
    assert abs(successes / n - p) < 5 * np.sqrt(p * (1 - p) / n), (successes / n, p)


# -------------------------------------------------------------------------- categorical
@pytest.fixture(scope="module")
def expected_sets(X, cal):
    return list(simulate_shift(X, cal, n_sets=200, seed=11))


@pytest.mark.parametrize("column", ["color", "sex"])
def test_switch_rate_is_one_minus_rho(X, expected_sets, column):
    new = stacked(expected_sets, column)
    old = np.asarray(X[column].astype(object))
    switched = new != old[None]
    assert_binomial(int(switched.sum()), switched.size, 1 - RHO_Z[column])


def test_switches_are_uniform_over_the_other_levels(X, expected_sets):
    new = stacked(expected_sets, "color")
    old = np.broadcast_to(np.asarray(X["color"].astype(object)), new.shape)
    for level in LEVELS:
        moved = new[(old == level) & (new != old)]
        others = [c for c in LEVELS if c != level]
        assert set(moved) <= set(others)
        counts = [int(np.sum(moved == c)) for c in others]
        assert stats.chisquare(counts).pvalue > 1e-3, (level, counts)


def test_binary_switch_always_lands_on_the_other_level(X, expected_sets):
    new = stacked(expected_sets, "sex")
    assert set(np.unique(new)) == {"f", "m"}


# ---------------------------------------------------------------------------- numerical
@pytest.mark.parametrize("column", ["x", "w"])
def test_laplace_scale(X, cal, expected_sets, column):
    b = -U[column] / np.log(1 - RHO_X[column])
    assert cal.laplace_scale[column] == pytest.approx(b)
    noise = (stacked(expected_sets, column).astype(float) - X[column].to_numpy(float)[None]).ravel()
    rtol = 1e-6 if column == "w" else 1e-12  # float32 column
    assert abs(np.mean(np.abs(noise)) - b) < 5 * b / np.sqrt(noise.size) + rtol  # E|L| = b, sd b
    assert abs(np.mean(noise)) < 5 * np.sqrt(2) * b / np.sqrt(noise.size)       # symmetric
    assert stats.kstest(noise[:20_000], stats.laplace(scale=b).cdf).pvalue > 1e-3
    # the calibration identity: P(|shift| <= u) = rho
    assert_binomial(int(np.sum(np.abs(noise) <= U[column])), noise.size, RHO_X[column])


def test_immutable_features_never_move(X, expected_sets):
    for df in expected_sets:
        pd.testing.assert_series_equal(df["fixed"], X["fixed"])
        pd.testing.assert_series_equal(df["kept"], X["kept"])


# ------------------------------------------------------------------------ reproducibility
def test_shifted_sets_pickle_and_draw_the_same_sets(X, cal):
    """Every column kind (float, float32, int, category, object) survives pickling: the loaded copy draws the same
    sets (its column builders, closures, are rebuilt on loading)."""
    import pickle
    sets = simulate_shift(X, cal, 3, seed=5)
    again = pickle.loads(pickle.dumps(sets))
    for d1, d2 in zip(sets, again):
        pd.testing.assert_frame_equal(d1, d2)


def test_reproducible_and_seed_dependent(X, cal):
    a = list(simulate_shift(X, cal, 3, seed=5))
    b = list(simulate_shift(X, cal, 3, seed=5))
    c = list(simulate_shift(X, cal, 3, seed=6))
    for d1, d2, d3 in zip(a, b, c):
        pd.testing.assert_frame_equal(d1, d2)
        assert not d1.equals(d3)
    assert not a[0].equals(a[1])  # sets differ from each other
    sets = simulate_shift(X, cal, 3, seed=5)
    for d1, d2 in zip(list(sets), list(sets)):  # iterating again gives the same sets
        pd.testing.assert_frame_equal(d1, d2)
    longer = list(simulate_shift(X, cal, 8, seed=5))  # set k does not depend on n_sets
    for d1, d2 in zip(a, longer):
        pd.testing.assert_frame_equal(d1, d2)
    g1 = list(simulate_shift(X, cal, 2, seed=np.random.default_rng(3)))
    g2 = list(simulate_shift(X, cal, 2, seed=np.random.default_rng(3)))
    pd.testing.assert_frame_equal(g1[1], g2[1])


def test_chunking_does_not_change_the_sets(X, cal, monkeypatch):
    from drokit.evaluation import shift
    whole = list(simulate_shift(X, cal, 5, seed=9))
    monkeypatch.setattr(shift, "CHUNK_DRAWS", 1)  # one set per chunk
    for d1, d2 in zip(whole, simulate_shift(X, cal, 5, seed=9)):
        pd.testing.assert_frame_equal(d1, d2)


def test_dtypes_categories_index_preserved(X, cal):
    X2 = X.assign(city=pd.Series(np.resize(["p", "q", "r"], len(X)), index=X.index, dtype="string"),
                  flag=np.resize([True, False], len(X)))
    cal2 = calibrate(X2, rho_numerical=RHO_X, rho_categorical={**RHO_Z, "city": 0.5, "flag": 0.7},
                     half_width=U, half_width_in_std=False)
    sets = simulate_shift(X2, cal2, 4, seed=0)
    assert len(sets) == 4
    for df in sets:
        assert list(df.columns) == list(X2.columns)
        assert df.index.equals(X2.index) and df.index.name == "id"
        expected = X2.dtypes.copy()
        expected["fixed"] = X2["fixed"].dtype  # immutable: stays integer
        pd.testing.assert_series_equal(df.dtypes, expected)
        assert list(df["color"].cat.categories) == LEVELS
        assert set(df["city"]) <= {"p", "q", "r"} and set(df["flag"]) <= {True, False}
    X3 = X2.assign(fixed=X2["fixed"])  # an integer column that moves becomes float
    cal3 = calibrate(X3, rho_numerical={**RHO_X, "fixed": 0.9}, rho_categorical=cal2.rho_categorical,
                     half_width=U, half_width_in_std=False)
    assert next(iter(simulate_shift(X3, cal3, 1, seed=0)))["fixed"].dtype == np.float64


def test_unused_category_can_be_reached():
    """A declared but unobserved level counts in |C| (as in the metric) and receives switches."""
    X = pd.DataFrame({"c": pd.Categorical(["a"] * 400, categories=["a", "b", "zz"])})
    cal = calibrate(X, rho_categorical=0.5)
    new = stacked(simulate_shift(X, cal, 20, seed=1), "c")
    moved = new[new != "a"]
    assert_binomial(int(np.sum(moved == "zz")), moved.size, 0.5)


# ------------------------------------------------------------------------------ scenarios
def test_rho_offset_clips_as_the_paper(X, cal):
    down = simulate_shift(X, cal, 1, seed=0, scenario="rho_offset", amount=-0.2)
    assert down.rho_categorical == pytest.approx({"color": 0.5, "sex": 0.5, "kept": 1.0})  # 0.4 -> 1/2
    assert down.rho_numerical == pytest.approx({"x": 0.6, "w": 0.4, "fixed": 1.0})
    up = simulate_shift(X, cal, 1, seed=0, scenario="rho_offset", amount=0.35)
    assert up.rho_numerical == pytest.approx({"x": 0.9999, "w": 0.95, "fixed": 1.0})
    assert up.rho_categorical == pytest.approx({"color": 0.9999, "sex": 0.95, "kept": 1.0})
    far = simulate_shift(X, cal, 1, seed=0, scenario="rho_offset", amount=-0.85)
    assert far.rho_numerical["x"] == pytest.approx(0.0001) and far.rho_categorical["color"] == 0.25
    for sets in (down, up):  # b recomputed from rho~ with the same half-width u
        for c in ("x", "w"):
            assert sets.laplace_scale[c] == pytest.approx(-U[c] / np.log(1 - sets.rho_numerical[c]))
        assert sets.laplace_scale["fixed"] == 0.0


def test_rho_offset_changes_the_sets(X, cal):
    sets = list(simulate_shift(X, cal, 200, seed=2, scenario="rho_offset", amount=-0.1))
    switched = stacked(sets, "color") != np.asarray(X["color"].astype(object))[None]
    assert_binomial(int(switched.sum()), switched.size, 1 - 0.6)
    noise = (stacked(sets, "x") - X["x"].to_numpy()[None]).ravel()
    assert_binomial(int(np.sum(np.abs(noise) <= U["x"])), noise.size, 0.7)
    for df in sets[:20]:
        pd.testing.assert_series_equal(df["kept"], X["kept"])


def test_rho_jitter_is_uniform_in_the_clipped_window(X, cal):
    radius = 0.2
    draws = {c: [] for c in ("x", "w", "color", "sex")}
    for seed in range(300):
        sets = simulate_shift(X, cal, 1, seed=seed, scenario="rho_jitter", amount=radius)
        assert sets.rho_numerical["fixed"] == 1.0 and sets.rho_categorical["kept"] == 1.0
        for c in ("x", "w"):
            draws[c].append(sets.rho_numerical[c])
        for c in ("color", "sex"):
            draws[c].append(sets.rho_categorical[c])
    windows = {"x": (0.6, 0.9999), "w": (0.4, 0.8), "color": (0.5, 0.9), "sex": (0.5, 0.8)}
    for c, (lo, hi) in windows.items():
        d = np.array(draws[c])
        assert d.min() >= lo and d.max() <= hi
        assert stats.kstest(d, stats.uniform(lo, hi - lo).cdf).pvalue > 1e-3, c
    assert len(set(draws["x"])) == 300  # a fresh draw per call (seed)


def test_rho_jitter_is_drawn_once_per_call(X, cal):
    sets = simulate_shift(X, cal, 300, seed=4, scenario="rho_jitter", amount=0.15)
    rho = sets.rho_categorical["color"]
    assert rho != RHO_Z["color"]
    again = simulate_shift(X, cal, 300, seed=4, scenario="rho_jitter", amount=0.15)
    assert again.rho_categorical == sets.rho_categorical
    switched = stacked(list(sets), "color") != np.asarray(X["color"].astype(object))[None]
    assert_binomial(int(switched.sum()), switched.size, 1 - rho)


def test_paper_scenarios_all_run(X, cal):
    assert len(PAPER_SCENARIOS) == 8 and PAPER_SCENARIOS[0] == ("expected", None)
    for scenario, amount in PAPER_SCENARIOS:
        df = next(iter(simulate_shift(X, cal, 1, seed=0, scenario=scenario, amount=amount)))
        assert df.shape == X.shape


# -------------------------------------------------------------------------- model inputs
def test_calibrated_metric_uses_unrounded_rho(X):
    with pytest.warns(UserWarning, match="'sex'"):
        m = dk.GroundMetric.calibrated(X, rho_numerical=RHO_X, rho_categorical=RHO_Z, half_width=U,
                                       half_width_in_std=False, round=0, on_zero="warn")
    assert m.categorical.weights["sex"] == 0.0  # the metric treats sex as free ...
    sets = list(dk.simulate_shift(X, m, 200, seed=3))
    switched = stacked(sets, "sex") != np.asarray(X["sex"])[None]
    assert_binomial(int(switched.sum()), switched.size, 0.4)  # ... the world still keeps it w.p. 0.6


def test_plain_metric_inverts_the_calibration(X):
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights={"x": 2.0, "w": 1.0, "fixed": np.inf}),
                             categorical=dk.MismatchCost(weights={"color": np.log(0.8 * 3 / 0.2),
                                                                  "sex": 0.0, "kept": np.inf}))
    sets = simulate_shift(X, metric, 200, seed=8)
    assert sets.rho_categorical == pytest.approx({"color": 0.8, "sex": 0.5, "kept": 1.0})
    assert sets.laplace_scale == pytest.approx({"x": 0.5, "w": 1.0, "fixed": 0.0})
    frames = list(sets)
    switched = stacked(frames, "color") != np.asarray(X["color"].astype(object))[None]
    assert_binomial(int(switched.sum()), switched.size, 0.2)
    noise = (stacked(frames, "x") - X["x"].to_numpy()[None]).ravel()
    assert abs(np.mean(np.abs(noise)) - 0.5) < 5 * 0.5 / np.sqrt(noise.size)
    with pytest.raises(dk.ParameterError, match="half-widths"):
        simulate_shift(X, metric, 2, seed=0, scenario="rho_offset", amount=0.1)
    only_cat = X[["color", "sex"]]  # no numerical columns: the scenarios need no half-width
    assert simulate_shift(only_cat, metric_without_numerical(), 1, seed=0, scenario="rho_offset",
                          amount=-0.1).rho_categorical == pytest.approx({"color": 0.7, "sex": 0.5})


def metric_without_numerical():
    return dk.GroundMetric(categorical=dk.MismatchCost(weights={"color": np.log(0.8 * 3 / 0.2), "sex": 0.0}))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_sets=0), dk.ParameterError, "n_sets"),
    (dict(n_sets=2.5), dk.ParameterError, "n_sets"),
    (dict(scenario="worst"), dk.ParameterError, "scenario.*worst"),
    (dict(amount=0.1), dk.ParameterError, "amount"),
    (dict(scenario="rho_offset"), dk.ParameterError, "amount=None"),
    (dict(scenario="rho_offset", amount=np.nan), dk.ParameterError, "amount=nan"),
    (dict(scenario="rho_jitter", amount=0.0), dk.ParameterError, "radius amount.*0.0"),
    (dict(seed=-1), dk.ParameterError, "seed.*-1"),
    (dict(seed="abc"), dk.ParameterError, "seed.*abc"),
])
def test_bad_arguments(X, cal, kwargs, error, match):
    args = dict(n_sets=2, seed=0) | kwargs
    with pytest.raises(error, match=match):
        simulate_shift(X, cal, **args)


def test_bad_data_and_model(X, cal):
    with pytest.raises(dk.DataError, match="DataFrame"):
        simulate_shift(X.to_numpy(), cal, 1)
    with pytest.raises(dk.DataError, match=r"missing \['kept'\]"):
        simulate_shift(X.drop(columns="kept"), cal, 1)
    with pytest.raises(dk.DataError, match=r"unknown \['extra'\]"):
        simulate_shift(X.assign(extra=1.0), cal, 1)
    with pytest.raises(dk.DataError, match="'color'"):
        simulate_shift(X.assign(color=X["color"].astype(object).replace("a", "new")), cal, 1)
    with pytest.raises(dk.ParameterError, match="model"):
        simulate_shift(X, {"x": 0.8}, 1)
    free = dk.GroundMetric(numerical=dk.NormCost(weights={"x": 0.0}))
    with pytest.raises(dk.ParameterError, match=r"\['x'\].*weight 0"):
        simulate_shift(X, free, 1)


def test_fast_for_the_paper_size(X, cal):
    """5,000 sets of a 500-row test set: the paper's volume, vectorized (a few seconds at most)."""
    import time
    t0 = time.perf_counter()
    count = sum(1 for _ in simulate_shift(X, cal, 1000, seed=0))
    assert count == 1000 and time.perf_counter() - t0 < 5.0


def test_sets_do_not_share_memory_with_x(X, cal):
    X2 = X.copy()
    first, second = simulate_shift(X2, cal, 2, seed=0)
    first.loc[first.index[0], "fixed"] = -999  # an immutable column: same values as X2
    assert X2["fixed"].iloc[0] != -999 and second["fixed"].iloc[0] != -999


def test_the_same_seed_sequence_twice_draws_the_same_sets(X, cal):
    """A SeedSequence argument is copied, not spawned from: the caller's object is left unchanged."""
    root = np.random.SeedSequence(1234)
    first = list(simulate_shift(X, cal, n_sets=3, seed=root))
    second = list(simulate_shift(X, cal, n_sets=3, seed=root))
    assert root.n_children_spawned == 0
    for a, b in zip(first, second):
        pd.testing.assert_frame_equal(a, b)


def test_reweighting_a_calibrated_metric_drops_its_calibration(X):
    """The calibration describes the weights it produced: changing them (directly or nested) drops it, so
    simulate_shift follows the new weights; a label-cost change keeps it."""
    metric = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical=0.8)
    metric.set_params(label=dk.LabelCost(kappa=1.0))
    assert metric.calibration is not None
    ball = dk.Wasserstein(metric, radius=0.1)
    ball.set_params(metric__categorical__weights=5.0)
    assert metric.calibration is None
    stale = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical=0.8)
    a = next(iter(simulate_shift(X, metric, n_sets=1, seed=0)))
    b = next(iter(simulate_shift(X, stale, n_sets=1, seed=0)))
    assert not a.equals(b)          # weight 5 per categorical feature: far fewer level switches
