"""Reproduce sun2025's robustness experiment: weighted DRO vs unit-weight DRO vs lasso LR under shift.

Sun et al., *Mixed-feature Logistic Regression Robust to Distribution Shifts* (AISTATS 2025), Section 5.2
(spec ``sun2025-weighted-mixed-lr.md`` §6.2-§6.7), claim that the calibrated ("weighted") Wasserstein
logistic regression beats the unit-weight DRO model of Selvi et al. (2022) and lasso logistic regression
on perturbed test sets: "up to 36.19% / 41.70% lower average / worst-case calibration error and up to
18.02% / 48.37% higher average / worst-case AUC" (against Selvi et al.).  This package runs that protocol on
the 13 datasets of the paper's Table 1 and writes a markdown report (tables, box plots, CSVs) that says,
dataset by dataset, whether the claim holds.

Protocol (every step is a function of ``protocol.py``)
-----------------------------------------------------
1. **Data** (:func:`load_split`).  ``dk.datasets.load(name)``: the paper's preprocessing (Appendix C;
   ``docs/datasets.md``), *not* standardized.  An 80/20 train/test split, stratified on the label,
   ``random_state=seed``.  Numerical columns are then z-scored with the mean and standard deviation
   (ddof = 1) of the **training rows only**; the test rows get the same affine map.
   (``load(standardize=True)`` z-scores over all rows, which leaks the test rows; it is not used.)
2. **Probabilities of certainty** (:func:`draw_rho`).  For each rho mean, one rho per feature from
   Normal(mean, 0.2), truncated by rejection to (1/|C_l|, 1) for categorical and (0, 1) for numerical
   features (:func:`drokit.metrics.sample_feature_certainty`), drawn with
   ``numpy.random.default_rng([seed, round(1000 mean), crc32(name)])``: the ``draw_rho`` of
   ``benchmarks/bench_sun2025_table1.py``, imported from it (with the same seed, the same draws).
3. **Calibrated metric** (:func:`weighted_metric`).  ``dk.GroundMetric.calibrated(X_train, rho...,
   half_width=0.4, round=decimals)``: gamma_j = -log(1 - rho_j) / (0.4 sigma_j) (sigma_j = 1 after the
   training standardization), delta_l = log(rho_l (|C_l| - 1) / (1 - rho_l)) rounded to 0 decimals
   ("integer") or 1 decimal ("decimal"); ``round=None`` ("exact") is also offered.  A delta that rounds
   to 0 is kept (``on_zero="ignore"``, as the paper's code does): the feature is then free to change.
   kappa = inf: labels never move.
4. **Models and cross-validation** (:func:`select`).  Every hyper-parameter is chosen by stratified
   K-fold CV on the training rows (``dk.cross_validate_grid``, ``cv=folds``, the same splits for all
   models, ``seed``), scored by minus the adaptive calibration error with 10 bins (the paper's CV
   criterion), and the best one is refit on all training rows.
   * **weighted DRO**: ``dk.DROClassifier(ambiguity=dk.Wasserstein(calibrated metric, -log theta),
     on_inaccurate="warn")``, theta from the theta grid (paper: {0.5, 0.65, 0.75, 0.8, 0.85, 0.9,
     0.93, 0.96, 0.99}).
   * **unit DRO** (Selvi et al. 2022): the same estimator with ``dk.GroundMetric()`` (every gamma and
     delta = 1, as the paper's code), radius from {0, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1}.
   * **lasso LR**: l1-penalised logistic regression on the standardized numerical columns and a full
     0/1 one-hot block per categorical feature (every level of the column's dtype, no reference level),
     lambda from the paper's list {0, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1,
     10, 100, 1000}.  The paper's objective is ``(1/N) sum_i log(1 + exp(-y_i f_i)) + lambda ||(beta,
     beta_0)||_1`` (the intercept is penalised too).  scikit-learn's liblinear solver minimises
     ``||(w, w_0)||_1 + C sum_i loss_i`` with the intercept as a penalised feature (intercept_scaling =
     1), which is the same objective for **C = 1 / (lambda N)**, N the rows of that fit (each CV fold
     and the refit get their own N).  lambda = 0 is plain logistic regression (lbfgs, no penalty).
5. **Evaluation** (:func:`evaluate`).  ``dk.robustness_report(models, X_test, y_test,
   shift_model=<calibrated metric>, n_sets, scenarios, seed)``: every model is scored on the same
   ``n_sets`` perturbed copies of the test set drawn from the calibrated shift model (numerical x +
   Laplace(0, b_j); a categorical level stays with probability rho_l, otherwise moves uniformly to
   another level; labels fixed), with the **unrounded** rhos.  The scenario "expected" uses the drawn
   rho; ``--unexpected`` (on by default) adds the paper's seven misspecified scenarios (rho
   offsets -0.2, -0.1, +0.1; uniform jitter 0.05 ... 0.2).  The unit DRO and lasso models do not depend
   on rho; they are fitted once per dataset and scored on each rho mean's sets.  Metrics per set: ACE
   (10 equal-count bins, the paper's code), AUC with **midrank ties** (a tie counts 1/2, = scikit-learn's
   ``roc_auc_score``; the paper's code counts ties 0, which lowers the AUC of models with tied scores),
   accuracy and log-loss; "mean" and "worst" (max ACE, min AUC) over the sets.
6. **Relative differences** (``RobustnessReport.relative_to``): ``(baseline - model) / baseline`` for
   ACE and ``(model - baseline) / baseline`` for AUC, so positive = the weighted model is better.  The
   paper does not say how its "up to" percentages are computed (spec §6.6), so they are not compared
   with ours; the report tests each claim's direction with statistics (:mod:`.statistics`: Wilcoxon over
   the data sets, Holm over the claims; ``reproductions/verdicts.py``).
7. **Runtime claim** (``--method-runtime``, on by default; :mod:`.methods_runtime`): every chosen weighted
   model (integer weights) is refitted by ``method="graph"`` and ``method="cutting_plane"``, timed, the
   certified objectives compared -- the paper's "graph up to 408x faster than the cutting plane", inside
   drokit.

Sizes
-----
=================  ===================================  =============================================
                   default (no option)                  ``--full`` (the paper's sizes)
=================  ===================================  =============================================
datasets           the 13 but audiology                 the 13 of Table 1
rho means          0.6, 0.9                             0.6, 0.7, 0.8, 0.9
weights            integer                              integer, decimal (1 decimal)
theta grid         0.5, 0.8, 0.9, 0.99                  the paper's nine values
CV folds           3                                    5
perturbed sets     1,000 per scenario                   5,000 per scenario
scenarios          expected + the 7 unexpected ones     expected + the 7 unexpected ones
=================  ===================================  =============================================

The baselines' grids are the paper's in both (7 radii, 16 lambdas): a smaller default must not weaken
them.  Audiology is left out of the default because of them: its unit-DRO CV includes radius 1, where
one fit on a 120-row fold took 119 s (29 cutting-plane rounds; 0.02-14 s at the smaller radii), so its
CV and the calibrated ones take roughly half an hour; ``--datasets audiology`` or ``--full`` run it.
Measured: the default run took 11.4 min with ``--n-jobs 2`` on this 2-core machine
(docs/results/sun2025).  The small datasets take 20-40 s each with one job; nursery (unit DRO at the
radii 1e-5 ... 1e-2 on its separable task: 20-60 s per fit, 5 min in all) and online-shoppers (5 min)
dominate.  Audiology fits take 5-30 s at integer weights and ~150 s at 1 decimal, which is why 1-decimal
weights are not in the default.  Scoring the sets takes seconds (nursery: ~9 s per rho mean for 1,000
sets of 2,592 rows).  ``--full`` takes many hours: audiology at 1 decimal alone is about 4 means x 46
fits x 150 s.  Any option given explicitly overrides the preset.

Departures from the paper and other assumptions (also written into the report header)
-------------------------------------------------------------------------------------
* The paper reports the weighted model **per theta**, without CV (spec §6.5); the task here chooses
  theta by CV (ACE), like the baselines' hyper-parameters.  The paper's "up to" maxima are over theta
  as well as datasets and rho means, so they are not directly comparable with maxima over CV choices.
* Split and folds: the paper shuffles with Julia's ``Random.seed!(12)`` and uses contiguous 5-fold CV
  (its code's CV error averages 5 fold errors and 5 zeros, a constant factor that leaves the argmin
  unchanged); we use scikit-learn's stratified split and stratified shuffled K-fold.  Seeds cannot
  reproduce the paper's streams.
* Encoding: the paper's code uses +-1 coding of the categorical features; drokit's DRO models use
  dummy coding (an affine reparametrisation, the same model class).  For the lasso the coding changes
  the penalty; we use a full one-hot block (see 4.).
* Median imputation of numerical missing values uses all rows (the paper's preprocessing): a small
  leak the paper has too (hepatitis, credit-approval, cylinder-bands).
* Data differences from the paper's Table 1 (docs/datasets.md): cylinder-bands N = 540 (paper 539),
  breast-cancer c = 34 (32), nursery / online-shoppers c counts.
* The levels of a categorical feature are those of the whole dataset (its pandas dtype), as in the
  paper's preprocessing: |C_l| in the calibration and in the shift, and the one-hot columns; a level
  absent from the training rows gets a dummy without data.
* One train/test split and one rho draw per (dataset, mean): the tables have no uncertainty over
  splits; only the perturbed sets vary.  "worst" grows with the number of sets.
* Seeds (``--seed``, default 2025): ``train_test_split(random_state=seed)``, the CV folds
  ``RepeatedStratifiedKFold(random_state=seed)``, the rho draws as in 2., the perturbed sets
  ``SeedSequence([seed, round(1000 mean), crc32(name), 1])``.

Run
---
``python -m reproductions.sun2025 [--full] [--datasets NAME ...] [--out DIR] [--n-sets K]
[--rho-means M ...] [--weights integer|decimal|exact ...] [--thetas T ...] [--folds K] [--n-jobs J]
[--backend loky|dask|...] [--seed S] [--[no-]unexpected] [--[no-]method-runtime] [--resume] [--radii R ...]
[--lambdas L ...] [--verbose] [--quiet]``.  Writes ``<out>/README.md``, ``<out>/figures/*.png``, ``<out>/summary.csv`` (one row per
dataset, rho mean, scenario and model), ``<out>/per_set.csv.gz`` (every score of every perturbed set),
``<out>/relative.csv`` and ``<out>/cv.csv``.  Progress goes to stderr (``--quiet`` silences it).
"""

from __future__ import annotations

import time
from typing import Optional, Sequence

from reproductions.checkpoint import Checkpoints
from reproductions.report import RunResult, record_provenance
from reproductions.runtime import Progress, stamp
from reproductions.sun2025.protocol import parse_args, run_dataset
from reproductions.sun2025.report import write_report


def main(argv: Optional[Sequence[str]] = None) -> RunResult:
    """Run the protocol on ``--datasets`` and write the report; returns a :class:`RunResult`."""
    cfg = parse_args(argv)
    log = Progress(cfg.quiet, "sun2025")
    log(f"{len(cfg.datasets)} dataset(s), rho means {list(cfg.rho_means)}, weights {list(cfg.weights)}, "
        f"thetas {list(cfg.thetas)}, {cfg.folds} folds, {cfg.n_sets} sets, scenarios "
        f"{'paper (8)' if cfg.unexpected else 'expected'}, n_jobs {cfg.n_jobs} ({cfg.backend})")
    start = time.perf_counter()
    saved = Checkpoints(cfg, cfg.resume, log)
    runs = saved.run_all(cfg.datasets, lambda name: run_dataset(name, cfg, log))
    seconds = time.perf_counter() - start
    stamp(cfg)
    readme = write_report(runs, cfg, seconds)
    record_provenance(cfg, seconds)
    saved.clear()
    log(f"report written to {readme} ({seconds / 60:.1f} min)")
    return RunResult(readme=readme, config=cfg, runs=runs, seconds=seconds)
