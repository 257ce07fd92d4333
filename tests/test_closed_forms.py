"""Closed forms of the spec (belbasi2023 note D2 items 5 and 6) against drokit's own evaluation and solve."""

import numpy as np
import pytest

import drokit as dk
from tests.reference.brute_force import single_sample_closed_form

LOSSES = [("logistic", None, "classification"), ("hinge", None, "classification"),
          ("smooth_hinge", None, "classification"), ("huber", 0.7, "regression"),
          ("pinball", 0.3, "regression"), ("epsilon_insensitive", 0.2, "regression"),
          ("absolute", None, "regression")]


def _loss(name, param):
    cls = dk.losses.get_loss(name)
    return type(cls)(param) if param is not None else cls


@pytest.mark.parametrize("name,param,task", LOSSES)
def test_single_sample_closed_form(name, param, task):
    """N = 1, one numerical and one binary categorical feature with z = 0, kappa_y = inf (D2 item 5):
    WC(beta) = a + eps lam0 + min(1, eps/kappa_z) max(0, b - a - kappa_z lam0)."""
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for trial in range(12):
        x1, y1 = rng.normal(), (1.0 if rng.random() < 0.5 else -1.0) if task == "classification" else rng.normal()
        kappa_z, gamma = rng.uniform(0.3, 2.0), rng.uniform(0.5, 2.0)
        eps = [0.1, 0.9, 3.0][trial % 3]
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=[gamma]),
                                 categorical=dk.MismatchCost(weights=[kappa_z]))
        prob = dk.Problem(_loss(name, param), dk.Wasserstein(metric, radius=eps), task=task)
        inst = prob.bind(np.array([[x1, 0.0]]), np.array([y1]), categorical_features=[1], categories=[[0, 1]])
        b0, bx, bz = rng.normal(size=3) * 2
        ours = dk.worst_case_value(inst, b0, np.array([bx, bz])).value
        ref = single_sample_closed_form((b0, bx, bz), x1, y1, task=task, loss=name, loss_param=param,
                                        radius=eps, kappa_z=kappa_z, gamma=gamma)
        assert ours == pytest.approx(ref, rel=1e-8, abs=1e-10)


@pytest.mark.parametrize("name,param,task", [l for l in LOSSES if l[2] == "classification"])
def test_no_regularizer_witness(name, param, task):
    """D2 item 6 (belbasi2023 Thm 2): with eps > kappa_z the excess WC(beta) - L(nominal) depends on the
    data x1 at fixed beta, so no data-independent regularizer reproduces the mixed-feature model."""
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=[0.5]))
    prob = dk.Problem(_loss(name, param), dk.Wasserstein(metric, radius=1.0), task="classification")
    b0, bx, bz = 0.0, 1.0, 2.0  # bz * L' large enough that changing z pays at some x1
    excess = []
    for x1 in (-0.5, -8.0):
        inst = prob.bind(np.array([[x1, 0.0]]), np.array([-1.0]), categorical_features=[1], categories=[[0, 1]])
        wc = dk.worst_case_value(inst, b0, np.array([bx, bz])).value
        excess.append(wc - inst.loss.value(-1.0 * (b0 + bx * x1)))
    assert abs(excess[0] - excess[1]) > 1e-3
