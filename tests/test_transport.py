"""Exact type-1 Wasserstein distance (drokit.metrics.transport) and the radius rules
(drokit.metrics.radius), checked against independent references: permutation enumeration, the dual
LP on the dense cost matrix, the 1-D CDF formula, hand-counted mismatches, and the thesis's tight
mixture identity (selvi2025 §2.3 of the spec)."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import scipy.stats
from scipy.optimize import linprog

import drokit as dk
from drokit.exceptions import DataError, ParameterError
from drokit.metrics import transport_solvers
from drokit.metrics.radius import (THESIS_AUX_WEIGHT_GRID, THESIS_KAPPA_GRID, THESIS_RADIUS_GRID,
                                   auxiliary_radius, feasible_radius_pairs, mixture_radii,
                                   rule_of_thumb_radius)
from drokit.metrics.transport import wasserstein_distance as W


# ------------------------------------------------------------------------------ references
def pair_cost(x, z, y, x2, z2, y2, gamma, p, delta, cat_p, kappa, regression=False):
    """The ground cost of one pair, written from the formula with Python scalars."""
    num = 0.0
    if len(x):
        terms = []
        for a, b, g in zip(x, x2, gamma):
            if a == b:
                terms.append(0.0)
            elif math.isinf(g):
                return math.inf
            else:
                terms.append(g * abs(a - b))
        num = max(terms) if math.isinf(p) else sum(t ** p for t in terms) ** (1.0 / p)
    cat = 0.0
    for a, b, d in zip(z, z2, delta):
        if a != b:
            if math.isinf(d):
                return math.inf
            cat += d ** cat_p
    cat = cat ** (1.0 / cat_p)
    lab = 0.0
    if y is not None and y != y2:
        if math.isinf(kappa):
            return math.inf
        lab = kappa * (abs(y - y2) if regression else 1.0)
    return num + cat + lab


def cost_matrix(Xp, Zp, yp, Xq, Zq, yq, gamma=None, p=1, delta=None, cat_p=1, kappa=math.inf,
                regression=False):
    n, m = len(Xp), len(Xq)
    gamma = np.ones(Xp.shape[1]) if gamma is None else gamma
    delta = np.ones(Zp.shape[1]) if delta is None else delta
    C = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            C[i, j] = pair_cost(Xp[i], Zp[i], None if yp is None else yp[i], Xq[j], Zq[j],
                                None if yq is None else yq[j], gamma, p, delta, cat_p, kappa,
                                regression)
    return C


def brute_force_permutations(C):
    """min over permutations of the mean matched cost (equal sizes, uniform weights)."""
    n = C.shape[0]
    return min(np.mean(C[np.arange(n), perm]) for perm in itertools.permutations(range(n)))


def dual_lp(C, p, q):
    """The Kantorovich dual, max p.u + q.v s.t. u_i + v_j <= C_ij (finite pairs), dense."""
    n, m = C.shape
    rows = []
    rhs = []
    for i in range(n):
        for j in range(m):
            if np.isfinite(C[i, j]):
                r = np.zeros(n + m)
                r[i] = r[n + j] = 1.0
                rows.append(r)
                rhs.append(C[i, j])
    res = linprog(-np.concatenate([p, q]), A_ub=np.array(rows), b_ub=np.array(rhs),
                  bounds=(None, None), method="highs")
    if res.status == 3:  # unbounded dual: primal infeasible
        return math.inf
    assert res.status == 0, res.message
    return -res.fun


def mixed_frame(rng, n, shift=0.0):
    """Two numerical and two categorical columns; the categoricals declare all their levels, so
    small samples that miss a level still share one schema."""
    return pd.DataFrame({"u": rng.normal(size=n) + shift, "v": rng.normal(size=n),
                         "c1": pd.Categorical(rng.choice(list("abc"), n), categories=list("abc")),
                         "c2": pd.Categorical(rng.choice(list("xy"), n), categories=list("xy"))})


def encode(df):
    """Numerical block and categorical codes of a ``mixed_frame`` (levels are single letters)."""
    X = df[["u", "v"]].to_numpy()
    Z = np.column_stack([[ord(s) for s in df["c1"]], [ord(s) for s in df["c2"]]])
    return X, Z


# ------------------------------------------------------------------------ brute-force checks
@pytest.mark.parametrize("seed", range(4))
def test_matches_permutation_enumeration_mixed_with_labels(seed):
    rng = np.random.default_rng(seed)
    n = 6
    P, Q = mixed_frame(rng, n), mixed_frame(rng, n, shift=0.5)
    yp, yq = rng.choice([-1, 1], n), rng.choice([-1, 1], n)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights={"u": 2.0}),
                             categorical=dk.MismatchCost(weights={"c1": 0.7}),
                             label=dk.LabelCost(kappa=1.5))
    (Xp, Zp), (Xq, Zq) = encode(P), encode(Q)
    C = cost_matrix(Xp, Zp, yp, Xq, Zq, yq, gamma=np.array([2.0, 1.0]), delta=np.array([0.7, 1.0]),
                    kappa=1.5)
    got, plan = W((P, yp), (Q, yq), metric, return_plan=True)
    assert got == pytest.approx(brute_force_permutations(C), abs=1e-10)
    plan = plan.toarray()
    assert np.allclose(plan.sum(1), 1 / n) and np.allclose(plan.sum(0), 1 / n)
    assert np.sum(plan * C) == pytest.approx(got, abs=1e-12)


@pytest.mark.parametrize("p,cat_p", [(2, 1), (np.inf, 2), (3, 0.5)])
def test_matches_dense_dual_lp_unequal_sizes_and_weights(p, cat_p):
    rng = np.random.default_rng(7)
    P, Q = mixed_frame(rng, 7), mixed_frame(rng, 9, shift=1.0)
    yp, yq = rng.choice(["no", "yes"], 7), rng.choice(["no", "yes"], 9)
    wp, wq = rng.random(7), rng.random(9)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=p, weights=[1.0, 0.5]),
                             categorical=dk.MismatchCost(weights=[1.0, 2.0], p=cat_p),
                             label=dk.LabelCost(kappa=0.8))
    (Xp, Zp), (Xq, Zq) = encode(P), encode(Q)
    C = cost_matrix(Xp, Zp, yp, Xq, Zq, yq, gamma=np.array([1.0, 0.5]), p=p,
                    delta=np.array([1.0, 2.0]), cat_p=cat_p, kappa=0.8)
    got, plan = W((P, yp), (Q, yq), metric, weights_p=wp, weights_q=wq, return_plan=True)
    assert got == pytest.approx(dual_lp(C, wp / wp.sum(), wq / wq.sum()), rel=1e-8, abs=1e-10)
    plan = plan.toarray()
    assert np.allclose(plan.sum(1), wp / wp.sum(), atol=1e-9)
    assert np.allclose(plan.sum(0), wq / wq.sum(), atol=1e-9)
    assert plan.min() >= 0


def test_matches_cvxpy_if_installed():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(8, 3)), rng.normal(size=(5, 3)) + 0.4
    wp, wq = rng.random(8), rng.random(5)
    C = cost_matrix(X, np.zeros((8, 0)), None, Y, np.zeros((5, 0)), None, p=2)
    pi = cp.Variable((8, 5), nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, pi))),
                      [cp.sum(pi, axis=1) == wp / wp.sum(), cp.sum(pi, axis=0) == wq / wq.sum()])
    prob.solve()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2))
    assert W(X, Y, metric, weights_p=wp, weights_q=wq) == pytest.approx(prob.value, rel=1e-6)


def test_regression_labels_cost_kappa_abs_difference():
    rng = np.random.default_rng(11)
    X, Y = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    yp, yq = rng.normal(size=6), rng.normal(size=6) + 1.0
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=0.5))
    C = cost_matrix(X, np.zeros((6, 0)), yp, Y, np.zeros((6, 0)), yq, kappa=0.5, regression=True)
    assert W((X, yp), (Y, yq), metric) == pytest.approx(brute_force_permutations(C), abs=1e-10)
    # forcing classification compares the labels as classes: all different -> + kappa
    C2 = cost_matrix(X, np.zeros((6, 0)), yp, Y, np.zeros((6, 0)), yq, kappa=0.5)
    assert W((X, yp), (Y, yq), metric, task="classification") == pytest.approx(
        brute_force_permutations(C2), abs=1e-10)


# ----------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("n", [1, 5, 40])
def test_one_dimensional_equal_weights_is_mean_sorted_difference(n):
    rng = np.random.default_rng(n)
    x, y = rng.normal(size=n), rng.exponential(size=n)
    expected = np.mean(np.abs(np.sort(x) - np.sort(y)))
    assert W(x[:, None], y[:, None]) == pytest.approx(expected, abs=1e-12)
    # a weight gamma scales it
    metric = dk.GroundMetric(numerical=dk.NormCost(weights=3.0))
    assert W(x[:, None], y[:, None], metric) == pytest.approx(3 * expected, abs=1e-12)


def test_one_dimensional_weighted_matches_cdf_formula():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=13), rng.normal(size=21) * 2
    wx, wy = rng.random(13), rng.random(21)
    expected = scipy.stats.wasserstein_distance(x, y, wx, wy)
    assert W(x[:, None], y[:, None], weights_p=wx, weights_q=wy) == pytest.approx(expected, rel=1e-9)


def test_categorical_only_hand_built_mismatch_count():
    # P = {(a,x), (b,y), (c,x)}, Q = {(b,x), (c,y), (a,y)}.  Matching (a,x)->(a,y), (b,y)->(b,x),
    # (c,x)->(c,y) costs 1 each (3 mismatches); no matching does better, since every Q row differs
    # from every P row.
    P = pd.DataFrame({"c1": ["a", "b", "c"], "c2": ["x", "y", "x"]})
    Q = pd.DataFrame({"c1": ["b", "c", "a"], "c2": ["x", "y", "y"]})
    assert W(P, Q) == pytest.approx(3 / 3)
    # weighted mismatch, c2 costs 5: Q's c2 are (x, y, y) and P's (x, y, x), so one x must go to a y
    # (5); the other two rows then match at one c1 mismatch each: (a,x)->(a,y) 5, (b,y)->(c,y) 1,
    # (c,x)->(b,x) 1, total 7 (the three costs 1 above would need two x -> x moves)
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights={"c2": 5.0}))
    assert W(P, Q, metric) == pytest.approx(7 / 3)
    # p = 2: D = sqrt(sum_l delta_l^2 1[z_l != z'_l]); a row mismatched in both columns costs sqrt 2
    metric = dk.GroundMetric(categorical=dk.MismatchCost(p=2))
    P1, Q1 = P.iloc[:1], Q.iloc[1:2]  # (a,x) and (c,y): levels P1 lacks
    assert W(P1, Q1, unseen_levels="allow") == pytest.approx(2.0)
    assert W(P1, Q1, metric, unseen_levels="allow") == pytest.approx(math.sqrt(2))
    # one-to-many: (a,x) spreads over Q: (1 + 2 + 1) / 3 under the count
    assert W(P1, Q, unseen_levels="allow") == pytest.approx(4 / 3)


# ------------------------------------------------------------------------- metric axioms
def test_symmetry_identity_and_triangle_inequality():
    rng = np.random.default_rng(2)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights={"v": 0.3}),
                             categorical=dk.MismatchCost(weights={"c2": 2.0}),
                             label=dk.LabelCost(kappa=1.0))
    for _ in range(5):
        sizes = rng.integers(3, 15, size=3)
        S = [(mixed_frame(rng, s, shift=rng.normal()), rng.choice([0, 1], s)) for s in sizes]
        ws = [rng.random(s) for s in sizes]
        d = {}
        for i, j in itertools.permutations(range(3), 2):
            d[i, j] = W(S[i], S[j], metric, weights_p=ws[i], weights_q=ws[j])
        for i, j in itertools.permutations(range(3), 2):
            assert d[i, j] == pytest.approx(d[j, i], rel=1e-8, abs=1e-10)
        for i, j, k in itertools.permutations(range(3)):
            assert d[i, k] <= d[i, j] + d[j, k] + 1e-9
        assert W(S[0], S[0], metric, weights_p=ws[0], weights_q=ws[0]) == pytest.approx(0, abs=1e-10)
    # W(P, shuffled P) = 0
    X, y = S[1]
    perm = rng.permutation(len(X))
    assert W((X, y), (X.iloc[perm].reset_index(drop=True), y[perm]), metric) == pytest.approx(0, abs=1e-12)


# ------------------------------------------------------------------------------------ labels
def test_label_cost_lower_bound_and_equality():
    rng = np.random.default_rng(4)
    kappa = 0.7
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=kappa))
    for _ in range(5):
        n, m = rng.integers(4, 20, size=2)
        X, Y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
        yp, yq = rng.choice([0, 1], n), rng.choice([0, 1], m)
        gap = abs(np.mean(yp == 1) - np.mean(yq == 1))
        # every coupling moves at least |difference of class proportions| across labels
        assert W((X, yp), (Y, yq), metric) >= kappa * gap - 1e-12
    # same features, 3 of 10 labels flipped in one direction: the identity coupling is optimal
    X = rng.normal(size=(10, 2)) * 100  # far apart: moving features never pays
    y = np.array([0] * 5 + [1] * 5)
    y2 = y.copy()
    y2[:3] = 1
    assert W((X, y), (X, y2), metric) == pytest.approx(kappa * 0.3)


def test_infinite_kappa_different_proportions_is_inf():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(6, 2))
    y, y2 = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 1, 1])
    assert W((X, y), (X, y2)) == np.inf
    assert W((X, y), (X, y2), return_plan=True) == (np.inf, None)
    # equal proportions: finite, and a huge finite kappa gives the same value
    y3 = np.array([1, 0, 1, 0, 1, 0])
    w_inf = W((X, y), (X + 0.1, y3))
    big = dk.GroundMetric(label=dk.LabelCost(kappa=1e6))
    assert np.isfinite(w_inf)
    assert W((X, y), (X + 0.1, y3), big) == pytest.approx(w_inf, rel=1e-9)
    # and it is the sum of the per-class distances (the LP splits by class)
    per_class = sum(np.mean(y == c) * W(X[y == c], (X + 0.1)[y3 == c]) for c in (0, 1))
    assert w_inf == pytest.approx(per_class, rel=1e-9)
    # class proportions given by weights
    assert np.isfinite(W((X, y), (X, y2), weights_q=[1.5, 1.5, 0.75, 0.75, 0.75, 0.75]))


def test_immutable_features_split_the_problem():
    rng = np.random.default_rng(8)
    P = pd.DataFrame({"u": rng.normal(size=8), "g": ["m", "f"] * 4})
    Q = pd.DataFrame({"u": rng.normal(size=8), "g": ["m"] * 5 + ["f"] * 3})
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights={"g": np.inf}))
    assert W(P, Q, metric) == np.inf
    Q2 = pd.DataFrame({"u": rng.normal(size=4), "g": ["f", "m", "m", "f"]})
    expected = sum(0.5 * W(P[P.g == g][["u"]], Q2[Q2.g == g][["u"]]) for g in ("m", "f"))
    assert W(P, Q2, metric) == pytest.approx(expected, rel=1e-10)
    # numerical immutable feature (gamma = inf)
    metric = dk.GroundMetric(numerical=dk.NormCost(weights=[1.0, np.inf]))
    X = np.column_stack([rng.normal(size=4), [0, 0, 1, 1]])
    Y = np.column_stack([rng.normal(size=4), [1, 0, 1, 0]])
    C = cost_matrix(X, np.zeros((4, 0)), None, Y, np.zeros((4, 0)), None, gamma=np.array([1.0, np.inf]))
    assert W(X, Y, metric) == pytest.approx(brute_force_permutations(C), abs=1e-12)
    assert W(X, Y[[0, 0, 2, 2]], metric) == np.inf


# --------------------------------------------------------------------------------- solvers
def test_assignment_fast_path_equals_lp_and_column_generation(monkeypatch):
    rng = np.random.default_rng(9)
    for n in (2, 5, 30):
        C = rng.random((n, n)) * rng.integers(1, 10)
        p = np.full(n, 1 / n)
        r, c, v = transport_solvers._assignment(C, p)
        rows, cols = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
        x, _ = transport_solvers._support_lp(rows, cols, C.ravel(), p, p)
        assert np.dot(v, C[r, c]) == pytest.approx(np.dot(x, C.ravel()), abs=1e-10)
    # the column-generation path (forced on a small problem) equals the full LP
    for a, b in ((40, 55), (60, 60), (33, 7)):
        X, Y = rng.normal(size=(a, 3)), rng.normal(size=(b, 3)) + 0.5
        wp, wq = rng.random(a), rng.random(b)
        full = W(X, Y, weights_p=wp, weights_q=wq)
        monkeypatch.setattr(transport_solvers, "_DENSE_LP_MAX_PAIRS", 0)
        cg, plan = W(X, Y, weights_p=wp, weights_q=wq, return_plan=True)
        monkeypatch.undo()
        assert cg == pytest.approx(full, rel=1e-8)
        assert np.allclose(np.asarray(plan.sum(1)).ravel(), wp / wp.sum(), atol=1e-9)
        assert np.allclose(np.asarray(plan.sum(0)).ravel(), wq / wq.sum(), atol=1e-9)
    # uniform unequal sizes through column generation against the 1-D closed form
    x, y = rng.normal(size=300), rng.normal(size=170) + 0.2
    monkeypatch.setattr(transport_solvers, "_DENSE_LP_MAX_PAIRS", 0)
    assert W(x[:, None], y[:, None]) == pytest.approx(scipy.stats.wasserstein_distance(x, y), rel=1e-8)


def test_northwest_corner_support_is_feasible():
    rng = np.random.default_rng(10)
    for a, b in ((1, 4), (4, 1), (5, 5), (7, 3), (3, 11)):
        p, q = rng.random(a), rng.random(b)
        p, q = p / p.sum(), q / q.sum()
        rows, cols = transport_solvers._northwest_corner(p, q)
        assert set(rows) == set(range(a)) and set(cols) == set(range(b))
        x, _ = transport_solvers._support_lp(rows, cols, np.ones(rows.size), p, q)
        assert np.dot(x, np.ones(rows.size)) == pytest.approx(1.0)


# ---------------------------------------------------------------------- mixture identity
@pytest.mark.parametrize("p", [1, 2])
def test_thesis_tight_mixture_identity(p):
    rng = np.random.default_rng(12)
    N, N_hat = 6, 9
    X, Xh = rng.normal(size=(N, 2)), rng.normal(size=(N_hat, 2)) + 0.7
    y, yh = rng.choice([-1, 1], N), rng.choice([-1, 1], N_hat)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=p), label=dk.LabelCost(kappa=1.0))
    dist = W((X, y), (Xh, yh), metric)
    lam = N / (N + N_hat)
    Xmix, ymix = np.vstack([X, Xh]), np.concatenate([y, yh])
    wmix = np.concatenate([np.full(N, lam / N), np.full(N_hat, (1 - lam) / N_hat)])
    assert W((X, y), (Xmix, ymix), metric, weights_q=wmix) == pytest.approx((1 - lam) * dist, rel=1e-8)
    assert W((Xh, yh), (Xmix, ymix), metric, weights_q=wmix) == pytest.approx(lam * dist, rel=1e-8)
    eps, eps_hat = mixture_radii(dist, N, N_hat)
    assert (eps, eps_hat) == pytest.approx(((1 - lam) * dist, lam * dist))
    assert eps + eps_hat == pytest.approx(dist)
    assert feasible_radius_pairs([eps], [eps_hat], dist) == [(eps, eps_hat)]
    # with mixed data and an auxiliary weight w != 1 (lambda = N / (N + w N_hat))
    P, Ph = mixed_frame(rng, N), mixed_frame(rng, N_hat, shift=1.0)
    dist = W(P, Ph)
    w = 0.3
    lam = N / (N + w * N_hat)
    mix = pd.concat([P, Ph], ignore_index=True)
    wmix = np.concatenate([np.full(N, lam / N), np.full(N_hat, (1 - lam) / N_hat)])
    eps, eps_hat = mixture_radii(dist, N, N_hat, aux_weight=w)
    assert W(P, mix, weights_q=wmix) == pytest.approx(eps, rel=1e-8)
    assert W(Ph, mix, weights_q=wmix) == pytest.approx(eps_hat, rel=1e-8)


# ------------------------------------------------------------------------- schema and errors
def test_unseen_level_in_q_raises_naming_column_and_level():
    P = pd.DataFrame({"u": [0.0, 1.0], "c": ["a", "b"]})
    Q = pd.DataFrame({"u": [0.0, 1.0], "c": ["a", "zz"]})
    with pytest.raises(DataError, match=r"'c'.*zz.*unseen_levels='allow'"):
        W(P, Q)
    assert W(P, Q, unseen_levels="allow") == pytest.approx(0.5)
    with pytest.raises(ParameterError, match="unseen_levels"):
        W(P, Q, unseen_levels="ignore")
    # a level declared in a pandas Categorical (of P or of Q) is fine
    Pc = P.assign(c=pd.Categorical(["a", "b"], categories=["a", "b", "zz"]))
    assert W(Pc, Q) == pytest.approx(0.5)
    Qc = Q.assign(c=pd.Categorical(["a", "zz"], categories=["a", "b", "zz"]))
    assert W(P, Qc) == pytest.approx(0.5)
    # a level present only in P is fine
    assert W(Q, P.assign(c=["a", "a"])) == pytest.approx(0.5)
    # numpy arrays with categorical_features
    A = np.array([[0.0, 1], [1.0, 2]])
    B = np.array([[0.0, 1], [1.0, 3]])
    with pytest.raises(DataError, match=r"'x1'.*3"):
        W(A, B, categorical_features=[1])
    assert W(B, B, categorical_features=[1]) == 0.0
    assert W(A, B, categorical_features=[1], unseen_levels="allow") == pytest.approx(0.5)
    # a given schema (e.g. a fitted model's schema_) is used for both samples and not modified
    schema = dk.schema.FeatureSchema.infer(A, categorical_features=[1])
    assert W(A, B, schema=schema, unseen_levels="allow") == pytest.approx(0.5)
    assert schema.categories == [[1.0, 2.0]]


def test_column_mismatch_and_order():
    P = pd.DataFrame({"u": [0.0, 1.0], "v": [1.0, 2.0]})
    with pytest.raises(DataError, match=r"lacks \['v'\].*extra \['w'\]"):
        W(P, pd.DataFrame({"u": [0.0, 1.0], "w": [1.0, 2.0]}))
    with pytest.raises(DataError, match="Q has 3"):
        W(np.zeros((2, 2)), np.zeros((2, 3)))
    # columns are matched by name, not position
    assert W(P, P[["v", "u"]]) == 0.0


@pytest.mark.parametrize("P,Q,match", [
    (np.array([[0.0], [np.nan]]), np.zeros((2, 1)), "NaN"),
    (np.zeros((2, 1)), np.array([[0.0], [np.inf]]), "NaN"),
    (np.zeros((0, 2)), np.zeros((2, 2)), "empty"),
    (np.zeros((2, 1)), np.zeros((0, 1)), "empty"),
    (np.zeros(3), np.zeros(3), "2-dimensional"),
    ((np.zeros((2, 1)), [0, 1]), np.zeros((2, 1)), "both"),
    ((np.zeros((2, 1)), [0, 1, 1]), (np.zeros((2, 1)), [0, 1]), "different lengths"),
    ((np.zeros((2, 1)), [0.0, np.nan]), (np.zeros((2, 1)), [0, 1]), "NaN"),
    ((np.zeros((2, 1)), ["a", None]), (np.zeros((2, 1)), ["a", "b"]), "missing"),
    ((np.zeros((2, 1)), [0, 1], 3), np.zeros((2, 1)), "tuple"),
])
def test_bad_inputs_raise_data_error(P, Q, match):
    with pytest.raises(DataError, match=match):
        W(P, Q)


def test_weights():
    rng = np.random.default_rng(13)
    X, Y = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    # integer weights = repeated rows
    k = np.array([1, 3, 2, 1, 2])
    assert W(X, Y, weights_p=k) == pytest.approx(W(np.repeat(X, k, axis=0), Y), rel=1e-9)
    # scale invariance, zero weights = dropped rows, plan rows of dropped atoms are empty
    assert W(X, Y, weights_p=7 * k) == pytest.approx(W(X, Y, weights_p=k), rel=1e-12)
    w0 = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
    val, plan = W(X, Y, weights_p=w0, return_plan=True)
    assert val == pytest.approx(W(X[[0, 2, 4]], Y, weights_p=[1, 2, 1]), rel=1e-9)
    assert sp.issparse(plan) and plan.shape == (5, 4)
    assert np.allclose(np.asarray(plan.sum(1)).ravel(), w0 / w0.sum())
    for bad, match in [([1, -1, 1, 1, 1], "negative"), ([0, 0, 0, 0, 0], "sum to 0"),
                       ([1, 1, 1], "shape"), ([1, np.nan, 1, 1, 1], "NaN")]:
        with pytest.raises(DataError, match=match):
            W(X, Y, weights_p=bad)


def test_metric_and_task_arguments_are_checked():
    X = np.zeros((2, 1))
    with pytest.raises(ParameterError, match="GroundMetric"):
        W(X, X, metric=dk.NormCost())
    with pytest.raises(ParameterError, match="task"):
        W((X, [0, 1]), (X, [0, 1]), task="ranking")
    with pytest.raises(ParameterError, match="unknown column"):
        W(X, X, dk.GroundMetric(numerical=dk.NormCost(weights={"nope": 2.0})))
    with pytest.raises(DataError, match="numeric"):
        W((X, ["a", "b"]), (X, ["a", "b"]), task="regression")


def test_five_hundred_mixed_samples_are_fast():
    rng = np.random.default_rng(14)
    P, Q = mixed_frame(rng, 500), mixed_frame(rng, 500, shift=0.3)
    yp, yq = rng.choice([0, 1], 500), rng.choice([0, 1], 500)
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=1.0))
    start = time.perf_counter()
    value = W((P, yp), (Q, yq), metric)
    assert time.perf_counter() - start < 3.0  # typically ~0.03 s; loose for slow CI machines
    assert np.isfinite(value) and value > 0


# ------------------------------------------------------------------------------------ radius
def test_radius_rules_and_grids():
    assert rule_of_thumb_radius(100) == pytest.approx(0.1)
    assert rule_of_thumb_radius(400, scale=2.0) == pytest.approx(0.1)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ParameterError):
            rule_of_thumb_radius(bad)
    with pytest.raises(ParameterError):
        rule_of_thumb_radius(10, scale=-1)
    assert THESIS_RADIUS_GRID == (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 0, 1, 2, 5, 10)
    assert 0 in THESIS_AUX_WEIGHT_GRID
    assert THESIS_KAPPA_GRID(9) == (1.0, 3.0, 9.0)
    assert THESIS_KAPPA_GRID(1) == (1.0,)
    with pytest.raises(ParameterError):
        THESIS_KAPPA_GRID(0)


def test_feasible_radius_pairs_and_auxiliary_radius():
    pairs = feasible_radius_pairs(THESIS_RADIUS_GRID, THESIS_RADIUS_GRID, 1.5)
    assert all(a + b >= 1.5 for a, b in pairs)
    assert (1.0, 1.0) in pairs and (1.0, 0.1) not in pairs and (0.0, 2.0) in pairs
    assert len(pairs) == sum(a + b >= 1.5 for a in THESIS_RADIUS_GRID for b in THESIS_RADIUS_GRID)
    assert feasible_radius_pairs([1, 2], [3], np.inf) == []
    assert len(feasible_radius_pairs([0], [0, 1], 0.0)) == 2
    with pytest.raises(ParameterError):
        feasible_radius_pairs([-1], [1], 0.5)
    with pytest.raises(ParameterError):
        feasible_radius_pairs([1], [1], -0.5)
    rng = np.random.default_rng(15)
    X, Y = rng.normal(size=(6, 2)), rng.normal(size=(8, 2)) + 1
    assert auxiliary_radius(X, Y) == pytest.approx(W(X, Y))
    assert auxiliary_radius(X, Y, slack=0.25) == pytest.approx(W(X, Y) + 0.25)
    y, yh = np.array([0, 1] * 3), np.array([0] * 8)
    assert auxiliary_radius((X, y), (Y, yh)) == np.inf
    with pytest.raises(ParameterError):
        auxiliary_radius(X, Y, slack=-1)
    with pytest.raises(ParameterError):
        mixture_radii(np.inf, 3, 4)
    assert mixture_radii(0.0, 3, 4) == (0.0, 0.0)
    eps, eps_hat = mixture_radii(2.0, 10, 30)
    assert eps_hat / eps == pytest.approx(10 / 30)
