"""The robustness report's result: :class:`RobustnessReport`, its metrics, tables, markdown and box plots.

:func:`~drokit.evaluation.robustness.robustness_report` builds a :class:`RobustnessReport` from the scores of
fitted classifiers over perturbed copies of a test set (sun2025 §5.2).  This module holds what the report is
made of and what it shows:

* :data:`METRICS`, the metrics a report can compute (:class:`Metric`: name, display label, direction and the
  batch kernel of :mod:`drokit.evaluation.scores` that scores many sets at once);
* :class:`RobustnessReport`: the per-set scores (a long DataFrame), the nominal scores, the
  :meth:`~RobustnessReport.summary` over the sets (``worst`` is the maximum over the sets of a
  lower-is-better metric (ACE, ECE, log-loss) and the minimum of a higher-is-better one (AUC, accuracy)),
  the paired comparison :meth:`~RobustnessReport.relative_to` a baseline, and box plots per model
  (:meth:`~RobustnessReport.plot`, the paper's Figures 2-5; needs matplotlib);
* :func:`markdown_table`, a markdown table of a DataFrame written without ``tabulate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..exceptions import ParameterError
from .scores import accuracy_batch, auc_batch, ace_batch, ece_batch, log_loss_batch
from .shift import ShiftedSets

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


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
                  lambda y, P, o: ace_batch(y, P, o["n_bins"], o.get("order"))),
    "ece": Metric("ece", "ECE", False, lambda y, P, o: ece_batch(y, P, o["n_bins"])),
    "auc": Metric("auc", "AUC", True,
                  lambda y, P, o: auc_batch(y, P, o["auc_ties"], o.get("order"))),
    "accuracy": Metric("accuracy", "accuracy", True, lambda y, P, o: accuracy_batch(y, P)),
    "log_loss": Metric("log_loss", "log-loss", False, lambda y, P, o: log_loss_batch(y, P)),
}
STATS = ("mean", "worst", "best", "median", "std", "nominal")
RELATIVE_STATS = ("mean", "worst", "best", "median", "nominal", "wins")


# ============================================================================ the report
@dataclass
class RobustnessReport:
    """Scores of several models over perturbed test sets (see :func:`robustness_report`).

    Attributes
    ----------
    per_set : pandas.DataFrame
        Long DataFrame, one row per (model, scenario, set, metric), columns ``model``, ``scenario``,
        ``set`` (0 .. K-1, the position in the scenario's ``ShiftedSets``), ``metric``, ``value``.
        ``model``, ``scenario`` and ``metric`` are ordered categoricals (input order).
    nominal : pandas.DataFrame
        DataFrame of the scores on the unperturbed test set, index model, one column per metric.
    models, scenarios, metrics : tuple of str
        Names in input order.
    shifts : dict of str to ShiftedSets
        ``{scenario: ShiftedSets}``; iterate one to see its sets again.
    pos_label : object
        The positive class (``proba`` is the column of ``classes_ == pos_label``).
    n_bins : int
        The ACE/ECE bins used.
    auc_ties : str
        The AUC tie rule used.
    seed : int or None
        The entropy of the root seed the sets were drawn with (``None`` when ``shifts`` was passed):
        ``simulate_shift(..., seed=np.random.SeedSequence(report.seed))`` redraws them.
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
        stats = checked_names(stats, STATS, "stats", "summary")
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
        stats = checked_names(stats, RELATIVE_STATS, "stats", "relative_to")
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


# ---------------------------------------------------------------------------- names
def checked_names(names, allowed, what: str, where: str) -> Tuple[str, ...]:
    """``names`` (one name or several) as a tuple of distinct members of ``allowed``, not empty."""
    names = (names,) if isinstance(names, str) else tuple(names)
    if not names or any(s not in allowed for s in names) or len(set(names)) != len(names):
        raise ParameterError(f"{where}: {what} must be distinct names among {list(allowed)}, "
                             f"got {list(names)}")
    return names


# ---------------------------------------------------------------------------- plot
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


__all__ = ["RobustnessReport", "METRICS", "Metric", "markdown_table"]
