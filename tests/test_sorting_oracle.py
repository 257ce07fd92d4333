"""The sorting separation oracle (belbasi2023 Alg. 2) equals brute-force enumeration and the DP oracle on
thousands of random queries, refuses unequal weights, and drives the cutting plane to the monolithic
optimum."""

import zlib

import numpy as np
import pytest

import drokit as dk
from drokit.evaluation.worst_case import row_losses
from drokit.oracles import ORACLES, EnumerationOracle, make_oracle
from drokit.oracles.dp import DPOracle
from drokit.oracles.sorting import SortingOracle

LOSSES = {"classification": [dk.losses.Logistic(), dk.losses.Hinge(), dk.losses.SmoothHinge()],
          "regression": [dk.losses.Huber(0.6), dk.losses.Pinball(0.3), dk.losses.EpsilonInsensitive(0.2),
                         dk.losses.Absolute()]}
LEVELS = (4, 3, 2, 5)
# equal mutable weights; np.inf marks immutable features mixed in
WEIGHTS = {"unit": None, "equal": [0.7] * 4, "immutable": [2.3, np.inf, 2.3, 2.3],
           "two_immutable": [np.inf, 1.0, 1.0, np.inf], "free": [0.0] * 4}


def _instance(seed, task, loss, cat_p, weights, kappa, levels=LEVELS, N=9, n_num=2):
    rng = np.random.default_rng(seed)
    Xn = rng.normal(size=(N, n_num))
    Z = np.column_stack([rng.integers(0, a, N) for a in levels])
    y = np.where(rng.random(N) < 0.5, 1.0, -1.0) if task == "classification" else rng.normal(size=N)
    if task == "classification" and len(np.unique(y)) < 2:
        y[0] = -y[0]
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=weights, p=cat_p),
                             label=dk.LabelCost(kappa))
    prob = dk.Problem(loss, dk.Wasserstein(metric, radius=0.3), task=task)
    return prob.bind(np.column_stack([Xn, Z]), y,
                     categorical_features=list(range(n_num, n_num + len(levels))),
                     categories=[list(range(a)) for a in levels])


def _random_query(rng, inst):
    """Random (beta_0, beta, lambda, s); every third query has integer coefficients (many ties)."""
    n_enc = inst.schema.n_encoded
    if rng.random() < 1 / 3:
        coef = rng.integers(-2, 3, size=n_enc).astype(float)
    else:
        coef = rng.normal(size=n_enc) * rng.choice([0.3, 1.0, 3.0])
    return rng.normal(), coef, rng.uniform(0, 2), rng.normal(size=inst.n_samples)


def _check_rows(inst, sep, b0, coef, lam, s):
    """The returned rows attain the reported violations and carry the metric's costs."""
    attained = row_losses(inst, sep.rows, b0, coef) - lam * sep.rows.cost - s[sep.rows.sample]
    np.testing.assert_allclose(attained, sep.violation, rtol=1e-10, atol=1e-10)
    D = inst.metric.categorical_distance(inst.data.Z[sep.rows.sample], sep.rows.Z)
    kap = inst.metric.kappa if np.isfinite(inst.metric.kappa) else 0.0
    np.testing.assert_allclose(sep.rows.cost, D + kap * sep.rows.flip, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(sep.rows.sample, np.arange(inst.n_samples))


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("cat_p", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("weights", list(WEIGHTS.values()), ids=list(WEIGHTS))
def test_sorting_oracle_equals_enumeration_and_dp(task, cat_p, weights):
    """7 losses x 3 p x 2 kappa x 5 weight patterns x 12 queries = 2,520 queries in all."""
    rng = np.random.default_rng(zlib.crc32(f"{task}{cat_p}{weights}".encode()))
    for loss in LOSSES[task]:
        for kappa in (np.inf, 0.8):  # regression: kappa enters only the lip <= lambda kappa constraint
            inst = _instance(int(rng.integers(1e6)), task, loss, cat_p, weights, kappa)
            srt, dp, brute = SortingOracle(inst), DPOracle(inst), EnumerationOracle(inst)
            for _ in range(12):
                b0, coef, lam, s = _random_query(rng, inst)
                a = srt.separate(b0, coef, lam, s)
                np.testing.assert_allclose(a.violation, brute.separate(b0, coef, lam, s).violation,
                                           rtol=1e-10, atol=1e-10)
                np.testing.assert_allclose(a.violation, dp.separate(b0, coef, lam, s).violation,
                                           rtol=1e-10, atol=1e-10)
                _check_rows(inst, a, b0, coef, lam, s)
                assert a.near.size == 0


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_many_binary_features_and_no_numerical(task):
    """K = 9 binary features (|Z| = 512), no numerical features: sorting = enumeration."""
    rng = np.random.default_rng(11)
    for loss in LOSSES[task]:
        for cat_p in (0.5, 1.0, 2.0):
            kappa = 1.2 if task == "classification" else np.inf
            inst = _instance(int(rng.integers(1e6)), task, loss, cat_p, 1.5, kappa, levels=(2,) * 9,
                             N=6, n_num=0)
            srt, brute = SortingOracle(inst), EnumerationOracle(inst)
            for _ in range(10):
                b0, coef, lam, s = _random_query(rng, inst)
                a = srt.separate(b0, coef, lam, s)
                np.testing.assert_allclose(a.violation, brute.separate(b0, coef, lam, s).violation,
                                           rtol=1e-10, atol=1e-10)
                _check_rows(inst, a, b0, coef, lam, s)


def test_all_features_immutable_gives_the_nominal_rows():
    inst = _instance(3, "classification", dk.losses.Logistic(), 1.0, [np.inf] * 4, 0.5)
    srt, brute = SortingOracle(inst), EnumerationOracle(inst)
    rng = np.random.default_rng(0)
    for _ in range(5):
        b0, coef, lam, s = _random_query(rng, inst)
        a = srt.separate(b0, coef, lam, s)
        np.testing.assert_allclose(a.violation, brute.separate(b0, coef, lam, s).violation, atol=1e-12)
        np.testing.assert_array_equal(a.rows.Z, inst.data.Z)


def test_upper_bound_matches_dp():
    inst = _instance(5, "regression", dk.losses.Huber(0.5), 2.0, 0.9, np.inf)
    coef = np.random.default_rng(1).normal(size=inst.schema.n_encoded)
    assert SortingOracle(inst).upper_bound(0.3, coef, 0.7, 0.3, 0.2) == pytest.approx(
        DPOracle(inst).upper_bound(0.3, coef, 0.7, 0.3, 0.2), abs=1e-12)


def test_unequal_weights_are_refused_and_named():
    inst = _instance(0, "classification", dk.losses.Logistic(), 1.0, [0.5, 1.0, np.inf, 0.5], np.inf)
    with pytest.raises(dk.ParameterError, match=r"x2=0\.5, x3=1, x5=0\.5"):
        SortingOracle(inst)
    with pytest.raises(dk.ParameterError, match="equal weights"):
        make_oracle(inst, "sorting")
    assert "sorting" in ORACLES
    # a single-level feature cannot change, so its weight does not matter
    inst = _instance(0, "regression", dk.losses.Absolute(), 1.0, [0.5, 7.0, 0.5], np.inf, levels=(3, 1, 2))
    assert SortingOracle(inst).delta == 0.5


# ----------------------------------------------------------------- cutting plane
FIT_LEVELS = (2, 3, 2)
FIT_CASES = [  # (loss, task, kappa, cat_p, norm_p, delta)
    (dk.losses.Logistic(), "classification", 0.8, 2, 1, [0.7, 0.7, 0.7]),
    (dk.losses.Hinge(), "classification", np.inf, 0.5, 2, [1.2, np.inf, 1.2]),
    (dk.losses.Huber(0.5), "regression", 2.0, 1, np.inf, None),
]


@pytest.mark.parametrize("loss,task,kappa,cat_p,norm_p,delta", FIT_CASES, ids=lambda v: repr(v))
def test_cutting_plane_with_sorting_oracle_equals_monolithic(loss, task, kappa, cat_p, norm_p, delta):
    from tests.reference.brute_force import random_instance
    Xn, Z, y = random_instance(4, 10, 2, list(FIT_LEVELS), task)
    X = np.column_stack([Xn, Z])
    kw = {"categorical_features": [2, 3, 4], "categories": [list(range(a)) for a in FIT_LEVELS]}
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p),
                             categorical=dk.MismatchCost(weights=delta, p=cat_p),
                             label=dk.LabelCost(kappa=kappa))
    prob = dk.Problem(loss=loss, ambiguity=dk.Wasserstein(metric, radius=0.3), task=task)
    mono = prob.compile(X, y, method="monolithic", **kw).solve()
    cut = prob.compile(X, y, method="cutting_plane", **kw).solve(
        method_options={"oracle": "sorting", "gap_tol": 1e-8})
    assert cut.status == "optimal"
    assert cut.objective == pytest.approx(mono.objective, rel=1e-6, abs=1e-7)
    assert cut.max_violation <= 1e-6


def test_cutting_plane_sorting_refuses_unequal_weights():
    from tests.reference.brute_force import random_instance
    Xn, Z, y = random_instance(4, 10, 2, list(FIT_LEVELS), "classification")
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=[0.5, 1.0, 2.0]))
    prob = dk.Problem("logistic", dk.Wasserstein(metric, radius=0.3))
    compiled = prob.compile(np.column_stack([Xn, Z]), y, method="cutting_plane",
                            categorical_features=[2, 3, 4])
    with pytest.raises(dk.ParameterError, match="sorting oracle needs equal weights"):
        compiled.solve(method_options={"oracle": "sorting"})
