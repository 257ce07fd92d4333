"""The sparse conic program that every compile path produces and every back-end consumes.

Standard form (the one Clarabel uses, so the default back-end needs no translation):

```text
minimize    c^T x + c0
subject to  b - A x = s,   s in K = K_1 x K_2 x ... x K_r
```

where each ``K_i`` is one of

* ``zero``   : {0}^d                                    (equalities)
* ``nonneg`` : R_+^d                                    (inequalities)
* ``soc``    : {(t, u) in R x R^{d-1} : ||u||_2 <= t}   (second-order cone)
* ``exp``    : closure{(x, y, z) : y exp(x / y) <= z, y > 0}   (3 rows per cone)
* ``pow``    : {(x, y, z) : x^a y^(1-a) >= |z|, x, y >= 0}     (3 rows per cone, parameter a)

A block of ``count`` cones of the same kind and size is stored as one :class:`ConeBlock`
(e.g. 10,000 exponential cones are one block of 30,000 rows), so the cone list stays short
however many samples there are.  ``variables`` names the column ranges of ``x`` so results can be
read back by name (``beta``, ``lambda``, ``s`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np
import scipy.sparse as sp

CONE_KINDS = ("zero", "nonneg", "soc", "exp", "pow")


@dataclass(frozen=True)
class ConeBlock:
    """``count`` consecutive cones of one kind, each of dimension ``dim``.

    ``param`` is the power-cone exponent ``a`` (``pow`` only).
    For ``zero`` and ``nonneg`` the block is one cone of dimension ``dim`` with ``count == 1``.
    """

    kind: str
    dim: int
    count: int = 1
    param: float | None = None

    @property
    def rows(self) -> int:
        return self.dim * self.count

    def __post_init__(self) -> None:
        if self.kind not in CONE_KINDS:
            raise ValueError(f"unknown cone kind {self.kind!r}; expected one of {CONE_KINDS}")
        if self.kind in ("exp", "pow") and self.dim != 3:
            raise ValueError(f"{self.kind} cones have dimension 3, got {self.dim}")
        if self.kind == "pow" and not (self.param is not None and 0.0 < self.param < 1.0):
            raise ValueError(f"power cone exponent must lie in (0, 1), got {self.param}")


@dataclass
class ConicProgram:
    """``min c^T x + c0  s.t.  b - A x in K`` with named variable blocks.

    Attributes
    ----------
    c : numpy.ndarray of shape (n,)
        Objective vector.
    A : scipy.sparse.csc_matrix of shape (m, n)
        Sparse CSC constraint matrix.
    b : numpy.ndarray of shape (m,)
        Right-hand side.
    cones : list of ConeBlock
        Cone blocks in row order; their rows sum to m.
    variables : dict of str to slice
        Name -> slice of x.
    c0 : float
        Constant objective offset.
    """

    c: np.ndarray
    A: sp.csc_matrix
    b: np.ndarray
    cones: List[ConeBlock]
    variables: Dict[str, slice] = field(default_factory=dict)
    c0: float = 0.0

    @property
    def n_variables(self) -> int:
        return int(self.A.shape[1])

    @property
    def n_constraints(self) -> int:
        return int(self.A.shape[0])

    def cone_counts(self) -> Dict[str, int]:
        """Number of cones of each kind (rows for zero/nonneg)."""
        counts: Dict[str, int] = {}
        for block in self.cones:
            n = block.dim if block.kind in ("zero", "nonneg") else block.count
            counts[block.kind] = counts.get(block.kind, 0) + n
        return counts

    def row_ranges(self) -> List[Tuple[ConeBlock, int, int]]:
        """(block, first row, end row) for every cone block."""
        out, start = [], 0
        for block in self.cones:
            out.append((block, start, start + block.rows))
            start += block.rows
        return out

    def sorted_by_cone(self) -> Tuple["ConicProgram", np.ndarray]:
        """The same program with its cone blocks grouped by kind in cvxpy's order (zero, nonneg, soc,
        exp, pow; blocks of one kind keep their order), and the row permutation ``perm``: row ``i`` of the
        new program is row ``perm[i]`` of this one, so a dual vector ``y_new`` of the new program is
        ``y[perm] = y_new`` here.  Same variables, objective and feasible set."""
        rank = {kind: i for i, kind in enumerate(("zero", "nonneg", "soc", "exp", "pow"))}
        ranges = self.row_ranges()
        order = sorted(range(len(ranges)), key=lambda i: rank[ranges[i][0].kind])  # stable within a kind
        perm = np.concatenate([np.arange(ranges[i][1], ranges[i][2]) for i in order]) if ranges \
            else np.zeros(0, dtype=int)
        program = ConicProgram(c=self.c, A=sp.csc_matrix(self.A[perm]), b=self.b[perm],
                               cones=[ranges[i][0] for i in order], variables=dict(self.variables), c0=self.c0)
        return program, perm

    def check(self) -> None:
        """Validate shapes and finiteness; raises ValueError with what is wrong."""
        m, n = self.A.shape
        if self.c.shape != (n,):
            raise ValueError(f"c has shape {self.c.shape}, expected ({n},)")
        if self.b.shape != (m,):
            raise ValueError(f"b has shape {self.b.shape}, expected ({m},)")
        rows = sum(block.rows for block in self.cones)
        if rows != m:
            raise ValueError(f"cones cover {rows} rows but A has {m}")
        if not (np.all(np.isfinite(self.c)) and np.all(np.isfinite(self.b))
                and np.all(np.isfinite(self.A.data))):
            raise ValueError("the conic program has non-finite data (NaN or inf)")

    def value(self, name: str, x: np.ndarray) -> np.ndarray:
        """The entries of the solution vector ``x`` that belong to variable ``name``."""
        return np.asarray(x)[self.variables[name]]

    def residual_by_cone(self, x: np.ndarray) -> Dict[str, float]:
        """Largest violation of each cone kind at ``x`` (0 when x is feasible); a solver-free check."""
        s = self.b - self.A @ x
        worst: Dict[str, float] = {}
        for block, lo, hi in self.row_ranges():
            v = cone_violation(block, s[lo:hi])
            worst[block.kind] = max(worst.get(block.kind, 0.0), v)
        return worst

    def summary(self) -> str:
        counts = ", ".join(f"{k}: {v}" for k, v in self.cone_counts().items())
        return (f"ConicProgram({self.n_variables} variables, {self.n_constraints} rows, "
                f"{self.A.nnz} nonzeros; cones {counts})")

    def __repr__(self) -> str:
        return self.summary()


def cone_violation(block: ConeBlock, s: np.ndarray) -> float:
    """Distance-like violation of ``s`` (the rows of one block) from the block's cone."""
    if s.size == 0:
        return 0.0
    if block.kind == "zero":
        return float(np.max(np.abs(s)))
    if block.kind == "nonneg":
        return float(max(0.0, -np.min(s)))
    cones = s.reshape(block.count, block.dim)
    if block.kind == "soc":
        return float(max(0.0, np.max(np.linalg.norm(cones[:, 1:], axis=1) - cones[:, 0])))
    if block.kind == "exp":
        x, y, z = cones[:, 0], cones[:, 1], cones[:, 2]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            lhs = np.where(y > 0, y * np.exp(np.minimum(x / np.where(y > 0, y, 1.0), 700.0)),
                           np.where(x <= 0, 0.0, np.inf))
        viol = np.maximum(lhs - z, 0.0)
        viol = np.maximum(viol, np.maximum(-y, 0.0))
        return float(np.max(viol))
    a = block.param
    x, y, z = cones[:, 0], cones[:, 1], cones[:, 2]
    lhs = np.power(np.maximum(x, 0.0), a) * np.power(np.maximum(y, 0.0), 1 - a)
    viol = np.maximum(np.abs(z) - lhs, 0.0)
    viol = np.maximum(viol, np.maximum(-np.minimum(x, y), 0.0))
    return float(np.max(viol))
