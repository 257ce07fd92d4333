"""The RWPI radius (``drokit/model_selection/rwpi.py``, ``spec/rwpi-radius.md``; issue 24, item 3).

Checked against what it claims, with an independent reference (``tests/reference/rwpi_profile.py``):

* coverage: on a well-specified logistic model with a KNOWN ``beta*``, the profile function ``R_N(beta*)`` of each
  independent sample, solved exactly by the transport LP over the sample's moves, lies below that sample's radius in
  about a fraction ``alpha`` of the samples (the law's claim; finite move space: categorical changes, label flips);
  for numerical moves the same with the closed form ``R_N(0) = N(Gamma E_N[y x])`` (note §5);
* the multiplier set ``Lambda_hat`` rebuilt independently, and the closed form of the numerical case draw by draw;
* the ``1/sqrt(N)`` scaling, monotonicity in ``alpha``, the invariance under a matrix cost;
* the errors, and ``DROClassifierCV(criterion="rwpi")``.

The long versions of the coverage checks (more samples, several N, numerical moves at ``beta* != 0``):
``benchmarks/bench_rwpi_coverage.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

import drokit as dk
from drokit.model_selection.rwpi import rwpi_radius
from reference.rwpi_profile import LEVELS, logistic_h, numerical_profile, profile, sample

#: the cost of the finite-move simulations: x immutable, each categorical change 1, a label flip 1
FINITE = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=np.inf), categorical=dk.MismatchCost(),
                         label=dk.LabelCost(kappa=1.0))


def _binomial_tolerance(alpha: float, n: int, bias: float = 0.0) -> float:
    """Three standard deviations of a coverage estimated from ``n`` independent samples (plus an allowance ``bias``
    for the finite-N error of the limit law, measured in benchmarks/bench_rwpi_coverage.py)."""
    return 3.0 * math.sqrt(alpha * (1.0 - alpha) / n) + bias


def test_coverage_of_the_true_parameter_by_the_radius_finite_moves():
    """The law's claim, measured: ``P(R_N(beta*) <= radius) ~ alpha``, ``R_N(beta*)`` the exact profile of each of
    70 independent samples of N = 100 (transport LP), the radius (at 0.9; at 0.5 from the same draws) computed from
    the same sample (plug-in ERM beta, sample covariance, Lambda_hat at the sample points).  Tolerance: 3 binomial
    standard deviations (0.18 at 0.5, 0.11 at 0.9) plus 0.03; a radius scaled by 1/N, or the (1 - alpha)-quantile, is
    far outside it (measured: 0.49 and 0.81 here; 0.52 and 0.89 over 100 other samples)."""
    rng = np.random.default_rng(2024)
    alphas, runs, N = np.array([0.5, 0.9]), 70, 100
    hits = np.zeros(alphas.size)
    for run in range(runs):
        X, y = sample(rng, N)
        exact = profile(X, y)
        radius, result = rwpi_radius("logistic", X, y, metric=FINITE, alpha=0.9, n_draws=200, seed=run)
        hits += exact <= np.r_[np.quantile(result.draws, 0.5, method="inverted_cdf") / math.sqrt(N), radius]
    for alpha, coverage in zip(alphas, hits / runs):
        assert abs(coverage - alpha) <= _binomial_tolerance(alpha, runs, 0.03), (alpha, coverage)


def test_coverage_with_numerical_moves_against_the_closed_form_profile():
    """Numerical moves, labels fixed, no intercept, ``y`` independent of ``x`` (``beta* = 0``):
    ``R_N(0) = ||E_N[y x]||`` exactly (note §5), and the law at ``beta = 0`` must cover it at the nominal rate (200
    samples of N = 150; measured 0.475, 0.765, 0.925)."""
    rng = np.random.default_rng(7)
    alphas, runs, N = np.array([0.5, 0.8, 0.95]), 200, 150
    metric = dk.GroundMetric(numerical=dk.NormCost(p=np.inf))
    hits = np.zeros(alphas.size)
    for run in range(runs):
        X, y = rng.normal(size=(N, 2)), rng.choice([-1, 1], N)
        radius, result = rwpi_radius("logistic", X, y, metric=metric, alpha=0.95, beta=np.zeros(2),
                                     fit_intercept=False, n_draws=300, seed=run)
        radii = np.r_[np.quantile(result.draws, alphas[:2], method="inverted_cdf") / math.sqrt(N), radius]
        hits += numerical_profile(X, y, p=np.inf) <= radii
    for alpha, coverage in zip(alphas, hits / runs):
        assert abs(coverage - alpha) <= _binomial_tolerance(alpha, runs, 0.02), (alpha, coverage)


def test_lambda_hat_rebuilt_independently_gives_the_same_draws():
    """``sup {Z'zeta : zeta'(h(x_i, z', y') - h_i) <= c(u_i, (x_i, z', y'))}`` over every configuration, built from the
    reference's ``h`` and solved by scipy's HiGHS, equals the draws (the rows, costs, coding and coordinates)."""
    rng = np.random.default_rng(3)
    X, y = sample(rng, 60)
    _, result = rwpi_radius("logistic", X, y, metric=FINITE, n_draws=15, seed=1)
    beta = result.beta
    x, z1, z2 = X["x"].to_numpy(), X["z1"].cat.codes.to_numpy(), X["z2"].cat.codes.to_numpy()
    N = x.size
    h0 = logistic_h(x, z1, z2, y, beta)
    rows, costs = [], []
    for a, b, flip in itertools.product(range(LEVELS[0]), range(LEVELS[1]), (False, True)):
        cost = 1.0 * (z1 != a) + 1.0 * (z2 != b) + 1.0 * flip
        moved = cost > 0
        rows.append((logistic_h(x, np.full(N, a), np.full(N, b), -y if flip else y, beta) - h0)[moved])
        costs.append(cost[moved])
    R, c = np.vstack(rows), np.concatenate(costs).astype(float)
    for Z, value in zip(result.normal_draws, result.draws):
        lp = linprog(-Z, A_ub=R, b_ub=c, bounds=(None, None), method="highs")
        assert lp.status == 0
        assert value == pytest.approx(-lp.fun, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("loss, slope", [("logistic", 0.5), ("smooth_hinge", 1.0)])
@pytest.mark.parametrize("cost", [dk.NormCost(p=1, weights=[1.0, 2.0, 0.5]), dk.NormCost(p=2, weights=[1.0, 2.0, 0.5]),
                                  dk.NormCost(p=np.inf, weights=[1.0, 2.0, 0.5]),
                                  dk.NormCost(p=1.5, weights=[1.0, 2.0, 0.5]),
                                  dk.GroupNormCost([["a", "b"]], weights=[1.0, 2.0, 0.5])],
                         ids=["l1", "l2", "linf", "l1.5", "group"])
def test_numerical_closed_form_draw_by_draw(loss, slope, cost):
    """Numerical features only, labels fixed, no intercept, at ``beta = 0``: ``zeta'h = L'(0) y zeta'x`` is linear, so
    ``Lambda = {N_*(Gamma^{-1} zeta) <= 1 / |L'(0)|}`` and every draw is ``N(Gamma Z) / |L'(0)|`` (note §5): the LP
    path (l1, l_inf), the l2 cones, the power cones and a user norm through its own conic form."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    y = rng.choice([-1, 1], 120)
    metric = dk.GroundMetric(numerical=cost)
    _, result = rwpi_radius(loss, X, y, metric=metric, beta=np.zeros(3), fit_intercept=False, n_draws=40)
    GZ = result.normal_draws * np.array([1.0, 2.0, 0.5])
    if isinstance(cost, dk.GroupNormCost):
        expected = np.linalg.norm(GZ[:, :2], axis=1) + np.abs(GZ[:, 2])
    else:
        expected = np.linalg.norm(GZ, ord=cost.p, axis=1)
    np.testing.assert_allclose(result.draws, expected / slope, rtol=1e-5)


def test_the_l2_closed_form_quantile_is_the_chi_quantile():
    """At ``beta = 0`` with ``x ~ N(0, I_3)`` and the l2 cost, the limit is ``||W||_2``, ``W ~ N(0, I_3)``: its
    0.9-quantile is ``sqrt(chi2_3(0.9)) = 2.5003`` (the sample covariance of N = 4000 rows and 4000 draws: within
    4%)."""
    from scipy.stats import chi2
    rng = np.random.default_rng(11)
    X, y = rng.normal(size=(4000, 3)), rng.choice([-1, 1], 4000)
    _, result = rwpi_radius("logistic", X, y, metric=dk.GroundMetric(numerical=dk.NormCost(p=2)), alpha=0.9,
                            beta=np.zeros(3), fit_intercept=False, n_draws=4000)
    assert result.quantile == pytest.approx(math.sqrt(chi2.ppf(0.9, 3)), rel=0.04)


def test_radius_scales_as_one_over_sqrt_n_and_its_quantile_settles():
    """The same model at N = 150 and N = 600: the quantile of ``sqrt(N) R_N`` stays (within 25%), so the radius
    halves (ratio in [0.35, 0.65]; 1/N scaling would give 0.25)."""
    rng = np.random.default_rng(5)
    small, large = sample(rng, 150), sample(rng, 600)
    r1, res1 = rwpi_radius("logistic", *small, metric=FINITE, n_draws=400)
    r2, res2 = rwpi_radius("logistic", *large, metric=FINITE, n_draws=400)
    assert 0.8 <= res2.quantile / res1.quantile <= 1.25
    assert 0.35 <= r2 / r1 <= 0.65
    assert r1 == pytest.approx(res1.quantile / math.sqrt(150)) and r2 == pytest.approx(res2.quantile / math.sqrt(600))


def test_radius_grows_with_the_confidence_level():
    rng = np.random.default_rng(6)
    X, y = sample(rng, 120)
    radii = [rwpi_radius("logistic", X, y, metric=FINITE, alpha=a, n_draws=300)[0] for a in (0.5, 0.8, 0.9, 0.99)]
    assert np.all(np.diff(radii) > 0)
    radius, result = rwpi_radius("logistic", X, y, metric=FINITE, alpha=0.9, n_draws=300)
    assert radius == pytest.approx(np.quantile(result.draws, 0.9, method="inverted_cdf") / math.sqrt(120))
    assert result.moves == "all" and result.max_gap <= 1e-6 and np.all(np.isfinite(result.draws))


def test_a_matrix_cost_is_the_unit_norm_in_its_coordinates():
    """``||M (x - x')||_2`` on ``X`` and the unit l2 cost on ``X M'`` give the same radius (the profile is invariant
    under the change of coordinates; drokit binds the matrix cost in ``x~ = M x``)."""
    rng = np.random.default_rng(8)
    X = pd.DataFrame(rng.multivariate_normal([0, 0], [[1.0, 0.7], [0.7, 1.0]], 150), columns=["u", "v"])
    y = np.where(X["u"] - X["v"] + rng.normal(size=150) > 0, 1, -1)
    metric = dk.GroundMetric(numerical=dk.NormCost.mahalanobis(X.cov()), label=dk.LabelCost(kappa=2.0))
    M = metric.numerical.matrix.to_numpy()
    white = pd.DataFrame(X.to_numpy() @ M.T, columns=["u", "v"])
    unit = dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(kappa=2.0))
    r1, res1 = rwpi_radius("logistic", X, y, metric=metric, n_draws=100)
    r2, res2 = rwpi_radius("logistic", white, y, metric=unit, n_draws=100)
    assert r1 == pytest.approx(r2, rel=1e-5)
    np.testing.assert_allclose(res1.beta[1:], M.T @ res2.beta[1:], rtol=1e-4, atol=1e-6)


def test_an_estimator_brings_its_loss_metric_and_roles():
    rng = np.random.default_rng(9)
    X, y = sample(rng, 100)
    clf = dk.DROClassifier(loss="smooth_hinge", ambiguity=dk.Wasserstein(FINITE, radius=0.3))
    assert rwpi_radius(clf, X, y, n_draws=50)[0] == rwpi_radius("smooth_hinge", X, y, metric=FINITE, n_draws=50)[0]


@pytest.mark.parametrize("loss, kwargs, error, match", [
    ("hinge", {}, dk.ParameterError, "jumps at the margin"),
    ("huber", {}, dk.ParameterError, "supports the losses"),
    ("logistic", {"alpha": 1.0}, dk.ParameterError, "confidence level"),
    ("logistic", {"alpha": "0.9"}, dk.ParameterError, "confidence level"),
    ("logistic", {"n_draws": 0}, dk.ParameterError, "n_draws"),
    ("logistic", {"metric": dk.GroundMetric(numerical=dk.NormCost(weights=np.inf))}, dk.ParameterError,
     "nothing moves"),
    ("logistic", {"beta": np.zeros(3)}, dk.DataError, "quantile is infinite"),       # x moves cannot move h's intercept
    ("logistic", {"beta": np.zeros(5)}, dk.ParameterError, "beta must hold 3"),
])
def test_errors(loss, kwargs, error, match):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(80, 2)), rng.choice([-1, 1], 80)
    with pytest.raises(error, match=match):
        rwpi_radius(loss, X, y, **{"n_draws": 20, **kwargs})


def test_data_errors():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    with pytest.raises(dk.DataError, match="binary classification"):
        rwpi_radius("logistic", X, rng.integers(0, 3, 60))
    with pytest.raises(dk.DataError, match="separable"), pytest.warns(RuntimeWarning, match="separable"):
        rwpi_radius("logistic", X, np.where(X[:, 0] > 0, 1, -1))
    with pytest.raises(dk.ParameterError, match="Wasserstein ball"):
        rwpi_radius(dk.DROClassifier(ambiguity=dk.KLBall(radius=0.1)), X, np.where(X[:, 0] > 0.3, 1, -1))


def test_cv_estimator_with_the_rwpi_criterion_refits_at_the_rwpi_radius():
    rng = np.random.default_rng(10)
    X, y = sample(rng, 120)
    cv = dk.DROClassifierCV(ambiguity=dk.Wasserstein(FINITE), criterion="rwpi", rwpi_alpha=0.9, rwpi_draws=200,
                            random_state=3).fit(X, y)
    radius, result = rwpi_radius("logistic", X, y, metric=FINITE, alpha=0.9, n_draws=200, seed=3)
    assert cv.radius_ == radius and cv.rwpi_.quantile == result.quantile
    assert cv.path_["radius"].tolist() == [radius] and cv.scores_.shape == (1, 200) and np.isnan(cv.best_score_)
    assert np.quantile(cv.scores_[0], 0.9, method="inverted_cdf") == pytest.approx(radius)
    plain = dk.DROClassifier(ambiguity=dk.Wasserstein(FINITE, radius=radius)).fit(X, y)
    np.testing.assert_allclose(cv.coef_, plain.coef_, atol=1e-6)
    assert cv.result_.status == "optimal"
    with pytest.raises(dk.ParameterError, match="no path"):
        cv.plot_path()


@pytest.mark.parametrize("kwargs, match", [(dict(kappas=[1.0, 2.0]), "kappas must be None"),
                                           (dict(radii=[0.1, 0.2]), "radii"),
                                           (dict(scoring="accuracy"), "scoring must be None")])
def test_cv_rwpi_errors(kwargs, match):
    rng = np.random.default_rng(0)
    X, y = sample(rng, 60)
    with pytest.raises(dk.ParameterError, match=match):
        dk.DROClassifierCV(ambiguity=dk.Wasserstein(FINITE), criterion="rwpi", **kwargs).fit(X, y)
    with pytest.raises(dk.ParameterError, match="sample_weight must be None"):
        dk.DROClassifierCV(ambiguity=dk.Wasserstein(FINITE), criterion="rwpi").fit(X, y, sample_weight=np.ones(60))
    with pytest.raises(dk.ParameterError, match="binary classification"):
        dk.DRORegressorCV(criterion="rwpi").fit(X[["x"]], np.arange(60.0))
