"""Phase 1's multilevel warm start (:mod:`drokit.reformulations.warm_start`) and the barrier master's search
along reversed Newton components (``kink_search`` in :mod:`drokit.reformulations.centering`).

* ``subsample``: sizes, order, renormalized sample weights, determinism;
* warm-started fits (the threshold lowered so that instances of a few hundred rows start from a subsample, itself
  started from a smaller one) reach the optimum of ``method="monolithic"`` (the full enumeration, another program)
  and of a cold fit, for classification and regression, finite and infinite label costs, l1 / l2 ground norms and
  sample weights; the warm start demonstrably ran (a wrapper counts the subsample levels);
* the restricted line function equals ``phi_mu`` up to a constant along parameter directions (the samples the
  direction does not touch really do not move), on random working sets, points and barrier weights -- a wrong
  touched-term set or epigraph breaks it;
* a kink search never returns a worse point, and what it returns is ``settled`` at that point.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import drokit as dk
import drokit.reformulations.centering as cen
import drokit.reformulations.epigraph as epi
import drokit.reformulations.warm_start as ws
from drokit.reformulations.row_terms import parameter_layout
from drokit.evaluation.worst_case import lambda_floor
from drokit.oracles.enumeration import concat_rows, enumerate_configurations, take_rows, unique_rows


def _data(n: int, seed: int, task: str = "classification"):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "c": pd.Categorical(rng.choice(list("pqr"), size=n)),
                      "d": pd.Categorical(rng.choice(list("wxyz"), size=n, p=[0.55, 0.3, 0.1, 0.05]))})
    score = X["a"] - 0.5 * X["b"] + X["c"].map({"p": 0.8, "q": 0.0, "r": -0.6}).astype(float) \
        + X["d"].map({"w": 0.0, "x": 0.5, "y": -1.0, "z": 1.2}).astype(float)
    if task == "classification":
        y = np.where(score + rng.logistic(size=n) > 0, 1, -1)
    else:
        y = score.to_numpy() + 0.3 * rng.normal(size=n)
    return X, y


CASES = [  # (task, loss, kappa, norm p, weighted)
    ("classification", "logistic", np.inf, 1.0, False),
    ("classification", "logistic", 1.0, 2.0, True),
    ("classification", "hinge", 1.5, 1.0, False),
    ("regression", "huber", np.inf, 2.0, False),
    ("regression", "absolute", 2.0, 1.0, True),
]


def _problem(task, loss, kappa, p, radius=0.05):
    losses = {"logistic": dk.losses.Logistic(), "hinge": dk.losses.Hinge(), "huber": dk.losses.Huber(1.0),
              "absolute": dk.losses.Absolute()}
    metric = dk.GroundMetric(numerical=dk.NormCost(p=p), label=dk.LabelCost(kappa))
    return dk.Problem(loss=losses[loss], ambiguity=dk.Wasserstein(metric, radius=radius), task=task)


def _fit(prob, X, y, weight, method="cutting_plane"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prob.compile(X, y, method, sample_weight=weight).solve()


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-kappa{c[2]:g}-p{c[3]:g}{'-weighted' if c[4] else ''}"
                                             for c in CASES])
def test_warm_started_fit_reaches_the_optimum(case, monkeypatch):
    task, loss, kappa, p, weighted = case
    X, y = _data(400, seed=11, task=task)
    weight = np.random.default_rng(3).integers(1, 4, size=len(y)).astype(float) if weighted else None
    prob = _problem(task, loss, kappa, p)
    reference = _fit(prob, X, y, weight, method="monolithic")
    cold = _fit(prob, X, y, weight)
    levels = []
    real = ws.subsample

    def recording(inst, size, seed=ws.SUBSAMPLE_SEED):
        levels.append(size)
        return real(inst, size, seed)

    monkeypatch.setattr(ws, "SUBSAMPLE_FROM", 100)
    monkeypatch.setattr(ws, "SUBSAMPLE_RATIO", 3)
    monkeypatch.setattr(ws, "subsample", recording)
    warm = _fit(prob, X, y, weight)
    assert levels == [133, 44], levels           # 400 -> 133 -> 44 (< 100: cold)
    for res in (cold, warm):
        assert res.status == "optimal"
        assert res.objective == pytest.approx(reference.objective, rel=2e-6, abs=1e-8)
        assert res.lower_bound <= reference.objective + 1e-6 * max(1.0, abs(reference.objective))
    assert warm.objective == pytest.approx(cold.objective, rel=2e-6, abs=1e-8)


def test_warm_start_recurses_over_levels(monkeypatch):
    """Three levels: 900 -> 300 -> 100, each started from the next smaller one; the fit is the optimum."""
    X, y = _data(900, seed=5)
    prob = _problem("classification", "logistic", 1.0, 1.0)
    levels = []
    real = ws.subsample

    def recording(inst, size, seed=ws.SUBSAMPLE_SEED):
        levels.append((inst.n_samples, size))
        return real(inst, size, seed)

    monkeypatch.setattr(ws, "SUBSAMPLE_FROM", 100)
    monkeypatch.setattr(ws, "SUBSAMPLE_RATIO", 3)
    monkeypatch.setattr(ws, "subsample", recording)
    warm = _fit(prob, X, y, None)
    monkeypatch.undo()
    cold = _fit(prob, X, y, None)
    assert levels == [(900, 300), (300, 100), (100, 33)]
    assert warm.status == cold.status == "optimal"
    assert warm.objective == pytest.approx(cold.objective, rel=2e-6)


def _bound(prob, X, y, weight=None):
    return prob.bind(X, y, sample_weight=weight).fitting_view()


def test_subsample_sizes_order_and_weights():
    X, y = _data(200, seed=2)
    prob = _problem("classification", "logistic", 1.0, 1.0)
    inst = _bound(prob, X, y)
    sub = ws.subsample(inst, 50)
    again = ws.subsample(inst, 50)
    assert sub.n_samples == 50 and sub.sample_weight is None
    assert np.array_equal(sub.data.X, again.data.X) and np.array_equal(sub.y, again.y)   # deterministic
    # the rows are rows of the data, in their original order
    keys = [tuple(r) for r in np.column_stack([inst.data.X, inst.data.Z, inst.y])]
    idx = [keys.index(tuple(r)) for r in np.column_stack([sub.data.X, sub.data.Z, sub.y])]
    assert idx == sorted(idx) and len(set(idx)) == 50
    w = np.arange(1.0, 201.0)
    weighted = _bound(prob, X, y, w)
    subw = ws.subsample(weighted, 50)
    assert subw.sample_weight.sum() == pytest.approx(1.0)
    assert subw.sample_weight == pytest.approx(w[idx] / w[idx].sum())


def test_warm_start_option_off(monkeypatch):
    """``method_options={"warm_start": False}``: phase 1 starts cold whatever the size."""
    X, y = _data(300, seed=6)
    prob = _problem("classification", "logistic", 1.0, 1.0)
    called = []
    monkeypatch.setattr(ws, "SUBSAMPLE_FROM", 100)
    monkeypatch.setattr(ws, "subsample", lambda *a, **k: called.append(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prob.compile(X, y, "cutting_plane").solve(method_options={"warm_start": False})
    assert res.status == "optimal" and not called


def test_subsample_skips_zero_weights():
    """Samples of weight 0 are never drawn (a subsample of them only would have no objective)."""
    X, y = _data(200, seed=8)
    w = np.zeros(200)
    w[::5] = np.arange(1.0, 41.0)                                  # 40 samples of positive weight
    inst = _bound(_problem("classification", "logistic", 1.0, 1.0), X, y, w)
    sub = ws.subsample(inst, 30)
    assert sub.n_samples == 30 and np.all(sub.sample_weight > 0)
    assert sub.sample_weight.sum() == pytest.approx(1.0)
    assert ws.subsample(inst, 100).n_samples == 40                 # all the positive ones


def test_weighted_fit_with_zero_weights_warm_started(monkeypatch):
    X, y = _data(400, seed=9)
    w = np.where(np.arange(400) % 3 == 0, 0.0, 1.0 + np.arange(400) % 4)
    prob = _problem("classification", "logistic", 1.0, 1.0)
    reference = _fit(prob, X, y, w, method="monolithic")
    monkeypatch.setattr(ws, "SUBSAMPLE_FROM", 100)
    warm = _fit(prob, X, y, w)
    assert warm.status == "optimal"
    assert warm.objective == pytest.approx(reference.objective, rel=2e-6)


def test_small_data_is_not_subsampled(monkeypatch):
    X, y = _data(300, seed=4)
    prob = _problem("classification", "logistic", np.inf, 1.0)
    called = []
    monkeypatch.setattr(ws, "subsample", lambda *a, **k: called.append(1))
    res = _fit(prob, X, y, None)
    assert res.status == "optimal" and not called          # 300 < SUBSAMPLE_FROM


# ------------------------------------------------------------------------------ restricted line, kink search
def _master(seed: int, mu_exp: float):
    """A barrier master over a random working set of a small instance, a random interior point and ``mu``."""
    rng = np.random.default_rng(seed)
    X, y = _data(60, seed=seed)
    kappa = [np.inf, 1.0][seed % 2]
    inst = _bound(_problem("classification", ["logistic", "hinge"][seed % 2], kappa, 1.0), X, y)
    every = enumerate_configurations(inst)
    keep = rng.random(every.size) < 0.05
    rows = unique_rows(concat_rows([enumerate_configurations(inst, nominal_only=True),
                                    take_rows(every, np.flatnonzero(keep))]))
    offset, dim, free, cone = parameter_layout(inst)
    master = epi.EpigraphBarrier(inst, rows, free, cone)
    theta = np.zeros(dim)
    theta[:-1] = rng.normal(scale=0.7, size=dim - 1)
    theta[-1] = max(lambda_floor(inst, theta[offset:-1]), cone.lam0) * 1.5 + 0.1
    return master, theta, 10.0 ** mu_exp, rng


@pytest.mark.parametrize("seed", range(6))
def test_restricted_line_is_phi_up_to_a_constant(seed):
    master, theta, mu, rng = _master(seed, [-2, -6, -10][seed % 3])
    value0, _, at = master.settled(theta, mu)
    dim = theta.size
    partial = 0
    for trial in range(4):
        direction = np.zeros(dim)
        # categorical level columns (sparse: few samples touched), sometimes with a numerical one
        columns = rng.choice(np.arange(3, dim - 1), size=1 + trial % 2, replace=False)
        if trial == 3:
            columns = np.r_[columns, 1]
        direction[columns] = rng.normal(size=columns.size)
        line = cen.restricted_line(master, theta, at[1], direction, mu)
        touched = master.terms_touching(np.flatnonzero(direction[:-1]))
        partial += touched.size < master.n_terms                 # the restriction leaves samples out
        base = line(0.0)
        for x in (-0.3, -1e-3, 1e-4, 0.05, 0.2):
            full, _, _ = master.settled(theta + x * direction, mu)
            if not np.isfinite(full):
                assert not np.isfinite(line(x))
                continue
            assert line(x) - base == pytest.approx(full - value0, rel=1e-9, abs=1e-12 * max(1.0, abs(value0)))
    assert partial >= 1


@pytest.mark.parametrize("seed", range(4))
def test_kink_search_never_worsens_and_returns_the_settled_point(seed, monkeypatch):
    monkeypatch.setattr(cen, "KINK_TERMS", 1.0)          # search whatever the components touch
    master, theta, mu, rng = _master(seed, -8)
    value, s, at = master.settled(theta, mu)
    dtheta, _, _, _ = master.direction(theta, s, mu, at)
    columns = np.flatnonzero(np.abs(dtheta[:-1]) >= 0.25 * np.abs(dtheta[:-1]).max())
    point, s2, at2, value2 = cen.kink_search(master, theta, value, s, at, columns, dtheta, 0.5, mu)
    assert value2 <= value
    again, s3, _ = master.settled(point, mu)
    assert value2 == pytest.approx(again, rel=1e-12)
    assert s2 == pytest.approx(s3, rel=1e-12)
    moved = np.flatnonzero(point != theta)
    assert set(moved) <= set(columns)                               # only the searched components move


def test_reversed_components():
    previous = np.array([1.0, -2.0, 0.1, 3.0, 5.0])                 # the last entry is lambda
    now = np.array([-1.0, -2.0, -0.1, -0.5, -5.0])
    # |-1| and |-0.5| >= 0.25 * 2 with a flipped sign; -0.1 is too small; lambda is never searched
    assert list(cen.reversed_components(previous, now)) == [0, 3]
    assert cen.reversed_components(previous, np.zeros(5)).size == 0


def test_kink_search_skips_components_that_touch_many_samples(monkeypatch):
    """The search is for rarely used parameters: components touching more than ``KINK_TERMS`` of the terms are left
    to Newton (the same point comes back, no evaluation)."""
    master, theta, mu, _ = _master(1, -8)
    value, s, at = master.settled(theta, mu)
    dtheta, _, _, _ = master.direction(theta, s, mu, at)
    columns = np.array([1])                                     # a numerical coefficient: every term
    calls = []
    monkeypatch.setattr(cen, "restricted_line", lambda *a, **k: calls.append(1))
    point, _, _, value2 = cen.kink_search(master, theta, value, s, at, columns, dtheta, 0.5, mu)
    assert point is theta and value2 == value and not calls
