"""Sample weights: P_N = sum_n p_n delta_n.  Integer weights must give exactly the model fitted on the data
with rows repeated (every compile path, classification and regression), the certificate and the
worst-case distribution follow the weights, and bad weights are named errors."""

import numpy as np
import pytest

import drokit as dk
from tests.factories import two_plus_two_frame


def _mixed(n=24, seed=1):
    return two_plus_two_frame(n, seed, labels=(-1, 1))


def _repeat(X, y, w):
    return X.loc[X.index.repeat(w)].reset_index(drop=True), np.repeat(y, w)


@pytest.mark.parametrize("method,loss", [("erm", "logistic"), ("monolithic", "logistic"),
                                         ("cutting_plane", "logistic"), ("graph", "logistic"),
                                         ("box", "hinge"), ("cutting_plane", "hinge")])
def test_integer_weights_equal_repeated_rows(method, loss):
    X, y = _mixed(n=60)  # not separable (radius 0 needs a finite optimum)
    w = np.random.default_rng(0).integers(0, 4, size=len(y))
    w[:2] = [1, 2]
    radius = 0.0 if method == "erm" else 0.1
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=1.5))
    kw = dict(loss=loss, ambiguity=dk.Wasserstein(metric, radius=radius), method=method)
    weighted = dk.DROClassifier(**kw).fit(X, y, sample_weight=w).result_
    repeated = dk.DROClassifier(**kw).fit(*_repeat(X, y, w)).result_
    assert weighted.objective == pytest.approx(repeated.objective, rel=1e-6, abs=1e-8)
    assert weighted.upper_bound == pytest.approx(repeated.upper_bound, rel=1e-6, abs=1e-8)
    assert weighted.lower_bound <= weighted.upper_bound + 1e-7


def test_regression_weights_and_worst_case_distribution():
    X, _ = _mixed(n=20, seed=3)
    y = X["a"] * 2 - X["b"] + np.random.default_rng(1).normal(size=20) * 0.3
    w = np.random.default_rng(2).integers(1, 4, size=20)
    kw = dict(loss="absolute", ambiguity=dk.Wasserstein(radius=0.05))
    reg = dk.DRORegressor(**kw).fit(X, y, sample_weight=w)
    rep = dk.DRORegressor(**kw).fit(*_repeat(X, y.to_numpy(), w))
    assert reg.result_.objective == pytest.approx(rep.result_.objective, rel=1e-6)
    wc = dk.worst_case(reg, X, y, sample_weight=w)
    wc_rep = dk.worst_case(rep, *_repeat(X, y.to_numpy(), w))
    assert wc.value == pytest.approx(reg.result_.upper_bound, rel=1e-7)
    assert wc.atoms["mass"].sum() == pytest.approx(1.0)
    assert wc.lower_bound == pytest.approx(wc.value, rel=1e-6)
    assert wc_rep.value == pytest.approx(dk.worst_case(rep, X, y, sample_weight=w).value, rel=1e-6)


def test_uniform_weights_change_nothing_and_bad_weights_are_named():
    X, y = _mixed()
    kw = dict(ambiguity=dk.Wasserstein(radius=0.1))
    plain = dk.DROClassifier(**kw).fit(X, y).result_.objective
    assert dk.DROClassifier(**kw).fit(X, y, sample_weight=np.full(len(y), 3.0)).result_.objective == \
        pytest.approx(plain, rel=1e-9)
    for bad, match in [(np.ones(3), "one weight per sample"), (-np.ones(len(y)), ">= 0"),
                       (np.zeros(len(y)), "all zero"), (np.r_[np.nan, np.ones(len(y) - 1)], "finite")]:
        with pytest.raises(dk.DataError, match=match):
            dk.DROClassifier(**kw).fit(X, y, sample_weight=bad)


def _weighted_huber_case(seed, equal_weights=False):
    """A small regression instance with integer sample weights (issue 21: weighted cutting planes stopped
    uncertified or, worse, reported optimal far from the optimum, because the oracle's upper bound averaged
    the samples uniformly): Huber loss, one numerical feature (p = 2), one or two 2-3-level categorical
    features, random real weights (equal on the categorical features with ``equal_weights``), and the
    brute-force reference on the rows repeated."""
    from tests.reference import brute_force as bf
    rng = np.random.default_rng(seed)
    N = int(rng.integers(4, 14))
    levels = [int(a) for a in rng.integers(2, 4, size=int(rng.integers(1, 3)))]
    X, Z, y = bf.random_instance(seed, N, 1, levels, "regression")
    w = rng.integers(1, 4, size=N)
    gamma, delta = rng.uniform(0.5, 2, 1), rng.uniform(0.5, 2, len(levels))
    if equal_weights:
        delta[:] = delta[0]
    radius, huber = float(rng.uniform(0.05, 1.0)), float(rng.choice([0.5, 1.0]))
    ref = bf.dro_value(np.repeat(X, w, 0), np.repeat(Z, w, 0), levels, np.repeat(y, w), task="regression",
                       loss="huber", loss_param=huber, radius=radius, norm_p=2, gamma=gamma, delta=delta)["value"]
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=gamma),
                             categorical=dk.MismatchCost(weights=delta, p=1))
    prob = dk.Problem(dk.losses.Huber(delta=huber), dk.Wasserstein(metric, radius=radius), task="regression")
    bound = dict(categorical_features=list(range(1, 1 + len(levels))), categories=[list(range(a)) for a in levels],
                 sample_weight=w)
    return prob, np.column_stack([X, Z.astype(float)]), y, bound, ref


# seeds that stopped uncertified (18, 44, 46, 104) or were reported optimal 9e-4 away from the optimum (98)
@pytest.mark.parametrize("seed", [18, 44, 46, 98, 104])
@pytest.mark.parametrize("oracle", ["dp", "sorting"])
def test_weighted_cutting_plane_is_certified_at_the_reference_optimum(seed, oracle):
    prob, X, y, bound, ref = _weighted_huber_case(seed, equal_weights=oracle == "sorting")
    res = prob.compile(X, y, method="cutting_plane", **bound).solve(method_options={"oracle": oracle})
    assert res.status == "optimal"
    # the certificate's promise: within gap_tol * max(1, |upper|) of the optimum (the structured barrier master
    # stops there when its bounds stall: seed 18, 7.5e-8 above an optimum of 0.064); the old bug was 9e-4 relative
    assert res.objective == pytest.approx(ref, rel=1e-6, abs=1e-6 * max(1.0, abs(ref)))
    assert res.lower_bound <= ref + 1e-7 * max(1.0, ref) and res.upper_bound >= ref - 1e-7 * max(1.0, ref)


def test_oracle_upper_bound_weights_the_samples():
    """``oracle.upper_bound`` = lam' eps + sum_n p_n max_k (l_k - lam' c_k): with weights it must equal the
    same bound on the rows repeated (it used the plain mean of the samples)."""
    from drokit.oracles import make_oracle
    prob, X, y, bound, _ = _weighted_huber_case(18)
    w = bound.pop("sample_weight")
    weighted = prob.bind(X, y, sample_weight=w, **bound)
    repeated = prob.bind(np.repeat(X, w, 0), np.repeat(y, w), **bound)
    coef = np.array([0.3, -0.2, 0.5, 0.1][: weighted.schema.n_encoded])
    values = [make_oracle(inst, "dp", 10**6).upper_bound(0.1, coef, 0.7, inst.radius, 0.0)
              for inst in (weighted, repeated)]
    assert values[0] == pytest.approx(values[1], rel=1e-12)


@pytest.mark.parametrize("loss,kappa,task", [("logistic", np.inf, "clf"), ("logistic", 1.0, "clf"),
                                             ("hinge", 0.5, "clf"), ("huber", np.inf, "reg")])
def test_samples_of_weight_zero_leave_the_cutting_plane_to_its_own_solvers(loss, kappa, task):
    """p_n = 0 samples add nothing to the objective; the barrier master's epigraph barrier ``mu / p_n`` divided by 0
    and every such fit fell to the conic masters.  The loop runs on the positive-weight samples: the same optimum as
    the fit without those rows, certified by drokit's own solvers, and ``s`` still covers every sample (a weight-0
    sample's ``s_n`` is its worst row's value at the model)."""
    X, y = two_plus_two_frame(300, 7, labels=(-1, 1))
    if task == "reg":
        y = X["a"] * 2 - X["b"] + np.random.default_rng(1).normal(size=300) * 0.3
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=300)
    w[::7] = 0.0
    metric = dk.GroundMetric(label=dk.LabelCost(kappa=kappa)) if task == "clf" else dk.GroundMetric()
    est = dk.DROClassifier if task == "clf" else dk.DRORegressor
    kw = dict(loss=loss, ambiguity=dk.Wasserstein(metric, radius=0.1), method="cutting_plane")
    model = est(**kw).fit(X, y, sample_weight=w)
    weighted = model.result_
    kept = w > 0
    dropped = est(**kw).fit(X[kept], np.asarray(y)[kept], sample_weight=w[kept]).result_
    assert weighted.status == "optimal" and weighted.solver in ("phase_one", "barrier_master")
    assert weighted.objective == pytest.approx(dropped.objective, rel=1e-6)
    assert weighted.lower_bound <= weighted.upper_bound
    assert weighted.s.shape == (300,) and np.all(np.isfinite(weighted.s))
    # a weight-0 sample's s_n is at least its nominal loss (the nominal row is one of its rows), and the weighted
    # sum of s prices the fit
    zero = ~kept
    if task == "clf":
        margin = np.asarray(y)[zero] * model.decision_function(X[zero])
        nominal = np.logaddexp(0, -margin) if loss == "logistic" else np.maximum(0, 1 - margin)
    else:
        r = np.abs(np.asarray(y)[zero] - model.predict(X[zero]))
        nominal = np.where(r <= 1.0, 0.5 * r ** 2, r - 0.5)
    assert np.all(weighted.s[zero] >= nominal - 1e-7)
    assert np.sum(weighted.s * (w / w.sum())) + weighted.lambda_ * 0.1 == pytest.approx(weighted.upper_bound, rel=1e-5)
