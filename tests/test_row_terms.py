"""The building blocks of drokit's Newton-type masters (:mod:`drokit.reformulations.row_terms`) and the
row index of :mod:`drokit.oracles.enumeration`, against independent constructions on the fuzz instances: the dense
term design equals the sparse design of the conic masters (``dual.row_design``) with the intercept column; the
packed row index answers "which rows are new" as a set of the rows' identities does, in both of its modes."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import drokit as dk
from drokit.reformulations.dual import row_design
from drokit.reformulations.row_terms import RowTerms, csr_row_design, dense_row_design
from drokit.oracles.enumeration import (ConfigurationRows, RowIndex, concat_rows, count_configuration_rows,
                                        enumerate_configurations, take_rows)

sys.path.insert(0, os.path.dirname(__file__))
import fuzz_instances as fz  # noqa: E402

SEEDS = list(range(40))


def _bound(seed: int):
    inst = fz.draw_instance(seed)
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                         task=inst.task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return problem.bind(inst.frame(), inst.y.copy()).fitting_view()


@pytest.mark.parametrize("seed", SEEDS)
def test_dense_row_design_equals_the_sparse_design(seed):
    di = _bound(seed)
    rows = enumerate_configurations(di) if count_configuration_rows(di) <= 20_000 else \
        enumerate_configurations(di, nominal_only=True)
    dense = dense_row_design(di, rows)
    sparse = row_design(di, rows).toarray()
    expected = np.hstack([np.ones((rows.size, 1)), sparse]) if di.fit_intercept else sparse
    assert dense.shape == expected.shape and np.array_equal(dense, expected)
    rep = np.random.default_rng(seed).integers(0, rows.size, size=2 * rows.size)
    assert np.array_equal(dense_row_design(di, rows, rep), expected[rep])
    csr = csr_row_design(di, rows, rep)
    assert csr.has_sorted_indices and np.array_equal(csr.toarray(), expected[rep])
    import drokit.oracles.design as design
    with pytest.MonkeyPatch.context() as mp:          # written 7 rows at a time
        mp.setattr(design, "GRAM_CHUNK", 7)
        assert np.array_equal(csr_row_design(di, rows, rep).toarray(), expected[rep])
    terms = RowTerms(di, rows)                     # sorted by sample, one term per loss piece
    order = np.argsort(rows.sample, kind="stable")
    pieces = 1 if di.loss.pieces is None else len(di.loss.pieces[0])
    assert np.array_equal(terms.dense, np.repeat(expected[order], pieces, axis=0))


def _reference_unseen(known: ConfigurationRows, rows: ConfigurationRows) -> np.ndarray:
    def identity(r, k):
        return (int(r.sample[k]), bool(r.flip[k]), tuple(int(v) for v in r.Z[k]))
    seen = {identity(known, k) for k in range(known.size)}
    return np.asarray([k for k in range(rows.size) if identity(rows, k) not in seen], dtype=int)


def _random_rows(rng, n_samples, levels, size):
    Z = np.column_stack([rng.integers(0, a, size=size) for a in levels]) if len(levels) else np.zeros((size, 0), int)
    return ConfigurationRows(sample=rng.integers(0, n_samples, size=size), Z=Z.astype(np.int64),
                             cost=rng.random(size), flip=rng.random(size) < 0.3)


@pytest.mark.parametrize("levels", [[2, 3], [5] * 6, [2], [], [40] * 13, [300, 7, 2] * 5],
                         ids=["small", "six", "one", "none", "wide-fallback", "wider-fallback"])
def test_row_index_finds_exactly_the_new_rows(levels):
    rng = np.random.default_rng(len(levels))
    n = 50
    known = _random_rows(rng, n, levels, 120)
    index = RowIndex(known, n, np.asarray(levels, dtype=int))
    assert index.packed == (n * 2.0 * float(np.prod(levels)) < 2.0 ** 62)
    for _ in range(4):
        # half drawn afresh, half copies of known rows (some with one code or the flip changed)
        copies = take_rows(known, rng.integers(0, known.size, size=60))
        if len(levels):
            changed = rng.random(60) < 0.3
            copies.Z[changed, 0] = (copies.Z[changed, 0] + 1) % levels[0]
        copies.flip[rng.random(60) < 0.1] ^= True
        query = concat_rows([_random_rows(rng, n, levels, 60), copies])
        assert np.array_equal(index.unseen(query), _reference_unseen(known, query))
        index.add(query)
        known = concat_rows([known, query])
        assert index.unseen(query).size == 0


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse-chunked"])
@pytest.mark.parametrize("seed", [0, 3, 7, 11])
def test_curvature_gram_stays_within_its_tolerance_of_the_exact_gram(seed, sparse, monkeypatch):
    """``RowTerms.curvature_gram`` after a sequence of weight vectors (small drifts, a few jumps, terms switched
    off and on): ``(1 - rtol) H <= H~ <= (1 + rtol) H`` in the Loewner order for the exact Gram ``H`` of the
    current weights (the generalized eigenvalues of ``(H~, H)`` lie in ``[1 - rtol, 1 + rtol]``), and with
    ``rtol = 0`` it is the exact Gram."""
    import drokit.reformulations.row_terms as rt
    di = _bound(seed)
    rows = enumerate_configurations(di) if count_configuration_rows(di) <= 20_000 else \
        enumerate_configurations(di, nominal_only=True)
    rng = np.random.default_rng(seed)
    if sparse:   # the scipy.sparse design of large working sets, densified 7 rows at a time
        import drokit.oracles.design as design
        monkeypatch.setattr(rt, "DENSE_TERMS_LIMIT", 0)
        monkeypatch.setattr(rt, "GRAM_CHUNK", 7)           # the centered Gram's blocks
        monkeypatch.setattr(design, "GRAM_CHUNK", 7)       # the sparse design's and sparse_gram's
    for rtol in (0.0, 0.1):
        monkeypatch.setattr(rt, "CURVATURE_RTOL", rtol)
        terms = RowTerms(di, rows)
        assert (terms.dense is None) == sparse
        D = terms.A.toarray() if sparse else terms.dense
        weight = rng.random(terms.n_terms)
        for step in range(12):
            drift = np.exp(rng.normal(scale=(0.5, 0.02, 0.08, 0.15)[step % 4], size=weight.size))
            weight = weight * drift
            weight[rng.random(weight.size) < 0.05] = 0.0                      # switched off
            off = weight == 0
            weight[off & (rng.random(weight.size) < 0.3)] = rng.random()      # and back on
            approx = terms.curvature_gram(weight)
            exact = D.T @ (weight[:, None] * D) + 1e-12 * np.eye(D.shape[1])
            if rtol == 0.0:
                assert np.allclose(approx, exact, rtol=1e-10, atol=1e-9)
                continue
            L = np.linalg.cholesky(exact)
            M = np.linalg.solve(L, np.linalg.solve(L, approx).T)          # L^-1 H~ L^-T
            eig = np.linalg.eigvalsh(0.5 * (M + M.T))
            assert eig.min() >= 1 - rtol - 1e-6 and eig.max() <= 1 + rtol + 1e-6, (step, eig.min(), eig.max())


@pytest.mark.parametrize("seed", [0, 3, 7, 11])
def test_centered_gram_in_chunks_equals_the_definition(seed, monkeypatch):
    """``RowTerms.centered_gram`` computed 7 terms at a time (chunks cut at sample boundaries) equals the formula
    over all terms at once: ``sum_r w_r (J_r - G_n)(J_r - G_n)'`` with ``G_n`` the ``m``-weighted mean of sample
    ``n``'s rows ``J_r``, and ``sum_n G_n project_n``."""
    import drokit.reformulations.row_terms as rt
    di = _bound(seed)
    rows = enumerate_configurations(di) if count_configuration_rows(di) <= 20_000 else \
        enumerate_configurations(di, nominal_only=True)
    rng = np.random.default_rng(seed)
    terms = RowTerms(di, rows)
    counts = np.bincount(terms.segment, minlength=terms.starts.size)
    idx = np.flatnonzero(counts[terms.segment] >= 2)
    if idx.size == 0:
        pytest.skip("no sample with two terms")
    ss, m, w = rng.normal(size=terms.n_terms), rng.random(terms.n_terms) + 0.1, rng.random(terms.n_terms)
    project = rng.normal(size=terms.starts.size)
    J = terms.gradients(np.arange(terms.n_terms), ss)
    gram, projected = np.zeros((J.shape[1], J.shape[1])), np.zeros(J.shape[1])
    for n in np.unique(terms.segment[idx]):
        own = idx[terms.segment[idx] == n]
        G = m[own] @ J[own] / m[own].sum()
        gram += (J[own] - G).T @ (w[own, None] * (J[own] - G))
        projected += G * project[n]
    monkeypatch.setattr(rt, "GRAM_CHUNK", 7)
    chunked = terms.centered_gram(idx, ss, m, w, project)
    assert np.allclose(chunked[0], gram, rtol=1e-10, atol=1e-10) and np.allclose(chunked[1], projected, rtol=1e-10)
    assert terms.centered_gram(idx, ss, m, w)[1] is None


@pytest.mark.parametrize("seed", SEEDS)
def test_row_margins_by_gathers_equal_the_design_product(seed):
    """``oracles.rows.row_margins`` (numerical part per sample, one lookup per categorical feature) equals
    ``sigma (A beta + beta_0) - shift`` with the conic masters' design ``A`` (``dual.row_design``)."""
    from drokit.oracles.rows import row_margins
    di = _bound(seed)
    rows = enumerate_configurations(di) if count_configuration_rows(di) <= 20_000 else \
        enumerate_configurations(di, nominal_only=True)
    rng = np.random.default_rng(seed)
    coef, intercept = rng.normal(size=di.schema.n_encoded), float(rng.normal())
    sigma, shift = di.row_signs(rows.sample, rows.flip)
    expected = sigma * (row_design(di, rows) @ coef + intercept) - shift
    assert np.allclose(row_margins(di, rows, intercept, coef), expected, rtol=1e-13, atol=1e-12)
