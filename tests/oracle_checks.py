"""Assertions shared by the separation-oracle tests: the rows an oracle returns are exact rows."""

import numpy as np

from drokit.evaluation.worst_case import row_losses


def assert_costs_are_distances(inst, rows):
    """Every row's cost is the metric's distance from its sample's levels (plus kappa on a label flip)."""
    D = inst.metric.categorical_distance(inst.data.Z[rows.sample], rows.Z)
    kappa = inst.metric.kappa if np.isfinite(inst.metric.kappa) else 0.0
    np.testing.assert_allclose(rows.cost, D + kappa * rows.flip, atol=1e-12)


def assert_rows_attain(inst, sep, b0, coef, lam, s):
    """The maximizers attain the reported violations ``l_k - lam c_k - s_n`` and cost the metric's distances."""
    attained = row_losses(inst, sep.rows, b0, coef) - lam * sep.rows.cost - s[sep.rows.sample]
    np.testing.assert_allclose(attained, sep.violation, rtol=1e-10, atol=1e-10)
    assert_costs_are_distances(inst, sep.rows)


def assert_near_rows(inst, sep, b0, coef, lam, s, margin):
    """The near-active rows lie within ``margin`` of their sample's maximum, never above it, and are exact rows;
    returns their values."""
    near = sep.near
    val = row_losses(inst, near, b0, coef) - lam * near.cost - s[near.sample]
    assert np.all(val >= sep.violation[near.sample] - margin - 1e-12)
    assert np.all(val <= sep.violation[near.sample] + 1e-12)
    assert_costs_are_distances(inst, near)
    return val


def assert_equals_enumeration(oracle, brute, inst, rng, queries: int, check_fixed: bool = False):
    """``queries`` random ``(b0, coef, lambda, s)``: the oracle's maxima equal the enumeration's and its rows attain
    them; with ``check_fixed`` its fixed-model tables give the same maxima at ``s = 0``."""
    for _ in range(queries):
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded) * rng.choice([0.3, 1.0, 3.0])
        lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
        a, b = oracle.separate(b0, coef, lam, s), brute.separate(b0, coef, lam, s)
        np.testing.assert_allclose(a.violation, b.violation, rtol=1e-10, atol=1e-10)
        assert_rows_attain(inst, a, b0, coef, lam, s)
        if check_fixed:
            np.testing.assert_allclose(oracle.fixed_model(b0, coef).values(lam)[0],
                                       oracle.separate(b0, coef, lam, 0 * s).violation, rtol=1e-12, atol=1e-12)
