"""A DRO problem bound to data: loss, resolved ground metric, radius and encoded samples (:class:`DROInstance`, one
Wasserstein ball), or the training instance with the auxiliary sample of an intersection of two balls
(:class:`IntersectionInstance`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import List, Optional, Tuple, Union

import numpy as np
import scipy.sparse as sp

from .losses.base import CLASSIFICATION, Loss, check_growth, lipschitz_of
from .metrics.ground import ResolvedMetric
from .schema import FeatureSchema, MixedData


@dataclass(frozen=True)
class LabelFamily:
    """One family of configuration rows per sample: the loss argument is ``u = sigma f - shift`` and
    moving into the family costs ``extra_cost`` on top of the categorical distance (belbasi2023 Props. 1
    and 3): the kept label (classification, ``sigma = y``), the flipped label (``sigma = -y``, cost
    ``kappa``), or the residual (regression, ``sigma = 1``, ``shift = y``)."""

    sigma: np.ndarray     # (N,)
    shift: np.ndarray     # (N,)
    extra_cost: float
    flip: bool


@dataclass
class DROInstance:
    """Everything a reformulation needs.

    ``y`` is in {-1, +1} for classification and real for regression.  The hypothesis is
    ``f(x, z) = beta_0 + beta_x^T x + beta_z^T dummies(z)``.
    """

    #: the ambiguity set a method of :mod:`drokit.methods` fits on this kind of bound instance, in words
    KIND = "a Wasserstein ball"

    loss: Loss
    task: str
    schema: FeatureSchema
    data: MixedData
    y: np.ndarray
    metric: ResolvedMetric
    radius: float
    fit_intercept: bool = True
    #: positions in ``coef`` that every exact program fixes at 0 (see :meth:`fitting_view`)
    fixed_zero: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    #: probabilities ``p_n`` of the samples in the nominal distribution ``P_N = sum_n p_n delta_n``
    #: (``None``: uniform ``1/N``); set from ``fit(..., sample_weight=w)`` as ``w / sum(w)``
    sample_weight: Optional[np.ndarray] = None
    #: ``gamma >= 0`` of the lasso term ``gamma ||beta||_1`` added to the objective (intercept excluded;
    #: selvi2022 §4.2's r-DRO / r-LR); 0 = none
    l1_penalty: float = 0.0
    #: ``alpha >= 0`` of the ridge term ``alpha ||beta||_2^2`` (intercept excluded; belbasi2023 §6.3's
    #: r-Nom / r-MixF); 0 = none
    l2_penalty: float = 0.0

    @property
    def penalized(self) -> bool:
        return bool(self.l1_penalty or self.l2_penalty)

    def penalty_value(self, coef: np.ndarray) -> float:
        """``gamma ||beta||_1 + alpha ||beta||_2^2`` of a coefficient vector (the intercept is not in
        ``coef``)."""
        coef = np.asarray(coef, dtype=float)
        return float(self.l1_penalty * np.sum(np.abs(coef)) + self.l2_penalty * np.sum(coef ** 2))

    @property
    def n_samples(self) -> int:
        return self.data.n_samples

    @property
    def p(self) -> np.ndarray:
        """Sample probabilities of the nominal distribution (``1/N`` each unless weighted)."""
        if self.sample_weight is None:
            return np.full(self.n_samples, 1.0 / self.n_samples)
        return self.sample_weight

    @property
    def weighted(self) -> bool:
        return self.sample_weight is not None

    @property
    def n_numerical(self) -> int:
        return self.schema.n_numerical

    @property
    def n_categorical(self) -> int:
        return self.schema.n_categorical

    @property
    def is_classification(self) -> bool:
        return self.task == CLASSIFICATION

    @property
    def label_flips(self) -> bool:
        """Whether label-flip constraints exist (classification with finite kappa)."""
        return self.is_classification and np.isfinite(self.metric.kappa)

    def label_families(self) -> List[LabelFamily]:
        """The label families of every sample (one, or two with finite kappa in classification)."""
        y = np.asarray(self.y, dtype=float)
        if not self.is_classification:
            return [LabelFamily(np.ones_like(y), y, 0.0, False)]
        families = [LabelFamily(y, np.zeros_like(y), 0.0, False)]
        if self.label_flips:
            families.append(LabelFamily(-y, np.zeros_like(y), float(self.metric.kappa), True))
        return families

    def row_signs(self, sample: np.ndarray, flip: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(sigma, shift)`` of configuration rows: their loss argument is ``u = sigma f - shift``
        (``sigma = +-y`` with the label flip, ``shift = 0``; regression ``sigma = 1``, ``shift = y``)."""
        y = np.asarray(self.y, dtype=float)[sample]
        if self.is_classification:
            return y * np.where(flip, -1.0, 1.0), np.zeros_like(y)
        return np.ones_like(y), y

    def free_categorical(self) -> np.ndarray:
        """Categorical features (schema positions) that change for free: weight ``delta_l = 0``, >= 2 levels."""
        return np.flatnonzero((np.asarray(self.metric.delta, dtype=float) == 0) & (self.schema.levels > 1))

    def fitting_view(self) -> "DROInstance":
        """The instance the exact programs are fitted on: every free categorical feature (``delta_l = 0``)
        made immutable, its column set to the reference level and its coefficients fixed at 0.

        Same optimal value (hence the same optimal models, up to the free coefficients): the adversary
        always moves a free feature to its worst level, so replacing its level coefficients ``w_l(v)`` by a
        constant in their convex hull (absorbed by the intercept) does not raise ``max_v L(a + w_l(v))`` for
        any sample, ``L`` being convex -- an optimum with ``w_l = 0`` exists; with ``w_l = 0`` the feature
        neither changes the loss nor the cost, so it may as well be immutable.  Fitting the original
        instance instead leaves ``w_l`` unidentified and every configuration row duplicated across the
        free feature's levels; Clarabel then ends AlmostSolved (calibrated weights rounded to 0, issue 4).
        The certificate is computed on the original instance.  Returns ``self`` when nothing is free.

        A loss without a finite Lipschitz constant (it grows faster than linearly) is refused here where its
        worst case is infinite (:func:`drokit.losses.base.check_growth`); otherwise its numerical features
        with weight 0 (free moves, coefficients 0 in every program) are made immutable with their
        coefficients fixed at 0 in the same way, so that no program multiplies ``lip(L) = inf`` into a
        constraint.
        """
        check_growth(self.loss, radius=self.radius, task=self.task, numerical_names=self.schema.numerical_names,
                     gamma=self.metric.gamma, kappa=self.metric.kappa)
        view = self._free_numerical_fixed()
        free = view.free_categorical()
        if free.size == 0:
            return view
        levels = view.schema.levels.astype(int)
        starts = view.n_numerical + view.schema.dummy_offsets()[free]
        columns = np.concatenate([start + np.arange(levels[l] - 1) for start, l in zip(starts, free)])
        delta = np.asarray(view.metric.delta, dtype=float).copy()
        delta[free] = np.inf
        Z = view.data.Z.copy()
        Z[:, free] = 0
        return replace(view, data=replace(view.data, Z=Z), metric=replace(view.metric, delta=delta),
                       fixed_zero=np.union1d(view.fixed_zero, columns).astype(int))

    def _free_numerical_fixed(self) -> "DROInstance":
        """For a loss without a finite Lipschitz constant at a positive radius: the numerical features with
        weight 0 made immutable, their coefficients fixed at 0 (every program fixes them at 0 anyway); else
        ``self``."""
        gamma = np.asarray(self.metric.gamma, dtype=float)
        free = np.flatnonzero(gamma == 0)
        if free.size == 0 or self.radius == 0 or np.isfinite(lipschitz_of(self.loss)):
            return self
        gamma = gamma.copy()
        gamma[free] = np.inf
        return replace(self, metric=replace(self.metric, gamma=gamma),
                       fixed_zero=np.union1d(self.fixed_zero, free).astype(int))

    def evaluated_at(self, coef: np.ndarray) -> "DROInstance":
        """The instance at a fixed model: an adversarial loss becomes the plain loss of the attacked
        argument (:meth:`drokit.losses.Adversarial.at` with shift ``alpha ||beta_x||_{p*}``); other
        instances are returned as they are.  Every fixed-model routine (oracles, certificates, worst-case
        evaluation) works on this instance."""
        at = getattr(self.loss, "at", None)
        if at is None:
            return self
        return replace(self, loss=at(self.loss.shift(np.asarray(coef, dtype=float)[: self.n_numerical])))

    def take_samples(self, index: np.ndarray) -> "DROInstance":
        """The instance on the samples ``index`` (in that order), their probabilities ``p_n`` kept as they are (not
        renormalized): restricted to the samples of positive weight it has the same objective at every model."""
        index = np.asarray(index, dtype=int)
        data = replace(self.data, X=self.data.X[index], Z=self.data.Z[index])
        weight = None if self.sample_weight is None else np.asarray(self.sample_weight, dtype=float)[index]
        return replace(self, data=data, y=np.asarray(self.y)[index], sample_weight=weight)

    def positive_weight_samples(self) -> Optional[np.ndarray]:
        """The samples with ``p_n > 0`` when some have weight 0 (they add nothing to any objective of this
        instance), else ``None``."""
        if self.sample_weight is None:
            return None
        keep = np.flatnonzero(np.asarray(self.sample_weight) > 0)
        return None if keep.size == self.n_samples else keep

    def mutable_categorical(self) -> np.ndarray:
        """Categorical features (schema positions) that can change: finite weight and >= 2 levels."""
        return np.flatnonzero(np.isfinite(self.metric.delta) & (self.schema.levels > 1))

    def design(self) -> sp.csr_matrix:
        """``[X_num, dummies(Z)]`` of the training samples."""
        return self.schema.design(self.data)

    def scores(self, intercept: float, coef: np.ndarray) -> np.ndarray:
        """``f_n = beta_0 + beta_x^T x_n + sum_l w_l(z_nl)`` of the training samples, the categorical part by one
        lookup per feature (:meth:`~drokit.schema.FeatureSchema.level_scores`): no design matrix (converting the
        dense numerical block cost 0.2 s at 100,000 x 50; the oracles' nominal CSR design at 1,000,000 x 55 held
        250 MB)."""
        coef = np.asarray(coef, dtype=float)
        n = self.n_numerical
        f = np.asarray(self.data.X, dtype=float) @ coef[:n] + intercept
        if self.schema.n_encoded > n:
            f = f + self.schema.level_scores(self.data.Z, coef)
        return f

    def mutable_configurations(self) -> int:
        """``prod_l a_l`` over categorical features that may change (delta_l < inf): the categorical
        configurations per sample, as an exact Python integer (it can exceed any float, e.g. 10^330)."""
        levels = self.schema.levels
        mutable = np.isfinite(self.metric.delta)
        return math.prod(int(a) for a in levels[mutable]) if levels.size else 1


class _OnTraining:
    """The radius and sample count of a bound instance that wraps a training :class:`DROInstance`."""

    training: DROInstance

    @property
    def radius(self) -> float:
        return self.training.radius

    @property
    def n_samples(self) -> int:
        return self.training.n_samples


@dataclass(frozen=True)
class IntersectionInstance(_OnTraining):
    """An intersection of two Wasserstein balls bound to data (selvi2025 thesis §4.4, Inter-ARO): the training
    instance (its loss, metric, radius ``eps`` and encoded samples ``P_N``) and the auxiliary sample ``P_aux`` (the
    second ball's center, numerical features encoded with the training schema, labels in ``{-1, +1}`` coded as the
    training labels), its radius ``eps_aux``, and ``W(P_N, P_aux)`` with the optimal transport plan of the check
    ``eps + eps_aux >= W(P_N, P_aux)`` (the intersection is not empty)."""

    #: the ambiguity set a method of :mod:`drokit.methods` fits on this kind of bound instance, in words
    KIND = "an Intersection of two Wasserstein balls"

    training: DROInstance
    X_aux: np.ndarray
    y_aux: np.ndarray
    radius_aux: float
    distance: float
    plan: Optional[np.ndarray] = None


@dataclass(frozen=True)
class MOTInstance(_OnTraining):
    """Optimal transport with a moment constraint bound to data (MOT-DRO, ``spec/mot-dro-training.md``): the training
    instance (its loss, ground metric ``d`` with the numerical norm not squared, encoded samples, and as its radius
    the budget ``rho``) and the set's weights: ``theta1`` on the transport ``w d``, ``theta2`` on the divergence
    ``phi(w)`` of the reweighting (a :class:`~drokit.ambiguity.divergences.Divergence`: KL, chi-square or CVaR's bound),
    either ``inf`` (blanchet2024 (2.1), Remark 2)."""

    #: the ambiguity set a method of :mod:`drokit.methods` fits on this kind of bound instance, in words
    KIND = "an OT-with-moment set (OTMoment)"

    training: DROInstance
    theta1: float
    theta2: float
    divergence: object


#: what a method of :mod:`drokit.methods` compiles: a problem bound to data, by the kind of its ambiguity set
BoundInstance = Union[DROInstance, IntersectionInstance, MOTInstance]
