"""The protocol of the numerical part of the ground metric: a norm ``N`` on the weighted move of the numerical features.

The transport cost of a numerical move is

    c(x, x') = N(Gamma (x - x')),        Gamma = diag(gamma_j),

with ``gamma_j`` the per-feature weights (``np.inf``: feature ``j`` is immutable, a move of it costs ``inf``; ``0``: it
moves for free) and ``N`` a norm on the weighted move ``d = Gamma (x - x')``.  :class:`~drokit.NormCost` is
``N = ||.||_p`` (and, with a matrix, ``||M .||_p``, fitted by a change of coordinates); :class:`~drokit.GroupNormCost`
is ``N(d) = sum_g w_g ||d_g||_2``.  Everything drokit computes about numerical moves goes through the few members of
:class:`NumericalNorm` (belbasi2023 Lemma 1 read for any norm): the supremum of a Lipschitz loss over numerical moves
costs the *dual norm* of the weighted coefficients,

    sup_x' [ L(beta'x' + ...) - lam N(Gamma (x' - x)) ]  finite  <=>  lip(L) N_*(Gamma^{-1} beta_x) <= lam,

with ``N_*(v) = max_{N(d) <= 1} v'd``; the certificates price the column sums of a dual point by ``N`` itself (the
dual of the dual), the worst-case distribution moves mass along a maximizer ``d`` of ``v'd`` over ``N(d) <= 1``, and
the transport distances evaluate ``N`` on pairs of rows.

Columns.  Only the *priced* columns (``0 < gamma_j < inf``) enter ``N``: an immutable column never moves and a free
one has ``d_j = gamma_j (x_j - x'_j) = 0``.  Every protocol member therefore gets ``columns``, the positions (among
the numerical columns, in schema order) of the coordinates it is given, and reads ``N`` *restricted* to them, the
other coordinates held at 0.  For an absolute norm (``N(d)`` depends on ``|d_j|`` only: l_p norms, group norms) the
restriction's dual is ``N_*`` with the same coordinates dropped; for another norm it is ``min_u N_*(v, u)`` over the
dropped ones, which the subclass must return.

What a user norm must satisfy: ``N`` restricted to any set of columns is a norm (positive on every nonzero move,
finite, absolutely homogeneous, the triangle inequality); :meth:`dual_value` is its exact dual norm; the conic forms are
exact (the certificates rely on them); :meth:`maximizer` returns a point of the unit ball that attains the dual norm.
:meth:`NumericalNorm.check` tests these on a few vectors when a metric is resolved and raises a
:class:`~drokit.ParameterError` naming the member that fails.

drokit's own Newton-type solvers (the closed-form barrier solver, the cutting plane's phase 1 and barrier master, the
slope split and slope cuts, the smoothed certificate point) have closed-form barriers for the dual norms ``l_q`` only:
they read :attr:`NumericalNorm.lp_exponent` and step aside for a norm that is not an ``l_p`` norm (``None``, the
default), whose programs go to the conic solver (Clarabel) and are certified as usual.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from ..params import ParamsMixin
from .weights import Weights, resolve_weights

#: rows of ``A`` per block in :meth:`NumericalNorm.pairwise` (a block holds ``rows x len(B) x k`` differences)
PAIRWISE_BLOCK_ENTRIES = 4_000_000

#: relative tolerance of :meth:`NumericalNorm.check`
CHECK_RTOL = 1e-6


def dual_exponent(p: float) -> float:
    """``q`` with ``1/p + 1/q = 1`` (``p = 1``: ``inf``; ``p = inf``: 1)."""
    if p == 1:
        return np.inf
    if np.isinf(p):
        return 1.0
    return p / (p - 1.0)


def priced_columns(gamma: np.ndarray) -> np.ndarray:
    """Positions of the weights ``0 < gamma_j < inf``: the columns whose moves the norm prices."""
    gamma = np.asarray(gamma, dtype=float)
    return np.flatnonzero(np.isfinite(gamma) & (gamma > 0))


class NumericalNorm(ParamsMixin):
    """Protocol of the numerical component of the ground metric: ``c(x, x') = N(Gamma (x - x'))`` (module docstring).

    A subclass stores its ``__init__`` arguments unchanged (scikit-learn's convention), among them ``weights`` (the
    per-feature ``gamma_j``: ``None`` = all 1, a scalar, one number per numerical column or ``{column: gamma}``;
    ``np.inf`` = immutable, ``0`` = free), and implements five members on vectors ``d`` (or ``v``) of the *weighted*
    move over ``columns`` (numerical positions, schema order; the priced columns, module docstring):

    * :meth:`value` -- ``N(d)`` row-wise;
    * :meth:`dual_value` -- ``N_*(v) = max_{N(d) <= 1} v'd`` row-wise;
    * :meth:`add_value_leq` -- ``N(d) <= t`` as cones on a :class:`~drokit.conic.ProgramBuilder`;
    * :meth:`add_dual_value_leq` -- ``N_*(v) <= t`` as cones;
    * :meth:`maximizer` -- ``d`` with ``N(d) <= 1`` and ``v'd = N_*(v)``.

    Optional: :attr:`lp_exponent` (``p`` when ``N`` is the ``l_p`` norm: drokit's own barrier solvers and closed forms
    apply; default ``None``), :meth:`bind` (a copy that knows the numerical column names, for a norm declared by
    name), :meth:`pairwise` (``N`` between every pair of rows, default by blocks of :meth:`value`), :meth:`resolve`
    (validation of the declaration against the columns).  Every method of drokit uses these members only; the
    weighted helpers below (:meth:`distance`, :meth:`dual_norm`, :meth:`add_dual_norm_leq`, :meth:`weighted_value`)
    apply the weights and the immutable / free semantics around them.
    """

    #: a norm measured in raw units (the ``scale`` of :class:`~drokit.NormCost` is the only fitted spread)
    scale = None
    #: set on the fitted copy of a scaled :class:`~drokit.NormCost`
    fitted_scale = None
    #: the matrix of :class:`~drokit.NormCost` (a change of coordinates); other norms have none
    matrix = None
    weights: Weights = None

    # ----------------------------------------------------------------------------------------- protocol
    def value(self, D: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``N(d)`` of every row of ``D`` (shape ``(..., k)``, ``k = len(columns)``), shape ``(...)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement value(D, columns): the norm N(d) row-wise")

    def dual_value(self, V: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``N_*(v) = max_{N(d) <= 1} v'd`` of every row of ``V`` (shape ``(..., k)``), shape ``(...)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement dual_value(V, columns): the dual norm "
                                  f"N_*(v) row-wise")

    def add_value_leq(self, pb: ProgramBuilder, d: Affine, t: Affine, columns: np.ndarray) -> None:
        """Add ``N(d) <= t`` (``d``: ``k`` affine functions, ``t`` one) to ``pb``, exactly, as cones."""
        raise NotImplementedError(f"{type(self).__name__} must implement add_value_leq(pb, d, t, columns): N(d) <= t "
                                  f"as cones")

    def add_dual_value_leq(self, pb: ProgramBuilder, v: Affine, t: Affine, columns: np.ndarray) -> None:
        """Add ``N_*(v) <= t`` (``v``: ``k`` affine functions, ``t`` one) to ``pb``, exactly, as cones."""
        raise NotImplementedError(f"{type(self).__name__} must implement add_dual_value_leq(pb, v, t, columns): "
                                  f"N_*(v) <= t as cones")

    def maximizer(self, v: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """A ``d`` (shape ``(k,)``) with ``N(d) <= 1`` and ``v'd = N_*(v)`` for one vector ``v`` (0 for ``v = 0``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement maximizer(v, columns): a point of the unit "
                                  f"ball attaining the dual norm")

    @property
    def lp_exponent(self) -> Optional[float]:
        """``p`` when ``N`` restricted to any columns is exactly the ``l_p`` norm (drokit's ``l_p``-specific paths then
        apply: own barrier solvers, closed-form splits); ``None`` for any other norm."""
        return None

    @property
    def lp_dual_exponent(self) -> Optional[float]:
        """``q`` with ``1/p + 1/q = 1`` for an ``l_p`` norm (:attr:`lp_exponent`), else ``None``."""
        p = self.lp_exponent
        return None if p is None else dual_exponent(p)

    def bind(self, names: List[str]) -> "NumericalNorm":
        """This norm bound to the numerical column names ``names`` (schema order), so that ``columns`` positions
        mean columns; ``self`` by default (a norm that does not depend on the names)."""
        return self

    def pairwise(self, A: np.ndarray, B: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``N(a_i - b_j)`` for every row of ``A`` (``(a, k)``) and ``B`` (``(b, k)``): an ``(a, b)`` array."""
        A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
        out = np.empty((A.shape[0], B.shape[0]))
        step = max(1, PAIRWISE_BLOCK_ENTRIES // max(1, B.shape[0] * max(1, A.shape[1])))
        for start in range(0, A.shape[0], step):
            block = A[start:start + step]
            out[start:start + step] = self.value(block[:, None, :] - B[None, :, :], columns)
        return out

    def resolve(self, names: List[str]) -> np.ndarray:
        """The weights ``gamma_j`` in the order of the numerical columns ``names`` (the declaration validated against
        them); a :class:`~drokit.ParameterError` naming what is wrong otherwise."""
        return resolve_weights(self.weights, names, "numerical")

    # ------------------------------------------------------------------------------------------ checks
    def check(self, names: List[str], gamma: np.ndarray) -> None:
        """Test the protocol members on a few vectors over the priced columns of ``gamma`` (module docstring: a norm,
        its exact dual, an attaining maximizer); a :class:`~drokit.ParameterError` naming the member that fails."""
        cols = priced_columns(gamma)
        k = cols.size
        if k == 0:
            return
        name = type(self).__name__
        norm = self.bind(list(names))
        E = np.eye(k)
        for member, fn in (("value", norm.value), ("dual_value", norm.dual_value)):
            try:
                out = np.asarray(fn(np.vstack([E, -E, np.zeros((1, k))]), cols), dtype=float)
            except ParameterError:
                raise
            except Exception as exc:
                raise ParameterError(f"{name}.{member}(D, columns) failed on unit vectors over the columns "
                                     f"{[names[j] for j in cols]}: {type(exc).__name__}: {exc}") from exc
            if out.shape != (2 * k + 1,):
                raise ParameterError(f"{name}.{member}(D, columns) must return one number per row of D: "
                                     f"{2 * k + 1} rows gave shape {out.shape}")
            unit, zero = out[:2 * k], out[-1]
            if not (np.all(np.isfinite(unit)) and np.all(unit > 0)) or zero != 0:
                bad = [names[cols[j % k]] for j in np.flatnonzero(~(np.isfinite(unit) & (unit > 0)))]
                raise ParameterError(f"{name}.{member} is not a norm on the priced numerical columns: it must be 0 at "
                                     f"0 (got {zero!r}) and positive and finite on every unit move (not on {bad}); "
                                     f"make a column immutable with weight np.inf or free with weight 0 instead")
            if not np.allclose(unit[:k], unit[k:], rtol=CHECK_RTOL, atol=0.0):
                raise ParameterError(f"{name}.{member} is not symmetric (N(-d) = N(d)) on unit moves")
        rng = np.random.default_rng(0)
        V = rng.standard_normal((4, k))
        D = rng.standard_normal((4, k))
        duals = np.asarray(norm.dual_value(V, cols), dtype=float)
        values = np.asarray(norm.value(D, cols), dtype=float)
        for v, dual in zip(V, duals):
            d = np.asarray(norm.maximizer(v, cols), dtype=float)
            if d.shape != (k,):
                raise ParameterError(f"{name}.maximizer(v, columns) must return a vector of shape ({k},), "
                                     f"got {d.shape}")
            size = float(np.asarray(norm.value(d[None, :], cols), dtype=float)[0])
            if not size <= 1.0 + CHECK_RTOL:
                raise ParameterError(f"{name}.maximizer(v, columns) must lie in the unit ball N(d) <= 1, got "
                                     f"N(d) = {size!r}")
            if not abs(float(v @ d) - dual) <= CHECK_RTOL * max(1.0, abs(dual)):
                raise ParameterError(f"{name}: the maximizer's v'd = {float(v @ d)!r} differs from dual_value(v) = "
                                     f"{dual!r}: dual_value must be the exact dual norm max_{{N(d) <= 1}} v'd, "
                                     f"attained by maximizer")
        # Hoelder: v'd <= N(d) N_*(v) for every pair (a dual_value below the true dual norm fails it)
        if np.any(np.abs(V @ D.T) > np.outer(duals, values) * (1.0 + CHECK_RTOL) + 1e-12):
            raise ParameterError(f"{name}: |v'd| > N(d) N_*(v) for some vectors: dual_value is not the dual norm of "
                                 f"value (or value is not a norm)")

    # --------------------------------------------------------------------------------- weighted helpers
    def weighted_value(self, D: np.ndarray, gamma: np.ndarray, columns: Optional[np.ndarray] = None) -> np.ndarray:
        """``N(Gamma d)`` of every row of ``D`` (``(..., len(gamma))``) over its priced columns (weights ``0 < gamma_j <
        inf``; the others do not enter); ``columns``: the numerical positions of ``D``'s columns (default all)."""
        D = np.asarray(D, dtype=float)
        gamma = np.asarray(gamma, dtype=float)
        cols = np.arange(gamma.size) if columns is None else np.asarray(columns, dtype=int)
        keep = priced_columns(gamma)
        if keep.size == 0:
            return np.zeros(D.shape[:-1]) if D.ndim > 1 else 0.0
        out = self.value(D[..., keep] * gamma[keep], cols[keep])
        return float(out) if D.ndim == 1 else np.asarray(out, dtype=float)

    def distance(self, X1: np.ndarray, X2: np.ndarray, gamma: Optional[np.ndarray] = None,
                 names: Optional[List[str]] = None) -> np.ndarray:
        """Row-wise cost ``N(Gamma (x1 - x2))`` (``gamma`` defaults to ones; ``names``: the numerical columns, for a norm
        declared by name); ``inf`` where an immutable feature differs."""
        diff = np.asarray(X1, float) - np.asarray(X2, float)
        gamma = np.ones(diff.shape[-1]) if gamma is None else np.asarray(gamma, dtype=float)
        norm = self if names is None else self.bind(list(names))
        keep = priced_columns(gamma)
        if keep.size:
            out = np.asarray(norm.value(diff[..., keep] * gamma[keep], keep), dtype=float)
        else:
            out = np.zeros(diff.shape[:-1])
        moved = diff != 0
        return np.where(np.any(moved & np.isinf(gamma), axis=-1), np.inf, out)

    def dual_norm(self, v: np.ndarray, gamma: np.ndarray, names: Optional[List[str]] = None,
                  columns: Optional[np.ndarray] = None) -> float:
        """``N_*(Gamma^{-1} v)``: coordinates with ``gamma = inf`` are free (unconstrained), ``gamma = 0`` and ``v != 0``
        gives ``inf``; ``columns``: the numerical positions of ``v``'s entries (default all)."""
        v = np.asarray(v, dtype=float)
        gamma = np.asarray(gamma, dtype=float)
        cols = np.arange(v.size) if columns is None else np.asarray(columns, dtype=int)
        norm = self if names is None else self.bind(list(names))
        if np.any((gamma == 0) & (np.abs(v) > 0)):
            return np.inf
        keep = priced_columns(gamma)
        if keep.size == 0:
            return 0.0
        return float(norm.dual_value(v[keep] / gamma[keep], cols[keep]))

    def add_dual_norm_leq(self, pb: ProgramBuilder, v: Affine, t: Affine, gamma: np.ndarray,
                          columns: Optional[np.ndarray] = None) -> None:
        """Add ``N_*(Gamma^{-1} v) <= t`` (``t`` a single affine function): coordinates with ``gamma_j = inf`` are
        unconstrained, those with ``gamma_j = 0`` fixed to ``v_j = 0``; ``columns``: the numerical positions of ``v``'s
        entries (default all)."""
        gamma = np.asarray(gamma, dtype=float)
        cols = np.arange(v.size) if columns is None else np.asarray(columns, dtype=int)
        zero = np.flatnonzero(gamma == 0)
        if zero.size:
            pb.add_zero(v[zero])
        keep = priced_columns(gamma)
        if keep.size == 0:
            return
        self.add_dual_value_leq(pb, v[keep] * (1.0 / gamma[keep]), t, cols[keep])

    def __repr__(self) -> str:
        import inspect
        names = [n for n in inspect.signature(type(self).__init__).parameters if n != "self"]
        params = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__name__}({params})"


def require_lp_norm(norm, where: str) -> float:
    """The exponent ``p`` of ``norm`` when it is an ``l_p`` norm (:attr:`NumericalNorm.lp_exponent`); a
    :class:`~drokit.ParameterError` naming ``where`` (a method or function built on the weighted ``l_p`` norm)
    otherwise."""
    p = getattr(norm, "lp_exponent", None)
    if p is None:
        raise ParameterError(f"{where} is built on the weighted l_p norm ||Gamma (x - x')||_p, but the metric's "
                             f"numerical cost is {norm!r}; use dk.NormCost(p, weights=...) there")
    return float(p)


__all__ = ["NumericalNorm", "dual_exponent", "priced_columns", "require_lp_norm"]
