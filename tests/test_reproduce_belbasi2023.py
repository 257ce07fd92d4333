"""reproductions.belbasi2023 (``python -m reproductions.belbasi2023``): the belbasi2023 Tables 2-4 reproduction
runs end to end and its parts are right.

One tiny run (balance-scale subsampled to 100 rows: 80 training / 20 test rows, and the half variant with
50 rows; one split, 2 folds, two values per grid, the hinge and smooth hinge losses, n_jobs=1; a few
seconds) writes the report into a temporary folder.  The checks recompute its numbers independently:

* the README's tables have our row (the mean errors of ``errors.csv``) next to the published row, and the
  paper-only rows (primacy) and the missing regression tables are stated;
* Nom's test error equals a plain ``dk.DROClassifier`` at radius 0 fitted on the same training rows;
* every chosen hyper-parameter minimises the CV error in ``cv.csv`` (ties: largest alpha, then radius),
  and models sharing a radius-0 problem get the same test error;
* the models use the stated metric (printed, or normalized by K + M_x + kappa_y), l2 weight, numerical
  standardization and compile paths (ConF: closed form; MixF: the cutting plane for logistic / smooth
  hinge, drokit's auto choice for hinge);
* the marks follow the paper's rule on constructed error matrices (pure-function tests);
* the data sizes (N, M_x, M_z, K) are the stated ones;
* ``--render-only`` rebuilds the README and keeps the discussion block.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

import drokit as dk

import reproductions.belbasi2023 as belbasi2023
from reproductions.belbasi2023 import comparison, models, protocol, published
from reproductions.protocol import TIE_TOL
from reproductions.report import load_run
from tests.example_scripts import timed_main

ARGS = ["--datasets", "balance-scale", "--max-rows", "100", "--splits", "1", "--folds", "2",
        "--radii", "0", "0.1", "--conf-radii", "0", "0.1", "--alphas", "0", "0.1", "--rmixf-radii", "0", "0.1",
        "--rmixf-alphas", "0", "0.1", "--losses", "hinge", "smooth_hinge", "--n-jobs", "1", "--seed", "7",
        "--quiet"]
LOSSES = ("hinge", "smooth_hinge")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The tiny run of the module docstring."""
    return timed_main(belbasi2023, ARGS, tmp_path_factory.mktemp("belbasi2023"))


def _rows(readme: str, table_heading: str, first_cell: str, n: int = 4) -> list:
    """The cells of the ``n`` table lines from the one starting with ``first_cell`` after ``table_heading``."""
    lines = readme[readme.index(table_heading):].splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith(f"| {first_cell} |"))
    return [[c.strip() for c in lines[j].strip().strip("|").split("|")] for j in range(i, i + n)]


def _errors(run) -> pd.DataFrame:
    return pd.read_csv(run.readme.parent / "errors.csv")


def test_report_and_tables(run):
    out = run.readme.parent
    assert [r.variant for r in run.runs] == ["full", "half"] and not any(r.error for r in run.runs)
    for name in ("README.md", "errors.csv", "cv.csv", "run.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    readme = run.readme.read_text()
    for heading in ("## Table 3: hinge loss", "## Table 4: smooth hinge loss", "## Protocol", "## Runtime",
                    "## Comparison with the paper (computed)", "## Discussion", "## Tables 5–7 (regression)"):
        assert heading in readme
    assert "## Table 2" not in readme                                   # logistic not run
    assert "--max-rows 100" in readme                                   # the exact command
    for name in protocol.REGRESSION_SETS:
        assert name in readme
    errors = _errors(run)
    assert len(errors) == 2 * 2 * len(protocol.MODELS)                 # variants x losses x models, 1 split
    assert set(errors["loss"]) == set(LOSSES) and set(errors["model"]) == set(protocol.MODELS)
    for loss, table in (("hinge", 3), ("smooth_hinge", 4)):
        full, paper_full, half, paper_half = _rows(readme, f"## Table {table}:", "balance-scale")
        assert full[1].startswith("✖") and half[1].startswith("✓") and half[0] == ""
        assert full[2] == "ours (1 split)" and full[3] == "625 (→100)" and half[3] == "625 (→50)"
        assert full[4:7] == ["0", "16", "4"]
        for cells, variant in ((full, "full"), (half, "half")):
            ours = errors[(errors["loss"] == loss) & (errors["variant"] == variant)].set_index("model")["error"]
            for i, model in enumerate(protocol.MODELS):
                assert cells[7 + i].strip("*").rstrip("†‡") == f"{100 * ours[model]:.2f}%", (loss, variant, model)
        assert paper_full[2] == "paper (100 splits)" and paper_full[3:7] == ["625", "0", "16", "4"]
    hinge_full = _rows(readme, "## Table 3:", "balance-scale")[1]
    assert hinge_full[7:] == ["4.20%", "4.08%", "4.20%", "3.36%", "**3.08%†‡**", "3.28%", "3.88%", "4.20%"]
    # the set without a drokit copy is listed with both variants, not silently dropped
    primacy = _rows(readme, "## Table 4:", "primacy", 2)
    assert primacy[0][2] == primacy[1][2] == "paper only (not shipped)"
    assert primacy[0][7:] == ["13.51%", "**12.99%†**", "13.51%", "13.13%", "13.43%", "13.21%", "13.66%", "14.18%"]


def test_render_only_rebuilds_the_report(run, tmp_path):
    before = run.readme.read_text()
    again = belbasi2023.main(["--render-only", "--out", str(run.readme.parent)])
    assert again.readme.read_text() == before
    # the hand-written discussion block survives a rerun of the report
    copy = tmp_path / "copy"
    shutil.copytree(run.readme.parent, copy)
    text = before.replace("_No discussion written for this run yet._", "Our hand-written words.")
    (copy / "README.md").write_text(text)
    belbasi2023.main(["--render-only", "--out", str(copy)])
    assert (copy / "README.md").read_text() == text


def test_nom_error_recomputed(run):
    X, y = protocol.load_belbasi2023("balance-scale")
    errors = _errors(run)
    for variant, n_rows in (("full", 100), ("half", 50)):
        plan = protocol.make_splits(len(X), run.config, variant)[0]
        assert len(plan.train) + len(plan.test) == n_rows and len(plan.test) == n_rows // 5
        assert not set(plan.train) & set(plan.test)
        for loss in LOSSES:
            clf = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=0.0))
            clf.fit(X.iloc[plan.train], y.iloc[plan.train])
            decision = clf.decision_function(X.iloc[plan.test])
            expected = np.mean((decision >= -TIE_TOL).astype(int) != y.iloc[plan.test].to_numpy())
            row = errors[(errors["variant"] == variant) & (errors["loss"] == loss) & (errors["model"] == "Nom")]
            assert row["error"].item() == pytest.approx(expected, abs=1e-12), (variant, loss)
            assert row["n_train"].item() == len(plan.train) and row["n_test"].item() == len(plan.test)
    # the half variant is a random half of the full variant's rows
    full, half = (protocol.make_splits(len(X), run.config, v)[0] for v in ("full", "half"))
    assert set(half.train) | set(half.test) < set(full.train) | set(full.test)


def test_choices_minimise_cv_error(run):
    out = run.readme.parent
    cv = pd.read_csv(out / "cv.csv")
    errors = _errors(run)
    for row in errors[errors["model"] != "Nom"].itertuples():
        part = cv[(cv["variant"] == row.variant) & (cv["loss"] == row.loss) & (cv["model"] == row.model)
                  & (cv["split"] == row.split)]
        best = part["cv_error"].min()
        tied = part[np.isclose(part["cv_error"], best, atol=1e-12)]
        top = tied.sort_values(["alpha", "eps"], ascending=False).iloc[0]
        assert (row.eps, row.alpha) == (top["eps"], top["alpha"]), (row.variant, row.loss, row.model)
        assert row.cv_error == pytest.approx(best)
        assert row.n_tied == len(tied)
    one = cv[(cv["variant"] == "full") & (cv["loss"] == "hinge")]
    assert len(one[one["model"] == "r-MixF k=K"]) == 4 and len(one[one["model"] == "r-Nom"]) == 2
    # a radius-0 candidate is the shared ERM problem: MixF / ConF at radius 0 score like Nom / r-Nom at alpha 0
    nom = one[(one["model"] == "r-Nom") & (one["alpha"] == 0)]["cv_error"].item()
    for model in ("MixF k=1", "MixF k=K", "ConF k=1", "ConF k=K", "r-MixF k=K"):
        shared = one[(one["model"] == model) & (one["eps"] == 0) & (one["alpha"] == 0)]
        assert shared["cv_error"].item() == nom, model
    # and their test fits too: every model that chose radius 0 and alpha 0 has Nom's test error
    for (variant, loss), part in errors.groupby(["variant", "loss"]):
        nominal = part[part["model"] == "Nom"]["error"].item()
        assert (part[(part["eps"] == 0) & (part["alpha"] == 0)]["error"] == nominal).all()


def test_fit_sharing_rule():
    assert protocol.fit_params("ConF k=K", 0.0, 0.0) == protocol.fit_params("Nom", 0.0, 0.0)
    assert protocol.fit_params("r-MixF k=K", 0.0, 0.05) == protocol.fit_params("r-Nom", 0.3, 0.05)  # r-Nom: no radius
    assert protocol.fit_params("MixF k=1", 0.1, 0.5) == {"design": "mixed", "kappa_y": "1", "eps": 0.1, "alpha": 0.0}
    assert protocol.fit_params("ConF k=K", 0.1, 0.0)["design"] == "conf"
    assert protocol.fit_params("r-MixF k=K", 0.1, 0.0) == protocol.fit_params("MixF k=K", 0.1, 0.0)


def test_models_metric_and_paths():
    X, y = protocol.load_belbasi2023("credit-approval")
    rows = np.random.default_rng(0).choice(len(X), 80, replace=False)
    X, y = X.iloc[rows].reset_index(drop=True), y.iloc[rows].reset_index(drop=True)
    N, Mx, Mz, K = protocol.dataset_sizes(X)
    assert (Mx, K) == (6, 9)
    # the printed metric: l1 on x, 1 per changed categorical feature, kappa_y = K for the label
    mixf = models.Belbasi2023Model(loss="logistic", kappa_y="K", eps=0.1).build(K, Mx)
    metric = mixf.ambiguity.metric
    assert metric.kappa == pytest.approx(K) and metric.numerical.p == 1 and metric.numerical.weights is None
    assert metric.categorical.weights is None and metric.categorical.p == 1          # unit weights: a count
    assert mixf.method == "auto" and mixf.method_options is None      # no l2 term, radius 0.1: drokit's defaults
    for eps, alpha in ((1e-5, 0.0), (0.1, 0.01)):                      # tiny radius or l2 term: no phase 1
        fast = models.Belbasi2023Model(loss="logistic", kappa_y="K", eps=eps, alpha=alpha).build(K, Mx)
        assert fast.method == "cutting_plane" and fast.method_options["phase_one"] is False
        assert fast.method_options["cut_family"] == "configuration"
    assert models.Belbasi2023Model(loss="hinge", eps=1e-5, alpha=0.01).build(K, Mx).method == "auto"
    assert models.Belbasi2023Model(eps=1e-5, cp_options="defaults").build(K, Mx).method == "auto"
    assert models.Belbasi2023Model(eps=0.1, cp_options="fast").build(K, Mx).method == "cutting_plane"
    # --normalized-metric divides by K + M_x + kappa_y
    norm = models.Belbasi2023Model(kappa_y="1", eps=0.1, normalized=True).build(K, Mx).ambiguity.metric
    assert norm.kappa == pytest.approx(1 / (K + Mx + 1))
    assert norm.categorical.weights == pytest.approx(1 / (K + Mx + 1))
    assert norm.numerical.weights == pytest.approx(1 / (K + Mx + 1))
    # r-MixF: drokit's l2_penalty is alpha
    assert models.Belbasi2023Model(eps=0.1, alpha=0.05).build(K, Mx).l2_penalty == pytest.approx(0.05)
    # ConF: the dummies as numerical features -> closed form on M_x + M_z columns
    conf = models.Belbasi2023Model(loss="smooth_hinge", design="conf", kappa_y="K", eps=0.1).fit(X, y)
    assert conf.result_.method == "closed_form" and conf.estimator_.n_features_in_ == Mx + Mz
    assert conf.estimator_.ambiguity.metric.categorical is None
    # MixF: the declared paths (drokit's auto choice: the cutting plane for the smooth losses)
    fit = models.Belbasi2023Model(loss="smooth_hinge", kappa_y="K", eps=0.1).fit(X, y)
    assert fit.result_.method == "cutting_plane" and fit.result_.status == "optimal"
    hinge = models.Belbasi2023Model(loss="hinge", eps=0.1).fit(X, y)
    assert hinge.estimator_.method == "auto" and hinge.result_.method in ("box", "monolithic", "cutting_plane")
    assert models.Belbasi2023Model(loss="hinge").fit(X, y).result_.method == "erm"
    # the fitted MixF objective is the worst-case risk under the printed metric, on the standardized data
    wc = dk.worst_case(fit.estimator_, fit._design(X), y)
    assert wc.value == pytest.approx(fit.result_.objective, rel=1e-3, abs=1e-5)


def test_standardization_uses_the_fit_rows():
    X, y = protocol.load_belbasi2023("credit-approval")
    train = np.arange(0, 300)
    model = models.Belbasi2023Model(loss="hinge").fit(X.iloc[train], y.iloc[train])
    numerical = ["A2", "A3", "A8", "A11", "A14", "A15"]
    assert model.numerical_ == numerical
    assert model.mean_ == pytest.approx(X.iloc[train][numerical].mean().to_numpy())
    assert model.scale_ == pytest.approx(X.iloc[train][numerical].std().to_numpy())
    Z = X.copy()
    Z[numerical] = ((X[numerical] - X.iloc[train][numerical].mean()) / X.iloc[train][numerical].std()).fillna(0.0)
    assert X[numerical].isna().any().any() and not Z[numerical].isna().any().any()
    plain = dk.DROClassifier(loss="hinge", ambiguity=dk.Wasserstein(radius=0.0)).fit(Z.iloc[train], y.iloc[train])
    np.testing.assert_allclose(model.decision_function(X.iloc[300:]), plain.decision_function(Z.iloc[300:]),
                               rtol=1e-6, atol=1e-6)


def _matrix(n: int = 30, **cols) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    base = 0.20 + rng.normal(0, 0.02, n)
    frame = {m: base + 0.03 for m in protocol.MODELS}
    frame.update(cols)
    return pd.DataFrame(frame)[list(protocol.MODELS)]


def test_marks_constructed():
    rng = np.random.default_rng(2)
    n = 30
    base = 0.20 + rng.normal(0, 0.02, n)

    def clearly_better(shift=0.02):
        return base - shift + rng.normal(0, 0.002, n)

    # a MixF model clearly better than everything: dagger and double dagger
    assert comparison.significance_marks(_matrix(**{"MixF k=K": clearly_better()})) == {"MixF k=K": "†‡"}
    # better than Nom but not than r-Nom (as good): no dagger; still better than both ConF: double dagger
    rnom = base - 0.02 + rng.normal(0, 0.01, n)
    errs = _matrix(**{"r-MixF k=1": rnom - 0.0005 + rng.normal(0, 0.01, n), "r-Nom": rnom})
    assert errs.mean().idxmin() == "r-MixF k=1"
    assert comparison.significance_marks(errs) == {"r-MixF k=1": "‡"}
    # the double dagger is tested against the better (lower-mean) ConF only
    conf = base - 0.02 + rng.normal(0, 0.01, n)
    errs = _matrix(**{"MixF k=1": conf - 0.0005 + rng.normal(0, 0.01, n), "ConF k=K": conf})
    assert comparison.better_conf(errs) == "ConF k=K"
    assert comparison.significance_marks(errs) == {"MixF k=1": "†"}
    # a nominal or ConF winner gets no marks (the paper marks MixF / r-MixF winners only)
    assert comparison.significance_marks(_matrix(**{"r-Nom": clearly_better()})) == {}
    assert comparison.significance_marks(_matrix(**{"ConF k=1": clearly_better()})) == {}
    # an unclear win: no marks
    noise = rng.normal(0, 0.03, n)
    errs = _matrix(**{"MixF k=1": base + 0.03 - 0.001 + noise - noise.mean()})
    assert comparison.significance_marks(errs) == {"MixF k=1": ""}
    # tied winners are all marked, a tie with a non-MixF model marks the MixF model(s) only
    better = clearly_better()
    assert comparison.significance_marks(_matrix(**{"MixF k=1": better, "r-MixF k=K": better})) == \
        {"MixF k=1": "†‡", "r-MixF k=K": "†‡"}
    assert comparison.significance_marks(_matrix(**{"MixF k=1": better, "ConF k=1": better})) == {"MixF k=1": "†"}


def test_published_tables():
    assert len(published.PUBLISHED) == 3 * 8 * 2
    pub = published.PUBLISHED[("logistic", "balance-scale", "full")]
    assert pub.errors["MixF k=K"] == pytest.approx(0.0040) and pub.marks["MixF k=K"] == "†‡"     # printed "††"
    assert published.PUBLISHED[("logistic", "balance-scale", "half")].marks["MixF k=1"] == "†"
    assert published.PUBLISHED[("hinge", "spect", "half")].errors["r-Nom"] == pytest.approx(0.22031)
    # the paper marks only MixF / r-MixF models, and (one exception) only the lowest error of a row
    for key, pub in published.PUBLISHED.items():
        for model, mark in pub.marks.items():
            if mark:
                assert model in protocol.PROPOSED
                lowest = pub.errors[model] == min(pub.errors.values())
                assert lowest or key == ("logistic", "tic-tac-toe", "half"), key     # 1.70%† next to 1.66%


def test_data_sizes():
    """N, M_x, M_z, K of our preprocessing (the paper's: 625/0/16/4, 277/0/42/9, 690/6/36/9, 539/19/43/14,
    148/0/42/18, 267/0/22/22, 958/0/18/9)."""
    expected = {"balance-scale": (625, 0, 16, 4), "breast-cancer": (277, 0, 32, 9),
                "credit-approval": (690, 6, 36, 9), "cylinder-bands": (540, 19, 43, 14),
                "lymphography": (148, 0, 41, 18), "spect": (267, 0, 22, 22), "tic-tac-toe": (958, 0, 18, 9)}
    assert tuple(expected) == protocol.DATASETS
    for name, sizes in expected.items():
        X, y = protocol.load_belbasi2023(name)
        assert protocol.dataset_sizes(X) == sizes, name
        categorical = models.categorical_columns(X)
        assert not X[categorical].isna().any().any()
        raw_X, raw_y = dk.datasets.load(name, preprocessing="raw")
        labels = raw_y[~raw_X.isna().any(axis=1)] if name == "breast-cancer" else raw_y     # its 9 rows dropped
        assert y.sum() == labels.value_counts().max() and set(y) == {0, 1}, name     # y = 1: the majority class
    X, y = protocol.load_belbasi2023("balance-scale")
    assert y.name == "class=R" and y.sum() == 288


def test_render_reads_errors_as_exact_fractions(run, tmp_path):
    """--render-only snaps the CSV's rounded test errors back to (misclassified rows) / n_test, so that ties
    between models (bold, marks, winners) are the run's."""
    copy = tmp_path / "coarse"
    shutil.copytree(run.readme.parent, copy)
    errors = pd.read_csv(copy / "errors.csv")
    errors["error"] = errors["error"].map(lambda e: float(f"{e:.5g}"))       # coarser than the file's digits
    errors.to_csv(copy / "errors.csv", index=False)
    _, _, loaded, _ = load_run(copy, protocol.Config)
    k = loaded["error"] * loaded["n_test"]
    assert np.all(k == np.round(k)) and np.allclose(loaded["error"], _errors(run)["error"], atol=1e-4)
    assert (loaded["error"] == np.round(k) / loaded["n_test"]).all()
