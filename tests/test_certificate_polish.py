"""A rigorous lower bound where the conic masters' dual objective was the only one (issue 21 item 1).

On data with a many-level categorical feature the optimum has *tied levels*: rare levels whose coefficients meet at
the feature's maximum or minimum.  Its KKT multipliers spread each sample's change over the tied levels, while the
oracle's maximizer names one level per sample, so the Lagrangian bound at the worst-case distribution stalls far
below the optimum and the fit used to report Clarabel's dual objective (``source "method"``, a bound only up to the
solver's residuals).  :func:`drokit.reformulations.structured_master.certificate_polish` runs the barrier
master with level-max columns from the model; its level distributions, balanced on the dummy columns
(:meth:`drokit.reformulations.level_max.LevelMaxColumns.balanced`), give an explicit dual point evaluated
exactly.
"""

import numpy as np
import pandas as pd
import pytest

import drokit as dk
import drokit.reformulations.level_max as lm
import drokit.models.problem as pm
from drokit.reformulations.level_max import _capped_simplex


def many_levels(n=400, levels=200, seed=1):
    """One ``levels``-level categorical feature with Zipf frequencies (most levels rare), a 4-level one and two
    numerical features; logistic labels."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, levels + 1) ** 0.8
    codes = rng.choice(levels, size=n, p=freq / freq.sum())
    effect = rng.normal(0, 0.8, levels)
    num = rng.standard_normal((n, 2))
    other = rng.integers(0, 4, n)
    score = num @ np.array([0.7, -0.4]) + effect[codes] + 0.5 * (other == 1)
    y = (score + rng.logistic(size=n) > 0).astype(int)
    X = pd.DataFrame({"x1": num[:, 0], "x2": num[:, 1],
                      "c": pd.Categorical([f"k{c}" for c in codes], categories=[f"k{i}" for i in range(levels)]),
                      "d": pd.Categorical([f"m{c}" for c in other])})
    return X, y


def fit(X, y):
    """The conic masters' fit (``structured_master=False``: by default the barrier master after phase 1 certifies
    this one itself, with level-max columns), whose certificate the polish has to find."""
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1), method_options={"structured_master": False})
    return est.fit(X, y).result_


def test_the_default_fit_is_certified_by_an_explicit_dual_point(data):
    """With defaults the barrier master certifies the same optimum with its own dual point, no conic master."""
    default = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1)).fit(*data).result_
    conic = fit(*data)
    assert default.status == "optimal" and default.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert default.solver == "barrier_master" and conic.solver == "clarabel"
    assert default.relative_gap <= 1e-6
    assert default.objective == pytest.approx(conic.objective, rel=2e-6)


@pytest.fixture(scope="module")
def data():
    return many_levels()


def test_tied_levels_get_a_rigorous_bound(data):
    """The conic masters' fit is certified by an explicit dual point (source "lagrangian", found by the polish), not
    by Clarabel's dual objective; the bound sits below the exact worst-case risk of every model tried."""
    X, y = data
    res = fit(X, y)
    how = res.auxiliary["lower_bound"]
    assert res.status == "optimal" and res.solver == "clarabel"
    assert how["source"] == "lagrangian" and "polish" in how, how
    assert res.lower_bound <= res.upper_bound
    assert res.relative_gap <= 1e-6
    # a bound on the optimum: below the exact worst-case risk of other feasible models too
    for model in (dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.01)).fit(X, y),
                  dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.3)).fit(X, y)):
        other = dk.worst_case(model, X, y, dk.Wasserstein(radius=0.1))
        assert res.lower_bound <= other.value + 1e-12


def test_without_the_polish_the_bound_was_the_solvers(data, monkeypatch):
    """The negative control: without the polish this fit's certificate is the solver's dual objective (the
    Lagrangian bound at the worst-case distribution reaches far less), which is why the polish exists."""
    monkeypatch.setattr(pm.CompiledProblem, "_polished_lower", lambda self, i, c, l, u, lower, how, *a, **k: (lower, how))
    res = fit(*data)
    how = res.auxiliary["lower_bound"]
    assert how["source"] == "method"
    assert how["lagrangian"] < res.upper_bound - 1e-3


def test_unbalanced_level_distributions_do_not_certify(data, monkeypatch):
    """The central path's level distributions as they are (``q(v) ~ mu / slack`` on every level, also on levels no
    sample has) leave residuals no slope repair removes: the polish then cannot certify (the mutation fails the
    first test)."""
    monkeypatch.setattr(lm.LevelMaxColumns, "balanced", lambda self, distributions, *a, **k: distributions)
    res = fit(*data)
    assert res.auxiliary["lower_bound"]["source"] == "method"


@pytest.mark.parametrize("seed", range(20))
def test_capped_simplex_is_the_projection(seed):
    """``_capped_simplex(x)``: the nearest point of ``{q >= 0, sum q <= 1}`` -- feasible, and no feasible point
    (random ones, the vertices, the clipped point) is nearer; its KKT conditions hold."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1.5, rng.integers(1, 9)) + rng.uniform(-1, 1)
    q = _capped_simplex(x)
    assert np.all(q >= 0) and q.sum() <= 1 + 1e-12
    dist = np.linalg.norm(q - x)
    candidates = [np.zeros_like(x), *np.eye(x.size), np.maximum(x, 0) / max(1.0, np.maximum(x, 0).sum())]
    for _ in range(200):
        p = rng.dirichlet(np.ones(x.size)) * rng.uniform(0, 1)
        candidates.append(p)
    for p in candidates:
        assert dist <= np.linalg.norm(p - x) + 1e-12
    # KKT: x - q = nu on the support (nu >= 0, nu > 0 only when sum q = 1), x - q <= nu off it
    nu = float(np.max(x - q)) if q.sum() > 1 - 1e-12 else 0.0
    assert np.allclose((x - q)[q > 0], nu, atol=1e-10)
    assert np.all((x - q)[q == 0] <= nu + 1e-10)
