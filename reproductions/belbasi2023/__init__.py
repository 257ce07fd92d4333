"""Reproduce belbasi2023's Tables 2-4: Wasserstein classification with mixed features on UCI data.

Belbasi, Selvi & Wiesemann, *It's All in the Mix: Wasserstein Machine Learning with Mixed Features*, §6.3
and Tables 2-4 (spec ``belbasi2023-selvi2022-mixed-features.md`` §A1, §A8.3), compare the test
classification error of the mixed-feature Wasserstein model (``MixF``, and with an l2 term ``r-MixF``;
label weight kappa_y = 1 or K) with the nominal model (``Nom``, empirical risk), its l2-regularized version
(``r-Nom``) and the continuous-feature Wasserstein model on the one-hot columns (``ConF``), for the
logistic (Table 2), hinge (Table 3) and smooth hinge (Table 4) losses, on the full data sets and on
"parsimonious" variants with half of the data points.  This package runs that protocol with drokit on the 7
of the paper's 8 classification sets that ship with drokit and writes a markdown report (our numbers next
to the published ones, per-split errors as CSV).  Tables 5-7 (regression: bike, fire, flare, garments,
imports, student, vegas) cannot be reproduced: drokit ships none of those sets.

Protocol (every step is a function of ``protocol.py``, ``models.py`` or ``comparison.py``)
-----------------------------------------------------------------------------------------
1. **Data** (:func:`load_belbasi2023`).  The paper only says it "handle[s] missing values and
   inconsistencies" and binarizes the target.  We use ``dk.datasets.load(name, preprocessing="raw")`` and:
   categorical values lower-cased (the inconsistencies: cylinder-bands mixes ``YES`` / ``yes``); a
   missing categorical value is a level of its own, ``"missing"`` (selvi2022 Appendix D), except in
   breast-cancer, whose 9 rows with a missing value are dropped (the paper's N = 277); a missing numerical
   value is imputed in 3. (credit-approval, cylinder-bands); cylinder-bands' record keys ``timestamp``,
   ``cylinder_number``, ``customer`` and ``job_number`` are dropped (as in drokit's ``"paper"``
   preprocessing); single-level features are dropped.  Target: majority class vs rest (selvi2022's rule
   for the multi-class sets; balance-scale: L and R tie at 288, R, the first to occur, is taken; the task
   is mirror-symmetric); y = 1 is the majority class of the original target (for balance-scale the smaller
   side of the binary task: R 288 vs L + B 337).  Sizes (N, M_x, M_z, K) match the paper's except
   breast-cancer (M_z = 32 vs 42: not reproducible from the file), lymphography (41 vs 42: a level no record
   has) and cylinder-bands (N = 540 vs 539: which "erroneous row" was dropped is not known).
2. **Variants and splits** (:func:`make_splits`).  ``--splits`` random **unstratified** 80/20 splits
   (floor(0.2 n) test rows), split s from ``numpy.random.default_rng([seed, s])``: a random permutation of
   the rows, cut to ``--max-rows`` (only sets with more rows; off with ``--full``); the "half" variant
   (the paper's "Reduced? ✓") keeps the first half of those permuted rows, i.e. a random half of the rows
   of the full variant, drawn anew for every split.  CV: ``--folds``-fold unstratified shuffled K-fold on
   the training rows, the same folds for every model.
3. **Numerical features** (:class:`Belbasi2023Model`): standardized with the mean and standard deviation
   (ddof = 1) of the rows each model is fitted on (a CV fold's training rows, or the split's training
   rows for the test fit); a missing value becomes that mean (0 after standardization).  The paper does
   not say how it scales; the l1 ground norm makes the scale matter.
4. **Ground metric** (:func:`ground_metric`): the paper's (2a)-(2b) with (kappa_z, p) = (1, 1) and the l1
   norm, d = ||x - x'||_1 + #(changed categorical features) + kappa_y 1[y != y'], kappa_y in {1, K},
   ``dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(),
   label=dk.LabelCost(kappa=kappa_y))``: the **printed** metric.  belbasi2023's code is not public; the
   sister paper's public code (selvi2022, spec §B9) divides the metric by (K + M_x + kappa_y) and its radius
   grid refers to that normalized metric; ``--normalized-metric`` uses that division here too (the
   reproductions.selvi2022 convention).
5. **Models** (:data:`MODEL_SPEC`; every fit a ``dk.DROClassifier(loss=..., on_inaccurate="warn")``):

   * ``Nom``: radius 0, no penalty (``erm``).
   * ``MixF k=1``, ``MixF k=K``: the mixed-feature ball with the metric of 4., radius by CV.
   * ``r-Nom``: radius 0 and ``l2_penalty = alpha``; alpha by CV.  drokit's l2 term is
     ``alpha ||beta||_2^2`` without the intercept (see ``DROClassifier``); the paper says only
     "l2-regularized", which allows the squared or the plain norm, with or without the intercept (the
     sister code penalizes ||(beta, beta_0)||_2, not squared); drokit offers the squared form only.
   * ``r-MixF k=1``, ``r-MixF k=K``: the ball and ``l2_penalty``; (radius, alpha) by CV jointly.
   * ``ConF k=1``, ``ConF k=K``: the 0/1 dummy columns (reference = first level, drokit's coding) passed as
     **numerical** features together with the standardized numerical ones, metric ||(x, z) - (x', z')||_1
     + kappa_y 1[y != y'] (the paper's §6.2 ConF; with ``--normalized-metric`` divided by the same
     K + M_x + kappa_y), so drokit uses its closed form (belbasi2023 Props. 1-4 with K = 0); radius by CV.

   At radius 0 every model is the same empirical-risk problem on the same design (ConF's dummies are
   drokit's encoding of the categorical columns), so a (model, radius 0, alpha) candidate shares the fit
   of ``r-Nom`` at that alpha (:func:`fit_params`): each distinct problem is fitted once per fold.
6. **Losses and solver paths** (``--losses``, :func:`solver_options`): ``"logistic"`` (exponential cone),
   ``"hinge"`` (LP) and ``"smooth_hinge"`` (SOCP) of ``drokit.losses``.  drokit's ``method="auto"`` picks
   ``erm`` at radius 0, the closed form for ConF, and for the mixed-feature fits at a positive radius the
   exact box LP (hinge; monolithic on tiny data) or the cutting plane (logistic, smooth hinge).  For the
   cutting plane, ``--cp-options measured`` (default) asks for ``method="cutting_plane"`` with the selvi2022
   reproduction's options (``reproductions.protocol.cp_options``: no phase 1, relative gap 1e-4, configuration
   cuts) when the fit has an l2 term or a radius below 1e-4, and keeps drokit's defaults (phase 1, gap 1e-6)
   otherwise; ``defaults`` / ``fast`` use one of the two everywhere.  Measured (drokit after commit c93503b,
   which runs phase 1 on one BLAS thread; one fit each, the same certified objectives up to the gap;
   defaults vs options): without an l2 term at radius 1e-3 or 0.1 the defaults were 1.5-10x faster (40 fits,
   240 rows of five sets: 47.9 s vs 115.4 s; credit-approval logistic kappa_y = K, radius 0.1: 0.9 s vs
   8.5 s); at radius 1e-5 or with alpha > 0 the options were 1.5-10x faster (credit-approval, 200 rows,
   logistic, the 18 cutting-plane problems of the default grid: 35.7 s vs 26.7 s in total, 12.7 s with the
   per-problem choice; lymphography smooth hinge: kappa_y = K, radius 0.1, alpha 0.01: 2.0 s vs 0.3 s).
   For hinge the box LP (0.2-0.6 s) beat the cutting plane (0.2-2.1 s).
7. **Grids** (§6.3): radii {0, 1e-5, 1e-3, 0.1} (MixF, ConF); alpha {0} U {c 10^-p : c in {1, 5}, p = 1..6}
   (r-Nom); r-MixF their product.  The default preset thins the r-MixF grid (see Sizes).
8. **Selection** (:func:`select`): lowest mean CV classification error; ties go to the **largest alpha,
   then the largest radius** (the selvi2022 authors' ``<=`` scan; belbasi2023 states no rule).  The chosen
   model is refit on the split's training rows and scored on its test rows.  All CV fits of a (data set,
   variant) -- every loss x distinct problem x split x fold -- are one ``dk.cross_validate_grid`` sweep;
   the test fits one sweep per split (``reproductions.protocol``).
9. **Prediction**: class 1 (the original majority class) when the decision value is >= -1e-7, so that a
   model with beta = 0 and beta_0 = 0 predicts class 1 rather than the sign of solver noise
   (reproductions.selvi2022, 7.).
10. **Marks** (:func:`significance_marks`, §6.3): only when a MixF / r-MixF model has the lowest mean error
    of the row (every model tied at it is marked): dagger = it is significantly better than Nom **and**
    than r-Nom; double dagger = significantly better than the better (lower mean) of the two ConF models.
    One-sided paired t-test over the splits (``scipy.stats.ttest_rel(..., alternative="less")``), p < 0.05.
    The extracted paper text prints "††" where a dagger and a double dagger are meant (spec §A8.3): the
    published rows show it as "†‡".  The paper breaks its rule once: Table 2, tic-tac-toe half, marks
    MixF's 1.70% next to r-MixF's 1.66%.

Sizes
-----
=========================  =====================================  ======================================
                           default (no option)                    ``--full`` (the paper's protocol)
=========================  =====================================  ======================================
splits                     5                                      100
CV folds                   3                                      5
rows per split             <= 300 (``--max-rows``; half: 150)     all (half: floor(N / 2))
MixF, ConF radii           0, 1e-5, 1e-3, 0.1                     0, 1e-5, 1e-3, 0.1
r-Nom alpha                the paper's 13 values                  the paper's 13 values
r-MixF radii x alpha       {0, 1e-3, 0.1} x {0, 1e-4, 0.01, 0.1}  {0, 1e-5, 1e-3, 0.1} x the 13 alphas
=========================  =====================================  ======================================

The default is the paper's protocol at a size that runs in about half an hour on 2 shared cores
(7 data sets x 2 variants x 3 losses).  Any option given explicitly overrides the preset.

Run
---
``python -m reproductions.belbasi2023 [--full] [--datasets NAME ...] [--losses LOSS ...]
[--variants full half] [--splits S] [--folds K] [--max-rows R] [--radii R ...] [--conf-radii R ...]
[--alphas A ...] [--rmixf-radii R ...] [--rmixf-alphas A ...] [--normalized-metric]
[--cp-options measured|defaults|fast]
[--n-jobs J] [--backend loky|dask|...] [--scheduler ADDRESS] [--seed S] [--out DIR] [--render-only]
[--verbose] [--quiet]``.  Writes ``<out>/README.md``, ``<out>/errors.csv`` (one row per data set,
variant, loss, split and model: test error, chosen hyper-parameters, fit time and status), ``<out>/cv.csv``
(mean CV error of every candidate per split) and ``<out>/run.json``.  Progress goes to stderr.
"""

from __future__ import annotations

from typing import Optional, Sequence

from reproductions.belbasi2023.protocol import NOT_SHIPPED, Config, parse_args, run_all
from reproductions.belbasi2023.report import stored_run, write_report
from reproductions.report import RunResult, execute, render
from reproductions.runtime import Progress


def main(argv: Optional[Sequence[str]] = None) -> RunResult:
    """Run the protocol on ``--datasets`` x ``--variants`` x ``--losses`` and write the report
    (``--render-only``: rebuild the report of an earlier run in ``--out``)."""
    cfg = parse_args(argv)
    if cfg.render_only:
        return render(cfg.out, Config, stored_run, write_report)
    log = Progress(cfg.quiet, "belbasi2023")
    log(f"{len(cfg.datasets)} data set(s) x {list(cfg.variants)} x {list(cfg.losses)}, {cfg.splits} splits, "
        f"{cfg.folds} folds, max rows {cfg.max_rows or 'all'}, n_jobs {cfg.n_jobs} ({cfg.backend}); not shipped "
        f"with drokit: {', '.join(NOT_SHIPPED)} and the regression sets of Tables 5-7")
    return execute(cfg, log, lambda saved: run_all(cfg, log, saved), write_report)
