"""Optimal transport with a moment constraint (blanchet2024 Def. 1 and eq. (2.1)): the perturbation model
of the stability criterion.

Samples live in the lifted space ``(z, w)``: ``z`` the data point, ``w >= 0`` its probability weight
(density), with ``E[W] = 1``.  Moving ``(z_hat, 1)`` to ``(z, w)`` costs

    c((z, w), (z_hat, 1)) = theta1 * w * d(z, z_hat) + theta2 * phi(w)                 (2.1)

* ``d`` is the ground metric, here ``d = ||Gamma (x - x_hat)||_2^2 + D(z, z_hat) + kappa 1[y != y_hat]``:
  the SQUARED weighted Euclidean cost on numerical features (the paper's ``||x - x_hat||_2^2``),
  drokit's per-feature mismatch cost ``D`` on categorical features and the label cost (``inf`` by
  default: labels never move, as in the paper);
* ``phi`` is the divergence of the reweighting: KL ``phi(t) = t log t - t + 1`` or chi-square
  ``phi(t) = (t - 1)^2`` (the stability criterion's two); fits also take CVaR's likelihood-ratio bound
  ``t <= 1 / level`` (:mod:`.divergences`);
* ``theta1`` prices data corruption (moving samples), ``theta2`` sub-population shift (reweighting);
  ``theta1 = inf`` is pure reweighting, ``theta2 = inf`` pure corruption (blanchet2024 Remark 2).
  The paper ties them by ``1/theta1 + 1/theta2 = C`` with ``C = 5`` (:meth:`OTMoment.from_budget_split`).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError
from ..metrics.costs import LabelCost, MismatchCost, NormCost
from ..metrics.ground import GroundMetric
from ..params import ParamsMixin, component, nonnegative_real, real_number
from .divergences import get_divergence

DIVERGENCES = ("kl", "chi2")


def squared_euclidean_metric() -> GroundMetric:
    """The paper's cost: ``||x - x'||_2^2`` on numerical features, unit mismatch cost per categorical
    feature, labels never move."""
    return GroundMetric(numerical=NormCost(p=2), categorical=MismatchCost(), label=LabelCost())


def positive_theta(value, name: str) -> float:
    """``value`` as a number ``> 0`` (``np.inf`` allowed: that perturbation switched off); ``name`` is the argument's."""
    out = real_number(value, f"OTMoment {name}")
    if not (out > 0):  # also rejects NaN
        raise ParameterError(f"OTMoment {name} must be > 0 (np.inf switches that perturbation off), "
                             f"got {value!r}")
    return out


class OTMoment(ParamsMixin):
    """OT-with-moment perturbation set ``M_c`` of blanchet2024 (cost (2.1)), for :func:`drokit.stability` and, with a
    ``radius``, as the ambiguity set of a fit (MOT-DRO: ``DROClassifier(ambiguity=dk.OTMoment(..., radius=0.1))``;
    ``spec/mot-dro-training.md``).

    Parameters
    ----------
    metric : drokit.GroundMetric or None
        :class:`~drokit.GroundMetric` ``d`` whose numerical part is a ``NormCost(p=2)`` (used
        squared; another :class:`~drokit.metrics.norms.NumericalNorm` ``N`` is used squared too, ``N(Gamma
        (x - x'))^2``); default :func:`squared_euclidean_metric`.  Weights ``inf`` make a feature immutable.
    theta1 : float
        Weight of data corruption (``w d``), ``> 0``; ``np.inf``: samples never move.
    theta2 : float
        Weight of the reweighting divergence ``phi(w)``, ``> 0``; ``np.inf``: weights stay 1.
    divergence : {"kl", "chi2"} or drokit.divergences.Divergence
        ``"kl"`` or ``"chi2"``, or a divergence object (:mod:`drokit.ambiguity.divergences`): ``dk.divergences.KL()``,
        ``ChiSquare()`` or, for fits only, ``CVaR(level)`` (weights at most ``1 / level``).
    radius : float or None
        The budget ``rho >= 0`` of the set ``{Q : M_c(Q, P_N) <= rho}`` a model is fitted on (MOT-DRO training);
        ``None`` (default) for :func:`drokit.stability`, which finds the budget itself.
    exponent : {2, 1}
        The power of the numerical norm in ``d``: ``2``, the squared norm of blanchet2024 (2.1) (what
        :func:`drokit.stability` evaluates), or ``1``, the norm itself, as in drokit's Wasserstein balls.  A fit
        whose numerical features can move needs ``exponent=1`` (the worst-case move is then the dual-norm term of
        every loss; spec §6).

    Examples
    --------
    ```python
    amb = dk.OTMoment(theta1=1.0, theta2=0.25)                  # the paper's Section 4.2 setting
    amb = dk.OTMoment.from_budget_split(C=5, corruption_share=0.5)  # theta1 = theta2 = 0.4
    clf = dk.DROClassifier(ambiguity=dk.OTMoment(theta1=1.0, theta2=1.0, radius=0.1, exponent=1))
    ```
    """

    DEFAULT_COMPONENTS = {"metric": squared_euclidean_metric}

    def __init__(self, metric: GroundMetric | None = None, theta1: float = 1.0, theta2: float = 1.0,
                 divergence: str = "kl", radius: float | None = None, exponent: int = 2):
        self.metric = metric
        self.theta1 = theta1
        self.theta2 = theta2
        self.divergence = divergence
        self.radius = radius
        self.exponent = exponent

    @classmethod
    def from_budget_split(cls, C: float = 5.0, corruption_share: float = 0.5, *,
                          metric: GroundMetric | None = None, divergence: str = "kl", radius: float | None = None,
                          exponent: int = 2) -> "OTMoment":
        """``theta1, theta2`` with ``1/theta1 + 1/theta2 = C`` (blanchet2024 §2.1, ``C = 5`` in all its
        experiments): ``1/theta1 = C * share`` and ``1/theta2 = C * (1 - share)``.  ``share = 0`` is pure
        reweighting (``theta1 = inf``), ``share = 1`` pure corruption (``theta2 = inf``)."""
        try:
            C, share = float(C), float(corruption_share)
        except (TypeError, ValueError):
            raise ParameterError(f"from_budget_split needs numbers, got C={C!r}, "
                                 f"corruption_share={corruption_share!r}") from None
        if not (np.isfinite(C) and C > 0):
            raise ParameterError(f"from_budget_split C must be a positive finite number, got {C!r}")
        if not (0.0 <= share <= 1.0):
            raise ParameterError(f"from_budget_split corruption_share must be in [0, 1], got "
                                 f"{corruption_share!r}")
        theta1 = np.inf if share == 0 else 1.0 / (C * share)
        theta2 = np.inf if share == 1 else 1.0 / (C * (1.0 - share))
        return cls(metric=metric, theta1=theta1, theta2=theta2, divergence=divergence, radius=radius,
                   exponent=exponent)

    @classmethod
    def divergence_ball(cls, divergence: str = "kl", radius: float = 0.1) -> "OTMoment":
        """The phi-divergence ball ``{Q : D_phi(Q || P_N) <= radius}`` (Ben-Tal et al. 2013): samples keep their
        place (``theta1 = inf``) and are reweighted, ``theta2 = 1``.  ``"kl"``: ``KL(Q || P_N) <= radius``, whose
        worst-case risk is ``min_{h > 0} h radius + h log E_{P_N} exp(loss / h)``; ``"chi2"``: the chi-square
        divergence ``E_{P_N}[(dQ/dP_N - 1)^2] <= radius`` (spec/mot-dro-training.md §4, limit 2)."""
        return cls(theta1=np.inf, theta2=1.0, divergence=divergence, radius=radius)

    # ------------------------------------------------------------ validation
    def validated(self) -> tuple:
        """``(theta1, theta2, divergence)`` checked for :func:`drokit.stability`: positive, not both infinite, KL or
        chi-square (by name)."""
        theta1, theta2, divergence = self._validated_parts()
        if divergence.name not in DIVERGENCES:
            raise ParameterError(f"dk.stability evaluates an OTMoment set with the divergence 'kl' or 'chi2', got "
                                 f"{self.divergence!r} (the CVaR bound is for fits: DROClassifier(ambiguity=...))")
        return theta1, theta2, divergence.name

    def _validated_parts(self) -> tuple:
        theta1, theta2 = positive_theta(self.theta1, "theta1"), positive_theta(self.theta2, "theta2")
        if np.isinf(theta1) and np.isinf(theta2):
            raise ParameterError("OTMoment theta1 and theta2 are both inf: nothing can be perturbed "
                                 "(set at least one finite)")
        try:
            divergence = get_divergence(self.divergence)
        except ParameterError as exc:
            raise ParameterError(f"OTMoment {exc}") from None
        return theta1, theta2, divergence

    def validated_exponent(self) -> int:
        """``exponent`` checked: ``1`` or ``2``."""
        if isinstance(self.exponent, (bool, np.bool_)) or self.exponent not in (1, 2):
            raise ParameterError(f"OTMoment exponent must be 1 (the numerical norm) or 2 (its square), "
                                 f"got {self.exponent!r}")
        return int(self.exponent)

    def ground_metric(self) -> GroundMetric:
        """The ground metric ``d`` (the default one when ``metric`` is ``None``), checked to be a GroundMetric."""
        metric = component(self, "metric")
        if not isinstance(metric, GroundMetric):
            raise ParameterError(f"OTMoment metric must be a drokit GroundMetric, got {type(metric).__name__}")
        return metric

    def training_parts(self) -> tuple:
        """``(metric, rho, theta1, theta2, divergence, exponent)`` of a fit (MOT-DRO), checked: a radius is needed;
        ``divergence`` a :class:`~drokit.ambiguity.divergences.Divergence`."""
        theta1, theta2, divergence = self._validated_parts()
        if self.radius is None:
            raise ParameterError("an OTMoment set needs a radius to be fitted: the budget rho of "
                                 "{Q : M_c(Q, P_N) <= rho} (dk.stability uses the set without one)")
        rho = nonnegative_real(self.radius, "OTMoment radius")
        return self.ground_metric(), rho, theta1, theta2, divergence, self.validated_exponent()

    def validated_metric(self) -> GroundMetric:
        """The metric of :func:`drokit.stability`: the squared Euclidean cost on numerical features (``exponent=2``,
        a ``NormCost(p=2)``), or the square ``N(Gamma (x - x'))^2`` of another numerical norm
        (:class:`~drokit.metrics.norms.NumericalNorm`, e.g. :class:`~drokit.GroupNormCost`)."""
        if self.validated_exponent() != 2:
            raise ParameterError("dk.stability evaluates blanchet2024's squared cost (2.1): its OTMoment needs "
                                 "exponent=2, got 1")
        metric = self.ground_metric()
        numerical = metric._parts()[0]
        p = numerical.validated_p() if isinstance(numerical, NormCost) else 2
        if p != 2:
            raise ParameterError(f"OTMoment uses the squared Euclidean cost on numerical features "
                                 f"(blanchet2024 eq. (2.1)): its metric's numerical NormCost must have p=2, "
                                 f"got p={p!r}")
        return metric

    def __repr__(self) -> str:
        return (f"OTMoment(metric={self.metric!r}, theta1={self.theta1!r}, theta2={self.theta2!r}, "
                f"divergence={self.divergence!r}, radius={self.radius!r}, exponent={self.exponent!r})")
