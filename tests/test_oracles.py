"""Separation oracles equal brute-force enumeration on thousands of random queries (issue 3)."""

import numpy as np
import pytest

import drokit as dk
from drokit.oracles import EnumerationOracle
from drokit.oracles.dp import DPOracle
from drokit.evaluation.worst_case import row_losses
from factories import mixed_instance
from oracle_checks import assert_near_rows

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
                D = inst.metric.categorical_distance(inst.data.Z[a.rows.sample], a.rows.Z)
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


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("weights", WEIGHTS, ids=["unit", "generic", "immutable", "grid"])
def test_dp_near_rows_are_exact_and_cover_every_budget_within_the_margin(task, weights):
    """The DP oracle's near-active rows attain their values, lie within the margin, leave out the maximizer,
    respect the per-sample cap, and -- uncapped -- hold the best row of every (cost, label) class whose best
    value is within the margin (checked against brute-force enumeration)."""
    rng = np.random.default_rng(7)
    for loss in LOSSES[task]:
        for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
            inst = _instance(int(rng.integers(1e6)), task, loss, 1.0, weights, kappa)
            dp, brute = DPOracle(inst), EnumerationOracle(inst)
            for _ in range(10):
                b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
                lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
                margin = rng.choice([0.05, 0.5, 5.0])
                sep = dp.separate(b0, coef, lam, s, near_margin=margin)
                near = sep.near
                val = assert_near_rows(inst, sep, b0, coef, lam, s, margin)
                mine = {}              # best value per (sample, cost, label) among the maximizers and near rows
                for n, c, f, v in zip(np.r_[near.sample, sep.rows.sample], np.r_[near.cost, sep.rows.cost],
                                      np.r_[near.flip, sep.rows.flip], np.r_[val, sep.violation]):
                    mine[(n, round(c, 9), f)] = max(mine.get((n, round(c, 9), f), -np.inf), v)
                every = brute.rows
                phi = brute.losses(b0, coef) - lam * every.cost - s[every.sample]
                for key in {(n, round(c, 9), f) for n, c, f in zip(every.sample, every.cost, every.flip)}:
                    sel = (every.sample == key[0]) & (np.round(every.cost, 9) == key[1]) & (every.flip == key[2])
                    top = phi[sel].max()
                    if top >= sep.violation[key[0]] - margin + 1e-9:
                        assert key in mine and mine[key] == pytest.approx(top, abs=1e-10), key
                capped = dp.separate(b0, coef, lam, s, near_margin=margin, near_limit=1)
                assert np.all(np.bincount(capped.near.sample, minlength=inst.n_samples) <= 1)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("keep_tables", [True, False])
def test_fixed_model_separation_equals_the_oracle_at_every_lambda(task, keep_tables, monkeypatch):
    """:class:`~drokit.oracles.dp.FixedModelSeparation` (one model's DP tables computed once, for the worst-case
    evaluation's search over lambda) returns exactly what :meth:`DPOracle.separate` returns at ``s = 0``: the
    same violations, costs and configurations, bit for bit, with the loss tables kept or recomputed, for mismatch
    and ordinal costs (samples that cannot reach every budget), finite and infinite kappa."""
    import drokit.oracles.dp as dp_module
    from drokit.oracles.dp import FixedModelSeparation
    if not keep_tables:
        monkeypatch.setattr(dp_module, "FIXED_TABLE_ENTRIES", 0)
    rng = np.random.default_rng(7)
    costs = [dk.MismatchCost(weights=[0.6, 1.3, 2.0, 0.9]), dk.OrdinalCost(weights=[0.5, 1.0, 1.0, 0.7], features=["x2", "x3", "x5"])]
    for loss in LOSSES[task][:2]:
        for cost in costs:
            for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
                inst = mixed_instance(int(rng.integers(1e6)), task, loss, cost, kappa, (4, 3, 2, 5), 9)
                oracle = DPOracle(inst)
                b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
                fixed = FixedModelSeparation(oracle, b0, coef)
                assert (fixed.tables is not None) == keep_tables
                zeros = np.zeros(inst.n_samples)
                for lam in rng.uniform(0, 3, size=6):
                    ref = oracle.separate(b0, coef, lam, zeros)
                    violation, cost_k = fixed.values(lam)
                    assert np.array_equal(violation, ref.violation)
                    assert np.array_equal(cost_k, ref.rows.cost)
                    sep = fixed.separation(lam)
                    assert np.array_equal(sep.rows.Z, ref.rows.Z) and np.array_equal(sep.rows.flip, ref.rows.flip)
