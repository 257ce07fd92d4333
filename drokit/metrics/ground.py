"""The composite ground metric ``d = N(Gamma (x - x')) + D(z, z') + kappa d_y(y, y')``.

``N`` is the numerical component, a :class:`~drokit.metrics.norms.NumericalNorm`: the weighted p-norm
(:class:`~drokit.NormCost`, ``N = ||.||_p``), the group norm (:class:`~drokit.GroupNormCost`) or a user's norm.

With a matrix numerical cost, ``||M (x - x')||_p`` (:class:`~drokit.NormCost` ``matrix=M``), the metric is resolved in
the coordinates ``x~ = M x`` (:mod:`drokit.metrics.linear_map`): there it is the unit-weight norm, and the
:class:`ResolvedMetric` keeps ``M`` in :attr:`ResolvedMetric.linear_map` for whoever transformed the data
(:meth:`drokit.Problem.bind`).
"""

from __future__ import annotations

import copy
from functools import cached_property
from collections.abc import Mapping
from dataclasses import dataclass
from typing import List, Optional
from numbers import Real

import numpy as np

from ..exceptions import ParameterError
from ..schema import FeatureSchema
from .calibration import Calibration, calibrate, round_weights
from ..params import ParamsMixin, component
from .costs import CategoricalCost, LabelCost, MismatchCost, NamedWeights, NormCost
from .linear_map import LinearMap
from .norms import NumericalNorm


@dataclass
class ResolvedMetric:
    """A ground metric bound to a feature schema: weights as arrays in schema order.

    With a matrix numerical cost the metric is in the coordinates ``x~ = M x``: ``numerical`` is the unit-weight
    :class:`NormCost` of the same ``p``, ``gamma`` is 1 on the columns ``M`` moves and ``inf`` on the immutable ones,
    and :attr:`linear_map` holds ``M`` (``None``: no change of coordinates, the data are in their own units).
    """

    numerical: NumericalNorm
    categorical: CategoricalCost
    gamma: np.ndarray  # (n,) numerical weights
    delta: np.ndarray  # (m,) categorical weights
    kappa: float       # label cost
    #: (m,) unit cost matrices U_l (a_l x a_l) of the categorical component; None = mismatch 1 - I
    units: Optional[List[np.ndarray]] = None
    #: the change of coordinates ``x~ = M x`` of a matrix numerical cost (the data bound with this metric are in
    #: ``x~``), or ``None``
    linear_map: Optional[LinearMap] = None

    @cached_property
    def mismatch_only(self) -> bool:
        """Whether every categorical feature has the 0/1 mismatch cost ``delta_l 1[v != v']`` (the
        structure the sorting oracle, the graph and the box reformulations are built on)."""
        if self.units is None:
            return True
        return all(np.array_equal(U, 1.0 - np.eye(U.shape[0])) for U in self.units)

    def require_mismatch(self, what: str) -> None:
        """Raise :class:`ParameterError` when the categorical cost is not the 0/1 mismatch cost."""
        if not self.mismatch_only:
            raise ParameterError(
                f"{what} is built on the 0/1 mismatch cost delta_l 1[z_l != z'_l], but the metric's "
                f"categorical component is {self.categorical!r} with other level costs; use "
                f"method='cutting_plane' (its DP oracle handles any level costs) or 'monolithic'")

    def additive_increments(self, l: int) -> np.ndarray:
        """``(delta_l U_l)^p`` of feature ``l`` as an (a_l, a_l) array: the additive budget a change of
        level adds (0 on the diagonal; feature ``l`` must have a finite weight)."""
        if self.units is None:
            raise ParameterError("the metric has no unit cost matrices (resolve it against the data)")
        return (self.delta[l] * self.units[l]) ** self.categorical.validated_p()

    @property
    def dual_p(self) -> float:
        """The dual exponent ``q`` of an ``l_p`` numerical norm; a :class:`ParameterError` for another norm (whose
        callers go through the :class:`~drokit.metrics.norms.NumericalNorm` protocol instead)."""
        q = self.numerical.lp_dual_exponent
        if q is None:
            raise ParameterError(f"the numerical cost {self.numerical!r} is not an l_p norm: it has no dual exponent "
                                 f"(use its dual_value / add_dual_value_leq)")
        return q

    def dual_norm(self, beta_x: np.ndarray) -> float:
        """``N_*(Gamma^{-1} beta_x)`` (the Lipschitz modulus of ``x -> beta_x^T x`` under the cost)."""
        return self.numerical.dual_norm(beta_x, self.gamma)

    def categorical_distance(self, Z1: np.ndarray, Z2: np.ndarray) -> np.ndarray:
        """Row-wise ``D(z1, z2)`` (codes broadcasting to (..., m)): the cost of moving from ``z1`` to ``z2``,
        ``U_l[z1_l, z2_l]`` per feature (a user's unit costs need not be symmetric; the oracles price a sample's move
        from its own levels, ``D(z_n, z)``)."""
        units = None if self.mismatch_only else self.units
        return self.categorical.distance(Z1, Z2, self.delta, units)


class GroundMetric(ParamsMixin):
    """Transport cost between samples ``(x, z, y)`` of mixed data.

    Parameters
    ----------
    numerical : NumericalNorm or None
        The numerical component (default ``NormCost(p=1)``): :class:`NormCost` (the weighted p-norm, or a matrix
        cost), :class:`GroupNormCost`, or your own :class:`~drokit.metrics.norms.NumericalNorm` subclass
        (docs/concepts.md, "User norms").
    categorical : CategoricalCost or None
        A :class:`CategoricalCost` on categorical features: :class:`MismatchCost` (default, unit
        weights, ``p=1``), :class:`OrdinalCost` (rank distance on ordinal features) or your own
        subclass (docs/extending.md).
    label : LabelCost or None
        :class:`LabelCost` (default ``kappa=inf``: labels never move).

    Examples
    --------
    ```python
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights={"age": 2.0}),
                             categorical=dk.MismatchCost(weights={"sex": np.inf}),
                             label=dk.LabelCost(kappa=1.0))
    ```
    """

    DEFAULT_COMPONENTS = {"numerical": NormCost, "categorical": MismatchCost, "label": LabelCost}
    #: the set_params names that change the weights a calibration produced
    REWEIGHTING_PARAMS = ("numerical", "categorical", "numerical__weights", "categorical__weights")

    #: the shift model the weights were calibrated from (set by :meth:`calibrated`, else None);
    #: :func:`drokit.evaluation.simulate_shift` uses its unrounded probabilities of certainty
    calibration: Calibration | None = None

    def __init__(self, numerical: NumericalNorm | None = None, categorical: MismatchCost | None = None,
                 label: LabelCost | None = None):
        self.numerical = numerical
        self.categorical = categorical
        self.label = label

    @classmethod
    def calibrated(cls, X, rho_numerical=None, rho_categorical=None, half_width=0.4,
                   half_width_in_std: bool = True, round: int | None = None, on_zero: str = "raise",
                   p: float = 1, categorical_features=None) -> "GroundMetric":
        """The metric calibrated from probabilities of certainty (sun2025 §3, Appendix A).

        ``gamma_j = -log(1 - rho_j) / u_j`` for numerical and ``delta_l = log(rho_l (|C_l| - 1) /
        (1 - rho_l))`` for categorical columns of the training data ``X``; ``rho = 1`` gives an
        immutable feature.  Pair it with ``radius=dk.radius_from_theta(theta)``.

        Parameters
        ----------
        X : pandas.DataFrame or array_like
            As :func:`drokit.metrics.calibrate`.
        rho_numerical, rho_categorical : float or dict or None
            As :func:`drokit.metrics.calibrate` (scalar rho for all columns or ``{column: rho}``).
        half_width : float or dict
            As :func:`drokit.metrics.calibrate` (``u_j = half_width * std_j`` of ``X`` by default, the
            paper's ``0.4 sigma_j``).
        half_width_in_std : bool
            As :func:`drokit.metrics.calibrate` (``u_j = half_width * std_j`` of ``X`` by default, the
            paper's ``0.4 sigma_j``).
        round : int or None
            ``None`` (exact weights) or the number of decimals of the categorical weights ``delta``
            (0 = integers, 1 = one decimal: the paper's settings).  The numerical weights stay exact,
            as in the paper's code: they carry the columns' units and do not enter the graph size.
        on_zero : {"raise", "warn", "ignore"}
            What a positive ``delta`` rounding to 0 (a feature that becomes free) does: ``"raise"``
            (default), ``"warn"`` or ``"ignore"`` (:func:`drokit.metrics.round_weights`).
        p : float
            Exponent of the numerical :class:`NormCost`.  The likelihood-ratio derivation gives
            ``p = 1`` (a sum of Laplace log-densities); other ``p`` reuse the weights as a heuristic.
        categorical_features : array_like or None
            As :func:`drokit.metrics.calibrate`.

        Returns
        -------
        GroundMetric
            The returned metric keeps the calibration in ``metric.calibration``.
        """
        cal = calibrate(X, rho_numerical=rho_numerical, rho_categorical=rho_categorical,
                        half_width=half_width, half_width_in_std=half_width_in_std,
                        categorical_features=categorical_features)
        delta = cal.delta
        if round is not None:
            delta = round_weights(delta, round, on_zero=on_zero)
        metric = cls(numerical=NormCost(p=p, weights=cal.gamma),
                     categorical=MismatchCost(weights=delta, p=1))
        metric.calibration = cal
        return metric

    def set_params(self, **params) -> "GroundMetric":
        """Set parameters (nested names allowed, :meth:`ParamsMixin.set_params`).  Changing the numerical or
        categorical weights (or replacing either component) drops :attr:`calibration`, which described the
        old weights: :func:`drokit.evaluation.simulate_shift` then derives its shift model from the new
        ones.  Other changes (the label cost, the norm's ``p``) keep it."""
        reweighted = any(key in self.REWEIGHTING_PARAMS for key in params)
        super().set_params(**params)
        if reweighted:
            self.calibration = None
        return self

    def _parts(self):
        num, cat, lab = (component(self, name) for name in ("numerical", "categorical", "label"))
        for part, cls, arg in ((num, NumericalNorm, "numerical"), (cat, CategoricalCost, "categorical"),
                               (lab, LabelCost, "label")):
            if not isinstance(part, cls):
                what = "NormCost (or another NumericalNorm: GroupNormCost, your own)" if cls is NumericalNorm \
                    else cls.__name__
                raise ParameterError(f"GroundMetric {arg} must be a drokit {what}, got {type(part).__name__}")
        return num, cat, lab

    def resolve(self, schema: FeatureSchema, transformed: bool = False) -> ResolvedMetric:
        """Validate the weights against the data's columns and return them as arrays.

        A matrix numerical cost ``||M (x - x')||_p`` is resolved only with ``transformed=True``, by a caller that
        applies the change of coordinates ``x~ = M x`` to its numerical data (``ResolvedMetric.linear_map``): the
        metric is then the unit-weight norm in ``x~`` (:mod:`drokit.metrics.linear_map`).  Without it a matrix cost
        raises :class:`ParameterError`: the caller works on raw data with per-feature weights."""
        num, cat, lab = self._parts()
        names = schema.numerical_names
        gamma = num.resolve(names)
        linear_map = None
        if getattr(num, "matrix", None) is not None:
            if not transformed:
                raise ParameterError(
                    "a NormCost with a matrix (||M (x - x')||_p) is fitted and evaluated by the change of coordinates "
                    "x~ = M x where data are bound (the estimators, Problem, dk.worst_case, dk.stability of linear "
                    "models); this function works on raw data with per-feature weights and does not support it: "
                    "transform the numerical columns yourself (X_num @ M.T) and use NormCost(p) on them")
            linear_map = num.linear_map(names)
            num = NormCost(p=num.p)
        else:
            num = num.bind(names)
            num.check(names, gamma)
        return ResolvedMetric(numerical=num, categorical=cat, gamma=gamma,
                              delta=cat.resolve(schema.categorical_names),
                              kappa=lab.validated_kappa(), units=cat.validated_unit_costs(schema),
                              linear_map=linear_map)

    @property
    def kappa(self) -> float:
        return self._parts()[2].validated_kappa()

    def fit_scales(self, X, categorical_features=None, categories="auto", sample_weight=None) -> "GroundMetric":
        """This metric with a scaled numerical ``NormCost(scale=...)`` fitted on ``X`` (its spreads measured there,
        :mod:`drokit.metrics.scales`); itself when the numerical cost keeps raw units.  Models fit their metric's
        scales themselves; this is for a metric used on its own, e.g. by :func:`drokit.wasserstein_distance`."""
        from ..schema import FeatureSchema
        from .scales import fitted_metric
        if self._parts()[0].scale is None:
            return self
        schema = FeatureSchema.infer(X, categorical_features, categories)
        data = schema.transform(X)
        p = None if sample_weight is None else np.asarray(sample_weight, dtype=float) / np.sum(sample_weight)
        return fitted_metric(self, data.X, schema.numerical_names, p)

    def scaled(self, factor: float) -> "GroundMetric":
        """The metric multiplied by ``factor > 0`` (every weight and kappa)."""
        num, cat, lab = self._parts()
        try:
            factor = float(factor)
        except (TypeError, ValueError):
            raise ParameterError(f"scaled factor must be a positive finite number, got {factor!r}") from None
        if not (np.isfinite(factor) and factor > 0):
            raise ParameterError(f"scaled factor must be a positive finite number, got {factor!r}")

        def scale(w):
            if w is None:
                return factor
            if isinstance(w, Mapping):  # unnamed columns (weight 1 or w.default) scale too
                return NamedWeights({k: v * factor for k, v in w.items()},
                                    default=getattr(w, "default", 1.0) * factor)
            if isinstance(w, Real) and not isinstance(w, bool):
                return float(w) * factor
            return np.asarray(w, dtype=float) * factor
        if not isinstance(num, NormCost):     # another norm: N(c Gamma d) = c N(Gamma d), its weights scale
            num_scaled = copy.deepcopy(num)
            num_scaled.weights = scale(num.weights)
            cat_scaled = copy.deepcopy(cat)
            cat_scaled.weights = scale(cat.weights)
            return GroundMetric(num_scaled, cat_scaled, LabelCost(kappa=lab.kappa * factor))
        # a matrix cost scales by its matrix (its weights only mark immutable columns)
        matrix = getattr(num, "matrix", None)
        num_w = scale(num.weights) if matrix is None else num.weights
        # MismatchCost with p != 1: D scales by factor when every delta_l scales by factor.
        cat_scaled = copy.deepcopy(cat)
        cat_scaled.weights = scale(cat.weights)
        num_scaled = NormCost(p=num.p, weights=num_w, scale=num.scale,
                              matrix=None if matrix is None else matrix * factor)
        if num.fitted_scale:
            num_scaled.fitted_scale = copy.deepcopy(num.fitted_scale)
        return GroundMetric(num_scaled, cat_scaled, LabelCost(kappa=lab.kappa * factor))

    def __repr__(self) -> str:
        num, cat, lab = self._parts()
        return f"GroundMetric(numerical={num!r}, categorical={cat!r}, label={lab!r})"
