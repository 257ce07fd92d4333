"""A Wasserstein ball calibrated on the training data (sun2025 §3): the worked example of the
:class:`~drokit.ambiguity.base.AmbiguitySet` protocol."""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError
from ..metrics.calibration import radius_from_theta
from ..metrics.costs import LabelCost
from ..metrics.ground import GroundMetric
from .base import AmbiguitySet
from .wasserstein import Wasserstein


class CalibratedWasserstein(AmbiguitySet):
    """The ball ``{Q : W_d(Q, P_N) <= -log(theta)}`` whose ground metric ``d`` is calibrated, at ``fit``, on
    the training data from probabilities of certainty (sun2025 §3, Appendix A):

        gamma_j = -log(1 - rho_j) / u_j              (numerical column j, u_j = half_width * std_j),
        delta_l = log(rho_l (|C_l| - 1) / (1 - rho_l))  (categorical column l with |C_l| levels),
        eps     = -log(theta)                           (sun2025 §3.3, the likelihood-ratio level).

    It is :meth:`GroundMetric.calibrated <drokit.GroundMetric.calibrated>` plus
    :func:`~drokit.radius_from_theta` declared *without* data: inside ``GridSearchCV`` or
    :func:`drokit.sweep` each training fold calibrates its own weights (the column standard deviations
    of the fold, not of the whole data set).

    The built ball is kept by the fitted estimator in ``ambiguity_`` (with the calibration in
    ``ambiguity_.metric.calibration``).

    Parameters
    ----------
    theta : float
        Likelihood-ratio level in ``(0, 1]`` (``1``: no robustness; the paper's grid 0.5 ... 0.99).
    rho_numerical, rho_categorical : float or dict or None
        Probabilities of certainty, a scalar for every column or ``{column: rho}`` (``rho = 1``:
        immutable); as :func:`drokit.metrics.calibrate`.
    half_width : float
        The Laplace half-width ``u_j`` (default ``0.4 std_j``, with ``half_width_in_std``).
    half_width_in_std : bool
        Whether ``half_width`` is a multiple of the column's standard deviation: the Laplace half-width
        ``u_j`` (default ``0.4 std_j``).
    round : int or None
        ``None`` or the decimals of the categorical weights (the paper rounds them).
    on_zero : {"raise", "warn", "ignore"}
        What a positive categorical weight rounding to 0 does (``"raise"``, ``"warn"``, ``"ignore"``).
    kappa : float
        Label-flip cost (``np.inf``: labels never move).
    """

    def __init__(self, theta: float = 0.9, rho_numerical=None, rho_categorical=None, half_width: float = 0.4,
                 half_width_in_std: bool = True, round=None, on_zero: str = "raise", kappa: float = np.inf):
        self.theta = theta
        self.rho_numerical = rho_numerical
        self.rho_categorical = rho_categorical
        self.half_width = half_width
        self.half_width_in_std = half_width_in_std
        self.round = round
        self.on_zero = on_zero
        self.kappa = kappa

    def build(self, X, y, schema, sample_weight=None) -> Wasserstein:
        """``Wasserstein(GroundMetric.calibrated(X, ...), radius_from_theta(theta))`` on the columns of
        ``schema`` (the same categorical columns the estimator encodes)."""
        radius = radius_from_theta(self.theta)
        mask = [j in schema.categorical for j in range(len(schema.feature_names))]
        try:
            metric = GroundMetric.calibrated(X, rho_numerical=self.rho_numerical,
                                             rho_categorical=self.rho_categorical, half_width=self.half_width,
                                             half_width_in_std=self.half_width_in_std, round=self.round,
                                             on_zero=self.on_zero, categorical_features=mask)
        except ParameterError as exc:
            raise ParameterError(f"CalibratedWasserstein: {exc}") from None
        metric.label = LabelCost(kappa=self.kappa)
        return Wasserstein(metric, radius=float(radius))
