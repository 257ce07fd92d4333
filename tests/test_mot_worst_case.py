"""The exact worst-case risk of a fixed model under OT with a moment constraint
(:mod:`drokit.certificates.mot_worst_case`, ``spec/mot-dro-training.md`` §2) against the independent finite-support
primal of ``tests/reference/mot_dro.py`` on brute-force instances (categorical moves and label flips), every
classification and regression loss, both divergences and the pure limits; the weights it returns are a distribution
of mean 1 whose risk is the value."""

from __future__ import annotations

import numpy as np
import pytest

import drokit as dk
from drokit.certificates.mot_worst_case import chi2_moment, kl_moment, mot_worst_case
from drokit.oracles import make_oracle
from drokit.oracles.rows import row_losses

pytest.importorskip("cvxpy")

from reference import brute_force as bf  # noqa: E402
from reference.mot_dro import worst_case_primal  # noqa: E402

LEVELS = [3, 2]
DELTA = np.array([0.7, 1.3])
LOSSES = {"logistic": dk.losses.Logistic(), "hinge": dk.losses.Hinge(), "smooth_hinge": dk.losses.SmoothHinge(),
          "huber": dk.losses.Huber(delta=0.8), "pinball": dk.losses.Pinball(tau=0.3),
          "epsilon_insensitive": dk.losses.EpsilonInsensitive(tau=0.2), "absolute": dk.losses.Absolute()}
PARAMS = {"huber": 0.8, "pinball": 0.3, "epsilon_insensitive": 0.2}


def _case(loss: str, seed: int, kappa: float):
    """A drokit instance of categorical data (every move enumerable), a fixed model, and the reference's loss and cost
    matrices ``(L, C)`` (one row per sample, one column per configuration and label)."""
    task = "classification" if loss in bf.CLASSIFICATION_LOSSES else "regression"
    _, Z, y = bf.random_instance(seed, 7, 0, LEVELS, task)
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=DELTA), label=dk.LabelCost(kappa=kappa))
    problem = dk.Problem(loss=LOSSES[loss], ambiguity=dk.Wasserstein(metric, radius=0.1), task=task)
    inst = problem.bind(Z.astype(float), y, categorical_features=[0, 1], categories=[list(range(a)) for a in LEVELS])
    rng = np.random.default_rng(seed + 1)
    intercept, coef = float(rng.normal()), rng.normal(size=inst.schema.n_encoded)
    sc, losses = bf.scenario_losses((intercept, np.zeros(0), coef), np.zeros((len(y), 0)), Z, LEVELS, y, task=task,
                                    loss=loss, loss_param=PARAMS.get(loss), delta=DELTA, kappa=kappa)
    per = np.bincount(sc["idx"])
    assert np.all(per == per[0])               # every sample has every configuration (and label)
    order = np.argsort(sc["idx"], kind="stable")
    L, C = losses[order].reshape(len(y), -1), sc["cost"][order].reshape(len(y), -1)
    # the same model in both: drokit's nominal losses are the reference's
    from drokit.oracles.enumeration import enumerate_configurations
    nominal = row_losses(inst, enumerate_configurations(inst, nominal_only=True), intercept, coef)
    np.testing.assert_allclose(nominal, [L[i][C[i] == 0].max() for i in range(len(y))], rtol=1e-12, atol=1e-12)
    return inst, intercept, coef, L, C


SETTINGS = [(0.3, 1.0, 1.0), (0.05, 0.5, 2.0), (0.3, np.inf, 0.5), (0.3, 1.0, np.inf)]


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize("loss", list(LOSSES))
def test_equals_the_finite_support_primal(loss, divergence):
    kappa = 1.5 if loss in bf.CLASSIFICATION_LOSSES else np.inf
    inst, intercept, coef, L, C = _case(loss, 11 + len(loss), kappa)
    oracle = make_oracle(inst, "auto")
    for rho, theta1, theta2 in SETTINGS:
        got = mot_worst_case(inst, oracle, intercept, coef, rho=rho, theta1=theta1, theta2=theta2,
                             divergence=divergence)
        ref = worst_case_primal(L, C, inst.p, rho, theta1, theta2, divergence)
        assert got.value == pytest.approx(ref, rel=1e-6, abs=1e-6), (rho, theta1, theta2)
        assert got.value >= ref - 1e-6              # an upper bound (weak duality) up to the primal's tolerance
        # the worst case: weights of mean 1 on each sample's maximizing row, whose weighted risk is the bracket
        assert inst.p @ got.weight == pytest.approx(1.0, abs=1e-9)
        assert np.all(got.weight >= 0)


def test_radius_zero_is_the_nominal_risk():
    inst, intercept, coef, L, C = _case("logistic", 5, 1.5)
    got = mot_worst_case(inst, make_oracle(inst), intercept, coef, rho=0.0, theta1=1.0, theta2=1.0, divergence="kl")
    assert got.value == pytest.approx(inst.p @ np.array([L[i][C[i] == 0].max() for i in range(len(L))]), abs=1e-12)


def test_the_moment_solutions_are_exact():
    """KL: alpha* = h log sum p exp(S/h), weights of mean 1; chi-square: the sorted root of the piecewise-linear
    moment equation, checked against a fine bisection, and the bracket equals its direct evaluation."""
    rng = np.random.default_rng(3)
    S, p = rng.normal(size=30), rng.dirichlet(np.ones(30))
    for h in (0.05, 0.7, 20.0):
        alpha, w = kl_moment(S, p, h)
        assert p @ w == pytest.approx(1.0, abs=1e-12)
        alpha2, w2, bracket = chi2_moment(S, p, h)
        assert p @ w2 == pytest.approx(1.0, abs=1e-12)
        lo, hi = S.min() - 10 * h - 10, S.max() + 10
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if p @ np.maximum((S - mid) / (2 * h) + 1, 0) > 1 else (lo, mid)
        assert alpha2 == pytest.approx(0.5 * (lo + hi), abs=1e-9)
        direct = alpha2 + p @ (h * (np.maximum((S - alpha2) / (2 * h) + 1, 0) ** 2 - 1))
        assert bracket == pytest.approx(direct, abs=1e-12)


def test_bad_arguments_are_named():
    inst, intercept, coef, _, _ = _case("logistic", 5, 1.5)
    with pytest.raises(dk.ParameterError, match="divergence"):
        mot_worst_case(inst, None, intercept, coef, rho=0.1, theta1=1.0, theta2=1.0, divergence="tv")
    with pytest.raises(dk.ParameterError, match="not both inf"):
        mot_worst_case(inst, None, intercept, coef, rho=0.1, theta1=np.inf, theta2=np.inf, divergence="kl")
    with pytest.raises(dk.ParameterError, match="rho"):
        mot_worst_case(inst, None, intercept, coef, rho=-1.0, theta1=1.0, theta2=1.0, divergence="kl")


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_the_atoms_satisfy_the_lagrangian_identity(divergence):
    """The atoms (each sample's worst row at the optimal lambda, weight w_i, mass p_i) give
    R(beta) = E_Q[W l] + lambda (rho - theta1 sum p_i w_i c_i - theta2 sum p_i phi(w_i)) exactly (the Lagrangian at
    the inner maximizers, spec §3).  The budget need not bind with one row per sample: the optimal lambda is typically
    a kink of the piecewise-linear S_i, where a sample's mass splits between two rows (spec §3), so Q is a worst case
    only up to that split."""
    inst, intercept, coef, _, _ = _case("logistic", 9, 1.5)
    phi = {"kl": lambda w: w * np.log(np.where(w > 0, w, 1.0)) - w + 1.0, "chi2": lambda w: (w - 1.0) ** 2}[divergence]
    for rho, theta1, theta2 in [(0.3, 1.0, 1.0), (0.05, 0.5, 2.0)]:
        got = mot_worst_case(inst, make_oracle(inst), intercept, coef, rho=rho, theta1=theta1, theta2=theta2,
                             divergence=divergence)
        losses = row_losses(inst, got.rows, intercept, coef)
        spent = theta1 * inst.p @ (got.weight * got.rows.cost) + theta2 * inst.p @ phi(got.weight)
        assert got.lam > 0
        assert inst.p @ (got.weight * losses) + got.lam * (rho - spent) == pytest.approx(got.value, abs=1e-9)
