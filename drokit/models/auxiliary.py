"""Training on the training data and auxiliary data together, weighted: the ARO + auxiliary data baseline of
selvi2025 thesis §4 (problem (67), Gowal et al. 2021, Xing et al. 2022b).

    inf_beta  1/(N + w N_hat) [ sum_i loss^alpha(x_i, y_i) + w sum_j loss^alpha(xhat_j, yhat_j) ]

is empirical (or, with a radius, Wasserstein-robust) risk minimization under the mixture
``lambda P_N + (1 - lambda) P_hat`` with ``lambda = N / (N + w N_hat)`` (Obs. 8): the wrapped estimator is
fitted on the union of both samples with sample weights 1 and ``w``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from ..exceptions import ParameterError
from ..params import real_number
from ..schema import is_dataframe


class AuxiliaryMixture(ClassifierMixin, BaseEstimator):
    """Fit ``estimator`` on ``(X, y)`` plus ``(X_aux, y_aux)`` weighted by ``weight`` (thesis (67)).

    After ``fit``: ``estimator_`` (the fitted clone), ``classes_``, ``coef_``, ``intercept_``, ``result_``.

    Parameters
    ----------
    estimator : estimator
        An unfitted drokit estimator (e.g. ``DROClassifier(loss=Adversarial(...),
        ambiguity=Wasserstein(radius=0))`` for ARO + auxiliary data).
    X_aux, y_aux : array_like
        The auxiliary sample (same columns as ``X``).
    weight : float
        ``w >= 0``, the weight of each auxiliary sample relative to a training sample (the thesis
        cross-validates ``w`` in ``drokit.metrics.THESIS_AUX_WEIGHT_GRID``); ``0`` ignores the auxiliary data.
    """

    def __init__(self, estimator=None, X_aux=None, y_aux=None, weight: float = 1.0):
        self.estimator = estimator
        self.X_aux = X_aux
        self.y_aux = y_aux
        self.weight = weight

    def fit(self, X, y, sample_weight=None):
        w = real_number(self.weight, "weight")
        if not (np.isfinite(w) and w >= 0):
            raise ParameterError(f"weight must be finite and >= 0, got {self.weight!r}")
        if self.estimator is None or self.X_aux is None or self.y_aux is None:
            raise ParameterError("AuxiliaryMixture needs estimator, X_aux and y_aux")
        n, n_aux = len(y), len(self.y_aux)
        if is_dataframe(X):
            import pandas as pd
            X_all = pd.concat([X, self.X_aux], ignore_index=True)
        else:
            X_all = np.vstack([np.asarray(X), np.asarray(self.X_aux)])
        y_all = np.concatenate([np.asarray(y), np.asarray(self.y_aux)])
        base = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        weights = np.concatenate([base, np.full(n_aux, w)])
        self.estimator_ = clone(self.estimator).fit(X_all, y_all, sample_weight=weights)
        for name in ("classes_", "coef_", "intercept_", "result_", "n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
            elif name in vars(self):  # a refit on data without names: drop the stale ones
                delattr(self, name)
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        return self.estimator_.predict_proba(X)

    def decision_function(self, X):
        return self.estimator_.decision_function(X)
