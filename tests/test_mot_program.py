"""The MOT-DRO training program (:mod:`drokit.reformulations.mot_dual`, ``spec/mot-dro-training.md`` (D)) with every
configuration row: its optimum equals the independent full-enumeration training program of
``tests/reference/mot_dro.py`` (cvxpy atoms, brute-force scenarios) for every loss, both divergences, numerical moves
and the pure limits; and the exact worst-case risk of the model it returns (:mod:`drokit.certificates.mot_worst_case`)
equals its optimum (the certificate's upper bound closes the gap)."""

from __future__ import annotations

import numpy as np
import pytest

import drokit as dk
from drokit.certificates.mot_worst_case import mot_worst_case
from drokit.oracles import make_oracle
from drokit.oracles.enumeration import enumerate_configurations
from drokit.reformulations.mot_dual import build_mot_program
from drokit.solvers import get_backend
from drokit.solvers.base import solve_with_retries

pytest.importorskip("cvxpy")

from reference import brute_force as bf  # noqa: E402
from reference.mot_dro import mot_training_value  # noqa: E402

LEVELS = [3, 2]
DELTA = np.array([0.7, 1.3])
GAMMA = np.array([1.2])
LOSSES = {"logistic": dk.losses.Logistic(), "hinge": dk.losses.Hinge(), "smooth_hinge": dk.losses.SmoothHinge(),
          "huber": dk.losses.Huber(delta=0.8), "pinball": dk.losses.Pinball(tau=0.3),
          "epsilon_insensitive": dk.losses.EpsilonInsensitive(tau=0.2), "absolute": dk.losses.Absolute()}
PARAMS = {"huber": 0.8, "pinball": 0.3, "epsilon_insensitive": 0.2}


def _fit(loss: str, seed: int, rho: float, theta1: float, theta2: float, divergence: str, norm_p=1):
    task = "classification" if loss in bf.CLASSIFICATION_LOSSES else "regression"
    kappa = 1.5 if task == "classification" else 2.0
    X_num, Z, y = bf.random_instance(seed, 7, 1, LEVELS, task)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p, weights=GAMMA), categorical=dk.MismatchCost(weights=DELTA),
                             label=dk.LabelCost(kappa=kappa))
    problem = dk.Problem(loss=LOSSES[loss], ambiguity=dk.Wasserstein(metric, radius=0.1), task=task)
    inst = problem.bind(np.column_stack([X_num, Z]).astype(float), y, categorical_features=[1, 2],
                        categories=[list(range(a)) for a in LEVELS])
    rows = enumerate_configurations(inst, nominal_only=bool(np.isinf(theta1)))
    program = build_mot_program(inst, rows, rho=rho, theta1=theta1, theta2=theta2, divergence=divergence)
    solution = solve_with_retries(get_backend("clarabel"), program)
    assert solution.status == "optimal", solution.status
    ref = mot_training_value(X_num, Z, LEVELS, y, task=task, loss=loss, loss_param=PARAMS.get(loss), rho=rho,
                             theta1=theta1, theta2=theta2, divergence=divergence, norm_p=norm_p, gamma=GAMMA,
                             delta=DELTA, kappa=kappa)
    return inst, program, solution, ref


SETTINGS = [(0.3, 1.0, 1.0), (0.05, 0.5, 2.0), (0.3, np.inf, 0.5), (0.2, 1.0, np.inf)]


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize("loss", list(LOSSES))
def test_the_program_equals_the_reference_and_its_model_is_certified(loss, divergence):
    for k, (rho, theta1, theta2) in enumerate(SETTINGS):
        inst, program, solution, ref = _fit(loss, 40 + k, rho, theta1, theta2, divergence)
        assert solution.primal_objective == pytest.approx(ref["value"], rel=1e-5, abs=1e-6), (rho, theta1, theta2)
        intercept = float(program.value("intercept", solution.x)[0])
        coef = program.value("coef", solution.x)
        upper = mot_worst_case(inst, make_oracle(inst), intercept, coef, rho=rho, theta1=theta1, theta2=theta2,
                               divergence=divergence).value
        assert upper >= ref["value"] - 1e-6                      # the model's exact risk: never below the optimum
        assert upper == pytest.approx(ref["value"], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("norm_p", [2, np.inf])
def test_other_numerical_norms(norm_p):
    _, _, solution, ref = _fit("logistic", 7, 0.3, 1.0, 1.0, "kl", norm_p=norm_p)
    assert solution.primal_objective == pytest.approx(ref["value"], rel=1e-5, abs=1e-6)


def test_weights_fixed_is_the_wasserstein_program():
    """theta2 = inf: the Wasserstein model of cost theta1 d and radius rho, i.e. cost d and radius rho / theta1."""
    _, _, solution, _ = _fit("logistic", 3, 0.4, 2.0, np.inf, "kl")
    ref = bf.dro_value(*_data(3), task="classification", loss="logistic", radius=0.2, norm_p=1, gamma=GAMMA,
                       delta=DELTA, kappa=1.5)["value"]
    assert solution.primal_objective == pytest.approx(ref, rel=1e-6, abs=1e-7)


def _data(seed):
    X_num, Z, y = bf.random_instance(seed, 7, 1, LEVELS, "classification")
    return X_num, Z, LEVELS, y


def test_bad_arguments_are_named():
    inst, _, _, _ = _fit("logistic", 3, 0.3, 1.0, 1.0, "kl")
    rows = enumerate_configurations(inst)
    with pytest.raises(dk.ParameterError, match="divergence"):
        build_mot_program(inst, rows, rho=0.1, theta1=1.0, theta2=1.0, divergence="tv")
    with pytest.raises(dk.ParameterError, match="nominal rows"):
        build_mot_program(inst, rows, rho=0.1, theta1=np.inf, theta2=1.0, divergence="kl")
