"""The Lagrangian lower bound of adversarial losses (DR-ARO, selvi2025 thesis Cor. 8) against independent cvxpy models
(drokit.evaluation.lower_bound, module docstring): weak duality at arbitrary dual points, tight certificates at fitted
models, the attack's offset as the nearest point of its ball, and a mutation that must break it."""

from __future__ import annotations

import numpy as np
import pytest

import drokit as dk
import drokit.certificates.lagrangian as lg
import drokit.certificates.lower_bound as lb
from drokit.losses import Adversarial
from drokit.losses.conjugate import slope_domain
from drokit.oracles.enumeration import enumerate_configurations
from tests.test_adversarial import _data, _dual

cp = pytest.importorskip("cvxpy")

EPS, ALPHA = 0.1, 0.15


def _numerical_reference(X, y, loss, p_attack, q, kappa, task="classification", radius=EPS, immutable=(), alpha=ALPHA):
    """DR-ARO on numerical features from the spec, in cvxpy: ``min lam eps + mean_n s_n`` with ``s_n >= L_att(own
    label)``, ``s_n >= L_att(flipped) - lam kappa`` (classification, finite kappa), ``tau >= alpha ||beta||_{p*}``,
    ``lip ||beta_M||_{q*} <= lam`` (``M`` the features not ``immutable``); ``L_att`` is ``L(y f - tau)``
    (classification) or ``max L(r +- tau)`` (regression).  At radius 0, adversarial training: ``min mean_n L_att``."""
    N, n = X.shape
    beta, b = cp.Variable(n), cp.Variable()
    lam, tau = cp.Variable(nonneg=True), cp.Variable()
    f = X @ beta + b
    L = {"logistic": lambda z: cp.logistic(-z), "hinge": lambda z: cp.pos(1 - z),
         "absolute": cp.abs, "huber": lambda r: cp.huber(r, 1.0) / 2}[loss]
    mutable = [j for j in range(n) if j not in immutable]
    cons = [tau >= alpha * cp.norm(beta, _dual(p_attack))]
    if radius > 0 and mutable:
        cons.append(cp.norm(beta[mutable], _dual(q)) <= lam)
    if task == "regression":
        r = f - y
        s = cp.maximum(L(r + tau), L(r - tau))
    else:
        s = L(cp.multiply(y, f) - tau)
        if np.isfinite(kappa) and radius > 0:
            t = cp.Variable(N)
            cons += [t >= s, t >= L(-cp.multiply(y, f) - tau) - lam * kappa]
            s = t
    prob = cp.Problem(cp.Minimize(radius * lam + cp.sum(s) / N), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value


def _problem(loss, p_attack, q, kappa, task="classification", alpha=ALPHA, radius=EPS, immutable=(), n=3):
    norm = dk.NormCost(p=q, weights=np.array([np.inf if j in immutable else 1.0 for j in range(n)])) if immutable \
        else dk.NormCost(p=q)
    metric = dk.GroundMetric(numerical=norm, label=dk.LabelCost(kappa))
    return dk.Problem(Adversarial(loss, norm=p_attack, budget=alpha), dk.Wasserstein(metric, radius), task=task)


def _regression_data(n_samples=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 2))
    return X, X @ [1.0, -2.0] + 0.3 * rng.normal(size=n_samples)


CLASSIFICATION_CASES = [("logistic", 2, 2, np.inf), ("logistic", 1, np.inf, 0.8), ("hinge", np.inf, 1, np.inf),
                        ("hinge", 2, 2, 0.8)]
REGRESSION_CASES = [("absolute", 2, 2), ("huber", np.inf, 1), ("huber", 1, 2)]


def _random_points(inst, rng, count=8):
    rows = enumerate_configurations(inst)
    lo, hi = slope_domain(inst.loss.inner)
    for _ in range(count):
        mass = rng.exponential(size=rows.size) * (rng.random(rows.size) < 0.7)
        yield rows, mass, rng.uniform(max(lo, -3.0), min(hi, 3.0), size=rows.size)


@pytest.mark.parametrize("loss,p_attack,q,kappa", CLASSIFICATION_CASES)
def test_weak_duality_at_arbitrary_dual_points_classification(loss, p_attack, q, kappa):
    """Any masses and slopes, repaired, with the attack's offset: a value <= the DR-ARO optimum of the cvxpy model."""
    X, y = _data()
    ref = _numerical_reference(X, y, loss, p_attack, q, kappa)
    inst = _problem(loss, p_attack, q, kappa).bind(X, y)
    rng = np.random.default_rng(3)
    values = [lb.lagrangian_bound(inst, *point).value for point in _random_points(inst, rng)]
    assert all(v <= ref + 1e-9 * max(1.0, abs(ref)) for v in values), (values, ref)
    assert sum(np.isfinite(values)) >= 4          # the repair succeeds: the check is not vacuous


@pytest.mark.parametrize("loss,p_attack,q", REGRESSION_CASES)
def test_weak_duality_at_arbitrary_dual_points_regression(loss, p_attack, q):
    X, y = _regression_data()
    ref = _numerical_reference(X, y, loss, p_attack, q, np.inf, task="regression")
    inst = _problem(loss, p_attack, q, np.inf, task="regression").bind(X, y)
    rng = np.random.default_rng(4)
    values = [lb.lagrangian_bound(inst, *point).value for point in _random_points(inst, rng)]
    assert all(v <= ref + 1e-9 * max(1.0, abs(ref)) for v in values), (values, ref)
    assert sum(np.isfinite(values)) >= 4


def _assert_certified(res, ref):
    how = res.auxiliary["lower_bound"]
    assert res.status == "optimal"
    assert how["source"] == "lagrangian", how
    assert res.lower_bound <= ref + 1e-9 * max(1.0, abs(ref))
    assert res.upper_bound >= ref - 1e-6 * abs(ref)
    assert res.relative_gap <= 1e-6


@pytest.mark.parametrize("loss,p_attack,q,kappa", CLASSIFICATION_CASES + [("smooth_hinge", 1, 2, 0.8)])
def test_fitted_dr_aro_models_are_certified_by_the_lagrangian_bound(loss, p_attack, q, kappa):
    """The certificate of a DR-ARO fit is an explicit dual point (source "lagrangian"; it was the conic solver's dual
    objective), below the independent optimum and within 1e-6 of the model's exact worst-case risk."""
    X, y = _data()
    res = _problem(loss, p_attack, q, kappa).compile(X, y).solve()
    ref = res.upper_bound if loss == "smooth_hinge" else _numerical_reference(X, y, loss, p_attack, q, kappa)
    _assert_certified(res, ref)


@pytest.mark.parametrize("loss,p_attack,q", REGRESSION_CASES)
def test_fitted_adversarial_regressions_are_certified(loss, p_attack, q):
    X, y = _regression_data()
    res = _problem(loss, p_attack, q, np.inf, task="regression").compile(X, y).solve()
    _assert_certified(res, _numerical_reference(X, y, loss, p_attack, q, np.inf, task="regression"))


@pytest.mark.parametrize("p_attack,p_norm", [(np.inf, 1.0), (np.inf, 2.0), (1.0, 1.0), (1.0, 2.0), (1.0, np.inf),
                                             (2.0, 1.0), (2.0, 2.0), (2.0, np.inf)])
def test_attack_offset_is_the_nearest_point_of_the_ball(p_attack, p_norm):
    """``attack_offset`` minimizes ``||gamma (r - h)||_{p_norm}`` over ``||h||_{p_attack} <= radius`` (the cases its
    docstring solves exactly): inside the ball, and as good as cvxpy's answer."""
    rng = np.random.default_rng(11)
    for draw in range(10):
        k = int(rng.integers(1, 6))
        r, gamma = rng.normal(0, 1, k), rng.uniform(0.3, 2.0, k)
        radius = float(rng.uniform(0.05, 1.5))
        h = lb.attack_offset(r, radius, p_attack, gamma, p_norm)
        assert np.linalg.norm(h, ord=p_attack) <= radius * (1 + 1e-12)
        x = cp.Variable(k)
        prob = cp.Problem(cp.Minimize(cp.norm(cp.multiply(gamma, r - x), p_norm)), [cp.norm(x, p_attack) <= radius])
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        ours = float(np.linalg.norm(gamma * (r - h), ord=p_norm))
        assert ours <= prob.value + 1e-7 * max(1.0, prob.value), (draw, ours, prob.value)


def _stronger_attack_point(X, y, loss, p_attack, q, kappa):
    """The certified dual point of the same problem with a ten times larger attack budget (near-optimal for that
    problem, whose optimum is higher)."""
    strong = _problem(loss, p_attack, q, kappa, alpha=10 * ALPHA)
    res = strong.compile(X, y).solve()
    point = lb.certified_lower_bound(strong.bind(X, y), res.intercept, res.coef)
    assert point.value >= res.upper_bound - 1e-5
    return point


@pytest.mark.parametrize("loss,p_attack,q,kappa", CLASSIFICATION_CASES)
def test_weak_duality_at_the_dual_point_of_a_stronger_attack(loss, p_attack, q, kappa):
    """A demanding dual point: the certificate of the problem with a 10x attack budget, evaluated for the real budget,
    stays below the real optimum (its own problem's optimum is far above)."""
    X, y = _data()
    ref = _numerical_reference(X, y, loss, p_attack, q, kappa)
    point = _stronger_attack_point(X, y, loss, p_attack, q, kappa)
    assert point.value > ref + 1e-3
    value = lb.lagrangian_bound(_problem(loss, p_attack, q, kappa).bind(X, y), point.rows, point.mass,
                                point.slopes).value
    assert value <= ref + 1e-9 * max(1.0, abs(ref))


def test_mutation_with_a_larger_attack_ball_breaks_the_bound(monkeypatch):
    """The attack's ball given ten times its radius ``alpha sum_k m_k |alpha_k|``: at the stronger attack's dual point
    the bound exceeds the independent optimum (so the test above can fail)."""
    X, y = _data()
    loss, p_attack, q, kappa = CLASSIFICATION_CASES[0]
    ref = _numerical_reference(X, y, loss, p_attack, q, kappa)
    point = _stronger_attack_point(X, y, loss, p_attack, q, kappa)
    original = lg.attacked_loss

    def larger(inst):
        inner, p, alpha = original(inst)
        return inner, p, 10.0 * alpha
    monkeypatch.setattr(lg, "attacked_loss", larger)
    value = lb.lagrangian_bound(_problem(loss, p_attack, q, kappa).bind(X, y), point.rows, point.mass,
                                point.slopes).value
    assert value > ref + 1e-3


# ------------------------------------------------------------------ attacked free columns
#: (loss, attack norm, ground norm, kappa, radius): an immutable numerical feature (a free column the attack still
#: moves) at a positive radius, and adversarial training (radius 0: every numerical column free and attacked)
FREE_ATTACKED_CASES = [("logistic", 2, 2, np.inf, EPS), ("logistic", 1, np.inf, 0.8, EPS), ("hinge", np.inf, 1, 0.8, EPS),
                       ("logistic", 2, 2, np.inf, 0.0), ("hinge", np.inf, 1, np.inf, 0.0), ("logistic", 1, 1, 0.8, 0.0)]


@pytest.mark.parametrize("loss,p_attack,q,kappa,radius", FREE_ATTACKED_CASES)
def test_weak_duality_with_attacked_free_columns(loss, p_attack, q, kappa, radius):
    """Feature 0 immutable (or radius 0): the attacked free columns' sums are held in the attack's ball, ``h_F = g_F``,
    the norm-priced columns get what the ball has left; random points stay below the independent optimum."""
    X, y = _data()
    ref = _numerical_reference(X, y, loss, p_attack, q, kappa, radius=radius, immutable=(0,))
    inst = _problem(loss, p_attack, q, kappa, radius=radius, immutable=(0,)).bind(X, y)
    rng = np.random.default_rng(13)
    values = [lb.lagrangian_bound(inst, *point).value for point in _random_points(inst, rng)]
    assert all(v <= ref + 1e-9 * max(1.0, abs(ref)) for v in values), (values, ref)
    assert sum(np.isfinite(values)) >= 4


@pytest.mark.parametrize("loss,p_attack,q", [("absolute", 2, 2), ("huber", np.inf, 1)])
@pytest.mark.parametrize("radius", [0.0, EPS])
def test_weak_duality_with_attacked_free_columns_regression(loss, p_attack, q, radius):
    X, y = _regression_data()
    ref = _numerical_reference(X, y, loss, p_attack, q, np.inf, task="regression", radius=radius, immutable=(0,))
    inst = _problem(loss, p_attack, q, np.inf, task="regression", radius=radius, immutable=(0,), n=2).bind(X, y)
    rng = np.random.default_rng(14)
    values = [lb.lagrangian_bound(inst, *point).value for point in _random_points(inst, rng)]
    assert all(v <= ref + 1e-9 * max(1.0, abs(ref)) for v in values), (values, ref)
    assert sum(np.isfinite(values)) >= 4


@pytest.mark.parametrize("smoothed", [True, False], ids=["smoothed", "kkt"])
@pytest.mark.parametrize("loss,p_attack,q,kappa,radius", FREE_ATTACKED_CASES)
def test_fitted_models_with_attacked_free_columns_are_certified(loss, p_attack, q, kappa, radius, smoothed,
                                                               monkeypatch):
    """Such fits were certified only by the solver's dual objective (the attacked free columns' sums were held at 0):
    now by the Lagrangian bound, through the smoothed primal and (turned off) through the multiplier program."""
    import drokit.certificates.smoothed_point as sm
    if not smoothed:
        monkeypatch.setattr(sm, "TEMPERATURES", ())
    X, y = _data()
    res = _problem(loss, p_attack, q, kappa, radius=radius, immutable=(0,)).compile(X, y).solve()
    _assert_certified(res, _numerical_reference(X, y, loss, p_attack, q, kappa, radius=radius, immutable=(0,)))


@pytest.mark.parametrize("radius", [0.0, EPS])
def test_fitted_adversarial_regressions_with_attacked_free_columns_are_certified(radius):
    X, y = _regression_data()
    res = _problem("huber", np.inf, 1, np.inf, task="regression", radius=radius, immutable=(0,), n=2).compile(X, y).solve()
    _assert_certified(res, _numerical_reference(X, y, "huber", np.inf, 1, np.inf, task="regression", radius=radius,
                                                immutable=(0,)))


def _free_attacked_strong_point(X, y, loss, p_attack, q, kappa, radius):
    strong = _problem(loss, p_attack, q, kappa, alpha=10 * ALPHA, radius=radius, immutable=(0,))
    res = strong.compile(X, y).solve()
    point = lb.certified_lower_bound(strong.bind(X, y), res.intercept, res.coef)
    assert point.value >= res.upper_bound - 1e-5
    return point


@pytest.mark.parametrize("loss,p_attack,q,kappa,radius", [FREE_ATTACKED_CASES[0], FREE_ATTACKED_CASES[3],
                                                          FREE_ATTACKED_CASES[4]])
def test_weak_duality_with_attacked_free_columns_at_a_stronger_attack(loss, p_attack, q, kappa, radius):
    X, y = _data()
    ref = _numerical_reference(X, y, loss, p_attack, q, kappa, radius=radius, immutable=(0,))
    point = _free_attacked_strong_point(X, y, loss, p_attack, q, kappa, radius)
    assert point.value > ref + 1e-2
    inst = _problem(loss, p_attack, q, kappa, radius=radius, immutable=(0,)).bind(X, y)
    assert lb.lagrangian_bound(inst, point.rows, point.mass, point.slopes).value <= ref + 1e-9 * max(1.0, abs(ref))


@pytest.mark.parametrize("loss,p_attack,q,kappa,radius", [FREE_ATTACKED_CASES[0], FREE_ATTACKED_CASES[3],
                                                          FREE_ATTACKED_CASES[4]])
def test_mutation_ignoring_the_attacked_free_columns_in_the_ball_breaks_the_bound(loss, p_attack, q, kappa, radius,
                                                                                  monkeypatch):
    """The attacked free columns' sums kept whatever their size and not charged to the attack's ball: at the stronger
    attack's point the bound exceeds the optimum, so the test above can fail."""
    X, y = _data()
    ref = _numerical_reference(X, y, loss, p_attack, q, kappa, radius=radius, immutable=(0,))
    point = _free_attacked_strong_point(X, y, loss, p_attack, q, kappa, radius)
    monkeypatch.setattr(lg, "_into_ball", lambda r, radius, p: r)
    monkeypatch.setattr(lg, "_ball_left", lambda g, radius, p: radius)
    inst = _problem(loss, p_attack, q, kappa, radius=radius, immutable=(0,)).bind(X, y)
    assert lb.lagrangian_bound(inst, point.rows, point.mass, point.slopes).value > ref + 1e-3
