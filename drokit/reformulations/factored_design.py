"""The term design of wide one-hot data, factored: a per-sample lead block and sparse dummy rows.

Every configuration row of sample ``n`` is ``a_r = [1, x_n, dz_r]`` (:func:`.row_terms.dense_row_design`): the
intercept and the numerical features are the sample's own, only the dummies ``dz_r`` of its categorical codes differ
between its rows, with at most ``m`` ones (one per categorical feature off its reference level).  A dense term
design costs ``O(K D^2)`` per Gram product for ``K`` terms and ``D`` columns; with a 300-level feature (``D = 311``,
``m = 3``) nearly all of it multiplies zeros.  :class:`FactoredDesign` keeps ``X~ = [1, X]`` once per sample and
``DZ`` as a CSR matrix, and computes the products the Newton steps need block by block:

* ``A theta = (X~ theta_L)[n_r] + DZ theta_D`` and ``A' w = [X~' (sum_{r of n} w_r)_n, DZ' w]``;
* the weighted Gram ``sum_r w_r a_r a_r'``: the lead block ``X~' diag(W_n) X~`` over samples
  (``W_n = sum_{r of n} w_r``), the cross block ``X~' (P_w DZ)`` and the dummy block ``DZ' diag(w) DZ``;
* the centered Gram of the softmax / epigraph Hessians ``sum_r g_r (J_r - G_n)(J_r - G_n)'``, ``J_r = [s_r a_r,
  -c_r]``, ``G_n = sum_{r of n} q_r J_r`` (``q`` the normalized ``mean_weight`` of the sample's terms): with
  ``s-bar_n = sum q_r s_r`` and ``c-bar_n = sum q_r c_r``,

      J_r - G_n = [ e_r x~_n,  B_r,  f_r ],   e_r = s_r - s-bar_n,   B_r = s_r dz_r - sum_{t of n} q_t s_t dz_t,
                                              f_r = -(c_r - c-bar_n),

  so the lead block is ``X~' diag(sum_r g_r e_r^2) X~``, the cross blocks ``X~' (P_{g e} [B, f])`` and the rest
  ``[B, f]' diag(g) [B, f]``, with ``B`` sparse.  Every factor is a centered difference computed before any
  product (as the dense path centers ``J`` before its product): no cancellation when ``g`` carries ``1 / tau`` or
  ``1 / slack^2``.

The cost per term is ``O((m + 1)^2)`` sparse work instead of ``O(D^2)`` dense flops.  :func:`use_factored` chooses it
when the dummy columns outnumber :data:`WIDE_DUMMY_RATIO` times the categorical features: the 300-level table
(5,000 rows; 304 dummies, 3 features), one centered Gram 35 -> 1.2 ms; census-like (94 dummies, 8 features) 6.8 ->
1.3 ms; synthetic 10 + 10 (45 dummies, 10 features) is faster dense (0.8 against 1.1-2 ms), and stays dense.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

#: the factored design is used when the dummy columns are at least this many times the categorical features
#: (module docstring: census-like 94 / 8 = 11.8 factored, synthetic 10 + 10 45 / 10 = 4.5 dense)
WIDE_DUMMY_RATIO = 8.0


def use_factored(n_dummies: int, n_categorical: int) -> bool:
    """Whether a term design of ``n_dummies`` dummy columns over ``n_categorical`` categorical features is
    factored (:data:`WIDE_DUMMY_RATIO`)."""
    return n_categorical > 0 and n_dummies >= WIDE_DUMMY_RATIO * n_categorical


def _scale_rows(M: sp.csr_matrix, scale: np.ndarray) -> sp.csr_matrix:
    """``diag(scale) M`` for a CSR ``M``, without a diagonal matrix product."""
    return sp.csr_matrix((M.data * np.repeat(scale, np.diff(M.indptr)), M.indices, M.indptr), shape=M.shape)


def sorted_runs(owner_of: np.ndarray) -> Tuple[np.ndarray, np.ndarray, int]:
    """``(first position of each run, run index per position, runs)`` of a sorted key array."""
    starts = np.flatnonzero(np.r_[True, owner_of[1:] != owner_of[:-1]]) if owner_of.size else np.zeros(0, int)
    owner = np.cumsum(np.r_[False, owner_of[1:] != owner_of[:-1]]) if owner_of.size else np.zeros(0, int)
    return starts, owner, starts.size


class FactoredDesign:
    """The term design ``A`` (``K`` terms x ``L + D_z`` columns) as ``lead`` (``N x L``, one row ``[1, x_n]`` per
    sample) and ``DZ`` (CSR, ``K x D_z``), with the term -> sample map ``sample`` (sorted)."""

    def __init__(self, lead: np.ndarray, dummies: sp.csr_matrix, sample: np.ndarray):
        self.lead = np.ascontiguousarray(lead, dtype=float)
        self.DZ = sp.csr_matrix(dummies)
        self.sample = np.asarray(sample)
        self.L = self.lead.shape[1]
        self.n_columns = self.L + self.DZ.shape[1]

    # ------------------------------------------------------------------ products
    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A x``."""
        return (self.lead @ x[:self.L])[self.sample] + self.DZ @ x[self.L:]

    def matvec_T(self, w: np.ndarray) -> np.ndarray:
        """``A' w``."""
        per_sample = np.bincount(self.sample, weights=w, minlength=self.lead.shape[0])
        return np.concatenate([self.lead.T @ per_sample, self.DZ.T @ w])

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """Dense rows ``idx`` of ``A``."""
        out = np.empty((idx.size, self.n_columns))
        out[:, :self.L] = self.lead[self.sample[idx]]
        out[:, self.L:] = self.DZ[idx].toarray()
        return out

    def terms_with_columns(self, columns: np.ndarray) -> np.ndarray:
        """The terms whose row is nonzero in one of ``columns`` (sorted)."""
        lead_cols = columns[columns < self.L]
        hit = np.zeros(self.sample.size, dtype=bool)
        if lead_cols.size:
            hit |= np.any(self.lead[:, lead_cols] != 0, axis=1)[self.sample]
        dz_cols = columns[columns >= self.L] - self.L
        if dz_cols.size:
            hit |= np.diff(self.DZ[:, dz_cols].tocsr().indptr) > 0
        return np.flatnonzero(hit)

    def weighted_gram(self, idx: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """``sum_{r in idx} weight_r a_r a_r'`` (``weight`` one per term of ``idx``), by blocks (module docstring)."""
        L = self.L
        out = np.empty((self.n_columns, self.n_columns))
        if not idx.size:
            out[:] = 0.0
            return out
        samples = self.sample[idx]
        starts, owner, n_seg = sorted_runs(samples)
        X = self.lead[samples[starts]]
        W = np.bincount(owner, weights=weight, minlength=n_seg)
        D1 = self.DZ[idx]
        out[:L, :L] = X.T @ (W[:, None] * X)
        weighted = _scale_rows(D1, weight)
        cross = (sp.csr_matrix((np.ones(idx.size), (owner, np.arange(idx.size))), shape=(n_seg, idx.size))
                 @ weighted).T @ X          # D_z x L
        out[L:, :L] = cross
        out[:L, L:] = cross.T
        out[L:, L:] = (D1.T @ weighted).toarray()
        return out

    def centered_gram(self, idx: np.ndarray, segment: np.ndarray, cost: np.ndarray, ss: np.ndarray,
                      mean_weight: np.ndarray, gram_weight: np.ndarray,
                      project: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """``(sum_{r in idx} g_r (J_r - G_n)(J_r - G_n)', G' project[segments])`` for ``J_r = [ss_r a_r, -cost_r]``
        and ``G_n`` the ``mean_weight``-weighted mean of sample ``n``'s ``J_r`` over ``idx`` (sorted; ``segment``:
        each term's sample segment, over all terms; ``project``: a vector over the segments of all terms, or
        ``None``).  Blocks of the module docstring; equal to :meth:`.row_terms.RowTerms.centered_gram`'s dense
        product up to rounding."""
        L, D = self.L, self.n_columns + 1
        gram = np.zeros((D, D))
        projected = None if project is None else np.zeros(D)
        if not idx.size:
            return gram, projected
        seg = segment[idx]
        starts, owner, n_seg = sorted_runs(seg)
        k = idx.size
        X = self.lead[self.sample[idx][starts]]
        mw = mean_weight[idx]
        q = mw / np.bincount(owner, weights=mw, minlength=n_seg)[owner]
        s, c, g = ss[idx], cost[idx], gram_weight[idx]
        s_bar = np.bincount(owner, weights=q * s, minlength=n_seg)
        c_bar = np.bincount(owner, weights=q * c, minlength=n_seg)
        e = s - s_bar[owner]
        f = c_bar[owner] - c
        terms = np.arange(k)
        SD = _scale_rows(self.DZ[idx], s)
        G_dz = (sp.csr_matrix((q, (owner, terms)), shape=(n_seg, k)) @ SD).tocsr()
        B = (SD - G_dz[owner]).tocsr()
        gB = _scale_rows(B, g)
        ge = g * e
        gram[:L, :L] = X.T @ (np.bincount(owner, weights=ge * e, minlength=n_seg)[:, None] * X)
        lead_cost = X.T @ np.bincount(owner, weights=ge * f, minlength=n_seg)
        gram[:L, -1] = gram[-1, :L] = lead_cost
        cross = (sp.csr_matrix((ge, (owner, terms)), shape=(n_seg, k)) @ B).T @ X        # D_z x L
        gram[L:-1, :L] = cross
        gram[:L, L:-1] = cross.T
        gram[L:-1, L:-1] = (B.T @ gB).toarray()
        dz_cost = gB.T @ f
        gram[L:-1, -1] = gram[-1, L:-1] = dz_cost
        gram[-1, -1] = float(g @ (f * f))
        if project is not None:
            pr = project[seg[starts]]
            projected[:L] = X.T @ (s_bar * pr)
            projected[L:-1] = G_dz.T @ pr
            projected[-1] = -float(c_bar @ pr)
        return gram, projected


class NominalChanges:
    """The products ``A x`` and ``A' w`` of a term design as its samples' nominal rows plus sparse changes:

        A = P Nom + C,    (P Nom)_r = Nom_{n_r},   C_r = a_r - Nom_{n_r},

    ``Nom`` (``N x D``, dense or CSR) the rows ``[1, x_n, dummies(z_n)]`` of the training samples and ``C`` (CSR) the
    difference of each term's dummies from its sample's: a ``+1`` at the dummy of every changed feature's new level
    and a ``-1`` at its own level's (none at the reference level 0).  A configuration row changes a few features of
    its sample, so ``C`` holds a few entries per term and ``A x = (Nom x)[n] + C x`` reads ``N D`` numbers instead of
    ``K D``: 60 categorical features with 2-5 levels (151 columns, 26,000 terms over 10,000 samples) 2.1 -> 0.6 ms per
    product, synthetic 10 + 10 at N = 100,000 (56 columns, 220,000 terms) 5.4 -> 3.9 ms."""

    def __init__(self, nominal, changes: sp.csr_matrix, sample: np.ndarray):
        self.nominal = nominal
        self.changes = changes
        self.sample = np.asarray(sample)
        self.n_samples = nominal.shape[0]

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A x``."""
        return np.asarray(self.nominal @ x)[self.sample] + self.changes @ x

    def matvec_T(self, w: np.ndarray) -> np.ndarray:
        """``A' w``."""
        per_sample = np.bincount(self.sample, weights=w, minlength=self.n_samples)
        return np.asarray(self.nominal.T @ per_sample) + self.changes.T @ w

