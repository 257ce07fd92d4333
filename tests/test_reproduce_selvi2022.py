"""reproductions.selvi2022 (``python -m reproductions.selvi2022``): the selvi2022 Table 1 reproduction runs end
to end and its parts are right.

One tiny run (hayes-roth, 160 rows subsampled to 80: 64 training / 16 test rows, 4 categorical features;
one split, 2 folds, two values per grid, n_jobs=1; a few seconds) writes the report into a temporary
folder.  The checks recompute its numbers independently:

* the README's Table 1 has our row (the mean errors of ``errors.csv``) next to the published row;
* LR's test error equals a plain ``dk.DROClassifier`` at radius 0 fitted on the same training rows;
* every chosen hyper-parameter minimises the CV error in ``cv.csv`` (ties: largest gamma, then radius);
* the models use the stated metric (normalized by m + kappa) and compile paths (MT: closed form);
* the significance marks follow the paper's rule on constructed error matrices (dagger / double dagger,
  the second best excludes the proposed models, no marks for LR itself), with the paired one-sided
  t-test p-value checked against the textbook formula;
* the data follow selvi2022's Appendix D (N, k, m of Table 1).
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy import stats

import drokit as dk

import reproductions.selvi2022 as selvi2022
from reproductions.protocol import TIE_TOL
from reproductions.selvi2022 import protocol, report
import reproductions.report as reproductions_report
from reproductions.stats import one_sided_p
from tests.example_scripts import timed_main

ARGS = ["--datasets", "hayes-roth", "--splits", "1", "--folds", "2", "--max-rows", "80",
        "--radii", "0", "0.01", "--rdro-radii", "0", "0.01", "--rdro-gammas", "0", "0.05",
        "--gammas", "0", "0.05", "--mt-radii", "0", "0.01", "--n-jobs", "1", "--seed", "7", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return timed_main(selvi2022, ARGS, tmp_path_factory.mktemp("selvi2022"))


def _rows(readme: str, first_cell: str) -> list:
    """The cells of the table line starting with ``first_cell`` and of the line after it."""
    lines = readme.splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith(f"| {first_cell} |"))
    return [[c.strip() for c in lines[j].strip().strip("|").split("|")] for j in (i, i + 1)]


def test_report_and_table(run):
    out = run.readme.parent
    assert not run.runs[0].error, run.runs[0].error
    for name in ("README.md", "errors.csv", "cv.csv", "run.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    readme = run.readme.read_text()
    for heading in ("## Table 1: ours next to the published numbers", "## Protocol", "## Runtime",
                    "## Comparison with the paper (computed)", "## Discussion"):
        assert heading in readme
    assert "--max-rows 80" in readme                                   # the exact command
    errors = pd.read_csv(out / "errors.csv")
    assert sorted(errors["model"]) == sorted(protocol.MODELS) and (errors["split"] == 0).all()
    ours, paper = _rows(readme, "hayes-roth*")
    assert ours[1] == "ours (1 split)" and ours[2] == "160 (→80)" and ours[3:5] == ["11", "4"]
    by_model = errors.set_index("model")["error"]
    for i, model in enumerate(protocol.MODELS):
        assert ours[5 + i].strip("*").rstrip("†‡") == f"{100 * by_model[model]:.2f}%", model
    assert paper[1] == "paper (100 splits)"
    assert paper[5:] == ["17.00%", "16.31%", "**16.09%†‡**", "18.66%", "18.19%", "17.78%", "17.50%", "16.38%",
                         "37.59%"]
    # the four data sets without a drokit copy are listed, not silently dropped
    for name in protocol.NOT_SHIPPED:
        assert f"| {name}" in readme and "paper only (not shipped)" in readme


def test_render_only_rebuilds_the_report(run):
    before = run.readme.read_text()
    again = selvi2022.main(["--render-only", "--out", str(run.readme.parent)])
    assert again.readme.read_text() == before


def test_sizes_say_what_the_full_protocol_costs(run):
    """This run: 1 data set x 1 split x 2 folds x 19 candidates (LR 1, r-LR 2, DRO 2 x 2, r-DRO 2 x 2 x 2, MT 2 x 2);
    ``--full``: 100 splits x 5 folds x 86 (LR 1, r-LR 7, DRO 7 x 2, r-DRO 5 x 5 x 2, MT 7 x 2), all rows."""
    readme = run.readme.read_text()
    scale = 100 * 5 * 86 / (1 * 2 * 19)
    assert f"`--full` makes about {scale:,.0f}x as many fits on all rows instead of the row cap, at least " in readme
    assert "`python -m reproductions.selvi2022 --full --backend dask --scheduler ADDRESS --resume`" in readme
    cfg = protocol.parse_args(["--full"])
    assert reproductions_report.full_protocol_note("x", cfg, 1.0, 60.0, True) == \
        "This report comes from the paper's protocol (`--full`)."


def test_lr_error_recomputed(run):
    X, y = protocol.load_selvi2022("hayes-roth")
    plan = protocol.make_splits(len(X), run.config)[0]
    assert len(plan.train) == 64 and len(plan.test) == 16 and not set(plan.train) & set(plan.test)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.0)).fit(X.iloc[plan.train], y.iloc[plan.train])
    decision = clf.decision_function(X.iloc[plan.test])
    expected = np.mean((decision >= -TIE_TOL).astype(int) != y.iloc[plan.test].to_numpy())
    errors = pd.read_csv(run.readme.parent / "errors.csv").set_index("model")
    assert errors.loc["LR", "error"] == pytest.approx(expected, abs=1e-12)
    assert errors.loc["LR", "n_train"] == 64 and errors.loc["LR", "n_test"] == 16


def test_choices_minimise_cv_error(run):
    out = run.readme.parent
    cv = pd.read_csv(out / "cv.csv")
    errors = pd.read_csv(out / "errors.csv")
    for row in errors[errors["model"] != "LR"].itertuples():
        part = cv[(cv["model"] == row.model) & (cv["split"] == row.split)]
        best = part["cv_error"].min()
        tied = part[np.isclose(part["cv_error"], best, atol=1e-12)]
        top = tied.sort_values(["gamma", "eps"], ascending=False).iloc[0]
        assert (row.eps, row.gamma) == (top["eps"], top["gamma"]), row.model
        assert row.cv_error == pytest.approx(best)
    assert len(cv[cv["model"] == "r-DRO k=m"]) == 4          # 2 radii x 2 gammas
    assert len(cv[cv["model"] == "r-LR"]) == 2


def test_models_metric_and_paths():
    X, y = protocol.load_selvi2022("hayes-roth")
    m = X.shape[1]
    est = protocol.Selvi2022Model(model="DRO k=m", eps=0.01).build(m)
    metric = est.ambiguity.metric
    assert metric.kappa == pytest.approx(m / (2 * m))                # kappa / (m + kappa) with kappa = m
    assert metric.categorical.weights == pytest.approx(1 / (2 * m))
    assert protocol.Selvi2022Model(model="r-DRO k=1", eps=0.01, gamma=0.1).build(m).l1_penalty == pytest.approx(0.05)
    assert protocol.Selvi2022Model(model="DRO k=1", eps=0.01, gamma=0.1).build(m).l1_penalty == 0.0
    mt = protocol.Selvi2022Model(model="MT k=1", eps=0.01).fit(X, y)
    assert mt.result_.method == "closed_form"
    assert mt.estimator_.n_features_in_ == 11                          # the k dummies, as numerical columns
    dro = protocol.Selvi2022Model(model="DRO k=1", eps=0.01).fit(X, y)
    assert dro.result_.method in ("monolithic", "cutting_plane") and dro.result_.status == "optimal"
    # the fitted DRO objective is the worst-case risk under the normalized metric
    wc = dk.worst_case(dro.estimator_, X, y)
    assert wc.value == pytest.approx(dro.result_.objective, rel=1e-5, abs=1e-6)


def test_one_sided_p_matches_formula():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.1, 0.2, 12), rng.uniform(0.1, 0.2, 12)
    d = a - b
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    assert one_sided_p(a, b) == pytest.approx(stats.t.cdf(t, d.size - 1), rel=1e-10)
    assert one_sided_p(a, b) + one_sided_p(b, a) == pytest.approx(1.0)
    assert one_sided_p(a, a) == 1.0                                  # no difference: never significant
    assert one_sided_p(a - 0.01, a) == 0.0                           # constant improvement
    assert one_sided_p(a[:1], b[:1]) == 1.0                          # one pair: no test


def test_significance_marks_constructed():
    rng = np.random.default_rng(1)
    n = 30
    lr = 0.20 + rng.normal(0, 0.02, n)

    def frame(**cols):
        base = {m: lr + 0.03 for m in protocol.MODELS}
        base["LR"] = lr
        base.update(cols)
        return pd.DataFrame(base)

    # a proposed model clearly better than everything: dagger and double dagger
    errs = frame(**{"DRO k=m": lr - 0.02 + rng.normal(0, 0.002, n)})
    assert report.significance_marks(errs) == {"DRO k=m": "†‡"}
    # another proposed model is second: it is excluded, the second best is LR (a non-proposed model)
    errs = frame(**{"DRO k=m": lr - 0.02 + rng.normal(0, 0.002, n),
                    "DRO k=1": lr - 0.0199 + rng.normal(0, 0.002, n)})
    assert report.second_best(errs, "DRO k=m") == "LR"
    assert report.significance_marks(errs) == {"DRO k=m": "†‡"}
    # ... but the best non-proposed model (r-LR) is as good: dagger only
    rlr = lr - 0.02 + rng.normal(0, 0.01, n)
    errs = frame(**{"DRO k=m": rlr - 0.0005 + rng.normal(0, 0.01, n), "r-LR": rlr})
    assert errs.mean().idxmin() == "DRO k=m"
    assert report.second_best(errs, "DRO k=m") == "r-LR"
    assert report.significance_marks(errs) == {"DRO k=m": "†"}
    # a non-proposed winner is compared with every other model, proposed ones included
    errs = frame(**{"MT k=1": lr - 0.02 + rng.normal(0, 0.002, n), "DRO k=1": lr - 0.019 + rng.normal(0, 0.01, n)})
    assert report.second_best(errs, "MT k=1") == "DRO k=1"
    # LR winning gets no dagger (nothing to beat), and an unclear win gets no marks
    errs = frame()
    assert report.significance_marks(errs) == {"LR": "‡"}
    noise = rng.normal(0, 0.03, n)
    errs = frame(**{"r-LR": lr - 0.001 + noise - noise.mean()})     # lower mean, but not significantly
    assert report.significance_marks(errs) == {"r-LR": ""}
    # tied winners are all marked (here both significantly better than LR and than the rest)
    better = lr - 0.02 + rng.normal(0, 0.002, n)
    assert report.significance_marks(frame(**{"MT k=1": better, "MT k=m": better})) == \
        {"MT k=1": "†", "MT k=m": "†"}


def test_selvi2022_preprocessing():
    """N, k, m of Table 1 (selvi2022 Appendix D), which drokit's default "paper" preprocessing (sun2025)
    does not give for breast-cancer, balance-scale, hayes-roth and audiology."""
    expected = {"breast-cancer": (277, 32, 9), "balance-scale": (625, 16, 4), "hayes-roth": (160, 11, 4),
                "audiology": (226, 92, 69), "voting": (435, 32, 16), "lymphography": (148, 41, 18)}
    for name, sizes in expected.items():
        X, y = protocol.load_selvi2022(name)
        assert protocol.dataset_sizes(X) == sizes, name
        assert not X.isna().any().any()
        _, raw = dk.datasets.load(name, preprocessing="raw")
        if name != "breast-cancer":
            assert y.sum() == raw.value_counts().max(), name                # y = 1: the majority class
    X, y = protocol.load_selvi2022("balance-scale")
    assert y.name == "class=R" and y.sum() == 288
    assert report.PUBLISHED["breast-cancer"].N == 277 and report.PUBLISHED["audiology"].marks["r-DRO k=1"] == "†‡"


def test_dask_backend_and_resume_give_the_same_errors(run, tmp_path, monkeypatch):
    """The protocol's sweeps on a Dask LocalCluster (``--backend dask``) give the loky run's test errors; a run that
    crashed after its data set finished is resumed (``--resume``) from the saved data set without fitting again,
    with the same errors."""
    pytest.importorskip("distributed")
    expected = pd.read_csv(run.readme.parent / "errors.csv")
    on_dask = timed_main(selvi2022, [*ARGS[:-5], "--n-jobs", "2", "--backend", "dask", "--seed", "7", "--quiet"],
                         tmp_path / "dask")
    pd.testing.assert_frame_equal(pd.read_csv(on_dask.readme.parent / "errors.csv")[["model", "error"]],
                                  expected[["model", "error"]])

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("the report was not written")
    with monkeypatch.context() as m:
        m.setattr(reproductions_report, "record_provenance", crash)
        with pytest.raises(KeyboardInterrupt):
            timed_main(selvi2022, ARGS, tmp_path / "resumed")
    assert (tmp_path / "resumed" / "partial" / "hayes-roth.pkl").is_file()

    def no_fit(*args, **kwargs):
        raise AssertionError("a saved data set was fitted again")
    monkeypatch.setattr(selvi2022, "run_dataset", no_fit)
    resumed = timed_main(selvi2022, [*ARGS, "--resume"], tmp_path / "resumed")
    pd.testing.assert_frame_equal(pd.read_csv(resumed.readme.parent / "errors.csv")[["model", "error"]],
                                  expected[["model", "error"]])
    assert not (tmp_path / "resumed" / "partial").exists()
