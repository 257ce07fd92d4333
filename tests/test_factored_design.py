"""The factored term design of wide one-hot data (:mod:`drokit.reformulations.factored_design`) against
the dense design, built independently (:func:`.row_terms.dense_row_design`, checked against the conic masters'
design in tests/test_row_terms.py): every product the Newton masters take (``A x``, ``A' w``, dense rows, the
weighted Gram, the centered Gram with its projection, the terms a set of columns touches) on the fuzz instances,
with random weights and random subsets of terms; then whole fits with every design factored against the dense
ones and the monolithic program, and the wide table the factoring is for."""

from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np
import pytest

import drokit as dk
import drokit.reformulations.factored_design as fd
from drokit.reformulations.epigraph import EpigraphBarrier
from drokit.reformulations.row_terms import RowTerms, dense_row_design
from drokit.oracles.enumeration import count_configuration_rows, enumerate_configurations

sys.path.insert(0, os.path.dirname(__file__))
from test_certificate_polish import many_levels  # noqa: E402
from test_row_terms import _bound  # noqa: E402


def _factored_terms(di, rows, monkeypatch):
    monkeypatch.setattr(fd, "WIDE_DUMMY_RATIO", 0.0)
    terms = RowTerms(di, rows)
    monkeypatch.undo()
    return terms


def _seeds_with_categorical_features(count: int):
    out, seed = [], 0
    while len(out) < count:
        if _bound(seed).data.Z.shape[1]:
            out.append(seed)
        seed += 1
    return out


SEEDS = _seeds_with_categorical_features(30)


def _reference_centered(A: np.ndarray, cost, segment, idx, ss, mean_weight, gram_weight, project):
    """The centered Gram term by term: ``J_r = [ss_r a_r, -c_r]``, ``G_n`` the weighted mean of sample n's ``J_r``
    over ``idx``."""
    J = np.column_stack([ss[:, None] * A, -cost])[idx]
    seg = segment[idx]
    gram = np.zeros((J.shape[1], J.shape[1]))
    projected = np.zeros(J.shape[1])
    for n in np.unique(seg):
        at = seg == n
        G = mean_weight[idx][at] @ J[at] / mean_weight[idx][at].sum()
        centered = J[at] - G
        gram += centered.T @ (gram_weight[idx][at, None] * centered)
        projected += project[n] * G
    return gram, projected


@pytest.mark.parametrize("seed", SEEDS)
def test_factored_products_equal_the_dense_design(seed, monkeypatch):
    di = _bound(seed)
    rows = enumerate_configurations(di) if count_configuration_rows(di) <= 5_000 else \
        enumerate_configurations(di, nominal_only=True)
    terms = _factored_terms(di, rows, monkeypatch)
    assert terms.factored is not None and terms.dense is None
    pieces = 1 if di.loss.pieces is None else len(di.loss.pieces[0])
    rep = np.repeat(np.arange(terms.rows.size), pieces)
    A = dense_row_design(di, terms.rows, rep)                  # the same term order (rows sorted by sample)
    rng = np.random.default_rng(seed)
    K, D = A.shape
    x, w = rng.standard_normal(D), rng.standard_normal(K)
    np.testing.assert_allclose(terms.matvec(x), A @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(terms.matvec_T(w), A.T @ w, rtol=1e-12, atol=1e-11)
    idx = np.sort(rng.choice(K, size=max(1, K // 2), replace=False))
    assert np.array_equal(terms.design(idx), A[idx])
    weight = rng.exponential(size=K) * (rng.random(K) < 0.7)
    np.testing.assert_allclose(terms.weighted_gram(idx, weight), A[idx].T @ (weight[idx, None] * A[idx]),
                               rtol=1e-11, atol=1e-11)
    # the centered Gram, weights of very different sizes (1 / tau and 1 / slack^2 in the masters)
    ss = rng.standard_normal(K)
    mean_weight = rng.exponential(size=K)
    gram_weight = mean_weight * 10.0 ** rng.uniform(0, 8, K)
    project = rng.standard_normal(terms.starts.size)
    got, got_projected = terms.centered_gram(idx, ss, mean_weight, gram_weight, project)
    ref, ref_projected = _reference_centered(A, terms.cost, terms.segment, idx, ss, mean_weight, gram_weight,
                                             project)
    scale = max(np.abs(ref).max(), 1e-300)
    assert np.abs(got - ref).max() <= 1e-11 * scale
    np.testing.assert_allclose(got_projected, ref_projected, rtol=1e-11, atol=1e-11 * np.abs(ref_projected).max())
    assert terms.centered_gram(idx, ss, mean_weight, gram_weight)[1] is None


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_factored_curvature_gram_and_touched_terms(seed, monkeypatch):
    """The curvature Gram (exact at the first call, then the kept Gram with signed corrections through the factored
    blocks) and the terms a set of columns touches (the line search's restriction) equal the dense ones."""
    di = _bound(seed)
    rows = enumerate_configurations(di, nominal_only=True)
    monkeypatch.setattr(fd, "WIDE_DUMMY_RATIO", 0.0)
    factored = EpigraphBarrier.__new__(EpigraphBarrier)
    RowTerms.__init__(factored, di, rows)
    monkeypatch.setattr(fd, "WIDE_DUMMY_RATIO", np.inf)
    dense = EpigraphBarrier.__new__(EpigraphBarrier)
    RowTerms.__init__(dense, di, rows)
    assert factored.factored is not None and dense.dense is not None
    rng = np.random.default_rng(seed)
    weight = rng.exponential(size=dense.n_terms)
    exact = dense.dense.T @ (weight[:, None] * dense.dense)
    np.testing.assert_allclose(factored.curvature_gram(weight), exact, rtol=1e-10, atol=1e-10)
    dense.curvature_gram(weight)
    for _ in range(4):     # the same kept weights and corrections (a Gram within CURVATURE_RTOL of the exact one)
        moved = rng.random(weight.size) < 0.2
        weight = np.where(moved, weight * rng.uniform(0.3, 3.0, weight.size), weight)
        np.testing.assert_allclose(factored.curvature_gram(weight), dense.curvature_gram(weight), rtol=1e-10,
                                   atol=1e-10)
    for _ in range(5):
        columns = np.sort(rng.choice(dense.n_columns, size=rng.integers(1, dense.n_columns + 1), replace=False))
        assert np.array_equal(factored.terms_touching(columns), dense.terms_touching(columns))


@pytest.mark.parametrize("kappa", [np.inf, 1.0])
def test_a_wide_table_is_fitted_factored_to_the_dense_optimum(kappa, monkeypatch):
    """Default (factored: a 60-level and a 4-level feature, 62 dummies over 2 features) and dense fits certify the same
    optimum, both with an explicit dual point; the factored masters did run."""
    X, y = many_levels(n=600, levels=60, seed=3)
    est = lambda: dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(kappa)), radius=0.1))
    built = []
    original = fd.FactoredDesign.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(fd.FactoredDesign, "__init__", counting)
    factored = est().fit(X, y).result_
    assert built
    monkeypatch.setattr(fd, "WIDE_DUMMY_RATIO", np.inf)
    built.clear()
    dense = est().fit(X, y).result_
    assert not built
    for res in (factored, dense):
        assert res.status == "optimal" and res.relative_gap <= 1e-6
        assert res.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert factored.objective == pytest.approx(dense.objective, rel=2e-6)
    # both certificates bracket the other fit's optimum
    assert factored.lower_bound <= dense.upper_bound + 1e-12 and dense.lower_bound <= factored.upper_bound + 1e-12


@pytest.mark.parametrize("seed", [1, 4, 7])
def test_every_design_factored_still_equals_the_monolithic_program(seed, monkeypatch):
    """Phase 1 and the barrier master with every design factored: the cutting plane certifies the monolithic
    program's optimum (small mixed instances whose designs are otherwise dense)."""
    from test_cutting_plane import _data, _problem     # the cutting plane's own small mixed instances
    monkeypatch.setattr(fd, "WIDE_DUMMY_RATIO", 0.0)
    X, y, kw = _data("classification", seed=seed)
    prob = _problem(dk.losses.Logistic(), "classification", 1.0, 1, 2, delta=[0.5, 1.0, 2.0])
    mono = prob.compile(X, y, method="monolithic", **kw).solve()
    cut = prob.compile(X, y, method="cutting_plane", **kw).solve()
    assert cut.status == "optimal" and cut.relative_gap <= 1e-6
    assert cut.objective == pytest.approx(mono.objective, rel=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_nominal_changes_products_equal_the_dense_design(seed, monkeypatch):
    """``A x`` and ``A' w`` as nominal rows plus sparse changes (:class:`.factored_design.NominalChanges`) equal the
    dense design's, with the schema's columns and with the level-max columns of the barrier master (extended codes
    ``a_l`` and ``a_l + 1`` in some rows), dense and sparse nominal rows."""
    import drokit.reformulations.row_terms as rt
    from drokit.reformulations.level_max import LevelMaxColumns
    di = _bound(seed)
    rows = enumerate_configurations(di) if count_configuration_rows(di) <= 5_000 else \
        enumerate_configurations(di, nominal_only=True)
    rng = np.random.default_rng(seed)
    space = LevelMaxColumns(di)
    layouts = [None] + ([space.layout] if space.active else [])
    monkeypatch.setattr(rt, "NOMINAL_CHANGES_FRACTION", np.inf)
    for layout in layouts:
        if layout is not None:                # some rows at the m columns' codes
            Z = rows.Z.copy()
            for l in space.features:
                pick = rng.random(Z.shape[0]) < 0.3
                Z[pick, l] = space.real_levels[l] + rng.integers(0, 2, int(pick.sum()))
            rows = dataclasses.replace(rows, Z=Z)
        for dense_limit in (rt.DENSE_TERMS_LIMIT, 0):
            monkeypatch.setattr(rt, "DENSE_TERMS_LIMIT", dense_limit)
            terms = RowTerms(di, rows, layout)
            monkeypatch.undo()
            monkeypatch.setattr(rt, "NOMINAL_CHANGES_FRACTION", np.inf)
            if terms.factored is not None:
                continue
            assert terms.changes is not None
            pieces = 1 if di.loss.pieces is None else len(di.loss.pieces[0])
            rep = np.repeat(np.arange(terms.rows.size), pieces)
            A = dense_row_design(di, terms.rows, rep, layout)
            x, w = rng.standard_normal(A.shape[1]), rng.standard_normal(A.shape[0])
            np.testing.assert_allclose(terms.matvec(x), A @ x, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(terms.matvec_T(w), A.T @ w, rtol=1e-12, atol=1e-11)
