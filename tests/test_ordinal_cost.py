"""The ordinal categorical cost and the CategoricalCost protocol (issue 7, item 3).

Checks, each independent of the code it tests:
* distances against hand-computed values and a pure-Python loop;
* the DP oracle against a brute-force separation written here (itertools over every configuration);
* every exact method that accepts level costs (cutting plane + DP, monolithic, box, graph) against each other;
* limits: binary ordinal features equal the mismatch cost; the ordinal ball is inside the mismatch ball,
  so its worst-case risk and its optimum are not larger;
* the graph reformulation with group-dependent arc heads equals the monolithic program;
* the methods built on the 0/1 mismatch structure (sorting oracle) refuse it with a clear error.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import drokit as dk
from drokit.oracles.dp import DPOracle
from drokit.oracles.enumeration import EnumerationOracle
from drokit.evaluation.worst_case import row_losses
from factories import mixed_instance

EDU = ["school", "bachelor", "master", "phd"]


def _frame(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "x": rng.normal(size=n),
        "edu": pd.Categorical(rng.choice(EDU, n), categories=EDU, ordered=True),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"], ordered=True),
        "color": pd.Categorical(rng.choice(list("rgb"), n), categories=list("rgb")),
    })
    score = X["x"] + 0.8 * X["edu"].cat.codes - 1.0 + 0.5 * (X["color"] == "g")
    y = np.where(score + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


# ---------------------------------------------------------------------------------- declaration
def test_ordered_pandas_columns_are_ranked_and_others_stay_nominal():
    X, y = _frame()
    metric = dk.GroundMetric(categorical=dk.OrdinalCost(weights={"edu": 0.5}))
    inst = dk.Problem("logistic", dk.Wasserstein(metric, 0.1)).bind(X, y)
    U_edu, U_size, U_color = inst.metric.units
    np.testing.assert_array_equal(U_edu, np.abs(np.subtract.outer(np.arange(4), np.arange(4))))
    np.testing.assert_array_equal(U_size, np.abs(np.subtract.outer(np.arange(3), np.arange(3))))
    np.testing.assert_array_equal(U_color, 1 - np.eye(3))
    assert not inst.metric.mismatch_only
    # school -> phd costs 3 steps of 0.5; plus a color change (weight 1)
    names = inst.schema.categorical_names
    z1 = np.array([0, 0, 0])
    z2 = np.array([3, 0, 1])
    assert names == ["edu", "size", "color"]
    assert inst.metric.categorical_distance(z1, z2) == pytest.approx(2.5)


def test_explicit_order_scores_and_exponent_match_a_plain_loop():
    X, y = _frame()
    X["edu"] = X["edu"].astype(str)  # not ordered any more: named explicitly below
    order = ["phd", "master", "bachelor", "school"]           # reversed rank
    scores = {"S": 0.0, "M": 1.0, "L": 4.0}                    # uneven spacing
    cost = dk.OrdinalCost(weights={"edu": 0.7, "size": 0.4, "color": 1.3}, p=2,
                          features={"edu": order, "size": scores})
    inst = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(categorical=cost), 0.1)).bind(X, y)
    cats = inst.schema.categories
    rank = {l: {v: (order.index(v) if l == 0 else scores[v] if l == 1 else None) for v in cats[l]}
            for l in range(2)}
    delta = [0.7, 0.4, 1.3]
    rng = np.random.default_rng(1)
    Z1 = np.column_stack([rng.integers(0, len(c), 50) for c in cats])
    Z2 = np.column_stack([rng.integers(0, len(c), 50) for c in cats])
    expected = []
    for z1, z2 in zip(Z1, Z2):
        total = 0.0
        for l in range(3):
            v1, v2 = cats[l][z1[l]], cats[l][z2[l]]
            unit = abs(rank[l][v1] - rank[l][v2]) if l < 2 else float(v1 != v2)
            total += (delta[l] * unit) ** 2
        expected.append(np.sqrt(total))
    np.testing.assert_allclose(inst.metric.categorical_distance(Z1, Z2), expected, rtol=1e-12)


@pytest.mark.parametrize("features, message", [
    ("edu", "list of column names"),
    (["nope"], "not a categorical column"),
    ({"edu": ["school", "phd"]}, "every level exactly once"),
    ({"size": {"S": 0, "M": 1}}, "missing"),
    ({"size": {"S": 0, "M": 1, "L": np.nan}}, "finite"),
])
def test_bad_ordinal_declarations_name_the_problem(features, message):
    X, y = _frame()
    metric = dk.GroundMetric(categorical=dk.OrdinalCost(features=features))
    with pytest.raises(dk.ParameterError, match=message):
        dk.DROClassifier(ambiguity=dk.Wasserstein(metric, 0.1)).fit(X, y)


def test_no_ordered_columns_and_no_features_is_an_error():
    X, y = _frame()
    X = X.astype({"edu": str, "size": str})
    metric = dk.GroundMetric(categorical=dk.OrdinalCost())
    with pytest.raises(dk.ParameterError, match="ordered categorical"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(metric, 0.1)).fit(X, y)


def test_a_custom_categorical_cost_is_validated():
    class Broken(dk.CategoricalCost):
        def unit_costs(self, schema):
            return [np.ones((a, a)) for a in schema.levels]  # nonzero diagonal

    X, y = _frame()
    with pytest.raises(dk.ParameterError, match="diagonal"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(categorical=Broken()), 0.1)).fit(X, y)


# --------------------------------------------------------------------------- brute-force oracle
def _instance(seed, task, loss, p, weights, kappa, ordinal, N=8, levels=(4, 3, 2, 5)):
    return mixed_instance(seed, task, loss, dk.OrdinalCost(weights=weights, p=p, features=ordinal), kappa,
                          levels, N)


def _brute_force_violation(inst, scores, delta, p, b0, coef, lam, s):
    """max over every configuration (itertools) and label of L(u) - lam cost - s_n, with the cost
    computed from the ranks / scores here, not by drokit."""
    levels = inst.schema.levels
    kappa = inst.metric.kappa
    X, Z, y = inst.data.X, inst.data.Z, np.asarray(inst.y, float)
    n_num = X.shape[1]
    offsets = inst.schema.dummy_offsets()
    out = np.full(inst.n_samples, -np.inf)
    for n in range(inst.n_samples):
        for z in itertools.product(*[range(a) for a in levels]):
            f = b0 + X[n] @ coef[:n_num]
            total, blocked = 0.0, False
            for l, v in enumerate(z):
                if v > 0:
                    f += coef[n_num + offsets[l] + v - 1]
                u = Z[n, l]
                if v != u:
                    if np.isinf(delta[l]):
                        blocked = True
                    unit = 1.0 if scores[l] is None else abs(scores[l][v] - scores[l][u])
                    total += (delta[l] * unit) ** p
            if blocked:
                continue
            D = total ** (1.0 / p)
            options = [(1.0, 0.0)] if not np.isfinite(kappa) else [(1.0, 0.0), (-1.0, kappa)]
            for sgn, extra in options:
                e = sgn * y[n] * f if inst.is_classification else f - y[n]
                out[n] = max(out[n], float(inst.loss.value(np.array([e]))[0]) - lam * (D + extra) - s[n])
    return out


CASES = [  # (ordinal features, weights); the features not named stay nominal
    (["x2", "x3"], None),
    ({"x2": [3, 1, 0, 2], "x5": {0: 0.0, 1: 0.5, 2: 2.0, 3: 2.5, 4: 5.0}}, [0.6, 1.3, 2.0, 0.9]),
    (["x2", "x3", "x4", "x5"], [1.0, np.inf, 0.5, 0.7]),
    # tied scores: moving between levels 0 and 1 (or 2 and 3) of x5 is free
    ({"x5": {0: 0.0, 1: 0.0, 2: 1.0, 3: 1.0, 4: 2.0}, "x2": [0, 1, 2, 3]}, [0.8, 1.0, 1.0, 0.6]),
]


@pytest.mark.parametrize("task, loss", [("classification", dk.losses.Logistic()),
                                        ("classification", dk.losses.Hinge()),
                                        ("regression", dk.losses.Huber(0.6)),
                                        ("regression", dk.losses.Pinball(0.3))])
@pytest.mark.parametrize("p", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_dp_oracle_with_ordinal_costs_equals_brute_force(task, loss, p, case):
    spec, weights = CASES[case]
    names = ["x2", "x3", "x4", "x5"]
    rng = np.random.default_rng(case * 100 + int(p * 10))
    kappas = [np.inf, 0.8] if task == "classification" else [np.inf]
    for kappa in kappas:
        inst = _instance(int(rng.integers(1e6)), task, loss, p, weights, kappa, spec)
        levels = inst.schema.levels
        scores = []
        for l, name in enumerate(names):
            if isinstance(spec, dict) and name in spec:
                given = spec[name]
                scores.append([float(given[v]) for v in range(levels[l])] if isinstance(given, dict)
                              else [float(given.index(v)) for v in range(levels[l])])
            elif name in spec:
                scores.append([float(v) for v in range(levels[l])])
            else:  # nominal
                scores.append(None)
        delta = np.ones(4) if weights is None else np.asarray(weights, float)
        dp, enum = DPOracle(inst), EnumerationOracle(inst)
        for _ in range(6):
            b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded) * rng.choice([0.3, 1.0, 3.0])
            lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
            got = dp.separate(b0, coef, lam, s)
            expected = _brute_force_violation(inst, scores, delta, p, b0, coef, lam, s)
            np.testing.assert_allclose(got.violation, expected, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(enum.separate(b0, coef, lam, s).violation, expected, rtol=1e-9, atol=1e-9)
            attained = row_losses(inst, got.rows, b0, coef) - lam * got.rows.cost - s[got.rows.sample]
            np.testing.assert_allclose(attained, got.violation, rtol=1e-9, atol=1e-9)


def test_dp_oracle_mixed_ordinal_and_nominal_equals_enumeration():
    rng = np.random.default_rng(5)
    for p in (0.5, 1.0, 2.0):
        inst = _instance(int(rng.integers(1e6)), "classification", dk.losses.SmoothHinge(), p,
                         [0.6, 1.3, 2.0, 0.9], 0.7, ["x2", "x5"])
        dp, enum = DPOracle(inst), EnumerationOracle(inst)
        for _ in range(20):
            b0, coef = rng.normal(), rng.normal(size=inst.schema.n_encoded) * 2
            lam, s = rng.uniform(0, 2), rng.normal(size=inst.n_samples)
            np.testing.assert_allclose(dp.separate(b0, coef, lam, s).violation,
                                       enum.separate(b0, coef, lam, s).violation, rtol=1e-10, atol=1e-10)


def test_ordinal_lattice_size():
    """A 5-level ordinal feature adds the increments 0..4 delta: with unit weights and p = 1 the budgets
    after the layers (4, 3, 2, 5 levels, all ordinal) are 0..(3 + 2 + 1 + 4)."""
    inst = _instance(0, "classification", dk.losses.Logistic(), 1.0, None, np.inf, ["x2", "x3", "x4", "x5"])
    np.testing.assert_allclose(DPOracle(inst).budgets, np.arange(11))


# ------------------------------------------------------------------------------ fitting, limits
def _fit(X, y, categorical, method, loss="logistic", radius=0.15):
    metric = dk.GroundMetric(categorical=categorical)
    return dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius), method=method).fit(X, y)


@pytest.mark.parametrize("loss, methods", [("logistic", ["monolithic", "cutting_plane", "graph"]),
                                           ("hinge", ["monolithic", "cutting_plane", "box", "graph"])])
def test_exact_methods_agree_on_ordinal_costs(loss, methods):
    X, y = _frame(n=24)
    cost = dk.OrdinalCost(weights={"edu": 0.4, "size": 0.6, "color": 1.0})
    fits = {m: _fit(X, y, cost, m, loss) for m in methods}
    ref = fits[methods[0]].result_.objective
    for m, clf in fits.items():
        assert clf.result_.objective == pytest.approx(ref, rel=1e-5, abs=1e-6), m
    # auto picks an exact method that accepts level costs
    auto = _fit(X, y, cost, "auto", loss)
    assert auto.result_.method in ("monolithic", "cutting_plane", "box")
    assert auto.result_.objective == pytest.approx(ref, rel=1e-5, abs=1e-6)


def test_ordinal_ball_lies_inside_the_mismatch_ball():
    """|rank(v) - rank(v')| >= 1 for v != v': the ordinal cost dominates the mismatch cost, so its ball is
    smaller and the DRO optimum is not larger (strictly smaller here: moving 'edu' far is dearer)."""
    X, y = _frame(n=24)
    weights = {"edu": 0.3, "size": 0.3, "color": 1.0}
    ordinal = _fit(X, y, dk.OrdinalCost(weights=weights), "cutting_plane", radius=0.3)
    nominal = _fit(X, y, dk.MismatchCost(weights=weights), "cutting_plane", radius=0.3)
    assert ordinal.result_.objective < nominal.result_.objective - 1e-4
    # and at a fixed model, the worst-case risk is ordered the same way
    wc_ord = dk.worst_case(ordinal, X, y)
    metric_nominal = dk.GroundMetric(categorical=dk.MismatchCost(weights=weights))
    wc_nom = dk.worst_case(ordinal, X, y, ambiguity=dk.Wasserstein(metric_nominal, 0.3))
    assert wc_ord.value <= wc_nom.value + 1e-9


def test_binary_ordinal_features_equal_the_mismatch_cost():
    X, y = _frame(n=24)
    X = X[["x", "color"]].assign(flag=pd.Categorical(np.where(X["x"] > 0, "hi", "lo"),
                                                     categories=["lo", "hi"], ordered=True))
    a = _fit(X, y, dk.OrdinalCost(weights=0.5), "cutting_plane")
    b = _fit(X, y, dk.MismatchCost(weights=0.5), "cutting_plane")
    assert a.result_.objective == pytest.approx(b.result_.objective, rel=1e-7)


@pytest.mark.parametrize("task, loss", [("classification", "logistic"), ("classification", "hinge"),
                                        ("regression", "huber")])
@pytest.mark.parametrize("p, kappa", [(1, np.inf), (2, 1.0)])
@pytest.mark.parametrize("variant, share", [("compact", True), ("full", False)])
def test_graph_with_level_costs_equals_the_monolithic_program(task, loss, p, kappa, variant, share):
    """The graph's arcs get group-dependent heads and unreachable nodes are pruned: same optimum."""
    X, y = _frame(n=20)
    if task == "regression":
        y = X["x"].to_numpy() + 0.3 * X["edu"].cat.codes.to_numpy()
    cost = dk.OrdinalCost(weights={"edu": 0.4, "size": 0.6, "color": 1.0}, p=p)
    amb = dk.Wasserstein(dk.GroundMetric(categorical=cost, label=dk.LabelCost(kappa)), 0.15)
    prob = dk.Problem(loss, amb, task=task)
    from drokit.reformulations.graph import compile_graph
    inst = prob.bind(X, y)
    compiled = compile_graph(inst, variant=variant, share_potentials=share)
    cp = prob.compile(X, y, method="monolithic")
    ref = cp.solve().objective
    cp.compiled = compiled
    assert cp.solve().objective == pytest.approx(ref, rel=1e-6, abs=1e-8)


def test_methods_built_on_mismatch_refuse_ordinal_costs():
    X, y = _frame(n=24)
    metric = dk.GroundMetric(categorical=dk.OrdinalCost())
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, 0.1), method="cutting_plane",
                           method_options={"oracle": "sorting"})
    with pytest.raises(dk.ParameterError, match="mismatch"):
        clf.fit(X, y)


def test_estimator_params_clone_and_scaling_keep_the_ordinal_spec():
    cost = dk.OrdinalCost(weights={"edu": 0.5}, features=["edu"])
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(categorical=cost), 0.1))
    params = clf.get_params()
    assert params["ambiguity__metric__categorical__features"] == ["edu"]
    assert clone(clf).ambiguity.metric.categorical.features == ["edu"]
    scaled = dk.GroundMetric(categorical=cost).scaled(2.0)
    assert isinstance(scaled.categorical, dk.OrdinalCost)
    assert scaled.categorical.features == ["edu"] and cost.weights == {"edu": 0.5}


def test_wasserstein_distance_uses_rank_distances():
    P = pd.DataFrame({"edu": pd.Categorical(["school", "master"], categories=EDU, ordered=True)})
    Q = pd.DataFrame({"edu": pd.Categorical(["phd", "phd"], categories=EDU, ordered=True)})
    metric = dk.GroundMetric(categorical=dk.OrdinalCost(weights=0.5))
    # school -> phd: 3 steps, master -> phd: 1 step; each point has mass 1/2
    assert dk.wasserstein_distance(P, Q, metric) == pytest.approx(0.5 * 1.5 + 0.5 * 0.5)


def test_custom_level_cost_subclass_runs_every_generic_path():
    """A hierarchy cost written by a user: colors r and g are close (0.5), b is far (2)."""
    class ColorCost(dk.MismatchCost):
        def unit_costs(self, schema):
            units = super().unit_costs(schema)
            l = schema.categorical_names.index("color")
            units[l] = np.array([[0, 0.5, 2], [0.5, 0, 2], [2, 2, 0]], float)
            return units

    X, y = _frame(n=24)
    fits = {m: _fit(X, y, ColorCost(weights=0.5), m) for m in ("monolithic", "cutting_plane", "graph")}
    for m in ("cutting_plane", "graph"):
        assert fits[m].result_.objective == pytest.approx(fits["monolithic"].result_.objective, rel=1e-5)


def test_stability_criterion_grows_with_the_ordinal_cost():
    """The ordinal cost dominates the mismatch cost, so breaking the model costs at least as much; per
    feature, the nominal 'color' is unchanged and the ordinal 'edu' gets strictly more stable."""
    X, y = _frame(n=40)
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(), 0.05)).fit(X, y)
    values, tables = {}, {}
    for cost in (dk.MismatchCost(weights=0.5), dk.OrdinalCost(weights=0.5)):
        amb = dk.OTMoment(dk.GroundMetric(numerical=dk.NormCost(p=2), categorical=cost))
        values[type(cost).__name__] = dk.stability(clf, X, y, risk=0.8, ambiguity=amb).value
        tables[type(cost).__name__] = dk.feature_stability(clf, X, y, risk=0.8, ambiguity=amb).table \
            .set_index("feature")["value"]
    assert values["OrdinalCost"] > values["MismatchCost"] + 1e-6
    assert tables["OrdinalCost"]["color"] == pytest.approx(tables["MismatchCost"]["color"], rel=1e-9)
    assert tables["OrdinalCost"]["edu"] > tables["MismatchCost"]["edu"] + 1e-6


def test_simulate_shift_refuses_a_non_mismatch_metric():
    X, _ = _frame()
    metric = dk.GroundMetric(categorical=dk.OrdinalCost(weights=1.0))
    with pytest.raises(dk.ParameterError, match="mismatch"):
        dk.evaluation.simulate_shift(X, metric, n_sets=2, seed=0)


def test_graph_and_dp_with_free_moves_from_tied_scores():
    """Tied scores make some level changes free (increment 0 off the diagonal): the DP's stay step and the
    graph's same-budget arcs must both take the best free move."""
    X, y = _frame(n=20)
    cost = dk.OrdinalCost(weights=0.5, features={"size": {"S": 0, "M": 0, "L": 1}, "edu": EDU})
    fits = {m: _fit(X, y, cost, m) for m in ("monolithic", "cutting_plane", "graph")}
    for m in ("cutting_plane", "graph"):
        assert fits[m].result_.objective == pytest.approx(fits["monolithic"].result_.objective, rel=1e-6)
