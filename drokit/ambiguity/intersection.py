"""Intersections of two Wasserstein balls around different empirical distributions (selvi2025 thesis §4.4).

``B_eps(P_N) ∩ B_eps_hat(P_hat)``: the deployment distribution is close to the training data AND to an
auxiliary sample (synthetic, shifted or out-of-domain data).  The set is non-empty iff
``eps + eps_hat >= W(P_N, P_hat)`` (triangle inequality), which drokit checks with an exact transport LP
(:func:`drokit.wasserstein_distance`) before anything else: the static program below returns a finite
number even for an empty intersection (spec §2.5.4).

The exact problem is NP-hard even for one sample per ball (Prop. 18).  drokit compiles the static
program of Theorem 11 (with FREE ``s, s_hat``: the thesis's ``s, s_hat >= 0`` is not without loss of
generality for an intersection, spec §2.5.2), which is a conservative UPPER bound on the worst-case risk,
never reported as exact, and brackets the fitted model's worst-case risk from below with a finite-support
LP (``result_.lower_bound``).
"""

from __future__ import annotations

from ..exceptions import ParameterError
from ..params import ParamsMixin
from .wasserstein import Wasserstein


class Intersection(ParamsMixin):
    """``first ∩ second`` for two :class:`~drokit.Wasserstein` balls with the same ground metric: ``first``
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
