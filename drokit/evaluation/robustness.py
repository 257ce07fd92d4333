"""Robustness report: scores of several fitted classifiers over perturbed copies of a test set.

sun2025 §5.2 (spec §6.4) scores each model on ``K`` perturbed test sets (the paper: 5,000) drawn
from the calibrated shift model, and reports the mean and the worst case over the sets of the
adaptive calibration error and the AUC, as box plots per model (its Figures 2-5).
:func:`robustness_report` does this for any fitted binary classifiers with ``predict_proba`` and
``classes_`` (drokit or scikit-learn):

* every model is scored on the **same** perturbed sets (a paired comparison): the sets of a
  scenario are drawn once and each one is passed to every model;
* ``worst`` is the maximum over the sets of a lower-is-better metric (ACE, ECE, log-loss) and the
  minimum of a higher-is-better one (AUC, accuracy);
* the predictions are batched: the sets are concatenated into blocks of about ``batch_rows`` rows
  and each model predicts a block in one ``predict_proba`` call (predictions must depend on the
  row only, which holds for every per-sample classifier); the scores of a block are computed for
  all its sets at once (:mod:`drokit.evaluation.scores`).

This module checks the inputs (models, labels, scenarios or sets already drawn), draws the sets and scores
them; the result, :class:`~drokit.evaluation.report.RobustnessReport` with its metrics (``METRICS``), tables
and plots, is in :mod:`drokit.evaluation.report`.
"""

from __future__ import annotations

import sys
import time
from numbers import Real
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError
from ..schema import is_dataframe
from . import scores as _scores
from .report import METRICS, RobustnessReport, checked_names
from .shift import SCENARIOS, ShiftedSets, seed_sequence, simulate_shift

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None

#: default number of perturbed sets per scenario (the paper uses 5,000)
DEFAULT_N_SETS = 1000
DEFAULT_METRICS = ("ace", "auc", "accuracy", "log_loss")
#: metrics whose kernels (``METRICS``) sort each row of ``P`` the same (stable) way: one sort per block
#: serves them
_SORTING = ("ace", "auc")


# ============================================================================ the builder
def robustness_report(models, X_test, y_test, *, shifts=None, shift_model=None, n_sets: Optional[int] = None,
                      scenarios=None, seed=None, metrics: Sequence[str] = DEFAULT_METRICS, n_bins: int = 10,
                      auc_ties: str = "half", pos_label=None, categorical_features=None,
                      batch_rows: int = 100_000, progress: bool = False) -> RobustnessReport:
    """Score fitted classifiers on perturbed copies of a test set (sun2025 §5.2).

    Parameters
    ----------
    models : dict or list
        ``{name: fitted classifier}``, or a list of them (named by class, ``_2``, ``_3`` for repeats; a
        Pipeline by its last step).  Each needs ``predict_proba`` and two ``classes_``.
    X_test : pandas.DataFrame
        The unperturbed test set (DataFrame).
    y_test : array_like of shape (n_samples,)
        The binary labels of ``X_test``.
    shifts : ShiftedSets or list of ShiftedSets or dict or None
        Sets already drawn: a :class:`ShiftedSets`, a list of them, or ``{scenario name:
        ShiftedSets}``.  They must be copies of ``X_test``.  Exclusive with the next four arguments.
    shift_model : Calibration or GroundMetric or None
        The shift model passed to :func:`simulate_shift` (a ``Calibration`` or a ``GroundMetric``,
        e.g. the calibrated metric of the DRO model), not a classifier.
    n_sets : int or None
        Perturbed sets per scenario (default 1,000; the paper uses 5,000).  The worst case grows with
        ``n_sets``: compare reports with the same ``n_sets``.
    scenarios : sequence or None
        Scenario names or ``(scenario, amount)`` pairs (``PAPER_SCENARIOS`` for the paper's eight);
        default ``("expected",)``.  Labels: ``"expected"``, ``"rho_offset=-0.2"``, ...
    seed : int or SeedSequence or Generator or None
        The seed of :func:`simulate_shift`.  Every scenario is drawn with the same seed, so the sets of
        a scenario equal ``simulate_shift(X_test, shift_model, n_sets, seed, scenario, amount)``
        (common random numbers across scenarios).  ``None`` draws fresh entropy, kept in
        ``report.seed``.
    metrics : sequence of str
        Names among ``"ace"``, ``"ece"``, ``"auc"``, ``"accuracy"``, ``"log_loss"``
        (:mod:`drokit.evaluation.scores` states their formulas).
    n_bins : int
        Bins of ACE (equal count) and ECE (equal width).
    auc_ties : {"half", "zero"}
        ``"half"`` (ties count 1/2, = scikit-learn) or ``"zero"`` (the paper's code).
    pos_label : object or None
        The positive class; default the models' ``classes_[1]``.
    categorical_features : array_like or None
        Column roles for a plain ``GroundMetric`` shift model (as in the estimators).
    batch_rows : int
        Rows per ``predict_proba`` call (sets are concatenated up to this size; a value below
        ``len(X_test)`` predicts one set per call).
    progress : bool
        Print one line per scenario and model to stderr.
    """
    if pd is None:  # pragma: no cover
        raise ImportError("robustness_report needs pandas")
    if not is_dataframe(X_test):
        raise DataError(f"robustness_report: X_test must be a pandas DataFrame, got {type(X_test).__name__}")
    named = _named_models(models)
    metrics = checked_names(metrics, METRICS, "metrics", "robustness_report")
    options = {"n_bins": _scores.check_n_bins(n_bins, "robustness_report"),
               "auc_ties": _scores.check_auc_ties(auc_ties, "robustness_report")}
    _scores.positive_int(batch_rows, "batch_rows", "robustness_report")
    pos_label = _positive_label(named, pos_label)
    y = _targets(y_test, X_test, named, pos_label)
    columns = {name: _proba_column(model, pos_label) for name, model in named.items()}

    if shifts is not None:
        given = {k: v for k, v in dict(shift_model=shift_model, n_sets=n_sets, scenarios=scenarios,
                                       seed=seed).items() if v is not None}
        if given:
            raise ParameterError(f"robustness_report: pass either shifts (sets already drawn) or "
                                 f"shift_model/n_sets/scenarios/seed to draw them, not both; got "
                                 f"shifts and {sorted(given)}")
        sets, root = _given_shifts(shifts, X_test), None
    else:
        if shift_model is None:
            raise ParameterError("robustness_report: pass shift_model= (a Calibration or a calibrated "
                                 "GroundMetric, see dk.simulate_shift) or shifts= (sets already drawn)")
        root = seed_sequence(seed, "robustness_report")
        sets = {label: simulate_shift(X_test, shift_model, DEFAULT_N_SETS if n_sets is None else n_sets,
                                      seed=np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key),
                                      scenario=scenario, amount=amount,
                                      categorical_features=categorical_features)
                for label, (scenario, amount) in _scenario_specs(scenarios).items()}

    nominal = {name: _score_block(y, _predict(model, X_test, columns[name], name)[None], metrics, options)
               for name, model in named.items()}
    results = {}
    for label, shifted in sets.items():
        results[label], seconds = _score_sets(named, columns, shifted, y, metrics, options, batch_rows)
        if progress:
            _report_progress(label, len(shifted), results[label], seconds, metrics)

    return RobustnessReport(
        per_set=_long_table(results, list(named), list(sets), metrics),
        nominal=pd.DataFrame({m: [float(nominal[name][m][0]) for name in named] for m in metrics},
                             index=pd.Index(list(named), name="model")),
        models=tuple(named), scenarios=tuple(sets), metrics=metrics, shifts=sets, pos_label=pos_label,
        n_bins=options["n_bins"], auc_ties=options["auc_ties"],
        seed=None if root is None else root.entropy)


# ---------------------------------------------------------------------------- scoring
def _score_sets(models: Dict[str, object], columns: Dict[str, int], sets: ShiftedSets, y: np.ndarray,
                metrics: Tuple[str, ...], options: dict, batch_rows: int):
    """``({model: {metric: (K,) scores}}, {model: seconds in predict_proba})`` of one scenario."""
    n = y.shape[0]
    parts = {name: {m: [] for m in metrics} for name in models}
    seconds = dict.fromkeys(models, 0.0)
    for block in sets._blocks(max(1, batch_rows // n)):  # the sets' rows stacked, one DataFrame
        for name, model in models.items():
            start = time.perf_counter()
            P = _predict(model, block, columns[name], name).reshape(-1, n)
            seconds[name] += time.perf_counter() - start
            for m, values in _score_block(y, P, metrics, options).items():
                parts[name][m].append(values)
    return {name: {m: np.concatenate(v) for m, v in d.items()} for name, d in parts.items()}, seconds


def _score_block(y: np.ndarray, P: np.ndarray, metrics: Tuple[str, ...],
                 options: dict) -> Dict[str, np.ndarray]:
    if any(m in _SORTING for m in metrics):
        options = dict(options, order=_scores.stable_order(P))
    return {m: METRICS[m].batch(y, P, options) for m in metrics}


def _predict(model, X, column: int, name: str) -> np.ndarray:
    """The positive-class probabilities of ``model`` on ``X``, checked (a drokit model checks ``X``'s columns
    against those of its fit, :func:`drokit.validation.check_features`)."""
    try:
        proba = np.asarray(model.predict_proba(X), dtype=float)
    except DataError as exc:
        raise DataError(f"robustness_report: model {name!r} cannot predict on X_test (or its shifted copies, "
                        f"which have its columns): {exc}") from None
    if proba.ndim != 2 or proba.shape != (X.shape[0], 2):
        raise DataError(f"robustness_report: predict_proba of model {name!r} returned shape {proba.shape}, "
                        f"expected ({X.shape[0]}, 2)")
    p = proba[:, column]
    if not np.isfinite(p).all() or ((p < 0) | (p > 1)).any():
        raise DataError(f"robustness_report: predict_proba of model {name!r} returned values that are not "
                        f"probabilities (NaN, inf or outside [0, 1])")
    return p


def _long_table(results, models: List[str], scenarios: List[str], metrics: Tuple[str, ...]) -> "pd.DataFrame":
    """The ``per_set`` DataFrame from ``{scenario: {model: {metric: (K,) values}}}``."""
    blocks = [(s, name, m, results[s][name][m]) for s in scenarios for name in models for m in metrics]
    sizes = [len(v) for *_, v in blocks]

    def labels(values: List[str], position: int) -> "pd.Categorical":
        codes = np.repeat([values.index(b[position]) for b in blocks], sizes)
        return pd.Categorical.from_codes(codes, categories=values, ordered=True)

    return pd.DataFrame({
        "model": labels(models, 1),
        "scenario": labels(scenarios, 0),
        "set": np.concatenate([np.arange(k) for k in sizes]),
        "metric": labels(list(metrics), 2),
        "value": np.concatenate([v for *_, v in blocks]),
    })


def _report_progress(label: str, n_sets: int, results, seconds, metrics: Tuple[str, ...]) -> None:
    for name, values in results.items():
        text = ", ".join(f"{m} mean {np.mean(values[m]):.4g} worst {_worst(m, values[m]):.4g}"
                         for m in metrics)
        print(f"robustness_report: {label} ({n_sets} sets) {name}: {text} [{seconds[name]:.1f} s predict]",
              file=sys.stderr, flush=True)


def _worst(metric: str, values: np.ndarray) -> float:
    return float(np.min(values) if METRICS[metric].higher_is_better else np.max(values))


# ---------------------------------------------------------------------------- validation
def _named_models(models) -> Dict[str, object]:
    if isinstance(models, Mapping):
        named = {str(k): v for k, v in models.items()}
        if len(named) != len(models):
            raise ParameterError("robustness_report: two models have the same name after str()")
    else:
        items = list(models) if isinstance(models, (list, tuple)) else [models]
        named = {}
        for model in items:
            base = type(model[-1] if hasattr(model, "steps") else model).__name__
            name, k = base, 1
            while name in named:
                k += 1
                name = f"{base}_{k}"
            named[name] = model
    if not named:
        raise ParameterError("robustness_report: models is empty")
    return named


def _positive_label(models: Dict[str, object], pos_label):
    """The positive class: ``pos_label`` or the models' common ``classes_[1]``."""
    classes = {}
    for name, model in models.items():
        if not hasattr(model, "predict_proba"):
            raise ParameterError(f"robustness_report: model {name!r} ({type(model).__name__}) has no "
                                 f"predict_proba (a DROClassifier needs loss='logistic')")
        c = getattr(model, "classes_", None)
        if c is None:
            raise ParameterError(f"robustness_report: model {name!r} is not fitted (no classes_)")
        c = np.asarray(c)
        if c.shape != (2,):
            raise ParameterError(f"robustness_report: model {name!r} must be a binary classifier, has "
                                 f"classes_ {c.tolist()}")
        classes[name] = c
    first = next(iter(classes))
    for name, c in classes.items():
        if set(c.tolist()) != set(classes[first].tolist()):
            raise ParameterError(f"robustness_report: models {first!r} and {name!r} have different classes_ "
                                 f"({classes[first].tolist()} and {c.tolist()})")
    if pos_label is None:
        return classes[first][1].item() if hasattr(classes[first][1], "item") else classes[first][1]
    if pos_label not in classes[first].tolist():
        raise ParameterError(f"robustness_report: pos_label={pos_label!r} is not one of the models' "
                             f"classes_ {classes[first].tolist()}")
    return pos_label


def _proba_column(model, pos_label) -> int:
    return int(np.flatnonzero(np.asarray(model.classes_) == pos_label)[0])


def _targets(y_test, X_test, models: Dict[str, object], pos_label) -> np.ndarray:
    """``y_test`` in {0, 1}, aligned with ``X_test`` (same length; same index for a Series)."""
    if hasattr(y_test, "index") and hasattr(y_test, "iloc") and not y_test.index.equals(X_test.index):
        raise DataError("robustness_report: y_test and X_test have different indexes; align them (or pass "
                        "y_test.to_numpy() if the rows correspond by position)")
    y = np.asarray(y_test)
    if y.ndim != 1 or y.shape[0] != X_test.shape[0]:
        raise DataError(f"robustness_report: y_test must be one-dimensional with one label per row of "
                        f"X_test ({X_test.shape[0]}), got shape {y.shape}")
    known = set(np.asarray(next(iter(models.values())).classes_).tolist())
    unknown = sorted({v for v in np.unique(y).tolist() if v not in known}, key=repr)
    if unknown:
        raise DataError(f"robustness_report: y_test has labels {unknown[:5]} that are not among the "
                        f"models' classes_ {sorted(known, key=repr)}")
    return _scores.binary_targets(y, pos_label, where="robustness_report")


def scenario_label(scenario: str, amount=None) -> str:
    """``"expected"``, ``"rho_offset=-0.2"``, ``"rho_jitter=0.05"``: the report's name of a scenario."""
    if amount is None:
        return scenario
    return f"{scenario}={amount:g}" if isinstance(amount, Real) else f"{scenario}={amount!r}"


def _scenario_specs(scenarios) -> Dict[str, Tuple[str, Optional[float]]]:
    scenarios = ("expected",) if scenarios is None else scenarios
    if isinstance(scenarios, str) or (isinstance(scenarios, tuple) and len(scenarios) == 2
                                      and isinstance(scenarios[0], str) and scenarios[0] in SCENARIOS
                                      and not isinstance(scenarios[1], (str, tuple))):
        scenarios = [scenarios]  # one scenario, not a list of them
    specs: Dict[str, Tuple[str, Optional[float]]] = {}
    for item in scenarios:
        scenario, amount = (item, None) if isinstance(item, str) else tuple(item)
        if scenario not in SCENARIOS:
            raise ParameterError(f"robustness_report: scenarios must hold names among {SCENARIOS} or "
                                 f"(name, amount) pairs, got {item!r}")
        label = scenario_label(scenario, amount)
        if label in specs:
            raise ParameterError(f"robustness_report: scenario {label!r} is listed twice")
        specs[label] = (scenario, amount)
    if not specs:
        raise ParameterError("robustness_report: scenarios is empty")
    return specs


def _given_shifts(shifts, X_test) -> Dict[str, ShiftedSets]:
    if isinstance(shifts, ShiftedSets):
        shifts = [shifts]
    if isinstance(shifts, Mapping):
        sets = {str(k): v for k, v in shifts.items()}
    else:
        sets = {}
        for s in shifts:
            label = scenario_label(s.scenario, s.amount) if isinstance(s, ShiftedSets) else repr(s)
            if label in sets:
                raise ParameterError(f"robustness_report: two ShiftedSets have the scenario {label!r}; "
                                     f"pass a dict to name them")
            sets[label] = s
    for label, s in sets.items():
        if not isinstance(s, ShiftedSets):
            raise ParameterError(f"robustness_report: shifts[{label!r}] must be a ShiftedSets "
                                 f"(dk.simulate_shift), got {type(s).__name__}")
        source = s.source
        if source.shape != X_test.shape or not source.index.equals(X_test.index) \
                or not source.columns.equals(X_test.columns):
            raise DataError(f"robustness_report: shifts[{label!r}] are copies of another test set (shape "
                            f"{source.shape}) than X_test (shape {X_test.shape}) or differ in index/columns")
    if not sets:
        raise ParameterError("robustness_report: shifts is empty")
    return sets


__all__ = ["robustness_report", "scenario_label", "DEFAULT_N_SETS"]
