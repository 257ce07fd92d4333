"""Reproduce belbasi2023's Tables 2-4: Wasserstein classification with mixed features on UCI data.

Belbasi, Selvi & Wiesemann, *It's All in the Mix: Wasserstein Machine Learning with Mixed Features*, §6.3
and Tables 2-4 (spec ``belbasi2023-selvi2022-mixed-features.md`` §A1, §A8.3), compare the test
classification error of the mixed-feature Wasserstein model (``MixF``, and with an l2 term ``r-MixF``;
label weight kappa_y = 1 or K) with the nominal model (``Nom``, empirical risk), its l2-regularized version
(``r-Nom``) and the continuous-feature Wasserstein model on the one-hot columns (``ConF``), for the
logistic (Table 2), hinge (Table 3) and smooth hinge (Table 4) losses, on the full data sets and on
"parsimonious" variants with half of the data points.  This script runs that protocol with drokit on the 7
of the paper's 8 classification sets that ship with drokit and writes a markdown report (our numbers next
to the published ones, per-split errors as CSV).  Tables 5-7 (regression: bike, fire, flare, garments,
imports, student, vegas) cannot be reproduced: drokit ships none of those sets.

Protocol (every step is a function below)
-----------------------------------------
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
   reproduce_selvi2022.py convention).
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
   script's options (``reproduction_common.cp_options``: no phase 1, relative gap 1e-4, configuration cuts)
   when the fit has an l2 term or a radius below 1e-4, and keeps drokit's defaults (phase 1, gap 1e-6)
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
   the test fits one sweep per split (``reproduction_common``).
9. **Prediction**: class 1 (the original majority class) when the decision value is >= -1e-7, so that a
   model with beta = 0 and beta_0 = 0 predicts class 1 rather than the sign of solver noise
   (reproduce_selvi2022.py, 7.).
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
``python examples/reproduce_belbasi2023.py [--full] [--datasets NAME ...] [--losses LOSS ...]
[--variants full half] [--splits S] [--folds K] [--max-rows R] [--radii R ...] [--conf-radii R ...]
[--alphas A ...] [--rmixf-radii R ...] [--rmixf-alphas A ...] [--normalized-metric]
[--cp-options measured|defaults|fast]
[--n-jobs J] [--backend loky|dask|...] [--scheduler ADDRESS] [--seed S] [--out DIR] [--render-only]
[--verbose] [--quiet]``.  Writes ``<out>/README.md``, ``<out>/errors.csv`` (one row per data set,
variant, loss, split and model: test error, chosen hyper-parameters, fit time and status), ``<out>/cv.csv``
(mean CV error of every candidate per split) and ``<out>/run.json``.  Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

import drokit as dk

if str(Path(__file__).resolve().parent) not in sys.path:      # examples/: reproduction_common
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduction_common as rc  # noqa: E402
from reproduction_common import ALPHA, TIE_TOL, RunResult, fmt_pct, md_table, one_sided_p  # noqa: E402,F401

# ============================================================================ constants
#: the classification sets of Tables 2-4 that ship with drokit, in the paper's row order
DATASETS = ("balance-scale", "breast-cancer", "credit-approval", "cylinder-bands", "lymphography", "spect",
            "tic-tac-toe")
#: rows of Tables 2-4 without a drokit data set
NOT_SHIPPED = ("primacy",)
#: the regression sets of Tables 5-7 (none ships with drokit)
REGRESSION_SETS = ("bike", "fire", "flare", "garments", "imports", "student", "vegas")
LOSSES = ("logistic", "hinge", "smooth_hinge")
TABLE_NUMBER = {"logistic": 2, "hinge": 3, "smooth_hinge": 4}
LOSS_LABEL = {"logistic": "logistic loss", "hinge": "hinge loss", "smooth_hinge": "smooth hinge loss"}
VARIANTS = ("full", "half")
FRACTION = {"full": 1.0, "half": 0.5}
VARIANT_LABEL = {"full": "✖ (full)", "half": "✓ (half)"}
MISSING_LEVEL = "missing"
#: record keys of cylinder-bands (dropped, as drokit's "paper" preprocessing does)
DROP_COLUMNS = {"cylinder-bands": ("timestamp", "cylinder_number", "customer", "job_number")}

MODELS = ("Nom", "MixF k=1", "MixF k=K", "r-Nom", "r-MixF k=1", "r-MixF k=K", "ConF k=1", "ConF k=K")
PROPOSED = ("MixF k=1", "MixF k=K", "r-MixF k=1", "r-MixF k=K")
NOMINAL = ("Nom", "r-Nom")
CONF = ("ConF k=1", "ConF k=K")
LABEL = {"Nom": "Nom", "MixF k=1": "MixF (κ=1)", "MixF k=K": "MixF (κ=K)", "r-Nom": "r-Nom",
         "r-MixF k=1": "r-MixF (κ=1)", "r-MixF k=K": "r-MixF (κ=K)", "ConF k=1": "ConF (κ=1)",
         "ConF k=K": "ConF (κ=K)"}


class ModelSpec(NamedTuple):
    """How a column of Tables 2-4 is fitted: design ``"mixed"`` (categorical features as such) or
    ``"conf"`` (dummies as numerical features), label weight ``"1"`` or ``"K"``, and which of the radius
    and the l2 weight it cross-validates."""

    design: str
    kappa: str
    uses_eps: bool
    uses_alpha: bool


MODEL_SPEC = {"Nom": ModelSpec("mixed", "1", False, False), "MixF k=1": ModelSpec("mixed", "1", True, False),
              "MixF k=K": ModelSpec("mixed", "K", True, False), "r-Nom": ModelSpec("mixed", "1", False, True),
              "r-MixF k=1": ModelSpec("mixed", "1", True, True), "r-MixF k=K": ModelSpec("mixed", "K", True, True),
              "ConF k=1": ModelSpec("conf", "1", True, False), "ConF k=K": ModelSpec("conf", "K", True, False)}

# the paper's grids (§6.3)
PAPER_RADII = (0.0, 1e-5, 1e-3, 1e-1)
PAPER_ALPHAS = (0.0, 1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1, 5e-1)
SEED = 2023
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "belbasi2023"

PRESETS = {
    "default": {"splits": 5, "folds": 3, "max_rows": 300, "rmixf_radii": (0.0, 1e-3, 1e-1),
                "rmixf_alphas": (0.0, 1e-4, 1e-2, 1e-1)},
    "full": {"splits": 100, "folds": 5, "max_rows": 0, "rmixf_radii": PAPER_RADII, "rmixf_alphas": PAPER_ALPHAS},
}

#: ``--cp-options`` (see :func:`solver_options`); below this radius phase 1 was slow (module docstring, 6.)
CP_CHOICES = ("measured", "defaults", "fast")
PHASE_ONE_MIN_RADIUS = 1e-4

#: the parameters of a distinct fit (the sweeps' candidates; see :func:`fit_params`)
FIT_PARAMS = {"loss": "logistic", "design": "mixed", "kappa_y": "1", "eps": 0.0, "alpha": 0.0}

# ---------------------------------------------------------------------------- the published Tables 2-4
#: N, M_x, M_z, K of Tables 2-4 (the same in every table)
PUBLISHED_SIZES = {"balance-scale": (625, 0, 16, 4), "breast-cancer": (277, 0, 42, 9),
                   "credit-approval": (690, 6, 36, 9), "cylinder-bands": (539, 19, 43, 14),
                   "lymphography": (148, 0, 42, 18), "primacy": (339, 0, 25, 17), "spect": (267, 0, 22, 22),
                   "tic-tac-toe": (958, 0, 18, 9)}
#: Tables 2-4 verbatim (spec §A8.3): data set, variant, then Nom, MixF k=1, MixF k=K, r-Nom, r-MixF k=1,
#: r-MixF k=K, ConF k=1, ConF k=K; marks as extracted ("††" = dagger + double dagger, see :func:`_marks`)
PUBLISHED_TABLES = {"logistic": """
balance-scale   | full | 0.56% | 0.44% | 0.40% †† | 0.52% | 0.52% | 0.48% | 0.48% | 0.44%
balance-scale   | half | 1.65% | 1.65% † | 1.65% † | 1.92% | 1.92% | 1.92% | 1.73% | 1.91%
breast-cancer   | full | 30.10% | 28.91% | 29.64% | 29.46% | 28.64% †† | 29.36% | 29.18% | 29.55%
breast-cancer   | half | 31.87% | 30.93% | 30.30% | 29.58% | 28.68% | 28.46% †† | 31.69% | 36.45%
credit-approval | full | 13.59% | 13.48% | 13.01% †† | 13.70% | 13.59% | 13.12% | 13.95% | 13.23%
credit-approval | half | 16.30% | 15.00% | 15.10% | 14.58% | 14.94% | 14.43% † | 14.92% | 15.64%
cylinder-bands  | full | 22.85% | 22.52% | 22.38% | 22.90% | 22.24% † | 23.18% | 22.90% | 22.52%
cylinder-bands  | half | 27.37% | 28.55% | 26.39% † | 27.18% | 27.25% | 27.12% | 26.81% | 26.47%
lymphography    | full | 17.24% | 16.90% | 17.24% | 15.86% | 16.90% | 14.83% †† | 18.97% | 17.10%
lymphography    | half | 23.98% | 22.22% | 19.10% | 17.96% | 17.67% †† | 18.30% | 25.51% | 19.43%
primacy         | full | 13.51% | 13.51% | 14.40% | 14.25% | 13.73% | 14.33% | 13.81% | 14.55%
primacy         | half | 15.89% | 13.99% † | 15.30% | 14.70% | 14.34% | 14.73% | 14.09% | 15.10%
spect           | full | 20.28% | 19.43% | 19.25% | 20.09% | 19.25% | 17.35% †† | 20.28% | 20.00%
spect           | half | 23.22% | 21.13% | 19.97% †† | 23.34% | 22.44% | 20.34% | 22.50% | 20.88%
tic-tac-toe     | full | 1.94% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70%
tic-tac-toe     | half | 2.75% | 1.70% † | 1.70% † | 1.81% | 1.67% | 1.66% | 1.70% | 1.70%
""", "hinge": """
balance-scale   | full | 4.20% | 4.08% | 4.20% | 3.36% | 3.08% †† | 3.28% | 3.88% | 4.20%
balance-scale   | half | 5.91% | 5.56% † | 5.88% | 5.69% | 6.23% | 5.64% | 5.64% | 5.68%
breast-cancer   | full | 30.27% | 30.09% † | 30.82% | 30.46% | 30.82% | 30.18% | 35.18% | 36.00%
breast-cancer   | half | 31.66% | 31.15% | 30.69% | 31.05% | 30.93% | 29.58% †† | 31.96% | 36.78%
credit-approval | full | 13.84% | 13.88% | 13.51% | 14.06% | 14.02% | 13.59% | 13.62% | 14.06%
credit-approval | half | 15.86% | 16.21% | 15.81% | 14.84% | 15.98% | 14.83% † | 15.22% | 18.62%
cylinder-bands  | full | 23.22% | 23.08% | 22.52% † | 23.08% | 23.04% | 22.85% | 22.85% | 24.11%
cylinder-bands  | half | 28.47% | 27.86% | 27.29% †† | 28.55% | 28.99% | 28.05% | 27.97% | 27.88%
lymphography    | full | 19.14% | 18.97% | 20.52% | 18.79% | 17.41% | 17.24% † | 18.28% | 19.83%
lymphography    | half | 20.28% | 20.91% | 21.25% | 19.49% | 19.77% | 18.64% †† | 23.92% | 21.31%
primacy         | full | 14.03% | 13.73% | 13.28% | 13.36% | 13.73% | 13.13% † | 13.81% | 13.66%
primacy         | half | 15.96% | 15.05% | 15.47% | 14.53% | 14.68% | 14.51% † | 14.78% | 15.00%
spect           | full | 20.19% | 20.76% | 18.96% †† | 21.04% | 20.85% | 19.34% | 21.23% | 20.28%
spect           | half | 24.16% | 21.50% † | 21.97% | 22.031% | 22.06% | 21.91% | 23.28% | 21.53%
tic-tac-toe     | full | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70%
tic-tac-toe     | half | 2.58% | 1.65% | 1.65% | 1.65% | 1.65% | 1.65% | 1.65% | 1.65%
""", "smooth_hinge": """
balance-scale   | full | 1.36% | 0.40% | 0.40% †† | 1.52% | 0.48% | 0.48% | 1.32% | 1.36%
balance-scale   | half | 3.15% | 2.15% | 2.01% | 3.25% | 2.08% | 1.81% †† | 3.29% | 3.31%
breast-cancer   | full | 29.55% | 28.82% † | 29.18% | 30.18% | 32.27% | 29.64% | 30.36% | 29.18%
breast-cancer   | half | 31.30% | 31.36% | 30.36% | 28.55% | 28.52% | 27.41% †† | 29.88% | 29.94%
credit-approval | full | 13.44% | 13.37% | 13.41% | 13.44% | 13.37% † | 13.41% | 13.66% | 14.46%
credit-approval | half | 15.59% | 15.16% | 15.52% | 14.65% | 14.53% | 14.52% †† | 15.30% | 15.75%
cylinder-bands  | full | 23.27% | 21.78% †† | 22.43% | 23.04% | 22.52% | 22.85% | 22.57% | 22.71%
cylinder-bands  | half | 27.43% | 26.50% †† | 27.57% | 27.09% | 27.40% | 27.37% | 27.11% | 27.40%
lymphography    | full | 19.31% | 17.76% | 18.97% | 16.38% | 16.55% | 15.52% † | 20.52% | 15.86%
lymphography    | half | 21.31% | 21.93% | 20.91% | 18.47% | 18.35% † | 18.47% | 20.11% | 20.34%
primacy         | full | 13.51% | 12.99% † | 13.51% | 13.13% | 13.43% | 13.21% | 13.66% | 14.18%
primacy         | half | 15.10% | 14.80% | 15.03% | 14.38% | 14.58% | 14.41% | 14.06% | 14.66%
spect           | full | 20.28% | 18.77% | 18.30% | 19.25% | 19.25% | 17.08% †† | 21.04% | 21.13%
spect           | half | 23.16% | 21.97% | 20.53% | 23.16% | 22.34% | 20.34% †† | 21.09% | 21.50%
tic-tac-toe     | full | 1.73% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70% | 1.70%
tic-tac-toe     | half | 2.77% | 1.65% | 1.65% | 1.65% | 1.65% | 1.65% | 1.65% | 1.65%
"""}


@dataclass
class Published:
    """One row of Tables 2-4: a (loss, data set, variant) with the mean test error (fraction) and the
    marks of every model."""

    loss: str
    name: str
    variant: str
    errors: Dict[str, float]
    marks: Dict[str, str]


def _marks(cell: str) -> str:
    """The marks of a published cell; the extraction's "††" is a dagger and a double dagger (spec §A8.3)."""
    marks = "".join(ch for ch in cell if ch in "†‡")
    return "†‡" if marks == "††" else marks


def _parse_published() -> Dict[Tuple[str, str, str], Published]:
    out = {}
    for loss, table in PUBLISHED_TABLES.items():
        for line in table.strip().splitlines():
            cells = [c.strip() for c in line.split("|")]
            errors = {m: float(re.match(r"([0-9.]+)\s*%", c).group(1)) / 100.0 for m, c in zip(MODELS, cells[2:])}
            marks = {m: _marks(c) for m, c in zip(MODELS, cells[2:])}
            out[(loss, cells[0], cells[1])] = Published(loss, cells[0], cells[1], errors, marks)
    return out


PUBLISHED = _parse_published()

rc.pickle_by_value(__name__, "reproduction_common")


# ============================================================================ configuration
@dataclass(kw_only=True)
class Config(rc.RunOptions):
    """What to run (see :func:`parse_args`): the shared options plus losses, variants, grids and metric."""

    rmixf_radii: Tuple[float, ...]
    rmixf_alphas: Tuple[float, ...]
    losses: Tuple[str, ...] = LOSSES
    variants: Tuple[str, ...] = VARIANTS
    radii: Tuple[float, ...] = PAPER_RADII
    conf_radii: Tuple[float, ...] = PAPER_RADII
    alphas: Tuple[float, ...] = PAPER_ALPHAS
    normalized: bool = False                 # --normalized-metric: divide the metric by K + M_x + kappa_y
    cp_options: str = "measured"             # --cp-options: see solver_options
    seed: int = SEED
    GRIDS: ClassVar[Dict[str, Dict[str, str]]] = {
        "Nom": {}, "MixF k=1": {"eps": "radii"}, "MixF k=K": {"eps": "radii"}, "r-Nom": {"alpha": "alphas"},
        "r-MixF k=1": {"eps": "rmixf_radii", "alpha": "rmixf_alphas"},
        "r-MixF k=K": {"eps": "rmixf_radii", "alpha": "rmixf_alphas"},
        "ConF k=1": {"eps": "conf_radii"}, "ConF k=K": {"eps": "conf_radii"}}


def parse_args(argv: Optional[Sequence[str]] = None) -> Config:
    """The command line as a :class:`Config`; options not given take the preset's value."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    rc.add_protocol_arguments(
        ap, datasets=DATASETS,
        full_help="the paper's protocol: 100 splits, 5 folds, all rows, the full r-MixF product grid (days on 2 "
                  "cores); explicit options still override",
        datasets_help=f"default: all {len(DATASETS)} shipped classification sets ({', '.join(DATASETS)})",
        max_rows_help="draw at most this many rows per split before splitting (0 = all rows); the half variant "
                      "uses half of them")
    ap.add_argument("--losses", nargs="+", default=list(LOSSES), choices=LOSSES,
                    help="Table 2 logistic, Table 3 hinge, Table 4 smooth_hinge (default: all three)")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS,
                    help="full data and/or the random half (the paper's 'Reduced?'); default both")
    ap.add_argument("--radii", nargs="+", type=float, default=list(PAPER_RADII), help="radius grid of MixF")
    ap.add_argument("--conf-radii", nargs="+", type=float, default=list(PAPER_RADII), help="radius grid of ConF")
    ap.add_argument("--alphas", nargs="+", type=float, default=list(PAPER_ALPHAS), help="l2 weight grid of r-Nom")
    ap.add_argument("--rmixf-radii", nargs="+", type=float, default=None, help="radius grid of r-MixF")
    ap.add_argument("--rmixf-alphas", nargs="+", type=float, default=None, help="l2 weight grid of r-MixF")
    ap.add_argument("--cp-options", choices=CP_CHOICES, default="measured",
                    help="cutting-plane options of the logistic / smooth hinge MixF fits: 'measured' (default): "
                         "the selvi2022 script's (reproduction_common.cp_options: no phase 1, configuration cuts, "
                         "gap 1e-4) with an l2 term or a radius below 1e-4, drokit's defaults otherwise; "
                         "'defaults' / 'fast': one of the two for every fit")
    ap.add_argument("--normalized-metric", action="store_true",
                    help="divide the ground metric by K + M_x + kappa_y, as the sister paper's public code "
                         "(default: the metric printed in the paper)")
    rc.add_run_arguments(ap, seed=SEED, default_out=DEFAULT_OUT,
                         out_help="report folder (default: docs/results/belbasi2023 of this checkout)")
    args = ap.parse_args(argv)
    options, pick = rc.protocol_options(args, PRESETS, "reproduce_belbasi2023.py", argv)
    cfg = Config(**options, rmixf_radii=tuple(pick(args.rmixf_radii, "rmixf_radii")),
                 rmixf_alphas=tuple(pick(args.rmixf_alphas, "rmixf_alphas")),
                 losses=tuple(l for l in LOSSES if l in args.losses),
                 variants=tuple(v for v in VARIANTS if v in args.variants), radii=tuple(args.radii),
                 conf_radii=tuple(args.conf_radii), alphas=tuple(args.alphas), normalized=args.normalized_metric,
                 cp_options=args.cp_options)
    rc.check_run_options(ap, cfg)
    grids = [cfg.radii, cfg.conf_radii, cfg.alphas, cfg.rmixf_radii, cfg.rmixf_alphas]
    if any(v < 0 or not np.isfinite(v) for grid in grids for v in grid):
        ap.error("radii and l2 weights must be finite and >= 0")
    return cfg


# ============================================================================ 1. data
def categorical_columns(X: pd.DataFrame) -> List[str]:
    """The columns of ``X`` with a pandas categorical dtype (the categorical features z)."""
    return [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]


def numerical_columns(X: pd.DataFrame) -> List[str]:
    """The other columns of ``X`` (the numerical features x)."""
    categorical = set(categorical_columns(X))
    return [c for c in X.columns if c not in categorical]


def load_belbasi2023(name: str) -> Tuple[pd.DataFrame, pd.Series]:
    """One data set with the preprocessing of the module docstring, 1. (belbasi2023 §6.3 (i)-(iii)).

    Returns ``X`` (categorical columns as pandas ``category`` with sorted levels, ``"missing"`` a level of
    its own; numerical columns as float with NaN for a missing value) and ``y`` (int, 1 = the majority
    class; named ``"<target>=<class>"``).
    """
    X, y = dk.datasets.load(name, preprocessing="raw")
    X, y = X.drop(columns=list(DROP_COLUMNS.get(name, ()))).copy(), y.astype(str)
    if name == "breast-cancer":                                   # the paper's N = 277: rows with NaN dropped
        keep = ~X.isna().any(axis=1)
        X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    for column in categorical_columns(X):
        values = X[column].astype(object).where(X[column].notna(), MISSING_LEVEL).astype(str).str.lower()
        X[column] = pd.Categorical(values, categories=sorted(values.unique()))
    keep = [c for c in X.columns
            if (len(X[c].cat.categories) > 1 if isinstance(X[c].dtype, pd.CategoricalDtype) else X[c].nunique() > 1)]
    X = X[keep]
    counts = y.value_counts(sort=False)                           # classes in order of first occurrence
    majority = counts.index[int(np.argmax(counts.to_numpy()))]    # first of the largest (pandas' tie order)
    target = dk.datasets.dataset_info(name)["target"]
    return X, (y == majority).astype("int64").rename(f"{target}={majority}")


def dataset_sizes(X: pd.DataFrame) -> Tuple[int, int, int, int]:
    """(N, M_x, M_z, K): rows, numerical features, dummy columns sum(levels - 1), categorical features."""
    categorical = categorical_columns(X)
    return (len(X), X.shape[1] - len(categorical), int(sum(len(X[c].cat.categories) - 1 for c in categorical)),
            len(categorical))


# ============================================================================ 2. splits
def make_splits(n_rows: int, cfg: Config, variant: str = "full") -> List[rc.SplitPlan]:
    """The splits of one variant (module docstring, 2.): ``cfg.splits`` unstratified 80/20 splits of the
    first ``cfg.max_rows`` rows of a random permutation (the half variant: the first half of those), each
    with ``cfg.folds`` shuffled CV folds of its training rows (:func:`reproduction_common.draw_splits`)."""
    return rc.draw_splits(n_rows, splits=cfg.splits, folds=cfg.folds, max_rows=cfg.max_rows, seed=cfg.seed,
                       fraction=FRACTION[variant])


# ============================================================================ 3.-6. metric and models
def ground_metric(design: str, kappa: float, n_categorical: int, n_numerical: int,
                  normalized: bool = False) -> dk.GroundMetric:
    """belbasi2023 (2a)-(2b) with (kappa_z, p) = (1, 1) and the l1 norm (module docstring, 4.).

    ``design="mixed"``: ||x - x'||_1 + #(changed categorical features) + kappa 1[y != y'];
    ``design="conf"``: ||(x, z) - (x', z')||_1 + kappa 1[y != y'] on the numerical and dummy columns (ConF).
    ``normalized``: divided by ``n_categorical + n_numerical + kappa`` (the sister paper's code, §B9).
    """
    label = dk.LabelCost(kappa=kappa)
    if design == "conf":
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=label)
    else:
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(), label=label)
    return metric.scaled(1.0 / (n_categorical + n_numerical + kappa)) if normalized else metric


def solver_options(loss: str, design: str, eps: float, alpha: float, n_categorical: int,
                   cp_options: str = "measured") -> Dict[str, object]:
    """The ``method`` / ``method_options`` a fit passes to ``dk.DROClassifier`` (module docstring, 6.): ``{}``
    (drokit's ``method="auto"`` and defaults) for radius 0, ConF, the hinge loss, ``cp_options="defaults"``
    and, with ``"measured"``, for a fit without l2 term at a radius >= ``PHASE_ONE_MIN_RADIUS``; otherwise
    ``method="cutting_plane"`` with ``reproduction_common.cp_options`` (no phase 1, configuration cuts)."""
    if cp_options not in CP_CHOICES:
        raise ValueError(f"cp_options must be one of {CP_CHOICES}, got {cp_options!r}")
    if eps == 0 or design != "mixed" or loss == "hinge" or cp_options == "defaults":
        return {}
    if cp_options == "measured" and alpha == 0 and eps >= PHASE_ONE_MIN_RADIUS:
        return {}
    return {"method": "cutting_plane", "method_options": rc.cp_options(n_categorical)}


def fit_standardizer(X: pd.DataFrame, columns: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (ddof = 1, NaN ignored; 1 where it is 0 or undefined) of the numerical
    ``columns`` of the fit rows ``X`` (module docstring, 3.)."""
    values = X[list(columns)].to_numpy(dtype=float)
    if values.shape[1] == 0:
        return np.zeros(0), np.ones(0)
    mean = np.nan_to_num(np.nanmean(values, axis=0)) if len(values) else np.zeros(values.shape[1])
    scale = np.nanstd(values, axis=0, ddof=1) if len(values) > 1 else np.ones(values.shape[1])
    return mean, np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)


def standardize(X: pd.DataFrame, columns: Sequence[str], mean: np.ndarray, scale: np.ndarray) -> pd.DataFrame:
    """``X`` with its numerical ``columns`` mapped to (x - mean) / scale and a missing value to 0 (the mean)."""
    out = X.copy()
    if len(columns):
        values = (X[list(columns)].to_numpy(dtype=float) - mean) / scale
        out[list(columns)] = np.nan_to_num(values, nan=0.0)
    return out


class Belbasi2023Model(rc.DesignedClassifier):
    """One distinct problem of Tables 2-4 (module docstring, 5.): a loss, a design (``"mixed"``: the
    categorical columns as categorical features; ``"conf"``: their dummies as numerical features), the
    label weight (``"1"`` or ``"K"``, K = the number of categorical columns), the radius ``eps`` and the l2
    weight ``alpha`` (drokit ``l2_penalty``: alpha ||beta||_2^2, intercept excluded).

    ``X`` must be a DataFrame of :func:`load_belbasi2023`; the numerical columns are standardized with the
    fit rows' statistics (module docstring, 3.).  Predictions: class 1 (the original majority class) when
    the decision value is >= -TIE_TOL (module docstring, 9.).
    """

    def __init__(self, loss: str = "logistic", design: str = "mixed", kappa_y: str = "1", eps: float = 0.0,
                 alpha: float = 0.0, normalized: bool = False, cp_options: str = "measured"):
        self.loss, self.design, self.kappa_y = loss, design, kappa_y
        self.eps, self.alpha = eps, alpha
        self.normalized, self.cp_options = normalized, cp_options

    def build(self, n_categorical: int, n_numerical: int) -> dk.DROClassifier:
        """The drokit estimator this model fits, for data with the given numbers of features."""
        if self.design not in ("mixed", "conf") or self.kappa_y not in ("1", "K"):
            raise ValueError(f"design must be 'mixed' or 'conf' and kappa_y '1' or 'K', got {self.design!r}, "
                             f"{self.kappa_y!r}")
        kappa = 1.0 if self.kappa_y == "1" else float(n_categorical)
        eps = float(self.eps)
        metric = ground_metric(self.design, kappa, n_categorical, n_numerical, bool(self.normalized))
        extra = solver_options(self.loss, self.design, eps, float(self.alpha), n_categorical, self.cp_options)
        return dk.DROClassifier(loss=self.loss, ambiguity=dk.Wasserstein(metric, radius=eps),
                                l2_penalty=float(self.alpha), on_inaccurate="warn", **extra)

    def _design(self, X: pd.DataFrame):
        Z = standardize(X, self.numerical_, self.mean_, self.scale_)
        if self.design == "mixed":
            return Z
        return np.hstack([Z[self.numerical_].to_numpy(dtype=float), rc.dummies(Z[self.categorical_])])

    def _prepare(self, X: pd.DataFrame) -> dk.DROClassifier:
        """The fit rows' columns and standardization, and the drokit estimator for them."""
        self.categorical_ = categorical_columns(X)
        self.numerical_ = numerical_columns(X)
        self.mean_, self.scale_ = fit_standardizer(X, self.numerical_)
        return self.build(len(self.categorical_), len(self.numerical_))


# ============================================================================ 7.-8. candidates, CV, selection
def fit_params(model: str, eps: float, alpha: float) -> Dict[str, object]:
    """The distinct problem a (model, eps, alpha) candidate fits (without the loss): at radius 0 every
    model is ERM (+ alpha ||beta||^2) on the same design, i.e. ``r-Nom`` at that alpha (module docstring, 5.)."""
    spec = MODEL_SPEC[model]
    eps = float(eps) if spec.uses_eps else 0.0
    alpha = float(alpha) if spec.uses_alpha else 0.0
    if eps == 0.0:
        return {"design": "mixed", "kappa_y": "1", "eps": 0.0, "alpha": alpha}
    return {"design": spec.design, "kappa_y": spec.kappa, "eps": eps, "alpha": alpha}


def fit_id(params: Dict[str, object]) -> str:
    """A key naming a distinct problem (``mixed|K|0.001|0``)."""
    return f"{params['design']}|{params['kappa_y']}|{float(params['eps'])!r}|{float(params['alpha'])!r}"


def model_candidates(cfg: Config, models: Sequence[str] = MODELS) -> pd.DataFrame:
    """One row per (model, eps, alpha) of the models' CV grids (Nom: its single candidate), with the
    ``fit`` key of the problem it solves."""
    rows = []
    for model in models:
        grid = cfg.grid(model)
        for eps in grid.get("eps", [0.0]):
            for alpha in grid.get("alpha", [0.0]):
                rows.append({"model": model, "eps": float(eps), "alpha": float(alpha),
                             "fit": fit_id(fit_params(model, eps, alpha))})
    return pd.DataFrame(rows)


def sweep_grid(candidates: pd.DataFrame, losses: Sequence[str]) -> List[Dict[str, list]]:
    """The distinct problems of ``candidates`` for every loss, one single-point grid dict each."""
    grid = []
    for key in dict.fromkeys(candidates["fit"]):
        design, kappa, eps, alpha = key.split("|")
        grid += [{"loss": [loss], "design": [design], "kappa_y": [kappa], "eps": [float(eps)], "alpha": [float(alpha)]}
                 for loss in losses]
    return grid


def with_fit_id(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (columns design, kappa_y, eps, alpha) with the ``fit`` key of each row."""
    return frame.assign(fit=[fit_id(r) for r in frame[["design", "kappa_y", "eps", "alpha"]].to_dict("records")])


def select(cv_table: pd.DataFrame) -> pd.DataFrame:
    """Per (split, loss, model) the CV choice: the lowest mean CV error; ties -> largest alpha, then
    largest eps (module docstring, 8.).  ``cv_table``: one row per (split, loss, model, eps, alpha) with
    ``cv_error`` (NaN = a failed fold fit)."""
    return rc.select(cv_table, group=("split", "loss", "model"), tie_order=("alpha", "eps"))


@dataclass
class VariantRun:
    """Everything about one (data set, variant): every loss and model."""

    name: str
    variant: str
    sizes: Tuple[int, int, int, int] = (0, 0, 0, 0)
    n_rows_used: int = 0
    errors: Optional[pd.DataFrame] = None        # one row per (loss, split, model)
    cv: Optional[pd.DataFrame] = None            # one row per (split, loss, model, eps, alpha)
    cv_seconds: float = 0.0
    test_seconds: float = 0.0
    n_cv_fits: int = 0                           # distinct fold fits (shared between models)
    n_cv_failed: int = 0
    n_cv_uncertified: int = 0
    uncertified_where: str = ""                  # "logistic MixF k=K ε=0.1: 3, ..." (distinct fits)
    seconds: float = 0.0
    error: str = ""
    notes: List[str] = field(default_factory=list)

    def matrix(self, loss: str) -> pd.DataFrame:
        """Test errors of one loss as a (split x model) matrix, models in table order (splits with a
        missing model dropped, so that the paired tests compare the same splits)."""
        part = self.errors[self.errors["loss"] == loss]
        wide = part.pivot(index="split", columns="model", values="error")
        return wide[[m for m in MODELS if m in wide.columns]].dropna()


def _where_uncertified(fits: pd.DataFrame, candidates: pd.DataFrame) -> str:
    """``loss model ε=..: n`` for the distinct fold fits not certified optimal (one model per problem)."""
    bad = fits[fits["uncertified"] > 0]
    if bad.empty:
        return ""
    first_model = candidates.drop_duplicates("fit").set_index("fit")
    parts = []
    for r in bad.groupby(["loss", "fit"], sort=False)["uncertified"].sum().reset_index().itertuples():
        c = first_model.loc[r.fit]
        parts.append(f"{r.loss} {LABEL[c.model]} ε={c.eps:g}" + (f" α={c.alpha:g}" if c.alpha else "")
                     + f": {r.uncertified}")
    return ", ".join(parts)


def _estimator(cfg: Config) -> Belbasi2023Model:
    return Belbasi2023Model(normalized=cfg.normalized, cp_options=cfg.cp_options)


def run_variant(name: str, variant: str, X: pd.DataFrame, y: pd.Series, cfg: Config,
                log: rc.Progress) -> VariantRun:
    """CV sweep, selection, refit and test scores of every loss and model on every split of one variant."""
    start = time.perf_counter()
    out = VariantRun(name, variant)
    try:
        out.sizes = dataset_sizes(X)
        plans = make_splits(len(X), cfg, variant)
        out.n_rows_used = len(plans[0].train) + len(plans[0].test)
        # --- stage 1: every distinct problem of every loss on every fold of every split, one sweep
        candidates = model_candidates(cfg, [m for m in MODELS if cfg.grid(m)])
        fits, sweep, notes = rc.cv_sweep(_estimator(cfg), X, y, plans, sweep_grid(candidates, cfg.losses), cfg,
                                         FIT_PARAMS)
        fits = with_fit_id(fits)
        out.cv_seconds, out.n_cv_fits = sweep.elapsed, len(sweep.fits)
        out.notes += notes
        out.n_cv_failed, out.n_cv_uncertified = int(fits["failed"].sum()), int(fits["uncertified"].sum())
        out.uncertified_where = _where_uncertified(fits, candidates)
        out.cv = (candidates.merge(fits.drop(columns=["design", "kappa_y", "eps", "alpha"]), on="fit")
                  .drop(columns="fit")[["split", "loss", "model", "eps", "alpha", "cv_error", "fit_seconds",
                                        "failed", "uncertified"]])
        out.cv = _in_table_order(out.cv, ["split", "loss", "model", "eps", "alpha"])
        chosen = select(out.cv)
        log(f"{name} ({variant}, {out.n_rows_used} rows): CV sweep of {len(sweep.fits)} fits in {sweep.elapsed:.1f} s")
        # --- stage 2: the chosen models (and Nom) refit on each split's training rows, scored on its test rows
        out.errors = _test_errors(X, y, plans, chosen, cfg, out)
        for loss in cfg.losses:
            means = out.matrix(loss).mean()
            log(f"{name} ({variant}) {loss}: " + ", ".join(f"{m} {100 * e:.2f}%" for m, e in means.items()))
    except Exception as exc:  # noqa: BLE001 -- recorded in the report, the other data sets go on
        out.error = f"{type(exc).__name__}: {exc}"
        log(f"{name} ({variant}): FAILED: {out.error}")
    out.seconds = time.perf_counter() - start
    return out


def _in_table_order(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``frame`` sorted by ``keys`` with losses and models in the paper's order."""
    order = {"loss": {l: i for i, l in enumerate(LOSSES)}, "model": {m: i for i, m in enumerate(MODELS)}}
    return frame.sort_values(list(keys), key=lambda s: s.map(order[s.name]) if s.name in order else s,
                             kind="stable").reset_index(drop=True)


def _test_errors(X, y, plans: List[rc.SplitPlan], chosen: pd.DataFrame, cfg: Config, out: VariantRun) -> pd.DataFrame:
    """Stage 2 (:func:`reproduction_common.test_fits`): per split, the distinct problems of Nom and of the
    models' CV choices (every loss) refit on the training rows and scored on the test rows; one row per
    (loss, split, model) with its choice, CV error and tie count (a shared fit's time appears in each
    model's row)."""
    nominal = pd.DataFrame([{"split": s, "loss": loss, "model": "Nom", "eps": 0.0, "alpha": 0.0,
                             "cv_error": np.nan, "n_tied": 1} for s in range(len(plans)) for loss in cfg.losses])
    picks = pd.concat([chosen, nominal], ignore_index=True) if len(chosen) else nominal
    picks["fit"] = [fit_id(fit_params(r.model, r.eps, r.alpha)) for r in picks.itertuples()]
    grids = []
    for s in range(len(plans)):
        distinct = picks[picks["split"] == s].drop_duplicates(["loss", "fit"])
        grids.append([{"loss": r.loss, **fit_params(r.model, r.eps, r.alpha)} for r in distinct.itertuples()])
    fits, out.test_seconds, notes = rc.test_fits(_estimator(cfg), X, y, plans, grids, cfg, FIT_PARAMS)
    out.notes[:] = list(dict.fromkeys(out.notes + notes))
    fits = with_fit_id(fits).drop(columns=["design", "kappa_y", "eps", "alpha"])
    rows = picks.merge(fits, on=["split", "loss", "fit"], how="left").assign(dataset=out.name, variant=out.variant)
    rows["n_tied"] = rows["n_tied"].astype(int)
    rows = _in_table_order(rows, ["loss", "split", "model"])
    return rows[["dataset", "variant", "loss", "split", "model", "error", "eps", "alpha", "cv_error", "n_tied",
                 "fit_seconds", "status", "fit_error", "n_train", "n_test"]]


# ============================================================================ 10. significance
def better_conf(errors: pd.DataFrame) -> str:
    """The ConF model with the lower mean error (κ = 1 on a tie): the double dagger's reference."""
    means = errors[list(CONF)].mean()
    return min(CONF, key=lambda m: means[m])


def significance_marks(errors: pd.DataFrame, alpha: float = ALPHA) -> Dict[str, str]:
    """belbasi2023 §6.3's marks for a (split x model) error matrix: ``{model: mark}`` for the MixF / r-MixF
    model(s) with the lowest mean error of the row (every model within 1e-12 of it); ``{}`` when the lowest
    mean belongs to Nom, r-Nom or ConF only.

    dagger: the winner is significantly better than Nom and than r-Nom; double dagger: significantly better
    than the better of the two ConF models.  One-sided paired t-test, p < ``alpha``.
    """
    means = errors.mean()
    best = means.min()
    winners = [m for m in errors.columns if abs(means[m] - best) <= 1e-12 and m in PROPOSED]
    reference = better_conf(errors)
    marks = {}
    for w in winners:
        dagger = all(one_sided_p(errors[w], errors[b]) < alpha for b in NOMINAL)
        double = one_sided_p(errors[w], errors[reference]) < alpha
        marks[w] = ("†" if dagger else "") + ("‡" if double else "")
    return marks


# ============================================================================ the report
def _ok(runs: Sequence[VariantRun]) -> List[VariantRun]:
    return [r for r in runs if r.errors is not None and not r.error]


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
    for run in _ok(runs):
        matrix = run.matrix(loss)
        se = rc.standard_errors(matrix)
        rows.append([run.name, VARIANT_LABEL[run.variant]] + [fmt_pct(se.get(m, np.nan)) for m in MODELS])
    return md_table(headers, rows, "ll" + "r" * len(MODELS))


def comparison_rows(runs: Sequence[VariantRun], losses: Sequence[str]) -> List[dict]:
    """Per (loss, data set, variant): our and the paper's winner, the best MixF / r-MixF model against Nom
    and against the better ConF (differences in points, our one-sided p-values), and the marks."""
    out = []
    for loss in losses:
        for run in _ok(runs):
            matrix = run.matrix(loss)
            if not set(MODELS) <= set(matrix.columns) or matrix.empty:
                continue
            pub = PUBLISHED[(loss, run.name, run.variant)]
            means, pub_means = matrix.mean(), pd.Series(pub.errors)
            best_prop = min(PROPOSED, key=lambda m: means[m])
            pub_best_prop = min(PROPOSED, key=lambda m: pub.errors[m])
            conf, pub_conf = better_conf(matrix), min(CONF, key=lambda m: pub.errors[m])
            ours_marks = significance_marks(matrix)
            out.append({
                "loss": loss, "name": run.name, "variant": run.variant,
                "ours_best": means.idxmin(), "pub_best": pub_means.idxmin(),
                "ours_prop_wins": means[list(PROPOSED)].min() <= means.min() + 1e-12,
                "pub_prop_wins": pub_means[list(PROPOSED)].min() <= pub_means.min() + 1e-12,
                "ours_nom": means["Nom"], "pub_nom": pub.errors["Nom"],
                "ours_best_prop": best_prop, "pub_best_prop": pub_best_prop,
                "ours_vs_nom": means[best_prop] - means["Nom"],
                "pub_vs_nom": pub.errors[pub_best_prop] - pub.errors["Nom"],
                "ours_vs_conf": means[best_prop] - means[conf],
                "pub_vs_conf": pub.errors[pub_best_prop] - pub.errors[pub_conf],
                "p_vs_nom": one_sided_p(matrix[best_prop], matrix["Nom"]),
                "p_nom_better": one_sided_p(matrix["Nom"], matrix[best_prop]),
                "p_vs_conf": one_sided_p(matrix[best_prop], matrix[conf]),
                "p_conf_better": one_sided_p(matrix[conf], matrix[best_prop]),
                "ours_means": means.to_dict(), "pub_means": dict(pub.errors),
                "ours_marks": "".join(sorted(set("".join(ours_marks.values())), key="†‡".index)),
                "pub_marks": "".join(sorted(set("".join(pub.marks.values())), key="†‡".index)),
                "ours_beats": {m: (means[m] < means["Nom"] - 1e-12, means[m] < means[conf] - 1e-12) for m in PROPOSED},
                "pub_beats": {m: (pub.errors[m] < pub.errors["Nom"], pub.errors[m] < pub.errors[pub_conf])
                              for m in PROPOSED}})
    return out


def _rank(values: Dict[str, float]) -> Dict[str, int]:
    """1 for the lowest value, 2 for the next, ... (ties share the lower rank)."""
    return {k: 1 + sum(v < values[k] - 1e-12 for v in values.values()) for k in values}


def _sign(value: float) -> int:
    return int(np.sign(round(value, 10)))


def comparison_section(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """A factual, computed comparison with the paper (the hand-written discussion is separate)."""
    rows = comparison_rows(runs, losses)
    if not rows:
        return "No data set finished."
    table = md_table(
        ["loss", "data set", "reduced?", "best ours", "best paper", "Nom ours / paper",
         "best MixF − Nom ours / paper (points)", "p ours", "best MixF − better ConF ours / paper (points)",
         "p ours", "marks ours / paper"],
        [[r["loss"], r["name"], r["variant"], LABEL[r["ours_best"]], LABEL[r["pub_best"]],
          f"{fmt_pct(r['ours_nom'])} / {fmt_pct(r['pub_nom'])}",
          f"{100 * r['ours_vs_nom']:+.2f} / {100 * r['pub_vs_nom']:+.2f}", f"{r['p_vs_nom']:.3f}",
          f"{100 * r['ours_vs_conf']:+.2f} / {100 * r['pub_vs_conf']:+.2f}", f"{r['p_vs_conf']:.3f}",
          f"{r['ours_marks'] or '–'} / {r['pub_marks'] or '–'}"] for r in rows], "lllllrrrrrl")
    n = len(rows)

    def count(key):
        return sum(bool(r[key]) for r in rows)

    def agree(key_ours, key_pub):
        return sum(_sign(r[key_ours]) == _sign(r[key_pub]) for r in rows)

    lines = [table, "",
             "*best MixF*: the MixF / r-MixF model (of four) with the lowest mean error in that row, ours and the "
             "paper's separately; *better ConF*: the ConF model with the lower mean; *p ours*: one-sided paired "
             "t-test that the best MixF model is better (over our splits).", "",
             f"Over the {n} rows (loss × data set × variant) of this run:", "",
             f"- A MixF / r-MixF model has the lowest mean error (ties included) in {count('ours_prop_wins')} of {n} "
             f"rows here, in {count('pub_prop_wins')} of the same {n} in the paper.",
             f"- The best MixF / r-MixF model is below Nom in {sum(r['ours_vs_nom'] < -1e-12 for r in rows)} of {n} "
             f"rows here ({sum(r['pub_vs_nom'] < 0 for r in rows)} in the paper); significantly (p < {ALPHA}) in "
             f"{sum(r['p_vs_nom'] < ALPHA for r in rows)}, while Nom is significantly better in "
             f"{sum(r['p_nom_better'] < ALPHA for r in rows)}. The sign of (best MixF − Nom) agrees with the "
             f"paper's in {agree('ours_vs_nom', 'pub_vs_nom')} of {n} rows (zero counts as its own sign).",
             f"- The best MixF / r-MixF model is below the better ConF in "
             f"{sum(r['ours_vs_conf'] < -1e-12 for r in rows)} of {n} rows here "
             f"({sum(r['pub_vs_conf'] < 0 for r in rows)} in the paper); significantly in "
             f"{sum(r['p_vs_conf'] < ALPHA for r in rows)}, ConF significantly better in "
             f"{sum(r['p_conf_better'] < ALPHA for r in rows)}. Sign agreement with the paper: "
             f"{agree('ours_vs_conf', 'pub_vs_conf')} of {n}.",
             f"- Marks: a dagger in {sum('†' in r['ours_marks'] for r in rows)} rows here vs "
             f"{sum('†' in r['pub_marks'] for r in rows)} in the paper, a double dagger in "
             f"{sum('‡' in r['ours_marks'] for r in rows)} vs {sum('‡' in r['pub_marks'] for r in rows)}; both "
             f"have a mark in {sum(bool(r['ours_marks']) and bool(r['pub_marks']) for r in rows)} rows.",
             f"- Nom (the same model in both) differs from the paper's Nom by "
             f"{100 * np.mean([abs(r['ours_nom'] - r['pub_nom']) for r in rows]):.2f} points on average "
             f"(data, splits and sizes differ; see the protocol).",
             "- Best-of-four after the fact favours the MixF family; the per-model counts below do not.", ""]
    ours_mean = {m: np.mean([r["ours_means"][m] for r in rows]) for m in MODELS}
    pub_mean = {m: np.mean([r["pub_means"][m] for r in rows]) for m in MODELS}
    lines += [f"Each model's mean error averaged over the {n} rows (no best-of selection), ours / paper, and its rank "
              "(1 = lowest):", "",
              md_table(["model", "mean over rows (ours / paper)", "rank (ours / paper)"],
                       [[LABEL[m], f"{fmt_pct(ours_mean[m])} / {fmt_pct(pub_mean[m])}",
                         f"{_rank(ours_mean)[m]} / {_rank(pub_mean)[m]}"] for m in MODELS]), ""]
    per_model = []
    for m in PROPOSED:
        per_model.append([LABEL[m],
                          f"{sum(r['ours_beats'][m][0] for r in rows)} / {sum(r['pub_beats'][m][0] for r in rows)}",
                          f"{sum(r['ours_beats'][m][1] for r in rows)} / {sum(r['pub_beats'][m][1] for r in rows)}"])
    lines += [f"Rows (of {n}) in which each model's mean error is strictly below Nom's / the better ConF's, "
              "ours / paper:", "",
              md_table(["model", "below Nom (ours / paper)", "below better ConF (ours / paper)"], per_model), ""]
    by_variant = []
    for variant in VARIANTS:
        part = [r for r in rows if r["variant"] == variant]
        if part:
            by_variant.append([variant, len(part),
                               f"{100 * np.mean([r['ours_vs_nom'] for r in part]):+.2f} / "
                               f"{100 * np.mean([r['pub_vs_nom'] for r in part]):+.2f}",
                               f"{100 * np.mean([r['ours_vs_conf'] for r in part]):+.2f} / "
                               f"{100 * np.mean([r['pub_vs_conf'] for r in part]):+.2f}"])
    lines += ["Mean difference (points) of the best MixF / r-MixF model, full vs half data (the paper: robust "
              "models help more on the parsimonious variants):", "",
              md_table(["variant", "rows", "best MixF − Nom ours / paper", "best MixF − better ConF ours / paper"],
                       by_variant)]
    return "\n".join(lines)


def choice_table(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """How often each hyper-parameter value was chosen (over splits), per loss, data set, variant and model."""
    headers = ["loss", "data set", "reduced?"] + [LABEL[m] for m in MODELS if m != "Nom"]
    rows = []
    for loss in losses:
        for run in _ok(runs):
            part = run.errors[run.errors["loss"] == loss]
            cells = []
            for model in MODELS[1:]:
                spec = MODEL_SPEC[model]
                labels = [", ".join(([f"ε={r.eps:g}"] if spec.uses_eps else [])
                                    + ([f"α={r.alpha:g}"] if spec.uses_alpha else []))
                          for r in part[part["model"] == model].itertuples()]
                cells.append(rc.most_frequent(labels))
            rows.append([loss, run.name, run.variant] + cells)
    return md_table(headers, rows, "l" * len(headers))


def runtime_tables(runs: Sequence[VariantRun], losses: Sequence[str]) -> str:
    """Wall clock per (data set, variant) and the mean seconds of one test fit per loss and model."""
    ok = _ok(runs)
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
        return rc.preset_row(cfg, PRESETS, label, key, fmt)

    def rows_text(max_rows):
        return "all (half: ⌊N/2⌋)" if max_rows <= 0 else f"≤ {max_rows} (half: ≤ {max_rows // 2})"

    rows = [preset_row("splits", "splits"), preset_row("CV folds", "folds"),
            ["rows per split", rows_text(cfg.max_rows), rows_text(PRESETS["default"]["max_rows"]), rows_text(0)],
            ["MixF radii (both κ)", rc.listed(cfg.radii), rc.listed(PAPER_RADII), rc.listed(PAPER_RADII)],
            ["ConF radii (both κ)", rc.listed(cfg.conf_radii), rc.listed(PAPER_RADII), rc.listed(PAPER_RADII)],
            ["r-Nom α", rc.listed(cfg.alphas), rc.listed(PAPER_ALPHAS), rc.listed(PAPER_ALPHAS)],
            preset_row("r-MixF radii", "rmixf_radii", rc.listed), preset_row("r-MixF α", "rmixf_alphas", rc.listed),
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


def header(cfg: Config, runs: Sequence[VariantRun], seconds: float) -> str:
    """Title, run facts, sizes and the numbered protocol with every assumption."""
    cp_text = {
        "measured": "drokit's `method=\"auto\"` (the exact box LP for hinge, monolithic on tiny data; the cutting "
                    "plane for logistic and smooth hinge) with its default options, except that cutting-plane fits "
                    f"with an l2 term or a radius below {PHASE_ONE_MIN_RADIUS:g} use the selvi2022 script's options "
                    f"`method_options={rc.CP_OPTIONS}` plus `cut_family=\"configuration\"`: each measured 1.5-10x "
                    "faster where it is used (script docstring, 6.)",
        "defaults": "drokit's `method=\"auto\"` with its default options everywhere (`--cp-options defaults`)",
        "fast": f"the selvi2022 script's options `method_options={rc.CP_OPTIONS}` plus "
                "`cut_family=\"configuration\"` for every cutting-plane fit (`--cp-options fast`); hinge: drokit's "
                "`method=\"auto\"`"}[cfg.cp_options]
    metric = ("divided by K + M_x + κ (`--normalized-metric`: the sister paper's code, spec §B9), i.e. "
              "`GroundMetric(...).scaled(1 / (K + M_x + κ))`" if cfg.normalized else
              "**as printed** (not normalized; belbasi2023's code is not public, the sister paper's code divides "
              "by K + M_x + κ: `--normalized-metric`)")
    return f"""# belbasi2023 reproduction: Tables 2–4 (classification on mixed-feature UCI data)

{rc.run_facts("reproduce_belbasi2023.py", cfg, seconds)}

Paper: R. Belbasi, A. Selvi, W. Wiesemann, *It's All in the Mix: Wasserstein Machine Learning with Mixed
Features*, §6.3 and Tables 2–4 (mean test classification error over 100 random 80/20 splits, full data and
a random half; hyper-parameters by cross-validation). Spec: `belbasi2023-selvi2022-mixed-features.md` §A1,
§A8.3, §B9, §D3.

**Not reproducible here**: Tables 5–7 (regression with the Huber, pinball and τ-insensitive losses on
{", ".join(REGRESSION_SETS)}): drokit ships none of these data sets (nor the classification set
{", ".join(NOT_SHIPPED)}, whose published rows are shown for completeness).

## Sizes

{sizes_section(cfg)}

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
    ok = _ok(runs)
    errors = cv = None
    if ok:
        errors = pd.concat([r.errors for r in ok], ignore_index=True)
        cv = pd.concat([r.cv.assign(dataset=r.name, variant=r.variant) for r in ok], ignore_index=True)[
            ["dataset", "variant", "split", "loss", "model", "eps", "alpha", "cv_error", "fit_seconds", "failed",
             "uncertified"]]
    readme, discussion = rc.open_report(cfg, runs, seconds, errors, cv, _CONFIG_KEYS, _RUN_KEYS)
    parts = [header(cfg, runs, seconds)]
    for loss in cfg.losses:
        parts += rc.section(
            f"Table {TABLE_NUMBER[loss]}: {LOSS_LABEL[loss]}, ours next to the published numbers",
            "Mean test classification error. *ours*: this run (bold: the lowest mean of the row; marks computed "
            f"from our per-split errors); *paper*: belbasi2023 Table {TABLE_NUMBER[loss]} verbatim (bold: the "
            "lowest of the row; the paper's bold / grey did not survive extraction). "
            f"{', '.join(NOT_SHIPPED)} has no drokit data set.",
            main_table(runs, loss), "Standard errors of our means (standard deviation over splits / √splits):",
            spread_table(runs, loss))
    parts += [*rc.section("Tables 5–7 (regression): not reproduced",
                          f"The regression sets ({', '.join(REGRESSION_SETS)}) do not ship with drokit, so the "
                          "Huber, pinball and τ-insensitive results cannot be reproduced offline."),
              *rc.section("Comparison with the paper (computed)", comparison_section(runs, cfg.losses)),
              *rc.section("Discussion", discussion),
              *rc.section("Chosen hyper-parameters (most frequent over splits)", choice_table(runs, cfg.losses)),
              *rc.section("Runtime",
                          f"Wall clock with n_jobs = {cfg.n_jobs} ({cfg.backend}); the CV sweep covers every loss. "
                          "The paper reports no per-fit times for Tables 2–4 (\"most of the mixed-feature models "
                          "were solved within 10 minutes\" with MOSEK).", runtime_tables(runs, cfg.losses)),
              *rc.section("Fit status", "\n".join(status_lines(runs)))]
    files = ["- `errors.csv`: one row per (data set, variant, loss, split, model): test error, chosen `eps` / "
             "`alpha` (drokit's `l2_penalty`), mean CV error of the choice, number of tied CV optima, fit seconds "
             "(a fit shared by several models appears in each), solver status, train/test sizes.",
             "- `cv.csv`: mean CV error of every (data set, variant, split, loss, model, eps, alpha), summed fit "
             "seconds over the folds (shared fits counted for each model), failed and uncertified fold fits."]
    return rc.finish_report(readme, parts, [n for r in runs for n in r.notes], files, "reproduce_belbasi2023.py")


# ============================================================================ run.json (--render-only)
_CONFIG_KEYS = ("datasets", "splits", "folds", "max_rows", "rmixf_radii", "rmixf_alphas", "losses", "variants",
                "radii", "conf_radii", "alphas", "normalized", "cp_options", "n_jobs", "backend", "scheduler", "seed",
                "preset", "command", "generated", "load_average")
_RUN_KEYS = ("name", "variant", "sizes", "n_rows_used", "cv_seconds", "test_seconds", "n_cv_fits", "n_cv_failed",
             "n_cv_uncertified", "uncertified_where", "seconds", "error", "notes")


def _stored_run(item: dict, errors: pd.DataFrame, cv: pd.DataFrame) -> VariantRun:
    """One (data set, variant) rebuilt from run.json (``item``) and the CSVs (``--render-only``)."""
    run = VariantRun(**{**item, "sizes": tuple(item["sizes"])})
    if not run.error:
        mine = (errors["dataset"] == run.name) & (errors["variant"] == run.variant)
        run.errors = errors[mine].reset_index(drop=True)
        mine = (cv["dataset"] == run.name) & (cv["variant"] == run.variant)
        run.cv = cv[mine].drop(columns=["dataset", "variant"]).reset_index(drop=True)
    return run


def run_all(cfg: Config, log: rc.Progress) -> List[VariantRun]:
    """Every (data set, variant) of ``cfg``, data sets loaded once."""
    runs = []
    for name in cfg.datasets:
        X, y = load_belbasi2023(name)
        N, Mx, Mz, K = dataset_sizes(X)
        log(f"{name}: N={N}, M_x={Mx}, M_z={Mz}, K={K}")
        runs += [run_variant(name, variant, X, y, cfg, log) for variant in cfg.variants]
    return runs


# ============================================================================ main
def main(argv: Optional[Sequence[str]] = None) -> RunResult:
    """Run the protocol on ``--datasets`` x ``--variants`` x ``--losses`` and write the report
    (``--render-only``: rebuild the report of an earlier run in ``--out``)."""
    cfg = parse_args(argv)
    if cfg.render_only:
        return rc.render(cfg.out, Config, _stored_run, write_report)
    log = rc.Progress(cfg.quiet, "reproduce_belbasi2023")
    log(f"{len(cfg.datasets)} data set(s) x {list(cfg.variants)} x {list(cfg.losses)}, {cfg.splits} splits, "
        f"{cfg.folds} folds, max rows {cfg.max_rows or 'all'}, n_jobs {cfg.n_jobs} ({cfg.backend}); not shipped "
        f"with drokit: {', '.join(NOT_SHIPPED)} and the regression sets of Tables 5-7")
    return rc.execute(cfg, log, lambda: run_all(cfg, log), write_report)


if __name__ == "__main__":
    main()
