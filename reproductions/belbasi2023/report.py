"""belbasi2023's report: our Tables 2-4 next to the published ones, the choices, runtimes and fit status, the
protocol header, and the report files (``--render-only`` too)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Sequence

import numpy as np
import pandas as pd

from reproductions.belbasi2023.comparison import comparison_section, finished, significance_marks, verdict_section
from reproductions.belbasi2023.models import PHASE_ONE_MIN_RADIUS
from reproductions.belbasi2023.protocol import (LABEL, LOSS_LABEL, LOSSES, MODEL_SPEC, MODELS, NOT_SHIPPED,
                                                PAPER_ALPHAS, PAPER_RADII, PRESETS, REGRESSION_SETS, TABLE_NUMBER,
                                                VARIANT_LABEL, VARIANTS, Config, VariantRun, parse_args)
from reproductions.belbasi2023.published import PUBLISHED, PUBLISHED_SIZES, Published
from reproductions.protocol import CP_OPTIONS
from reproductions.report import (finish_report, fmt_pct, full_protocol_note, full_protocol_scale, listed, md_table,
                                  most_frequent, open_report, paper_protocol, run_facts, section)
from reproductions.report import preset_row as common_preset_row
from reproductions.stats import standard_errors

def _cell(error: float, mark: str, bold: bool) -> str:
    text = fmt_pct(error) + mark
    return f"**{text}**" if bold else text


def _published_cells(pub: Published) -> List[str]:
    best = min(pub.errors.values())
    return [_cell(pub.errors[m], pub.marks[m], pub.errors[m] == best) for m in MODELS]


def _published_row(pub: Published, source: str) -> List[object]:
    N, Mx, Mz, K = PUBLISHED_SIZES[pub.name]
    return ["", VARIANT_LABEL[pub.variant], source, f"{N:,}", Mx, Mz, K] + _published_cells(pub)


def main_table(runs: Sequence[VariantRun], loss: str) -> str:
    """Table 2, 3 or 4: per data set and variant our mean test errors (bold: the lowest; marks as in the
    paper) and the published row underneath; the not shipped set's published rows at the end."""
    headers = ["data set", "reduced?", "source", "N", "M_x", "M_z", "K"] + [LABEL[m] for m in MODELS]
    rows = []
    for run in runs:
        pub = PUBLISHED[(loss, run.name, run.variant)]
        first = run.name if run.variant == "full" or not any(
            r.name == run.name and r.variant == "full" for r in runs) else ""
        if run.errors is not None and not run.error and loss in set(run.errors["loss"]):
            matrix = run.matrix(loss)
            means = matrix.mean()
            marks = significance_marks(matrix) if set(MODELS) <= set(matrix.columns) else {}
            best = means.min()
            N, Mx, Mz, K = run.sizes
            n_text = f"{N}" if run.n_rows_used == N else f"{N} (→{run.n_rows_used})"
            cells = [_cell(means[m], marks.get(m, ""), abs(means[m] - best) <= 1e-12) if m in means else "–"
                     for m in MODELS]
            splits = f"{len(matrix)} split" + ("s" if len(matrix) != 1 else "")
            rows.append([first, VARIANT_LABEL[run.variant], f"ours ({splits})", n_text, Mx, Mz, K] + cells)
        else:
            rows.append([first, VARIANT_LABEL[run.variant], "ours: FAILED", "", "", "", ""] + [""] * len(MODELS))
        rows.append(_published_row(pub, "paper (100 splits)"))
    for name in NOT_SHIPPED:
        for variant in VARIANTS:
            row = _published_row(PUBLISHED[(loss, name, variant)], "paper only (not shipped)")
            row[0] = name if variant == "full" else ""
            rows.append(row)
    return md_table(headers, rows, "lll" + "r" * (len(headers) - 3))


def spread_table(runs: Sequence[VariantRun], loss: str) -> str:
    """Standard error of our mean test errors (std over splits / sqrt(splits))."""
    headers = ["data set", "reduced?"] + [LABEL[m] for m in MODELS]
    rows = []
    for run in finished(runs):
        matrix = run.matrix(loss)
        se = standard_errors(matrix)
        rows.append([run.name, VARIANT_LABEL[run.variant]] + [fmt_pct(se.get(m, np.nan)) for m in MODELS])
    return md_table(headers, rows, "ll" + "r" * len(MODELS))


def choice_table(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """How often each hyper-parameter value was chosen (over splits), per loss, data set, variant and model."""
    headers = ["loss", "data set", "reduced?"] + [LABEL[m] for m in MODELS if m != "Nom"]
    rows = []
    for loss in losses:
        for run in finished(runs):
            part = run.errors[run.errors["loss"] == loss]
            cells = []
            for model in MODELS[1:]:
                spec = MODEL_SPEC[model]
                labels = [", ".join(([f"ε={r.eps:g}"] if spec.uses_eps else [])
                                    + ([f"α={r.alpha:g}"] if spec.uses_alpha else []))
                          for r in part[part["model"] == model].itertuples()]
                cells.append(most_frequent(labels))
            rows.append([loss, run.name, run.variant] + cells)
    return md_table(headers, rows, "l" * len(headers))


def ceiling_line(runs: Sequence[VariantRun], cfg: Config) -> str:
    """How often the largest radius of a model's grid was chosen (over every loss, data set, variant and split): a
    grid whose top is chosen most often has not bracketed the best radius -- a hint that the metric's scale and the
    grid disagree (issue 26; ``--normalized-metric`` divides the metric by K + M_x + kappa_y)."""
    shares = []
    for model in ("MixF k=1", "MixF k=K", "ConF k=1", "ConF k=K"):
        top = max(getattr(cfg, cfg.GRIDS[model]["eps"]))
        chosen = pd.concat([r.errors[r.errors["model"] == model]["eps"] for r in finished(runs)])
        if len(chosen):
            shares.append(f"{LABEL[model]} {100 * float(np.mean(np.isclose(chosen, top))):.0f}% (ε={top:g})")
    metric = "normalized (÷ K + M_x + κ_y)" if cfg.normalized else "printed"
    return (f"The largest radius of the grid was chosen in: {'; '.join(shares)} of the CV choices ({metric} metric)."
            if shares else "")


def runtime_tables(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """Wall clock per (data set, variant) and the mean seconds of one test fit per loss and model."""
    ok = finished(runs)
    wall = md_table(["data set", "reduced?", "rows used", "train rows", "distinct CV fits", "CV sweep s",
                     "test fits s", "total s"],
                    [[r.name, r.variant, r.n_rows_used, int(r.errors["n_train"].iloc[0]), r.n_cv_fits,
                      f"{r.cv_seconds:.0f}", f"{r.test_seconds:.0f}", f"{r.seconds:.0f}"] for r in ok], "ll" + "r" * 6)
    if not ok:
        return wall
    errors = pd.concat([r.errors for r in ok], ignore_index=True)
    per = errors.groupby(["loss", "model"])["fit_seconds"].mean()
    fit = md_table(["loss"] + [LABEL[m] for m in MODELS],
                   [[loss] + [f"{per.get((loss, m), np.nan):.2f}" for m in MODELS] for loss in losses])
    return "\n".join([wall, "", "Mean seconds of one test fit (refit on a split's training rows at the chosen "
                      "hyper-parameters), over data sets, variants and splits:", "", fit])


def status_lines(runs: Sequence[VariantRun]) -> List[str]:
    """Failed and uncertified fits per (data set, variant)."""
    out = []
    for run in runs:
        head = f"{run.name} ({run.variant})"
        if run.error:
            out.append(f"- **{head}: FAILED**: {run.error}")
            continue
        line = (f"- {head}: distinct CV fits failed {run.n_cv_failed}, not certified optimal "
                f"{run.n_cv_uncertified} of {run.n_cv_fits}" + (f" ({run.uncertified_where})" if run.uncertified_where
                                                               else ""))
        e = run.errors
        bad = e[(e["fit_error"].fillna("") != "") | ((e["status"].fillna("") != "") & (e["status"] != "optimal"))]
        if len(bad):
            line += "; test fits not certified: " + ", ".join(
                f"{r.loss} split {r.split} {LABEL[r.model]} ε={r.eps:g} ({r.status or r.fit_error})"
                for r in bad.itertuples())
        else:
            line += "; every test fit certified optimal"
        out.append(line)
    return out


def sizes_section(cfg: Config) -> str:
    """This run's protocol sizes next to the default preset and the paper's."""
    def preset_row(label, key, fmt=str):
        return common_preset_row(cfg, PRESETS, label, key, fmt)

    def rows_text(max_rows):
        return "all (half: ⌊N/2⌋)" if max_rows <= 0 else f"≤ {max_rows} (half: ≤ {max_rows // 2})"

    rows = [preset_row("splits", "splits"), preset_row("CV folds", "folds"),
            ["rows per split", rows_text(cfg.max_rows), rows_text(PRESETS["default"]["max_rows"]), rows_text(0)],
            ["MixF radii (both κ)", listed(cfg.radii), listed(PAPER_RADII), listed(PAPER_RADII)],
            ["ConF radii (both κ)", listed(cfg.conf_radii), listed(PAPER_RADII), listed(PAPER_RADII)],
            ["r-Nom α", listed(cfg.alphas), listed(PAPER_ALPHAS), listed(PAPER_ALPHAS)],
            preset_row("r-MixF radii", "rmixf_radii", listed), preset_row("r-MixF α", "rmixf_alphas", listed),
            ["losses", ", ".join(cfg.losses), ", ".join(LOSSES), ", ".join(LOSSES)],
            ["variants", ", ".join(cfg.variants), "full, half", "full, half"],
            ["ground metric", "normalized ÷ (K + M_x + κ)" if cfg.normalized else "as printed", "as printed",
             "as printed"]]
    return md_table(["setting", "this run", "default", "paper (`--full`)"], rows, "llll")


def data_table(runs: Sequence[VariantRun]) -> str:
    """N, M_x, M_z, K of our data next to the paper's."""
    seen, rows = set(), []
    for run in runs:
        if run.name in seen or run.error:
            continue
        seen.add(run.name)
        ours, paper = run.sizes, PUBLISHED_SIZES[run.name]
        diff = ", ".join(f"{k} {a} vs {b}" for k, a, b in zip(("N", "M_x", "M_z", "K"), ours, paper) if a != b)
        rows.append([run.name, *ours, ", ".join(map(str, paper)), diff or "none"])
    return md_table(["data set", "N", "M_x", "M_z", "K", "paper (N, M_x, M_z, K)", "difference"], rows, "lrrrrll")


#: what a run reproduces (kept in the paper's protocol it is compared with): data sets, losses, variants, metric
FULL_PROTOCOL_KEEPS = ("datasets", "losses", "variants", "normalized")


def header(cfg: Config, runs: Sequence[VariantRun], seconds: float) -> str:
    """Title, run facts, sizes and the numbered protocol with every assumption."""
    cp_text = {
        "measured": "drokit's `method=\"auto\"` (the exact box LP for hinge, monolithic on tiny data; the cutting "
                    "plane for logistic and smooth hinge) with its default options, except that cutting-plane fits "
                    f"with an l2 term or a radius below {PHASE_ONE_MIN_RADIUS:g} use the selvi2022 script's options "
                    f"`method_options={CP_OPTIONS}` plus `cut_family=\"configuration\"`: each measured 1.5-10x "
                    "faster where it is used (script docstring, 6.)",
        "defaults": "drokit's `method=\"auto\"` with its default options everywhere (`--cp-options defaults`)",
        "fast": f"the selvi2022 script's options `method_options={CP_OPTIONS}` plus "
                "`cut_family=\"configuration\"` for every cutting-plane fit (`--cp-options fast`); hinge: drokit's "
                "`method=\"auto\"`"}[cfg.cp_options]
    metric = ("divided by K + M_x + κ (`--normalized-metric`: the sister paper's code, spec §B9), i.e. "
              "`GroundMetric(...).scaled(1 / (K + M_x + κ))`" if cfg.normalized else
              "**as printed** (not normalized; belbasi2023's code is not public, the sister paper's code divides "
              "by K + M_x + κ: `--normalized-metric`)")
    scale = full_protocol_scale(cfg, paper_protocol(cfg, parse_args, FULL_PROTOCOL_KEEPS))
    full_note = full_protocol_note(__package__, cfg, scale, seconds, cfg.max_rows > 0)
    return f"""# belbasi2023 reproduction: Tables 2–4 (classification on mixed-feature UCI data)

{run_facts(__package__, cfg, seconds)}

Paper: R. Belbasi, A. Selvi, W. Wiesemann, *It's All in the Mix: Wasserstein Machine Learning with Mixed
Features*, §6.3 and Tables 2–4 (mean test classification error over 100 random 80/20 splits, full data and
a random half; hyper-parameters by cross-validation). Spec: `belbasi2023-selvi2022-mixed-features.md` §A1,
§A8.3, §B9, §D3.

**Not reproducible here**: Tables 5–7 (regression with the Huber, pinball and τ-insensitive losses on
{", ".join(REGRESSION_SETS)}): drokit ships none of these data sets (nor the classification set
{", ".join(NOT_SHIPPED)}, whose published rows are shown for completeness).

## Sizes

{sizes_section(cfg)}

{full_note}

## Data

{data_table(runs)}

## Protocol

1. **Data**: `dk.datasets.load(name, preprocessing="raw")`, then: categorical values lower-cased; a missing
   categorical value is a level of its own (`"missing"`), except breast-cancer, whose 9 rows with a missing
   value are dropped (the paper's N = 277); a missing numerical value (credit-approval, cylinder-bands) is
   imputed in 3.; cylinder-bands' record keys (timestamp, cylinder number, customer, job number) are
   dropped; single-level features are dropped. Target: majority class vs rest (balance-scale: L and R tie,
   R is taken, 288 vs 337; lymphography: class 2 vs rest), y = 1 = the majority class. Differences from
   the paper's sizes: see Data (breast-cancer's M_z = 42 is not reproducible from the file; lymphography's
   42 presumably counts a level no record has; cylinder-bands' dropped "erroneous row" is not known).
2. **Variants and splits**: random, **unstratified** 80/20 splits (⌊0.2 n⌋ test rows), split s from
   `numpy.random.default_rng([seed, s])`: a permutation of the rows cut to `--max-rows` where the table
   shows "N (→ rows)"; the half variant ("reduced? ✓") keeps the first half of the same permuted rows (a
   random half of the full variant's rows, new for every split, split 80/20 anew). CV:
   unstratified shuffled K-fold on the training rows, the same folds for every model and loss.
3. **Numerical features** (credit-approval M_x = 6, cylinder-bands 19): standardized with the mean and
   standard deviation of the rows each model is fitted on (a CV fold's training rows, or the split's
   training rows for the test fit); a missing value becomes that mean (0). The paper does not say how it
   scales.
4. **Ground metric**: (2a)–(2b) with (κ_z, p) = (1, 1) and the ℓ1 norm, d = ‖x − x'‖₁ + #changed
   categorical features + κ·1[y ≠ y'], κ = κ_y ∈ {{1, K}} (K = number of categorical features; the text
   says "m", the tables K): `dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(),
   label=dk.LabelCost(kappa=κ))`, {metric}.
5. **Models** (all `dk.DROClassifier(loss=..., on_inaccurate="warn")`): Nom = radius 0; MixF = the
   mixed-feature ball, radius by CV; r-Nom = radius 0 + `l2_penalty` α, α by CV; r-MixF = ball +
   `l2_penalty`, (radius, α) jointly by CV; ConF = the 0/1 dummies (reference = first level) passed as
   **numerical** features with the standardized numerical ones, metric ‖(x, z) − (x', z')‖₁ + κ·1[y ≠ y']
   (drokit's closed form; a change between two non-reference levels costs 2 here, 1 in MixF). drokit's
   `l2_penalty` is α‖β‖₂² without the intercept; the paper says only "ℓ2-regularized" (norm or squared
   norm, with or without the intercept: the sister code uses ‖(β, β₀)‖₂), so α's scale is ours. At radius
   0 every model is the same problem, fitted once per fold and shared.
6. **Losses and solvers**: logistic (Table 2), hinge (Table 3), smooth hinge (Table 4) of
   `drokit.losses`; Clarabel. Mixed-feature fits at a positive radius: {cp_text}.
7. **Grids** (§6.3): radii {{0, 1e-5, 1e-3, 0.1}} for MixF and ConF; α ∈ {{0}} ∪ {{c·10⁻ᵖ: c ∈ {{1, 5}},
   p = 1…6}} for r-Nom; their product for r-MixF. See Sizes for this run's grids.
8. **Selection**: lowest mean CV classification error; ties go to the largest α, then the largest radius
   (the selvi2022 authors' `<=` scan; belbasi2023 states no rule). The choice is refit on the split's
   training rows and scored on its test rows. The CV fits of a (data set, variant) are one
   `dk.cross_validate_grid` sweep, the test fits one sweep per split.
9. **Prediction**: class 1 (y = 1, the original majority class) when the decision value is ≥ −1e-7, so a
   model with β = 0 and β₀ = 0 predicts class 1 instead of the sign of solver noise.
10. **Marks** (§6.3): only when a MixF / r-MixF model has the lowest mean error of the row (all tied models
    are marked): † = significantly better than Nom **and** r-Nom, ‡ = significantly better than the better
    of the two ConF models; one-sided paired t-test over the splits (`scipy.stats.ttest_rel(...,
    alternative="less")`), p < 0.05. With {cfg.splits} split(s) a test has {max(cfg.splits - 1, 0)} degrees
    of freedom (the paper: 99), so our marks are rare and noisy. The extracted paper prints "††" where a
    dagger and a double dagger are meant (spec §A8.3): shown as "†‡" in the published rows. The paper
    breaks its own rule once (Table 2, tic-tac-toe half: MixF's 1.70%† next to r-MixF's 1.66%).

Departures from the paper that matter for the numbers: the split count, row cap and r-MixF grid of the
default preset; the preprocessing and scaling choices of 1.–3. (the paper's scripts are not public); our
reading of the regularizer (5.); unstratified splits drawn with another generator; Clarabel instead of
MOSEK.
"""


def write_report(runs: Sequence[VariantRun], cfg: Config, seconds: float) -> Path:
    """README.md, errors.csv, cv.csv (and run.json unless rendering only) in ``cfg.out``; returns the
    README's path."""
    ok = finished(runs)
    errors = cv = None
    if ok:
        errors = pd.concat([r.errors for r in ok], ignore_index=True)
        cv = pd.concat([r.cv.assign(dataset=r.name, variant=r.variant) for r in ok], ignore_index=True)[
            ["dataset", "variant", "split", "loss", "model", "eps", "alpha", "cv_error", "fit_seconds", "failed",
             "uncertified"]]
    readme, discussion = open_report(cfg, runs, seconds, errors, cv, _CONFIG_KEYS, _RUN_KEYS)
    parts = [header(cfg, runs, seconds)]
    for loss in cfg.losses:
        parts += section(
            f"Table {TABLE_NUMBER[loss]}: {LOSS_LABEL[loss]}, ours next to the published numbers",
            "Mean test classification error. *ours*: this run (bold: the lowest mean of the row; marks computed "
            f"from our per-split errors); *paper*: belbasi2023 Table {TABLE_NUMBER[loss]} verbatim (bold: the "
            "lowest of the row; the paper's bold / grey did not survive extraction). "
            f"{', '.join(NOT_SHIPPED)} has no drokit data set.",
            main_table(runs, loss), "Standard errors of our means (standard deviation over splits / √splits):",
            spread_table(runs, loss))
    parts += [*section("Tables 5–7 (regression): not reproduced",
                          f"The regression sets ({', '.join(REGRESSION_SETS)}) do not ship with drokit, so the "
                          "Huber, pinball and τ-insensitive results cannot be reproduced offline."),
              *section("Verdicts from statistics", verdict_section(runs, cfg.losses)),
              *section("Comparison with the paper (computed)", comparison_section(runs, cfg.losses)),
              *section("Discussion", discussion),
              *section("Chosen hyper-parameters (most frequent over splits)", ceiling_line(runs, cfg),
                       choice_table(runs, cfg.losses)),
              *section("Runtime",
                          f"Wall clock with n_jobs = {cfg.n_jobs} ({cfg.backend}); the CV sweep covers every loss. "
                          "The paper reports no per-fit times for Tables 2–4 (\"most of the mixed-feature models "
                          "were solved within 10 minutes\" with MOSEK).", runtime_tables(runs, cfg.losses)),
              *section("Fit status", "\n".join(status_lines(runs)))]
    files = ["- `errors.csv`: one row per (data set, variant, loss, split, model): test error, chosen `eps` / "
             "`alpha` (drokit's `l2_penalty`), mean CV error of the choice, number of tied CV optima, fit seconds "
             "(a fit shared by several models appears in each), solver status, train/test sizes.",
             "- `cv.csv`: mean CV error of every (data set, variant, split, loss, model, eps, alpha), summed fit "
             "seconds over the folds (shared fits counted for each model), failed and uncertified fold fits."]
    return finish_report(readme, parts, [n for r in runs for n in r.notes], files, __package__)


# ============================================================================ run.json (--render-only)
_CONFIG_KEYS = ("datasets", "splits", "folds", "max_rows", "rmixf_radii", "rmixf_alphas", "losses", "variants",
                "radii", "conf_radii", "alphas", "normalized", "cp_options", "n_jobs", "backend", "scheduler", "seed",
                "preset", "command", "generated", "load_average", "commit",
                "environment")
_RUN_KEYS = ("name", "variant", "sizes", "n_rows_used", "cv_seconds", "test_seconds", "n_cv_fits", "n_cv_failed",
             "n_cv_uncertified", "uncertified_where", "seconds", "error", "notes")


def stored_run(item: dict, errors: pd.DataFrame, cv: pd.DataFrame) -> VariantRun:
    """One (data set, variant) rebuilt from run.json (``item``) and the CSVs (``--render-only``)."""
    run = VariantRun(**{**item, "sizes": tuple(item["sizes"])})
    if not run.error:
        mine = (errors["dataset"] == run.name) & (errors["variant"] == run.variant)
        run.errors = errors[mine].reset_index(drop=True)
        mine = (cv["dataset"] == run.name) & (cv["variant"] == run.variant)
        run.cv = cv[mine].drop(columns=["dataset", "variant"]).reset_index(drop=True)
    return run
