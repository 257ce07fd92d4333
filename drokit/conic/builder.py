"""Vectorized assembly of :class:`~drokit.conic.program.ConicProgram` objects.

An :class:`Affine` holds ``K`` affine functions ``M x + k`` of the program's variables as one sparse
matrix, so a constraint family over all samples and configurations is built with a handful of
sparse-matrix operations and no Python loop over rows.  :class:`ProgramBuilder` allocates named
variables, collects cone blocks and returns the final program.

Example (one exponential cone per sample, all at once):

```python
pb = ProgramBuilder()
t = pb.var("t", N)
pb.add_exp(-t, pb.constant(np.ones(N)), v)     # exp(-t_i) <= v_i  for every i
```
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp

from .program import ConeBlock, ConicProgram

ArrayLike = Union[np.ndarray, float, int]


def _pad(M: sp.csr_matrix, n: int) -> sp.csr_matrix:
    if M.shape[1] == n:
        return M
    return sp.csr_matrix((M.data, M.indices, M.indptr), shape=(M.shape[0], n))


class Affine:
    """``K`` affine functions of the variable vector: ``M @ x + k``.

    ``M`` is a CSR matrix whose column count may be smaller than the final number of variables
    (variables allocated later are implicitly zero columns); operations pad as needed.
    """

    __slots__ = ("M", "k")
    __array_priority__ = 100  # make ``ndarray @ Affine`` and ``ndarray * Affine`` defer to us

    def __init__(self, M: sp.spmatrix, k: ArrayLike):
        self.M = sp.csr_matrix(M)
        k = np.asarray(k, dtype=float)
        if k.ndim == 0:
            k = np.full(self.M.shape[0], float(k))
        if k.shape != (self.M.shape[0],):
            raise ValueError(f"constant of shape {k.shape} does not match {self.M.shape[0]} rows")
        self.k = k

    # ------------------------------------------------------------------ basics
    @property
    def size(self) -> int:
        return self.M.shape[0]

    def __len__(self) -> int:
        return self.size

    def _coerce(self, other) -> "Affine":
        if isinstance(other, Affine):
            return other
        other = np.asarray(other, dtype=float)
        if other.ndim == 0:
            other = np.full(self.size, float(other))
        return Affine(sp.csr_matrix((other.shape[0], self.M.shape[1])), other)

    def __add__(self, other) -> "Affine":
        other = self._coerce(other)
        if other.size != self.size:
            raise ValueError(f"cannot add affine expressions of sizes {self.size} and {other.size}")
        n = max(self.M.shape[1], other.M.shape[1])
        return Affine(_pad(self.M, n) + _pad(other.M, n), self.k + other.k)

    __radd__ = __add__

    def __neg__(self) -> "Affine":
        return Affine(-self.M, -self.k)

    def __sub__(self, other) -> "Affine":
        return self + (-self._coerce(other))

    def __rsub__(self, other) -> "Affine":
        return self._coerce(other) - self

    def __mul__(self, scale) -> "Affine":
        """Row-wise scaling by a scalar or a length-K vector."""
        scale = np.asarray(scale, dtype=float)
        if scale.ndim == 0:
            return Affine(self.M * float(scale), self.k * float(scale))
        if scale.shape != (self.size,):
            raise ValueError(f"scale of shape {scale.shape} does not match {self.size} rows")
        return Affine(sp.diags(scale) @ self.M, self.k * scale)

    __rmul__ = __mul__

    def premultiply(self, D) -> "Affine":
        """``D @ expr`` for a dense or sparse matrix ``D`` with ``K`` columns (``D @ expr`` works for
        dense numpy matrices; use this method with scipy sparse matrices, whose ``@`` does not defer)."""
        if sp.issparse(D):
            D = sp.csr_matrix(D)
        else:
            D = np.asarray(D, dtype=float)
            if D.ndim != 2:
                raise ValueError("left operand of @ must be a 2-D matrix")
            D = sp.csr_matrix(D)
        if D.shape[1] != self.size:
            raise ValueError(f"matrix with {D.shape[1]} columns applied to {self.size} rows")
        return Affine(D @ self.M, D @ self.k)

    __rmatmul__ = premultiply

    def __getitem__(self, rows) -> "Affine":
        idx = np.arange(self.size)[rows]
        idx = np.atleast_1d(idx)
        return Affine(self.M[idx], self.k[idx])

    def repeat(self, count: int) -> "Affine":
        """A size-1 expression repeated ``count`` times."""
        if self.size != 1:
            raise ValueError("repeat() applies to a single affine function")
        return self[np.zeros(count, dtype=int)]

    def sum(self) -> "Affine":
        return Affine(sp.csr_matrix(self.M.sum(axis=0)), np.array([self.k.sum()]))

    @staticmethod
    def vstack(parts: Sequence["Affine"]) -> "Affine":
        parts = [p for p in parts if p.size > 0] or list(parts[:1])
        n = max(p.M.shape[1] for p in parts)
        return Affine(sp.vstack([_pad(p.M, n) for p in parts], format="csr"),
                      np.concatenate([p.k for p in parts]))

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return _pad(self.M, x.shape[0]) @ x + self.k


def interleave(parts: Sequence[Affine]) -> Affine:
    """Stack ``d`` expressions of ``count`` rows each cone by cone: rows (p0[0], p1[0], ..., p0[1], ...)."""
    count = parts[0].size
    for p in parts:
        if p.size != count:
            raise ValueError("all components of a cone block must have the same number of rows")
    d = len(parts)
    stacked = Affine.vstack(list(parts))
    perm = (np.arange(count)[:, None] + count * np.arange(d)[None, :]).ravel()
    return stacked[perm]


class ProgramBuilder:
    """Collects variables, cone constraints and a linear objective; :meth:`build` returns the program."""

    def __init__(self) -> None:
        self.n = 0
        self.variables: Dict[str, slice] = {}
        #: per-build scratch space for components, e.g. an outer-approximated loss recording the rows of its
        #: epigraph calls (:meth:`drokit.losses.symbolic.SymbolicLoss.refine_rows`)
        self.annotations: Dict[object, object] = {}
        self._rows: List[Affine] = []
        self._cones: List[ConeBlock] = []
        self._objective: Affine | None = None

    # -------------------------------------------------------------- variables
    def var(self, name: str, size: int) -> Affine:
        """Allocate ``size`` new scalar variables; returns them as an identity affine expression."""
        if name in self.variables:
            raise ValueError(f"variable {name!r} already exists")
        start = self.n
        self.n += int(size)
        self.variables[name] = slice(start, self.n)
        M = sp.csr_matrix((np.ones(size), (np.arange(size), np.arange(start, self.n))),
                          shape=(size, self.n))
        return Affine(M, np.zeros(size))

    def get(self, name: str) -> Affine:
        """The variables of an existing block ``name`` as an identity affine expression."""
        if name not in self.variables:
            raise KeyError(f"no variable {name!r}")
        sl = self.variables[name]
        size = sl.stop - sl.start
        M = sp.csr_matrix((np.ones(size), (np.arange(size), np.arange(sl.start, sl.stop))), shape=(size, self.n))
        return Affine(M, np.zeros(size))

    def aux(self, prefix: str, size: int) -> Affine:
        """An auxiliary variable block with a fresh, unique name ``prefix#k``."""
        k = 0
        while f"{prefix}#{k}" in self.variables:
            k += 1
        return self.var(f"{prefix}#{k}", size)

    def constant(self, values: ArrayLike, size: int | None = None) -> Affine:
        values = np.asarray(values, dtype=float)
        if values.ndim == 0:
            values = np.full(1 if size is None else size, float(values))
        return Affine(sp.csr_matrix((values.shape[0], self.n)), values)

    # ------------------------------------------------------------ constraints
    def _append(self, expr: Affine, block: ConeBlock) -> None:
        if expr.size != block.rows:
            raise AssertionError("cone block and expression sizes differ")
        if expr.size:
            self._rows.append(expr)
            self._cones.append(block)

    def add_zero(self, expr: Affine) -> None:
        """``expr == 0`` row-wise."""
        self._append(expr, ConeBlock("zero", expr.size))

    def add_nonneg(self, expr: Affine) -> None:
        """``expr >= 0`` row-wise."""
        self._append(expr, ConeBlock("nonneg", expr.size))

    def add_leq(self, lhs, rhs) -> None:
        """``lhs <= rhs`` row-wise (either side may be a constant)."""
        if isinstance(lhs, Affine):
            self.add_nonneg(lhs._coerce(rhs) - lhs)
        else:
            self.add_nonneg(rhs - rhs._coerce(lhs))

    def add_soc(self, t: Affine, u: Sequence[Affine]) -> None:
        """``||(u_1[i], ..., u_d[i])||_2 <= t[i]`` for every row i (``count = t.size`` cones)."""
        self._append(interleave([t, *u]), ConeBlock("soc", 1 + len(u), t.size))

    def add_norm2_leq(self, u: Affine, t: Affine) -> None:
        """One second-order cone ``||u||_2 <= t`` over all rows of ``u`` (``t`` a single function)."""
        self._append(Affine.vstack([t, u]), ConeBlock("soc", 1 + u.size, 1))

    def add_exp(self, x: Affine, y: Affine, z: Affine) -> None:
        """``y[i] exp(x[i] / y[i]) <= z[i]`` for every row i."""
        self._append(interleave([x, y, z]), ConeBlock("exp", 3, x.size))

    def add_pow(self, x: Affine, y: Affine, z: Affine, a: float) -> None:
        """``x[i]^a y[i]^(1-a) >= |z[i]|`` for every row i."""
        self._append(interleave([x, y, z]), ConeBlock("pow", 3, x.size, float(a)))

    def minimize(self, objective: Affine) -> None:
        if objective.size != 1:
            raise ValueError("the objective must be a single affine function")
        self._objective = objective

    # ------------------------------------------------------------------ build
    def build(self) -> ConicProgram:
        n = self.n
        if self._objective is None:
            raise ValueError("no objective set")
        c = np.asarray(_pad(self._objective.M, n).toarray()).ravel()
        if self._rows:
            stacked = sp.vstack([_pad(r.M, n) for r in self._rows], format="csc")
            k = np.concatenate([r.k for r in self._rows])
        else:
            stacked, k = sp.csc_matrix((0, n)), np.zeros(0)
        # rows are s = M x + k in K  <=>  b - A x = s with A = -M, b = k
        A = (-stacked).tocsc()
        A.sum_duplicates()
        A.eliminate_zeros()
        cones = _merge_adjacent(self._cones)
        program = ConicProgram(c=c, A=A, b=k.copy(), cones=cones,
                               variables=dict(self.variables), c0=float(self._objective.k[0]))
        program.check()
        return program


def _merge_adjacent(cones: List[ConeBlock]) -> List[ConeBlock]:
    """Merge neighbouring blocks of the same kind (zero/nonneg rows, equal-size cones)."""
    merged: List[ConeBlock] = []
    for block in cones:
        if merged:
            last = merged[-1]
            if last.kind == block.kind and block.kind in ("zero", "nonneg"):
                merged[-1] = ConeBlock(block.kind, last.dim + block.dim)
                continue
            if (last.kind == block.kind and last.dim == block.dim and last.param == block.param
                    and block.kind in ("soc", "exp", "pow")):
                merged[-1] = ConeBlock(block.kind, block.dim, last.count + block.count, block.param)
                continue
        merged.append(block)
    return merged


def linear_score(coef: Affine, intercept: Optional[Affine], design: sp.spmatrix) -> Affine:
    """``f = design @ coef + beta_0`` for every row of ``design``."""
    f = coef.premultiply(design)
    return f + intercept.repeat(design.shape[0]) if intercept is not None else f
