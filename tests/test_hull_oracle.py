"""The hull oracle (drokit/oracles/hull.py, issue 27): exact separation for any positive categorical weights.

Checked against brute-force enumeration (every configuration) and the budget DP on random queries, including the
returned rows' values and costs, its near-active rows, its fixed-model tables, where ``auto`` uses it, the
fits it makes possible (weights whose budget lattice the DP refuses), and a mutation (a hull without its falling
chain) that the enumeration comparison must catch.
"""

import numpy as np
import pytest

import drokit as dk
from drokit.evaluation.worst_case import worst_case_value_oracle
from drokit.oracles import EnumerationOracle, make_oracle
from drokit.oracles.dp import DPOracle
from drokit.oracles.hull import HullOracle, hull_applies
from factories import mixed_instance
from oracle_checks import assert_equals_enumeration, assert_near_rows, assert_rows_attain

LOSSES = {"classification": [dk.losses.Logistic(), dk.losses.Hinge(), dk.losses.SmoothHinge()],
          "regression": [dk.losses.Huber(0.6), dk.losses.Pinball(0.3), dk.losses.EpsilonInsensitive(0.2),
                         dk.losses.Absolute()]}
WEIGHTS = [None, [0.6, 1.3, 2.0, 0.9, 0.45], [1.0, np.inf, 0.5, 1.0, 0.7], [0.5, 0.5, 1.5, 1.0, 0.5]]
LEVELS = (4, 3, 2, 5, 2)


def _instance(seed, task, loss, p, weights, kappa, levels=LEVELS, N=9):
    return mixed_instance(seed, task, loss, dk.MismatchCost(weights=weights, p=p), kappa, levels, N)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("weights", WEIGHTS, ids=["unit", "generic", "immutable", "grid"])
def test_hull_oracle_equals_enumeration(task, p, weights):
    rng = np.random.default_rng(int(p * 10) + len(task))
    for loss in LOSSES[task]:
        for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
            inst = _instance(int(rng.integers(1e6)), task, loss, p, weights, kappa)
            assert_equals_enumeration(HullOracle(inst), EnumerationOracle(inst), inst, rng, 20)


def test_hull_oracle_equals_the_dp_on_wider_data_with_real_weights():
    """11 features of 2-6 levels, real weights (a 2^11-budget lattice for the DP), 300 samples."""
    rng = np.random.default_rng(3)
    levels = tuple(int(a) for a in rng.integers(2, 7, 11))
    for loss, kappa in [(dk.losses.Logistic(), np.inf), (dk.losses.Hinge(), 1.2)]:
        weights = list(rng.uniform(0.2, 2.0, 11))
        inst = _instance(5, "classification", loss, 1.0, weights, kappa, levels, 300)
        hull, dp = HullOracle(inst), DPOracle(inst)
        for _ in range(5):
            b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
            lam, s = rng.uniform(0, 2), np.zeros(inst.n_samples)
            a, b = hull.separate(b0, coef, lam, s), dp.separate(b0, coef, lam, s)
            np.testing.assert_allclose(a.violation, b.violation, rtol=1e-10, atol=1e-10)
            assert_rows_attain(inst, a, b0, coef, lam, s)


def test_a_hull_without_its_falling_chain_is_caught(monkeypatch):
    """Mutation: the points of the rising chain only (the score raised, never lowered) must disagree with
    enumeration somewhere -- the comparison above can fail."""
    import drokit.oracles.hull as hull_module
    original = hull_module.HullOracle.points

    def rising_only(self, coef, *args, **kwargs):
        pts = original(self, coef, *args, **kwargs)
        m = self.mutable.size
        pts.A[:, m + 1:], pts.B[:, m + 1:] = 0.0, 0.0         # every falling point replaced by the nominal row
        return pts
    monkeypatch.setattr(hull_module.HullOracle, "points", rising_only)
    inst = _instance(1, "classification", dk.losses.Logistic(), 1.0, WEIGHTS[1], np.inf)
    assert _largest_shortfall(inst, np.random.default_rng(0), 20, (0.0, 1.0)) > 1e-3


def _largest_shortfall(inst, rng, queries: int, lam_range) -> float:
    """The largest amount by which the hull oracle's maxima fall below enumeration's over random queries (``s = 0``,
    ``lambda`` uniform in ``lam_range``): a mutation must make it positive."""
    hull, brute = HullOracle(inst), EnumerationOracle(inst)
    worst = 0.0
    for _ in range(queries):
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        lam, s = rng.uniform(*lam_range), np.zeros(inst.n_samples)
        worst = max(worst, float(np.max(brute.separate(b0, coef, lam, s).violation
                                        - hull.separate(b0, coef, lam, s).violation)))
    return worst


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("p", [1.0, 2.0])
def test_the_screening_settles_some_samples_and_equals_enumeration(task, p, monkeypatch):
    """The samples whose nominal row is provably their maximum skip the hull (``_screened_separation``): on random
    queries some settle and some do not (both paths run), and the maxima equal enumeration's and the full hull's."""
    sizes = []
    original = HullOracle.points

    def counting(self, coef, samples=None, alternatives=None):
        sizes.append(self.n_samples if samples is None else np.size(samples))
        return original(self, coef, samples, alternatives)
    monkeypatch.setattr(HullOracle, "points", counting)
    rng = np.random.default_rng(7 + int(p))
    for loss in LOSSES[task]:
        for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
            inst = _instance(int(rng.integers(1e6)), task, loss, p, WEIGHTS[1], kappa, N=40)
            hull, brute = HullOracle(inst), EnumerationOracle(inst)
            for _ in range(12):
                b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded) * rng.choice([0.1, 0.3, 1.0])
                lam, s = rng.uniform(0.2, 3.0), rng.normal(size=inst.n_samples)
                a, b = hull.separate(b0, coef, lam, s), brute.separate(b0, coef, lam, s)
                np.testing.assert_allclose(a.violation, b.violation, rtol=1e-10, atol=1e-10)
                assert_rows_attain(inst, a, b0, coef, lam, s)
                full = hull.separate(b0, coef, lam, s, near_margin=1e-300)        # the unscreened path
                np.testing.assert_allclose(a.violation, full.violation, rtol=1e-12, atol=1e-12)
    screened = [n for n in sizes if n < 40]
    assert any(n == 0 for n in sizes) or len(screened) > 0, sizes
    assert any(0 < n < 40 for n in sizes), "no query settled only part of the samples"


def test_a_screening_blind_to_the_loss_is_caught(monkeypatch):
    """Mutation: a screening blind to the loss (phi = 0: every sample settles at its nominal row); enumeration must
    disagree."""
    import drokit.oracles.hull as hull_module
    inst = _instance(2, "classification", dk.losses.Logistic(), 1.0, WEIGHTS[1], np.inf, N=40)
    monkeypatch.setattr(hull_module, "nominal_is_maximum", lambda loss, u0, *rest: np.ones(u0.shape, dtype=bool))
    assert _largest_shortfall(inst, np.random.default_rng(1), 10, (0.2, 1.0)) > 1e-3


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_hull_near_rows_are_exact_within_the_margin_and_capped(task):
    rng = np.random.default_rng(11)
    for loss in LOSSES[task][:2]:
        for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
            inst = _instance(int(rng.integers(1e6)), task, loss, 1.0, WEIGHTS[1], kappa)
            hull = HullOracle(inst)
            for _ in range(10):
                b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
                lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
                margin = rng.choice([0.05, 0.5, 5.0])
                sep = hull.separate(b0, coef, lam, s, near_margin=margin)
                assert_near_rows(inst, sep, b0, coef, lam, s, margin)
                near = sep.near
                same = np.all(near.Z == sep.rows.Z[near.sample], axis=1) & (near.flip == sep.rows.flip[near.sample])
                assert not same.any()                          # the maximizer is left out
                capped = hull.separate(b0, coef, lam, s, near_margin=margin, near_limit=1)
                assert np.all(np.bincount(capped.near.sample, minlength=inst.n_samples) <= 1)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_fixed_model_hull_equals_the_oracle_at_every_lambda(task):
    rng = np.random.default_rng(5)
    for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
        inst = _instance(int(rng.integers(1e6)), task, LOSSES[task][0], 2.0, WEIGHTS[1], kappa)
        oracle = HullOracle(inst)
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        fixed = oracle.fixed_model(b0, coef)
        zeros = np.zeros(inst.n_samples)
        for lam in rng.uniform(0, 3, size=6):
            ref = oracle.separate(b0, coef, lam, zeros)
            violation, cost = fixed.values(lam)
            np.testing.assert_allclose(violation, ref.violation, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(cost, ref.rows.cost, rtol=1e-12, atol=1e-12)
            sep = fixed.separation(lam)
            assert np.array_equal(sep.rows.Z, ref.rows.Z) and np.array_equal(sep.rows.flip, ref.rows.flip)


def test_worst_case_value_is_the_same_with_the_hull_and_the_dp():
    rng = np.random.default_rng(2)
    inst = _instance(9, "classification", dk.losses.Logistic(), 1.0, WEIGHTS[1], 0.8, N=40)
    for _ in range(3):
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        a = worst_case_value_oracle(inst, b0, coef, oracle=HullOracle(inst))
        b = worst_case_value_oracle(inst, b0, coef, oracle=DPOracle(inst))
        assert a.value == pytest.approx(b.value, rel=1e-10, abs=1e-12)


def test_negative_lambda_is_exact_for_p_1_and_the_worst_case_distribution_asks_the_dp_otherwise():
    """A master's lambda can come out a hair below 0.  For p = 1, h is linear in B and the hull stays exact (equal
    to enumeration at lambda < 0); for p = 2 the worst-case distribution's left derivative asks the DP."""
    rng = np.random.default_rng(4)
    inst = _instance(4, "classification", dk.losses.Logistic(), 1.0, WEIGHTS[1], np.inf)
    hull, brute = HullOracle(inst), EnumerationOracle(inst)
    assert hull.exact_below_zero
    for lam in (-1e-9, -0.05, -0.7):
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        s = rng.normal(size=inst.n_samples)
        np.testing.assert_allclose(hull.separate(b0, coef, lam, s).violation, brute.separate(b0, coef, lam, s).violation,
                                   rtol=1e-10, atol=1e-10)
    from drokit.certificates.support import _OracleRows
    inst2 = _instance(4, "classification", dk.losses.Logistic(), 2.0, WEIGHTS[1], np.inf)
    coef = rng.normal(size=inst2.schema.n_encoded)
    rows = _OracleRows(inst2, 0.2, coef)
    assert isinstance(rows.oracle, HullOracle) and not rows.oracle.exact_below_zero
    _, got = rows(-0.05)
    ref = DPOracle(inst2).separate(0.2, coef, -0.05, np.zeros(inst2.n_samples))
    np.testing.assert_allclose(np.sort(got), np.sort(ref.violation), rtol=1e-12)


class _RandomLevelCost(dk.metrics.CategoricalCost):
    """A user level cost: random positive unit costs between different levels (not symmetric, not a metric)."""

    def __init__(self, seed=0, weights=None, p=1):
        super().__init__(weights=weights, p=p)
        self.seed = seed

    def unit_costs(self, schema):
        rng = np.random.default_rng(self.seed)
        out = []
        for a in schema.levels:
            U = rng.uniform(0.2, 2.0, size=(a, a))
            np.fill_diagonal(U, 0.0)
            out.append(U)
        return out


def _level_costs():
    return [dk.OrdinalCost(weights=[0.5, 1.0, 1.3, 0.7, 0.9], features=["x2", "x3", "x5"]),
            dk.OrdinalCost(weights=[0.8, np.inf, 1.1, 0.6, 1.0], p=2, features=["x2", "x5"]),
            _RandomLevelCost(seed=1, weights=[0.6, 1.3, 2.0, 0.9, 0.45]),
            _RandomLevelCost(seed=2, p=3)]


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("case", range(4), ids=["ordinal", "ordinal-p2-immutable", "random-matrix", "random-p3"])
def test_hull_oracle_with_level_costs_equals_enumeration(task, case):
    """General level costs: each feature's polygon per own level, merged by angle (drokit/oracles/polygons.py)."""
    rng = np.random.default_rng(100 + case)
    for loss in LOSSES[task]:
        for kappa in ([np.inf, 0.8] if task == "classification" else [np.inf]):
            inst = mixed_instance(int(rng.integers(1e6)), task, loss, _level_costs()[case], kappa, LEVELS, 9)
            assert not inst.metric.mismatch_only
            assert_equals_enumeration(HullOracle(inst), EnumerationOracle(inst), inst, rng, 15, check_fixed=True)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_asymmetric_level_costs_are_priced_from_the_samples_level_by_every_oracle_and_fit(task):
    """A user's unit costs need not be symmetric: U_l[u, v] prices the move from the sample's level u to v.  The
    DP, hull and enumeration oracles and the brute-force reference agree on that direction (the enumeration
    used to price U_l[v, u]: with an asymmetric matrix the monolithic program and the cutting plane then solved
    different problems, silently)."""
    rng = np.random.default_rng(7)
    cost = _RandomLevelCost(seed=5, weights=[0.6, 1.3, 2.0, 0.9, 0.45])
    inst = mixed_instance(11, task, LOSSES[task][0], cost, np.inf, LEVELS, 9)
    U = inst.metric.units[0]
    assert not np.allclose(U, U.T)
    own, moved = inst.data.Z[:1].copy(), inst.data.Z[:1].copy()
    moved[0, 0] = (own[0, 0] + 1) % LEVELS[0]
    assert inst.metric.categorical_distance(own, moved)[0] == pytest.approx(0.6 * U[own[0, 0], moved[0, 0]])
    dp, hull, brute = DPOracle(inst), HullOracle(inst), EnumerationOracle(inst)
    for _ in range(10):
        b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded)
        lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
        ref = brute.separate(b0, coef, lam, s).violation
        for oracle in (dp, hull):
            np.testing.assert_allclose(oracle.separate(b0, coef, lam, s).violation, ref, rtol=1e-10, atol=1e-10)
    metric = dk.GroundMetric(categorical=cost)
    X = np.column_stack([inst.data.X, inst.data.Z])
    prob = dk.Problem(LOSSES[task][0], dk.Wasserstein(metric, radius=0.3), task=task)
    kw = dict(categorical_features=list(range(2, 2 + len(LEVELS))), categories=[list(range(a)) for a in LEVELS])
    mono = prob.compile(X, inst.y, method="monolithic", **kw).solve().objective
    cut = prob.compile(X, inst.y, method="cutting_plane", **kw).solve().objective
    assert cut == pytest.approx(mono, rel=1e-6)


def test_polygons_are_convex_counter_clockwise_from_the_own_level():
    from drokit.oracles.polygons import level_polygons
    rng = np.random.default_rng(0)
    for a in (2, 3, 6, 12):
        w = rng.normal(size=a)
        budget = rng.uniform(0.1, 2.0, size=(a, a))
        np.fill_diagonal(budget, 0.0)
        P = level_polygons(w, budget)
        for u in range(a):
            real = np.isfinite(P.key[u])
            assert np.all(np.diff(P.key[u][real]) > 0)                    # angles increase: convex, CCW
            assert abs(P.dx[u].sum()) < 1e-12 and abs(P.dy[u].sum()) < 1e-12   # a closed polygon
            assert P.level[u, 0] == u
            # every point of the feature lies in the polygon: on the inner side of every edge
            xs, ys = w - w[u], budget[u]
            vx = np.r_[0.0, np.cumsum(P.dx[u][real])[:-1]]
            vy = np.r_[0.0, np.cumsum(P.dy[u][real])[:-1]]
            for ex, ey, x0, y0 in zip(P.dx[u][real], P.dy[u][real], vx, vy):
                assert np.all(ex * (ys - y0) - ey * (xs - x0) >= -1e-12)


def test_auto_uses_the_hull_where_it_is_exact_and_the_dp_elsewhere():
    loss = dk.losses.Logistic()
    assert isinstance(make_oracle(_instance(0, "classification", loss, 1.0, WEIGHTS[1], np.inf)), HullOracle)
    ordinal = mixed_instance(0, "classification", loss, dk.OrdinalCost(weights=[0.5, 1.0, 1.0, 0.7],
                                                                        features=["x2", "x3"]), np.inf)
    assert isinstance(make_oracle(ordinal), HullOracle)
    sub_one = _instance(0, "classification", loss, 0.5, WEIGHTS[1], np.inf)
    free = _instance(0, "classification", loss, 1.0, [0.6, 0.0, 2.0, 0.9, 0.45], np.inf)
    for inst, why in [(sub_one, "p = 0.5"), (free, "weight 0")]:
        ok, reason = hull_applies(inst)
        assert not ok and why in reason
        assert isinstance(make_oracle(inst), DPOracle)
        with pytest.raises(dk.ParameterError, match="oracle='dp'"):
            HullOracle(inst)


def test_a_fit_with_real_weights_beyond_the_dp_lattice_is_certified():
    """Issue 27: 20 binary features with real weights give 2^20 budgets, which the DP refuses; the default fit
    (the hull oracle) is certified, and its objective is the exact worst-case risk of its model (evaluated
    again by the hull oracle's worst-case search)."""
    rng = np.random.default_rng(27)
    N, m = 150, 20
    Z = rng.integers(0, 2, size=(N, m))
    y = np.where(Z[:, :5].sum(axis=1) + rng.normal(size=N) > 2.5, 1, -1)
    weights = list(rng.uniform(0.3, 1.7, m))
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=weights))
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.2), categorical_features=list(range(m)))
    prob = dk.Problem("logistic", dk.Wasserstein(metric, radius=0.2))
    inst = prob.bind(Z, y, categorical_features=list(range(m)))
    with pytest.raises(dk.ProblemTooLargeError, match="budgets"):
        DPOracle(inst)
    est.fit(Z, y)
    assert est.result_.status == "optimal"
    assert est.result_.relative_gap <= 1e-6
    value = worst_case_value_oracle(inst, est.intercept_, est.coef_.ravel()).value
    assert value == pytest.approx(est.result_.objective, rel=1e-6)
