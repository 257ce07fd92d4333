"""Exact worst-case risk of a fixed model: equals the optimum at the optimal model, equals the primal
transport LP (an independent formulation) for categorical data, and is an upper bound elsewhere."""

import numpy as np
import pytest

import drokit as dk
from drokit.evaluation.worst_case import worst_case_value_numerical
from drokit.oracles import enumerate_configurations
from tests.reference.brute_force import random_instance, worst_case_primal_lp

LEVELS = [2, 3, 2]


@pytest.mark.parametrize("loss", ["logistic", "hinge", "smooth_hinge"])
@pytest.mark.parametrize("kappa", [np.inf, 0.7])
def test_dual_evaluation_equals_primal_transport_lp(loss, kappa):
    _, Z, y = random_instance(4, 7, 0, LEVELS, "classification")
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=[1.0, 0.5, 2.0]), label=dk.LabelCost(kappa))
    prob = dk.Problem(loss, dk.Wasserstein(metric, radius=0.4))
    inst = prob.bind(Z.astype(float), y, categorical_features=[0, 1, 2],
                     categories=[list(range(a)) for a in LEVELS])
    rng = np.random.default_rng(0)
    for _ in range(3):
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        ours = dk.worst_case_value(inst, b0, coef)
        # reference coefficients per feature block: bz = coef (no numerical features)
        ref, pi = worst_case_primal_lp((b0, np.zeros(0), coef), Z, LEVELS, y, loss=loss, radius=0.4,
                                       delta=np.array([1.0, 0.5, 2.0]), kappa=kappa)
        assert ours.value == pytest.approx(ref, rel=1e-7, abs=1e-9)
        assert ours.mass.sum() == pytest.approx(1.0, abs=1e-7)   # masses of a probability distribution
        assert ours.lam >= ours.lam_min - 1e-12


def test_worst_case_at_optimum_equals_objective_and_bounds_others():
    Xn, Z, y = random_instance(5, 9, 2, LEVELS, "classification")
    X = np.column_stack([Xn, Z])
    kw = dict(categorical_features=[2, 3, 4], categories=[list(range(a)) for a in LEVELS])
    prob = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(1.0)), radius=0.2))
    res = prob.compile(X, y, method="monolithic", **kw).solve()
    inst = prob.bind(X, y, **kw)
    assert dk.worst_case_value(inst, res.intercept, res.coef).value == pytest.approx(res.objective, rel=1e-6)
    rng = np.random.default_rng(1)
    for _ in range(5):
        other = res.coef + 0.3 * rng.normal(size=res.coef.size)
        assert dk.worst_case_value(inst, res.intercept, other).value >= res.objective - 1e-7


@pytest.mark.parametrize("loss,task,kappa", [("logistic", "classification", np.inf),
                                             ("hinge", "classification", 0.6),
                                             ("smooth_hinge", "classification", 1.5),
                                             ("huber", "regression", np.inf),
                                             ("pinball", "regression", 2.0)])
def test_oracle_evaluation_equals_enumeration_lp(loss, task, kappa):
    """The DP-oracle 1-D minimization over lambda equals the enumeration LP (no enumeration needed)."""
    Xn, Z, y = random_instance(8, 10, 2, LEVELS, task)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2), categorical=dk.MismatchCost([0.7, 1.2, 0.4], p=2),
                             label=dk.LabelCost(kappa))
    for radius in (0.05, 0.5, 3.0):
        prob = dk.Problem(loss, dk.Wasserstein(metric, radius=radius), task=task)
        inst = prob.bind(np.column_stack([Xn, Z]), y, categorical_features=[2, 3, 4],
                         categories=[list(range(a)) for a in LEVELS])
        rng = np.random.default_rng(int(radius * 10))
        for _ in range(4):
            b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
            lp = dk.worst_case_value(inst, b0, coef).value
            dp = dk.worst_case_value_oracle(inst, b0, coef).value
            assert dp == pytest.approx(lp, rel=1e-8, abs=1e-10)
            # a lambda hint (the fit's own, near the minimizer; or anywhere) changes only the number of calls
            best = dk.worst_case_value_oracle(inst, b0, coef).lam
            for hint in (best, best * (1 + 1e-9), best * 0.7, best * 3.0 + 1.0, 1e-9, 1e4):
                hinted = dk.worst_case_value_oracle(inst, b0, coef, lam_hint=hint).value
                assert hinted == pytest.approx(lp, rel=1e-8, abs=1e-10), hint


@pytest.mark.parametrize("explicit_rows", [False, True])
def test_radius_zero_masses_are_the_empirical_distribution(explicit_rows):
    """At radius 0 the ball is {P_N}: the worst-case masses are 1/N on one nominal row (cost 0, label
    kept) per sample, sum to 1 and reproduce the value, as the masses of a radius > 0 evaluation do."""
    Xn, Z, y = random_instance(3, 8, 2, LEVELS, "classification")
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=[1.0, 0.5, 2.0]), label=dk.LabelCost(0.7))
    kw = dict(categorical_features=[2, 3, 4], categories=[list(range(a)) for a in LEVELS])
    rng = np.random.default_rng(5)
    for radius in (0.0, 0.3):
        inst = dk.Problem("logistic", dk.Wasserstein(metric, radius=radius)).bind(np.column_stack([Xn, Z]),
                                                                                   y, **kw)
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        rows = enumerate_configurations(inst) if explicit_rows else None
        res = dk.worst_case_value(inst, b0, coef, rows=rows)
        assert res.mass.shape == (res.rows.size,) and (res.mass >= -1e-12).all()
        assert res.mass.sum() == pytest.approx(1.0, abs=1e-9)
        per_sample = np.bincount(res.rows.sample, weights=res.mass, minlength=8)
        np.testing.assert_allclose(per_sample, 1 / 8, atol=1e-9)
        assert res.mass @ res.losses == pytest.approx(res.value, rel=1e-9)
        if radius == 0:
            on = res.mass > 0
            assert on.sum() == 8 and (res.rows.cost[on] == 0).all() and not res.rows.flip[on].any()
            np.testing.assert_array_equal(np.sort(res.rows.sample[on]), np.arange(8))


@pytest.mark.parametrize("threshold", [0, 10 ** 9])
def test_certificate_paths_agree(monkeypatch, threshold):
    """The fit's certificate takes the oracle path above CERTIFICATE_ENUMERATION_ROWS and the enumeration
    LP below it; both give the exact worst-case risk, which at the optimum is the fitted objective."""
    import importlib
    wc = importlib.import_module("drokit.certificates.worst_case")  # where the certificate reads it
    monkeypatch.setattr(wc, "CERTIFICATE_ENUMERATION_ROWS", threshold)
    Xn, Z, y = random_instance(11, 40, 2, LEVELS, "classification")
    X = np.column_stack([Xn, Z])
    kw = dict(categorical_features=[2, 3, 4], categories=[list(range(a)) for a in LEVELS])
    metric = dk.GroundMetric(categorical=dk.MismatchCost([0.7, 1.2, 0.4]), label=dk.LabelCost(2.0))
    prob = dk.Problem("logistic", dk.Wasserstein(metric, radius=0.3))
    res = prob.compile(X, y, method="cutting_plane", **kw).solve()
    inst = prob.bind(X, y, **kw)
    exact = dk.worst_case_value(inst, res.intercept, res.coef).value
    # HiGHS solves the LP to ~1e-9; the oracle returns F at its best lambda (never below the minimum)
    assert wc.certified_upper_bound(inst, res.intercept, res.coef) == pytest.approx(exact, rel=1e-8, abs=1e-12)
    assert res.upper_bound == pytest.approx(exact, rel=1e-8, abs=1e-12)
    assert res.lower_bound <= res.upper_bound + 1e-9


def test_stylized_bound_categorical_worst_case_saturates_at_the_largest_loss():
    """selvi2025 thesis §3.5.1 (spec §5.3 test 12): without numerical features the worst case of a fixed model
    is bounded by max_{z, y} loss(z, y) and reaches it as the radius grows -- 2 for the hinge loss of
    beta_z = 1 on one binary feature with labels flipping at cost kappa (a continuous feature would grow
    without bound instead)."""
    import pandas as pd
    from drokit.evaluation.worst_case import worst_case_value
    X = pd.DataFrame({"z": pd.Categorical(["a", "b", "a", "b"], categories=["a", "b"])})
    y = np.array([1, 1, -1, -1])
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=1.0), label=dk.LabelCost(kappa=1.0))
    values = []
    for radius in (0.1, 1.0, 10.0, 100.0):
        inst = dk.Problem(loss="hinge", ambiguity=dk.Wasserstein(metric, radius=radius)).bind(X, y)
        # f(z) = -0.5 + 1 * [z = b]: scores -0.5 / +0.5, so max over (z, y) of max(0, 1 - y f) = 1.5
        values.append(worst_case_value(inst, -0.5, np.array([1.0])).value)
    assert np.all(np.diff(values) >= -1e-12)
    assert values[-1] == pytest.approx(1.5, abs=1e-9)
    assert max(values) <= 1.5 + 1e-9
    # the thesis's example: beta_z = 1 without intercept on z in {-1, +1} is f = +-1, max hinge 2
    inst = dk.Problem(loss="hinge", ambiguity=dk.Wasserstein(metric, radius=100.0), fit_intercept=False).bind(X, y)
    assert worst_case_value(inst, -1.0, np.array([2.0])).value == pytest.approx(2.0, abs=1e-9)


@pytest.mark.parametrize("loss,task,kappa", [("logistic", "classification", np.inf),
                                             ("logistic", "classification", 0.8),
                                             ("hinge", "classification", 0.3),
                                             ("smooth_hinge", "classification", 5.0),
                                             ("huber", "regression", np.inf),
                                             ("pinball", "regression", 2.0)])
@pytest.mark.parametrize("radius", [0.0, 0.02, 0.4, 6.0])
def test_numerical_sort_equals_enumeration_lp(loss, task, kappa, radius):
    """No mutable categorical feature: the exact sort over lambda's breakpoints (the certificate's path)
    equals the enumeration LP, with sample weights, immutable categorical columns and an attack."""
    Xn, Z, y = random_instance(12, 30, 3, LEVELS, task)
    X = np.column_stack([Xn, Z])
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=[0.5, 2.0, 1.0]),
                             categorical=dk.MismatchCost([np.inf, np.inf, np.inf]), label=dk.LabelCost(kappa))
    kw = dict(categorical_features=[3, 4, 5], categories=[list(range(a)) for a in LEVELS])
    weights = np.random.default_rng(2).random(30) + 0.1
    for the_loss in (loss, dk.losses.Adversarial(loss, norm=2, budget=0.1)):
        prob = dk.Problem(the_loss, dk.Wasserstein(metric, radius=radius), task=task)
        inst = prob.bind(X, y, sample_weight=weights, **kw)
        rng = np.random.default_rng(4)
        for _ in range(4):
            b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
            lp = dk.worst_case_value(inst, b0, coef).value
            assert worst_case_value_numerical(inst, b0, coef) == pytest.approx(lp, rel=1e-8, abs=1e-9)
