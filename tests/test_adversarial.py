"""Adversarial losses and DR-ARO (selvi2025 thesis §4; spec tests 1-4, 14-16): the closed form of the
worst attack against brute force, Cor. 8 against an independent cvxpy model written from the spec (numerical
features) and against explicit enumeration (mixed features), every compile path against each other, the
limits (alpha = 0: Wasserstein LR; radius = 0: ARO), monotonicity and concavity, and bad input."""

import itertools

import numpy as np
import pytest

import drokit as dk
from drokit.losses import Adversarial
from tests.factories import two_plus_two_frame

cp = pytest.importorskip("cvxpy")


def _dual(p):
    return np.inf if p == 1 else 1.0 if np.isinf(p) else p / (p - 1)


@pytest.mark.parametrize("p", [1, 2, np.inf, 3])
@pytest.mark.parametrize("loss", ["logistic", "hinge", "smooth_hinge"])
def test_worst_attack_closed_form_matches_brute_force(p, loss):
    """sup_{||z||_p <= alpha} L(y beta^T (x + z)) = L(y beta^T x - alpha ||beta||_{p*}) (Obs. 7): the closed
    form is attained (at the dual-norm maximizer) and no sampled attack on the sphere does better."""
    rng = np.random.default_rng(0)
    n, alpha = 3, 0.4
    beta = rng.normal(size=n)
    x = rng.normal(size=(20, n))
    y = rng.choice([-1.0, 1.0], 20)
    inner = dk.losses.get_loss(loss)
    adv = Adversarial(loss, norm=p, budget=alpha)
    closed = adv.at(adv.shift(beta)).value(y * (x @ beta))
    # random points on the l_p sphere of radius alpha, plus the ball's vertices for p = 1 and p = inf
    Z = rng.normal(size=(20_000, n))
    Z = alpha * Z / np.linalg.norm(Z, ord=p, axis=1, keepdims=True)
    if p == 1:
        Z = np.vstack([Z, alpha * np.eye(n), -alpha * np.eye(n)])
    if np.isinf(p):
        Z = np.vstack([Z, alpha * np.array(list(itertools.product([-1.0, 1.0], repeat=n)))])
    brute = np.max(inner.value(y[:, None] * ((x @ beta)[:, None] + (Z @ beta)[None, :])), axis=1)
    assert np.all(brute <= closed + 1e-12)
    exact_vertices = p == 1 or np.isinf(p)
    np.testing.assert_allclose(brute, closed, rtol=1e-12 if exact_vertices else 2e-2, atol=0 if exact_vertices else 1e-3)


def _cor8_cvxpy(X, y, eps, alpha, p_attack, q, kappa, fit_intercept=True):
    """Cor. 8 written from the spec with cvxpy atoms (log-loss, exact exp-cone model by cvxpy)."""
    N, n = X.shape
    beta, b = cp.Variable(n), cp.Variable()
    lam, tau = cp.Variable(nonneg=True), cp.Variable()
    f = X @ beta + (b if fit_intercept else 0)
    own = cp.logistic(-cp.multiply(y, f) + tau)
    cons = [tau >= alpha * cp.norm(beta, _dual(p_attack)), cp.norm(beta, _dual(q)) <= lam]
    if np.isfinite(kappa):
        s = cp.Variable(N)
        cons += [s >= own, s >= cp.logistic(cp.multiply(y, f) + tau) - lam * kappa]
        obj = eps * lam + cp.sum(s) / N
    else:
        obj = eps * lam + cp.sum(own) / N
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def _data(n_samples=40, n=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n))
    y = np.where(X @ rng.normal(size=n) + 0.7 * rng.normal(size=n_samples) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("kappa", [np.inf, 0.8])
@pytest.mark.parametrize("q,p_attack", [(1, 2), (2, np.inf), (np.inf, 1)])
def test_dr_aro_matches_independent_cvxpy_model(kappa, q, p_attack):
    X, y = _data()
    eps, alpha = 0.1, 0.15
    metric = dk.GroundMetric(numerical=dk.NormCost(p=q), label=dk.LabelCost(kappa=kappa))
    clf = dk.DROClassifier(loss=Adversarial("logistic", norm=p_attack, budget=alpha),
                           ambiguity=dk.Wasserstein(metric, radius=eps)).fit(X, y)
    ref = _cor8_cvxpy(X, y, eps, alpha, p_attack, q, kappa)
    assert clf.result_.objective == pytest.approx(ref, rel=1e-6)
    # certificate: the exact worst-case risk of the fitted model (the 1-D dual of spec test 2)
    assert clf.result_.upper_bound == pytest.approx(ref, rel=1e-6)


def test_one_dimensional_dual_at_the_fitted_model():
    """Spec test 2: the optimum equals min_{lam >= ||beta||_{q*}} lam eps + mean max(l^a(x, y), l^a(x, -y) -
    lam kappa) at the fitted beta (computed here by scipy, independently of drokit's evaluators)."""
    from scipy.optimize import minimize_scalar
    X, y = _data(seed=3)
    eps, alpha, kappa = 0.2, 0.1, 0.5
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=kappa))
    clf = dk.DROClassifier(loss=Adversarial("logistic", norm=2, budget=alpha),
                           ambiguity=dk.Wasserstein(metric, radius=eps)).fit(X, y)
    beta, b = clf.coef_.ravel(), float(clf.intercept_[0])
    c = alpha * np.linalg.norm(beta, 2)
    f = X @ beta + b
    own, flip = np.logaddexp(0, -y * f + c), np.logaddexp(0, y * f + c)
    lam_min = np.linalg.norm(beta, np.inf)
    F = lambda lam: lam * eps + np.mean(np.maximum(own, flip - lam * kappa))
    res = minimize_scalar(F, bounds=(lam_min, lam_min + 50), method="bounded", options={"xatol": 1e-12})
    assert clf.result_.objective == pytest.approx(min(res.fun, F(lam_min)), rel=1e-6)


def test_limits_and_monotonicity():
    """alpha = 0 is Wasserstein LR; radius 0 is ARO; the value grows with alpha and is nondecreasing and
    concave in the radius."""
    X, y = _data(seed=5)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=1.0))

    def fit(eps, alpha):
        loss = Adversarial("logistic", norm=2, budget=alpha)
        return dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius=eps)).fit(X, y).result_.objective

    plain = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1)).fit(X, y).result_.objective
    assert fit(0.1, 0.0) == pytest.approx(plain, rel=1e-7)
    assert fit(0.0, 0.2) == pytest.approx(_cor8_cvxpy(X, y, 0.0, 0.2, 2, 1, np.inf), rel=1e-6)
    alphas = [fit(0.1, a) for a in (0.0, 0.05, 0.1, 0.2)]
    assert np.all(np.diff(alphas) > 0)
    radii = np.linspace(0, 0.4, 6)
    values = np.array([fit(e, 0.1) for e in radii])
    assert np.all(np.diff(values) >= -1e-8)
    assert np.all(np.diff(values, 2) <= 1e-7)  # concave in the radius


def _mixed(n=24, seed=2):
    return two_plus_two_frame(n, seed)


def _enumerated_cvxpy(X, y, eps, alpha, kappa):
    """Mixed features, explicit enumeration of all categorical configurations (belbasi2023 Prop. 1) with the
    attacked loss: l1 numerical transport, unit mismatch cost, attack l2 on the numerical features."""
    Xn = X[["a", "b"]].to_numpy()
    codes = np.column_stack([X["c"].cat.codes, X["d"].cat.codes])
    levels = [3, 2]
    N = len(y)
    bx, bz_c, bz_d, b0 = cp.Variable(2), cp.Variable(2), cp.Variable(1), cp.Variable()
    lam, tau, s = cp.Variable(nonneg=True), cp.Variable(), cp.Variable(N)
    cons = [tau >= alpha * cp.norm(bx, 2), cp.norm(bx, "inf") <= lam]
    for config in itertools.product(*[range(a) for a in levels]):
        zc = np.zeros(2); zd = np.zeros(1)
        if config[0] > 0:
            zc[config[0] - 1] = 1
        if config[1] > 0:
            zd[0] = 1
        f = Xn @ bx + (zc @ bz_c) + (zd @ bz_d) + b0
        D = (codes[:, 0] != config[0]).astype(float) + (codes[:, 1] != config[1]).astype(float)
        cons.append(s >= cp.logistic(-cp.multiply(y, f) + tau) - lam * D)
        if np.isfinite(kappa):
            cons.append(s >= cp.logistic(cp.multiply(y, f) + tau) - lam * (D + kappa))
    prob = cp.Problem(cp.Minimize(eps * lam + cp.sum(s) / N), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("kappa", [np.inf, 1.0])
def test_mixed_features_every_path_equals_enumeration(kappa):
    X, y = _mixed()
    eps, alpha = 0.15, 0.1
    ref = _enumerated_cvxpy(X, y, eps, alpha, kappa)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(), label=dk.LabelCost(kappa))
    loss = Adversarial("logistic", norm=2, budget=alpha)
    for method in ("monolithic", "cutting_plane", "graph"):
        clf = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius=eps), method=method).fit(X, y)
        assert clf.result_.objective == pytest.approx(ref, rel=1e-6), method
        assert clf.result_.lower_bound <= clf.result_.upper_bound + 1e-7
        assert clf.result_.upper_bound == pytest.approx(ref, rel=1e-6), method
        # the certificate is an explicit dual point (tests/test_lower_bound_adversarial.py), below the optimum
        assert clf.result_.auxiliary["lower_bound"]["source"] == "lagrangian", method
        assert clf.result_.lower_bound <= ref + 1e-9 and clf.result_.relative_gap <= 1e-6


def test_worst_case_distribution_of_an_adversarial_model_attains_its_value():
    """Spec test 16: the recovered worst case (at most N + 1 atoms) attains the certified value."""
    X, y = _mixed(seed=4)
    clf = dk.DROClassifier(loss=Adversarial("logistic", norm=2, budget=0.1),
                           ambiguity=dk.Wasserstein(radius=0.2)).fit(X, y)
    wc = dk.worst_case(clf, X, y)
    assert wc.value == pytest.approx(clf.result_.upper_bound, rel=1e-7)
    assert wc.n_atoms <= len(y) + 1
    # attained by the atoms, or approached along the dual-norm direction (lower_bound adds that limit)
    assert wc.lower_bound == pytest.approx(wc.value, rel=1e-6)
    if wc.attained:
        assert wc.expected_loss == pytest.approx(wc.value, rel=1e-6)


@pytest.mark.parametrize("loss", ["absolute", "huber", "pinball"])
def test_regression_attack_moves_the_residual_both_ways(loss):
    """Regression: max(L(r + c), L(r - c)); ERM with the attack equals an independent cvxpy model."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    yr = X @ [1.0, -2.0] + 0.3 * rng.normal(size=30)
    alpha = 0.2
    reg = dk.DRORegressor(loss=Adversarial(loss, norm=2, budget=alpha), ambiguity=dk.Wasserstein(radius=0.0)).fit(X, yr)
    beta, b, tau = cp.Variable(2), cp.Variable(), cp.Variable()
    r = X @ beta + b - yr
    L = {"absolute": lambda v: cp.abs(v), "huber": lambda v: cp.huber(v, 1.0) / 2,
         "pinball": lambda v: cp.maximum(-0.5 * v, 0.5 * v)}[loss]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.maximum(L(r + tau), L(r - tau))) / 30),
                      [tau >= alpha * cp.norm(beta, 2)])
    prob.solve(solver="CLARABEL")
    assert reg.result_.objective == pytest.approx(prob.value, rel=1e-6)


def test_lipschitz_metadata_and_parameters():
    adv = Adversarial("hinge", norm=1, budget=0.3)
    assert adv.lipschitz == 1.0 and adv.decreasing and adv.task == "classification"
    assert Adversarial("huber", budget=0.1).lipschitz == dk.losses.Huber().lipschitz
    assert adv.get_params() == {"loss": "hinge", "norm": 1, "budget": 0.3}
    clf = dk.DROClassifier(loss=adv)
    clf.set_params(loss__budget=0.5)
    assert clf.loss.budget == 0.5


def test_bad_input():
    X, y = _data(n_samples=10)
    with pytest.raises(dk.ParameterError, match="norm"):
        dk.DROClassifier(loss=Adversarial("logistic", norm=0.5, budget=0.1)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="budget"):
        dk.DROClassifier(loss=Adversarial("logistic", norm=2, budget=-1)).fit(X, y)
    class Increasing(dk.losses.Hinge):  # a classification loss that is not non-increasing
        decreasing = False
    with pytest.raises(dk.ParameterError, match="non-increasing"):
        Adversarial(Increasing(), budget=0.1).inner
    with pytest.raises(dk.ParameterError, match="depends on the model"):
        Adversarial("logistic", budget=0.1).value(np.zeros(3))
    with pytest.raises(dk.ParameterError):
        dk.DROClassifier(loss=Adversarial("hinge", budget=0.1), method="box",
                         ambiguity=dk.Wasserstein(radius=0.1)).fit(*_mixed())
