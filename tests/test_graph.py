"""Graph (longest-path) reformulation, sun2025 Theorem 2: equals the monolithic program for every loss,
its size formulas equal the built program, the template matches the worked examples, and a
hand-written cvxpy model of problem (14) agrees."""

import itertools
import os
import sys

import networkx as nx
import numpy as np
import pytest

import drokit as dk
from drokit.reformulations.graph import compile_graph
from drokit.methods import compile_monolithic
from drokit.exceptions import ParameterError
from drokit.models.problem import CompiledProblem
from drokit.oracles.graph import build_template, graph_size, template_for
from drokit.oracles.graph_order import choose_layer_order, order_cost
from tests.reference.brute_force import random_instance

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from cvxpy_graph_model import build_cvxpy_graph  # noqa: E402

L = dk.losses


class TwoSidedClassification(L.Loss):
    """``|1 - e|``: a convex classification loss that is not monotone (both extremes matter)."""

    name = "two_sided"
    task = "classification"

    @property
    def pieces(self):
        return np.array([-1.0, 1.0]), np.array([1.0, -1.0])


TASK = {"logistic": "classification", "hinge": "classification", "smooth_hinge": "classification",
        "two_sided": "classification"}
VARIANTS = [("full", True), ("full", False), ("compact", True), ("compact", False)]


def make_instance(loss, *, levels=(3, 2, 4), n_num=2, N=10, seed=0, delta=None, cat_p=1.0,
                  kappa=np.inf, norm_p=1, gamma=None, radius=0.3, fit_intercept=True):
    task = TASK.get(loss.name, "regression")
    Xn, Z, y = random_instance(seed, N, n_num, [max(a, 2) for a in levels], task)
    Z[:, np.asarray(levels) == 1] = 0  # single-level features: no dummy, never a layer
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p, weights=gamma),
                             categorical=dk.MismatchCost(weights=delta, p=cat_p),
                             label=dk.LabelCost(kappa=kappa))
    prob = dk.Problem(loss=loss, ambiguity=dk.Wasserstein(metric, radius=radius), task=task,
                      fit_intercept=fit_intercept)
    m = len(levels)
    return prob.bind(np.column_stack([Xn, Z]), y, categorical_features=list(range(n_num, n_num + m)),
                     categories=[list(range(a)) for a in levels])


def solve(inst, compiled, **options) -> float:
    return CompiledProblem(inst, compiled, 0.0).solve(**options).objective


def assert_close(a, b, tol=2e-6):
    assert abs(a - b) <= tol * max(1.0, abs(b)), (a, b)


# ---------------------------------------------------------------------------- graph = monolithic
CASES = {  # id: (loss, instance options)
    "logistic-unit": (L.Logistic(), dict()),
    "logistic-weighted-p05-kappa": (L.Logistic(), dict(delta=[0.6, 0.9, 1.7], cat_p=0.5, kappa=0.8)),
    "logistic-immutable-l2": (L.Logistic(), dict(delta=[0.5, np.inf, 1.5], norm_p=2, gamma=[0.5, 2.0])),
    "hinge-p2-kappa-shared": (L.Hinge(), dict(levels=(2, 3), N=14, delta=[0.7, 1.2], cat_p=2, kappa=1.5)),
    "smooth_hinge-nonum": (L.SmoothHinge(), dict(n_num=0, delta=[1.0, 0.5, 2.0], kappa=2.0)),
    "huber-p05": (L.Huber(0.5), dict(delta=[0.6, 0.9, 1.7], cat_p=0.5)),
    "huber-kappa-shared": (L.Huber(0.8), dict(levels=(3, 2), N=12, kappa=2.0, norm_p=np.inf)),
    "pinball-p2-immutable": (L.Pinball(0.3), dict(delta=[np.inf, 1.0, 0.8], cat_p=2)),
    "epsilon_insensitive": (L.EpsilonInsensitive(0.1), dict(delta=[0.4, 1.1, 0.7], n_num=1)),
    "absolute-nonum-noint": (L.Absolute(), dict(n_num=0, levels=(4, 1, 3), fit_intercept=False)),
    "hinge-free-feature": (L.Hinge(), dict(delta=[0.0, 1.0, 0.5], cat_p=0.5)),
    "two_sided": (TwoSidedClassification(), dict(seed=1, delta=[0.5, 1.0, 0.7])),
    "two_sided-kappa": (TwoSidedClassification(), dict(delta=[0.5, 1.0, 0.7], kappa=1.0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_graph_equals_monolithic(case):
    loss, opts = CASES[case]
    inst = make_instance(loss, **opts)
    ref = solve(inst, compile_monolithic(inst))
    for variant, share in VARIANTS:
        compiled = compile_graph(inst, variant, share_potentials=share)
        assert compiled.method == "graph"
        assert_close(solve(inst, compiled), ref)


SWEEP_LOSSES = [L.Logistic(), L.Hinge(), L.SmoothHinge(), L.Huber(0.7), L.Pinball(0.6),
                L.EpsilonInsensitive(0.2), L.Absolute()]


@pytest.mark.parametrize("seed", range(7))
def test_graph_equals_monolithic_random_settings(seed):
    """Random loss / exponent / weights / kappa / levels (including immutable and tied weights)."""
    rng = np.random.default_rng(100 + seed)
    levels = tuple(int(a) for a in rng.integers(2, 5, int(rng.integers(2, 4))))
    delta = np.round(rng.uniform(0.2, 1.5, len(levels)), 1)
    delta[rng.random(len(levels)) < 0.2] = np.inf
    inst = make_instance(SWEEP_LOSSES[seed], levels=levels, N=int(rng.integers(max(levels), 12)),
                         seed=seed, n_num=int(rng.integers(0, 3)), delta=list(delta),
                         cat_p=float(rng.choice([0.5, 1.0, 2.0])), norm_p=[1, 2, np.inf][seed % 3],
                         kappa=float(rng.choice([np.inf, 0.5, 2.0])), radius=float(rng.uniform(0.05, 1.0)))
    ref = solve(inst, compile_monolithic(inst))
    variant, share = VARIANTS[seed % 4]
    assert_close(solve(inst, compile_graph(inst, variant, share_potentials=share)), ref)


def test_shared_potentials_shrink_the_program():
    inst = make_instance(L.Logistic(), levels=(2, 3), N=14, delta=[0.7, 1.2], kappa=1.5)
    shared, alone = graph_size(inst, share_potentials=True), graph_size(inst, share_potentials=False)
    assert shared.groups <= 6 < alone.groups == 14
    assert shared.potential_variables < alone.potential_variables
    assert shared.loss_terms == alone.loss_terms  # the sink terms stay per sample


def test_non_monotone_loss_needs_both_extremes():
    """Regression losses bound both ends of u; a decreasing loss only the lower one.  Negative
    control: declaring the non-monotone loss decreasing drops the upper end and the value falls."""
    class WronglyDecreasing(TwoSidedClassification):
        decreasing = True

    inst = make_instance(TwoSidedClassification(), seed=1, delta=[0.5, 1.0, 0.7])
    wrong = make_instance(WronglyDecreasing(), seed=1, delta=[0.5, 1.0, 0.7])
    # the wrong program's optimum is below the problem's: the certificate (exact worst case of the model,
    # Lagrangian lower bound) shows the gap, so the fit is refused unless the user accepts it
    with pytest.raises(dk.SolverError, match="not certified"):
        solve(wrong, compile_graph(wrong))
    with pytest.warns(RuntimeWarning, match="not certified"):
        wrong_fit = CompiledProblem(wrong, compile_graph(wrong), 0.0).solve(on_inaccurate="warn")
    assert wrong_fit.auxiliary["solver_objective"] < solve(inst, compile_graph(inst)) - 0.05
    reg = graph_size(make_instance(L.Absolute(), levels=(3, 2), N=12), share_potentials=False)
    cls = graph_size(make_instance(L.Hinge(), levels=(3, 2), N=12), share_potentials=False)
    assert reg.systems == 2 * 12 and cls.systems == 12
    assert reg.loss_terms == 2 * cls.loss_terms


# --------------------------------------------------------------------------------- cvxpy model
@pytest.mark.parametrize("norm_p", [1, 2])
def test_cvxpy_model_equals_graph(norm_p):
    import cvxpy as cp
    gamma, delta, levels = np.array([0.7, 1.5]), np.array([0.6, np.inf, 1.7]), [3, 2, 4]
    inst = make_instance(L.Logistic(), seed=1, delta=list(delta), gamma=list(gamma), norm_p=norm_p)
    ours = solve(inst, compile_graph(inst))
    Xn, Z, y = random_instance(1, 10, 2, levels, "classification")
    for sink_free in (False, True):
        problem, var = build_cvxpy_graph(Xn, Z, levels, y, gamma, delta, 0.3, norm_p, sink_free=sink_free)
        problem.solve(solver=cp.CLARABEL)
        assert_close(problem.value, ours)
        assert var["mu"].shape == (10, 1 + 2 + 2 + 4 + 1)  # one node per budget, immutable: no growth


# ------------------------------------------------------------------------- sizes and templates
@pytest.mark.parametrize("variant,share", VARIANTS)
@pytest.mark.parametrize("loss,kappa", [(L.Logistic(), np.inf), (L.Logistic(), 1.0), (L.Hinge(), np.inf)])
def test_size_formulas_equal_built_program(variant, share, loss, kappa):
    inst = make_instance(loss, levels=(4, 3, 2, 3), N=16, delta=[1.0, 0.5, 1.5, 0.5], kappa=kappa)
    size = graph_size(inst, compact=variant == "compact", share_potentials=share)
    compiled = compile_graph(inst, variant, share_potentials=share)
    prog = compiled.program
    assert compiled.info["graph_size"] == size
    assert prog.variables["graph#mu"].stop - prog.variables["graph#mu"].start == size.potential_variables
    n_t = prog.variables["graph#t"].stop - prog.variables["graph#t"].start if "graph#t" in prog.variables else 0
    assert n_t == size.aux_variables
    assert (size.aux_variables > 0) == (variant == "compact")
    counts = prog.cone_counts()
    dual_rows = 2 * inst.n_numerical + 1  # l_inf dual norm of the l1 cost, lambda >= 0
    if loss.name == "logistic":
        assert counts["exp"] == 2 * size.loss_terms
        assert counts["nonneg"] == size.arc_constraints + dual_rows
    else:
        assert counts["nonneg"] == size.arc_constraints + 2 * size.loss_terms + dual_rows
    template = template_for(inst, compact=variant == "compact")
    assert (template.n_nodes, template.n_arcs) == (size.nodes_per_graph, size.arcs_per_graph)
    assert (template.graph.number_of_nodes(), template.graph.number_of_edges()) == \
        (size.nodes_per_graph, size.arcs_per_graph)


def test_figure1_template():
    """sun2025 notes §5.8: a = (3, 2), delta = (1, 1): 7 nodes, 10 arcs (3 + 4 + 3 sink arcs)."""
    t = build_template([3, 2], [1.0, 1.0])
    G = t.graph
    assert isinstance(G, nx.DiGraph) and nx.is_directed_acyclic_graph(G)
    assert G.number_of_nodes() == 7 and G.number_of_edges() == 10
    assert sorted(G.nodes) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0)]
    assert t.kind_counts() == {"stay": 3, "change": 4, "merged_change": 0, "sink": 3}
    assert G.number_of_edges((0, 0), (1, 1)) == 2  # the two parallel change arcs of z_1
    assert [G.nodes[(2, j)]["budget"] for j in range(3)] == [0.0, 1.0, 2.0]


def test_worked_size_examples():
    """sun2025 notes §5.7 / §10.2 item 7."""
    t = build_template([3, 2, 4], [2.0, 2.0, 1.5])
    assert [b.tolist() for b in t.lattice.budgets[1:]] == [[0, 2], [0, 2, 4], [0, 1.5, 2, 3.5, 4, 5.5]]
    assert (t.n_nodes, t.n_arcs) == (13, 25)
    w = {3: 0.6, 2: 0.9, 4: 1.7}
    assert build_template([3, 2, 4], [w[a] for a in (3, 2, 4)]).n_arcs == 31
    assert build_template([4, 3, 2], [w[a] for a in (4, 3, 2)]).n_arcs == 26
    order = choose_layer_order([3, 2, 4], [0.6, 0.9, 1.7])
    assert build_template(np.array([3, 2, 4])[order], np.array([0.6, 0.9, 1.7])[order]).n_arcs == 26
    for m in range(1, 6):  # unit weights: |V| = 2 + m (m + 3) / 2
        assert build_template([3] * m, [1.0] * m).n_nodes == 2 + m * (m + 3) // 2


@pytest.mark.parametrize("compact", [False, True])
def test_choose_layer_order_is_optimal(compact):
    rng = np.random.default_rng(0)
    for _ in range(10):
        m = int(rng.integers(2, 6))
        levels = rng.integers(2, 6, m)
        weights = np.round(rng.uniform(0.3, 2.0, m), 1)
        best = min(order_cost(levels[list(p)], weights[list(p)], compact)
                   for p in itertools.permutations(range(m)))
        o = choose_layer_order(levels, weights, compact)
        assert sorted(o.tolist()) == list(range(m))
        assert order_cost(levels[o], weights[o], compact) == best


def test_layer_order_changes_size_not_value():
    inst = make_instance(L.Logistic(), delta=[0.6, 0.9, 1.7], seed=2)
    values, arcs = [], []
    for order in ("schema", [2, 0, 1], None):
        compiled = compile_graph(inst, "full", order=order)
        values.append(solve(inst, compiled))
        arcs.append(compiled.info["graph_size"].arcs_per_graph)
    assert arcs == [31, 26, 26]
    assert_close(values[0], values[1]) and assert_close(values[0], values[2])
    with pytest.raises(ParameterError):
        compile_graph(inst, order=[0, 1])
    with pytest.raises(ParameterError):
        compile_graph(inst, variant="sparse")


@pytest.mark.parametrize("compact", [False, True])
def test_template_longest_paths_are_the_budget_maxima(compact):
    """Lemma 1: with arc weights beta_k(level), the longest source -> (m, j) path is the largest
    categorical score over the configurations of budget j (checked by enumeration, via networkx)."""
    levels, weights = np.array([3, 2, 4]), np.array([0.6, 0.9, 0.6])
    t = build_template(levels, weights, compact=compact)
    rng = np.random.default_rng(3)
    beta = [np.concatenate([[0.0], rng.normal(size=a - 1)]) for a in levels]
    z = np.array([1, 0, 3])
    G = nx.DiGraph()
    for u, v, data in t.graph.edges(data=True):
        if data["kind"] == "sink":
            continue
        k = data["layer"]
        if data["kind"] == "merged_change":
            w = max(beta[k][v_] for v_ in range(levels[k]) if v_ != z[k])
        else:
            w = beta[k][(z[k] + data["alt"]) % levels[k]]
        if not G.has_edge(u, v) or -w < G[u][v]["w"]:  # parallel arcs: keep the heaviest
            G.add_edge(u, v, w=-w)
    dist = nx.single_source_bellman_ford_path_length(G, (0, 0), weight="w")
    budgets = t.final_budgets
    best = np.full(budgets.size, -np.inf)
    for conf in itertools.product(*[range(a) for a in levels]):
        b = np.round(sum(weights[k] for k in range(3) if conf[k] != z[k]), 12)
        j = int(np.searchsorted(budgets, b))
        best[j] = max(best[j], sum(beta[k][conf[k]] for k in range(3)))
    np.testing.assert_allclose([-dist[(3, j)] for j in range(budgets.size)], best, atol=1e-12)


def test_no_layers_reduces_to_the_dual_program():
    """All categorical features immutable: no layer, the graph program is the nominal dual program."""
    inst = make_instance(L.Logistic(), delta=[np.inf, np.inf, np.inf], kappa=1.0)
    size = graph_size(inst)
    assert size.layers == [] and size.nodes_per_graph == 2 and size.arcs_per_graph == 1
    assert_close(solve(inst, compile_graph(inst)), solve(inst, compile_monolithic(inst)))
