"""Code shared by the paper reproductions in ``examples/``.

``reproduce_selvi2022.py`` (selvi2022 Table 1) and ``reproduce_belbasi2023.py`` (belbasi2023 Tables 2-4)
run the same protocol: repeated random 80/20 splits, hyper-parameters chosen by K-fold CV on each split's
training rows (all CV fits of a data set in one ``dk.cross_validate_grid`` sweep), the choice refit on the
split's training rows and scored on its test rows, one-sided paired t-tests over the splits, and a
markdown report next to the published numbers with ``errors.csv`` / ``cv.csv`` / ``run.json`` (so that
``--render-only`` can rebuild it) and a hand-written discussion block kept across reruns.  This module
holds those pieces; ``reproduce_sun2025.py`` uses its process and markdown helpers.

The scripts are run as ``python examples/<script>.py`` (``examples/`` is then on ``sys.path``) or loaded
by the tests with ``importlib`` from their path; each script puts its own folder on ``sys.path`` before
importing this module, and :func:`pickle_by_value` has both sent by value to joblib / dask workers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable, ClassVar, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import KFold

import drokit as dk
from drokit.schema import FeatureSchema

ALPHA = 0.05                      # significance level of the paired tests (both papers)
TIE_TOL = 1e-7                    # |decision| below this predicts class 1 (see :func:`predict_with_tie_rule`)
P_TOL = 1e-12                     # differences below this count as zero in :func:`one_sided_p`
CV_TIE_ATOL = 1e-12               # CV errors this close are tied in :func:`select`

#: cutting-plane ``method_options`` of the mixed-feature fits (see :func:`cp_options`): without phase 1
#: they were 4-60x faster than drokit's defaults on the selvi2022 data (reproduce_selvi2022.py docstring);
#: on the belbasi2023 data they are faster with an l2 term or at radius 1e-5 and slower otherwise since
#: drokit runs phase 1 on one BLAS thread (commit c93503b; reproduce_belbasi2023.py docstring, 6.)
CP_OPTIONS = {"phase_one": False, "gap_tol": 1e-4}
CONFIGURATION_CUTS_MAX_FEATURES = 40   # configuration cuts up to this many categorical features


# ============================================================================ process plumbing
def pickle_by_value(*module_names: str) -> None:
    """Have the named modules' classes and functions sent by value to joblib's and dask's workers.

    Imported as a module (as the tests do), a script is usually not importable in the worker processes;
    the classes of a script's ``__main__`` are sent by value anyway (``"__main__"`` is skipped).
    """
    for module_name in module_names:
        module = sys.modules.get(module_name)
        if module_name == "__main__" or module is None:
            continue
        for name in ("joblib.externals.cloudpickle", "cloudpickle"):
            try:
                __import__(name, fromlist=["register_pickle_by_value"]).register_pickle_by_value(module)
            except (ImportError, AttributeError, ValueError):
                pass


class Progress:
    """Progress lines on stderr, prefixed with the script's name and the elapsed time; silent with
    ``--quiet``."""

    def __init__(self, quiet: bool, name: str):
        self.quiet = quiet
        self.name = name
        self.start = time.perf_counter()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.start
            print(f"[{self.name} {elapsed:7.1f} s] {message}", file=sys.stderr, flush=True)


def cpu_count() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_average() -> str:
    """The machine's 1 / 5 / 15-minute load average, ``"n/a"`` where the OS has none."""
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def versions(extra: Sequence[str] = ()) -> str:
    """``Python 3.x, drokit a.b, numpy ...``: the versions a report's numbers depend on."""
    names = ["drokit", "numpy", "scipy", "pandas", "scikit-learn", "clarabel", "joblib", *extra]
    out = []
    for name in names:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return f"Python {platform.python_version()}, " + ", ".join(out)


def stamp(cfg) -> None:
    """Record on ``cfg`` when the run ended (UTC) and the machine's load then (both shown in the report)."""
    cfg.generated = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M}"
    cfg.load_average = load_average()


def run_facts(script: str, cfg, seconds: float) -> str:
    """The report's opening paragraphs: when, how long, which preset, the exact command, the environment.

    ``cfg`` needs ``generated``, ``preset``, ``load_average``, ``command``, ``backend``, ``n_jobs``, ``seed``.
    """
    return f"""Generated by `examples/{script}` on {cfg.generated} UTC in {seconds / 60:.1f} min
({cfg.preset} preset; load average {cfg.load_average} at the end: the 2 cores were shared). Command:

```
{cfg.command}
```

Environment: {versions()}; {platform.platform()}, {cpu_count()} CPU cores; sweeps on joblib backend
`{cfg.backend}` with n_jobs = {cfg.n_jobs}. Seed {cfg.seed}."""


# ============================================================================ configuration
@dataclass(kw_only=True)
class RunOptions:
    """The options every reproduction has (:func:`add_protocol_arguments`, :func:`add_run_arguments`) and
    the facts of a run; a script's ``Config`` adds its grids and sets ``GRIDS``."""

    datasets: Tuple[str, ...]
    out: Path
    splits: int
    folds: int
    max_rows: int
    n_jobs: int = 2
    backend: str = "loky"
    scheduler: Optional[str] = None          # dask scheduler address (backend "dask")
    seed: int = 0
    preset: str = "default"
    quiet: bool = False
    verbose: bool = False
    command: str = ""
    render_only: bool = False
    generated: str = ""                      # UTC time of the run (set by main; kept by --render-only)
    load_average: str = ""                   # the machine's 1/5/15-minute load when the run ended
    #: model -> {grid parameter: the field holding its values} (``{}``: nothing to choose)
    GRIDS: ClassVar[Dict[str, Dict[str, str]]] = {}

    def grid(self, model: str) -> Dict[str, List[float]]:
        """The CV grid of ``model``: ``{parameter: values}`` (``{}`` when it has no hyper-parameter)."""
        return {param: list(getattr(self, name)) for param, name in self.GRIDS[model].items()}


# ============================================================================ command line
def add_protocol_arguments(ap: argparse.ArgumentParser, *, datasets: Sequence[str], full_help: str,
                           datasets_help: str, max_rows_help: str) -> None:
    """The protocol options every reproduction has: preset, data sets, splits, folds, row cap."""
    ap.add_argument("--full", action="store_true", help=full_help)
    ap.add_argument("--datasets", nargs="+", default=list(datasets), choices=datasets, metavar="NAME",
                    help=datasets_help)
    ap.add_argument("--splits", type=int, default=None, help="random 80/20 train/test splits")
    ap.add_argument("--folds", type=int, default=None, help="CV folds on the training rows")
    ap.add_argument("--max-rows", type=int, default=None, help=max_rows_help)


def protocol_options(args: argparse.Namespace, presets: Mapping[str, Mapping[str, object]], script: str,
                     argv: Optional[Sequence[str]]) -> Tuple[Dict[str, object], Callable[[object, str], object]]:
    """The :class:`RunOptions` fields of the parsed command line, and ``pick(value, key)``: ``value`` if the
    option was given, else the preset's (``--full``: ``presets["full"]``, otherwise ``presets["default"]``)."""
    name = "full" if args.full else "default"

    def pick(value, key):
        return presets[name][key] if value is None else value

    options = dict(datasets=tuple(dict.fromkeys(args.datasets)), out=args.out, splits=int(pick(args.splits, "splits")),
                   folds=int(pick(args.folds, "folds")), max_rows=int(pick(args.max_rows, "max_rows")),
                   n_jobs=args.n_jobs, backend=args.backend,
                   scheduler=args.scheduler, seed=args.seed, preset=name, quiet=args.quiet, verbose=args.verbose,
                   command=command_line(script, argv), render_only=args.render_only)
    return options, pick


def add_run_arguments(ap: argparse.ArgumentParser, *, seed: int, default_out: Path, out_help: str) -> None:
    """The options every reproduction has: parallelism, seed, output folder, --render-only, verbosity."""
    ap.add_argument("--n-jobs", type=int, default=2, help="parallel fits (joblib n_jobs)")
    ap.add_argument("--backend", default="loky", help="joblib backend of the sweeps: loky, dask, threading, ...")
    ap.add_argument("--scheduler", default=None,
                    help="with --backend dask: a scheduler address (tcp://host:8786); default: one LocalCluster "
                         "of --n-jobs single-threaded workers for the whole run")
    ap.add_argument("--seed", type=int, default=seed, help="seed of the subsamples, splits and folds")
    ap.add_argument("--out", type=Path, default=default_out, help=out_help)
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite <out>/README.md from the errors.csv, cv.csv and run.json of an earlier run "
                         "(no fits; the other options are taken from run.json)")
    ap.add_argument("--verbose", action="store_true", help="also the sweeps' per-fit progress lines")
    ap.add_argument("--quiet", action="store_true", help="no progress output")


def command_line(script: str, argv: Optional[Sequence[str]]) -> str:
    """``python examples/<script> <the options given>`` (the report shows the exact command)."""
    given = list(sys.argv[1:] if argv is None else argv)
    return " ".join([f"python examples/{script}"] + ([shlex.join(given)] if given else []))


def check_run_options(ap: argparse.ArgumentParser, cfg) -> None:
    """Reject option values the protocol cannot run (``ap.error`` exits with the usage line)."""
    if cfg.splits < 1 or cfg.folds < 2:
        ap.error("need --splits >= 1 and --folds >= 2")
    if cfg.scheduler and cfg.backend != "dask":
        ap.error("--scheduler needs --backend dask")


# ============================================================================ splits
@dataclass
class SplitPlan:
    """Row indices (into the full data set) of one train/test split and its CV folds."""

    train: np.ndarray
    test: np.ndarray
    folds: List[Tuple[np.ndarray, np.ndarray]]


def draw_splits(n_rows: int, *, splits: int, folds: int, max_rows: int, seed: int,
                fraction: float = 1.0) -> List[SplitPlan]:
    """``splits`` random unstratified 80/20 splits, each with ``folds`` unstratified shuffled CV folds of its
    training rows (both papers: "random" splits; the authors' ``train_test_split`` takes floor(0.2 n) rows).

    Split ``s`` uses ``numpy.random.default_rng([seed, s])``: a permutation of the rows, cut to its first
    ``max_rows`` (if ``0 < max_rows < n_rows``), then to its first ``floor(fraction * rows)`` (belbasi2023's
    "half of the data points" is ``fraction=0.5``: a random half of the rows the full variant uses); the
    first ``floor(0.2 n)`` of those are the test rows.  With the same seed, a ``fraction < 1`` plan's rows
    are a subset of the ``fraction=1`` plan's rows.
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    plans = []
    for s in range(splits):
        rng = np.random.default_rng([seed, s])
        rows = rng.permutation(n_rows)
        if 0 < max_rows < n_rows:
            rows = rows[:max_rows]
        if fraction < 1.0:
            rows = rows[:int(np.floor(fraction * len(rows)))]
        n_test = int(np.floor(0.2 * len(rows)))
        test, train = np.sort(rows[:n_test]), np.sort(rows[n_test:])
        kfold = KFold(n_splits=folds, shuffle=True, random_state=int(rng.integers(2**31 - 1)))
        plans.append(SplitPlan(train, test, [(train[a], train[b]) for a, b in kfold.split(train)]))
    return plans


# ============================================================================ models
def cp_options(m: int) -> Dict[str, object]:
    """The cutting-plane ``method_options`` of the mixed-feature fits for data with m categorical features:
    no phase 1, relative gap 1e-4 and configuration cuts up to ``CONFIGURATION_CUTS_MAX_FEATURES``
    features (drokit's budget cuts above)."""
    extra = {"cut_family": "configuration"} if m <= CONFIGURATION_CUTS_MAX_FEATURES else {}
    return {**CP_OPTIONS, **extra}


def predict_with_tie_rule(classes: np.ndarray, decision: np.ndarray) -> np.ndarray:
    """``classes[1]`` where the decision value is >= -TIE_TOL, else ``classes[0]``: a model with beta = 0
    (radii at which the ball can flip every label) predicts class 1 instead of the sign of solver noise."""
    return np.asarray(classes)[(np.asarray(decision) >= -TIE_TOL).astype(int)]


def dummies(X: pd.DataFrame) -> np.ndarray:
    """The 0/1 dummy matrix of the categorical DataFrame ``X`` in drokit's own coding
    (:meth:`drokit.schema.FeatureSchema.dummies`: one column per non-reference level, reference = the first
    of the dtype's categories, features in column order)."""
    if X.shape[1] == 0:
        return np.zeros((len(X), 0))
    schema = FeatureSchema.infer(X)
    return schema.dummies(schema.transform(X).Z).toarray()


class DesignedClassifier(ClassifierMixin, BaseEstimator):
    """A ``dk.DROClassifier`` fitted on a design derived from ``X``: a subclass's ``_prepare(X)`` learns what
    the design needs from the fit rows and returns the drokit estimator, ``_design(X)`` maps rows to its
    input.  Predictions follow :func:`predict_with_tie_rule`."""

    def _prepare(self, X) -> dk.DROClassifier:
        raise NotImplementedError

    def _design(self, X):
        raise NotImplementedError

    def fit(self, X, y) -> "DesignedClassifier":
        self.estimator_ = self._prepare(X).fit(self._design(X), np.asarray(y))
        self.result_ = self.estimator_.result_
        self.classes_ = self.estimator_.classes_
        return self

    def decision_function(self, X) -> np.ndarray:
        return self.estimator_.decision_function(self._design(X))

    def predict(self, X) -> np.ndarray:
        """Class ``classes_[1]`` when the decision value is >= -TIE_TOL (:func:`predict_with_tie_rule`)."""
        return predict_with_tie_rule(self.classes_, self.decision_function(X))


def error_scorer(estimator, X, y) -> float:
    """Minus the classification error (the sweeps maximize scores)."""
    return -float(np.mean(estimator.predict(X) != np.asarray(y)))


# ============================================================================ sweeps
#: the dask client of a run with ``--backend dask`` (one cluster for every sweep; see :func:`dask_session`)
_DASK_CLIENT = None


@contextlib.contextmanager
def dask_session(cfg) -> Iterator[None]:
    """With ``cfg.backend == "dask"`` and no ``cfg.scheduler``: one ``LocalCluster`` of ``cfg.n_jobs``
    single-threaded worker processes for every sweep of the run, closed at the end; otherwise nothing."""
    global _DASK_CLIENT
    if cfg.backend != "dask" or cfg.scheduler:
        yield
        return
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=max(1, cfg.n_jobs), threads_per_worker=1, processes=True)
    _DASK_CLIENT = Client(cluster)
    try:
        yield
    finally:
        _DASK_CLIENT.close()
        cluster.close()
        _DASK_CLIENT = None


def run_sweep(estimator, X, y, grid, cv, cfg):
    """``dk.cross_validate_grid`` of ``estimator`` over ``grid`` on the given ``(train, test)`` pairs, scored
    by :func:`error_scorer`, on ``cfg``'s backend; returns ``(sweep, warnings caught in this process)``."""
    scheduler = (cfg.scheduler or _DASK_CLIENT) if cfg.backend == "dask" else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sweep = dk.cross_validate_grid(estimator, X, y, grid, cv=cv, scoring=error_scorer, n_jobs=cfg.n_jobs,
                                       backend=cfg.backend, scheduler=scheduler, progress=cfg.verbose,
                                       refit=False)
    return sweep, caught


def warning_notes(caught) -> List[str]:
    """Distinct warning lines (first line, 200 characters) with their counts."""
    counts = Counter(f"{w.category.__name__}: {str(w.message).splitlines()[0][:200]}" for w in caught)
    return [f"{text} (x{k})" if k > 1 else text for text, k in counts.items()]


def candidate_frame(sweep, defaults: Mapping[str, object]) -> pd.DataFrame:
    """The parameters of every candidate of a sweep, one column per key of ``defaults`` (its value where
    a candidate does not set the key)."""
    return pd.DataFrame([{k: (p[k] if k in p else d) for k, d in defaults.items()}
                         for p in sweep.results["params"]])


def cv_errors(sweep, candidates: pd.DataFrame, folds: int, keys: Sequence[str]) -> pd.DataFrame:
    """Stage 1 of the protocol: per (split, candidate) the mean CV error over its folds.

    ``sweep`` ran on the folds of all splits in order (split s = sweep splits ``s*folds ... s*folds +
    folds - 1``); ``candidates`` are its candidates' parameters (:func:`candidate_frame`).  Returns one
    row per (split, *keys*) with ``cv_error`` (NaN when a fold fit failed), ``fit_seconds`` (summed over
    the folds), ``uncertified`` (fold fits whose status is not ``optimal``) and ``failed``.
    """
    fits = sweep.fits.merge(candidates, left_on="candidate", right_index=True)
    fits["split"] = fits.pop("split") // folds
    fits["fold_error"] = -fits["test_score"]                  # NaN for a failed fit
    return (fits.groupby(["split", *keys], sort=False)
            .agg(cv_error=("fold_error", lambda e: e.mean() if e.notna().all() else np.nan),
                 fit_seconds=("fit_time", "sum"),
                 uncertified=("status", lambda s: int(((s != "") & (s != "optimal")).sum())),
                 failed=("fold_error", lambda e: int(e.isna().sum())))
            .reset_index())


def cv_sweep(estimator, X, y, plans: Sequence[SplitPlan], grid, cfg,
             params: Mapping[str, object]) -> Tuple[pd.DataFrame, object, List[str]]:
    """Stage 1 of the protocol: every candidate of ``grid`` on every fold of every split, one sweep.

    Returns ``(table, sweep, notes)``: the :func:`cv_errors` table per (split, *params*) (``params``: the
    candidates' parameters with their defaults), the sweep, and the warnings caught in this process.
    """
    folds = [fold for plan in plans for fold in plan.folds]
    sweep, caught = run_sweep(estimator, X, y, grid, folds, cfg)
    table = cv_errors(sweep, candidate_frame(sweep, params), len(plans[0].folds), list(params))
    return table, sweep, warning_notes(caught)


def select(cv_table: pd.DataFrame, group: Sequence[str], tie_order: Sequence[str]) -> pd.DataFrame:
    """Per ``group`` (e.g. split and model) the CV choice: the lowest mean CV error; ties (within
    ``CV_TIE_ATOL``) go to the largest value of ``tie_order[0]``, then of ``tie_order[1]``, ... (the
    authors' ``<=`` scan over ascending grids in selvi2022's code: the most regularized of the tied).

    Returns one row per group with the group's columns, the chosen ``tie_order`` values, ``cv_error`` and
    ``n_tied`` (candidates at the minimum).  Groups whose every candidate failed are left out.
    """
    rows = []
    for key, part in cv_table.groupby(list(group), sort=False):
        ok = part[part["cv_error"].notna()]
        if ok.empty:
            continue
        best = ok["cv_error"].min()
        tied = ok[np.isclose(ok["cv_error"], best, rtol=0.0, atol=CV_TIE_ATOL)]
        chosen = tied.sort_values(list(tie_order), ascending=False, kind="stable").iloc[0]
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(group, key)), **{k: chosen[k] for k in tie_order}, "cv_error": best,
                     "n_tied": len(tied)})
    return pd.DataFrame(rows)


def test_fits(estimator, X, y, plans: Sequence[SplitPlan], picks: Sequence[Sequence[Mapping[str, object]]],
              cfg, defaults: Mapping[str, object]) -> Tuple[pd.DataFrame, float, List[str]]:
    """Stage 2 of the protocol: per split ``s``, one sweep whose candidates are ``picks[s]`` (one parameter
    dict each) and whose ``cv`` is the split's single (train, test) pair: each pick refit on the training
    rows and scored on the test rows.  (One sweep over all splits would fit every split's picks on every
    split.)

    Returns ``(fits, seconds, notes)``: one row per (split, pick) with the split, the parameters (columns
    of ``defaults``), ``error``, ``fit_seconds``, ``status``, ``fit_error``, ``n_train``, ``n_test``.
    """
    rows, notes = [], []
    start = time.perf_counter()
    for s, plan in enumerate(plans):
        grid = [{k: [v] for k, v in pick.items()} for pick in picks[s]]
        sweep, caught = run_sweep(estimator, X, y, grid, [(plan.train, plan.test)], cfg)
        notes += warning_notes(caught)
        params = candidate_frame(sweep, defaults)
        for fit in sweep.fits.itertuples():
            rows.append({"split": s, **params.iloc[fit.candidate].to_dict(), "error": -fit.test_score,
                         "fit_seconds": fit.fit_time, "status": fit.status or "", "fit_error": fit.error,
                         "n_train": len(plan.train), "n_test": len(plan.test)})
    return pd.DataFrame(rows), time.perf_counter() - start, list(dict.fromkeys(notes))


# ============================================================================ statistics
def one_sided_p(a: np.ndarray, b: np.ndarray) -> float:
    """p-value of the one-sided paired t-test "mean(a - b) < 0" (a better than b); 1.0 when undefined
    (fewer than 2 pairs, or all differences zero); 0.0 / 1.0 for constant nonzero differences (to 1e-12)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if d.size < 2 or np.all(np.abs(d) <= P_TOL):
        return 1.0
    if np.ptp(d) <= P_TOL:                       # constant difference (up to rounding): t = +-infinity
        return 0.0 if d.mean() < 0 else 1.0
    return float(stats.ttest_rel(a, b, alternative="less").pvalue)


def standard_errors(matrix: pd.DataFrame) -> pd.Series:
    """Standard error of each column's mean over the rows (splits): std (ddof 1) / sqrt(rows); NaN with
    fewer than 2 rows."""
    if len(matrix) > 1:
        return matrix.std(ddof=1) / np.sqrt(len(matrix))
    return matrix.std() * np.nan


# ============================================================================ markdown
def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: Optional[str] = None) -> str:
    """A GitHub markdown table; ``align`` is one character per column, ``l`` or ``r`` (default: first
    column left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---" if a == "l" else "---:" for a in align]

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "|".join(sep) + "|"] + [line(r) for r in rows])


def fmt_pct(value: Optional[float], digits: int = 2) -> str:
    """``12.34%``; ``–`` for a missing value."""
    return "–" if value is None or not np.isfinite(value) else f"{100 * value:.{digits}f}%"


def listed(values: Sequence[float]) -> str:
    """``0, 1e-05, 0.001``: a grid in the report."""
    return ", ".join(f"{v:g}" for v in values)


def preset_row(cfg, presets: Mapping[str, Mapping[str, object]], label: str, key: str,
               fmt: Callable[[object], str] = str) -> List[str]:
    """A row of a report's Sizes table: ``label``, this run's value of ``key``, the default's, ``--full``'s."""
    return [label, fmt(getattr(cfg, key)), fmt(presets["default"][key]), fmt(presets["full"][key])]


def section(title: str, *blocks: str) -> List[str]:
    """The lines of a report section: ``## title``, then each block, each followed by a blank line."""
    return [f"## {title}", ""] + [line for block in blocks for line in (block, "")]


def most_frequent(labels: Sequence[str], top: int = 3) -> str:
    """``a ×3; b ×1``: the ``top`` most frequent labels with their counts (``…`` when there are more)."""
    counts = Counter(labels)
    return "; ".join(f"{k} ×{v}" for k, v in counts.most_common(top)) + ("; …" if len(counts) > top else "")


# ============================================================================ report files
@dataclass
class RunResult:
    """What a reproduction's ``main`` produced: the report's path, the configuration, every run (one per
    data set, or per data set and variant) and the wall-clock seconds."""

    readme: Path
    config: object
    runs: List[object]
    seconds: float


DISCUSSION_START = "<!-- discussion:start (hand-written; kept when the script rewrites this file) -->"
DISCUSSION_END = "<!-- discussion:end -->"


def kept_discussion(readme: Path) -> str:
    """The hand-written discussion block of an existing README (kept across runs), or a placeholder."""
    if readme.is_file():
        text = readme.read_text()
        if DISCUSSION_START in text and DISCUSSION_END in text:
            return text[text.index(DISCUSSION_START):text.index(DISCUSSION_END) + len(DISCUSSION_END)]
    return f"{DISCUSSION_START}\n_No discussion written for this run yet._\n{DISCUSSION_END}"


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """A result table as CSV (10 significant digits)."""
    frame.to_csv(path, index=False, float_format="%.10g")


def open_report(cfg, runs: Sequence[object], seconds: float, errors: Optional[pd.DataFrame],
                cv: Optional[pd.DataFrame], config_keys: Sequence[str], run_keys: Sequence[str]) -> Tuple[Path, str]:
    """Create ``cfg.out``; with results (``errors`` not None) write errors.csv, cv.csv and, unless the run
    only renders, run.json.  Returns the README's path and its kept discussion block."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if errors is not None:
        write_csv(errors, out / "errors.csv")
        write_csv(cv, out / "cv.csv")
        if not cfg.render_only:
            save_run_record(out, cfg, runs, seconds, config_keys, run_keys)
    readme = out / "README.md"
    return readme, kept_discussion(readme)


def finish_report(readme: Path, parts: List[str], notes: Sequence[str], files: Sequence[str], script: str) -> Path:
    """Append the warnings caught in this process and the Files section (``files`` plus run.json) to the
    report's ``parts`` and write the README."""
    if notes:
        parts += ["Warnings caught in this process (fits in worker processes record theirs in the sweeps):", ""]
        parts += [f"- {n}" for n in dict.fromkeys(notes)] + [""]
    parts += ["## Files", "", *files,
              "- `run.json`: the configuration, timings and notes of the run; `python "
              f"examples/{script} --render-only --out <this folder>` rewrites this page from the "
              "three files (the discussion block is kept).", ""]
    readme.write_text("\n".join(parts))
    return readme


def save_run_record(out: Path, cfg, runs: Sequence[object], seconds: float, config_keys: Sequence[str],
                    run_keys: Sequence[str]) -> None:
    """``run.json``: what the report needs besides the CSVs (configuration, timings and notes per run)."""
    record = {"seconds": seconds, "config": {k: getattr(cfg, k) for k in config_keys},
              "runs": [{k: getattr(r, k) for k in run_keys} for r in runs]}
    (Path(out) / "run.json").write_text(json.dumps(record, indent=1, default=str))


def load_run(out: Path, config_cls) -> Tuple[dict, object, pd.DataFrame, pd.DataFrame]:
    """An earlier run in ``out``: ``(run.json record, its configuration as config_cls, errors.csv, cv.csv)``.

    Lists in the stored configuration become tuples; ``out`` and ``render_only=True`` are set; the test
    errors are snapped to multiples of 1 / n_test (the CSV keeps 10 significant digits).
    """
    out = Path(out)
    record = json.loads((out / "run.json").read_text())
    cfg = config_cls(**{**{k: (tuple(v) if isinstance(v, list) else v) for k, v in record["config"].items()},
                        "out": out, "render_only": True})
    errors = pd.read_csv(out / "errors.csv", dtype={"status": str, "fit_error": str}, keep_default_na=False,
                         na_values={"error": [""], "cv_error": [""], "fit_seconds": [""]})
    # a test error is (misclassified rows) / n_test: snap the CSV's 10 digits back to that fraction, so that
    # means and ties are the run's to the last bit (ties between models decide bold, marks and winners)
    errors["error"] = np.round(errors["error"] * errors["n_test"]) / errors["n_test"]
    cv = pd.read_csv(out / "cv.csv")
    return record, cfg, errors, cv


def execute(cfg, log: Progress, run_all: Callable[[], List[object]],
            write_report: Callable[[Sequence[object], object, float], Path]) -> RunResult:
    """Run ``run_all()`` (on one dask cluster with ``--backend dask``), stamp ``cfg``, write the report."""
    start = time.perf_counter()
    with dask_session(cfg):
        runs = run_all()
    seconds = time.perf_counter() - start
    stamp(cfg)
    readme = write_report(runs, cfg, seconds)
    log(f"report written to {readme} ({seconds / 60:.1f} min)")
    return RunResult(readme=readme, config=cfg, runs=runs, seconds=seconds)


def render(out: Path, config_cls, make_run: Callable[[dict, pd.DataFrame, pd.DataFrame], object],
           write_report: Callable[[Sequence[object], object, float], Path]) -> RunResult:
    """``--render-only``: rebuild the report of an earlier run in ``out`` from its run.json, errors.csv and
    cv.csv (``make_run(item, errors, cv)`` rebuilds one run of run.json's ``runs``)."""
    record, cfg, errors, cv = load_run(out, config_cls)
    runs = [make_run(item, errors, cv) for item in record["runs"]]
    readme = write_report(runs, cfg, record["seconds"])
    return RunResult(readme=readme, config=cfg, runs=runs, seconds=record["seconds"])
