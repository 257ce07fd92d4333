"""sun2025's protocol (package docstring, 1.-5.): the configuration, the data split, the rho draws and
calibrated metrics, the models chosen by CV, and their evaluation on the perturbed test sets."""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.preprocessing import OneHotEncoder

import drokit as dk
from drokit.evaluation import PAPER_SCENARIOS, adaptive_calibration_error

# the Table 1 benchmark's rho draws, calibrated metric and DRO model: the same draws by construction
# (benchmarks/ is a namespace package of the repository root, like reproductions/)
from benchmarks.bench_sun2025_table1 import (PUBLISHED, SEED, Split, calibrated_metric, draw_rho, dro_classifier,
                                             instance_seed, load_split)
from reproductions.options import RESULTS, command_line, parser
from reproductions.runtime import Progress

# ============================================================================ constants
#: the 13 datasets of sun2025 Table 1
DATASETS = tuple(PUBLISHED)
PAPER_THETAS = (0.5, 0.65, 0.75, 0.8, 0.85, 0.9, 0.93, 0.96, 0.99)
PAPER_RHO_MEANS = (0.6, 0.7, 0.8, 0.9)
UNIT_RADII = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0)                    # Selvi et al.'s grid (spec §6.5)
LASSO_LAMBDAS = (0.0, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1.0, 10.0, 100.0,
                 1000.0)                                                 # the paper's code (spec §6.5)
WEIGHT_DECIMALS = {"integer": 0, "decimal": 1, "exact": None}
N_BINS = 10
TINY_ACE = 0.01           # mean ACEs below this are flagged: relative differences of tiny numbers
DEFAULT_OUT = RESULTS / "sun2025"

#: the default sizes (package docstring) and the paper's (--full)
PRESETS = {
    "default": {"datasets": tuple(d for d in DATASETS if d != "audiology"), "rho_means": (0.6, 0.9),
                "weights": ("integer",), "thetas": (0.5, 0.8, 0.9, 0.99), "folds": 3, "n_sets": 1000,
                "unexpected": True},
    "full": {"datasets": DATASETS, "rho_means": PAPER_RHO_MEANS, "weights": ("integer", "decimal"),
             "thetas": PAPER_THETAS, "folds": 5, "n_sets": 5000, "unexpected": True},
}

#: the paper's headline improvements over Selvi et al. (unit DRO), spec §6.6
PAPER_CLAIMS = {("ace", "mean"): 0.3619, ("ace", "worst"): 0.4170, ("auc", "mean"): 0.1802,
                ("auc", "worst"): 0.4837}
COMPARED = (("ace", "mean"), ("ace", "worst"), ("auc", "mean"), ("auc", "worst"))
UNIT, LASSO = "unit DRO", "lasso LR"
BASELINES = (UNIT, LASSO)
STAT_LABEL = {("ace", "mean"): "mean ACE", ("ace", "worst"): "worst ACE", ("auc", "mean"): "mean AUC",
              ("auc", "worst"): "worst AUC"}

#: minus the adaptive calibration error (10 bins) of predict_proba: the CV criterion (greater is better)
NEG_ACE = make_scorer(adaptive_calibration_error, greater_is_better=False, response_method="predict_proba")


def weighted_name(weights: str) -> str:
    """The report's name of the weighted DRO model of a weight setting."""
    return f"weighted DRO ({weights})"


# ============================================================================ configuration
@dataclass
class Config:
    """What to run (see :func:`parse_args`)."""

    datasets: Tuple[str, ...]
    out: Path
    n_sets: int
    rho_means: Tuple[float, ...]
    weights: Tuple[str, ...]
    thetas: Tuple[float, ...]
    folds: int
    unexpected: bool
    method_runtime: bool = True              # the graph vs the cutting plane on the chosen weighted models
    resume: bool = False                     # reuse the data sets an interrupted run saved (reproductions.checkpoint)
    radii: Tuple[float, ...] = UNIT_RADII
    lambdas: Tuple[float, ...] = LASSO_LAMBDAS
    n_jobs: int = 2
    backend: str = "loky"
    seed: int = SEED
    preset: str = "default"
    quiet: bool = False
    verbose: bool = False
    command: str = ""
    generated: str = ""                      # set at the end of the run (reproductions.runtime.stamp)
    load_average: str = ""
    commit: str = ""
    environment: str = ""

    @property
    def scenarios(self) -> list:
        return list(PAPER_SCENARIOS) if self.unexpected else ["expected"]


def parse_args(argv: Optional[Sequence[str]] = None) -> Config:
    """The command line as a :class:`Config`; options not given take the preset's value."""
    ap = parser(__package__)
    ap.add_argument("--full", action="store_true",
                    help="the paper's sizes: 4 rho means, integer + 1-decimal weights, 9 thetas, 5 folds, "
                         "5000 sets, unexpected scenarios (hours); explicit options still override")
    ap.add_argument("--datasets", nargs="+", default=None, choices=dk.datasets.list_datasets(),
                    metavar="NAME", help="default: the 13 datasets of sun2025 Table 1 but audiology (with "
                                         "--full: all 13)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="report folder (default: docs/results/sun2025 of this checkout)")
    ap.add_argument("--n-sets", type=int, default=None, help="perturbed test sets per scenario")
    ap.add_argument("--rho-means", nargs="+", type=float, default=None,
                    help="means of the Normal(mean, 0.2) of the probabilities of certainty")
    ap.add_argument("--weights", nargs="+", choices=tuple(WEIGHT_DECIMALS), default=None,
                    help="rounding of the calibrated categorical weights: integer, decimal (1 decimal), exact")
    ap.add_argument("--thetas", nargs="+", type=float, default=None, help="theta grid of the weighted model")
    ap.add_argument("--folds", type=int, default=None, help="CV folds")
    ap.add_argument("--unexpected", action=argparse.BooleanOptionalAction, default=None,
                    help="also the paper's 7 unexpected-shift scenarios (default: on)")
    ap.add_argument("--method-runtime", action=argparse.BooleanOptionalAction, default=True,
                    help="refit each chosen weighted model (integer weights) with method='graph' and "
                         "'cutting_plane', timed (the paper's runtime claim; default: on)")
    ap.add_argument("--radii", nargs="+", type=float, default=list(UNIT_RADII), help="unit DRO radius grid")
    ap.add_argument("--lambdas", nargs="+", type=float, default=list(LASSO_LAMBDAS), help="lasso lambda grid")
    ap.add_argument("--n-jobs", type=int, default=2, help="parallel CV fits (joblib n_jobs)")
    ap.add_argument("--backend", default="loky", help="joblib backend of the CV: loky, dask, threading, ...")
    ap.add_argument("--seed", type=int, default=SEED, help="seed of the split, rho draws, CV folds and sets")
    ap.add_argument("--resume", action="store_true",
                    help="take the data sets an interrupted run of the same protocol finished (saved in "
                         "<out>/partial/) instead of running them again")
    ap.add_argument("--verbose", action="store_true", help="also the CV sweeps' per-fit progress lines")
    ap.add_argument("--quiet", action="store_true", help="no progress output")
    args = ap.parse_args(argv)
    preset = PRESETS["full" if args.full else "default"]

    def pick(value, key):
        return preset[key] if value is None else value

    return Config(datasets=tuple(dict.fromkeys(pick(args.datasets, "datasets"))), out=args.out,
                  n_sets=int(pick(args.n_sets, "n_sets")), rho_means=tuple(pick(args.rho_means, "rho_means")),
                  weights=tuple(dict.fromkeys(pick(args.weights, "weights"))),
                  thetas=tuple(pick(args.thetas, "thetas")), folds=int(pick(args.folds, "folds")),
                  unexpected=bool(pick(args.unexpected, "unexpected")), method_runtime=bool(args.method_runtime),
                  resume=bool(args.resume),
                  radii=tuple(args.radii),
                  lambdas=tuple(args.lambdas), n_jobs=args.n_jobs, backend=args.backend, seed=args.seed,
                  preset="full" if args.full else "default", quiet=args.quiet, verbose=args.verbose,
                  command=command_line(__package__, argv))


# ============================================================================ 1. data
# Split and load_split (the paper's preprocessing, a stratified 80/20 split, z-scored numerical columns) live with the
# Table 1 benchmark's rho draw and metric (imported above), so that benchmarks/bench_mot_shift.py shares them too


# ============================================================================ 2.-3. rho and metric
Rho = Tuple[Dict[str, float], Dict[str, float]]     # (rho_numerical, rho_categorical) by column
# draw_rho(X_train, name, mean, seed) -> Rho is the benchmark's (imported above)


def weighted_metric(X_train: pd.DataFrame, rho: Rho, weights: str) -> Tuple[dk.GroundMetric, List[str]]:
    """The calibrated metric of a weight setting and the categorical features whose delta rounded to 0
    (free to change, kept as in the paper's code)."""
    return calibrated_metric(X_train, rho, WEIGHT_DECIMALS[weights], on_zero="ignore")


# ============================================================================ 4. models and CV
class LassoLogistic(ClassifierMixin, BaseEstimator):
    """l1-penalised logistic regression with the paper's scaling of the penalty (package docstring, 4.).

    Minimises ``(1/N) sum_i log(1 + exp(-y_i f(x_i))) + lam ||(beta, beta_0)||_1`` on the standardized
    numerical columns and a full 0/1 one-hot block per categorical column (all levels of its dtype),
    via liblinear with ``C = 1 / (lam N)``; ``lam = 0``: unpenalised (lbfgs).
    """

    def __init__(self, lam: float = 0.0, tol: float = 1e-6, max_iter: int = 10_000):
        self.lam = lam
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X: pd.DataFrame, y) -> "LassoLogistic":
        categorical = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
        encoder = OneHotEncoder(categories=[list(X[c].cat.categories) for c in categorical],
                                handle_unknown="ignore", sparse_output=False)
        self.encoder_ = ColumnTransformer([("onehot", encoder, categorical)], remainder="passthrough")
        Z = self.encoder_.fit_transform(X)
        if self.lam > 0:
            self.model_ = LogisticRegression(C=1.0 / (self.lam * Z.shape[0]), l1_ratio=1.0, solver="liblinear",
                                             intercept_scaling=1.0, tol=self.tol, max_iter=self.max_iter,
                                             random_state=0)   # liblinear shuffles its coordinates
        else:
            self.model_ = LogisticRegression(C=np.inf, solver="lbfgs", tol=self.tol, max_iter=self.max_iter)
        self.model_.fit(Z, np.asarray(y))
        self.classes_ = self.model_.classes_
        return self

    def decision_function(self, X: pd.DataFrame) -> np.ndarray:
        return self.model_.decision_function(self.encoder_.transform(X))

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        return self.model_.predict_proba(self.encoder_.transform(X))

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.model_.predict(self.encoder_.transform(X))


@dataclass
class Selected:
    """A model chosen by CV and refit on all training rows."""

    model: object
    key: str                      # the grid key: theta, radius or lam
    value: float                  # its chosen value
    hyper: str                    # the chosen hyper-parameter as text
    cv_ace: float                 # mean CV ACE of the choice
    cv_seconds: float             # the sweep (all fits), wall clock
    refit_seconds: float          # the refit on all training rows
    n_failed: int                 # failed CV fits (all combinations)
    status: str                   # certificate of the refit (DRO) or convergence (lasso)
    notes: List[str] = field(default_factory=list)   # warnings caught in this process, with counts
    cv_table: Optional[pd.DataFrame] = None


def select(estimator, key: str, values: Sequence[float], split: Split, cfg: Config) -> Selected:
    """Choose ``key`` from ``values`` by ``cfg.folds``-fold CV (minus ACE) with ``dk.cross_validate_grid``
    and refit the choice on all training rows; warnings of this process are recorded, not raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sweep = dk.cross_validate_grid(estimator, split.X_train, split.y_train, {key: list(values)},
                                       cv=cfg.folds, scoring=NEG_ACE, n_jobs=cfg.n_jobs, backend=cfg.backend,
                                       seed=cfg.seed, progress=cfg.verbose)
    value = float(sweep.best_params_[key])
    model = sweep.best_estimator_
    table = sweep.results[[f"param_{key}", "mean_test_score", "std_test_score", "mean_fit_time",
                           "n_failed_fits", "errors"]].rename(columns={f"param_{key}": "value"})
    table.insert(0, "key", key)
    table["mean_cv_ace"] = -table.pop("mean_test_score")
    return Selected(model=model, key=key, value=value, hyper=_hyper_text(key, value),
                    cv_ace=-float(sweep.best_score_), cv_seconds=sweep.elapsed,
                    refit_seconds=sweep.refit_time, n_failed=int(sweep.results["n_failed_fits"].sum()),
                    status=_fit_status(model), notes=_warning_notes(caught) + _uncertified_note(sweep),
                    cv_table=table)


def _uncertified_note(sweep) -> List[str]:
    """A note counting the CV fits whose certificate is not ``optimal`` (the sweep records each fit's)."""
    bad = sweep.fits[(sweep.fits["status"] != "") & (sweep.fits["status"] != "optimal")]
    if bad.empty:
        return []
    worst = float(bad["relative_gap"].max())
    return [f"{len(bad)} of {len(sweep.fits)} CV fits not certified ({', '.join(sorted(set(bad['status'])))}; "
            f"largest relative gap {worst:.1e})"]


def _hyper_text(key: str, value: float) -> str:
    if key == "theta":
        return f"theta={value:g} (eps={dk.radius_from_theta(value):.4g})"
    if key == "radius":
        return f"eps={value:g}"
    return f"lambda={value:g}"


def _fit_status(model) -> str:
    """``optimal (cutting_plane, rel. gap 1e-08)`` for a DRO fit; ``converged`` / ``not converged`` for
    the lasso."""
    result = getattr(model, "result_", None)
    if result is not None:
        return f"{result.status} ({result.method}, rel. gap {result.relative_gap:.1e})"
    n_iter = int(np.max(model.model_.n_iter_))
    return "converged" if n_iter < model.max_iter else f"not converged ({n_iter} iterations)"


def _warning_notes(caught) -> List[str]:
    counts = Counter(f"{w.category.__name__}: {str(w.message).splitlines()[0][:240]}" for w in caught)
    return [f"{text} (x{k})" if k > 1 else text for text, k in counts.items()]


# ============================================================================ 5. evaluation
def evaluate(models: Dict[str, object], split: Split, metric: dk.GroundMetric, mean: float,
             cfg: Config) -> dk.RobustnessReport:
    """Score every model on the same perturbed test sets of the calibrated shift model of one rho mean."""
    seed = np.random.SeedSequence(instance_seed(split.name, mean, cfg.seed) + [1])
    return dk.robustness_report(models, split.X_test, split.y_test, shift_model=metric, n_sets=cfg.n_sets,
                                scenarios=cfg.scenarios, seed=seed, n_bins=N_BINS, auc_ties="half")


# ============================================================================ per dataset
@dataclass
class RhoRun:
    """The weighted models of one rho mean and the report that scores them against the baselines."""

    mean: float
    rho: Rho
    free: Dict[str, List[str]]              # per weight setting
    weighted: Dict[str, Selected]           # per weight setting
    failed: Dict[str, str] = field(default_factory=dict)   # weight setting -> error of its CV / fit
    report: Optional[dk.RobustnessReport] = None
    eval_seconds: float = 0.0
    error: str = ""                                        # error of the evaluation
    methods: Dict[str, dict] = field(default_factory=dict)  # graph vs cutting plane (methods_runtime.compare_methods)


@dataclass
class DatasetRun:
    """Everything about one dataset: its split, the two baselines and one :class:`RhoRun` per rho mean."""

    name: str
    split: Optional[Split] = None
    unit: Optional[Selected] = None
    lasso: Optional[Selected] = None
    rhos: List[RhoRun] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    def selected(self, run: RhoRun) -> Dict[str, Selected]:
        """``{model name: Selected}`` of a rho mean, in the report's order."""
        out = {weighted_name(w): s for w, s in run.weighted.items()}
        out.update({UNIT: self.unit, LASSO: self.lasso})
        return out


def run_dataset(name: str, cfg: Config, log: Progress) -> DatasetRun:
    """Steps 1-5 for one dataset.  A failure is recorded in ``error`` (the report says so)."""
    start = time.perf_counter()
    out = DatasetRun(name)
    try:
        split = out.split = load_split(name, cfg.seed)
        log(f"{name}: {len(split.y_train)} training / {len(split.y_test)} test rows, "
            f"{len(split.numerical)} numerical + {len(split.categorical)} categorical features")
        log(f"{name}: unit DRO: CV over {len(cfg.radii)} radii x {cfg.folds} folds ...")
        out.unit = select(dro_classifier(dk.GroundMetric()), "radius", cfg.radii, split, cfg)
        log(f"{name}: unit DRO {out.unit.hyper}, CV ACE {out.unit.cv_ace:.4f} "
            f"[CV {out.unit.cv_seconds:.1f} s, refit {out.unit.refit_seconds:.1f} s]")
        out.lasso = select(LassoLogistic(), "lam", cfg.lambdas, split, cfg)
        log(f"{name}: lasso LR {out.lasso.hyper}, CV ACE {out.lasso.cv_ace:.4f} "
            f"[CV {out.lasso.cv_seconds:.1f} s, refit {out.lasso.refit_seconds:.1f} s]")
    except Exception as exc:  # noqa: BLE001 -- recorded in the report, the other datasets go on
        out.error = f"{type(exc).__name__}: {exc}"
        log(f"{name}: FAILED: {out.error}")
        out.seconds = time.perf_counter() - start
        return out
    for mean in cfg.rho_means:
        out.rhos.append(run_rho(out, mean, cfg, log))
    out.seconds = time.perf_counter() - start
    log(f"{name}: done in {out.seconds:.1f} s")
    return out


def run_rho(data: DatasetRun, mean: float, cfg: Config, log: Progress) -> RhoRun:
    """The weighted models of one rho mean (one per weight setting) and the robustness report.  A weight
    setting that fails is recorded in ``failed``; the others are still scored."""
    split = data.split
    rho = draw_rho(split.X_train, split.name, mean, cfg.seed)
    run = RhoRun(mean=mean, rho=rho, free={}, weighted={})
    shift_model = None
    for weights in cfg.weights:
        try:
            metric, run.free[weights] = weighted_metric(split.X_train, rho, weights)
            shift_model = metric   # every setting has the same unrounded rhos, so the same shift model
            log(f"{split.name}: rho mean {mean:g}, {weights} weights: CV over {len(cfg.thetas)} thetas x "
                f"{cfg.folds} folds ...")
            chosen = run.weighted[weights] = select(dro_classifier(metric), "theta", cfg.thetas, split, cfg)
        except Exception as exc:  # noqa: BLE001 -- recorded in the report
            run.failed[weights] = f"{type(exc).__name__}: {exc}"
            log(f"{split.name}: rho mean {mean:g}, {weights} weights: FAILED: {run.failed[weights]}")
            continue
        log(f"{split.name}: rho mean {mean:g}, {weights} weights ({len(run.free[weights])} free): "
            f"{chosen.hyper}, CV ACE {chosen.cv_ace:.4f} [CV {chosen.cv_seconds:.1f} s, refit "
            f"{chosen.refit_seconds:.1f} s, {chosen.status}]")
    if not run.weighted:
        return run
    if cfg.method_runtime and "integer" in run.weighted:
        from reproductions.sun2025.methods_runtime import compare_methods
        run.methods = compare_methods(run.weighted["integer"].model, split.X_train, split.y_train)
        log(f"{split.name}: rho mean {mean:g}: graph vs cutting plane: " + ", ".join(
            f"{m} {v['seconds']:.2f} s" if "seconds" in v else f"{m} failed" for m, v in run.methods.items()))
    start = time.perf_counter()
    models = {name: s.model for name, s in data.selected(run).items()}
    try:
        run.report = evaluate(models, split, shift_model, mean, cfg)
    except Exception as exc:  # noqa: BLE001 -- recorded in the report
        run.error = f"{type(exc).__name__}: {exc}"
        log(f"{split.name}: rho mean {mean:g}: scoring FAILED: {run.error}")
        return run
    run.eval_seconds = time.perf_counter() - start
    log(f"{split.name}: rho mean {mean:g}: scored {len(models)} models on {cfg.n_sets} sets x "
        f"{len(cfg.scenarios)} scenario(s) in {run.eval_seconds:.1f} s")
    return run
