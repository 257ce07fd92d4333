"""Matrix numerical costs ``c(x, x') = ||M (x - x')||_p`` by a change of coordinates.

A :class:`~drokit.NormCost` with ``matrix=M`` (an invertible ``k x k`` matrix over the ``k`` mutable numerical
columns; the immutable ones, weight ``np.inf``, never move and are left out of ``M``) prices a move of the
numerical features by ``||M (x - x')||_p``; ``NormCost.mahalanobis(Sigma)`` is ``p = 2`` and ``M'M = Sigma^{-1}``,
the Mahalanobis distance ``sqrt((x - x')' Sigma^{-1} (x - x'))``.

drokit fits it by a change of coordinates where the data are bound (:meth:`drokit.Problem.bind`):

    x~ = M x   (on the mutable numerical columns; the others are kept),

so that ``||M (x - x')||_p = ||x~ - x~'||_p`` (the unit-weight p-norm) and a linear score is unchanged,

    beta' x = beta' M^{-1} M x = (M^{-T} beta)' x~ = beta~' x~,     beta~ = M^{-T} beta,  beta = M' beta~.

A distribution ``Q`` of ``(x, z, y)`` and its image ``Q~`` under ``x -> M x`` have the same transport costs from
the data and the same expected losses, so ``sup_{W(Q, P_N) <= eps} E_Q[L]`` at ``beta`` equals the same supremum on
the transformed data at ``beta~``, and the DRO problem with the matrix cost on ``X`` is the problem with the unit
p-norm on ``X M'``: every method, oracle and certificate runs unchanged on the transformed data, and only the
results come back: ``beta = M' beta~`` for the coefficients (intercept and categorical coefficients unchanged),
``x = M^{-1} x~`` for points and displacements.  :class:`LinearMap` holds ``M`` and does these maps; the bound
instance keeps it in ``inst.metric.linear_map``.

What the change of coordinates does not carry, and drokit refuses with a matrix cost: the ``l1_penalty`` /
``l2_penalty`` (they penalize ``beta``, not ``beta~``), an adversarial loss (its attack is an l_p ball in the
original coordinates), the ``scale`` of :class:`~drokit.NormCost` (fold the spreads into ``M``), per-feature weights
other than ``1`` / ``np.inf`` (fold them into ``M``: ``M @ diag(w)``), intersections of balls, and the evaluations that work on raw data with per-feature weights (:func:`drokit.wasserstein_distance`,
:func:`drokit.evaluation.simulate_shift`, stability of MLPs and callables, :func:`drokit.feature_stability`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import List, Optional

import numpy as np

from ..exceptions import ParameterError

#: a matrix whose condition number exceeds this is refused as (numerically) singular
MAX_CONDITION = 1e12
#: relative asymmetry ``max |Sigma - Sigma'| / max |Sigma|`` tolerated by :func:`mahalanobis_matrix`
SYMMETRY_RTOL = 1e-10


@dataclass(frozen=True, eq=False)
class LinearMap:
    """The change of coordinates ``x~ = M x`` on the mutable numerical columns (module docstring).

    Attributes
    ----------
    matrix : numpy.ndarray of shape (k, k)
        ``M``.
    inverse : numpy.ndarray of shape (k, k)
        ``M^{-1}``.
    columns : numpy.ndarray of shape (k,)
        Positions (among the numerical columns, schema order) that ``M`` acts on; the others are immutable.
    n_numerical : int
        Number of numerical columns.
    """

    matrix: np.ndarray
    inverse: np.ndarray
    columns: np.ndarray
    n_numerical: int

    @classmethod
    def of(cls, matrix: np.ndarray, columns: np.ndarray, n_numerical: int) -> "LinearMap":
        """The map of a validated invertible ``matrix`` acting on ``columns``."""
        M = np.array(matrix, dtype=float)
        return cls(M, np.linalg.inv(M), np.asarray(columns, dtype=int), int(n_numerical))

    def _apply(self, A: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``A`` (..., n or more columns) with its block ``A[..., columns]`` replaced by ``A[..., columns] @ right``."""
        out = np.array(A, dtype=float, copy=True)
        if self.columns.size:
            out[..., self.columns] = np.asarray(A, dtype=float)[..., self.columns] @ right
        return out

    # --------------------------------------------------------------- points
    def points_forward(self, X: np.ndarray) -> np.ndarray:
        """``x~ = M x`` for every row of ``X`` (N, n): ``X~[:, F] = X[:, F] M'``."""
        return self._apply(X, self.matrix.T)

    def points_back(self, X: np.ndarray) -> np.ndarray:
        """``x = M^{-1} x~`` for every row (points and displacements alike: the map is linear)."""
        return self._apply(X, self.inverse.T)

    # --------------------------------------------------------- coefficients
    def coef_forward(self, coef: np.ndarray) -> np.ndarray:
        """``beta~ = M^{-T} beta`` on the numerical block of ``coef`` ((n_encoded,) or (K, n_encoded): one row per
        class); the categorical coefficients are unchanged."""
        return self._apply(coef, self.inverse)

    def coef_back(self, coef: np.ndarray) -> np.ndarray:
        """``beta = M' beta~`` on the numerical block (the inverse of :meth:`coef_forward`)."""
        return self._apply(coef, self.matrix)

    def result_back(self, result):
        """A copy of a fit's result (a :class:`~drokit.FitResult`) with ``coef`` in the original coordinates and this
        map in ``auxiliary["linear_map"]``; objective, bounds and multipliers are invariant.  The program and its
        primal values (``result.primal``, ``result.conic_program()``) stay in the coordinates ``x~``."""
        if result is None or result.auxiliary.get("linear_map") is self:
            return result
        return replace(result, coef=self.coef_back(np.asarray(result.coef, dtype=float)),
                       auxiliary={**result.auxiliary, "linear_map": self})

    def cost(self, D: np.ndarray, p: float) -> np.ndarray:
        """``||M d||_p`` of every row of the displacements ``D`` (..., n) over the mutable columns."""
        D = np.asarray(D, dtype=float)
        if not self.columns.size:
            return np.zeros(D.shape[:-1])
        return np.linalg.norm(D[..., self.columns] @ self.matrix.T, ord=p, axis=-1)


# ==================================================================== validation
def _check_finite_square(A: np.ndarray, what: str) -> np.ndarray:
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ParameterError(f"{what} must be a square 2-D array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ParameterError(f"{what} must be finite (it has NaN or inf entries)")
    return A


def _as_float_array(matrix, what: str) -> np.ndarray:
    if isinstance(matrix, (str, bytes, bool, np.bool_)) or np.ndim(matrix) == 0:
        raise ParameterError(f"{what} must be a (k, k) array or a DataFrame whose columns are the numerical "
                             f"columns, got {matrix!r}")
    try:
        return np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} must hold numbers, got {matrix!r}") from None


def _frame_columns(matrix, names: List[str], what: str) -> Optional[np.ndarray]:
    """The values of a DataFrame ``matrix`` with its columns in the order of ``names`` (``None`` for an array)."""
    columns = getattr(matrix, "columns", None)
    if columns is None or not hasattr(matrix, "to_numpy"):
        return None
    keys = [str(c) for c in columns]
    unknown = [k for k in keys if k not in names]
    missing = [n for n in names if n not in keys]
    if unknown or missing or len(set(keys)) != len(keys):
        raise ParameterError(f"{what} is a DataFrame whose columns must be the mutable numerical columns {names} "
                             f"(each once, any order); unknown {unknown}, missing {missing}")
    values = _as_float_array(matrix.to_numpy(), what)
    return values[:, [keys.index(n) for n in names]]


def resolve_matrix(matrix, names: List[str], what: str = "NormCost matrix") -> np.ndarray:
    """``M`` as a checked float array whose columns follow ``names`` (the mutable numerical columns in schema order).

    ``matrix``: a ``(k, k)`` array over ``names`` in order, or a DataFrame whose columns are ``names`` in any order
    (reordered; its index labels the output coordinates and is not used, the norm does not depend on their
    order).  Raises :class:`ParameterError` naming ``what`` for a non-square, wrongly sized, non-finite or
    (numerically) singular matrix (condition number above :data:`MAX_CONDITION`)."""
    k = len(names)
    if k == 0:
        raise ParameterError(f"{what} is given, but no numerical column can move (there are none, or every one "
                             f"has weight np.inf): drop the matrix")
    M = _frame_columns(matrix, names, what)
    if M is None:
        M = _as_float_array(matrix, what)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ParameterError(f"{what} must be square, (k, k) over the k = {k} mutable numerical columns {names}; "
                             f"got shape {M.shape}")
    if M.shape != (k, k):
        raise ParameterError(f"{what} has shape {M.shape}, but there are {k} mutable numerical columns {names} "
                             f"(expected ({k}, {k}); immutable columns, weight np.inf, are left out of the matrix)")
    _check_finite_square(M, what)
    cond = np.linalg.cond(M)
    if not np.isfinite(cond) or cond > MAX_CONDITION:
        raise ParameterError(f"{what} must be invertible: its condition number is {cond:.3g} (> {MAX_CONDITION:.0e});"
                             f" a singular matrix would let some moves cost nothing")
    return M


def check_matrix_weights(gamma: np.ndarray, names: List[str], scale) -> None:
    """With a matrix: no ``scale``, and weights only ``1`` (moved by the matrix) or ``inf`` (immutable)."""
    if scale is not None:
        raise ParameterError(f"NormCost matrix and scale={scale!r} cannot be combined: fold the spreads into the "
                             f"matrix (matrix @ np.diag(1 / s)) or use NormCost.mahalanobis(Sigma)")
    bad = {name: float(g) for name, g in zip(names, gamma) if not (g == 1 or np.isinf(g))}
    if bad:
        raise ParameterError(f"NormCost matrix takes weights only to mark immutable numerical columns (np.inf; the "
                             f"others 1), got weights {bad}: fold per-feature weights into the matrix "
                             f"(matrix @ np.diag(weights))")


def map_of_arrays(matrix, gamma: np.ndarray, names: Optional[List[str]] = None) -> LinearMap:
    """The :class:`LinearMap` of ``matrix`` for arrays whose columns have weights ``gamma`` (``M`` acts on those of
    finite weight); ``names``: the columns (to order a DataFrame matrix), default the DataFrame's own column order."""
    gamma = np.asarray(gamma, dtype=float)
    mutable = np.flatnonzero(np.isfinite(gamma))
    if names is None:
        columns = getattr(matrix, "columns", None)
        sub = [str(c) for c in columns] if columns is not None and len(columns) == mutable.size else \
            [f"x{j}" for j in mutable]
    else:
        sub = [names[j] for j in mutable]
    return LinearMap.of(resolve_matrix(matrix, sub), mutable, gamma.size)


def mahalanobis_matrix(Sigma):
    """``M = L^{-1}`` with ``Sigma = L L'`` the Cholesky factorization, so that ``M'M = Sigma^{-1}`` and
    ``||M d||_2 = sqrt(d' Sigma^{-1} d)``: an array, or for a DataFrame ``Sigma`` (its index listing its columns in
    the same order) a DataFrame with the same index and columns.  Raises :class:`ParameterError` unless ``Sigma`` is
    a finite, symmetric, positive definite and well-conditioned matrix."""
    what = "NormCost.mahalanobis Sigma"
    names = None
    if hasattr(Sigma, "columns") and hasattr(Sigma, "index"):
        names = [str(c) for c in Sigma.columns]
        if [str(i) for i in Sigma.index] != names:
            raise ParameterError(f"{what} is a DataFrame whose index must list its columns {names} in the same order")
        Sigma = Sigma.to_numpy()
    S = _check_finite_square(_as_float_array(Sigma, what), what)
    scale = float(np.max(np.abs(S))) if S.size else 0.0
    if S.size == 0 or scale == 0:
        raise ParameterError(f"{what} must be a non-empty symmetric positive definite matrix")
    if np.max(np.abs(S - S.T)) > SYMMETRY_RTOL * scale:
        raise ParameterError(f"{what} must be symmetric (max |Sigma - Sigma'| = {np.max(np.abs(S - S.T)):.3g})")
    S = 0.5 * (S + S.T)
    eig = np.linalg.eigvalsh(S)
    if eig[0] <= 0 or eig[-1] / eig[0] > MAX_CONDITION:
        raise ParameterError(f"{what} must be positive definite and well conditioned (its eigenvalues range from "
                             f"{eig[0]:.3g} to {eig[-1]:.3g}; condition number at most {MAX_CONDITION:.0e})")
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        raise ParameterError(f"{what} must be positive definite (its Cholesky factorization failed)") from None
    M = np.linalg.solve(L, np.eye(S.shape[0]))
    if names is None:
        return M
    import pandas as pd
    return pd.DataFrame(M, index=names, columns=names)


__all__ = ["LinearMap", "resolve_matrix", "mahalanobis_matrix", "check_matrix_weights", "map_of_arrays", "MAX_CONDITION"]
