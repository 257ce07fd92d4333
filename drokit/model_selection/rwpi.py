"""Robust Wasserstein Profile Inference (RWPI): a Wasserstein radius from the training data alone, with no validation
(Blanchet, Kang & Murthy 2019, "Robust Wasserstein profile inference and applications to machine learning", J. Appl.
Prob.; issue 24).  The derivation for drokit's mixed metric, its assumptions and its checks: ``spec/rwpi-radius.md``.

The profile function of the estimating equation of the loss,

    R_N(beta) = inf { W_c(P, P_N) : E_P[h(U; beta)] = 0 },      h(u; beta) = L'(y f_beta(x, z)) y a(x, z),

(``a = [1, x, dummies(z)]``, ``f_beta = beta'a``, ``c = N(Gamma (x - x')) + D(z, z') + kappa 1[y != y']`` drokit's
type-1 cost) is the smallest radius whose ball holds a distribution under which ``beta`` is optimal.  At the true
``beta*`` (spec §3)

    sqrt(N) R_N(beta*)  =>  S = sup_{zeta in Lambda} zeta'Z,       Z ~ Normal(0, Cov h(U; beta*)),

``Lambda`` the multipliers for which ``zeta'h(.; beta*)`` is 1-Lipschitz under ``c`` from the support.  The radius is

    eps = q_alpha(S_hat) / sqrt(N),

``q_alpha`` the ``alpha``-quantile (``alpha``: the confidence level, the paper's ``1 - alpha``) of the plug-in law:
``beta*`` -> the ERM estimate (drokit at radius 0), ``Cov`` -> the sample covariance of ``h(u_i; beta_hat)``, and
``Lambda`` -> ``Lambda_hat``, the constraints at the sample points (spec §4)

    N_*(Gamma^{-1} [L''(m_i) (a_i'zeta) beta_x + y_i L'(m_i) zeta_x]) <= 1     numerical moves: the x-gradient of zeta'h
    zeta'(h(x_i, z', y') - h(x_i, z_i, y_i)) <= D(z_i, z') + kappa 1[y' != y_i]      categorical changes, label flips

(``m_i = y_i f(x_i, z_i)``; an entry of a free numerical feature, ``gamma_j = 0``, must vanish) over every configuration
``(z', y')`` of a sample, or, past ``max_rows`` rows, every single-feature change with and without a flip (an outer
approximation: a larger radius; spec §4).  ``S_hat`` is computed for every normal draw by
:func:`~drokit.model_selection.rwpi_support.support_values` (an LP in HiGHS, or a conic program in Clarabel for a
curved norm, with constraints joining lazily).

Supported: binary classification with the logistic or the smooth hinge loss (``L'`` continuous and Lipschitz, so that
``h`` is Lipschitz in ``x``, which the ``sqrt(N)`` law needs), every ground metric (any numerical norm, matrix costs,
mismatch / ordinal / level costs, label costs); the radius is the unpenalized loss's (an estimator's penalty enters only
its own fit).  Refused with a :class:`~drokit.ParameterError`: the hinge loss (``L'`` jumps at the margin; under
numerical moves ``R_N(beta*) = O_p(1/N)``, another law), regression losses, adversarial and custom losses, an ambiguity
set other than a Wasserstein ball, and a metric under which nothing moves; with a :class:`~drokit.DataError`: more than
two classes, separable classes (no finite ERM) and an infinite quantile (``Lambda_hat`` unbounded along the draws:
the moment cannot be restored in some direction).  Measured coverage, and where the radius comes out too small
(numerical moves at small N, a weak signal): spec §7.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import List

import numpy as np

from ..exceptions import DataError, ParameterError, SolverError
from .rwpi_support import support_values

#: the losses whose estimating equation the sqrt(N) law covers (module docstring)
SUPPORTED_LOSSES = ("logistic", "smooth_hinge")
#: finite-difference rows (samples x configurations) above which only single-feature changes are used, and above
#: which those come from a random subset of the samples (both outer approximations of Lambda_hat)
MAX_ROWS = 100_000


@dataclass
class RWPIResult:
    """What :func:`rwpi_radius` computed: ``radius = quantile / sqrt(n_samples)``.

    Attributes
    ----------
    radius, quantile, alpha : float
        The radius, the ``alpha``-quantile of the draws and the confidence level.
    quantile_interval : tuple of float
        A distribution-free 95% interval for the ``alpha``-quantile of the plug-in law, from the order statistics of the
        draws (its width is the Monte Carlo error: more ``n_draws`` narrow it).
    draws : numpy.ndarray
        ``(n_draws,)`` draws of the plug-in limit ``S_hat = sup_{zeta in Lambda_hat} zeta'Z`` (``inf``: unbounded).
    normal_draws : numpy.ndarray
        ``(n_draws, n_parameters)`` the normal draws ``Z``, in the order of ``parameter_names``.
    beta, parameter_names
        The plug-in ``beta`` (intercept first when fitted, then ``coef_``'s columns, the user's coordinates).
    covariance : numpy.ndarray
        The sample covariance of ``h(u_i; beta)`` (the data's coordinates: ``x~ = M x`` for a matrix cost).
    n_samples : int
        ``N``.
    moves : str
        ``"all"`` (every configuration of a sample), ``"single"`` (single-feature changes), ``"single, subsample"``
        (those of a random subset of the samples) or ``"numerical"`` (no categorical change or label flip).
    n_rows, n_cuts : int
        Finite-difference rows of ``Lambda_hat``, and rows (of both kinds) the LPs needed.
    max_gap : float
        The largest relative gap between a draw's value and its lower bound.
    """

    radius: float
    quantile: float
    alpha: float
    quantile_interval: tuple
    draws: np.ndarray
    normal_draws: np.ndarray
    beta: np.ndarray
    parameter_names: List[str]
    covariance: np.ndarray
    n_samples: int
    moves: str
    n_rows: int
    n_cuts: int
    max_gap: float

    @property
    def n_draws(self) -> int:
        return int(self.draws.size)

    @property
    def n_parameters(self) -> int:
        return int(self.beta.size)

    def __repr__(self) -> str:
        low, high = self.quantile_interval
        return (f"RWPIResult(radius={self.radius:.6g}, quantile={self.quantile:.6g} (95%: {low:.4g}-{high:.4g}), "
                f"alpha={self.alpha}, "
                f"n_samples={self.n_samples}, n_parameters={self.n_parameters}, n_draws={self.n_draws}, "
                f"moves={self.moves!r}, n_rows={self.n_rows}, n_cuts={self.n_cuts}, max_gap={self.max_gap:.1e})")


def rwpi_radius(estimator_or_loss, X, y, *, metric=None, alpha: float = 0.95, n_draws: int = 500, seed: int = 0,
                beta=None, categorical_features=None, categories="auto", fit_intercept: bool = True,
                max_rows: int = MAX_ROWS):
    """The RWPI radius ``eps = q_alpha(S_hat) / sqrt(N)`` of the training data (module docstring); returns
    ``(radius, RWPIResult)``.

    Parameters
    ----------
    estimator_or_loss : DROClassifier or str or Loss
        A drokit classifier (its loss, its Wasserstein ball's metric, ``categorical_features``, ``categories`` and
        ``fit_intercept`` are used) or a loss (``"logistic"``, ``"smooth_hinge"``).
    metric : GroundMetric or None
        The ground metric (default: the estimator's, else ``GroundMetric()``).
    alpha : float in (0, 1)
        The confidence level: the ball around ``P_N`` holds a distribution under which ``beta*`` is optimal with
        probability about ``alpha`` (larger ``alpha``, larger radius).
    n_draws, seed : int
        Normal draws of the limit law (each one LP or conic program) and their seed.
    beta : array or None
        The parameter the law is evaluated at, ``[intercept, coef...]`` (``None``: the ERM estimate).
    categorical_features, categories, fit_intercept
        As :class:`~drokit.DROClassifier` (an estimator's own are used when one is given).
    max_rows : int
        Largest number of finite-difference rows (module docstring).
    """
    from ..ambiguity import Wasserstein
    from ..losses import get_loss
    from ..metrics import GroundMetric
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0.0 < float(alpha) < 1.0:
        raise ParameterError(f"alpha is the confidence level of the RWPI radius, in (0, 1); got {alpha!r}")
    for name, value in (("n_draws", n_draws), ("max_rows", max_rows)):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise ParameterError(f"{name} must be a positive int, got {value!r}")
    if hasattr(estimator_or_loss, "get_params") and hasattr(estimator_or_loss, "fit"):
        params = estimator_or_loss.get_params(deep=False)
        loss = params.get("loss") or "logistic"
        ambiguity = params.get("ambiguity")
        if ambiguity is not None and not isinstance(ambiguity, Wasserstein):
            raise ParameterError(f"RWPI gives the radius of a Wasserstein ball around the training data; the "
                                 f"estimator's ambiguity set is a {type(ambiguity).__name__}")
        if metric is None and ambiguity is not None:
            metric = ambiguity.metric
        categorical_features, categories = params.get("categorical_features"), params.get("categories", "auto")
        fit_intercept = params.get("fit_intercept", True)
    else:
        loss = estimator_or_loss
    loss = get_loss(loss)
    if loss.name not in SUPPORTED_LOSSES or type(loss).__module__ != "drokit.losses.builtin":
        raise ParameterError(
            f"rwpi_radius supports the losses {list(SUPPORTED_LOSSES)} of binary classification (L' continuous and "
            f"Lipschitz, so that h(u; beta) = L'(y f) y a is Lipschitz in the features), got {loss!r}; the hinge "
            f"loss's L' jumps at the margin (R_N(beta*) is then O(1/N) under numerical moves, another limit law)")
    metric = GroundMetric() if metric is None else metric
    inst, theta, names, beta_user = _bound(loss, metric, X, y, beta, categorical_features, categories,
                                           bool(fit_intercept))
    return _radius(inst, theta, names, beta_user, float(alpha), int(n_draws), seed, int(max_rows), beta is None)


def _bound(loss, metric, X, y, beta, categorical_features, categories, fit_intercept):
    """The data bound in drokit's coordinates (``y`` in +-1, ``x~ = M x`` for a matrix cost) and ``theta = [beta_0,
    beta]`` there: the ERM estimate (:class:`~drokit.DROClassifier` at radius 0, certified) or ``beta``."""
    from ..ambiguity import Wasserstein
    from ..models import DROClassifier
    from ..models.problem import Problem
    from ..schema import FeatureSchema
    from ..validation import as_1d, check_array_2d, class_labels
    X = check_array_2d(X)
    y = as_1d(y, X.shape[0])
    classes = class_labels(y, X.shape[0])
    if classes.size != 2:
        raise DataError(f"rwpi_radius is for binary classification; y has {classes.size} classes")
    ball = Wasserstein(metric, radius=0.0)
    if beta is None:
        erm = DROClassifier(loss=loss, ambiguity=ball, fit_intercept=fit_intercept,
                            categorical_features=categorical_features, categories=categories)
        try:
            erm.fit(X, y)
        except SolverError as exc:
            raise DataError(f"the ERM estimate (drokit at radius 0) has no certified finite minimizer ({exc}); RWPI "
                            f"needs a finite beta*: are the classes separable?") from exc
        schema, ball = erm.schema_, erm.ambiguity_
        beta_user = np.r_[erm.intercept_ if fit_intercept else [], erm.coef_.ravel()].astype(float)
    else:
        schema = FeatureSchema.infer(X, categorical_features, categories)
        beta_user = np.asarray(beta, dtype=float).ravel()
    inst = Problem(loss=loss, ambiguity=ball, fit_intercept=fit_intercept).bind(X, y, schema=schema, classes=classes)
    names = (["intercept"] if fit_intercept else []) + schema.encoded_names()
    if beta_user.size != len(names) or not np.all(np.isfinite(beta_user)):
        raise ParameterError(f"beta must hold {len(names)} finite numbers ({names}), got {beta_user.size}")
    theta = beta_user.copy()
    linear_map = inst.metric.linear_map
    if linear_map is not None:
        off = int(fit_intercept)
        theta[off:] = linear_map.coef_forward(theta[off:])
    return inst, theta, names, beta_user


def _radius(inst, theta, names, beta_user, alpha, n_draws, seed, max_rows, erm):
    N, n, off = inst.n_samples, inst.n_numerical, int(inst.fit_intercept)
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    scale = np.sqrt(np.mean(inst.data.X ** 2, axis=0)) if n else np.zeros(0)
    scale = np.where(scale > 0, scale, 1.0)             # features in unit RMS, weights and coefficients to match
    X, gamma = inst.data.X / scale, gamma * scale
    theta = theta.copy()
    theta[off:off + n] *= scale
    A = np.hstack([np.ones((N, off)), X, inst.schema.dummies(inst.data.Z).toarray()])
    y = np.asarray(inst.y, dtype=float)
    m = y * (A @ theta)
    if erm and np.all(m > 0):
        raise DataError("the classes are linearly separable (every training margin of the ERM estimate is positive): "
                        "the loss has no finite minimizer beta*, and RWPI's estimating equation no root")
    d1, d2 = inst.loss.derivative(m), inst.loss.second_derivative(m)
    H = (d1 * y)[:, None] * A
    cov = np.atleast_2d(np.cov(H, rowvar=False, bias=True))
    rng = np.random.default_rng(seed)
    w, V = np.linalg.eigh(cov)
    w = np.where(w > 1e-12 * max(w.max(), 1e-300), w, 0.0)
    Z = rng.standard_normal((n_draws, w.size)) @ (V * np.sqrt(w)).T
    rows, rhs, moves = _move_rows(inst, theta, A, H, gamma, d1, d2, max_rows, rng)
    grad = Gradient(inst.metric.numerical, gamma, off, theta, A, y, d1, d2)
    if rows.shape[0] == 0 and grad.keep.size == 0:
        raise ParameterError("under this metric nothing moves (every numerical feature, categorical feature and label "
                             "is immutable): no ball around P_N restores the moment, the profile is infinite")
    values, gaps, n_cuts = support_values(Z, rows, rhs, grad)
    quantile = float(np.quantile(values, alpha, method="inverted_cdf"))
    if not np.isfinite(quantile):
        raise DataError(f"the RWPI quantile is infinite ({np.mean(np.isinf(values)):.0%} of the draws): the moment "
                        f"E[h] = 0 cannot be restored by moves of finite cost along some direction (immutable "
                        f"features, labels that never flip, no numerical signal); let more features or the labels move")
    unit = np.r_[np.ones(off), scale, np.ones(A.shape[1] - off - n)]       # h of the unit-RMS features times this
    radius, ordered = quantile / math.sqrt(N), np.sort(values)
    half = 1.96 * math.sqrt(n_draws * alpha * (1.0 - alpha))
    interval = (float(ordered[max(0, math.floor(n_draws * alpha - half) - 1)]),
                float(ordered[min(n_draws - 1, math.ceil(n_draws * alpha + half) - 1)]))
    return radius, RWPIResult(radius=radius, quantile=quantile, alpha=alpha, quantile_interval=interval,
                              draws=values, normal_draws=Z * unit,
                              beta=beta_user, parameter_names=names, covariance=cov * np.outer(unit, unit),
                              n_samples=N, moves=moves, n_rows=int(rows.shape[0]), n_cuts=n_cuts,
                              max_gap=float(np.max(gaps, initial=0.0)))


def _move_rows(inst, theta, A, H, gamma, d1, d2, max_rows, rng):
    """The rows of ``Lambda_hat`` linear in ``zeta``, as ``r'zeta <= rhs``, ``rhs`` in {0, 1}: the finite differences
    ``(h(x_i, z', y') - h_i) / c`` of the categorical changes and label flips of every sample (``rhs = 1``; a free
    feature, ``c = 0``: normalized, ``rhs = 0``), and ``+-(L''_i beta_j a_i + y_i L'_i e_j)`` of the free numerical
    columns (``gamma_j = 0``: that gradient entry is 0).  Returns ``(rows, rhs, moves)``."""
    N, off, n, schema = inst.n_samples, int(inst.fit_intercept), inst.n_numerical, inst.schema
    y, Z = np.asarray(inst.y, dtype=float), inst.data.Z
    mutable, levels, flips = inst.mutable_categorical(), schema.levels.astype(int), inst.label_flips
    blocks, moves = [], "numerical"
    if mutable.size or flips:
        signs = np.array([0, 1] if flips else [0])
        if N * (math.prod(int(levels[l]) for l in mutable) * signs.size - 1) <= max_rows:
            moves = "all"
            grid = np.indices([levels[l] for l in mutable] + [signs.size]).reshape(mutable.size + 1, -1).T
            codes, flip, samples = grid[:, :-1], grid[:, -1], np.arange(N)
            alt = np.repeat(Z[:, None, :], codes.shape[0], axis=1)
            alt[:, :, mutable] = codes[None]
        else:                                     # one feature to each of its levels, with and without a flip
            moves = "single"
            feature = np.concatenate([np.full(levels[l], l) for l in mutable] + [np.zeros(0, int)]).astype(int)
            value = np.concatenate([np.arange(levels[l]) for l in mutable] + [np.zeros(0, int)]).astype(int)
            feature, value = np.tile(feature, signs.size), np.tile(value, signs.size)
            flip = np.repeat(signs, feature.size // signs.size)
            if flips:                             # the flip alone
                feature, value, flip = np.r_[feature, -1], np.r_[value, 0], np.r_[flip, 1]
            samples = np.arange(N)
            if N * feature.size > max_rows:       # a random subset of the samples (an outer approximation)
                moves = "single, subsample"
                samples = np.sort(rng.choice(N, size=max(1, max_rows // feature.size), replace=False))
            alt = np.repeat(Z[samples, None, :], feature.size, axis=1)
            k = np.flatnonzero(feature >= 0)
            alt[:, k, feature[k]] = value[k]
        K = alt.shape[1]
        i = np.repeat(samples, K)
        alt = alt.reshape(samples.size * K, Z.shape[1])
        flip = np.tile(flip, samples.size).astype(bool)
        cost = inst.metric.categorical_distance(Z[i], alt) + np.where(flip, inst.metric.kappa, 0.0)
        keep = np.zeros(i.size, dtype=bool)       # each move once (a flip with a feature at its own level repeats)
        keep[np.unique(np.column_stack([i, alt, flip]), axis=0, return_index=True)[1]] = True
        keep &= (np.any(alt != Z[i], axis=1) | flip) & np.isfinite(cost)
        i, alt, flip, cost = i[keep], alt[keep], flip[keep], cost[keep]
        sigma = y[i] * np.where(flip, -1.0, 1.0)
        a = A[i].copy()
        a[:, off + n:] = schema.dummies(alt).toarray()
        f = a[:, :off + n] @ theta[:off + n] + schema.level_scores(alt, theta[off:])
        r = (inst.loss.derivative(sigma * f) * sigma)[:, None] * a - H[i]
        blocks.append((r / np.where(cost > 0, cost, 1.0)[:, None], (cost > 0).astype(float)))
    for j in np.flatnonzero(gamma == 0):          # free numerical column j
        r = (d2 * theta[off + j])[:, None] * A
        r[:, off + j] += y * d1
        blocks += [(r, np.zeros(N)), (-r, np.zeros(N))]
    if not blocks:
        return np.zeros((0, A.shape[1])), np.zeros(0), moves
    rows, rhs = np.vstack([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])
    size = np.linalg.norm(rows, axis=1)
    rows[rhs == 0] /= np.where(size > 0, size, 1.0)[rhs == 0, None]
    keep = (rhs > 0) | (size > 1e-12)             # a zero row with rhs 0 holds for every zeta
    return rows[keep], rhs[keep], moves


class Gradient:
    """The dual-norm constraints ``N_*(Gamma^{-1} v_i(zeta)) <= 1`` of the numerical moves, ``v_i(zeta) = L''(m_i)
    (a_i'zeta) beta_x + y_i L'(m_i) zeta_x``, on the norm-priced columns ``0 < gamma_j < inf`` (``keep``)."""

    def __init__(self, norm, gamma, off, theta, A, y, d1, d2):
        from ..metrics.norms import priced_columns
        self.norm, self.keep = norm, priced_columns(gamma)
        self.cols = off + self.keep
        self.w = 1.0 / gamma[self.keep]
        self.b = theta[self.cols] * self.w
        self.A, self.s2, self.s1 = A, d2, y * d1
        self.p = getattr(norm, "lp_exponent", None)

    def vectors(self, samples, Zeta):
        """``Gamma^{-1} v_i(zeta_k)`` for pairs ``(samples[k], Zeta[k])``: ``(K, k)``."""
        g = np.einsum("kp,kp->k", self.A[samples], Zeta)
        return (self.s2[samples] * g)[:, None] * self.b + self.s1[samples, None] * Zeta[:, self.cols] * self.w

    def violations(self, Zeta):
        """``N_*(Gamma^{-1} v_i(zeta_b)) - 1`` for every sample and every row of ``Zeta``: ``(N, B)``."""
        G = self.A @ Zeta.T
        V = (self.s2[:, None] * G)[:, :, None] * self.b + self.s1[:, None, None] * (Zeta[:, self.cols] * self.w)[None]
        return np.asarray(self.norm.dual_value(V, self.keep), dtype=float) - 1.0

    def cuts(self, samples, V):
        """The facets ``d'Gamma^{-1} v_i(zeta) <= 1`` of a polyhedral dual norm active at the rows of ``V``: ``l_inf``
        (an ``l_1`` cost), ``d`` the sign of the largest entry; ``l_1`` (an ``l_inf`` cost), ``d`` the signs."""
        if self.p == 1:
            D = np.zeros_like(V)
            j = np.argmax(np.abs(V), axis=1)
            D[np.arange(V.shape[0]), j] = np.sign(V[np.arange(V.shape[0]), j])
        else:
            D = np.sign(V)
        rows = (self.s2[samples] * (D @ self.b))[:, None] * self.A[samples]
        rows[:, self.cols] += self.s1[samples, None] * D * self.w
        return rows


__all__ = ["rwpi_radius", "RWPIResult", "SUPPORTED_LOSSES"]
