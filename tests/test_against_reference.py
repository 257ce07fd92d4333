"""drokit's public API against the independent brute-force reference
(tests/reference/brute_force.py, full enumeration of categorical configurations).

Instances are tiny (N <= 8, levels like (2, 3, 2)) so the whole file runs quickly.
"""

import os
import sys

import numpy as np
import pytest

try:  # tests/ is a package
    from .reference import brute_force as bf
except ImportError:  # tests/ is a plain directory (pytest rootdir-relative import)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from reference import brute_force as bf

import drokit as dk

LOSS_PARAMS = {
    "logistic": None,
    "hinge": None,
    "smooth_hinge": None,
    "huber": 0.8,
    "pinball": 0.3,
    "epsilon_insensitive": 0.2,
    "absolute": None,
}
CLS = list(bf.CLASSIFICATION_LOSSES)
REG = list(bf.REGRESSION_LOSSES)
ALL = CLS + REG
TASK = {**{l: "classification" for l in CLS}, **{l: "regression" for l in REG}}
NORMS = [1, 2, np.inf]
CAT_PS = [0.5, 1.0, 2.0]
LEVELS = [2, 3, 2]
TOL = 1e-5


def assert_close(a, b, tol=TOL):
    assert abs(a - b) <= tol * max(1.0, abs(b)), (a, b, abs(a - b))


def make_loss(name, par):
    L = dk.losses
    if name == "logistic":
        return L.Logistic()
    if name == "hinge":
        return L.Hinge()
    if name == "smooth_hinge":
        return L.SmoothHinge()
    if name == "huber":
        return L.Huber(delta=par)
    if name == "pinball":
        return L.Pinball(tau=par)
    if name == "epsilon_insensitive":
        return L.EpsilonInsensitive(tau=par)
    if name == "absolute":
        return L.Absolute()
    raise ValueError(name)


def drokit_solve(X_num, Z, levels, y, *, task, loss, loss_param, radius, norm_p, gamma,
                 delta, cat_p, kappa, method="monolithic"):
    metric = dk.GroundMetric(
        numerical=dk.NormCost(p=norm_p, weights=None if gamma is None else np.asarray(gamma, float)),
        categorical=dk.MismatchCost(weights=None if delta is None else np.asarray(delta, float),
                                    p=cat_p),
        label=dk.LabelCost(kappa=kappa),
    )
    amb = dk.Wasserstein(metric, radius=radius)
    prob = dk.Problem(loss=make_loss(loss, loss_param), ambiguity=amb, task=task)
    N = len(y)
    n = np.asarray(X_num).reshape(N, -1).shape[1]
    m = len(levels)
    X = np.column_stack([np.asarray(X_num, float).reshape(N, n),
                         np.asarray(Z, float).reshape(N, m)])
    compiled = prob.compile(X, np.asarray(y, float), method=method,
                            categorical_features=list(range(n, n + m)),
                            categories=[list(range(a)) for a in levels])
    res = compiled.solve(solver="clarabel")
    assert res.status == "optimal", res.status
    return res


def check_bounds(res):
    assert res.lower_bound <= res.objective + 1e-6
    assert res.upper_bound >= res.objective - 1e-6


def reference(X_num, Z, levels, y, **kw):
    return bf.dro_value(X_num, Z, levels, y, **kw)["value"]


# ----------------------------------------------------------------------------------------
# monolithic vs reference: every loss x norm x categorical exponent, with kappa finite /
# infinite and weighted / unweighted costs spread over the grid (each loss sees all of them)
# ----------------------------------------------------------------------------------------
def _grid():
    cases = []
    k = 0
    for li, loss in enumerate(ALL):
        for pi, p in enumerate(NORMS):
            for qi, q in enumerate(CAT_PS):
                finite_kappa = (pi + qi + li) % 2 == 0
                weighted = (pi + 2 * qi + li) % 3 != 0
                k += 1
                cases.append(pytest.param(loss, p, q, finite_kappa, weighted, 1000 + 37 * k,
                                          id=f"{loss}-p{p}-q{q}-{'kfin' if finite_kappa else 'kinf'}"
                                             f"-{'w' if weighted else 'u'}"))
    return cases


@pytest.mark.parametrize("loss,p,cat_p,finite_kappa,weighted,seed", _grid())
def test_monolithic_matches_reference(loss, p, cat_p, finite_kappa, weighted, seed):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    X_num, Z, y = bf.random_instance(seed, 7, 2, LEVELS, task)
    kw = dict(
        task=task, loss=loss, loss_param=par,
        radius=[0.05, 0.3, 1.0][seed % 3],
        norm_p=p,
        gamma=np.array([0.7, 1.6]) if weighted else None,
        delta=np.array([0.6, 1.3, 0.9]) if weighted else None,
        cat_p=cat_p,
        kappa=(1.0 if task == "classification" else 1.5) if finite_kappa else np.inf,
    )
    ref = reference(X_num, Z, LEVELS, y, **kw)
    res = drokit_solve(X_num, Z, LEVELS, y, **kw)
    assert_close(res.objective, ref)
    check_bounds(res)


# ----------------------------------------------------------------------------------------
# immutable numerical feature (gamma = inf) and immutable categorical feature (delta = inf)
# ----------------------------------------------------------------------------------------
def _immutable_instance(seed, task):
    """N = 8; numerical column 0 and categorical feature 0 are immutable.  Each of the 4
    immutable cells (x0 in {-1, 0.5}) x (z0 in {0, 1}) holds both labels, so no direction
    in the unpenalised coefficients separates the data and the optimum is attained."""
    rng = np.random.default_rng(seed)
    cells = [(-1.0, 0), (-1.0, 1), (0.5, 0), (0.5, 1)]
    x0 = np.repeat([c[0] for c in cells], 2)
    z0 = np.repeat([c[1] for c in cells], 2)
    X_num = np.column_stack([x0, rng.normal(size=8)])
    z1 = rng.permutation(np.concatenate(([0, 1, 2], rng.integers(0, 3, size=5))))
    z2 = rng.permutation(np.concatenate(([0, 1], rng.integers(0, 2, size=6))))
    Z = np.column_stack([z0, z1, z2]).astype(int)
    if task == "classification":
        y = np.tile([1.0, -1.0], 4)
    else:
        y = X_num @ np.array([0.5, -1.0]) + bf.encode(Z, LEVELS) @ rng.normal(size=4) \
            + 0.3 * rng.normal(size=8)
    return X_num, Z, y


@pytest.mark.parametrize("loss", ALL)
def test_immutable_features_match_reference(loss):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    i = ALL.index(loss)
    X_num, Z, y = _immutable_instance(100 + i, task)
    kw = dict(task=task, loss=loss, loss_param=par, radius=0.4, norm_p=NORMS[i % 3],
              gamma=np.array([np.inf, 1.2]), delta=np.array([np.inf, 0.8, 1.1]),
              cat_p=CAT_PS[(i + 1) % 3],
              kappa=(0.9 if task == "classification" else 2.0) if i % 2 == 0 else np.inf)
    ref = reference(X_num, Z, LEVELS, y, **kw)
    res = drokit_solve(X_num, Z, LEVELS, y, **kw)
    assert_close(res.objective, ref)
    check_bounds(res)


# ----------------------------------------------------------------------------------------
# m = 0: closed form (and auto) vs reference
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("finite_kappa", [False, True])
@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("loss", ALL)
def test_closed_form_matches_reference_without_categoricals(loss, p, finite_kappa):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    X_num, Z, y = bf.random_instance(ALL.index(loss) + 7, 8, 3, [], task)
    kw = dict(task=task, loss=loss, loss_param=par, radius=0.2, norm_p=p,
              gamma=np.array([0.5, 1.0, 2.0]), delta=None, cat_p=1.0,
              kappa=(0.8 if task == "classification" else 1.5) if finite_kappa else np.inf)
    ref = reference(X_num, Z, [], y, **kw)
    res = drokit_solve(X_num, Z, [], y, method="closed_form", **kw)
    assert_close(res.objective, ref)
    if p == 2:
        res_auto = drokit_solve(X_num, Z, [], y, method="auto", **kw)
        assert_close(res_auto.objective, ref)


# ----------------------------------------------------------------------------------------
# radius 0 == ERM
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ALL)
def test_zero_radius_is_erm(loss):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    if task == "classification":
        levels = [2, 3]
        X_num, Z, y = bf.nonseparable_instance(8, 1, levels)
    else:
        levels = LEVELS
        X_num, Z, y = bf.random_instance(5, 8, 2, levels, task)
    kw = dict(task=task, loss=loss, loss_param=par, radius=0.0, norm_p=1, gamma=None,
              delta=None, cat_p=1.0, kappa=np.inf)
    ref = reference(X_num, Z, levels, y, **kw)
    res = drokit_solve(X_num, Z, levels, y, **kw)
    assert_close(res.objective, ref)
    if loss == "logistic":
        v, _ = bf.erm_lbfgs_logistic(bf.design_matrix(X_num, Z, levels), y)
        assert_close(res.objective, v)
        assert_close(ref, v)
