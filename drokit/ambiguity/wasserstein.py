"""Type-1 Wasserstein balls ``B_eps(P_N) = {Q : W_d(Q, P_N) <= eps}`` around the empirical distribution, and the
intersection of two of them (:class:`Intersection`, defined here with the ball whose ``&`` builds it; the set is
described in :mod:`drokit.ambiguity.intersection`).

``W_d(Q, P) = inf_Pi { E_Pi[d(xi, xi')] : Pi has marginals Q and P }`` with the ground metric ``d``
(belbasi2023 Def. 1, sun2025 Def. 1).
"""

from __future__ import annotations


from ..exceptions import ParameterError
from ..metrics.ground import GroundMetric
from ..params import ParamsMixin, component, nonnegative_real


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
        return Intersection(self, other)

    def validated_center(self):
        """``(X_aux, y_aux)`` or ``None``."""
        if self.center is None:
            return None
        if not (isinstance(self.center, (tuple, list)) and len(self.center) == 2):
            raise ParameterError("Wasserstein center must be None (the training data) or a pair (X_aux, y_aux)")
        return tuple(self.center)

    def validated_radius(self) -> float:
        return nonnegative_real(self.radius, "Wasserstein radius")

    def validated_metric(self) -> GroundMetric:
        metric = component(self, "metric")
        if not isinstance(metric, GroundMetric):
            raise ParameterError(f"Wasserstein metric must be a drokit GroundMetric, "
                                 f"got {type(metric).__name__}")
        return metric

    def __repr__(self) -> str:
        center = "" if self.center is None else f", center=<{len(self.center[1])} auxiliary samples>"
        return f"Wasserstein(metric={self.metric!r}, radius={self.radius!r}{center})"


class Intersection(ParamsMixin):
    """``first ∩ second`` for two :class:`~drokit.Wasserstein` balls with the same ground metric (the set and its
    program: :mod:`drokit.ambiguity.intersection`): ``first``
    around the training data (``center=None``), ``second`` around auxiliary data
    (``Wasserstein(metric, radius, center=(X_aux, y_aux))``).  Also written ``first & second``.

    Fitted through the static program of selvi2025 Thm 11 (classification, numerical features, non-increasing
    margin losses, optionally :class:`~drokit.losses.Adversarial`): ``result_.bound == "upper"``.
    """

    def __init__(self, first: Wasserstein | None = None, second: Wasserstein | None = None):
        self.first = first
        self.second = second

    def balls(self):
        """``(training ball, auxiliary ball)`` validated: two Wasserstein balls, the first centred at the
        training data, the second at given auxiliary data, with equal ground metrics."""
        first, second = self.first, self.second
        for name, ball in (("first", first), ("second", second)):
            if not isinstance(ball, Wasserstein):
                raise ParameterError(f"Intersection {name} must be a drokit Wasserstein ball, got "
                                     f"{type(ball).__name__}")
        if first.center is not None and second.center is None:
            first, second = second, first
        if first.center is not None or second.center is None:
            raise ParameterError("Intersection needs one ball around the training data (center=None) and one "
                                 "around auxiliary data (center=(X_aux, y_aux))")
        m1, m2 = first.validated_metric(), second.validated_metric()
        if repr(m1) != repr(m2):
            raise ParameterError(f"the two balls of an Intersection must share one ground metric (the "
                                 f"emptiness check and the reformulation need it); got {m1!r} and {m2!r}")
        first.validated_radius()
        second.validated_radius()
        return first, second

    # what Problem.bind reads: the training ball's radius and the shared metric
    def validated_radius(self) -> float:
        return self.balls()[0].validated_radius()

    def validated_metric(self):
        return self.balls()[0].validated_metric()

    def __repr__(self) -> str:
        return f"Intersection({self.first!r}, {self.second!r})"
