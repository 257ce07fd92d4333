"""sun2025's report: the box plots, the header with the protocol and its assumptions, and the report files."""

from __future__ import annotations

import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional, Sequence

from reproductions.report import full_protocol_note, full_protocol_scale, kept_discussion, md_table, paper_protocol
from reproductions.sun2025.statistics import verdict_section as statistics_section
from reproductions.runtime import cpu_count
from reproductions.runtime import versions as common_versions
from reproductions.sun2025.protocol import (LASSO_LAMBDAS, PRESETS, UNIT_RADII, Config, DatasetRun, Selected,
                                            parse_args)
from reproductions.sun2025.tables import (cv_frame, dataset_section, failures, per_set_frame, relative_frame,
                                          runtime_section, summary_frame, summary_section, unexpected_verdict,
                                          verdict_section)

# ============================================================================ figures
def plot_dataset(data: DatasetRun, figures: Path) -> List[str]:
    """Box plots (``RobustnessReport.plot``), saved as PNG; returns the paths relative to the report folder.

    ``<name>.png``: ACE and AUC under the expected shift, one row per rho mean.  With unexpected
    scenarios also ``<name>_scenarios.png``: one panel per (rho mean, metric), boxes grouped by scenario.
    """
    runs = [r for r in data.rhos if r.report is not None]
    if not runs:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures.mkdir(parents=True, exist_ok=True)
    panels = [(run, metric) for run in runs for metric in ("ace", "auc")]
    layouts = [("expected", f"{data.name}.png", (len(runs), 2), (11, 3.8 * len(runs)))]
    n_scenarios = len(runs[0].report.scenarios)
    if n_scenarios > 1:
        layouts.append((None, f"{data.name}_scenarios.png", (len(panels), 1),
                        (2.5 + 0.45 * n_scenarios * (len(runs[0].report.models) + 1), 3.8 * len(panels))))
    paths = []
    for scenario, filename, shape, size in layouts:
        fig, axes = plt.subplots(*shape, figsize=size, layout="constrained", squeeze=False)
        for ax, (run, metric) in zip(axes.ravel(), panels):
            run.report.plot(metric, scenario=scenario, ax=ax)
            ax.set_title(f"{data.name}, rho mean {run.mean:g}: {ax.get_title()}", fontsize="medium")
            ax.tick_params(axis="x", labelsize="small")
        fig.savefig(figures / filename, dpi=90)
        plt.close(fig)
        paths.append(f"figures/{filename}")
    return paths


# ============================================================================ the report
def versions() -> str:
    """The package versions of the report (matplotlib too: the figures)."""
    return common_versions(extra=("matplotlib",))


def cv_fits(cfg: Config) -> int:
    """The CV fits of a run: per (data set, rho mean, weights) every fold of the weighted model's theta grid, the
    unit model's radii and the lasso's lambdas (the perturbed sets' evaluation scales with ``n_sets`` besides)."""
    return len(cfg.datasets) * len(cfg.rho_means) * len(cfg.weights) * cfg.folds * \
        (len(cfg.thetas) + len(cfg.radii) + len(cfg.lambdas))


def header(cfg: Config, seconds: float) -> str:
    """Title, run facts and the exact protocol with every assumption."""
    scen = ("expected + the paper's 7 unexpected (rho offset -0.2, -0.1, +0.1; jitter 0.05, 0.1, 0.15, 0.2)"
            if cfg.unexpected else "expected only")
    def listed(values) -> str:
        return ", ".join(f"{v:g}" for v in values)

    def lambdas(values) -> str:
        return f"{len(values)} values, {min(values):g} ... {max(values):g}"

    columns = [vars(cfg), PRESETS["default"], PRESETS["full"]]
    rows = [["datasets"] + [f"{len(c['datasets'])}" for c in columns],
            ["rho means"] + [listed(c["rho_means"]) for c in columns],
            ["weights"] + [", ".join(c["weights"]) for c in columns],
            ["theta grid"] + [listed(c["thetas"]) for c in columns],
            ["unit DRO radii", listed(cfg.radii), listed(UNIT_RADII), listed(UNIT_RADII)],
            ["lasso lambdas", lambdas(cfg.lambdas), lambdas(LASSO_LAMBDAS), lambdas(LASSO_LAMBDAS)],
            ["CV folds"] + [f"{c['folds']}" for c in columns],
            ["perturbed sets per scenario"] + [f"{c['n_sets']}" for c in columns],
            ["scenarios", scen] + ["expected + 7 unexpected" if c["unexpected"] else "expected"
                                   for c in columns[1:]]]
    sizes = md_table(["setting", "this run", "default", "paper (`--full`)"], rows, "llll")
    scale = full_protocol_scale(cfg, paper_protocol(cfg, parse_args, ()), cv_fits)
    full_note = full_protocol_note(__package__, cfg, scale, seconds, False)
    return f"""# sun2025 reproduction: weighted DRO vs unit-weight DRO vs lasso LR under distribution shift

Generated by `python -m {__package__}` at commit `{cfg.commit or "unrecorded"}` on
{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC in {seconds / 60:.1f} min ({cfg.preset} preset). Command:

```
{cfg.command}
```

Environment: {versions()}; {platform.platform()}, {cpu_count()} CPU cores; CV on joblib backend
`{cfg.backend}` with n_jobs = {cfg.n_jobs}. Seed {cfg.seed} (split, rho draws, CV folds, perturbed sets).

Claim under test (Sun et al., AISTATS 2025, §5.2): the calibrated ("weighted") Wasserstein logistic
regression has lower calibration error and higher AUC under the expected shift than the unit-weight DRO
model of Selvi et al. (2022) and lasso logistic regression, "up to 36.19% / 41.70% lower average /
worst-case calibration error and up to 18.02% / 48.37% higher average / worst-case AUC" (against Selvi et al.).

## Sizes

{sizes}

{full_note}

## Protocol

1. **Data**: `dk.datasets.load(name)`, the paper's preprocessing (Appendix C; docs/datasets.md), not
   standardized. Stratified 80/20 train/test split (`train_test_split(..., stratify=y,
   random_state={cfg.seed})`). Numerical columns z-scored with the **training** mean and standard deviation
   (ddof = 1); the test rows get the same map (no test statistics enter a model).
2. **Probabilities of certainty**: per dataset and rho mean, one rho per feature from Normal(mean, 0.2),
   truncated by rejection to (1/|C|, 1) (categorical) and (0, 1) (numerical),
   `drokit.metrics.sample_feature_certainty` with `default_rng([seed, round(1000 mean), crc32(name)])`
   (the draws of `benchmarks/bench_sun2025_table1.py`).
3. **Calibrated metric**: `dk.GroundMetric.calibrated(X_train, rho, half_width=0.4, round=...)`:
   gamma_j = -log(1 - rho_j) / (0.4 sigma_j), delta_l = log(rho_l (|C_l| - 1) / (1 - rho_l)) rounded to
   integers ("integer") or one decimal ("decimal"); deltas rounded to 0 are kept (the feature is free, as in
   the paper's code). kappa = inf (labels never move).
4. **Models**, each hyper-parameter chosen by stratified {cfg.folds}-fold CV on the training rows
   (`dk.cross_validate_grid`, the same folds for every model, scoring = minus ACE with 10 bins, the paper's
   criterion), then refit on all training rows:
   - *weighted DRO*: `DROClassifier(ambiguity=Wasserstein(calibrated metric, radius=-log theta),
     on_inaccurate="warn")`, theta from the theta grid;
   - *unit DRO* (Selvi et al. 2022): the same with `GroundMetric()` (all weights 1, numerical too, as the
     paper's code), radius from the radius grid;
   - *lasso LR*: `(1/N) sum log(1 + exp(-y f)) + lambda ||(beta, beta_0)||_1` (the paper's objective,
     intercept penalised) on the standardized numerical columns and a full 0/1 one-hot block per
     categorical feature; scikit-learn liblinear with C = 1 / (lambda N), N = rows of that fit
     (liblinear minimises ||(w, w_0)||_1 + C sum loss); lambda = 0: unpenalised (lbfgs).
5. **Evaluation**: `dk.robustness_report(models, X_test, y_test, shift_model=<calibrated metric>,
   n_sets={cfg.n_sets}, scenarios=..., seed=SeedSequence([seed, round(1000 mean), crc32(name), 1]))`: all
   models on the same perturbed copies of the test set
   (numerical + Laplace(0, b_j); categorical level kept with probability rho, else uniform over the other
   levels; unrounded rho; labels fixed). Unit DRO and lasso are fitted once per dataset and scored on each
   rho mean's sets. Metrics per set: ACE (10 equal-count bins, each weighted by its size, as the paper's
   code), AUC with **midrank ties** (ties count 1/2, = `sklearn.metrics.roc_auc_score`; the paper's code
   counts ties 0), accuracy, log-loss. "mean" and "worst" (max ACE, min AUC) over the sets; "nominal" = the
   unperturbed test set; "CV ACE" = the mean CV ACE of the chosen hyper-parameter.
6. **Comparison**: relative differences of the weighted model against each baseline,
   (baseline - model) / baseline for ACE and (model - baseline) / baseline for AUC (positive = weighted
   better; `RobustnessReport.relative_to`).

## Assumptions and departures from the paper

- The paper reports the weighted model **per theta** without CV (spec §6.5); here theta is chosen by CV
  like the baselines' hyper-parameters. The paper's "up to" maxima range over theta, datasets and rho
  means, so our maxima (over CV-chosen models) are not directly comparable; the counts of wins are the
  fairer reading.
- The paper's split (Julia `Random.seed!(12)`, unstratified) and contiguous 5-fold CV cannot be
  reproduced; we use stratified, shuffled scikit-learn splits. Its code's CV error averages the 5 fold
  errors with 5 zeros (a constant factor; the argmin is unchanged).
- Categorical coding: the paper's code uses a +-1 coding; drokit uses dummy coding (the same model class
  for the DRO models). For the lasso the coding changes the penalty; we use a full one-hot block.
- AUC ties count 1/2 here, 0 in the paper's code.
- Numerical missing values are imputed with the median of all rows (the paper's preprocessing; a small
  leak the paper has too). Data differences from the paper's Table 1: docs/datasets.md (cylinder-bands
  N = 540, breast-cancer c = 34).
- The levels of a categorical feature are those of the whole dataset (its dtype), as in the paper's
  preprocessing: they give |C| in the calibration and the shift, and the one-hot columns.
- One split and one rho draw per (dataset, mean): the numbers carry no uncertainty over splits or draws;
  only the perturbed sets vary. The worst case grows with the number of sets, so compare runs with the same
  number of sets.
- CV fits that fail score NaN and cannot be chosen; DRO fits that end with an inaccurate optimum are kept
  (with a warning) and their status is shown.

"""


def runtime_row(data: DatasetRun) -> List[str]:
    """Wall-clock seconds of one dataset, by step."""
    def both(s: Optional[Selected]) -> float:
        return 0.0 if s is None else s.cv_seconds + s.refit_seconds

    weighted = sum(both(s) for run in data.rhos for s in run.weighted.values())
    scoring = sum(run.eval_seconds for run in data.rhos)
    return [data.name, f"{data.seconds:.1f}", f"{both(data.unit):.1f}", f"{both(data.lasso):.1f}",
            f"{weighted:.1f}", f"{scoring:.1f}"]


def write_report(runs: Sequence[DatasetRun], cfg: Config, seconds: float) -> Path:
    """README.md, figures/*.png and the CSVs in ``cfg.out``; returns the README's path."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_frame(runs)
    relative = relative_frame(runs)
    summary.to_csv(out / "summary.csv", index=False)
    relative.to_csv(out / "relative.csv", index=False)
    cv_frame(runs).to_csv(out / "cv.csv", index=False)
    per_set_frame(runs).to_csv(out / "per_set.csv.gz", index=False, float_format="%.10g")   # (every score)

    readme = out / "README.md"
    discussion = kept_discussion(readme)
    per_set = per_set_frame(runs)
    parts = [header(cfg, seconds), "## Verdicts from statistics", "", statistics_section(per_set), "",
             "## Counts and extremes (descriptive)", "", verdict_section(relative, summary, failures(runs)), ""]
    extra = unexpected_verdict(relative)
    if extra:
        parts += ["### Unexpected shifts (wins of weighted DRO per scenario)", "", extra, ""]
    parts += ["## Discussion", "", discussion, ""]
    parts += ["## Summary across datasets (expected shift)", "",
              "Relative difference of weighted DRO against each baseline; positive = weighted DRO better.", "",
              summary_section(relative), "", "## Per dataset", "",
              "Scores over the perturbed test sets of the expected shift. *chosen*: the CV choice; *fit s*: "
              "the refit on all training rows; *CV s*: the whole CV sweep (wall clock, "
              f"{cfg.n_jobs} job(s)); *status*: the refit's certificate (DRO) or convergence (lasso).", ""]
    for data in runs:
        parts.append(dataset_section(data, summary, relative, plot_dataset(data, out / "figures"), cfg))
    parts += ["## Runtime", "", md_table(["dataset", "seconds", "unit DRO CV + refit", "lasso CV + refit",
                                          "weighted DRO CV + refit", "scoring the sets"],
                                         [runtime_row(d) for d in runs]), ""]
    measured = [(d.name, r.mean, r.methods) for d in runs for r in d.rhos if r.methods]
    if measured:
        parts += ["## The runtime claim: graph formulation vs cutting plane, inside drokit", "",
                  "Each chosen weighted model (integer weights) refitted on the training rows by `method=\"graph\"` "
                  "and `method=\"cutting_plane\"` (reproductions/sun2025/methods_runtime.py), one BLAS thread.", "",
                  runtime_section(measured), ""]
    parts += ["## Files", "",
              "- `summary.csv`: one row per (dataset, rho mean, scenario, model): chosen hyper-parameter, "
              "CV ACE, times, status, and mean / worst / std / nominal of ACE, AUC, accuracy, log-loss.",
              "- `per_set.csv.gz`: the score of every model on every perturbed set (columns ace, auc, "
              "accuracy, log_loss), for recomputing any statistic.",
              "- `relative.csv`: the relative differences against each baseline and the paired win fraction "
              "(`*_wins`: the share of sets on which weighted DRO is better on the same set).",
              "- `cv.csv`: every CV combination (mean CV ACE, fit time, failed fits).",
              "- `figures/`: box plots per dataset.",
              "- `provenance.json`: the commit, date, machine, command, wall time and source files of the run "
              "(`python -m reproductions.freshness` says whether the report is current).", ""]
    readme.write_text("\n".join(parts))
    return readme
