"""The outcome of a sweep: :class:`SweepResult`, :class:`FitFailedError` and the tables they hold.

:func:`fits_table` collects the records of the fits (one row per (combination, split), the columns of
:data:`FIT_RECORD_DEFAULTS`; a failed fit scores ``error_score``), :func:`results_table` summarises them per
combination (mean and population std of the split scores, timings, failures, rank), :func:`best_index` picks the
best combination among those without a failed fit and :func:`warn_failures` warns (``FitFailedWarning``) about
failed fits.  :func:`describe` writes a combination of grid parameters for messages and progress lines.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import pandas as pd
from sklearn.exceptions import FitFailedWarning

from ..exceptions import DrokitError
from ..metrics import radius_from_theta

Split = Tuple[np.ndarray, np.ndarray]  # (train, test) index arrays of one split


class FitFailedError(DrokitError, RuntimeError):
    """A fit (or its scoring) failed during a sweep with ``error_score="raise"``, or every fit failed.

    The message names the parameters and the split; the original exception is the ``__cause__``.
    """


# --------------------------------------------------------------------------------------- result
@dataclass
class SweepResult:
    """Outcome of :func:`cross_validate_grid`.

    Attributes
    ----------
    results : pandas.DataFrame
        One row per parameter combination, in grid order: ``params`` (the grid's keys),
        ``param_<key>`` columns (``param_radius`` is added for a ``theta`` grid), ``mean_test_score``,
        ``std_test_score`` (population std over splits), ``rank_test_score`` (1 = best; rows with a
        failed fit rank last), ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``n_failed_fits``, ``n_uncertified_fits`` (drokit fits whose status is not ``"optimal"``),
        ``errors`` (one ``"split k (repeat r, fold f): Type: message"`` per failed
        fit, ``""`` if none) and ``split<k>_test_score`` for every split ``k``.
    fits : pandas.DataFrame
        One row per fit: ``candidate`` (row of ``results``), ``split``, ``test_score``,
        ``fit_time``, ``score_time``, ``error``, and for drokit estimators the fit's certificate:
        ``status`` (``result_.status``; ``""`` otherwise), ``method`` (``result_.method``, the compile path
        ``auto`` chose; ``""`` otherwise), ``solver`` (``result_.solver``, e.g. ``"barrier"`` or
        ``"clarabel"``; ``""`` otherwise), ``relative_gap`` (NaN otherwise) and
        ``warnings`` (the messages the fit warned, e.g. an uncertified cutting plane with
        ``on_inaccurate="warn"``; warnings raised in worker processes are otherwise lost).
    best_index_ : int or None
        Row of the best combination (highest mean score among those without failures), or ``None``
        when every combination had a failed fit (only with ``refit=False``; with a refit that raises
        :class:`FitFailedError`).
    best_params_ : dict or None
        Its grid parameters (``{"theta": 0.9, "kappa": 1.0}``), or ``None``.
    best_score_ : float
        Its mean test score (NaN when there is none).
    best_estimator_ : estimator or None
        A clone with ``best_params_``, refit on all of ``X, y`` (``refit=True``), else None.
    best_estimator_params_ : dict or None
        ``best_params_`` translated to ``set_params`` names (``ambiguity__radius``).
    splits : list of tuple of numpy.ndarray
        The (train, test) index arrays, in split order: pass ``cv=result.splits`` to reproduce them
        (e.g. in ``GridSearchCV``).
    scoring : str
        The scorer's name.
    backend : str
        The joblib backend that ran the fits.
    elapsed : float
        Wall-clock seconds of the sweep (without the refit).
    refit_time : float
        Seconds of the refit (0 without one).
    """

    results: pd.DataFrame
    fits: pd.DataFrame
    best_index_: Optional[int]
    best_params_: Optional[Dict[str, Any]]
    best_score_: float
    best_estimator_: Any
    best_estimator_params_: Optional[Dict[str, Any]]
    splits: List[Split] = field(repr=False)
    scoring: str = ""
    backend: str = ""
    elapsed: float = 0.0
    refit_time: float = 0.0

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table of the combinations, best first: parameters, mean +- std score, rank,
        mean fit time and failed fits."""
        table = self.results.sort_values("rank_test_score", kind="stable")
        params = [c for c in table.columns if c.startswith("param_")]
        head = [c[len("param_"):] for c in params] + [f"mean {self.scoring}", "std", "rank",
                                                       "fit time (s)", "failed"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for _, row in table.iterrows():
            cells = [_fmt(row[c], digits) for c in params]
            cells += [_fmt(row["mean_test_score"], digits), _fmt(row["std_test_score"], digits),
                      str(int(row["rank_test_score"])), _fmt(row["mean_fit_time"], 3),
                      str(int(row["n_failed_fits"]))]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def __str__(self) -> str:
        best = "none (every combination had a failed fit)" if self.best_params_ is None else \
            f"{describe(self.best_params_)}: {self.best_score_:.6g}"
        return (f"SweepResult: {len(self.results)} combinations x {len(self.splits)} splits on "
                f"backend {self.backend!r} in {self.elapsed:.2f} s; best {self.scoring}: {best}")


def _fmt(value, digits: int) -> str:
    if isinstance(value, (float, np.floating)):
        return "nan" if np.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def describe(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_fmt(v, 4)}" for k, v in params.items()) or "(no parameters)"


# ---------------------------------------------------------------------------------- the tables
#: the columns of the fits table after ``candidate`` and ``split``, with the value of a fit that did not
#: set them (a failed fit, or an estimator without a drokit ``result_``)
FIT_RECORD_DEFAULTS = {"test_score": float("nan"), "fit_time": float("nan"), "score_time": float("nan"),
                       "error": "", "status": "", "method": "", "solver": "", "relative_gap": float("nan"),
                       "warnings": ""}


def fits_table(records: Mapping[Tuple[int, int], dict], tasks, error_score) -> pd.DataFrame:
    """One row per fit in (candidate, split) order; failed fits score ``error_score``."""
    rows = [records[key] for key in tasks]
    fits = pd.DataFrame(rows, columns=["candidate", "split", *FIT_RECORD_DEFAULTS])
    failed = fits["error"] != ""
    if failed.any():  # never with error_score="raise": the first failure raised
        fits.loc[failed, "test_score"] = error_score
    if failed.all():
        first = rows[0]
        raise FitFailedError(f"all {len(rows)} fits failed; the first (candidate "
                             f"{first['candidate']}, split {first['split']}): {first['error']}\n"
                             f"{first.get('traceback', '')}")
    return fits


def results_table(fits: pd.DataFrame, candidates: List[Dict[str, Any]], n_splits: int) -> pd.DataFrame:
    """One row per combination: parameters, score statistics, timings, failures, split scores."""
    def per_candidate(column: str, dtype=float) -> np.ndarray:  # (candidate, split) matrix
        return fits[column].to_numpy(dtype).reshape(len(candidates), n_splits)

    scores, fit_time, score_time = (per_candidate(c) for c in ("test_score", "fit_time", "score_time"))
    errors = per_candidate("error", object)
    table = pd.DataFrame({"params": [dict(c) for c in candidates]})
    for key in dict.fromkeys(k for c in candidates for k in c):
        table[f"param_{key}"] = pd.Series([c.get(key, np.nan) for c in candidates], dtype=object)
        if key == "theta":
            table["param_radius"] = [radius_from_theta(c[key]) if key in c else np.nan
                                     for c in candidates]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows of timings
        table["mean_test_score"] = scores.mean(axis=1)
        table["std_test_score"] = scores.std(axis=1)
        table["mean_fit_time"] = np.nanmean(fit_time, axis=1)
        table["std_fit_time"] = np.nanstd(fit_time, axis=1)
        table["mean_score_time"] = np.nanmean(score_time, axis=1)
    failed = errors != ""
    table["n_failed_fits"] = failed.sum(axis=1)
    status = per_candidate("status", object)
    table["n_uncertified_fits"] = ((status != "") & (status != "optimal")).sum(axis=1)
    table["errors"] = ["; ".join(f"split {k}: {errors[i, k]}" for k in np.flatnonzero(failed[i]))
                       for i in range(len(candidates))]
    ranked = np.where(failed.any(axis=1), np.nan, table["mean_test_score"])
    table["rank_test_score"] = pd.Series(ranked).rank(method="min", ascending=False,
                                                      na_option="bottom").astype(int)
    for k in range(n_splits):
        table[f"split{k}_test_score"] = scores[:, k]
    return table


def best_index(results: pd.DataFrame) -> Optional[int]:
    ok = results["n_failed_fits"].to_numpy() == 0
    if not ok.any():
        return None
    means = np.where(ok, results["mean_test_score"].to_numpy(float), -np.inf)
    return int(np.argmax(means))  # the first of equal means, as scikit-learn's rank 1


def warn_failures(fits: pd.DataFrame, results: pd.DataFrame) -> None:
    n_failed = int((fits["error"] != "").sum())
    if n_failed:
        first = results.loc[results["n_failed_fits"] > 0, "errors"].iloc[0].split("; ")[0]
        warnings.warn(f"{n_failed} of {len(fits)} fits failed and score error_score; their "
                      f"combinations cannot be best; see results['errors']. First: {first}",
                      FitFailedWarning, stacklevel=3)
