"""Scores (ACE, ECE, AUC, accuracy, log-loss) and the robustness report over perturbed test sets
(sun2025 §5.2, spec §6.4).

The scores are checked against hand-computed values, plain-loop references and scikit-learn; the
report against scores recomputed set by set on ``dk.simulate_shift`` with the same seed.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.metrics import log_loss as sk_log_loss
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import drokit as dk
from drokit.evaluation import (PAPER_SCENARIOS, RobustnessReport, accuracy, adaptive_calibration_error,
                               expected_calibration_error, log_loss, robustness_report, roc_auc)


# ============================================================================ references
def ace_loop(y, p, n_bins):
    """ACE by a loop over the equal-count bins of the stably sorted probabilities."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    total = 0.0
    for idx in np.array_split(np.argsort(p, kind="stable"), n_bins):
        if len(idx):
            total += len(idx) / len(p) * abs(y[idx].mean() - p[idx].mean())
    return total


def ece_loop(y, p, n_bins):
    y, p = np.asarray(y, float), np.asarray(p, float)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = (p >= lo) & ((p < hi) if b < n_bins - 1 else (p <= 1.0))
        if inside.any():
            total += inside.sum() / len(p) * abs(y[inside].mean() - p[inside].mean())
    return total


def auc_pairs(y, s, tie_weight):
    pos, neg = s[y == 1], s[y == 0]
    return ((pos[:, None] > neg[None]) + tie_weight * (pos[:, None] == neg[None])).mean()


# ============================================================================ ACE / ECE
# sorted by p: (0.1, 0) (0.2, 0) (0.3, 0) | (0.4, 1) (0.6, 0) | (0.8, 1) (0.9, 1)   (array_split: 3, 2, 2)
HAND_P = [0.9, 0.1, 0.4, 0.8, 0.3, 0.6, 0.2]
HAND_Y = [1, 0, 1, 1, 0, 0, 0]


def test_ace_hand_computed_example():
    # bin 1: |0 - 0.2| * 3/7 = 0.6/7;  bin 2: |1/2 - 1/2| = 0;  bin 3: |1 - 0.85| * 2/7 = 0.3/7
    assert adaptive_calibration_error(HAND_Y, HAND_P, n_bins=3) == pytest.approx(0.9 / 7, abs=1e-15)
    # the unweighted mean over bins (Nixon et al.) would give (0.2 + 0 + 0.15) / 3 = 0.11667
    assert adaptive_calibration_error(HAND_Y, HAND_P, n_bins=3) != pytest.approx(0.35 / 3, abs=1e-3)
    # one bin: |mean y - mean p| = |3/7 - 3.3/7|
    assert adaptive_calibration_error(HAND_Y, HAND_P, n_bins=1) == pytest.approx(0.3 / 7, abs=1e-15)
    # one sample per bin: mean |y - p| = (0.1 + 0.1 + 0.6 + 0.2 + 0.3 + 0.6 + 0.2) / 7
    assert adaptive_calibration_error(HAND_Y, HAND_P, n_bins=7) == pytest.approx(2.1 / 7, abs=1e-15)
    # more bins than samples: the empty bins weigh nothing
    assert adaptive_calibration_error(HAND_Y, HAND_P, n_bins=50) == pytest.approx(2.1 / 7, abs=1e-15)


def test_ace_ties_keep_input_order_across_a_bin_edge():
    # stable sort: bin 1 = (y=1, p=.5), bin 2 = (y=0, p=.5) -> (0.5 + 0.5) / 2
    assert adaptive_calibration_error([1, 0], [0.5, 0.5], n_bins=2) == pytest.approx(0.5)
    assert adaptive_calibration_error([1, 0], [0.5, 0.5], n_bins=1) == pytest.approx(0.0)


@pytest.mark.parametrize("seed", range(6))
def test_ace_and_ece_equal_loop_references(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    p = np.round(rng.random(n), int(rng.integers(1, 4)))  # rounding makes ties
    p[:3] = [0.0, 1.0, 0.5]
    y = (rng.random(n) < p).astype(int)
    for n_bins in (1, 3, 10, 17):
        assert adaptive_calibration_error(y, p, n_bins) == pytest.approx(ace_loop(y, p, n_bins), abs=1e-12)
        assert expected_calibration_error(y, p, n_bins) == pytest.approx(ece_loop(y, p, n_bins), abs=1e-12)


def test_ece_hand_computed_example():
    # width 0.5: [0, .5) holds p = .1, .2, .3, .4 (y 0,0,0,1); [.5, 1] holds .6, .8, .9 (y 0,1,1)
    # |1 - 1.0| * ... = 0 and |2 - 2.3| = 0.3  -> 0.3 / 7
    assert expected_calibration_error(HAND_Y, HAND_P, n_bins=2) == pytest.approx(0.3 / 7, abs=1e-15)


# ============================================================================ AUC
@pytest.mark.parametrize("seed", range(8))
def test_auc_equals_sklearn_with_many_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 500))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = rng.integers(0, 4, n) / 3.0  # four distinct scores: most pairs tie
    assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert roc_auc(y, s) == pytest.approx(auc_pairs(y, s, 0.5), abs=1e-12)
    assert roc_auc(y, s, ties="zero") == pytest.approx(auc_pairs(y, s, 0.0), abs=1e-12)
    assert roc_auc(y, s, ties="zero") < roc_auc(y, s)  # with ties, the paper's rule is lower


def test_auc_of_decision_scores_and_string_labels():
    rng = np.random.default_rng(3)
    labels = np.where(rng.random(60) < 0.4, "bad", "good")
    score = rng.normal(size=60) * 5  # not probabilities
    expected = roc_auc_score(labels == "good", score)
    assert roc_auc(labels, score, pos_label="good") == pytest.approx(expected, abs=1e-12)
    assert roc_auc(labels, score, pos_label="bad") == pytest.approx(1 - expected, abs=1e-12)
    assert roc_auc(np.where(labels == "good", 1, -1), score) == pytest.approx(expected, abs=1e-12)


# ============================================================================ accuracy, log-loss
@pytest.mark.parametrize("seed", range(4))
def test_log_loss_and_accuracy_equal_sklearn(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, 200)
    p[:2] = 0.5  # exactly 0.5 counts as the negative class
    y = (rng.random(200) < p).astype(int)
    assert log_loss(y, p) == pytest.approx(sk_log_loss(y, p), abs=1e-12)
    assert accuracy(y, p) == pytest.approx(accuracy_score(y, (p > 0.5).astype(int)), abs=0)
    assert accuracy(y, p, threshold=0.3) == pytest.approx(accuracy_score(y, p > 0.3), abs=0)


def test_accuracy_matches_predict_of_a_logistic_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.0, -2.0, 0.5] + rng.normal(size=300) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    assert accuracy(y, clf.predict_proba(X)[:, 1]) == accuracy_score(y, clf.predict(X))


def test_log_loss_clips_at_1e_15():
    assert log_loss([1], [0.0]) == pytest.approx(-np.log(1e-15), rel=1e-12)
    assert log_loss([0], [1.0]) == pytest.approx(-np.log(1e-15), rel=1e-3)  # 1 - (1 - 1e-15) in floats
    assert log_loss([1, 0], [1.0, 0.0]) == pytest.approx(1e-15, rel=1e-3)


# ============================================================================ bad input
@pytest.mark.parametrize("fn", [adaptive_calibration_error, expected_calibration_error, accuracy, log_loss])
def test_probability_scores_reject_bad_input(fn):
    with pytest.raises(dk.DataError, match="proba contains NaN"):
        fn([0, 1, 1], [0.1, np.nan, 0.3])
    with pytest.raises(dk.DataError, match="y_true contains NaN"):
        fn([0, np.nan, 1], [0.1, 0.2, 0.3])
    with pytest.raises(dk.DataError, match="different lengths"):
        fn([0, 1, 1], [0.1, 0.2])
    with pytest.raises(dk.DataError, match=r"proba must be probabilities in \[0, 1\]"):
        fn([0, 1], [0.1, 1.2])
    with pytest.raises(dk.DataError, match=r"proba\[:, 1\]"):
        fn([0, 1], [[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(dk.DataError, match="must be binary"):
        fn([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(dk.ParameterError, match="pass pos_label"):
        fn(["a", "b"], [0.1, 0.2])
    with pytest.raises(dk.ParameterError, match="pos_label='c' is not one of the labels"):
        fn(["a", "b"], [0.1, 0.2], pos_label="c")


def test_auc_rejects_one_class_and_bad_arguments():
    with pytest.raises(dk.DataError, match="only the negative class"):
        roc_auc([0, 0, 0], [0.1, 0.2, 0.3])
    with pytest.raises(dk.DataError, match="only the positive class"):
        roc_auc(["b", "b"], [0.1, 0.2], pos_label="b")
    with pytest.raises(dk.DataError, match="score contains inf"):
        roc_auc([0, 1], [0.1, np.inf])
    with pytest.raises(dk.ParameterError, match="ties must be one of"):
        roc_auc([0, 1], [0.1, 0.2], ties="one")
    with pytest.raises(dk.ParameterError, match="n_bins must be a positive integer"):
        adaptive_calibration_error([0, 1], [0.1, 0.2], n_bins=0)


def test_one_class_is_fine_for_the_other_scores():
    assert adaptive_calibration_error([0, 0, 0], [0.1, 0.2, 0.3], n_bins=1) == pytest.approx(0.2)
    assert accuracy(["n", "n"], [0.2, 0.7], pos_label="p") == pytest.approx(0.5)


# ============================================================================ the report
def mixed_data(N, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=N)
    c = rng.choice(list("abc"), N)
    d = rng.choice(["u", "v"], N)
    logit = 1.5 * x + 1.0 * (c == "a") - 0.8 * (d == "u")
    y = (rng.random(N) < 1 / (1 + np.exp(-logit))).astype(int)
    X = pd.DataFrame({"x": x, "c": pd.Categorical(c, categories=list("abc")),
                      "d": pd.Categorical(d, categories=["u", "v"])}, index=pd.RangeIndex(500, 500 + N))
    return X, pd.Series(y, index=X.index, name="y")


def lasso_pipeline(X, y):
    encode = make_column_transformer((OneHotEncoder(), ["c", "d"]), remainder="passthrough")
    return make_pipeline(encode, LogisticRegression(C=0.5)).fit(X, y)


@pytest.fixture(scope="module")
def setup():
    X, y = mixed_data(160, 0)
    X_test, y_test = mixed_data(120, 1)  # 120 rows: a multiple of the 10 ACE bins
    metric = dk.GroundMetric.calibrated(X, rho_numerical=0.8, rho_categorical=0.7)
    dro = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=dk.radius_from_theta(0.9))).fit(X, y)
    return dict(X=X, y=y, X_test=X_test, y_test=y_test, metric=metric, dro=dro, lr=lasso_pipeline(X, y))


@pytest.fixture(scope="module")
def report(setup):
    s = setup
    return robustness_report({"lr": s["lr"], "dro": s["dro"]}, s["X_test"], s["y_test"],
                             shift_model=s["metric"], n_sets=40, seed=7,
                             scenarios=["expected", ("rho_offset", -0.2)])


def test_report_tables_have_the_documented_shape(report):
    assert isinstance(report, RobustnessReport)
    assert report.scenarios == ("expected", "rho_offset=-0.2")
    assert len(report.per_set) == 2 * 2 * 40 * 4
    assert list(report.per_set.columns) == ["model", "scenario", "set", "metric", "value"]
    table = report.summary()
    assert table.shape == (4, 12)
    assert list(table.index) == [("expected", "lr"), ("expected", "dro"),
                                 ("rho_offset=-0.2", "lr"), ("rho_offset=-0.2", "dro")]
    assert list(table.columns[:3]) == [("ace", "mean"), ("ace", "worst"), ("ace", "std")]
    assert not table.isna().any().any()
    assert report.summary(["nominal"]).shape == (4, 4)


def test_worst_is_the_max_of_losses_and_the_min_of_auc_and_accuracy(report):
    table = report.summary(["mean", "worst", "best"])
    for scenario in report.scenarios:
        for metric, up in [("ace", False), ("log_loss", False), ("auc", True), ("accuracy", True)]:
            values = report.values(metric, scenario)
            for model in report.models:
                row = table.loc[(scenario, model), metric]
                extreme = values[model].min() if up else values[model].max()
                assert row["worst"] == pytest.approx(extreme)
                assert (row["worst"] <= row["mean"] <= row["best"]) if up else \
                       (row["worst"] >= row["mean"] >= row["best"])
                assert row["worst"] != pytest.approx(row["mean"])  # the sets differ


def test_report_scores_equal_scores_of_simulate_shift_sets(setup):
    """Same seed -> the sets of dk.simulate_shift; small blocks (3 sets + a remainder) change nothing."""
    s = setup
    X_test, y_test = s["X_test"], s["y_test"]
    rep = robustness_report({"dro": s["dro"]}, X_test, y_test, shift_model=s["metric"], n_sets=7, seed=3,
                            scenarios=[("rho_jitter", 0.1)], batch_rows=3 * len(X_test),
                            metrics=("ace", "ece", "auc", "accuracy", "log_loss"))
    sets = dk.simulate_shift(X_test, s["metric"], n_sets=7, seed=3, scenario="rho_jitter", amount=0.1)
    y = y_test.to_numpy()
    for k, frame in enumerate(sets):
        p = s["dro"].predict_proba(frame)[:, 1]
        expected = {"ace": ace_loop(y, p, 10), "ece": ece_loop(y, p, 10), "auc": roc_auc_score(y, p),
                    "accuracy": accuracy_score(y, s["dro"].predict(frame)), "log_loss": sk_log_loss(y, p)}
        for metric, value in expected.items():
            assert rep.values(metric).loc[k, "dro"] == pytest.approx(value, abs=1e-12), (k, metric)
    p0 = s["dro"].predict_proba(X_test)[:, 1]
    assert rep.nominal.loc["dro", "auc"] == pytest.approx(roc_auc_score(y, p0), abs=1e-12)
    assert rep.nominal.loc["dro", "ace"] == pytest.approx(ace_loop(y, p0, 10), abs=1e-12)


def test_every_model_sees_the_same_sets(setup):
    s = setup
    twin = lasso_pipeline(s["X"], s["y"])  # an equal model fitted again: equal scores on equal sets
    rep = robustness_report({"a": s["lr"], "dro": s["dro"], "b": twin}, s["X_test"], s["y_test"],
                            shift_model=s["metric"], n_sets=25, seed=1)
    for metric in rep.metrics:
        v = rep.values(metric)
        np.testing.assert_allclose(v["a"], v["b"], rtol=0, atol=1e-12)
        assert v["a"].std() > 0  # the sets do differ from one another
    assert rep.relative_to("a", ["mean", "wins"]).loc[("expected", "b")].abs().max() < 1e-9


def test_seed_reproduces_the_report(setup, report):
    s = setup
    kwargs = dict(shift_model=s["metric"], n_sets=40, scenarios=["expected", ("rho_offset", -0.2)])
    again = robustness_report({"lr": s["lr"], "dro": s["dro"]}, s["X_test"], s["y_test"], seed=7, **kwargs)
    pd.testing.assert_frame_equal(again.per_set, report.per_set)
    other = robustness_report({"lr": s["lr"], "dro": s["dro"]}, s["X_test"], s["y_test"], seed=8, **kwargs)
    assert not np.allclose(other.per_set["value"], report.per_set["value"])
    fresh = robustness_report({"dro": s["dro"]}, s["X_test"], s["y_test"], shift_model=s["metric"], n_sets=5)
    redo = robustness_report({"dro": s["dro"]}, s["X_test"], s["y_test"], shift_model=s["metric"], n_sets=5,
                             seed=np.random.SeedSequence(fresh.seed))
    pd.testing.assert_frame_equal(fresh.per_set, redo.per_set)


def test_shifts_drawn_beforehand_give_the_same_report(setup, report):
    s = setup
    shifts = {"expected": dk.simulate_shift(s["X_test"], s["metric"], 40, seed=7),
              "rho_offset=-0.2": dk.simulate_shift(s["X_test"], s["metric"], 40, seed=7,
                                                   scenario="rho_offset", amount=-0.2)}
    given = robustness_report({"lr": s["lr"], "dro": s["dro"]}, s["X_test"], s["y_test"], shifts=shifts)
    pd.testing.assert_frame_equal(given.per_set, report.per_set)
    with pytest.raises(dk.ParameterError, match="not both"):
        robustness_report([s["dro"]], s["X_test"], s["y_test"], shifts=shifts, seed=1)
    with pytest.raises(dk.DataError, match="copies of another test set"):
        robustness_report([s["dro"]], s["X_test"].iloc[:50], s["y_test"].iloc[:50], shifts=shifts)


def test_relative_improvement_follows_the_metric_direction(report):
    rel = report.relative_to("lr", ["mean", "worst", "wins"])
    table = report.summary(["mean", "worst"])
    assert list(rel.index) == [("expected", "dro"), ("rho_offset=-0.2", "dro")]
    for scenario in report.scenarios:
        base, model = table.loc[(scenario, "lr")], table.loc[(scenario, "dro")]
        for stat in ("mean", "worst"):
            ace0, ace = base[("ace", stat)], model[("ace", stat)]
            assert rel.loc[(scenario, "dro"), ("ace", stat)] == pytest.approx((ace0 - ace) / ace0)
            auc0, auc = base[("auc", stat)], model[("auc", stat)]
            assert rel.loc[(scenario, "dro"), ("auc", stat)] == pytest.approx((auc - auc0) / auc0)
        v = report.values("ace", scenario)
        assert rel.loc[(scenario, "dro"), ("ace", "wins")] == pytest.approx((v["dro"] < v["lr"]).mean())
    with pytest.raises(dk.ParameterError, match="baseline must be one of"):
        report.relative_to("selvi")


def test_relative_to_needs_another_model(setup):
    """One model: a clear error, not pandas' "Length of new names must be 1, got 2"."""
    s = setup
    single = robustness_report({"dro": s["dro"]}, s["X_test"], s["y_test"], shift_model=s["metric"], n_sets=3,
                               seed=0, progress=False)
    with pytest.raises(dk.ParameterError, match="only the model 'dro'"):
        single.relative_to("dro")


def test_positive_label_selects_the_probability_column(setup):
    s = setup
    names = np.where(s["y"] == 1, "good", "bad")
    names_test = pd.Series(np.where(s["y_test"] == 1, "good", "bad"), index=s["X_test"].index)
    lr = lasso_pipeline(s["X"], names)
    kw = dict(shift_model=s["metric"], n_sets=10, seed=0, metrics=("ace", "auc"))
    good = robustness_report([lr], s["X_test"], names_test, **kw)
    bad = robustness_report([lr], s["X_test"], names_test, pos_label="bad", **kw)
    assert good.pos_label == "good"
    assert list(good.models) == ["LogisticRegression"]
    # (labels, proba) -> (1 - labels, 1 - proba) leaves AUC and ACE (120 rows, 10 bins) unchanged; the
    # wrong column would turn the AUC into 1 - AUC
    assert (good.values("auc") > 0.6).all().all()
    np.testing.assert_allclose(bad.values("auc"), good.values("auc"), atol=1e-12)
    np.testing.assert_allclose(bad.values("ace"), good.values("ace"), atol=1e-12)


def test_report_rejects_bad_models_and_labels(setup):
    s = setup
    X_test, y_test = s["X_test"], s["y_test"]
    kw = dict(shift_model=s["metric"], n_sets=2, seed=0)
    with pytest.raises(dk.ParameterError, match="not fitted"):
        robustness_report({"new": LogisticRegression()}, X_test, y_test, **kw)
    with pytest.raises(dk.ParameterError, match="has no predict_proba"):
        robustness_report({"svm": object()}, X_test, y_test, **kw)
    with pytest.raises(dk.DataError, match=r"labels \[2\]"):
        robustness_report([s["dro"]], X_test, y_test.replace({1: 2}), **kw)
    with pytest.raises(dk.DataError, match="different indexes"):
        robustness_report([s["dro"]], X_test, y_test.reset_index(drop=True), **kw)
    with pytest.raises(dk.ParameterError, match="metrics must be distinct names"):
        robustness_report([s["dro"]], X_test, y_test, metrics=("ace", "brier"), **kw)
    with pytest.raises(dk.ParameterError, match="shift_model="):
        robustness_report([s["dro"]], X_test, y_test, n_sets=2)
    with pytest.raises(dk.ParameterError, match="scenarios must hold names"):
        robustness_report([s["dro"]], X_test, y_test, scenarios=["sideways"], **kw)


def test_list_of_models_is_named_by_class(setup):
    s = setup
    rep = robustness_report([s["lr"], s["dro"], s["lr"]], s["X_test"], s["y_test"], shift_model=s["metric"],
                            n_sets=2, seed=0, metrics="auc")
    assert rep.models == ("LogisticRegression", "DROClassifier", "LogisticRegression_2")


def test_progress_lines_go_to_stderr_only_when_asked(setup, capsys):
    s = setup
    args = ({"lr": s["lr"], "dro": s["dro"]}, s["X_test"], s["y_test"])
    kw = dict(shift_model=s["metric"], n_sets=3, seed=0, scenarios=PAPER_SCENARIOS[:2])
    robustness_report(*args, **kw)
    assert capsys.readouterr() == ("", "")
    robustness_report(*args, progress=True, **kw)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 4
    assert "expected (3 sets) lr" in lines[0] and "rho_offset=-0.2 (3 sets) dro" in lines[3]


def test_markdown_table(report):
    text = report.to_markdown()
    lines = text.splitlines()
    assert len(lines) == 2 + 4
    assert lines[0].startswith("| scenario | model | ace mean | ace worst | ace std | auc mean")
    assert lines[1] == "|---|---|" + "|".join(["---:"] * 12) + "|"
    ace = report.summary().loc[("expected", "dro"), ("ace", "mean")]
    assert lines[3].startswith(f"| expected | dro | {ace:.4f} |")
    rel = report.to_markdown(report.relative_to("lr"), floatfmt=".1%")
    assert rel.splitlines()[2].startswith("| expected | dro |") and "%" in rel


def test_plot_draws_one_box_per_model(report):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = report.plot("ace", "expected")
    try:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["lr", "dro"]
        assert len(ax.patches) == 2
        values = report.values("ace", "expected")
        for patch, model in zip(ax.patches, report.models):
            heights = patch.get_path().vertices[:, 1]
            q1, q3 = np.percentile(values[model], [25, 75])
            assert heights.min() == pytest.approx(q1) and heights.max() == pytest.approx(q3)
        assert "lower is better" in ax.get_ylabel()
    finally:
        plt.close(ax.figure)
    fig, ax = plt.subplots()
    try:
        assert report.plot("auc", ax=ax) is ax  # all scenarios: one group per scenario
        assert len(ax.patches) == 4
        assert [t.get_text() for t in ax.get_xticklabels()] == list(report.scenarios)
        assert "higher is better" in ax.get_ylabel()
    finally:
        plt.close(fig)
    with pytest.raises(dk.ParameterError, match="metric must be one of"):
        report.plot("ece")


def test_plot_without_matplotlib_says_how_to_install(report, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install drokit\[plot\]"):
        report.plot("ace", "expected")
