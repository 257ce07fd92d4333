"""Separation oracles equal brute-force enumeration on thousands of random queries (issue 3)."""

import numpy as np
import pytest

import drokit as dk
from drokit.oracles import EnumerationOracle
from drokit.oracles.dp import DPOracle
from drokit.evaluation.worst_case import row_losses
from factories import mixed_instance

LOSSES = {"classification": [dk.losses.Logistic(), dk.losses.Hinge(), dk.losses.SmoothHinge()],
          "regression": [dk.losses.Huber(0.6), dk.losses.Pinball(0.3), dk.losses.EpsilonInsensitive(0.2),
                         dk.losses.Absolute()]}


def _instance(seed, task, loss, cat_p, weights, kappa, levels=(4, 3, 2, 5), N=9):
    return mixed_instance(seed, task, loss, dk.MismatchCost(weights=weights, p=cat_p), kappa, levels, N)


WEIGHTS = [None, [0.6, 1.3, 2.0, 0.9], [1.0, np.inf, 0.5, 1.0], [0.5, 0.5, 1.5, 1.0]]


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("cat_p", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("weights", WEIGHTS, ids=["unit", "generic", "immutable", "grid"])
def test_dp_oracle_equals_enumeration(task, cat_p, weights):
    rng = np.random.default_rng(0)
    for loss in LOSSES[task]:
        for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
            inst = _instance(int(rng.integers(1e6)), task, loss, cat_p, weights, kappa)
            dp, brute = DPOracle(inst), EnumerationOracle(inst)
            n_enc = inst.schema.n_encoded
            for _ in range(25):  # random queries (beta, lambda, s)
                b0, coef = rng.normal(), rng.normal(size=n_enc) * rng.choice([0.3, 1.0, 3.0])
                lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
                a, b = dp.separate(b0, coef, lam, s), brute.separate(b0, coef, lam, s)
                np.testing.assert_allclose(a.violation, b.violation, rtol=1e-10, atol=1e-10)
                # the returned configurations attain the reported violations
                attained = row_losses(inst, a.rows, b0, coef) - lam * a.rows.cost - s[a.rows.sample]
                np.testing.assert_allclose(attained, a.violation, rtol=1e-10, atol=1e-10)
                # and their costs are the metric's distances
                D = inst.metric.categorical_distance(a.rows.Z, inst.data.Z[a.rows.sample])
                kap = inst.metric.kappa if np.isfinite(inst.metric.kappa) else 0.0
                np.testing.assert_allclose(a.rows.cost, D + kap * a.rows.flip, atol=1e-12)


def test_dp_state_count_unit_weights_is_linear():
    inst = _instance(0, "classification", dk.losses.Logistic(), 1.0, None, np.inf, levels=(2,) * 12, N=4)
    assert DPOracle(inst).budgets.size == 13  # counts 0..12, as the sorting oracle


def test_dp_state_count_refuses_explosion():
    inst = _instance(0, "classification", dk.losses.Logistic(), 1.0,
                     list(np.random.default_rng(0).uniform(0.3, 2, 12)), np.inf, levels=(2,) * 12, N=4)
    assert DPOracle(inst).budgets.size == 2 ** 12
    with pytest.raises(dk.ProblemTooLargeError, match="budgets"):
        DPOracle(inst, max_budgets=1000)
