"""reproductions.sun2025 (``python -m reproductions.sun2025``): the sun2025 reproduction runs end to end and
its report is right.

One tiny run (hayes-roth: 105 training / 27 test rows, 3 categorical features; 2 thetas, 2 folds,
20 perturbed sets, one rho mean, n_jobs=1; a few seconds) writes the report into a temporary folder.
The checks recompute its numbers independently:

* the README's mean ACE of the lasso equals the mean over the 20 sets of ``adaptive_calibration_error``
  of the fitted lasso on the sets redrawn with ``dk.simulate_shift`` (same shift model, same seed), and
  the mean of ``per_set.csv.gz``;
* the summary table's relative differences equal ``(baseline - model) / baseline`` recomputed from
  ``summary.csv``;
* the chosen hyper-parameters are the CV minimisers in ``cv.csv``;
* the lasso solves the paper's objective ``(1/N) sum log(1 + exp(-y f)) + lambda ||(beta, beta_0)||_1``
  (checked against cvxpy), which is the stated mapping C = 1 / (lambda N);
* numerical columns are standardized with training statistics only.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.evaluation import adaptive_calibration_error

import reproductions.sun2025 as sun2025
from reproductions.sun2025 import protocol
from tests.example_scripts import timed_main

ARGS = ["--datasets", "hayes-roth", "--thetas", "0.5", "0.9", "--folds", "2", "--n-sets", "20",
        "--rho-means", "0.8", "--n-jobs", "1", "--seed", "7", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return timed_main(sun2025, ARGS, tmp_path_factory.mktemp("sun2025"))


def _table_row(readme: str, section: str, model: str) -> list:
    """The cells of ``model``'s row in the first table after the heading ``section``."""
    text = readme.split(section, 1)[1]
    line = next(l for l in text.splitlines() if l.startswith(f"| {model} |"))
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_files_exist(run):
    out = run.readme.parent
    assert run.readme == out / "README.md" and run.readme.is_file()
    for name in ("summary.csv", "per_set.csv.gz", "relative.csv", "cv.csv", "figures/hayes-roth.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert (out / "figures/hayes-roth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    readme = run.readme.read_text()
    for heading in ("## Protocol", "## Assumptions and departures from the paper", "## Verdicts from statistics",
                    "### Unexpected shifts (sun2025 Appendix D", "## Summary across datasets", "### hayes-roth",
                    "![hayes-roth", "## Discussion", "## The runtime claim"):
        assert heading in readme
    assert (out / "provenance.json").is_file()
    assert "--rho-means 0.8" in readme                 # the command line
    assert not run.runs[0].error and not run.runs[0].rhos[0].error


def test_graph_and_cutting_plane_reach_the_same_certified_fit(run):
    """The runtime claim's two refits (graph, cutting plane) are both certified and agree to the certificates."""
    measured = run.runs[0].rhos[0].methods
    graph, plane = measured["graph"], measured["cutting_plane"]
    assert graph["status"] == plane["status"] == "optimal"
    assert graph["objective"] == pytest.approx(plane["objective"], rel=2e-6)
    assert "graph / cutting plane" in run.readme.read_text()


def test_lasso_mean_ace_in_readme_is_recomputed(run):
    data = run.runs[0]
    rho_run = data.rhos[0]
    split = data.split
    # the shift model of the report: the calibrated metric, rounded or not (simulate_shift uses the rhos)
    metric = dk.GroundMetric.calibrated(split.X_train, rho_numerical=rho_run.rho[0] or None,
                                        rho_categorical=rho_run.rho[1] or None, half_width=0.4)
    sets = dk.simulate_shift(split.X_test, metric, n_sets=20,
                             seed=np.random.SeedSequence(rho_run.report.seed))
    y = split.y_test.to_numpy()
    aces = np.array([adaptive_calibration_error(y, data.lasso.model.predict_proba(frame)[:, 1])
                     for frame in sets])
    per_set = pd.read_csv(run.readme.parent / "per_set.csv.gz")
    lasso = per_set[(per_set["model"] == "lasso LR") & (per_set["scenario"] == "expected")].sort_values("set")
    np.testing.assert_allclose(lasso["ace"].to_numpy(), aces, rtol=0, atol=1e-9)

    readme = run.readme.read_text()
    cells = _table_row(readme, "### hayes-roth", "lasso LR")
    assert cells[3] == f"{aces.mean():.4f}"            # column "mean ACE"
    assert cells[4] == f"{aces.max():.4f}"             # column "worst ACE"
    summary = pd.read_csv(run.readme.parent / "summary.csv")
    row = summary[(summary["model"] == "lasso LR") & (summary["scenario"] == "expected")].iloc[0]
    assert row["ace_mean"] == pytest.approx(aces.mean(), abs=1e-12)


def test_relative_differences_in_readme(run):
    summary = pd.read_csv(run.readme.parent / "summary.csv")
    summary = summary[summary["scenario"] == "expected"].set_index("model")
    weighted = summary.loc["weighted DRO (integer)"]
    readme = run.readme.read_text()
    cells = _table_row(readme, "## Summary across datasets", "hayes-roth")
    # vs unit DRO: mean ACE, worst ACE, mean AUC, worst AUC; then vs lasso LR
    expected = []
    for baseline in ("unit DRO", "lasso LR"):
        b = summary.loc[baseline]
        expected += [(b["ace_mean"] - weighted["ace_mean"]) / b["ace_mean"],
                     (b["ace_worst"] - weighted["ace_worst"]) / b["ace_worst"],
                     (weighted["auc_mean"] - b["auc_mean"]) / b["auc_mean"],
                     (weighted["auc_worst"] - b["auc_worst"]) / b["auc_worst"]]
    assert cells[3:] == [f"{100 * v:+.1f}%" for v in expected]
    wins = sum(v > 0 for v in expected[:4])
    assert re.search(rf"\| unit DRO \| mean ACE \| {int(expected[0] > 0)} / 1 \|", readme)
    assert f"better on all four statistics in {int(wins == 4)} of 1 instances" in readme


def test_chosen_hyperparameters_minimise_cv_ace(run):
    cv = pd.read_csv(run.readme.parent / "cv.csv")
    data = run.runs[0]
    chosen = {"unit DRO": data.unit.value, "lasso LR": data.lasso.value,
              "weighted DRO (integer)": data.rhos[0].weighted["integer"].value}
    assert set(cv["model"]) == set(chosen)
    for model, value in chosen.items():
        part = cv[cv["model"] == model]
        assert part.loc[part["mean_cv_ace"].idxmin(), "value"] == pytest.approx(value)
    assert len(cv[cv["model"] == "weighted DRO (integer)"]) == 2      # --thetas 0.5 0.9
    assert len(cv[cv["model"] == "unit DRO"]) == 7                    # the paper's radius grid


def test_lasso_solves_the_papers_objective():
    cp = pytest.importorskip("cvxpy")
    split = protocol.load_split("hayes-roth", 7)
    lam = 0.01
    model = protocol.LassoLogistic(lam=lam, tol=1e-10).fit(split.X_train, split.y_train)
    Z = model.encoder_.transform(split.X_train)
    s = 2.0 * split.y_train.to_numpy() - 1.0

    def objective(w, b):
        return np.mean(np.logaddexp(0.0, -s * (Z @ w + b))) + lam * (np.abs(w).sum() + abs(b))

    w, b = cp.Variable(Z.shape[1]), cp.Variable()
    problem = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(s, Z @ w + b))) / len(s)
                                     + lam * (cp.norm1(w) + cp.abs(b))))
    problem.solve(solver="CLARABEL")
    ours = objective(model.model_.coef_.ravel(), float(model.model_.intercept_[0]))
    assert ours == pytest.approx(problem.value, rel=1e-6)
    # a different scaling of the penalty (e.g. C = 1 / lambda) solves another problem
    other = protocol.LassoLogistic(lam=lam * len(s)).fit(split.X_train, split.y_train)
    assert objective(other.model_.coef_.ravel(), float(other.model_.intercept_[0])) > problem.value + 1e-3


def test_standardization_uses_training_rows_only():
    split = protocol.load_split("hepatitis", 7)
    X, _ = dk.datasets.load("hepatitis")
    num = split.numerical
    assert num and len(split.y_train) + len(split.y_test) == len(X)
    np.testing.assert_allclose(split.X_train[num].mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.X_train[num].std(ddof=1), 1.0, atol=1e-12)
    raw_train, raw_test = X.loc[split.X_train.index, num], X.loc[split.X_test.index, num]
    expected = (raw_test - raw_train.mean()) / raw_train.std(ddof=1)
    np.testing.assert_allclose(split.X_test[num].to_numpy(), expected.to_numpy(), atol=1e-12)
    assert split.y_test.mean() == pytest.approx(split.y_train.mean(), abs=0.05)   # stratified
