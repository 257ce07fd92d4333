"""The weighted p-norm cost of numerical features, ``||Gamma (x - x')||_p``, or ``||M (x - x')||_p`` with a matrix.

:class:`NormCost` is drokit's own implementation of the :class:`~drokit.metrics.norms.NumericalNorm` protocol (``N =
||.||_p``), with its fast numeric paths (``l_p`` closed forms, scipy's ``cdist``) and the ``l_p``-specific
methods (:attr:`NormCost.lp_exponent`: drokit's barrier solvers for ``p`` in {1, 2, inf}).  ``gamma_j = inf`` makes
feature j immutable, ``gamma_j = 0`` free (sun2025 Def. 2 for p = 1; any p >= 1).  ``NormCost(p, matrix=M)``: ``||M
(x - x')||_p`` with an invertible matrix ``M`` over the mutable numerical columns (``NormCost.mahalanobis(Sigma)``:
``M'M = Sigma^{-1}``), fitted by the change of coordinates ``x~ = M x`` of :mod:`drokit.metrics.linear_map`.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np
from scipy.spatial.distance import cdist

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from ..params import real_number
from .linear_map import LinearMap, check_matrix_weights, mahalanobis_matrix, map_of_arrays, resolve_matrix
from .norms import NumericalNorm, dual_exponent
from .scales import check_scale
from .weights import Weights, resolve_weights


class NormCost(NumericalNorm):
    """Weighted norm cost ``||Gamma (x - x')||_p`` on numerical features, or ``||M (x - x')||_p`` with a matrix.

    Parameters
    ----------
    p : float
        Norm exponent, ``1 <= p <= inf`` (1, 2 and inf compile to LP/SOC; other p to power cones).
    weights : float or array_like or dict or None
        ``gamma_j`` per numerical column: ``None`` (all 1), a scalar, an array in column order, or
        ``{column: gamma}`` (others 1).  ``np.inf`` = immutable, ``0`` = free to move at no cost.  With a
        ``matrix`` only ``1`` and ``np.inf`` are allowed: the weights then only mark immutable columns (fold other
        weights into the matrix, ``M @ np.diag(w)``).
    scale : str or None
        ``None`` (default: raw units) or ``"std"``, ``"mad"``, ``"range"``: measure each feature in its
        spread ``s_j`` on the training rows, i.e. use ``gamma_j / s_j`` (:mod:`drokit.metrics.scales`).  The
        spreads are fitted with the model and kept in ``model.ambiguity_``, so that ``dk.worst_case`` and
        ``dk.stability`` of the model use the same ones.  Not with a ``matrix``.
    matrix : array_like or pandas.DataFrame or None
        ``None`` (default: the diagonal ``Gamma``) or an invertible ``(k, k)`` matrix ``M`` over the ``k`` mutable
        numerical columns in order (a DataFrame: its columns name them, any order): the cost is ``||M (x - x')||_p``,
        fitted on ``x~ = M x`` with the unit norm, ``beta = M' beta~`` (:mod:`drokit.metrics.linear_map`).

    Attributes
    ----------
    fitted_scale : dict or None
        On the fitted copy of a scaled cost (``scale=None`` then, weights ``gamma_j / s_j``):
        ``{"kind": scale, "spreads": {column: s_j}}``; ``None`` otherwise.
    """

    matrix = None   # (objects pickled before matrices existed)

    def __init__(self, p: float = 1, weights: Weights = None, scale: Optional[str] = None, matrix=None):
        self.p = p
        self.weights = weights
        self.scale = scale
        self.matrix = matrix
        self.fitted_scale = None

    @classmethod
    def mahalanobis(cls, Sigma, p: float = 2) -> "NormCost":
        """The Mahalanobis cost ``sqrt((x - x')' Sigma^{-1} (x - x'))`` (``p = 2``) of a covariance ``Sigma``.

        ``M = L^{-1}`` with ``Sigma = L L'`` (Cholesky), so that ``M'M = Sigma^{-1}`` and ``||M d||_2^2 = d' Sigma^{-1}
        d``: fitting with it is fitting on the whitened data ``X M'``; another ``p`` gives ``||M d||_p``.  ``Sigma``:
        a ``(k, k)`` symmetric positive definite array over the mutable numerical columns in order, or a DataFrame
        (e.g. ``X[numerical].cov()``) naming them.  Raises :class:`~drokit.ParameterError` otherwise.
        """
        return cls(p=p, matrix=mahalanobis_matrix(Sigma))

    def validated_p(self) -> float:
        p = real_number(self.p, "NormCost p")
        if not (p >= 1):
            raise ParameterError(f"NormCost p must be >= 1 (a norm), got {self.p!r}")
        return p

    def resolve(self, names: List[str]) -> np.ndarray:
        self.validated_p()
        if check_scale(self.scale) is not None and self.matrix is None:
            raise ParameterError(f"NormCost(scale={self.scale!r}) measures each numerical feature in its spread on the "
                                 f"training rows, and has not been fitted to any: it is fitted when a model is "
                                 f"fitted (or by GroundMetric.fit_scales(X) for a metric used on its own)")
        return self.unscaled_weights(names)

    def unscaled_weights(self, names: List[str]) -> np.ndarray:
        """``gamma_j`` per column as declared, before any ``scale`` (what :mod:`.scales` divides by the spreads)."""
        gamma = resolve_weights(self.weights, names, "numerical")
        if self.matrix is not None:
            check_matrix_weights(gamma, names, self.scale)
        return gamma

    def linear_map(self, names: List[str]) -> Optional[LinearMap]:
        """The change of coordinates ``x~ = M x`` of a matrix cost over the numerical columns ``names``
        (:class:`~drokit.metrics.linear_map.LinearMap`: ``M`` acts on the columns of finite weight); ``None``
        without a matrix.  Raises :class:`ParameterError` for an invalid matrix."""
        if self.matrix is None:
            return None
        gamma = self.resolve(names)
        mutable = np.flatnonzero(np.isfinite(gamma))
        return LinearMap.of(resolve_matrix(self.matrix, [names[j] for j in mutable]), mutable, len(names))

    @property
    def dual_p(self) -> float:
        """Exponent q of the dual norm, ``1/p + 1/q = 1``."""
        return dual_exponent(self.validated_p())

    # ------------------------------------------------------------ evaluation
    def distance(self, X1: np.ndarray, X2: np.ndarray, gamma: Optional[np.ndarray] = None,
                 names: Optional[List[str]] = None) -> np.ndarray:
        """Row-wise ``||Gamma (x1 - x2)||_p``, or ``||M (x1 - x2)||_p`` with a matrix (over the columns of finite
        ``gamma``; ``names``: the columns, to order a DataFrame matrix); ``inf`` where an immutable feature differs.
        ``gamma`` defaults to ones."""
        diff = np.asarray(X1, float) - np.asarray(X2, float)
        gamma = np.ones(diff.shape[-1]) if gamma is None else np.asarray(gamma, dtype=float)
        moved = diff != 0
        if self.matrix is not None:
            out = map_of_arrays(self.matrix, gamma, names).cost(diff, self.validated_p())
        else:
            with np.errstate(invalid="ignore"):
                scaled = np.where(moved, np.abs(diff) * gamma, 0.0)
            out = np.linalg.norm(scaled, ord=self.validated_p(), axis=-1) if scaled.shape[-1] else \
                np.zeros(scaled.shape[:-1])
        return np.where(np.any(moved & np.isinf(gamma), axis=-1), np.inf, out)

    def dual_norm(self, v: np.ndarray, gamma: np.ndarray, names: Optional[List[str]] = None,
                  columns: Optional[np.ndarray] = None) -> float:
        """``||Gamma^{-1} v||_q`` (with a matrix ``||M^{-T} v_F||_q`` over the columns ``F`` of finite ``gamma``):
        coordinates with ``gamma = inf`` are free; ``gamma = 0`` and ``v != 0`` gives ``inf``.  (``columns``: the
        protocol's positions, not needed by an elementwise norm.)"""
        v = np.asarray(v, float)
        gamma = np.asarray(gamma, dtype=float)
        if self.matrix is not None:
            lmap = map_of_arrays(self.matrix, gamma, names)
            return float(np.linalg.norm(lmap.coef_forward(v)[lmap.columns], ord=self.dual_p)) \
                if lmap.columns.size else 0.0
        free = np.isinf(gamma)
        zero = gamma == 0
        if np.any(zero & (np.abs(v) > 0)):
            return np.inf
        keep = ~free & ~zero
        if not keep.any():
            return 0.0
        return float(np.linalg.norm(v[keep] / gamma[keep], ord=self.dual_p))

    # ------------------------------------------------------------------ conic
    def add_dual_norm_leq(self, pb: ProgramBuilder, v: Affine, t: Affine, gamma: np.ndarray,
                          columns: Optional[np.ndarray] = None) -> None:
        """Add ``||Gamma^{-1} v||_q <= t`` (``t`` a single affine function; ``columns`` not needed, elementwise).

        q = inf: ``-t <= v_j / gamma_j <= t`` (LP); q = 1: ``sum_j r_j <= t, |v_j / gamma_j| <= r_j`` (LP);
        q = 2: one second-order cone; other q: ``sum_j r_j <= t`` with power cones
        ``r_j^(1/q) t^(1 - 1/q) >= |w_j|``.  Coordinates with ``gamma_j = inf`` are unconstrained,
        those with ``gamma_j = 0`` are fixed to ``v_j = 0``.  A matrix cost is compiled in the coordinates
        ``x~ = M x``, where it is the unit-weight norm: the bound instance's cost has no matrix.
        """
        if self.matrix is not None:
            raise ParameterError("a NormCost with a matrix is compiled on the data x~ = M x with the unit-weight "
                                 "norm (Problem.bind); bind the data instead of compiling this cost directly")
        zero = np.flatnonzero(gamma == 0)
        if zero.size:
            pb.add_zero(v[zero])
        keep = np.flatnonzero(np.isfinite(gamma) & (gamma > 0))
        if keep.size == 0:
            return
        w = v[keep] * (1.0 / gamma[keep])
        k = keep.size
        q = self.dual_p
        tk = t.repeat(k)
        if np.isinf(q):
            pb.add_nonneg(Affine.vstack([tk - w, tk + w]))
        elif q == 1:
            r = pb.aux("dual_norm_r", k)
            pb.add_nonneg(Affine.vstack([r - w, r + w, t - r.sum()]))
        elif q == 2:
            pb.add_norm2_leq(w, t)
        else:
            r = pb.aux("dual_norm_r", k)
            pb.add_pow(r, tk, w, 1.0 / q)
            pb.add_nonneg(t - r.sum())

    # ------------------------------------------------ the NumericalNorm protocol (the unit-weight l_p norm)
    @property
    def lp_exponent(self) -> Optional[float]:
        """``p`` (``None`` with a matrix: ``||M d||_p`` is not elementwise; it is fitted as the unit-weight norm in the
        coordinates ``x~ = M x``, where the bound instance's cost has no matrix)."""
        return None if self.matrix is not None else self.validated_p()

    def _unit(self, member: str) -> float:
        if self.matrix is not None:
            raise ParameterError(f"NormCost.{member}: a NormCost with a matrix is evaluated in the coordinates x~ = M x "
                                 f"with the unit-weight norm (Problem.bind); bind the data instead")
        return self.validated_p()

    def value(self, D: np.ndarray, columns: Optional[np.ndarray] = None) -> np.ndarray:
        """``||d||_p`` of every row of ``D``."""
        D = np.asarray(D, dtype=float)
        p = self._unit("value")
        return np.linalg.norm(D, ord=p, axis=-1) if D.shape[-1] else np.zeros(D.shape[:-1])

    def dual_value(self, V: np.ndarray, columns: Optional[np.ndarray] = None) -> np.ndarray:
        """``||v||_q`` of every row of ``V``."""
        V = np.asarray(V, dtype=float)
        self._unit("dual_value")
        return np.linalg.norm(V, ord=self.dual_p, axis=-1) if V.shape[-1] else np.zeros(V.shape[:-1])

    def add_value_leq(self, pb: ProgramBuilder, d: Affine, t: Affine, columns: Optional[np.ndarray] = None) -> None:
        """``||d||_p <= t``: the dual-norm constraint of the dual exponent (LP rows for p in {1, inf}, one second-order
        cone for p = 2, power cones otherwise)."""
        self._unit("add_value_leq")
        NormCost(p=self.dual_p).add_dual_norm_leq(pb, d, t, np.ones(d.size))

    def add_dual_value_leq(self, pb: ProgramBuilder, v: Affine, t: Affine,
                           columns: Optional[np.ndarray] = None) -> None:
        """``||v||_q <= t`` (:meth:`add_dual_norm_leq` with unit weights)."""
        self._unit("add_dual_value_leq")
        self.add_dual_norm_leq(pb, v, t, np.ones(v.size))

    def maximizer(self, v: np.ndarray, columns: Optional[np.ndarray] = None) -> np.ndarray:
        """``d`` with ``||d||_p = 1`` and ``v'd = ||v||_q``: p = 1, the coordinate of the largest ``|v_j|`` by its sign;
        p = inf, every coordinate by its sign; otherwise ``sign(v) |v|^(q-1) / ||v||_q^(q-1)`` (0 for ``v = 0``)."""
        v = np.asarray(v, dtype=float)
        p = self._unit("maximizer")
        if v.size == 0:
            return np.zeros(0)
        if p == 1:
            j = int(np.argmax(np.abs(v)))
            d = np.zeros(v.size)
            d[j] = np.sign(v[j])
            return d
        if np.isinf(p):
            return np.sign(v)
        q = self.dual_p
        norm = np.linalg.norm(v, ord=q)
        if norm == 0:
            return np.zeros(v.size)
        return np.sign(v) * np.abs(v) ** (q - 1) / norm ** (q - 1)

    def pairwise(self, A: np.ndarray, B: np.ndarray, columns: Optional[np.ndarray] = None) -> np.ndarray:
        """``||a_i - b_j||_p`` for every pair of rows (scipy's ``cdist``)."""
        p = self._unit("pairwise")
        if p == 1:
            return cdist(A, B, "cityblock")
        if p == 2:
            return cdist(A, B, "euclidean")
        if np.isinf(p):
            return cdist(A, B, "chebyshev")
        return cdist(A, B, "minkowski", p=p)

    def check(self, names: List[str], gamma: np.ndarray) -> None:
        """Nothing to test: the l_p norms are drokit's own."""


    def __repr__(self) -> str:
        matrix = "" if self.matrix is None else f", matrix={self.matrix!r}"
        return f"NormCost(p={self.p!r}, weights={self.weights!r}{matrix})"


__all__ = ["NormCost"]
