"""Folds and validation scores of the CV estimators on Dask collections, as sums over partitions (issue 25).

On a Dask table the rows stay in their partitions, so a fold is not a list of row indices but a number per row, drawn
in the partition (:func:`fold_numbers`), and a validation score is computed from sums over the held-out rows of every
partition.  A score ``s(model, rows)`` qualifies when it is a function of weighted sums over the rows:

* the mean of a per-row quantity ``q_n`` (log-loss, 0/1 hit, squared or absolute error, Brier score):
  ``s = sign * sum_n w_n q_n / sum_n w_n`` (:class:`MeanScore`; ``neg_root_mean_squared_error`` the root of the mean),
* ``R^2 = 1 - sum_n w_n (y_n - yhat_n)^2 / sum_n w_n (y_n - ybar)^2`` with
  ``sum_n w_n (y_n - ybar)^2 = sum_n w_n y_n^2 - (sum_n w_n y_n)^2 / sum_n w_n`` (:class:`R2Score`),

and the ``"shift"`` criterion's score of each shifted copy of the held-out rows is one of these, the copies drawn in
each partition (:class:`ShiftSums`).  Each partition returns its sums (:func:`held_out_sums`), this process adds them
and applies the score: the same number as scikit-learn's scorer on the concatenated held-out rows, up to the order of
the sums.  Scores that need every held-out row at once (``roc_auc``, ``average_precision``: a global sort) are refused.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError

#: the seeds of a partition's shifted copies: ``seed + SHIFT_SEED_STRIDE * partition`` (partition 0 draws the copies an
#: in-memory ``ShiftScorer`` with ``seed`` draws)
SHIFT_SEED_STRIDE = 1_000_003


def fold_numbers(y, n_folds: int, seed: int, partition: int, stratify: bool) -> np.ndarray:
    """The fold (``0 .. n_folds - 1``) of every row of one partition: rows shuffled with the generator of
    ``(seed, partition)`` and dealt round-robin from a random first fold, class by class when ``stratify`` (each fold
    then holds every class's rows in proportion, to one row per partition).  Deterministic: the binding and every
    scoring pass compute the same folds."""
    y = np.asarray(y).ravel()
    rng = np.random.default_rng([int(seed), int(partition)])
    folds = np.empty(y.shape[0], dtype=np.int32)
    groups = [np.flatnonzero(y == c) for c in np.unique(y)] if stratify else [np.arange(y.shape[0])]
    dealt = int(rng.integers(n_folds))
    for rows in groups:
        folds[rng.permutation(rows)] = (dealt + np.arange(rows.size)) % n_folds
        dealt += rows.size
    return folds


def rows_of_fold(block, folds, fold: int):
    """The rows of ``block`` (pandas or numpy, ``None`` passes) whose fold is ``fold``."""
    if block is None:
        return None
    index = np.flatnonzero(np.asarray(folds) == fold)
    return block.iloc[index] if hasattr(block, "iloc") else np.asarray(block)[index]


def _weights(w, n: int) -> np.ndarray:
    return np.ones(n) if w is None else np.asarray(w, dtype=float).ravel()


class MeanScore:
    """``sign * (sum_n w_n q_n / sum_n w_n)`` (the root of the mean with ``root``) of a per-row quantity ``q`` (module
    docstring).  ``kind``: ``"log_loss"``, ``"hit"``, ``"squared"``, ``"absolute"``, ``"brier"``."""

    n_stats = 2

    def __init__(self, kind: str, sign: float, labels=None, root: bool = False):
        self.kind, self.sign, self.root = kind, float(sign), bool(root)
        self.labels = None if labels is None else np.asarray(labels)

    def per_row(self, model, X, y) -> np.ndarray:
        """``q_n`` of every row (for ``"log_loss"``: the probabilities over every label, for scikit-learn's sum)."""
        y = np.asarray(y).ravel()
        if self.kind == "hit":
            return (np.asarray(model.predict(X)).ravel() == y).astype(float)
        if self.kind in ("squared", "absolute"):
            error = y.astype(float) - np.asarray(model.predict(X), dtype=float).ravel()
            return error ** 2 if self.kind == "squared" else np.abs(error)
        proba = model.predict_proba(X)
        full = np.zeros((proba.shape[0], self.labels.size))
        full[:, np.searchsorted(self.labels, model.classes_)] = proba
        if self.kind == "brier":             # binary: (P(y = labels[1]) - 1[y = labels[1]])^2, sklearn's pos_label
            return (full[:, -1] - (y == self.labels[-1])) ** 2
        return full

    def stats(self, model, X, y, w) -> np.ndarray:
        w = _weights(w, len(y))
        if self.kind == "log_loss":          # scikit-learn's own sum (its clipping), over every label of the data
            from sklearn.metrics import log_loss
            total = log_loss(np.asarray(y).ravel(), self.per_row(model, X, y), normalize=False, sample_weight=w,
                             labels=self.labels)
            return np.array([total, w.sum()])
        return np.array([w @ self.per_row(model, X, y), w.sum()])

    def value(self, stats: np.ndarray) -> float:
        if not stats[1] > 0:
            return float("nan")
        mean = stats[0] / stats[1]
        return self.sign * float(np.sqrt(mean) if self.root else mean)

    def __repr__(self) -> str:
        return f"MeanScore({self.kind!r}, sign={self.sign:g}, root={self.root})"


class R2Score:
    """``R^2`` from ``(sum w, sum w y, sum w y^2, sum w (y - yhat)^2)`` (module docstring); scikit-learn's
    ``force_finite`` convention when the held-out labels are constant (1 for a perfect fit, else 0)."""

    n_stats = 4

    def stats(self, model, X, y, w) -> np.ndarray:
        y = np.asarray(y, dtype=float).ravel()
        w = _weights(w, y.size)
        residual = y - np.asarray(model.predict(X), dtype=float).ravel()
        return np.array([w.sum(), w @ y, w @ y ** 2, w @ residual ** 2])

    def value(self, stats: np.ndarray) -> float:
        total, first, second, residual = stats
        if not total > 0:
            return float("nan")
        spread = max(second - first ** 2 / total, 0.0)
        if spread <= 1e-12 * max(second, 1e-300):
            return 1.0 if residual == 0 else 0.0
        return float(1.0 - residual / spread)

    def __repr__(self) -> str:
        return "R2Score()"


#: scorer names a Dask cross-validation computes from sums (module docstring), by task
SUM_SCORES = {"neg_log_loss": "classification", "accuracy": "classification", "neg_brier_score": "classification",
              "r2": "regression", "neg_mean_squared_error": "regression",
              "neg_root_mean_squared_error": "regression", "neg_mean_absolute_error": "regression"}


def sum_score(scoring, classifier: bool, labels) -> Tuple[object, str]:
    """``(score, name)`` for ``scoring`` on Dask collections: ``None`` is ``neg_log_loss`` for a classifier (over every
    class of ``y``, as :class:`~drokit.model_selection.criteria.LogLossScorer`) and the estimator's ``score`` (R^2)
    for a regressor; a name of :data:`SUM_SCORES`; anything else a :class:`ParameterError`."""
    if scoring is None:
        return (MeanScore("log_loss", -1.0, labels), "neg_log_loss") if classifier else (R2Score(), "score")
    task = SUM_SCORES.get(scoring) if isinstance(scoring, str) else None
    if task is None or (task == "classification") != classifier:
        names = sorted(n for n, t in SUM_SCORES.items() if (t == "classification") == classifier)
        raise ParameterError(f"scoring={scoring!r}: on Dask collections a validation score is computed from sums over "
                             f"the partitions' held-out rows, and this one is not such a score (a callable, a "
                             f"rank-based score such as roc_auc, or one for the other task); use one of {names}, or "
                             f"cross-validate on an in-memory sample")
    if scoring == "neg_log_loss":
        return MeanScore("log_loss", -1.0, labels), scoring
    if scoring == "accuracy":
        return MeanScore("hit", 1.0), scoring
    if scoring == "neg_brier_score":
        if np.asarray(labels).size != 2:
            raise ParameterError("scoring='neg_brier_score' is for two classes")
        return MeanScore("brier", -1.0, labels), scoring
    if scoring == "r2":
        return R2Score(), scoring
    kind = "absolute" if scoring == "neg_mean_absolute_error" else "squared"
    return MeanScore(kind, -1.0, root=scoring == "neg_root_mean_squared_error"), scoring


class ShiftSums:
    """The ``"shift"`` criterion (:class:`~drokit.model_selection.criteria.ShiftScorer`) from sums: ``n_sets`` copies
    of each partition's held-out rows drawn by :func:`drokit.simulate_shift` (seed ``seed + SHIFT_SEED_STRIDE *
    partition``), the sums of ``inner`` per copy; the value is the copies' scores' mean or worst."""

    def __init__(self, inner, shift):
        self.inner, self.shift = inner, shift            # shift: a ShiftScorer (model, n_sets, aggregate, seed)
        self.n_stats = inner.n_stats * shift.n_sets

    def stats(self, model, X, y, w, partition: int = 0) -> np.ndarray:
        from ..evaluation.shift import simulate_shift
        from ..validation import is_dataframe
        if not is_dataframe(X):
            raise DataError("criterion='shift' perturbs the validation rows with drokit.simulate_shift, which needs "
                            f"a pandas DataFrame (a Dask DataFrame's partitions); got {type(X).__name__}")
        roles = getattr(model, "categorical_features", None)
        sets = simulate_shift(X, self.shift.shift_model_of(model), self.shift.n_sets,
                              seed=self.shift.seed + SHIFT_SEED_STRIDE * int(partition), scenario=self.shift.scenario,
                              categorical_features=roles)
        return np.concatenate([self.inner.stats(model, shifted, y, w) for shifted in sets])

    def value(self, stats: np.ndarray) -> float:
        scores = np.array([self.inner.value(s) for s in np.reshape(stats, (self.shift.n_sets, self.inner.n_stats))])
        return float(np.mean(scores) if self.shift.aggregate == "mean" else np.min(scores))


def held_out_sums(X, y, w, folds, models: Sequence[Tuple[int, object]], score, partition: int
                  ) -> Tuple[np.ndarray, List[str]]:
    """One partition's ``(len(models), score.n_stats)`` sums: model ``j = (fold, fitted model)`` scored on the rows of
    its held-out fold (zeros without such rows); a model whose scoring raises gets ``nan`` sums and its error text
    (the others are kept).  ``models[j] = (fold, None)``: a failed fit, ``nan``."""
    out = np.zeros((len(models), score.n_stats))
    errors = [""] * len(models)
    folds = np.asarray(folds).ravel()
    for j, (fold, model) in enumerate(models):
        if model is None:
            out[j] = np.nan
            continue
        if not np.any(folds == fold):
            continue
        Xk, yk, wk = (rows_of_fold(b, folds, fold) for b in (X, y, w))
        try:
            out[j] = score.stats(model, Xk, yk, wk, partition) if isinstance(score, ShiftSums) else \
                score.stats(model, Xk, yk, wk)
        except Exception as exc:  # noqa: BLE001 -- recorded as the fit's scoring error, as in memory
            out[j] = np.nan
            errors[j] = f"score: {type(exc).__name__}: {exc}"
    return out, errors


def combined_scores(pieces: Sequence[Tuple[np.ndarray, List[str]]], score) -> Tuple[np.ndarray, List[str]]:
    """The partitions' :func:`held_out_sums` added up and scored: ``(scores, first error of each model)``."""
    total = np.sum([p[0] for p in pieces], axis=0)
    errors = [next((p[1][j] for p in pieces if p[1][j]), "") for j in range(total.shape[0])]
    scores = np.array([np.nan if errors[j] or np.any(np.isnan(total[j])) else score.value(total[j])
                       for j in range(total.shape[0])])
    return scores, errors


def user_folds(values: np.ndarray) -> np.ndarray:
    """The fold numbers of a user's fold collection (its distinct values; ``-1`` marks rows that are always trained
    on, as scikit-learn's ``PredefinedSplit``)."""
    values = np.unique(np.asarray(values))
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise DataError(f"cv: the fold numbers must be integers, got {values.dtype}")
    folds = values[values != -1]
    if folds.size < 2 or np.any(folds < 0):
        raise DataError(f"cv: a fold collection needs at least two folds numbered >= 0 (-1: always trained on), got "
                        f"{values.tolist()[:10]}")
    return folds


__all__ = ["fold_numbers", "rows_of_fold", "MeanScore", "R2Score", "ShiftSums", "SUM_SCORES", "sum_score",
           "held_out_sums", "combined_scores", "user_folds", "SHIFT_SEED_STRIDE"]
