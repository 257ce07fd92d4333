"""The explicit dual-point lower bound of MOT-DRO (drokit/certificates/mot_lower_bound.py) against the independent
full-enumeration training value of ``tests/reference/mot_dro.py``:

* weak duality at ARBITRARY dual points (random masses on every configuration row, random slopes in the loss's slope
  domain) for classification and regression losses, KL, chi-square and CVaR, moves priced or switched off, weights
  fixed or free;
* mutations that drop the divergence's budget or the transport's fail that check (so it can fail);
* fits with the phi-divergence balls are certified by it (source "lagrangian"), below the reference's optimum.
"""

from __future__ import annotations

import numpy as np
import pytest

import drokit as dk
import drokit.ambiguity.divergences as divergences
from drokit.certificates.erm_polish import polish_applies, polished_slopes
from drokit.certificates.lagrangian import row_matrix
from drokit.certificates.mot_lower_bound import mot_lagrangian_bound
from drokit.losses.conjugate import slope_domain
from drokit.oracles.enumeration import enumerate_configurations

pytest.importorskip("cvxpy")

from reference import brute_force as bf  # noqa: E402
from reference.mot_dro import mot_training_value  # noqa: E402
from test_mot_estimator import DELTA, GAMMA, LEVELS, LOSSES, PARAMS, _frame, _metric  # noqa: E402

SETTINGS = [(0.3, 1.0, 1.0), (0.1, 0.5, 2.0), (0.3, np.inf, 0.5), (0.2, 1.0, np.inf)]


def _setup(loss, seed, rho, theta1, theta2, divergence, n=6):
    task = "classification" if loss in bf.CLASSIFICATION_LOSSES else "regression"
    kappa = 1.5 if task == "classification" else 2.0
    X_num, Z, y = bf.random_instance(seed, n, 1, LEVELS, task)
    amb = dk.OTMoment(_metric(kappa), theta1=theta1, theta2=theta2, divergence=divergence, radius=rho, exponent=1)
    problem = dk.Problem(loss=LOSSES[loss], ambiguity=amb, task=task)
    compiled = problem.compile(_frame(X_num, Z), y)
    ref_div = ("cvar", divergence.level) if isinstance(divergence, divergences.CVaR) else divergence
    ref = mot_training_value(X_num, Z, LEVELS, y, task=task, loss=loss, loss_param=PARAMS.get(loss), rho=rho,
                             theta1=theta1, theta2=theta2, divergence=ref_div, gamma=GAMMA, delta=DELTA, kappa=kappa)
    return compiled.instance, ref["value"]


def _random_points(inst, theta1, rng, draws=8):
    """Random masses on every row (concentrated on a few rows every other draw); random slopes, or for a smooth loss
    every other draw the masses' best slopes (the weighted ERM's: points whose value is high, so that a budget
    left out shows)."""
    rows = enumerate_configurations(inst, nominal_only=bool(np.isinf(theta1)))
    lo, hi = slope_domain(inst.loss)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    for draw in range(draws):
        mass = rng.exponential(size=rows.size) ** (4 if draw % 2 else 1) * (rng.random(rows.size) < 0.6)
        slopes = None
        if draw % 2 and polish_applies(inst):
            slopes = polished_slopes(inst, rows, mass / mass.sum(), A, sigma, shift, np.zeros(A.shape[1]))
        if slopes is None:
            slopes = rng.uniform(max(lo, -3.0), min(hi, 3.0), size=rows.size)
        yield rows, mass, slopes


DIVERGENCES = ["kl", "chi2", divergences.CVaR(0.4)]


@pytest.mark.parametrize("divergence", DIVERGENCES, ids=repr)
@pytest.mark.parametrize("loss", ["logistic", "hinge", "huber", "pinball"])
def test_weak_duality_at_arbitrary_dual_points(loss, divergence):
    rng = np.random.default_rng(len(loss) * 7 + len(repr(divergence)))
    finite = 0
    for k, (rho, theta1, theta2) in enumerate(SETTINGS):
        inst, ref = _setup(loss, 40 + k, rho, theta1, theta2, divergence)
        for rows, mass, slopes in _random_points(inst, theta1, rng):
            bound = mot_lagrangian_bound(inst, rows, mass, slopes, rho=rho, theta1=theta1, theta2=theta2,
                                         divergence=divergence).value
            assert bound <= ref + 1e-7 * max(1.0, abs(ref)), (rho, theta1, theta2, bound, ref)
            finite += np.isfinite(bound)
    assert finite >= 12                        # the repair succeeds on most points: the check is not vacuous


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_the_budget_counts_the_transport_the_numerical_sums_and_the_divergence(divergence):
    """The mixing weight is ``min(1, rho / spent)`` with ``spent = theta1 (sum m c + ||Gamma g_L||_1 / lip) + theta2
    sum_n p_n phi(W_n)`` recomputed here from the returned (repaired) point: leaving out any of the three terms makes
    the bound exceed the optimum on overspending points, and fails this check."""
    rng = np.random.default_rng(9)
    checked = 0
    for k, (rho, theta1, theta2) in enumerate(SETTINGS[:2] + SETTINGS[3:]):
        inst, _ = _setup("logistic", 40 + k, rho, theta1, theta2, divergence)
        phi = divergences.get_divergence(divergence)
        for rows, mass, slopes in _random_points(inst, theta1, rng):
            bound = mot_lagrangian_bound(inst, rows, mass, slopes, rho=rho, theta1=theta1, theta2=theta2,
                                         divergence=divergence)
            if not np.isfinite(bound.value):
                continue
            m, a = bound.mass, bound.slopes
            sigma, _ = inst.row_signs(rows.sample, rows.flip)
            g_x = (row_matrix(inst, rows).T @ (m * a * sigma))[1]         # the numerical column (intercept first)
            spent = theta1 * (m @ rows.cost + GAMMA[0] * abs(g_x) / 1.0)
            if np.isfinite(theta2):
                spent += theta2 * inst.p @ phi.value(np.bincount(rows.sample, m, inst.n_samples) / inst.p)
            assert bound.scale == pytest.approx(min(1.0, rho / spent), rel=1e-9), (k, spent)
            checked += bound.scale < 1
    assert checked >= 5                        # points that overspend were checked


@pytest.mark.parametrize("amb", [dk.KLBall(radius=0.2), dk.ChiSquareBall(radius=0.3)], ids=repr)
@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge"])
def test_phi_divergence_ball_fits_are_certified_by_the_dual_point(amb, loss):
    X_num, Z, y = bf.random_instance(3, 40, 1, LEVELS, "classification")
    model = dk.DROClassifier(loss=LOSSES[loss], ambiguity=amb).fit(_frame(X_num, Z), y)
    res = model.result_
    assert res.status == "optimal"
    assert res.auxiliary["lower_bound"]["source"] == "lagrangian", res.auxiliary["lower_bound"]
    ref = mot_training_value(X_num, Z, LEVELS, y, task="classification", loss=loss, rho=amb.radius, theta1=np.inf,
                             theta2=1.0, divergence=amb.divergence, gamma=GAMMA, delta=DELTA)["value"]
    assert res.lower_bound <= ref + 1e-9 and res.objective == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("divergence", DIVERGENCES, ids=repr)
@pytest.mark.parametrize("loss", ["logistic", "hinge", "huber", "pinball"])
def test_fits_are_certified_by_the_dual_point_below_the_reference(loss, divergence):
    """Every setting (moves priced and switched off, weights fixed and free): the fit's lower bound is the explicit
    dual point's (from the worst case, or the restricted dual on its rows where ties spread the multipliers), below
    the reference's optimum and within the certificate of the objective."""
    from test_mot_estimator import _fit
    for k, (rho, theta1, theta2) in enumerate(SETTINGS):
        model, ref = _fit(loss, 60 + k, rho, theta1, theta2, divergence)
        res = model.result_
        assert res.status == "optimal"
        assert res.auxiliary["lower_bound"]["source"] == "lagrangian", (k, res.auxiliary["lower_bound"])
        assert res.lower_bound <= ref["value"] + 1e-9 * max(1.0, abs(ref["value"]))
