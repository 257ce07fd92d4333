"""Matrix numerical costs ``||M (x - x')||_p`` (``dk.NormCost(p, matrix=M)``, ``dk.NormCost.mahalanobis(Sigma)``):
the change of coordinates ``x~ = M x`` of drokit.metrics.linear_map, checked against diagonal weights, the fit on the
transformed data, an independent cvxpy closed form, the worst case and stability, and the refusals."""

import os
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import drokit as dk
from drokit.exceptions import ParameterError

try:  # tests/ is a package
    from .reference import brute_force as bf
except ImportError:  # tests/ is a plain directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from reference import brute_force as bf

NUM = ["a", "b", "c"]
NORMS = [1, 2, np.inf]
RTOL = 1e-6


def mixed(n=40, seed=0, task="classification"):
    """Three numerical columns (different spreads) and two categorical ones."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": 3.0 * rng.normal(size=n), "c": 0.5 * rng.normal(size=n),
                      "r": pd.Categorical(rng.choice(list("xyz"), n), categories=list("xyz")),
                      "s": pd.Categorical(rng.choice(list("uv"), n), categories=list("uv"))})
    signal = X["a"] + 0.3 * X["b"] - X["c"] + (X["r"] == "y") + rng.normal(size=n)
    y = (signal > 0.3).astype(int).to_numpy() if task == "classification" else signal.to_numpy()
    return X, y


def random_matrix(k=3, seed=1):
    """A random well-conditioned (k, k) matrix (condition number below 10)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(k, k)))
    R, _ = np.linalg.qr(rng.normal(size=(k, k)))
    return Q @ np.diag(np.linspace(0.6, 2.5, k)) @ R


def transformed(X, M, names=NUM):
    out = X.copy()
    out[names] = X[names].to_numpy(dtype=float) @ M.T
    return out


def estimator(task, numerical, kappa=np.inf, radius=0.1, **kw):
    metric = dk.GroundMetric(numerical=numerical, label=dk.LabelCost(kappa=kappa))
    cls = dk.DROClassifier if task == "classification" else dk.DRORegressor
    loss = "logistic" if task == "classification" else "huber"
    return cls(loss=loss, ambiguity=dk.Wasserstein(metric, radius=radius), **kw)


def assert_same_fit(a, b, coef_b=None, rtol=RTOL):
    assert a.result_.status == b.result_.status == "optimal"
    assert a.result_.objective == pytest.approx(b.result_.objective, rel=rtol, abs=1e-9)
    coef_b = np.ravel(b.coef_) if coef_b is None else coef_b
    np.testing.assert_allclose(np.ravel(a.coef_), coef_b, rtol=1e-3, atol=2e-4)


# ============================================================ diagonal M = weights=diag(M)
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("kappa", [np.inf, 1.5])
def test_diagonal_matrix_equals_weights(task, p, kappa):
    X, y = mixed(task=task)
    w = np.array([2.0, 0.5, 1.3])
    by_matrix = estimator(task, dk.NormCost(p=p, matrix=np.diag(w)), kappa).fit(X, y)
    by_weights = estimator(task, dk.NormCost(p=p, weights=w), kappa).fit(X, y)
    assert_same_fit(by_matrix, by_weights)
    assert by_matrix.result_.lower_bound == pytest.approx(by_weights.result_.lower_bound, rel=RTOL, abs=1e-9)


# ============================================================ general M = the fit on X M'
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("kappa", [np.inf, 1.5])
def test_general_matrix_equals_transformed_fit(task, p, kappa):
    X, y = mixed(task=task, seed=3)
    M = random_matrix()
    fit = estimator(task, dk.NormCost(p=p, matrix=M), kappa).fit(X, y)
    Xt = transformed(X, M)
    whitened = estimator(task, dk.NormCost(p=p), kappa).fit(Xt, y)
    coef = np.ravel(whitened.coef_).copy()
    coef[:3] = M.T @ coef[:3]                                  # beta = M' beta~
    assert_same_fit(fit, whitened, coef)
    assert fit.intercept_ == pytest.approx(whitened.intercept_, rel=1e-3, abs=2e-4)
    # predictions on raw X are the whitened model's on X M'
    np.testing.assert_allclose(fit.predict(X), whitened.predict(Xt))
    if task == "classification":
        np.testing.assert_allclose(fit.decision_function(X), whitened.decision_function(Xt), atol=1e-6)
        np.testing.assert_allclose(fit.predict_proba(X), whitened.predict_proba(Xt), atol=1e-6)
    assert fit.result_.auxiliary["linear_map"].matrix.shape == (3, 3)


@pytest.mark.parametrize("method, p, loss", [("cutting_plane", 2, "logistic"), ("cutting_plane", np.inf, "hinge"),
                                             ("graph", 2, "logistic"), ("box", 1, "hinge"),
                                             ("monolithic", 1, "smooth_hinge")])
def test_every_method_fits_in_the_new_coordinates(method, p, loss):
    X, y = mixed(seed=18)
    M = random_matrix(seed=19)
    kw = dict(loss=loss, method=method)
    fit = estimator("classification", dk.NormCost(p=p, matrix=M), 1.2).set_params(**kw).fit(X, y)
    whitened = estimator("classification", dk.NormCost(p=p), 1.2).set_params(**kw).fit(transformed(X, M), y)
    assert fit.result_.method == whitened.result_.method == method
    assert fit.result_.objective == pytest.approx(whitened.result_.objective, rel=RTOL)
    np.testing.assert_allclose(fit.decision_function(X), whitened.decision_function(transformed(X, M)),
                               rtol=1e-3, atol=1e-3)
    assert dk.worst_case(fit, X, y).value == pytest.approx(fit.result_.objective, rel=1e-7)


def test_problem_compile_solve_returns_original_coordinates():
    X, y = mixed(seed=20)
    M = random_matrix(seed=21)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, matrix=M))
    problem = dk.Problem("logistic", dk.Wasserstein(metric, radius=0.1))
    compiled = problem.compile(X, y)
    np.testing.assert_allclose(compiled.instance.data.X, X[NUM].to_numpy() @ M.T)   # bound in x~ = M x
    assert compiled.instance.metric.linear_map is not None
    result = compiled.solve()
    clf = estimator("classification", dk.NormCost(p=2, matrix=M)).fit(X, y)
    np.testing.assert_allclose(result.coef, clf.coef_.ravel(), rtol=1e-6, atol=1e-8)
    lmap = result.auxiliary["linear_map"]
    assert lmap.result_back(result) is result                # mapping back twice is a no-op
    np.testing.assert_allclose(lmap.coef_forward(lmap.coef_back(result.coef)), result.coef, atol=1e-12)


def independent_closed_form(Xn, y, M, p, radius, kappa, loss="logistic"):
    """min_{b, beta, lam} lam eps + (1/N) sum_n s_n, s_n >= L(y_n f_n), s_n >= L(-y_n f_n) - lam kappa (finite kappa),
    lam >= lip ||M^{-T} beta||_q: the closed form of an all-numerical classification model under ||M (x - x')||_p
    (belbasi2023 Prop. 1 with the dual norm of ||M .||_p, written in cvxpy from the math)."""
    import cvxpy as cp
    N, n = Xn.shape
    q = bf._dual_exponent(p)
    b, beta, lam, s = cp.Variable(), cp.Variable(n), cp.Variable(nonneg=True), cp.Variable(N)
    f = b + Xn @ beta
    cons = [s >= bf.cvx_loss(loss, cp.multiply(y, f)),
            bf.loss_lip(loss) * cp.norm(np.linalg.inv(M).T @ beta, q) <= lam]
    if np.isfinite(kappa):
        cons.append(s >= bf.cvx_loss(loss, -cp.multiply(y, f)) - lam * kappa)
    prob = cp.Problem(cp.Minimize(lam * radius + cp.sum(s) / N), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value, beta.value


@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("kappa", [np.inf, 0.8])
@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_general_matrix_against_independent_cvxpy(p, kappa, loss):
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(5)
    Xn = rng.normal(size=(14, 3))
    y = np.where(Xn @ np.array([1.0, -0.5, 0.8]) + 0.7 * rng.normal(size=14) > 0, 1.0, -1.0)
    M = random_matrix(seed=7)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=p, matrix=M), label=dk.LabelCost(kappa=kappa))
    clf = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius=0.15)).fit(Xn, y)
    value, beta = independent_closed_form(Xn, y, M, p, 0.15, kappa, loss)
    assert clf.result_.status == "optimal"
    assert clf.result_.objective == pytest.approx(value, rel=1e-5, abs=1e-7)
    if loss == "logistic":                                     # strictly convex: the coefficients are unique
        np.testing.assert_allclose(clf.coef_.ravel(), beta, rtol=1e-3, atol=1e-3)


def test_immutable_columns_are_left_out_of_the_matrix():
    X, y = mixed(seed=4)
    M2 = random_matrix(k=2, seed=2)
    fit = estimator("classification", dk.NormCost(p=2, weights={"b": np.inf}, matrix=M2)).fit(X, y)
    Xt = transformed(X, M2, names=["a", "c"])
    whitened = estimator("classification", dk.NormCost(p=2, weights={"b": np.inf})).fit(Xt, y)
    coef = np.ravel(whitened.coef_).copy()
    coef[[0, 2]] = M2.T @ coef[[0, 2]]
    assert_same_fit(fit, whitened, coef)


def test_dataframe_matrix_is_matched_by_column_names():
    X, y = mixed(seed=6)
    M = random_matrix(seed=3)
    order = ["c", "a", "b"]
    frame = pd.DataFrame(M[:, [2, 0, 1]], columns=order)       # the same M, columns in another order
    by_frame = estimator("classification", dk.NormCost(p=1, matrix=frame)).fit(X, y)
    by_array = estimator("classification", dk.NormCost(p=1, matrix=M)).fit(X, y)
    assert_same_fit(by_frame, by_array)


def test_multinomial_model_maps_back():
    rng = np.random.default_rng(8)
    X = pd.DataFrame({"a": rng.normal(size=45), "b": rng.normal(size=45), "c": rng.normal(size=45)})
    y = np.repeat(["p", "q", "r"], 15)
    X.loc[y == "q", "a"] += 1.0
    X.loc[y == "r", "b"] += 1.0
    M = random_matrix(seed=9)
    fit = estimator("classification", dk.NormCost(p=2, matrix=M), radius=0.05).fit(X, y)
    whitened = estimator("classification", dk.NormCost(p=2), radius=0.05).fit(transformed(X, M), y)
    assert fit.coef_.shape == (3, 3)
    assert fit.result_.objective == pytest.approx(whitened.result_.objective, rel=1e-6)
    np.testing.assert_allclose(fit.coef_, whitened.coef_ @ M, rtol=1e-3, atol=2e-4)
    np.testing.assert_allclose(fit.predict_proba(X), whitened.predict_proba(transformed(X, M)), atol=1e-5)


# ============================================================ Mahalanobis
def test_mahalanobis_cost_of_two_points():
    rng = np.random.default_rng(10)
    A = rng.normal(size=(3, 3))
    Sigma = A @ A.T + 0.5 * np.eye(3)
    cost = dk.NormCost.mahalanobis(Sigma)
    M = cost.matrix
    np.testing.assert_allclose(M.T @ M, np.linalg.inv(Sigma), rtol=1e-10, atol=1e-12)
    x1, x2 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    d = x1 - x2
    expected = np.sqrt(np.einsum("ij,jk,ik->i", d, np.linalg.inv(Sigma), d))
    np.testing.assert_allclose(cost.distance(x1, x2), expected, rtol=1e-10)
    # the dual norm of a linear score: sqrt(beta' Sigma beta)
    beta = rng.normal(size=3)
    assert cost.dual_norm(beta, np.ones(3)) == pytest.approx(np.sqrt(beta @ Sigma @ beta), rel=1e-10)
    # an immutable column that moves costs inf
    gamma = np.array([1.0, 1.0, 1.0, np.inf])
    two = dk.NormCost.mahalanobis(Sigma)
    assert np.isinf(two.distance(np.zeros((1, 4)), np.array([[0, 0, 0, 1.0]]), gamma))[0]


def test_mahalanobis_fit_equals_whitened_fit():
    X, y = mixed(seed=11)
    Sigma = X[NUM].cov()                                          # a DataFrame: matched by names
    fit = estimator("classification", dk.NormCost.mahalanobis(Sigma)).fit(X, y)
    L = np.linalg.cholesky(Sigma.to_numpy())
    whitened_X = X.copy()
    whitened_X[NUM] = np.linalg.solve(L, X[NUM].to_numpy().T).T   # x~ = L^{-1} x: identity covariance
    np.testing.assert_allclose(np.cov(whitened_X[NUM].to_numpy().T), np.eye(3), atol=1e-10)
    whitened = estimator("classification", dk.NormCost(p=2)).fit(whitened_X, y)
    coef = np.ravel(whitened.coef_).copy()
    coef[:3] = np.linalg.solve(L.T, coef[:3])                     # beta = M' beta~ = L^{-T} beta~
    assert_same_fit(fit, whitened, coef)


# ============================================================ worst case and stability
@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("kappa", [np.inf, 1.0])
def test_worst_case_in_original_coordinates(p, kappa):
    X, y = mixed(seed=12)
    M = random_matrix(seed=13)
    cost = dk.NormCost(p=p, matrix=M)
    clf = estimator("classification", cost, kappa, radius=0.2, method="monolithic").fit(X, y)
    wc = dk.worst_case(clf, X, y)
    assert wc.value == pytest.approx(clf.result_.objective, rel=1e-7)
    assert wc.gap == pytest.approx(0.0, abs=1e-7)
    X_atoms, y_atoms, mass = wc.distribution_matrix()
    sample = wc.atoms["sample"].to_numpy()
    moved = cost.distance(X_atoms[NUM].to_numpy(dtype=float), X[NUM].to_numpy()[sample])
    assert np.all(moved < 1e-9)                                  # attained: the numerical features stay put
    np.testing.assert_allclose(X_atoms[NUM].to_numpy(dtype=float), X[NUM].to_numpy()[sample], atol=1e-10)
    total = float(mass @ wc.atoms["cost"].to_numpy())
    assert total <= 0.2 + 1e-9
    if wc.limit is not None and wc.limit.kind == "numerical":
        d = wc.limit.direction
        assert cost.distance(d[None, :], np.zeros((1, 3)))[0] == pytest.approx(1.0, rel=1e-9)
        beta = clf.coef_.ravel()[:3]
        lip = 1.0
        assert lip * abs(beta @ d) == pytest.approx(wc.limit.rate, rel=1e-7)


def test_worst_case_of_a_plain_model_under_a_matrix_ball():
    X, y = mixed(seed=14)
    M = random_matrix(seed=15)
    plain = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.0)).fit(X, y)
    ball = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=2, matrix=M)), radius=0.1)
    wc = dk.worst_case(plain, X, y, ambiguity=ball)
    # the same model whitened: coefficients beta~ = M^{-T} beta on X M'
    ball_t = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=2)), radius=0.1)
    inst = dk.Problem("logistic", ball_t).bind(transformed(X, M), y)
    coef = plain.coef_.ravel().copy()
    coef[:3] = np.linalg.solve(M.T, coef[:3])
    expected = dk.worst_case_value(inst, float(plain.intercept_[0]), coef).value
    assert wc.value == pytest.approx(expected, rel=1e-8)


def test_stability_with_a_matrix_metric():
    X, y = mixed(seed=16)
    Xn = X[NUM]
    M = random_matrix(seed=17)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(Xn, y)
    ot = dk.OTMoment(metric=dk.GroundMetric(numerical=dk.NormCost(p=2, matrix=M)), theta1=1.0, theta2=1.0)
    risk = 1.3 * float(np.mean(np.logaddexp(0, -np.where(y == 1, 1, -1) * clf.decision_function(Xn))))
    res = dk.stability(clf, Xn, y, risk=risk, ambiguity=ot)
    # the same criterion on the transformed data with the whitened model and the unit cost
    whitened = clone(clf).fit(transformed(Xn, M), y)
    whitened.coef_ = clf.coef_ @ np.linalg.inv(M)               # beta~' = beta' M^{-1}
    whitened.result_.coef = whitened.coef_.ravel().copy()
    whitened.result_.intercept = float(clf.intercept_[0])
    whitened.intercept_ = clf.intercept_.copy()
    ref = dk.stability(whitened, transformed(Xn, M), y, risk=risk, ambiguity=dk.OTMoment(theta1=1.0, theta2=1.0))
    assert res.status == ref.status
    assert res.value == pytest.approx(ref.value, rel=1e-6)
    # the moved points come back in the original coordinates
    back = ref.atoms[NUM].to_numpy(dtype=float) @ np.linalg.inv(M).T
    np.testing.assert_allclose(res.atoms[NUM].to_numpy(dtype=float), back, rtol=1e-6, atol=1e-8)
    with pytest.raises(ParameterError, match="feature_stability"):
        dk.feature_stability(clf, Xn, y, risk=risk, ambiguity=ot)


# ============================================================ refusals
@pytest.mark.parametrize("matrix, match", [
    (np.ones((3, 2)), "square"),
    (np.eye(2), "2, 2"),
    (np.diag([1.0, 1.0, 0.0]), "invertible"),
    (np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]]), "invertible"),
    (np.array([[1.0, np.nan, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "finite"),
    ("identity", "array"),
    (pd.DataFrame(np.eye(3), columns=["a", "b", "zz"]), "unknown"),
])
def test_invalid_matrices(matrix, match):
    X, y = mixed(n=20)
    with pytest.raises(ParameterError, match=match):
        estimator("classification", dk.NormCost(p=2, matrix=matrix)).fit(X, y)


def test_invalid_sigma():
    with pytest.raises(ParameterError, match="symmetric"):
        dk.NormCost.mahalanobis(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ParameterError, match="positive definite"):
        dk.NormCost.mahalanobis(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ParameterError, match="finite"):
        dk.NormCost.mahalanobis(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ParameterError, match="square"):
        dk.NormCost.mahalanobis(np.ones((2, 3)))


def test_matrix_with_weights_or_scale():
    X, y = mixed(n=20)
    with pytest.raises(ParameterError, match="fold per-feature weights"):
        estimator("classification", dk.NormCost(p=2, weights={"a": 2.0}, matrix=np.eye(3))).fit(X, y)
    with pytest.raises(ParameterError, match="scale"):
        estimator("classification", dk.NormCost(p=2, scale="std", matrix=np.eye(3))).fit(X, y)


def test_refused_combinations():
    X, y = mixed(n=20)
    cost = dk.NormCost(p=2, matrix=random_matrix())
    with pytest.raises(ParameterError, match="l1_penalty"):
        estimator("classification", cost, l1_penalty=0.1).fit(X, y)
    with pytest.raises(ParameterError, match="adversarial"):
        metric = dk.GroundMetric(numerical=cost)
        dk.DROClassifier(loss=dk.losses.Adversarial("logistic", norm=2, budget=0.1),
                         ambiguity=dk.Wasserstein(metric, radius=0.1)).fit(X, y)
    with pytest.raises(ParameterError, match="l1_penalty"):
        dk.DROClassifier(ambiguity=dk.OTMoment(metric=dk.GroundMetric(numerical=cost), radius=0.1, exponent=1),
                         l1_penalty=0.1).fit(X[NUM], y)
    with pytest.raises(ParameterError, match="Intersection"):
        metric = dk.GroundMetric(numerical=cost)
        ball = dk.Wasserstein(metric, radius=0.5) & dk.Wasserstein(metric, radius=0.5, center=(X[NUM], y))
        dk.DROClassifier(ambiguity=ball).fit(X[NUM], y)
    with pytest.raises(ParameterError, match="change of coordinates"):
        dk.wasserstein_distance(X[NUM], X[NUM] + 0.1, dk.GroundMetric(numerical=cost))


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_mot_dro_with_a_matrix_cost_is_the_whitened_fit(divergence):
    """MOT-DRO with ``||M (x - x')||`` equals the fit with the unit norm on ``X M'`` (coefficients mapped back by
    ``beta = M' beta~``); its worst case equals its objective, with atoms in the original coordinates."""
    X, y = mixed(n=40)
    M = random_matrix()

    def ot(numerical):
        return dk.OTMoment(metric=dk.GroundMetric(numerical=numerical, label=dk.LabelCost(np.inf)), theta1=1.0,
                           theta2=1.0, divergence=divergence, radius=0.1, exponent=1)
    fitted = dk.DROClassifier(ambiguity=ot(dk.NormCost(p=2, matrix=M))).fit(X, y)
    whitened = dk.DROClassifier(ambiguity=ot(dk.NormCost(p=2))).fit(transformed(X, M), y)
    assert fitted.result_.status == "optimal"
    assert fitted.result_.objective == pytest.approx(whitened.result_.objective, rel=1e-6)
    k = len(NUM)
    np.testing.assert_allclose(fitted.coef_.ravel()[:k], M.T @ whitened.coef_.ravel()[:k], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fitted.decision_function(X), whitened.decision_function(transformed(X, M)),
                               rtol=1e-4, atol=1e-5)
    worst = dk.worst_case(fitted, X, y)
    assert worst.value == pytest.approx(fitted.result_.objective, rel=1e-6)
    reference = dk.worst_case(whitened, transformed(X, M), y)
    np.testing.assert_allclose(worst._X_num @ M.T, reference._X_num, rtol=1e-6, atol=1e-8)


# ============================================================ scikit-learn conventions
def test_clone_and_params_round_trip():
    M = random_matrix()
    clf = estimator("classification", dk.NormCost(p=2, matrix=M))
    params = clf.get_params()
    np.testing.assert_array_equal(params["ambiguity__metric__numerical__matrix"], M)
    twin = clone(clf)
    np.testing.assert_array_equal(twin.ambiguity.metric.numerical.matrix, M)
    assert twin.ambiguity.metric.numerical.matrix is not M
    M2 = 2.0 * M
    twin.set_params(ambiguity__metric__numerical__matrix=M2)
    np.testing.assert_array_equal(twin.get_params()["ambiguity__metric__numerical__matrix"], M2)
    X, y = mixed(n=30)
    a = twin.fit(X, y)
    b = estimator("classification", dk.NormCost(p=2, matrix=M2)).fit(X, y)
    assert_same_fit(a, b)
    assert "matrix=" in repr(dk.NormCost(p=2, matrix=np.eye(2)))


def test_scaled_metric_scales_the_matrix():
    M = random_matrix()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights={"b": np.inf}, matrix=M[:2, :2] + np.eye(2)))
    scaled = metric.scaled(3.0)
    np.testing.assert_allclose(scaled.numerical.matrix, 3.0 * (M[:2, :2] + np.eye(2)))
    assert scaled.numerical.weights == {"b": np.inf}
