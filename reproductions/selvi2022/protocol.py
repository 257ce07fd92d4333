"""selvi2022's protocol (package docstring, 1.-7.): the data (Appendix D), the splits, the models of Table 1
and their configuration, the CV sweep, the selection and the test fits of every data set."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

import drokit as dk

from reproductions.options import (RESULTS, RunOptions, add_protocol_arguments, add_run_arguments,
                                   check_run_options, parser, protocol_options)
from reproductions.protocol import DesignedClassifier, SplitPlan, cp_options, cv_sweep, draw_splits, dummies, test_fits
from reproductions.protocol import select as select_by_cv
from reproductions.runtime import Progress

# ============================================================================ constants
#: the data sets of Table 1 that ship with drokit (drokit name), in the paper's row order
DATASETS = ("breast-cancer", "spect", "tic-tac-toe", "kr-vs-kp", "balance-scale", "hayes-roth",
            "lymphography", "car", "voting", "audiology")
#: the paper's names where they differ
PAPER_NAME = {"voting": "house-votes-84"}
#: rows of Table 1 without a drokit data set
NOT_SHIPPED = ("monks-3", "splices", "hiv", "primacy-tumor")
MISSING_LEVEL = "missing"

MODELS = ("LR", "DRO k=1", "DRO k=m", "r-LR", "r-DRO k=1", "r-DRO k=m", "MT k=1", "MT k=m")
PROPOSED = ("DRO k=1", "DRO k=m", "r-DRO k=1", "r-DRO k=m")
BASELINE = "LR"
#: model -> (kind, kappa, uses the radius, uses gamma)
MODEL_SPEC = {"LR": ("mixed", "1", False, False), "DRO k=1": ("mixed", "1", True, False),
              "DRO k=m": ("mixed", "m", True, False), "r-LR": ("mixed", "1", False, True),
              "r-DRO k=1": ("mixed", "1", True, True), "r-DRO k=m": ("mixed", "m", True, True),
              "MT k=1": ("mt", "1", True, False), "MT k=m": ("mt", "m", True, False)}
LABEL = {"LR": "LR", "DRO k=1": "DRO (κ=1)", "DRO k=m": "DRO (κ=m)", "r-LR": "r-LR",
         "r-DRO k=1": "r-DRO (κ=1)", "r-DRO k=m": "r-DRO (κ=m)", "MT k=1": "MT (κ=1)", "MT k=m": "MT (κ=m)",
         "PI": "PI (α=0.05)"}

# the paper's grids read as decades, as in the authors' code (package docstring, 5.)
PAPER_RADII = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
PAPER_GAMMAS = (0.0, 5e-6, 5e-5, 5e-4, 5e-3, 5e-2, 0.5)
PAPER_RDRO_RADII = (0.0, 1e-5, 1e-3, 1e-1, 1.0)
PAPER_RDRO_GAMMAS = (0.0, 5e-6, 5e-4, 5e-2, 0.5)
GAMMA_SCALE = 0.5                 # l1_penalty = gamma / 2: the +-1 coding of the authors' code
# the cutting-plane options of the DRO / r-DRO fits (reproductions.protocol.cp_options: package docstring, 4.)
# and the prediction rule's TIE_TOL (package docstring, 7.) come from reproductions.protocol, ALPHA from
# reproductions.stats
SEED = 2022
DEFAULT_OUT = RESULTS / "selvi2022"

PRESETS = {
    "default": {"splits": 5, "folds": 3, "max_rows": 300, "radii": (0.0, 1e-4, 1e-2),
                "rdro_radii": (0.0, 1e-3), "rdro_gammas": (0.0, 5e-4, 5e-2)},
    "full": {"splits": 100, "folds": 5, "max_rows": 0, "radii": PAPER_RADII,
             "rdro_radii": PAPER_RDRO_RADII, "rdro_gammas": PAPER_RDRO_GAMMAS},
}


# ============================================================================ configuration
@dataclass(kw_only=True)
class Config(RunOptions):
    """What to run (see :func:`parse_args`): the shared options plus the grids of Table 1's models."""

    radii: Tuple[float, ...]
    rdro_radii: Tuple[float, ...]
    rdro_gammas: Tuple[float, ...]
    gammas: Tuple[float, ...] = PAPER_GAMMAS
    mt_radii: Tuple[float, ...] = PAPER_RADII
    gamma_scale: float = GAMMA_SCALE
    fast_cp: bool = True                     # cp_options(m) for the DRO fits; False: drokit's defaults
    seed: int = SEED
    GRIDS: ClassVar[Dict[str, Dict[str, str]]] = {
        "LR": {}, "r-LR": {"gamma": "gammas"}, "DRO k=1": {"eps": "radii"}, "DRO k=m": {"eps": "radii"},
        "r-DRO k=1": {"eps": "rdro_radii", "gamma": "rdro_gammas"},
        "r-DRO k=m": {"eps": "rdro_radii", "gamma": "rdro_gammas"},
        "MT k=1": {"eps": "mt_radii"}, "MT k=m": {"eps": "mt_radii"}}


def parse_args(argv: Optional[Sequence[str]] = None) -> Config:
    """The command line as a :class:`Config`; options not given take the preset's value."""
    ap = parser(__package__)
    add_protocol_arguments(
        ap, datasets=DATASETS,
        full_help="the paper's protocol: 100 splits, 5 folds, all rows, the authors' full grids (days on 2 cores); "
                  "explicit options still override",
        datasets_help=f"default: all {len(DATASETS)} shipped data sets of Table 1 ({', '.join(DATASETS)})",
        max_rows_help="draw at most this many rows per split before splitting (0 = all rows)")
    ap.add_argument("--radii", nargs="+", type=float, default=None, help="radius grid of DRO (both kappas)")
    ap.add_argument("--rdro-radii", nargs="+", type=float, default=None, help="radius grid of r-DRO")
    ap.add_argument("--rdro-gammas", nargs="+", type=float, default=None, help="gamma grid of r-DRO")
    ap.add_argument("--gammas", nargs="+", type=float, default=list(PAPER_GAMMAS), help="gamma grid of r-LR")
    ap.add_argument("--mt-radii", nargs="+", type=float, default=list(PAPER_RADII), help="radius grid of MT")
    ap.add_argument("--gamma-scale", type=float, default=GAMMA_SCALE,
                    help="drokit l1_penalty = gamma_scale * gamma (0.5: the authors' +-1 coding)")
    ap.add_argument("--drokit-cp-defaults", action="store_true",
                    help="fit DRO / r-DRO with drokit's default cutting-plane options instead of the options of "
                         "cp_options(m) (same optimum, much slower here)")
    add_run_arguments(ap, seed=SEED, default_out=DEFAULT_OUT,
                      out_help="report folder (default: docs/results/selvi2022 of this checkout)")
    args = ap.parse_args(argv)
    options, pick = protocol_options(args, PRESETS, __package__, argv)
    cfg = Config(**options, radii=tuple(pick(args.radii, "radii")),
                 rdro_radii=tuple(pick(args.rdro_radii, "rdro_radii")),
                 rdro_gammas=tuple(pick(args.rdro_gammas, "rdro_gammas")), gammas=tuple(args.gammas),
                 mt_radii=tuple(args.mt_radii), gamma_scale=float(args.gamma_scale),
                 fast_cp=not args.drokit_cp_defaults)
    check_run_options(ap, cfg)
    return cfg


# ============================================================================ 1. data
def load_selvi2022(name: str) -> Tuple[pd.DataFrame, pd.Series]:
    """One data set with selvi2022's Appendix D preprocessing (package docstring, 1.).

    Returns ``X`` (every column categorical, levels sorted, ``"missing"`` a level of its own) and ``y``
    (int, 1 = the majority class; named ``"<target>=<class>"``).
    """
    X, y = dk.datasets.load(name, preprocessing="raw")
    X, y = X.copy(), y.astype(str)
    if name == "breast-cancer":                                   # the one set whose NaN rows are dropped
        keep = ~X.isna().any(axis=1)
        X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    for column in X.columns:
        values = X[column].astype(object).where(X[column].notna(), MISSING_LEVEL).astype(str)
        X[column] = pd.Categorical(values, categories=sorted(values.unique()))
    X = X[[c for c in X.columns if len(X[c].cat.categories) > 1]]
    counts = y.value_counts(sort=False)                           # classes in order of first occurrence
    majority = counts.index[int(np.argmax(counts.to_numpy()))]    # first of the largest (pandas' tie order)
    target = dk.datasets.dataset_info(name)["target"]
    return X, (y == majority).astype("int64").rename(f"{target}={majority}")


def dataset_sizes(X: pd.DataFrame) -> Tuple[int, int, int]:
    """(N, k, m): rows, dummy columns sum(levels - 1), categorical features."""
    return len(X), int(sum(len(X[c].cat.categories) - 1 for c in X.columns)), X.shape[1]


# ============================================================================ 2. splits
def make_splits(n_rows: int, cfg: Config) -> List[SplitPlan]:
    """``cfg.splits`` unstratified 80/20 splits (floor(0.2 n) test rows) of an optional per-split subsample
    of ``cfg.max_rows`` rows, each with ``cfg.folds`` unstratified shuffled CV folds of its training rows
    (:func:`reproductions.protocol.draw_splits`)."""
    return draw_splits(n_rows, splits=cfg.splits, folds=cfg.folds, max_rows=cfg.max_rows, seed=cfg.seed)


# ============================================================================ 3.-4. metric and models
def mixed_metric(m: int, kappa: float) -> dk.GroundMetric:
    """The authors' normalized metric: (#changed categorical features + kappa 1[y != y']) / (m + kappa)."""
    return dk.GroundMetric(categorical=dk.MismatchCost(), label=dk.LabelCost(kappa=kappa)).scaled(1.0 / (m + kappa))


def mt_metric(m: int, kappa: float) -> dk.GroundMetric:
    """MT's metric on the dummies as numerical features: (||d - d'||_1 + kappa 1[y != y']) / (m + kappa)."""
    return dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=kappa)).scaled(1.0 / (m + kappa))


class Selvi2022Model(DesignedClassifier):
    """One model of Table 1 (package docstring, 4.): ``model`` names it, ``eps`` is the radius (normalized
    metric) and ``gamma`` the paper's lasso weight (drokit ``l1_penalty = gamma_scale * gamma``).

    ``X`` must be the all-categorical DataFrame of :func:`load_selvi2022`; m is its number of columns.
    Predictions: class 1 (the majority class) when the decision value is >= -TIE_TOL (package docstring, 7.).
    """

    def __init__(self, model: str = "LR", eps: float = 0.0, gamma: float = 0.0, gamma_scale: float = GAMMA_SCALE,
                 fast_cp: bool = True):
        self.model = model
        self.eps = eps
        self.gamma = gamma
        self.gamma_scale = gamma_scale
        self.fast_cp = fast_cp

    def build(self, m: int) -> dk.DROClassifier:
        """The drokit estimator this model fits, for data with ``m`` categorical features."""
        kind, kappa_kind, uses_eps, uses_gamma = MODEL_SPEC[self.model]
        kappa = 1.0 if kappa_kind == "1" else float(m)
        eps = float(self.eps) if uses_eps else 0.0
        gamma = float(self.gamma) * float(self.gamma_scale) if uses_gamma else 0.0
        metric = mt_metric(m, kappa) if kind == "mt" else mixed_metric(m, kappa)
        if self.fast_cp and kind == "mixed" and eps > 0:
            # method_options raise for any method but the cutting plane, so ask for it (auto picks it on
            # these data anyway: every set has > 2,000 configuration rows)
            extra = {"method": "cutting_plane", "method_options": cp_options(m)}
        else:
            extra = {}
        return dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=eps), l1_penalty=gamma,
                                on_inaccurate="warn", **extra)

    def _prepare(self, X: pd.DataFrame) -> dk.DROClassifier:
        return self.build(X.shape[1])

    def _design(self, X):
        return dummies(X) if MODEL_SPEC[self.model][0] == "mt" else X


# ============================================================================ 5.-6. CV and selection
def candidates(cfg: Config) -> List[Dict[str, list]]:
    """The grid of the CV sweep: one ``{model, eps, gamma}`` dict per model that has something to choose."""
    out = []
    for model in MODELS:
        grid = cfg.grid(model)
        if grid:
            out.append({"model": [model], **grid})
    return out


def select(cv_table: pd.DataFrame) -> pd.DataFrame:
    """Per (split, model) the CV choice: the lowest mean CV error; ties -> largest gamma, then largest eps.

    ``cv_table``: one row per (split, model, eps, gamma) with ``cv_error`` (NaN = a failed fold fit).
    """
    return select_by_cv(cv_table, group=("split", "model"), tie_order=("gamma", "eps"))


@dataclass
class DatasetRun:
    """Everything about one data set."""

    name: str
    sizes: Tuple[int, int, int] = (0, 0, 0)
    n_rows_used: int = 0
    errors: Optional[pd.DataFrame] = None        # one row per (split, model)
    cv: Optional[pd.DataFrame] = None            # one row per (split, model, eps, gamma)
    cv_seconds: float = 0.0
    test_seconds: float = 0.0
    n_cv_fits: int = 0
    seconds: float = 0.0
    error: str = ""
    notes: List[str] = field(default_factory=list)

    def matrix(self) -> pd.DataFrame:
        """Test errors as a (split x model) matrix, models in table order (splits with a missing model
        dropped, so that the paired tests compare the same splits)."""
        wide = self.errors.pivot(index="split", columns="model", values="error")
        return wide[[m for m in MODELS if m in wide.columns]].dropna()


#: the parameters of a sweep candidate (eps / gamma 0 where the model has none)
PARAMS = {"model": "LR", "eps": 0.0, "gamma": 0.0}


def _estimator(cfg: Config) -> Selvi2022Model:
    return Selvi2022Model(gamma_scale=cfg.gamma_scale, fast_cp=cfg.fast_cp)


def run_dataset(name: str, cfg: Config, log: Progress) -> DatasetRun:
    """CV sweep, selection, refit and test scores of every model on every split of one data set."""
    start = time.perf_counter()
    out = DatasetRun(name)
    try:
        X, y = load_selvi2022(name)
        out.sizes = dataset_sizes(X)
        plans = make_splits(len(X), cfg)
        out.n_rows_used = len(plans[0].train) + len(plans[0].test)
        log(f"{name}: N={out.sizes[0]}, k={out.sizes[1]}, m={out.sizes[2]}; {cfg.splits} split(s) of "
            f"{out.n_rows_used} rows, {cfg.folds} folds")
        # --- stage 1: every candidate on every fold of every split, one sweep
        out.cv, sweep, notes = cv_sweep(_estimator(cfg), X, y, plans, candidates(cfg), cfg, PARAMS)
        out.cv_seconds, out.n_cv_fits = sweep.elapsed, len(sweep.fits)
        out.notes += notes
        chosen = select(out.cv)
        log(f"{name}: CV sweep of {len(sweep.fits)} fits in {sweep.elapsed:.1f} s")
        # --- stage 2: the chosen models refit on each split's training rows and scored on its test rows
        out.errors = _test_errors(X, y, plans, chosen, cfg, out)
        log(f"{name}: test fits in {out.test_seconds:.1f} s; mean test errors: "
            + ", ".join(f"{m} {100 * e:.2f}%" for m, e in out.matrix().mean().items()))
    except Exception as exc:  # noqa: BLE001 -- recorded in the report, the other data sets go on
        out.error = f"{type(exc).__name__}: {exc}"
        log(f"{name}: FAILED: {out.error}")
    out.seconds = time.perf_counter() - start
    return out


def _test_errors(X, y, plans: List[SplitPlan], chosen: pd.DataFrame, cfg: Config, out: DatasetRun) -> pd.DataFrame:
    """Stage 2 (:func:`reproductions.protocol.test_fits`): per split, LR and the models' CV choices refit on
    the training rows and scored on the test rows; with each choice's CV error and tie count."""
    picks = [[{"model": r.model, "eps": r.eps, "gamma": r.gamma} for r in chosen[chosen["split"] == s].itertuples()]
             + [{"model": "LR"}] for s in range(len(plans))]
    fits, out.test_seconds, notes = test_fits(_estimator(cfg), X, y, plans, picks, cfg, PARAMS)
    out.notes[:] = list(dict.fromkeys(out.notes + notes))
    info = chosen[["split", "model", "cv_error", "n_tied"]] if len(chosen) else \
        pd.DataFrame(columns=["split", "model", "cv_error", "n_tied"])
    rows = fits.merge(info, on=["split", "model"], how="left").assign(dataset=out.name)
    rows["n_tied"] = rows["n_tied"].fillna(1).astype(int)
    return rows[["dataset", "split", "model", "error", "eps", "gamma", "cv_error", "n_tied", "fit_seconds",
                 "status", "fit_error", "n_train", "n_test"]]
