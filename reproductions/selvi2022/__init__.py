"""Reproduce selvi2022's Table 1: Wasserstein logistic regression on categorical-only UCI data.

Selvi, Belbasi, Haugh & Wiesemann, *Wasserstein Logistic Regression with Mixed Features* (NeurIPS 2022),
§4.2 and Table 1 (spec ``belbasi2023-selvi2022-mixed-features.md`` §B8.2, §B9), compare the test
classification error of their DR logistic regression (``DRO``, and with a lasso term ``r-DRO``; label
weight kappa = 1 or kappa = m) with plain (``LR``) and lasso (``r-LR``) logistic regression and with the
continuous-feature Wasserstein logistic regression of Shafieezadeh-Abadeh et al. on the one-hot columns
(``MT``).  This package runs that protocol with drokit on the 10 of the paper's 14 data sets that ship
with drokit and writes a markdown report (our table next to the published one, per-split errors as CSV).

Protocol (every step is a function of ``protocol.py`` or ``report.py``)
----------------------------------------------------------------------
1. **Data** (:func:`load_selvi2022`): ``dk.datasets.load(name, preprocessing="raw")`` followed by the
   paper's Appendix D rules, *not* drokit's default ``"paper"`` preprocessing (which follows sun2025 and
   differs on four sets): a missing value is its own level ``"missing"``, except in breast-cancer whose 9
   rows with a missing value are dropped (N = 277); multi-class targets become majority class vs rest
   (balance-scale: L and R tie at 288; the authors' pandas ``value_counts`` picks the first-occurring one,
   R; the task is mirror-symmetric); all 160 hayes-roth rows with ``hobby`` (m = 4); all 69 audiology
   features without the identifier; single-level features dropped.  The label y = 1 is the majority
   class.  Sizes: see the report (lymphography has k = 41 dummies, the paper 42: a level no record has).
2. **Splits** (:func:`make_splits`): ``--splits`` random 80/20 train/test splits, **not stratified** (the
   paper says "random"; the authors' ``train_test_split`` takes ``floor(0.2 N)`` random test rows), split
   ``s`` from ``numpy.random.default_rng([seed, s])``.  ``--max-rows R`` first draws R rows per split
   (only sets with N > R; off with ``--full``).  CV: ``--folds``-fold **unstratified** shuffled K-fold on
   the training rows (the authors: contiguous folds of the once-shuffled data), the same folds for every
   model of a split.
3. **Ground metric** (:func:`mixed_metric`): the authors' code normalizes the metric of Definition 2 by
   ``kappa + T`` (T = number of categorical features = m): ``d = (#changed features + kappa 1[y != y'])
   / (m + kappa)`` (p = 1), i.e. ``dk.GroundMetric(categorical=dk.MismatchCost(), label=dk.LabelCost(
   kappa)).scaled(1 / (m + kappa))``; the paper's radius grid refers to this normalized metric.
4. **Models** (:class:`Selvi2022Model`, one scikit-learn estimator whose ``model`` parameter picks the
   row of Table 1; every fit is a ``dk.DROClassifier(loss="logistic", on_inaccurate="warn")``):

   * ``LR``: radius 0, no penalty (``method="erm"``); no hyper-parameter.
   * ``DRO k=1``, ``DRO k=m``: the mixed-feature ball with the metric of 3., radius by CV.
   * ``r-LR``: radius 0 and ``l1_penalty``; gamma by CV.
   * ``r-DRO k=1``, ``r-DRO k=m``: the ball and ``l1_penalty``; (radius, gamma) by CV jointly.
   * ``MT k=1``, ``MT k=m``: the 0/1 dummy matrix (reference = first level, drokit's coding) passed as
     **numerical** features, so drokit uses its closed form (belbasi2023 Lemmas 1-3: the nominal rows and
     one multiplier) with the **l1 norm** on the dummies, ``dk.NormCost(p=1)``, and the same
     normalization ``1 / (m + kappa)``: the ground norm of the authors' mixed-feature code (dual-norm
     constraint ``|beta_cont| <= lambda / (T + n_cont + kappa)``, an l-infinity dual, spec §B9) and of
     belbasi2023 §6.2.  A change of a binary feature then costs what it costs in the mixed metric; a
     change between two non-reference levels costs 2 (the balls are not nested for k_j > 2).
   * ``PI`` (Blanchet, Kang & Murthy 2019) is not run: the published column is shown for reference.

   The DRO / r-DRO fits at a positive radius use ``method="cutting_plane"`` with ``method_options=
   {"phase_one": False, "gap_tol": 1e-4}`` plus ``"cut_family": "configuration"`` when m <= 40
   (:func:`cp_options`; ``--drokit-cp-defaults`` restores drokit's defaults).  Measured on 240-row samples
   (one fit each, same certified optimum), drokit's defaults vs no phase 1 + configuration cuts:
   breast-cancer (kappa = m, radius 1e-4) 30.1 s vs 1.1 s; spect 81.5 s vs 1.3 s; lymphography 95.6 s vs
   2.6 s; voting (radius 1e-3) 51.9 s vs 5.2 s; car 0.3 s vs 1.1 s (the one loss).  Most of the default's
   time is phase 1 (the smoothed first-order start) and masters slowed by budget cuts.  On audiology
   (m = 69) configuration cuts converge slowly (kappa = m, radius 1e-2, a 120-row fold: 68 rounds and 10
   minutes without certificate), budget cuts without phase 1 certify in 26 s (drokit's defaults: 72 s,
   ending ``optimal_inaccurate`` after a master's ``InsufficientProgress``); on kr-vs-kp (m = 36) and the
   smaller sets configuration cuts were 1.5-6x faster than budget cuts.  ``gap_tol`` 1e-4 (relative)
   instead of 1e-6: the error rates do not need more.  These timings were taken while multi-threaded
   OpenBLAS spun in phase 1's small dense products; since drokit runs a solve on one BLAS thread (commit
   c93503b) its defaults are faster than these options on spect and lymphography (0.2-2.8 s against
   0.7-28.6 s per fit, benchmarks/RESULTS.md "Solver layer, session 8") and on the belbasi2023 data at
   radii >= 1e-3, and side by side on breast-cancer, spect, lymphography and voting the two take the same
   time (192 s against 200 s, identical errors).  One audiology fit (kappa = m, radius 1e-2, split 0) ended
   uncertified with drokit's defaults until drokit stopped using a phase 1 that hits its solve limit; it
   now certifies with them too (167 s).  The published report was run with these options.

   Lasso term: drokit's ``l1_penalty`` is ``gamma ||beta||_1`` on the 0/1 dummy coefficients with the
   intercept not penalized.  The authors' code penalizes ``||(beta, beta_0)||_1`` on **+-1 coded** columns
   (``z = 2 d - 1``, so ``beta_pm = beta_01 / 2``).  We pass ``l1_penalty = gamma / 2`` (``--gamma-scale``
   0.5): the coefficients' part of the authors' penalty; their intercept term cannot be reproduced
   (drokit never penalizes the intercept, and the +-1 intercept is a different parameter).
5. **Grids.**  The printed grids "{0, 1e-5, ..., 1e-4, ..., 1}" and "{0, 0.5e-5, ..., 0.5e-4, ..., 0.5}"
   are read as decades, which is what the authors' code uses: radii {0, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1}
   (DRO, MT: ``main_hpc.jl``), gamma {0, 5e-6, 5e-5, 5e-4, 5e-3, 0.05, 0.5} (r-LR), and for r-DRO every
   other decade, radii {0, 1e-5, 1e-3, 0.1, 1} x gamma {0, 5e-6, 5e-4, 0.05, 0.5} (``regularized_main.jl``).
   The default preset thins the cutting-plane grids (see Sizes).
6. **Selection** (:func:`select`): CV classification error (mean over folds); ties go to the **largest
   gamma, then the largest radius**, as the authors' ``<=`` scan over ascending grids does.  The chosen
   model is refit on the split's training rows and scored on its test rows.  All fits of one data set
   (every model x value x split x fold) are one ``dk.cross_validate_grid`` sweep with the folds of all
   splits passed as ``cv`` (selection per split from ``sweep.fits``); the refits + test scores are a second
   sweep with ``cv`` = the (train, test) pairs.  Both run on ``--backend`` (loky, dask, ...).
7. **Prediction rule**: class 1 (the majority class) when the decision value is >= -1e-7: a model with
   ``beta = 0`` (radii at which the ball can flip every label) predicts the majority class instead of
   depending on the sign of solver noise.  The authors predict +1 when ``p >= 0.5``; their +1 is the
   majority class on the multi-class sets.
8. **Significance** (:func:`significance_marks`): for the model with the lowest mean test error, a
   one-sided paired t-test of its per-split errors against LR (dagger) and against the second-best model
   (double dagger), where the second best is taken among LR, r-LR and MT when the winner is a DRO / r-DRO
   model (and among all others otherwise); ``scipy.stats.ttest_rel(..., alternative="less")``, p < 0.05.
   As in the paper, only the winner(s) get marks; PI is not among the candidates here.

Sizes
-----
=========================  ===============================  =====================================
                           default (no option)              ``--full`` (the paper's protocol)
=========================  ===============================  =====================================
splits                     5                                100
CV folds                   3                                5
rows per split             <= 300 (``--max-rows``)          all
DRO radii (x 2 kappas)     0, 1e-4, 1e-2                    0, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1
r-DRO radii x gamma        {0, 1e-3} x {0, 5e-4, 0.05}      {0, 1e-5, 1e-3, 0.1, 1} x {0, 5e-6, 5e-4, 0.05, 0.5}
r-LR gamma, MT radii       the paper's (7 values each; closed forms, cheap)
=========================  ===============================  =====================================

The default is smaller than the paper's because drokit's cutting-plane fits take seconds to a minute
each on these sets (the report's runtime table; the authors' Table 4: 1-4,400 s per DRO fit with MOSEK).
Any option given explicitly overrides the preset.

Run
---
``python -m reproductions.selvi2022 [--full] [--datasets NAME ...] [--splits S] [--folds K]
[--max-rows R] [--radii R ...] [--gammas G ...] [--rdro-radii R ...] [--rdro-gammas G ...]
[--mt-radii R ...] [--gamma-scale C] [--drokit-cp-defaults] [--n-jobs J] [--backend loky|dask|...]
[--scheduler ADDRESS] [--seed S] [--out DIR] [--render-only] [--verbose] [--quiet]`` from the repository
root.  Writes ``<out>/README.md``, ``<out>/errors.csv`` (one row per data set, split and model: test error,
chosen hyper-parameters, fit time and status), ``<out>/cv.csv`` (mean CV error of every candidate per
split) and ``<out>/run.json``.  Progress goes to stderr.
"""

from __future__ import annotations

from typing import Optional, Sequence

from reproductions.report import RunResult, execute, render
from reproductions.runtime import Progress
from reproductions.selvi2022.protocol import NOT_SHIPPED, Config, parse_args, run_dataset
from reproductions.selvi2022.report import stored_run, write_report


def main(argv: Optional[Sequence[str]] = None) -> RunResult:
    """Run the protocol on ``--datasets`` and write the report; returns a :class:`RunResult`
    (``--render-only``: rebuild the report of an earlier run in ``--out``)."""
    cfg = parse_args(argv)
    if cfg.render_only:
        return render(cfg.out, Config, stored_run, write_report)
    log = Progress(cfg.quiet, "selvi2022")
    log(f"{len(cfg.datasets)} data set(s), {cfg.splits} splits, {cfg.folds} folds, max rows "
        f"{cfg.max_rows or 'all'}, n_jobs {cfg.n_jobs} ({cfg.backend}); not shipped with drokit: "
        f"{', '.join(NOT_SHIPPED)}; PI not run")
    return execute(cfg, log, lambda saved: saved.run_all(cfg.datasets, lambda name: run_dataset(name, cfg, log)),
                   write_report)
