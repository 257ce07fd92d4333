"""The box reformulation (polynomial-size exact LP/SOCP for piecewise-affine losses, p = 1) equals the
monolithic program, and refuses the settings where it is not exact.

The thesis's verified instance (selvi2025 §3.3: hinge, N=8, M_x=2, k=(2,3,3), eps=0.1, value 0.2698662)
is not reproduced: the note gives no data or generator for it.
"""

import itertools

import numpy as np
import pytest

import drokit as dk
from drokit.methods import method_names
from drokit.reformulations.box import compile_box
from tests.reference.brute_force import random_instance

PIECEWISE = {"hinge": (dk.losses.Hinge, "classification"),
             "pinball": (lambda: dk.losses.Pinball(0.3), "regression"),
             "epsilon_insensitive": (lambda: dk.losses.EpsilonInsensitive(0.15), "regression"),
             "absolute": (dk.losses.Absolute, "regression")}
LEVEL_SETS = [(2, 3, 4), (2, 2, 2), (3, 4), (4, 2, 3, 2)]


def _weights(kind, m, rng):
    if kind == "unit":
        return None
    if kind == "weighted":
        return list(rng.uniform(0.3, 2.0, m))
    if kind == "immutable":  # one immutable feature mixed in, one free (weight 0)
        w = list(rng.uniform(0.3, 2.0, m))
        w[0], w[-1] = np.inf, 0.0 if m > 2 else w[-1]
        return w
    raise ValueError(kind)


def _cases():
    """36 random small instances covering losses x norms x weights x kappa x levels x M_x."""
    rng = np.random.default_rng(2024)
    combos = list(itertools.product(PIECEWISE, [1, 2, np.inf], ["unit", "weighted", "immutable"]))
    cases = []
    for i, (loss, norm_p, weights) in enumerate(combos):
        levels = LEVEL_SETS[i % len(LEVEL_SETS)]
        kappa = [np.inf, float(rng.uniform(0.5, 2.0))][i % 2]
        n_num = [2, 0, 1][i % 3]
        radius = float(rng.choice([0.05, 0.3, 1.0]))
        cases.append((loss, norm_p, weights, kappa, levels, n_num, radius, i))
    return cases


def _setup(loss, norm_p, weights, kappa, levels, n_num, radius, seed, cat_p=1, N=8, fit_intercept=True):
    make, task = PIECEWISE.get(loss) or (lambda: dk.losses.get_loss(loss), dk.losses.get_loss(loss).task)
    rng = np.random.default_rng(seed)
    Xn, Z, y = random_instance(seed, N, max(n_num, 1), list(levels), task)
    Xn = Xn[:, :n_num]
    X = np.column_stack([Xn, Z])
    m = len(levels)
    kw = {"categorical_features": list(range(n_num, n_num + m)),
          "categories": [list(range(a)) for a in levels]}
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p),
                             categorical=dk.MismatchCost(weights=_weights(weights, m, rng), p=cat_p),
                             label=dk.LabelCost(kappa=kappa))
    prob = dk.Problem(loss=make(), ambiguity=dk.Wasserstein(metric, radius=radius), task=task,
                      fit_intercept=fit_intercept)
    return prob, X, y, kw


def _solve_box(prob, X, y, kw):
    """Through ``Problem.compile(method="box")``."""
    assert "box" in method_names()
    return prob.compile(X, y, method="box", **kw).solve()


@pytest.mark.parametrize("loss,norm_p,weights,kappa,levels,n_num,radius,seed", _cases(),
                         ids=lambda v: repr(v) if not isinstance(v, tuple) else "x".join(map(str, v)))
def test_box_equals_monolithic(loss, norm_p, weights, kappa, levels, n_num, radius, seed):
    prob, X, y, kw = _setup(loss, norm_p, weights, kappa, levels, n_num, radius, seed)
    mono = prob.compile(X, y, method="monolithic", **kw).solve()
    box = _solve_box(prob, X, y, kw)
    assert box.status == "optimal" and box.method == "box"
    assert box.objective == pytest.approx(mono.objective, rel=1e-6, abs=1e-6)
    # the box's beta is optimal for the mixed problem: its exact worst-case risk (enumeration) is the optimum
    assert box.upper_bound == pytest.approx(mono.objective, rel=1e-6, abs=1e-6)


def test_box_without_intercept_and_larger_instance_equals_cutting_plane():
    """N = 40, six 3-level features (|Z| = 729): box = cutting plane (DP oracle); the box program is
    polynomial: far fewer rows than the 29,160-row monolithic program."""
    prob, X, y, kw = _setup("hinge", 2, "weighted", 0.7, (3,) * 6, 2, 0.05, 8, N=40, fit_intercept=False)
    box = _solve_box(prob, X, y, kw)
    cut = prob.compile(X, y, method="cutting_plane", **kw).solve()
    assert np.abs(box.coef).max() > 0.1  # not the trivial constant model
    assert box.objective == pytest.approx(cut.objective, rel=1e-6, abs=1e-6)
    # rows actually in the program: per label family (2) and hinge piece (J = 2, one with a_j != 0),
    # N sample rows plus one row per (sample, feature, other level): 40 * 2 * (2 + 6 * 2); the full
    # enumeration it stands for is reported separately
    assert box.n_configuration_rows == 40 * 2 * (2 + 6 * 2)
    assert box.n_enumeration_rows == 40 * 729 * 2
    assert box.n_constraints < 40 * 729 * 2 / 10
    assert "1,120 configuration rows in the program (full enumeration 58,320)" in box.summary()


@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge", "huber"])
def test_box_refuses_losses_that_are_not_piecewise_affine(loss):
    prob, X, y, kw = _setup(loss, 1, "unit", np.inf, (2, 3), 1, 0.1, 0)
    inst = prob.bind(X, y, **kw)
    with pytest.raises(dk.ParameterError, match=f"piecewise-affine loss.*{loss!r} is not piecewise affine"):
        compile_box(inst)


def test_box_refuses_p_other_than_one():
    prob, X, y, kw = _setup("hinge", 1, "unit", np.inf, (2, 3), 1, 0.1, 0, cat_p=2)
    with pytest.raises(dk.ParameterError, match="exponent p = 1.*p=2"):
        compile_box(prob.bind(X, y, **kw))


def test_all_immutable_box_equals_closed_form():
    prob, X, y, kw = _setup("absolute", 1, "unit", 1.5, (3, 2), 2, 0.3, 3)
    prob.ambiguity.metric.categorical.weights = np.inf
    ref = prob.compile(X, y, method="closed_form", **kw).solve()
    box = _solve_box(prob, X, y, kw)
    assert box.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-6)
