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
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from numbers import Real
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError
from ..schema import is_dataframe
from . import scores as _scores
from .shift import SCENARIOS, ShiftedSets, seed_sequence, simulate_shift

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None

#: default number of perturbed sets per scenario (the paper uses 5,000)
DEFAULT_N_SETS = 1000
DEFAULT_METRICS = ("ace", "auc", "accuracy", "log_loss")


@dataclass(frozen=True)
class Metric:
    """A score of one test set: its name, display label, direction and batch kernel."""

    name: str
    label: str
    higher_is_better: bool
    batch: Callable[..., np.ndarray]  # (y, P, options) -> (k,) scores of the k rows of P


#: the metrics a report can compute (``metrics=`` names)
METRICS: Dict[str, Metric] = {
    "ace": Metric("ace", "ACE", False,
                  lambda y, P, o: _scores._ace_batch(y, P, o["n_bins"], o.get("order"))),
    "ece": Metric("ece", "ECE", False, lambda y, P, o: _scores._ece_batch(y, P, o["n_bins"])),
    "auc": Metric("auc", "AUC", True,
                  lambda y, P, o: _scores._auc_batch(y, P, o["auc_ties"], o.get("order"))),
    "accuracy": Metric("accuracy", "accuracy", True, lambda y, P, o: _scores._accuracy_batch(y, P)),
    "log_loss": Metric("log_loss", "log-loss", False, lambda y, P, o: _scores._log_loss_batch(y, P)),
}
#: metrics whose kernels sort each row of ``P`` the same (stable) way: one sort per block serves them
_SORTING = ("ace", "auc")
STATS = ("mean", "worst", "best", "median", "std", "nominal")
RELATIVE_STATS = ("mean", "worst", "best", "median", "nominal", "wins")


# ============================================================================ the report
@dataclass
class RobustnessReport:
    """Scores of several models over perturbed test sets (see :func:`robustness_report`).

    Attributes
    ----------
    per_set : long DataFrame, one row per (model, scenario, set, metric), columns ``model``,
        ``scenario``, ``set`` (0 .. K-1, the position in the scenario's ``ShiftedSets``), ``metric``,
        ``value``.  ``model``, ``scenario`` and ``metric`` are ordered categoricals (input order).
    nominal : DataFrame of the scores on the unperturbed test set, index model, one column per metric.
    models, scenarios, metrics : names in input order.
    shifts : ``{scenario: ShiftedSets}``; iterate one to see its sets again.
    pos_label : the positive class (``proba`` is the column of ``classes_ == pos_label``).
    n_bins, auc_ties : the ACE/ECE bins and the AUC tie rule used.
    seed : the entropy of the root seed the sets were drawn with (``None`` when ``shifts`` was
        passed): ``simulate_shift(..., seed=np.random.SeedSequence(report.seed))`` redraws them.
    """

    per_set: "pd.DataFrame"
    nominal: "pd.DataFrame"
    models: Tuple[str, ...]
    scenarios: Tuple[str, ...]
    metrics: Tuple[str, ...]
    shifts: Dict[str, ShiftedSets] = field(repr=False)
    pos_label: object = 1
    n_bins: int = 10
    auc_ties: str = "half"
    seed: object = None

    def __repr__(self) -> str:
        sizes = {s: len(self.shifts[s]) for s in self.scenarios}
        return (f"RobustnessReport(models={list(self.models)}, scenarios={sizes}, "
                f"metrics={list(self.metrics)})")

    # -------------------------------------------------------------- tables
    def values(self, metric: str = "ace", scenario: Optional[str] = None) -> "pd.DataFrame":
        """Wide table of one metric in one scenario: index ``set``, one column per model (paired)."""
        metric, scenario = self._metric(metric), self._scenario(scenario)
        rows = self.per_set[(self.per_set["metric"] == metric) & (self.per_set["scenario"] == scenario)]
        table = rows.pivot(index="set", columns="model", values="value")
        return table.reindex(columns=list(self.models)).rename_axis(columns=None)

    def summary(self, stats: Sequence[str] = ("mean", "worst", "std")) -> "pd.DataFrame":
        """One row per (scenario, model); columns ``(metric, stat)``.

        Stats over the ``K`` sets of the scenario: ``mean``; ``worst`` (max of ACE/ECE/log-loss, min
        of AUC/accuracy); ``best`` (the other extreme); ``median``; ``std`` (sample standard
        deviation, ddof = 1); ``nominal`` (the score on the unperturbed test set).
        """
        stats = _checked_names(stats, STATS, "stats", "summary")
        grouped = self.per_set.groupby(["scenario", "model", "metric"], observed=True)["value"]
        agg = grouped.agg(["mean", "min", "max", "median", "std"])
        up = np.array([METRICS[m].higher_is_better for m in agg.index.get_level_values("metric")])
        agg["worst"] = np.where(up, agg["min"], agg["max"])
        agg["best"] = np.where(up, agg["max"], agg["min"])
        nominal = self.nominal.stack().rename("nominal")
        nominal.index = nominal.index.set_names(["model", "metric"])
        agg = agg.join(nominal, on=["model", "metric"])
        table = agg[list(stats)].unstack("metric")
        table.columns = table.columns.swaplevel(0, 1)
        columns = pd.MultiIndex.from_product([list(self.metrics), list(stats)], names=["metric", "stat"])
        index = pd.MultiIndex.from_product([list(self.scenarios), list(self.models)],
                                           names=["scenario", "model"])
        table.index = pd.MultiIndex.from_arrays([table.index.get_level_values(i).astype(str)
                                                 for i in range(2)], names=["scenario", "model"])
        return table.reindex(index=index, columns=columns)

    def relative_to(self, baseline: str, stats: Sequence[str] = ("mean", "worst")) -> "pd.DataFrame":
        """Relative improvement of every other model over ``baseline``, per scenario.

        For a stat ``v`` of the model and ``v0`` of the baseline: ``(v0 - v) / v0`` for a
        lower-is-better metric (ACE, ECE, log-loss) and ``(v - v0) / v0`` for a higher-is-better one
        (AUC, accuracy), so a positive number is an improvement (0.36 = "36% lower calibration
        error").  The stat ``wins`` is paired: the fraction of the perturbed sets on which the model
        scores strictly better than the baseline on the same set.  Rows (scenario, model) without
        the baseline; columns ``(metric, stat)``.
        """
        if baseline not in self.models:
            raise ParameterError(f"relative_to: baseline must be one of the models {list(self.models)}, "
                                 f"got {baseline!r}")
        stats = _checked_names(stats, RELATIVE_STATS, "stats", "relative_to")
        others = [m for m in self.models if m != baseline]
        if not others:
            raise ParameterError(f"relative_to: the report has only the model {baseline!r}; compare it with "
                                 f"at least one other model (pass several models to robustness_report)")
        plain = [s for s in stats if s != "wins"]
        table = self.summary(plain or ["mean"])
        out = {}
        for scenario in self.scenarios:
            base = table.loc[(scenario, baseline)]
            wins = ({m: self._wins(m, scenario, others, baseline) for m in self.metrics}
                    if "wins" in stats else {})  # one pivot per metric serves every model
            for model in others:
                row = {}
                for metric in self.metrics:
                    sign = 1.0 if METRICS[metric].higher_is_better else -1.0
                    for stat in stats:
                        if stat == "wins":
                            row[(metric, stat)] = float(wins[metric][model])
                        else:
                            v0, v = base[(metric, stat)], table.loc[(scenario, model), (metric, stat)]
                            with np.errstate(divide="ignore", invalid="ignore"):
                                row[(metric, stat)] = sign * (v - v0) / abs(v0)
                out[(scenario, model)] = row
        result = pd.DataFrame.from_dict(out, orient="index")
        result.index = result.index.set_names(["scenario", "model"])
        result.columns = pd.MultiIndex.from_tuples(result.columns, names=["metric", "stat"])
        return result

    def _wins(self, metric: str, scenario: str, models: List[str], baseline: str) -> "pd.Series":
        """Per model: the fraction of the sets on which it scores strictly better than ``baseline``."""
        v = self.values(metric, scenario)
        better = v[models].gt if METRICS[metric].higher_is_better else v[models].lt
        return better(v[baseline], axis=0).mean()

    def to_markdown(self, table: Optional["pd.DataFrame"] = None, floatfmt: str = ".4f") -> str:
        """A markdown table of ``table`` (default: :meth:`summary`), index levels as leading columns.

        Written here rather than through ``DataFrame.to_markdown``, which needs ``tabulate``.
        """
        return markdown_table(self.summary() if table is None else table, floatfmt=floatfmt)

    # -------------------------------------------------------------- plot
    def plot(self, metric: str = "ace", scenario: Optional[str] = None, ax=None, *,
             show_nominal: bool = True):
        """Box plots of ``metric`` over the perturbed sets, one box per model (sun2025 Figures 2-5).

        ``scenario=None`` plots the only scenario, or all of them side by side (one group of boxes
        per scenario, one colour per model).  A diamond marks each model's unperturbed score
        (``show_nominal``).  Draws into ``ax`` (a new figure when ``None``) and returns the Axes.
        Needs matplotlib (``pip install drokit[plot]``).
        """
        metric = self._metric(metric)
        scenarios = list(self.scenarios) if scenario is None else [self._scenario(scenario)]
        if ax is None:
            plt = _pyplot()
            width = max(4.5, 1.5 + 0.9 * len(self.models) * len(scenarios))
            _, ax = plt.subplots(figsize=(width, 4), layout="constrained")
        else:
            _matplotlib()
        colors = _colors(len(self.models))
        group = len(self.models) + 1
        for g, name in enumerate(scenarios):
            table = self.values(metric, name)
            positions = g * group + np.arange(len(self.models), dtype=float)
            boxes = ax.boxplot([table[m].to_numpy() for m in self.models], positions=positions,
                               widths=0.6, patch_artist=True, manage_ticks=False)
            for patch, color in zip(boxes["boxes"], colors):
                patch.set_facecolor(color)
                patch.set_alpha(0.6)
            if show_nominal:
                ax.scatter(positions, self.nominal.loc[list(self.models), metric].to_numpy(), marker="D",
                           color="k", s=18, zorder=3, label="unperturbed" if g == 0 else None)
        if len(scenarios) == 1:
            ax.set_xticks(np.arange(len(self.models)), list(self.models))
            ax.set_title(f"{METRICS[metric].label}, {scenarios[0]}, "
                         f"{len(self.shifts[scenarios[0]])} perturbed sets")
        else:
            ax.set_xticks(np.arange(len(scenarios)) * group + (len(self.models) - 1) / 2, scenarios)
            ax.set_title(f"{METRICS[metric].label} over perturbed test sets")
            from matplotlib.patches import Patch
            handles = [Patch(facecolor=c, alpha=0.6, label=m) for m, c in zip(self.models, colors)]
            ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize="small")
        direction = "higher" if METRICS[metric].higher_is_better else "lower"
        ax.set_ylabel(f"{METRICS[metric].label} ({direction} is better)")
        if show_nominal and len(scenarios) == 1:
            ax.legend(fontsize="small")
        return ax

    # -------------------------------------------------------------- helpers
    def _metric(self, metric: str) -> str:
        if metric not in self.metrics:
            raise ParameterError(f"metric must be one of the report's metrics {list(self.metrics)}, "
                                 f"got {metric!r}")
        return metric

    def _scenario(self, scenario: Optional[str]) -> str:
        if scenario is None:
            if len(self.scenarios) > 1:
                raise ParameterError(f"the report has several scenarios {list(self.scenarios)}; name one")
            return self.scenarios[0]
        if scenario not in self.scenarios:
            raise ParameterError(f"scenario must be one of {list(self.scenarios)}, got {scenario!r}")
        return scenario


# ============================================================================ the builder
def robustness_report(models, X_test, y_test, *, shifts=None, shift_model=None, n_sets: Optional[int] = None,
                      scenarios=None, seed=None, metrics: Sequence[str] = DEFAULT_METRICS, n_bins: int = 10,
                      auc_ties: str = "half", pos_label=None, categorical_features=None,
                      batch_rows: int = 100_000, progress: bool = False) -> RobustnessReport:
    """Score fitted classifiers on perturbed copies of a test set (sun2025 §5.2).

    Parameters
    ----------
    models : ``{name: fitted classifier}``, or a list of them (named by class, ``_2``, ``_3`` for
        repeats; a Pipeline by its last step).  Each needs ``predict_proba`` and two ``classes_``.
    X_test, y_test : the unperturbed test set (DataFrame) and its binary labels.
    shifts : sets already drawn: a :class:`ShiftedSets`, a list of them, or ``{scenario name:
        ShiftedSets}``.  They must be copies of ``X_test``.  Exclusive with the next four arguments.
    shift_model : the shift model passed to :func:`simulate_shift` (a ``Calibration`` or a
        ``GroundMetric``, e.g. the calibrated metric of the DRO model), not a classifier.
    n_sets : perturbed sets per scenario (default 1,000; the paper uses 5,000).  The worst case
        grows with ``n_sets``: compare reports with the same ``n_sets``.
    scenarios : scenario names or ``(scenario, amount)`` pairs (``PAPER_SCENARIOS`` for the paper's
        eight); default ``("expected",)``.  Labels: ``"expected"``, ``"rho_offset=-0.2"``, ...
    seed : the seed of :func:`simulate_shift`.  Every scenario is drawn with the same seed, so the
        sets of a scenario equal ``simulate_shift(X_test, shift_model, n_sets, seed, scenario,
        amount)`` (common random numbers across scenarios).  ``None`` draws fresh entropy, kept in
        ``report.seed``.
    metrics : names among ``"ace"``, ``"ece"``, ``"auc"``, ``"accuracy"``, ``"log_loss"``
        (:mod:`drokit.evaluation.scores` states their formulas).
    n_bins : bins of ACE (equal count) and ECE (equal width).
    auc_ties : ``"half"`` (ties count 1/2, = scikit-learn) or ``"zero"`` (the paper's code).
    pos_label : the positive class; default the models' ``classes_[1]``.
    categorical_features : column roles for a plain ``GroundMetric`` shift model (as in the estimators).
    batch_rows : rows per ``predict_proba`` call (sets are concatenated up to this size; a value
        below ``len(X_test)`` predicts one set per call).
    progress : print one line per scenario and model to stderr.
    """
    if pd is None:  # pragma: no cover
        raise ImportError("robustness_report needs pandas")
    if not is_dataframe(X_test):
        raise DataError(f"robustness_report: X_test must be a pandas DataFrame, got {type(X_test).__name__}")
    named = _named_models(models)
    metrics = _checked_names(metrics, METRICS, "metrics", "robustness_report")
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


def _checked_names(names, allowed, what: str, where: str) -> Tuple[str, ...]:
    """``names`` (one name or several) as a tuple of distinct members of ``allowed``, not empty."""
    names = (names,) if isinstance(names, str) else tuple(names)
    if not names or any(s not in allowed for s in names) or len(set(names)) != len(names):
        raise ParameterError(f"{where}: {what} must be distinct names among {list(allowed)}, "
                             f"got {list(names)}")
    return names


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


def _matplotlib():
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("RobustnessReport.plot needs matplotlib: pip install drokit[plot]") from exc
    return matplotlib


def _pyplot():
    _matplotlib()
    import matplotlib.pyplot as plt
    return plt


def _colors(n: int) -> List[str]:
    import matplotlib
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return [cycle[i % len(cycle)] for i in range(n)]


# ---------------------------------------------------------------------------- markdown
def markdown_table(table: "pd.DataFrame", floatfmt: str = ".4f") -> str:
    """A GitHub markdown table of a DataFrame: index levels first, a MultiIndex header joined by spaces."""
    index_names = [str(n) if n is not None else "" for n in table.index.names]
    headers = index_names + [" ".join(str(p) for p in c) if isinstance(c, tuple) else str(c)
                             for c in table.columns]
    index_rows = [k if isinstance(k, tuple) else (k,) for k in table.index]
    rows = [[str(v) for v in keys] + [_cell(v, floatfmt) for v in values]
            for keys, values in zip(index_rows, table.to_numpy().tolist())]
    align = ["---"] * len(index_names) + ["---:"] * table.shape[1]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "|".join(align) + "|"] + [line(r) for r in rows])


def _cell(value, floatfmt: str) -> str:
    if isinstance(value, (float, np.floating)):
        return "nan" if np.isnan(value) else format(value, floatfmt)
    return str(value)


__all__ = ["robustness_report", "RobustnessReport", "METRICS", "Metric", "markdown_table", "scenario_label",
           "DEFAULT_N_SETS"]
