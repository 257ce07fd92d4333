"""The intersection's lower bound is a distribution exactly in both balls (issue 21): HiGHS's plans, feasible only to
its 1e-7 tolerances, are repaired (drokit.reformulations.intersection_plans) before the value is taken."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from drokit.reformulations.intersection_bound import candidate_support, finite_support_lower_bound
from drokit.reformulations.intersection_plans import ROW_RTOL, repaired_plans


def _plans(seed, n=5, n_aux=4, m=7, noise=1e-7):
    """An exactly feasible pair of plans with a shared column marginal, then perturbed by ``noise`` (relative)."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(m))
    pi = rng.dirichlet(np.ones(m), size=n) * 0 + np.outer(np.full(n, 1.0 / n), q)   # the product plan: exact
    pihat = np.outer(np.full(n_aux, 1.0 / n_aux), q)
    ii, mm = np.nonzero(pi > 0)
    jj, mh = np.nonzero(pihat > 0)
    x = np.concatenate([pi[ii, mm], pihat[jj, mh]])
    x = x * (1.0 + noise * rng.standard_normal(x.size))
    c, c_aux = rng.uniform(0, 2, ii.size), rng.uniform(0, 2, jj.size)
    return x, ii, mm, jj, mh, c, c_aux, n, n_aux, m


@pytest.mark.parametrize("seed", range(10))
def test_repaired_plans_have_exact_marginals(seed):
    x, ii, mm, jj, mh, c, c_aux, n, n_aux, m = _plans(seed)
    before = np.bincount(ii, weights=x[:ii.size], minlength=n) * n
    assert np.max(np.abs(before - 1.0)) > 1e-9                 # HiGHS-like residuals to repair
    out = repaired_plans(x, ii, mm, jj, mh, c, c_aux, n, n_aux, m)
    assert out is not None
    assert np.max(np.abs(np.bincount(ii, weights=out.pi, minlength=n) * n - 1.0)) <= 1e-14
    assert np.allclose(np.bincount(mm, weights=out.pi, minlength=m), out.q, rtol=0, atol=1e-15)
    assert np.allclose(np.bincount(mh, weights=out.pihat, minlength=m), out.q, rtol=0, atol=1e-15)
    assert np.max(np.abs(np.bincount(jj, weights=out.pihat, minlength=n_aux) * n_aux - 1.0)) <= ROW_RTOL
    assert abs(out.q.sum() - 1.0) <= 1e-14 and np.all(out.pi >= 0) and np.all(out.pihat >= 0)
    assert out.cost == pytest.approx(float(out.pi @ c), rel=1e-15)


def test_a_row_without_mass_cannot_be_repaired():
    x, ii, mm, jj, mh, c, c_aux, n, n_aux, m = _plans(0)
    x[:ii.size][ii == 2] = 0.0
    assert repaired_plans(x, ii, mm, jj, mh, c, c_aux, n, n_aux, m) is None


def _wasserstein(X, y, points, labels, q, p, kappa):
    """W_1 between the empirical distribution of (X, y) and q on (points, labels), by an LP at HiGHS's tightest
    tolerances (an independent check of the budgets)."""
    N, M = X.shape[0], points.shape[0]
    C = np.linalg.norm(X[:, None, :] - points[None, :, :], ord=p, axis=2) + np.where(y[:, None] != labels[None, :],
                                                                                    kappa, 0.0)
    finite = np.isfinite(C)
    C = np.where(finite, C, 0.0)
    A_eq = np.zeros((N + M, N * M))
    for i in range(N):
        A_eq[i, i * M:(i + 1) * M] = 1.0
    for k in range(M):
        A_eq[N + k, k::M] = 1.0
    bounds = [(0, None) if f else (0, 0) for f in finite.ravel()]
    res = linprog(C.ravel(), A_eq=A_eq, b_eq=np.concatenate([np.full(N, 1.0 / N), q]), bounds=bounds,
                  method="highs", options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("seed", range(4))
def test_the_bound_is_the_value_of_a_distribution_in_both_balls(seed):
    rng = np.random.default_rng(seed)
    X, Xa = rng.normal(size=(5, 2)), rng.normal(size=(4, 2)) + 0.5
    y, ya = np.where(rng.random(5) < 0.5, -1.0, 1.0), np.where(rng.random(4) < 0.5, -1.0, 1.0)
    coef, b, eps, eps_a = rng.normal(size=2), 0.1, 1.0, 1.5
    value, points, labels, q = finite_support_lower_bound(b, coef, X, y, Xa, ya, eps, eps_a, "logistic", p=2,
                                                          kappa=1.0, return_distribution=True)
    assert np.isfinite(value) and abs(q.sum() - 1.0) <= 1e-14 and np.all(q >= 0)
    losses = np.log1p(np.exp(-labels * (b + points @ coef)))
    assert value == pytest.approx(float(losses @ q), rel=1e-14)      # the value of q itself, not the LP's objective
    assert _wasserstein(X, y, points, labels, q, 2, 1.0) <= eps * (1 + 1e-8)
    assert _wasserstein(Xa, ya, points, labels, q, 2, 1.0) <= eps_a * (1 + 1e-8)
