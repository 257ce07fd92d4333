"""Budget cuts (reformulations/budget_cuts.py): one master constraint per (sample, number of
changes, direction, label) covering every configuration with that many changes.

Independent checks: a program made of *every* budget cut equals the monolithic enumeration for losses
that are monotone in the margin (exactness), and is a lower bound for a non-monotone loss (validity);
the cutting plane with budget cuts reaches the monolithic optimum for every loss, p and kappa."""

import itertools

import numpy as np
import pytest

import drokit as dk
from drokit.reformulations.budget_cuts import BudgetCuts, budget_cuts_apply, weight_classes
from drokit.reformulations.dual import build_dual_program
from drokit.oracles.enumeration import enumerate_configurations
from drokit.solvers import get_backend
from drokit.solvers.base import solve_with_retries
from tests.reference.brute_force import random_instance

LEVELS = [3, 2, 4, 2]


def instance(loss, task, *, kappa=np.inf, cat_p=1.0, delta=0.7, seed=3, N=12, n_num=1, radius=0.4):
    Xn, Z, y = random_instance(seed, N, n_num, LEVELS, task)
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=delta, p=cat_p), label=dk.LabelCost(kappa))
    prob = dk.Problem(loss, dk.Wasserstein(metric, radius=radius), task=task)
    X = np.column_stack([Xn, Z])
    kw = dict(categorical_features=list(range(n_num, n_num + len(LEVELS))),
              categories=[list(range(a)) for a in LEVELS])
    return prob, X, y, kw


def every_budget_cut(inst) -> BudgetCuts:
    """Every (sample, counts per weight class, direction, label) cut, counts not all zero."""
    mutable, cls = weight_classes(inst)
    sizes = np.bincount(cls)
    delta = np.array([np.asarray(inst.metric.delta, dtype=float)[mutable][cls == k][0]
                      for k in range(sizes.size)])
    p = float(inst.metric.categorical.p)
    counts = np.array(list(itertools.product(*[range(n + 1) for n in sizes])))[1:]   # drop all-zero
    flips = [False, True] if inst.label_flips else [False]
    n, c, mu, f = (a.ravel() for a in np.meshgrid(np.arange(inst.n_samples), np.arange(len(counts)),
                                                   [1.0, -1.0], flips, indexing="ij"))
    cost = (counts[c] @ delta ** p) ** (1.0 / p) + np.where(f, inst.metric.kappa if inst.label_flips else 0.0, 0.0)
    return BudgetCuts(n.astype(int), counts[c], mu, f.astype(bool), cost)


def nominal_rows(inst):
    rows = enumerate_configurations(inst, nominal_only=True)
    if inst.label_flips:   # the flipped nominal rows (no categorical change) are configuration rows too
        from drokit.oracles.enumeration import ConfigurationRows, concat_rows
        flipped = ConfigurationRows(rows.sample, rows.Z, rows.cost + inst.metric.kappa, ~rows.flip)
        rows = concat_rows([rows, flipped])
    return rows


@pytest.mark.parametrize("delta", [0.7, [1.0, 0.5, 1.0, 0.5], [1.0, 2.0, 0.5, 1.5]])
@pytest.mark.parametrize("loss,task,kappa,cat_p,monotone", [
    ("logistic", "classification", np.inf, 1.0, True),
    ("logistic", "classification", 0.8, 2.0, True),
    ("hinge", "classification", np.inf, 0.5, True),
    ("smooth_hinge", "classification", 1.5, 1.0, True),
    ("huber", "regression", np.inf, 1.0, False),
    ("pinball", "regression", np.inf, 2.0, False),
])
def test_program_of_every_budget_cut_equals_enumeration(loss, task, kappa, cat_p, monotone, delta):
    """One weight class (0.7), two classes of two features, and four classes of one feature each."""
    prob, X, y, kw = instance(loss, task, kappa=kappa, cat_p=cat_p, delta=delta)
    inst = prob.bind(X, y, **kw)
    assert budget_cuts_apply(inst)[0]
    mono = prob.compile(X, y, method="monolithic", **kw).solve()
    program = build_dual_program(inst, nominal_rows(inst), budget=every_budget_cut(inst))
    sol = solve_with_retries(get_backend("clarabel"), program)
    assert sol.status == "optimal"
    if monotone:
        assert sol.primal_objective == pytest.approx(mono.objective, rel=1e-6, abs=1e-8)
    else:   # a relaxation: the master may overstate the score change where the loss decreases
        assert sol.primal_objective <= mono.objective * (1 + 1e-7) + 1e-8


@pytest.mark.parametrize("loss,task,kappa,cat_p", [
    ("logistic", "classification", np.inf, 1.0), ("logistic", "classification", 0.8, 2.0),
    ("hinge", "classification", 1.2, 1.0), ("smooth_hinge", "classification", np.inf, 0.5),
    ("huber", "regression", np.inf, 1.0), ("absolute", "regression", 1.0, 1.0),
    ("epsilon_insensitive", "regression", np.inf, 2.0)])
@pytest.mark.parametrize("cut_family", ["budget", "configuration"])
@pytest.mark.parametrize("delta", [0.7, [1.0, 0.5, 1.0, 0.5]])
def test_cutting_plane_with_budget_cuts_reaches_the_optimum(loss, task, kappa, cat_p, cut_family, delta):
    prob, X, y, kw = instance(loss, task, kappa=kappa, cat_p=cat_p, seed=5, N=15, delta=delta)
    mono = prob.compile(X, y, method="monolithic", **kw).solve()
    res = prob.compile(X, y, method="cutting_plane", **kw).solve(
        method_options={"cut_family": cut_family, "phase_one": False})
    assert res.status == "optimal"
    # the objective is the exact worst-case risk of the model returned: above the optimum (so above the
    # monolithic fit's certified lower bound; the monolithic model itself may be 1e-8 worse), and within the
    # certified gap (1e-6 max(1, |UB|)) of it
    assert mono.lower_bound - 1e-9 <= res.objective <= mono.objective + 1e-6 * max(1.0, mono.objective) + 1e-8
    assert res.lower_bound <= res.upper_bound * (1 + 1e-7) + 1e-9
    if cut_family == "budget":
        assert any(r.budget_cuts > 0 for r in res.history) or len(res.history) == 1


def test_budget_cuts_need_two_mutable_features():
    prob, X, y, kw = instance("logistic", "classification", delta=[1.0, np.inf, np.inf, np.inf])
    assert not budget_cuts_apply(prob.bind(X, y, **kw))[0]
    with pytest.raises(dk.ParameterError, match="cut_family='budget' does not apply: fewer than two"):
        prob.compile(X, y, method="cutting_plane", **kw).solve(method_options={"cut_family": "budget"})
    # auto falls back to configuration rows and still solves
    res = prob.compile(X, y, method="cutting_plane", **kw).solve()
    assert all(r.budget_cuts == 0 for r in res.history)


def test_weight_classes_group_equal_weights():
    prob, X, y, kw = instance("logistic", "classification", delta=[1.0, 0.5, 1.0, np.inf])
    mutable, cls = weight_classes(prob.bind(X, y, **kw))
    assert mutable.tolist() == [0, 1, 2] and cls[0] == cls[2] != cls[1]


def test_budget_cut_size_does_not_grow_with_the_number_of_levels():
    """A budget cut costs one linear row per feature (the level maxima are shared by all cuts), not one per
    alternative level: with a 40-level feature the old form added 41+ rows per cut (a 300-level table's
    652-cut master had 237,591 rows and Clarabel stalled).  Ten more cuts of the same program add at most
    ``features + epigraph`` rows each."""
    levels = [40, 3, 2]
    Xn, Z, y = random_instance(7, 50, 1, levels, "classification")
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=1.0), label=dk.LabelCost(np.inf))
    prob = dk.Problem("logistic", dk.Wasserstein(metric, radius=0.3), task="classification")
    inst = prob.bind(np.column_stack([Xn, Z]), y, categorical_features=[1, 2, 3],
                     categories=[list(range(a)) for a in levels])
    cuts = every_budget_cut(inst)
    one = build_dual_program(inst, nominal_rows(inst), budget=cuts.take(np.arange(1)))
    eleven = build_dual_program(inst, nominal_rows(inst), budget=cuts.take(np.arange(11)))
    epigraph = 7     # the logistic loss's epigraph of one cut: two exponential cones and a linear row
    shared = 2 * sum(levels)     # the level maxima, once per (feature, direction) used
    assert eleven.A.shape[0] - one.A.shape[0] <= 10 * (len(levels) + epigraph) + shared
    # and the cuts still solve to a value between the nominal rows' and the monolithic optimum
    sol = solve_with_retries(get_backend("clarabel"), eleven)
    nominal = solve_with_retries(get_backend("clarabel"), build_dual_program(inst, nominal_rows(inst)))
    mono = prob.compile(np.column_stack([Xn, Z]), y, method="cutting_plane", categorical_features=[1, 2, 3],
                        categories=[list(range(a)) for a in levels]).solve()
    assert nominal.primal_objective - 1e-7 <= sol.primal_objective <= mono.upper_bound + 1e-7
