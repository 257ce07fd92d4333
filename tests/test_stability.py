"""The stability criterion on fitted models: closed-form d-transforms against a grid search, the exact linear
adversary against brute-force enumeration of every categorical configuration (FiniteCandidates), the moved
points of the most sensitive distribution against the model and the metric, gradient ascent against the
exact adversary, the conic cross-check, and bad input."""

import itertools

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.evaluation.stability import (FiniteCandidates, FixedLosses, GradientAdversary, Squared, ZeroOne,
                                         bind_model, d_transform, mlp_loss_and_grad, solve_stability)
from drokit.losses import Absolute, Hinge, Huber, Logistic, Pinball, SmoothHinge

LOSSES = [Logistic(), Hinge(), Huber(0.7), SmoothHinge(), Absolute(), Pinball(0.3), Squared(), ZeroOne()]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: l.name)
def test_d_transform_matches_grid_search(loss):
    """T(h, a, e) = max_v h L(v) - a (v - e)^2: the closed form is at least the best of 240,001 grid points
    (up to the grid's resolution) and equals the objective at its own maximizer."""
    rng = np.random.default_rng(1)
    grid = np.linspace(-40, 40, 40_001)
    for h, a in [(0.3, 1.0), (5.0, 0.2), (20.0, 0.5), (1.0, 3.0), (2.0, 0.1), (9.0, 1.0)]:
        e = rng.normal(scale=3, size=60)
        T, v = d_transform(loss, h, a, e)
        if isinstance(loss, Squared) and h >= a:
            assert np.all(np.isinf(T))
            continue
        v_grid = e[:, None] + grid[None, :]
        best = np.max(h * loss.value(v_grid) - a * (v_grid - e[:, None]) ** 2, axis=1)
        at_v = h * loss.value(v) - a * (v - e) ** 2
        np.testing.assert_allclose(at_v, T, rtol=1e-12, atol=1e-12)
        assert np.all(T >= best - 1e-9)  # (T <= the true max: T is the objective at its own v)


def test_logistic_transform_picks_the_global_of_two_local_maxima():
    """c = h / (2a) > 4 gives two local maxima; the transform must return the larger one."""
    h, a = 40.0, 1.0
    e = np.linspace(-6, 6, 61)
    T, v = d_transform(Logistic(), h, a, e)
    grid = e[:, None] + np.linspace(-30, 0, 150_001)[None, :]
    best = np.max(h * np.logaddexp(0, -grid) - a * (grid - e[:, None]) ** 2, axis=1)
    np.testing.assert_allclose(T, best, rtol=0, atol=1e-5)
    assert np.all(T >= best - 1e-9)


# ----------------------------------------------------------------- mixed data, brute force
def _mixed(seed=0, n=14):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "c": pd.Categorical(rng.choice(["p", "q", "r"], n), categories=["p", "q", "r"]),
                      "d": pd.Categorical(rng.choice(["u", "v"], n), categories=["u", "v"])})
    y = np.where(rng.random(n) < 0.5, 1, -1)
    return X, y


def _brute_force_candidates(bound, theta1, t_grid):
    """Every categorical configuration x label (kept, or flipped at cost kappa) x a grid of numerical score
    moves t (cost t^2 / nu), written out explicitly: the losses and costs of a FiniteCandidates adversary."""
    inst = bound.inst
    schema = inst.schema
    cats = [range(a) for a in schema.levels]
    configs = list(itertools.product(*cats))
    delta = np.asarray(inst.metric.delta, dtype=float)
    kappa = inst.metric.kappa
    n_num = inst.n_numerical
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    beta = bound.coef[:n_num]
    nu = float(np.sum(np.where(np.isfinite(gamma), beta ** 2 / gamma ** 2, 0.0)))
    N = inst.n_samples
    losses, costs = [], []
    for config in configs:
        Z = np.tile(np.array(config), (N, 1))
        data = type(inst.data)(X=inst.data.X, Z=Z, levels=inst.data.levels)
        f = schema.design(data) @ bound.coef + bound.intercept
        cat_cost = np.sum(np.where(inst.data.Z != Z, delta[None, :], 0.0), axis=1)
        for flip, extra in ((False, 0.0), (True, kappa)):
            if flip and not np.isfinite(kappa):
                continue
            sign = -inst.y if flip else inst.y
            for t in t_grid:
                if t != 0 and nu == 0:
                    continue
                losses.append(bound.loss.value(sign * f + t))
                costs.append(cat_cost + extra + (t ** 2 / nu if t != 0 else 0.0))
    L = np.column_stack(losses)
    C = np.column_stack(costs)
    # the observed point first (cost 0, own label, t = 0)
    nominal = bound.loss.value(inst.y * (inst.design() @ bound.coef + bound.intercept))
    return FiniteCandidates(np.column_stack([nominal, L]), np.column_stack([np.zeros(N), C]), nominal=0)


@pytest.mark.parametrize("loss", ["hinge", "logistic", "zero_one"])
@pytest.mark.parametrize("kappa", [np.inf, 1.5])
@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_linear_adversary_equals_enumeration_on_categorical_data(loss, kappa, divergence):
    """Categorical features only (numerical immutable): the DP-based candidates must give exactly the
    criterion of the explicit enumeration of all 3 x 2 configurations and both labels."""
    X, y = _mixed()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=np.inf),
                             categorical=dk.MismatchCost(weights={"c": 0.3, "d": 0.5}),
                             label=dk.LabelCost(kappa=kappa))
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    amb = dk.OTMoment(metric=metric, theta1=0.8, theta2=0.3, divergence=divergence)
    bound = bind_model(clf, X, y, amb, loss=loss)
    brute = _brute_force_candidates(bound, 0.8, [0.0])
    for r in (0.6, 0.9) if loss != "zero_one" else (0.3, 0.6):
        ours = solve_stability(bound.adversary(), r, 0.8, 0.3, divergence)
        ref = solve_stability(brute, r, 0.8, 0.3, divergence)
        assert ours.status == ref.status
        assert ours.value == pytest.approx(ref.value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_linear_adversary_with_numerical_moves_matches_fine_enumeration(loss):
    """Numerical and categorical moves together: enumeration over configurations x a fine grid of score
    moves approaches the exact value from below (it searches a subset of the moves)."""
    X, y = _mixed(seed=3)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights={"a": 2.0, "b": 1.0}),
                             categorical=dk.MismatchCost(weights=0.4))
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    amb = dk.OTMoment(metric=metric, theta1=1.0, theta2=0.5)
    bound = bind_model(clf, X, y, amb, loss=loss)
    brute = _brute_force_candidates(bound, 1.0, np.linspace(-4, 4, 1601))
    r = float(np.mean(bound.adversary().nominal_losses())) + 0.4
    ours = solve_stability(bound.adversary(), r, 1.0, 0.5)
    ref = solve_stability(brute, r, 1.0, 0.5)
    assert ref.value >= ours.value - 1e-10  # fewer moves -> more expensive
    assert ref.value == pytest.approx(ours.value, rel=1e-4)


def test_moved_points_reproduce_losses_and_costs():
    """The atoms' feature values, fed back through the model and the metric, give the atoms' loss and cost."""
    X, y = _mixed(seed=5, n=40)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights={"a": 2.0, "b": 0.5}),
                             categorical=dk.MismatchCost(weights={"c": 0.2, "d": 0.1}),
                             label=dk.LabelCost(kappa=0.7))
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    amb = dk.OTMoment(metric=metric, theta1=0.5, theta2=0.5)
    res = dk.stability(clf, X, y, risk=1.2, ambiguity=amb)
    atoms = res.atoms
    moved = atoms[list(X.columns)].astype({"c": X["c"].dtype, "d": X["d"].dtype})
    score = clf.decision_function(moved)
    y_new = np.where(atoms["y"].to_numpy() == clf.classes_[1], 1.0, -1.0)
    np.testing.assert_allclose(np.logaddexp(0, -y_new * score), atoms["loss"], rtol=1e-9, atol=1e-9)
    orig = X.iloc[atoms["sample"].to_numpy()].reset_index(drop=True)
    num = 4.0 * (moved["a"] - orig["a"]) ** 2 + 0.25 * (moved["b"] - orig["b"]) ** 2
    cat = 0.2 * (moved["c"].astype(str) != orig["c"].astype(str)) + 0.1 * (moved["d"].astype(str) !=
                                                                          orig["d"].astype(str))
    flip = 0.7 * (atoms["y"].to_numpy() != y[atoms["sample"].to_numpy()])
    np.testing.assert_allclose(num + cat + flip, atoms["cost"], rtol=1e-9, atol=1e-12)
    assert res.gap == pytest.approx(0, abs=1e-9)
    assert res.attained_risk == pytest.approx(1.2, abs=1e-9)


# ----------------------------------------------------------------- scikit-learn models
def _blobs(n=100, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal([2, 2], 1, (n, 2)), rng.normal([-1, -1], 1, (n, 2))])
    return X, np.r_[np.zeros(n), np.ones(n)]


def test_gradient_ascent_matches_exact_adversary_in_the_concave_regime():
    """A callable logistic loss through gradient ascent equals the exact linear adversary when the inner
    problem is strongly concave (large theta1)."""
    from sklearn.linear_model import LogisticRegression
    X, y = _blobs()
    lr = LogisticRegression().fit(X, y)
    w, b = lr.coef_.ravel(), lr.intercept_[0]
    ypm = np.where(y == 1, 1.0, -1.0)

    def loss_and_grad(Xm, yy):
        m = yy * (Xm @ w + b)
        s = 1.0 / (1.0 + np.exp(m))
        return np.logaddexp(0, -m), -(yy * s)[:, None] * w[None, :]

    amb = dk.OTMoment(theta1=2.0, theta2=0.5)
    exact = dk.stability(lr, X, y, risk=0.5, ambiguity=amb)
    approx = dk.stability(loss_and_grad, X, ypm, risk=0.5, ambiguity=amb)
    assert approx.value == pytest.approx(exact.value, rel=1e-6)
    assert any("local search" in n for n in approx.notes)


def test_mlp_gradient_matches_finite_differences():
    from sklearn.neural_network import MLPClassifier
    X, y = _blobs(n=40)
    for activation in ("relu", "tanh", "logistic"):
        mlp = MLPClassifier(hidden_layer_sizes=(8, 5), activation=activation, max_iter=300,
                            random_state=0).fit(X, y)
        f = mlp_loss_and_grad(mlp, 1.0)
        ypm = np.where(y == 1, 1.0, -1.0)
        losses, grad = f(X, ypm)
        p = mlp.predict_proba(X)[:, 1]
        np.testing.assert_allclose(losses, -np.log(np.where(ypm > 0, p, 1 - p)), rtol=1e-8, atol=1e-10)
        eps = 1e-6
        for j in range(2):
            Xp, Xm = X.copy(), X.copy()
            Xp[:, j] += eps
            Xm[:, j] -= eps
            fd = (f(Xp, ypm)[0] - f(Xm, ypm)[0]) / (2 * eps)
            np.testing.assert_allclose(grad[:, j], fd, rtol=1e-4, atol=1e-6)


def test_mlp_stability_runs_and_certifies_its_distribution():
    from sklearn.neural_network import MLPClassifier
    X, y = _blobs(n=60)
    mlp = MLPClassifier(hidden_layer_sizes=(16,), max_iter=500, random_state=0).fit(X, y)
    res = dk.stability(mlp, X, y, risk=0.6, ambiguity=dk.OTMoment(theta1=1.0, theta2=0.5))
    assert res.status == "finite" and res.value > 0
    assert res.attained_risk == pytest.approx(0.6, abs=1e-6)
    assert res.mean_weight == pytest.approx(1.0, abs=1e-9)
    # the moved points give the atoms' losses through the network itself
    moved = res.atoms[["x0", "x1"]].to_numpy()
    p = mlp.predict_proba(moved)[:, 1]
    yy = y[res.atoms["sample"].to_numpy()]
    np.testing.assert_allclose(-np.log(np.where(yy == 1, p, 1 - p)), res.atoms["loss"], rtol=1e-6, atol=1e-8)


def test_conic_method_agrees_with_dual_for_linear_svm():
    from sklearn.svm import LinearSVC
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.sign(X @ [1, -1, 0.5] + 0.3 * rng.normal(size=30))
    svm = LinearSVC().fit(X, y)
    for divergence in ("kl", "chi2"):
        amb = dk.OTMoment(theta1=0.5, theta2=0.25, divergence=divergence)
        m = dk.stability(svm, X, y, risk=0.0, ambiguity=amb).nominal_risk
        a = dk.stability(svm, X, y, risk=m + 0.5, ambiguity=amb)
        b = dk.stability(svm, X, y, risk=m + 0.5, ambiguity=amb, method="conic")
        assert b.value == pytest.approx(a.value, rel=1e-6)


def test_linear_regression_squared_loss_pure_corruption_closed_form():
    """Squared loss, pure corruption: l_h = h a e^2 / (a - h) with a = theta1 / ||w||^2, and the dual has the
    closed form R = theta1 / ||w||^2 * (sqrt(r) - sqrt(m))^2 ... checked against a direct 1-D maximization."""
    from scipy.optimize import minimize_scalar
    from sklearn.linear_model import LinearRegression
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=50)
    reg = LinearRegression().fit(X, y)
    e = reg.predict(X) - y
    a = 0.7 / np.sum(reg.coef_ ** 2)
    r = 2.0 * np.mean(e ** 2)
    res = dk.stability(reg, X, y, risk=r, ambiguity=dk.OTMoment(theta1=0.7, theta2=np.inf))
    G = lambda h: -(h * r - np.mean(h * a * e ** 2 / (a - h)))
    ref = -minimize_scalar(G, bounds=(0, a * (1 - 1e-12)), method="bounded", options={"xatol": 1e-14}).fun
    assert res.value == pytest.approx(ref, rel=1e-8)
    # closed form: minimal shift of every residual by the same factor: R = a (sqrt(r) - sqrt(m))^2
    m = np.mean(e ** 2)
    assert res.value == pytest.approx(a * (np.sqrt(r) - np.sqrt(m)) ** 2, rel=1e-8)


# ----------------------------------------------------------------- feature criterion and curves
def test_feature_stability_bounds_and_ranking():
    X, y = _mixed(seed=7, n=60)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    amb = dk.OTMoment(metric=dk.GroundMetric(numerical=dk.NormCost(p=2), categorical=dk.MismatchCost(0.1)),
                      theta1=1.0, theta2=0.25)
    fs = dk.feature_stability(clf, X, y, risk=0.45, ambiguity=amb, loss="zero_one")
    assert set(fs.ranking) == set(X.columns)
    assert np.all(np.diff(fs.table["value"].to_numpy()) >= 0)
    assert np.all(fs.table["value"].to_numpy() >= fs.full.value - 1e-12)  # R_j >= R


def test_curve_is_zero_then_nondecreasing_and_convex():
    from sklearn.linear_model import LogisticRegression
    X, y = _blobs()
    lr = LogisticRegression().fit(X, y)
    risks = np.linspace(0.0, 1.5, 16)
    curve = dk.stability_curve(lr, X, y, risks=risks, ambiguity=dk.OTMoment(theta1=0.4, theta2=0.4))
    m = curve.nominal_risk
    assert np.all(curve.values[risks <= m] == 0)
    assert np.all(np.diff(curve.values) >= -1e-12)
    assert np.all(np.diff(curve.values, 2) >= -1e-9)


def test_budget_split():
    amb = dk.OTMoment.from_budget_split(C=5, corruption_share=0.5)
    assert (amb.theta1, amb.theta2) == pytest.approx((0.4, 0.4))
    assert dk.OTMoment.from_budget_split(5, 0).theta1 == np.inf
    assert dk.OTMoment.from_budget_split(5, 1).theta2 == np.inf
    a = dk.OTMoment.from_budget_split(5, 0.3)
    assert 1 / a.theta1 + 1 / a.theta2 == pytest.approx(5)


# ----------------------------------------------------------------- bad input
def test_bad_input_is_named():
    from sklearn.linear_model import LogisticRegression, LinearRegression
    X, y = _blobs(n=10)
    lr = LogisticRegression().fit(X, y)
    with pytest.raises(dk.ParameterError, match="theta1"):
        dk.stability(lr, X, y, risk=0.5, ambiguity=dk.OTMoment(theta1=-1))
    with pytest.raises(dk.ParameterError, match="both inf"):
        dk.stability(lr, X, y, risk=0.5, ambiguity=dk.OTMoment(theta1=np.inf, theta2=np.inf))
    with pytest.raises(dk.ParameterError, match="divergence"):
        dk.stability(lr, X, y, risk=0.5, ambiguity=dk.OTMoment(divergence="tv"))
    with pytest.raises(dk.ParameterError, match="risk"):
        dk.stability(lr, X, y, risk=np.nan)
    with pytest.raises(dk.ParameterError, match="OTMoment"):
        dk.stability(lr, X, y, risk=0.5, ambiguity=dk.Wasserstein())
    with pytest.raises(dk.ParameterError, match="p=2"):
        dk.stability(lr, X, y, risk=0.5, ambiguity=dk.OTMoment(metric=dk.GroundMetric()))
    with pytest.raises(dk.ParameterError, match="method"):
        dk.stability(lr, X, y, risk=0.5, method="bogus")
    with pytest.raises(dk.ParameterError, match="conic"):
        dk.stability(lr, X, y, risk=0.9, method="conic")  # logistic is not max-affine
    with pytest.raises(dk.DataError):
        dk.stability(lr, X[:5], y, risk=0.5)
    with pytest.raises(dk.DataError, match="NaN"):
        Xn = X.copy()
        Xn[0, 0] = np.nan
        dk.stability(lr, Xn, y, risk=0.5)
    reg = LinearRegression().fit(X, y)
    with pytest.raises(dk.ParameterError, match="classification"):
        dk.stability(reg, X, y, risk=0.5, loss="zero_one")
    with pytest.raises(dk.ParameterError, match="loss="):
        from sklearn.linear_model import RidgeClassifier
        dk.stability(RidgeClassifier().fit(X, y), X, y, risk=0.5)
    with pytest.raises(dk.ParameterError, match="features"):
        dk.feature_stability(lr, X, y, risk=0.5, features=["nope"])
    with pytest.raises(dk.DataError, match="shape"):
        FiniteCandidates(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(dk.DataError, match="nominal"):
        FiniteCandidates(np.zeros((3, 2)), np.ones((3, 2)))


def test_infeasible_and_zero_statuses():
    res = solve_stability(FixedLosses([0.0, 1.0]), risk=1.5, theta1=np.inf, theta2=1.0)
    assert res.status == "infeasible" and res.value == np.inf
    res = solve_stability(FixedLosses([0.0, 1.0]), risk=0.2, theta1=np.inf, theta2=1.0)
    assert res.status == "zero" and res.value == 0
    res = solve_stability(FixedLosses([0.0, 1.0]), risk=1.0, theta1=np.inf, theta2=1.0)
    assert res.status == "boundary" and res.value == pytest.approx(np.log(2), rel=1e-9)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize("loss", ["logistic", "zero_one"])
def test_integer_sample_weights_equal_duplicated_rows(divergence, loss):
    """P0 with weights (2, 1, 3, ...) is the empirical distribution of the data with rows repeated."""
    from sklearn.linear_model import LogisticRegression
    X, y = _blobs(n=20, seed=4)
    lr = LogisticRegression().fit(X, y)
    counts = np.random.default_rng(0).integers(0, 4, size=len(y))
    counts[0] = 1
    amb = dk.OTMoment(theta1=0.7, theta2=0.3, divergence=divergence)
    r = 0.45 if loss == "zero_one" else 0.6
    weighted = dk.stability(lr, X, y, risk=r, ambiguity=amb, loss=loss, sample_weight=counts)
    repeated = dk.stability(lr, np.repeat(X, counts, axis=0), np.repeat(y, counts), risk=r, ambiguity=amb,
                            loss=loss)
    assert weighted.value == pytest.approx(repeated.value, rel=1e-9, abs=1e-13)
    assert weighted.nominal_risk == pytest.approx(repeated.nominal_risk, rel=1e-12)
    assert weighted.gap == pytest.approx(0, abs=1e-10)
    assert weighted.atoms["mass"].sum() == pytest.approx(1.0)
    assert set(weighted.atoms["sample"]) <= set(np.flatnonzero(counts))
    with pytest.raises(dk.DataError, match="sample_weight"):
        dk.stability(lr, X, y, risk=r, ambiguity=amb, sample_weight=-counts)
