"""The encoded design of configuration rows: ``a_k = [1, x_{n_k}, dummies(z_k)]`` per row, dense or CSR, written
directly from the categorical codes (:class:`CodeLayout`: where each feature's dummy columns sit), and the Gram
``X' X`` of a sparse design scaled by row, block by block.  Shared by drokit's Newton-type masters
(:mod:`drokit.reformulations.row_terms`) and the Lagrangian certificate (:mod:`drokit.certificates`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from .rows import ConfigurationRows

#: rows of a sparse term design densified at a time for a Gram product (64 MB at 61 columns)
GRAM_CHUNK = 131_072


@dataclass(frozen=True)
class CodeLayout:
    """Where the dummy columns of categorical codes sit: ``levels`` per feature (codes ``0..levels - 1``, 0 the
    reference level without a column), each feature's block start inside the dummy columns, and the encoded
    width (numerical columns first).  :meth:`of` gives the schema's; :mod:`.level_max` extends it."""

    levels: np.ndarray
    dummy_offsets: np.ndarray
    n_encoded: int

    def code_base(self, lead: int) -> np.ndarray:
        """Per feature, the column of its code ``c > 0`` minus ``c``, in a design whose first ``lead`` columns are the
        intercept and the numerical features (code 0, the reference level, has no column)."""
        return lead + self.dummy_offsets - 1

    @staticmethod
    def of(inst: DROInstance) -> "CodeLayout":
        schema = inst.schema
        return CodeLayout(np.asarray(schema.levels, dtype=int), schema.dummy_offsets(), int(schema.n_encoded))


def row_design(inst: DROInstance, rows: ConfigurationRows) -> sp.csr_matrix:
    """``[x_{n_k}, dummies(z_k)]`` for every configuration row (K, n_encoded)."""
    X = inst.data.X[rows.sample]
    return sp.hstack([sp.csr_matrix(X), inst.schema.dummies(rows.Z)], format="csr")


def dense_row_design(inst: DROInstance, rows: ConfigurationRows, rep: Optional[np.ndarray] = None,
                     layout: Optional[CodeLayout] = None) -> np.ndarray:
    """``[1, x_{n_k}, dummies(z_k)]`` per row (the leading 1 with an intercept) as a dense array, written in
    place (:func:`row_design` with the intercept column, without scipy.sparse); ``rep``: the rows to repeat, in
    order (one term per loss piece); ``layout``: the codes' columns (default: the schema's)."""
    sample, Z = (rows.sample, rows.Z) if rep is None else (rows.sample[rep], rows.Z[rep])
    return design_of_codes(inst, sample, Z, layout)


def design_of_codes(inst: DROInstance, sample: np.ndarray, Z: np.ndarray,
                    layout: Optional[CodeLayout] = None) -> np.ndarray:
    """:func:`dense_row_design` of the rows ``(sample[k], Z[k])``: ``[1, x_{sample_k}, dummies(Z_k)]``."""
    layout = CodeLayout.of(inst) if layout is None else layout
    offset = int(inst.fit_intercept)
    n_num = inst.n_numerical
    out = np.zeros((sample.size, offset + layout.n_encoded))
    if offset:
        out[:, 0] = 1.0
    out[:, offset:offset + n_num] = inst.data.X[sample]
    if Z.shape[1]:
        cols = layout.code_base(offset + n_num)[None, :] + Z
        k, l = np.nonzero(Z > 0)
        out[k, cols[k, l]] = 1.0
    return out


def csr_row_design(inst: DROInstance, rows: ConfigurationRows, rep: Optional[np.ndarray] = None,
                   layout: Optional[CodeLayout] = None, dummies_only: bool = False) -> sp.csr_matrix:
    """The matrix of :func:`dense_row_design` in CSR form, its arrays written directly (the columns of a row --
    intercept, numerical features, one dummy per categorical feature not at its reference level -- are already in
    order): no COO conversion and no horizontal stacking, which were 10-15 s of a fit at 1,000,000 samples (a
    2,300,000-row working set).  Written :data:`GRAM_CHUNK` rows at a time into arrays allocated once, with 32-bit
    indices when they fit: the full-width intermediates took three times the matrix's memory.  ``dummies_only``: the
    dummy columns alone (without the intercept and numerical columns: :mod:`.factored_design`'s ``DZ``)."""
    sample, Z = (rows.sample, rows.Z) if rep is None else (rows.sample[rep], rows.Z[rep])
    return csr_design_of_codes(inst, sample, Z, layout, dummies_only)


def csr_design_of_codes(inst: DROInstance, sample: np.ndarray, Z: np.ndarray, layout: Optional[CodeLayout] = None,
                        dummies_only: bool = False) -> sp.csr_matrix:
    """:func:`csr_row_design` of the rows ``(sample[k], Z[k])``."""
    layout = CodeLayout.of(inst) if layout is None else layout
    K = sample.size
    offset, n_num = (0, 0) if dummies_only else (int(inst.fit_intercept), inst.n_numerical)
    lead = offset + n_num
    n_cols = lead + layout.n_encoded - inst.n_numerical
    counts = lead + (Z > 0).sum(axis=1) if Z.shape[1] else np.full(K, lead)
    indptr = np.zeros(K + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    index = np.int32 if max(int(indptr[-1]), n_cols) < 2 ** 31 - 1 else np.int64
    data = np.empty(int(indptr[-1]))
    indices = np.empty(int(indptr[-1]), dtype=index)
    dummy_cols = layout.code_base(lead)[None, :]                            # code c > 0 -> dummy_cols + c
    for begin in range(0, K, GRAM_CHUNK):
        end = min(K, begin + GRAM_CHUNK)
        cols = np.empty((end - begin, lead + Z.shape[1]), dtype=index)
        vals = np.empty((end - begin, lead + Z.shape[1]))
        if offset:
            cols[:, 0], vals[:, 0] = 0, 1.0
        if n_num:
            cols[:, offset:lead] = np.arange(offset, lead)
            vals[:, offset:lead] = inst.data.X[sample[begin:end]]
        if Z.shape[1]:
            cols[:, lead:] = dummy_cols + Z[begin:end]
            vals[:, lead:] = 1.0
            keep = np.ones(cols.shape, dtype=bool)
            keep[:, lead:] = Z[begin:end] > 0
            data[indptr[begin]:indptr[end]] = vals[keep]
            indices[indptr[begin]:indptr[end]] = cols[keep]
        else:
            data[indptr[begin]:indptr[end]] = vals.ravel()
            indices[indptr[begin]:indptr[end]] = cols.ravel()
    return sp.csr_matrix((data, indices, indptr.astype(index)), shape=(K, n_cols))


def sparse_gram(A: sp.csr_matrix, root: np.ndarray, chunk: Optional[int] = None) -> np.ndarray:
    """``X' X`` for ``X = diag(root) A``, ``A`` sparse, densified ``chunk`` rows at a time (one symmetric rank-k
    update per block, bounded memory).  scipy.sparse's own ``X' X`` of a 1,010,173 x 61 design took 2.3 s, and one
    dense array of it 500 MB."""
    A = sp.csr_matrix(A)
    chunk = GRAM_CHUNK if chunk is None else chunk
    out = np.zeros((A.shape[1], A.shape[1]))
    for start in range(0, A.shape[0], chunk):
        X = A[start:start + chunk].toarray()
        X *= root[start:start + chunk, None]
        out += X.T @ X
    return out
