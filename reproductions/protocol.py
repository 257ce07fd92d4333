"""The protocol the paper reproductions share: splits, the designed classifier, the sweeps, the selection.

selvi2022 (Table 1) and belbasi2023 (Tables 2-4) run the same protocol: repeated random 80/20 splits,
hyper-parameters chosen by K-fold CV on each split's training rows (all CV fits of a data set in one
``dk.cross_validate_grid`` sweep), the choice refit on the split's training rows and scored on its test
rows.  The paired tests are in :mod:`reproductions.stats`, the report files in :mod:`reproductions.report`.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import KFold

import drokit as dk
from drokit.schema import FeatureSchema

from reproductions.runtime import dask_client

TIE_TOL = 1e-7                    # |decision| below this predicts class 1 (see :func:`predict_with_tie_rule`)
CV_TIE_ATOL = 1e-12               # CV errors this close are tied in :func:`select`

#: cutting-plane ``method_options`` of the mixed-feature fits (see :func:`cp_options`): without phase 1
#: they were 4-60x faster than drokit's defaults on the selvi2022 data (reproductions.selvi2022 docstring);
#: on the belbasi2023 data they are faster with an l2 term or at radius 1e-5 and slower otherwise since
#: drokit runs phase 1 on one BLAS thread (commit c93503b; reproductions.belbasi2023 docstring, 6.)
CP_OPTIONS = {"phase_one": False, "gap_tol": 1e-4}
CONFIGURATION_CUTS_MAX_FEATURES = 40   # configuration cuts up to this many categorical features


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
def run_sweep(estimator, X, y, grid, cv, cfg):
    """``dk.cross_validate_grid`` of ``estimator`` over ``grid`` on the given ``(train, test)`` pairs, scored
    by :func:`error_scorer`, on ``cfg``'s backend (with ``--backend dask``: ``cfg.scheduler`` or the client of
    :func:`reproductions.runtime.dask_session`); returns ``(sweep, warnings caught in this process)``."""
    scheduler = (cfg.scheduler or dask_client()) if cfg.backend == "dask" else None
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
