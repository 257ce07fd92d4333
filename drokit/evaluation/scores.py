"""Scores of probabilistic binary classifiers: calibration error, AUC, accuracy, log-loss.

The metrics of sun2025 §5.2 (spec §6.4): the **adaptive calibration error** with 10 equal-count bins
and the **AUC**, plus accuracy and log-loss.  Every public function scores one test set; the batch
versions (``_*_batch``) score ``k`` sets at once from a ``(k, n)`` matrix of probabilities that
share the labels ``y`` (the perturbed copies of one test set), without a Python loop over sets.

Notation: ``y_i`` in {0, 1} is 1 for the positive class, ``p_i`` the predicted probability of the
positive class, ``n`` the number of samples, ``n_+`` / ``n_-`` the positives / negatives.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Optional, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError
from ..schema import is_missing

#: probabilities are clipped to ``[LOG_LOSS_EPS, 1 - LOG_LOSS_EPS]`` inside the log-loss
LOG_LOSS_EPS = 1e-15
AUC_TIES = ("half", "zero")


# ------------------------------------------------------------------------ validation
def binary_targets(y_true, pos_label=None, *, where: str = "score") -> np.ndarray:
    """``y_true`` as a float array in {0, 1} (1 = ``pos_label``).

    ``y_true`` holds at most two distinct labels.  ``pos_label=None`` is allowed when the labels
    are a subset of {0, 1}, {-1, 1} or {False, True}: the positive label is then 1 (True), as in
    scikit-learn.  With any other labels, name the positive one.  A ``pos_label`` that is not
    among the labels is allowed only when ``y_true`` holds one label (every sample is negative).
    """
    y = np.asarray(y_true)
    if y.ndim != 1:
        raise DataError(f"{where}: y_true must be one-dimensional, got shape {y.shape}")
    if y.size == 0:
        raise DataError(f"{where}: y_true is empty")
    if y.dtype.kind == "f" and np.isnan(y).any():
        first = int(np.flatnonzero(np.isnan(y))[0])
        raise DataError(f"{where}: y_true contains NaN (first at index {first})")
    if y.dtype.kind == "O" and is_missing(y).any():
        raise DataError(f"{where}: y_true contains missing values (None / NaN)")
    labels = np.unique(y)
    if labels.size > 2:
        raise DataError(f"{where}: y_true must be binary, got {labels.size} labels: {labels[:5].tolist()}...")
    if pos_label is None:
        if not _is_default_binary(labels):
            raise ParameterError(f"{where}: y_true has labels {labels.tolist()}, which are not {{0, 1}} or "
                                 f"{{-1, 1}}; pass pos_label= (one of them)")
        pos_label = 1
    elif labels.size == 2 and not (labels == pos_label).any():
        raise ParameterError(f"{where}: pos_label={pos_label!r} is not one of the labels "
                             f"{labels.tolist()} of y_true")
    return (y == pos_label).astype(float)


def _is_default_binary(labels: np.ndarray) -> bool:
    if labels.dtype.kind == "b":
        return True
    if labels.dtype.kind not in "iuf":
        return False
    values = set(labels.tolist())
    return values <= {0, 1} or values <= {-1, 1}


def _scores(values, n: int, name: str, where: str, probability: bool) -> np.ndarray:
    """``values`` as a 1-D float array of length ``n``: finite, and in [0, 1] for a probability."""
    if isinstance(values, (str, bytes)):
        raise DataError(f"{where}: {name} must be an array of numbers, got a string")
    try:
        s = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{where}: {name} must be an array of numbers") from None
    if s.ndim != 1:
        hint = (" (for predict_proba output pass the positive-class column, e.g. proba[:, 1])"
                if s.ndim == 2 else "")
        raise DataError(f"{where}: {name} must be one-dimensional, got shape {s.shape}{hint}")
    if s.shape[0] != n:
        raise DataError(f"{where}: y_true and {name} have different lengths ({n} and {s.shape[0]})")
    bad = ~np.isfinite(s)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{where}: {name} contains {'NaN' if np.isnan(s[i]) else 'inf'} "
                        f"({int(bad.sum())} entries, first at index {i})")
    if probability and ((s < 0) | (s > 1)).any():
        i = int(np.flatnonzero((s < 0) | (s > 1))[0])
        raise DataError(f"{where}: {name} must be probabilities in [0, 1], got {s[i]!r} at index {i}")
    return s


def positive_int(value, name: str, where: str) -> int:
    """``value`` as an int >= 1 (not a bool); the check of ``n_bins``, ``n_sets`` and ``batch_rows``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < 1:
        raise ParameterError(f"{where}: {name} must be a positive integer, got {value!r}")
    return int(value)


def check_n_bins(n_bins, where: str = "score") -> int:
    return positive_int(n_bins, "n_bins", where)


def check_auc_ties(ties, where: str = "roc_auc") -> str:
    if ties not in AUC_TIES:
        raise ParameterError(f"{where}: ties must be one of {AUC_TIES}, got {ties!r}")
    return ties


def _prepared(y_true, proba, pos_label, where: str,
              probability: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    y = binary_targets(y_true, pos_label, where=where)
    name = "proba" if probability else "score"
    return y, _scores(proba, y.shape[0], name, where, probability)


# ------------------------------------------------------------------------ public scores
def adaptive_calibration_error(y_true, proba, n_bins: int = 10, *, pos_label=None) -> float:
    r"""Adaptive calibration error with equal-count bins (sun2025 §5.2; spec §6.4).

    Sort the samples by ``p`` (stable sort: tied probabilities keep their input order) and cut the
    sorted order into ``n_bins`` consecutive groups ``B_1 .. B_K`` of nearly equal size, as
    ``np.array_split`` does (the first ``n mod K`` groups hold one sample more; with ``K > n`` the
    extra groups are empty and weigh 0).  Then

    ```latex
    \mathrm{ACE} = \sum_{b=1}^{K} \frac{|B_b|}{n}\,
        \Bigl|\frac{1}{|B_b|}\sum_{i \in B_b} y_i - \frac{1}{|B_b|}\sum_{i \in B_b} p_i\Bigr|
      = \frac{1}{n} \sum_{b=1}^{K} \Bigl|\sum_{i \in B_b} (y_i - p_i)\Bigr| .
    ```

    This is the variant of the paper's code (spec §6.4 [code]): the positive class only, each bin
    weighted by its share of the samples.  Nixon et al. (2019) average ``|acc - conf|`` over
    classes and bins without weights; with equal-count bins the two differ only through the
    unequal sizes when ``n`` is not a multiple of ``K``.  The value lies in [0, 1]; 0 is perfect.
    """
    y, p = _prepared(y_true, proba, pos_label, "adaptive_calibration_error")
    return float(ace_batch(y, p[None], check_n_bins(n_bins, "adaptive_calibration_error"))[0])


def expected_calibration_error(y_true, proba, n_bins: int = 10, *, pos_label=None) -> float:
    r"""Expected calibration error with ``n_bins`` equal-width bins of the positive-class probability.

    Bin ``b`` (``b = 0 .. K-1``) holds the samples with ``p`` in ``[b/K, (b+1)/K)``, the last bin
    also ``p = 1``.  The edges are the correctly rounded quotients ``b/K`` (``np.arange(K + 1) / K``;
    ``np.linspace`` would put 0.3 in the bin below 0.30000000000000004).  With the same weighting as
    :func:`adaptive_calibration_error`:

    ```latex
    \mathrm{ECE} = \frac{1}{n} \sum_{b=0}^{K-1} \Bigl|\sum_{i \in B_b} (y_i - p_i)\Bigr| .
    ```
    """
    y, p = _prepared(y_true, proba, pos_label, "expected_calibration_error")
    return float(ece_batch(y, p[None], check_n_bins(n_bins, "expected_calibration_error"))[0])


def roc_auc(y_true, score, *, pos_label=None, ties: str = "half") -> float:
    r"""Area under the ROC curve, the Mann-Whitney statistic of the scores.

    ```latex
    \mathrm{AUC} = \frac{1}{n_+ n_-} \sum_{i: y_i = 1} \sum_{j: y_j = 0}
        \bigl(\mathbb{1}[s_i > s_j] + w\,\mathbb{1}[s_i = s_j]\bigr)
    ```

    with ``w = 1/2`` for ``ties="half"`` (the default: midranks, equal to
    ``sklearn.metrics.roc_auc_score``) or ``w = 0`` for ``ties="zero"`` (the paper's code, spec §6.4,
    which counts only strictly higher positive scores).  ``score`` is any real score that ranks the
    samples (a probability or a decision function).  Raises :class:`~drokit.DataError` when
    ``y_true`` holds only one class, where the AUC is undefined.
    """
    y, s = _prepared(y_true, score, pos_label, "roc_auc", probability=False)
    ties = check_auc_ties(ties)
    _check_both_classes(y, "roc_auc")
    return float(auc_batch(y, s[None], ties)[0])


def accuracy(y_true, proba, *, threshold: float = 0.5, pos_label=None) -> float:
    r"""Fraction of correct labels when ``p_i > threshold`` predicts the positive class.

    ```latex
    \mathrm{acc} = \frac{1}{n} \sum_i \mathbb{1}\bigl[\mathbb{1}[p_i > t] = y_i\bigr]
    ```

    With ``t = 0.5`` this is the label that ``predict`` of a logistic model returns (decision
    function > 0); ``p = 0.5`` exactly counts as the negative class.
    """
    y, p = _prepared(y_true, proba, pos_label, "accuracy")
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, Real) or not 0 <= threshold <= 1:
        raise ParameterError(f"accuracy: threshold must be a number in [0, 1], got {threshold!r}")
    return float(accuracy_batch(y, p[None], float(threshold))[0])


def log_loss(y_true, proba, *, pos_label=None) -> float:
    r"""Mean negative log-likelihood (natural log) of the labels.

    ```latex
    \ell = -\frac{1}{n} \sum_i \bigl(y_i \log \tilde p_i + (1 - y_i) \log(1 - \tilde p_i)\bigr),
    \qquad \tilde p_i = \min(\max(p_i, 10^{-15}), 1 - 10^{-15}) .
    ```
    """
    y, p = _prepared(y_true, proba, pos_label, "log_loss")
    return float(log_loss_batch(y, p[None])[0])


def _check_both_classes(y: np.ndarray, where: str) -> None:
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.shape[0]:
        only = "positive" if n_pos else "negative"
        raise DataError(f"{where}: y_true holds only the {only} class ({y.shape[0]} samples); the AUC "
                        f"needs both classes")


# ------------------------------------------------------------------------ batch kernels
# ``y``: (n,) floats in {0, 1}, shared by every row; ``P``: (k, n) scores, one row per test set.
# ``order``: ``stable_order(P)`` when the caller already has it (ACE and AUC sort the same way).
def stable_order(P: np.ndarray) -> np.ndarray:
    """The stable ascending sort of each row of ``P`` (tied scores keep their input order)."""
    return np.argsort(P, axis=1, kind="stable")


def ace_batch(y: np.ndarray, P: np.ndarray, n_bins: int, order: Optional[np.ndarray] = None) -> np.ndarray:
    """ACE of each row (see :func:`adaptive_calibration_error`): ``(1/n) sum_b |sum_{B_b} (y - p)|``."""
    n = P.shape[1]
    order = stable_order(P) if order is None else order
    residual = y[order] - np.take_along_axis(P, order, axis=1)
    sizes = np.array([len(part) for part in np.array_split(np.arange(n), n_bins)])
    starts = (np.cumsum(sizes) - sizes)[sizes > 0]
    return np.abs(np.add.reduceat(residual, starts, axis=1)).sum(axis=1) / n


def ece_batch(y: np.ndarray, P: np.ndarray, n_bins: int) -> np.ndarray:
    """ECE of each row (see :func:`expected_calibration_error`), by one ``bincount`` over all rows."""
    k, n = P.shape
    edges = np.arange(n_bins + 1) / n_bins
    b = np.minimum(np.searchsorted(edges, P, side="right") - 1, n_bins - 1)
    flat = (np.arange(k)[:, None] * n_bins + b).ravel()
    sums = np.bincount(flat, weights=(y[None] - P).ravel(), minlength=k * n_bins).reshape(k, n_bins)
    return np.abs(sums).sum(axis=1) / n


def auc_batch(y: np.ndarray, S: np.ndarray, ties: str = "half",
               order: Optional[np.ndarray] = None) -> np.ndarray:
    """AUC of each row (see :func:`roc_auc`); ``y`` must hold both classes.

    Sort each row; a positive at sorted position ``j`` in the tie group ``[first, last]`` beats the
    negatives before ``first`` and ties with the negatives inside the group.  With ``c`` the running
    count of negatives, ``U = sum_pos (c[first-1] + w (c[last] - c[first-1]))``.
    """
    k, n = S.shape
    order = stable_order(S) if order is None else order
    s = np.take_along_axis(S, order, axis=1)
    positive = y[order] > 0.5
    first, last = _tie_groups(s)
    neg_upto = np.cumsum(~positive, axis=1)                                     # c[j]: negatives in 0..j
    neg_before = np.concatenate([np.zeros((k, 1), neg_upto.dtype), neg_upto[:, :-1]], axis=1)
    below = np.take_along_axis(neg_before, first, axis=1)                      # negatives < s_j
    tied = np.take_along_axis(neg_upto, last, axis=1) - below                  # negatives = s_j
    w = 0.5 if ties == "half" else 0.0
    u = np.where(positive, below + w * tied, 0.0).sum(axis=1)
    n_pos = int(y.sum())
    return u / (n_pos * (n - n_pos))


def _tie_groups(s: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """For rows sorted ascending: the first and last position of each entry's group of equal values."""
    k, n = s.shape
    idx = np.broadcast_to(np.arange(n), (k, n))
    starts = np.ones((k, n), dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    ends = np.ones((k, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, idx, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, idx, n - 1)[:, ::-1], axis=1)[:, ::-1]
    return first, np.ascontiguousarray(last)


def accuracy_batch(y: np.ndarray, P: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    return ((P > threshold) == (y > 0.5)).mean(axis=1)


def log_loss_batch(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    p = np.clip(P, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    return -np.where(y > 0.5, np.log(p), np.log1p(-p)).mean(axis=1)


__all__ = ["adaptive_calibration_error", "expected_calibration_error", "roc_auc", "accuracy", "log_loss",
           "binary_targets", "LOG_LOSS_EPS", "AUC_TIES", "ace_batch", "ece_batch", "auc_batch", "accuracy_batch",
           "log_loss_batch"]

