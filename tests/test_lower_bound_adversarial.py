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


def _numerical_reference(X, y, loss, p_attack, q, kappa, task="classification"):
    """DR-ARO on numerical features from the spec, in cvxpy: ``min lam eps + mean_n s_n`` with ``s_n >= L_att(own
    label)``, ``s_n >= L_att(flipped) - lam kappa`` (classification, finite kappa), ``tau >= alpha ||beta||_{p*}``,
    ``lip ||beta||_{q*} <= lam``; ``L_att`` is ``L(y f - tau)`` (classification) or ``max L(r +- tau)`` (regression)."""
    N, n = X.shape
    beta, b = cp.Variable(n), cp.Variable()
    lam, tau = cp.Variable(nonneg=True), cp.Variable()
    f = X @ beta + b
    L = {"logistic": lambda z: cp.logistic(-z), "hinge": lambda z: cp.pos(1 - z),
         "absolute": cp.abs, "huber": lambda r: cp.huber(r, 1.0) / 2}[loss]
    cons = [tau >= ALPHA * cp.norm(beta, _dual(p_attack)), cp.norm(beta, _dual(q)) <= lam]
    if task == "regression":
        r = f - y
        s = cp.maximum(L(r + tau), L(r - tau))
    else:
        s = L(cp.multiply(y, f) - tau)
        if np.isfinite(kappa):
            t = cp.Variable(N)
            cons += [t >= s, t >= L(-cp.multiply(y, f) - tau) - lam * kappa]
            s = t
    prob = cp.Problem(cp.Minimize(EPS * lam + cp.sum(s) / N), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value


def _problem(loss, p_attack, q, kappa, task="classification", alpha=ALPHA):
    metric = dk.GroundMetric(numerical=dk.NormCost(p=q), label=dk.LabelCost(kappa))
    return dk.Problem(Adversarial(loss, norm=p_attack, budget=alpha), dk.Wasserstein(metric, EPS), task=task)


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
