"""Type-1 Wasserstein balls ``B_eps(P_N) = {Q : W_d(Q, P_N) <= eps}`` around the empirical distribution.

``W_d(Q, P) = inf_Pi { E_Pi[d(xi, xi')] : Pi has marginals Q and P }`` with the ground metric ``d``
(belbasi2023 Def. 1, sun2025 Def. 1).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError
from ..metrics.ground import GroundMetric
from ..params import ParamsMixin, component, real_number


class Wasserstein(ParamsMixin):
    """Wasserstein ball of radius ``radius >= 0`` under ``metric``.

    ``radius = 0`` is the empirical distribution itself (the DRO problem is plain ERM).  ``center``: the
    data the ball is around -- ``None`` for the training data, or ``(X_aux, y_aux)`` for a ball around
    auxiliary data, which is used in an intersection (``Wasserstein(...) & Wasserstein(..., center=...)``).
    """

    DEFAULT_COMPONENTS = {"metric": GroundMetric}

    def __init__(self, metric: GroundMetric | None = None, radius: float = 0.1, center=None):
        self.metric = metric
        self.radius = radius
        self.center = center

    def __and__(self, other) -> "Intersection":
        from .intersection import Intersection
        return Intersection(self, other)

    def validated_center(self):
        """``(X_aux, y_aux)`` or ``None``."""
        if self.center is None:
            return None
        if not (isinstance(self.center, (tuple, list)) and len(self.center) == 2):
            raise ParameterError("Wasserstein center must be None (the training data) or a pair (X_aux, y_aux)")
        return tuple(self.center)

    def validated_radius(self) -> float:
        r = real_number(self.radius, "Wasserstein radius")
        if not np.isfinite(r) or r < 0:
            raise ParameterError(f"Wasserstein radius must be finite and >= 0, got {self.radius!r}")
        return r

    def validated_metric(self) -> GroundMetric:
        metric = component(self, "metric")
        if not isinstance(metric, GroundMetric):
            raise ParameterError(f"Wasserstein metric must be a drokit GroundMetric, "
                                 f"got {type(metric).__name__}")
        return metric

    def __repr__(self) -> str:
        center = "" if self.center is None else f", center=<{len(self.center[1])} auxiliary samples>"
        return f"Wasserstein(metric={self.metric!r}, radius={self.radius!r}{center})"
