"""The multinomial DRO logistic model (drokit.models.multinomial, drokit.certificates.multinomial, issue 20 item 7) against an independent cvxpy model
written from the module docstring (every configuration and label enumerated), against scikit-learn's multinomial
logistic regression at radius 0, against the binary model at K = 2, and its certificate (weak duality, a mutation)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import drokit as dk
import drokit.certificates.multinomial as mb
import drokit.models.multinomial as mn
from drokit.reformulations.multinomial import multinomial_rows

cp = pytest.importorskip("cvxpy")

LEVELS = (3, 2)


def _data(N=24, K=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, 2))
    z = np.column_stack([rng.integers(0, a, N) for a in LEVELS])
    W, C = rng.normal(size=(K, 2)), rng.normal(size=(K, 3))
    y = np.argmax(x @ W.T + C[:, z[:, 0]].T + rng.gumbel(size=(N, K)), axis=1)
    X = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": pd.Categorical(z[:, 0], categories=[0, 1, 2]),
                      "d": pd.Categorical(z[:, 1], categories=[0, 1])})
    return X, y, x, z


def _reference(x, z, y, K, eps, kappa, p=2, gamma=(1.0, 1.0), delta=(1.0, 1.0), weights=None):
    """``min lambda eps + sum_n p_n s_n``, ``s_n >= LSE_k f_k(x_n, z') - f_{y'}(x_n, z') - lambda (d(z_n, z') + kappa
    1[y' != y_n])`` for every configuration ``z'`` and reachable label ``y'``, ``||Gamma^{-1} (w_k - w_j)||_* <=
    lambda`` for every pair, in cvxpy atoms."""
    N = len(y)
    pn = np.full(N, 1.0 / N) if weights is None else np.asarray(weights, float) / np.sum(weights)
    Wx, Wc, Wd, b = cp.Variable((K, 2)), cp.Variable((K, 2)), cp.Variable((K, 1)), cp.Variable(K)
    lam, s = cp.Variable(nonneg=True), cp.Variable(N)
    q = {1: np.inf, 2: 2, np.inf: 1}[p]
    cons = [cp.norm(cp.multiply(1 / np.asarray(gamma), Wx[k] - Wx[j]), q) <= lam
            for k in range(K) for j in range(k + 1, K)] if eps > 0 else []
    for c1 in range(LEVELS[0]):
        for c2 in range(LEVELS[1]):
            zc, zd = np.zeros(2), np.zeros(1)
            if c1:
                zc[c1 - 1] = 1
            if c2:
                zd[0] = 1
            D = delta[0] * (z[:, 0] != c1) + delta[1] * (z[:, 1] != c2)
            F = x @ Wx.T + np.ones((N, 1)) @ (Wc @ zc + Wd @ zd + b)[None, :]
            for yp in range(K):
                idx = np.flatnonzero(np.ones(N, bool) if np.isfinite(kappa) else y == yp)
                cost = D[idx] + (kappa * (y[idx] != yp) if np.isfinite(kappa) else 0.0)
                if eps == 0:
                    idx = idx[cost == 0]
                    cost = cost[cost == 0]
                if idx.size:
                    cons.append(s[idx] >= cp.log_sum_exp(F[idx], axis=1) - F[idx, yp] - lam * cost)
    prob = cp.Problem(cp.Minimize(eps * lam + pn @ s), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value


def _metric(kappa, p=2):
    return dk.GroundMetric(numerical=dk.NormCost(p=p), categorical=dk.MismatchCost(), label=dk.LabelCost(kappa))


def _assert_certified(res, ref):
    assert res.status == "optimal"
    assert res.auxiliary["lower_bound"]["source"] == "lagrangian", res.auxiliary["lower_bound"]
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref + 1e-8 * abs(ref)
    assert res.relative_gap <= 1e-6


@pytest.mark.parametrize("kappa", [np.inf, 1.0])
@pytest.mark.parametrize("eps,p", [(0.0, 2), (0.1, 2), (0.5, 2), (0.2, 1), (0.2, np.inf)])
def test_fit_equals_the_enumerated_cvxpy_model_and_is_certified(kappa, eps, p):
    X, y, x, z = _data()
    ref = _reference(x, z, y, 3, eps, kappa, p=p)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(kappa, p), eps)).fit(X, y)
    _assert_certified(clf.result_, ref)
    cut = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(kappa, p), eps), method="cutting_plane").fit(X, y)
    _assert_certified(cut.result_, ref)
    assert cut.result_.method == "cutting_plane" and cut.result_.n_configuration_rows <= cut.result_.n_enumeration_rows
    assert clf.coef_.shape == (3, 5) and np.allclose(clf.coef_.sum(axis=0), 0) and np.isclose(clf.intercept_.sum(), 0)


def test_sample_weights_are_repeated_rows_and_four_classes():
    X, y, x, z = _data(N=20, K=4, seed=3)
    w = np.random.default_rng(1).integers(1, 4, size=20)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(1.5), 0.2)).fit(X, y, sample_weight=w)
    _assert_certified(clf.result_, _reference(x, z, y, 4, 0.2, 1.5, weights=w))
    rep = np.repeat(np.arange(20), w)
    again = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(1.5), 0.2)).fit(X.iloc[rep], y[rep])
    assert again.result_.objective == pytest.approx(clf.result_.objective, rel=1e-6)


def test_radius_zero_is_sklearns_multinomial_logistic_regression():
    from sklearn.linear_model import LogisticRegression
    X, y, _, _ = _data(N=60, seed=5)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(np.inf), 0.0)).fit(X, y)
    design = pd.get_dummies(X, columns=["c", "d"], drop_first=True).astype(float)
    sk = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000).fit(design, y)
    proba = sk.predict_proba(design)
    log_loss = -np.mean(np.log(proba[np.arange(60), y]))
    assert clf.result_.objective == pytest.approx(log_loss, rel=1e-7)
    np.testing.assert_allclose(clf.predict_proba(X), proba, atol=1e-4)
    assert (clf.predict(X) == sk.predict(design)).mean() >= 0.98


def test_two_classes_through_the_multinomial_program_equal_the_binary_model():
    """At K = 2 the multinomial program is the binary one (``w = w_2 - w_1``): same optimal value, certified."""
    X, y, _, _ = _data(N=24, K=2, seed=7)
    for kappa in (np.inf, 1.0):
        problem = dk.Problem("logistic", dk.Wasserstein(_metric(kappa), 0.15))
        multi, _ = mn.fit_multinomial(problem, X, y, np.unique(y))
        binary = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(kappa), 0.15)).fit(X, y).result_
        assert multi.objective == pytest.approx(binary.objective, rel=1e-6)
        assert multi.auxiliary["lower_bound"]["source"] == "lagrangian"


def _full_point(eps, kappa, metric=None):
    """The exact restricted dual over every row (``_kkt_point`` on all of them) at radius ``eps``."""
    X, y, x, z = _data()
    problem = dk.Problem("logistic", dk.Wasserstein(metric or _metric(kappa), eps))
    inst, label, kap = mn.bind(problem, X, y, np.unique(y))
    rows = multinomial_rows(inst, label, 3, kap)
    Q = np.full((rows.size, 3), 1.0 / 3)
    mass, Q = mb._kkt_point(inst, rows, Q, 3)
    return inst, rows, mass, Q


@pytest.mark.parametrize("kappa", [np.inf, 1.0])
def test_weak_duality_at_the_dual_point_of_a_larger_ball(kappa):
    """The dual point of the radius-0.5 problem, evaluated for radius 0.1, stays below the radius-0.1 optimum (its
    own problem's optimum is well above); random masses and class distributions too."""
    X, y, x, z = _data()
    ref = _reference(x, z, y, 3, 0.1, kappa)
    big, rows, mass, Q = _full_point(0.5, kappa)
    assert mb.lagrangian_bound(big, rows, mass, Q, 3) > ref + 1e-2
    small, _, _ = mn.bind(dk.Problem("logistic", dk.Wasserstein(_metric(kappa), 0.1)), X, y, np.unique(y))
    assert mb.lagrangian_bound(small, rows, mass, Q, 3) <= ref + 1e-9
    rng = np.random.default_rng(2)
    values = [mb.lagrangian_bound(small, rows, rng.exponential(size=rows.size) * (rng.random(rows.size) < 0.5),
                                  rng.dirichlet(np.ones(3), size=rows.size), 3) for _ in range(6)]
    assert all(v <= ref + 1e-9 for v in values), values
    assert sum(np.isfinite(values)) >= 3           # the repair succeeds: the check is not vacuous


def test_mutation_without_the_flow_cost_breaks_weak_duality(monkeypatch):
    """The pairwise cones' price ``D(G)`` left out of the budget: with only the numerical features mutable (so the
    budget is all ``D``), the larger ball's dual point then exceeds the certified upper bound of the smaller ball's
    optimum (so the test above can fail)."""
    X, y, _, _ = _data()
    numerical_only = dk.GroundMetric(numerical=dk.NormCost(p=2), categorical=dk.MismatchCost(weights=np.inf))
    upper = dk.DROClassifier(ambiguity=dk.Wasserstein(numerical_only, 0.1)).fit(X, y).result_.upper_bound
    _, rows, mass, Q = _full_point(0.5, np.inf, numerical_only)
    small, _, _ = mn.bind(dk.Problem("logistic", dk.Wasserstein(numerical_only, 0.1)), X, y, np.unique(y))
    assert mb.lagrangian_bound(small, rows, mass, Q, 3) <= upper
    monkeypatch.setattr(mb, "_flow_cost", lambda G, gamma, p: 0.0)
    assert mb.lagrangian_bound(small, rows, mass, Q, 3) > upper + 1e-3


def test_estimator_api_with_string_labels():
    X, y, _, _ = _data()
    labels = np.array(["low", "mid", "high"])[y]
    clf = dk.DROClassifier().fit(X, labels)
    assert list(clf.classes_) == ["high", "low", "mid"]
    proba = clf.predict_proba(X)
    assert proba.shape == (24, 3) and np.allclose(proba.sum(axis=1), 1.0)
    scores = clf.decision_function(X)
    assert scores.shape == (24, 3)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(proba, axis=1)])
    assert 0.0 <= clf.score(X, labels) <= 1.0
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X))


def test_clear_errors():
    X, y, _, _ = _data()
    with pytest.raises(dk.DataError, match="OneVsRestClassifier"):
        dk.DROClassifier(loss="hinge").fit(X, y)
    with pytest.raises(dk.ParameterError, match="no multinomial version"):
        dk.DROClassifier(method="graph").fit(X, y)
    with pytest.raises(dk.ParameterError, match="penalty"):
        dk.DROClassifier(l2_penalty=0.1).fit(X, y)
    with pytest.raises(dk.ProblemTooLargeError, match="OneVsRestClassifier"):
        dk.DROClassifier(max_configurations=100).fit(X, y)


def test_time_limit_reaches_the_solver():
    """``time_limit`` bounds the conic solve: a limit far below the solve's time raises SolverError (status
    "time_limit"), never a silent answer."""
    X, y, _, _ = _data(N=60, K=4, seed=9)
    with pytest.raises(dk.SolverError) as info:
        dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(1.0), 0.2), time_limit=1e-4).fit(X, y)
    assert info.value.status == "time_limit"


def test_binary_only_evaluations_say_so():
    X, y, _, _ = _data()
    clf = dk.DROClassifier().fit(X, y)
    for evaluate in (lambda: dk.worst_case(clf, X, y), lambda: dk.stability(clf, X, y, risk=1.5)):
        with pytest.raises(dk.DataError, match="multinomial model of 3 classes"):
            evaluate()
