"""belbasi2023's protocol (package docstring, 1.-2., 7.-8.): the data, the variants and splits, the
configuration, the candidates and their shared fits, the CV sweep, the selection and the test fits."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import ClassVar, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

import drokit as dk

from reproductions.belbasi2023.models import CP_CHOICES, Belbasi2023Model, categorical_columns
from reproductions.options import (RESULTS, RunOptions, add_protocol_arguments, add_run_arguments,
                                   check_run_options, parser, protocol_options)
from reproductions.protocol import SplitPlan, cv_sweep, draw_splits, test_fits
from reproductions.protocol import select as select_by_cv
from reproductions.runtime import Progress

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
DEFAULT_OUT = RESULTS / "belbasi2023"

PRESETS = {
    "default": {"splits": 5, "folds": 3, "max_rows": 300, "rmixf_radii": (0.0, 1e-3, 1e-1),
                "rmixf_alphas": (0.0, 1e-4, 1e-2, 1e-1)},
    "full": {"splits": 100, "folds": 5, "max_rows": 0, "rmixf_radii": PAPER_RADII, "rmixf_alphas": PAPER_ALPHAS},
}

#: the parameters of a distinct fit (the sweeps' candidates; see :func:`fit_params`)
FIT_PARAMS = {"loss": "logistic", "design": "mixed", "kappa_y": "1", "eps": 0.0, "alpha": 0.0}


# ============================================================================ configuration
@dataclass(kw_only=True)
class Config(RunOptions):
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
    ap = parser(__package__)
    add_protocol_arguments(
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
                         "the selvi2022 reproduction's (reproductions.protocol.cp_options: no phase 1, configuration "
                         "cuts, gap 1e-4) with an l2 term or a radius below 1e-4, drokit's defaults otherwise; "
                         "'defaults' / 'fast': one of the two for every fit")
    ap.add_argument("--normalized-metric", action="store_true",
                    help="divide the ground metric by K + M_x + kappa_y, as the sister paper's public code "
                         "(default: the metric printed in the paper)")
    add_run_arguments(ap, seed=SEED, default_out=DEFAULT_OUT,
                      out_help="report folder (default: docs/results/belbasi2023 of this checkout)")
    args = ap.parse_args(argv)
    options, pick = protocol_options(args, PRESETS, __package__, argv)
    cfg = Config(**options, rmixf_radii=tuple(pick(args.rmixf_radii, "rmixf_radii")),
                 rmixf_alphas=tuple(pick(args.rmixf_alphas, "rmixf_alphas")),
                 losses=tuple(l for l in LOSSES if l in args.losses),
                 variants=tuple(v for v in VARIANTS if v in args.variants), radii=tuple(args.radii),
                 conf_radii=tuple(args.conf_radii), alphas=tuple(args.alphas), normalized=args.normalized_metric,
                 cp_options=args.cp_options)
    check_run_options(ap, cfg)
    grids = [cfg.radii, cfg.conf_radii, cfg.alphas, cfg.rmixf_radii, cfg.rmixf_alphas]
    if any(v < 0 or not np.isfinite(v) for grid in grids for v in grid):
        ap.error("radii and l2 weights must be finite and >= 0")
    return cfg


# ============================================================================ 1. data
def load_belbasi2023(name: str) -> Tuple[pd.DataFrame, pd.Series]:
    """One data set with the preprocessing of the package docstring, 1. (belbasi2023 §6.3 (i)-(iii)).

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
def make_splits(n_rows: int, cfg: Config, variant: str = "full") -> List[SplitPlan]:
    """The splits of one variant (package docstring, 2.): ``cfg.splits`` unstratified 80/20 splits of the
    first ``cfg.max_rows`` rows of a random permutation (the half variant: the first half of those), each
    with ``cfg.folds`` shuffled CV folds of its training rows (:func:`reproductions.protocol.draw_splits`)."""
    return draw_splits(n_rows, splits=cfg.splits, folds=cfg.folds, max_rows=cfg.max_rows, seed=cfg.seed,
                       fraction=FRACTION[variant])


# ============================================================================ 7.-8. candidates, CV, selection
def fit_params(model: str, eps: float, alpha: float) -> Dict[str, object]:
    """The distinct problem a (model, eps, alpha) candidate fits (without the loss): at radius 0 every
    model is ERM (+ alpha ||beta||^2) on the same design, i.e. ``r-Nom`` at that alpha (package docstring, 5.)."""
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
    largest eps (package docstring, 8.).  ``cv_table``: one row per (split, loss, model, eps, alpha) with
    ``cv_error`` (NaN = a failed fold fit)."""
    return select_by_cv(cv_table, group=("split", "loss", "model"), tie_order=("alpha", "eps"))


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
                log: Progress) -> VariantRun:
    """CV sweep, selection, refit and test scores of every loss and model on every split of one variant."""
    start = time.perf_counter()
    out = VariantRun(name, variant)
    try:
        out.sizes = dataset_sizes(X)
        plans = make_splits(len(X), cfg, variant)
        out.n_rows_used = len(plans[0].train) + len(plans[0].test)
        # --- stage 1: every distinct problem of every loss on every fold of every split, one sweep
        candidates = model_candidates(cfg, [m for m in MODELS if cfg.grid(m)])
        fits, sweep, notes = cv_sweep(_estimator(cfg), X, y, plans, sweep_grid(candidates, cfg.losses), cfg,
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


def _test_errors(X, y, plans: List[SplitPlan], chosen: pd.DataFrame, cfg: Config, out: VariantRun) -> pd.DataFrame:
    """Stage 2 (:func:`reproductions.protocol.test_fits`): per split, the distinct problems of Nom and of the
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
    fits, out.test_seconds, notes = test_fits(_estimator(cfg), X, y, plans, grids, cfg, FIT_PARAMS)
    out.notes[:] = list(dict.fromkeys(out.notes + notes))
    fits = with_fit_id(fits).drop(columns=["design", "kappa_y", "eps", "alpha"])
    rows = picks.merge(fits, on=["split", "loss", "fit"], how="left").assign(dataset=out.name, variant=out.variant)
    rows["n_tied"] = rows["n_tied"].astype(int)
    rows = _in_table_order(rows, ["loss", "split", "model"])
    return rows[["dataset", "variant", "loss", "split", "model", "error", "eps", "alpha", "cv_error", "n_tied",
                 "fit_seconds", "status", "fit_error", "n_train", "n_test"]]


def run_all(cfg: Config, log: Progress, saved=None) -> List[VariantRun]:
    """Every (data set, variant) of ``cfg``, data sets loaded once; ``saved``: a
    :class:`~reproductions.checkpoint.Checkpoints` (each (data set, variant) saved as it ends, reused on ``--resume``)."""
    runs = []
    for name in cfg.datasets:
        X, y = load_belbasi2023(name)
        N, Mx, Mz, K = dataset_sizes(X)
        log(f"{name}: N={N}, M_x={Mx}, M_z={Mz}, K={K}")
        for variant in cfg.variants:
            work = functools.partial(run_variant, name, variant, X, y, cfg, log)
            runs.append(work() if saved is None else saved.run(f"{name}-{variant}", work))
    return runs
