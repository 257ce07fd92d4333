"""Slope-split smoothing (:mod:`drokit.reformulations.slope_split`), checked independently of its own
bookkeeping on small instances against the brute-force reference (:mod:`tests.reference.brute_force`):

* ``F_tau``'s gradient and Hessian against central differences (binary and multi-level features, a numerical
  feature under the cone barrier, labels fixed and flipping, logistic and hinge);
* ``F_tau`` against the exact objective at fixed points: within ``tau (log K + sum_l log a_l)`` plus the slope
  grid's tangent error, and converging to it as ``tau -> 0`` (hinge: exact slopes);
* weak duality: the repaired Lagrangian bound of the smoothed dual point (fractional rows,
  :class:`~drokit.evaluation.lower_bound.FractionalRows`) is below the optimum at arbitrary points and
  temperatures, and close to it at the smoothed optimum; doctored dual points (costs halved, the nominal term
  dropped) exceed the optimum, so the check can fail;
* the search: its upper bound is the exact worst-case risk of its model, at least the optimum and close to it.

"The optimum" is the reference's (cvxpy over every configuration row, capped by the exact risk of its model).
"""

import dataclasses
import functools
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import drokit as dk
from drokit.reformulations import slope_search as search_module
from drokit.reformulations import slope_split as ss
from drokit.reformulations.row_terms import split_theta
from drokit.evaluation.lower_bound import FractionalRows, lagrangian_bound
from drokit.evaluation.worst_case import lambda_floor
from drokit.oracles import make_oracle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_instances as fz  # noqa: E402

bf = fz.bf

CASES = [(loss, kappa, numerical) for loss in ("logistic", "hinge") for kappa in (np.inf, 1.3)
         for numerical in (0, 1)]


def case_id(case) -> str:
    loss, kappa, numerical = case
    return f"{loss}-{'nokappa' if np.isinf(kappa) else 'kappa'}-{numerical}num"


@functools.lru_cache(maxsize=None)
def make(case, seed: int = 0) -> fz.Instance:
    """12 samples, categorical features with 2, 3 and 2 levels (p = 1, unequal weights), optionally one numerical
    feature; logistic labels redrawn until the optimum is attained."""
    loss, kappa, numerical = case
    inst = fz.three_feature_instance(np.random.default_rng([77, seed, CASES.index(case)]), loss, kappa, numerical)
    return dataclasses.replace(inst, seed=seed)


def bound(inst: fz.Instance):
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                         task=inst.task)
    di = problem.bind(inst.frame(), inst.y.copy()).fitting_view()
    return di, make_oracle(di, "dp")


def random_theta(obj: ss.SlopeSplitObjective, rng) -> np.ndarray:
    """A strictly feasible point: coefficients N(0, 0.5), lambda above the cone's floor."""
    theta = np.zeros(obj.dim)
    theta[:-1] = 0.5 * rng.standard_normal(obj.dim - 1)
    theta[-1] = 0.5
    while not obj.barrier.feasible(theta):
        theta[-1] *= 2.0
    return theta


def exact_objective(di, oracle, theta: np.ndarray, obj: ss.SlopeSplitObjective) -> float:
    """``lam eps + sum_n p_n max_k (l_k - lam c_k)`` at ``theta`` (the oracle's exact maxima)."""
    intercept, coef, lam = split_theta(di, theta)
    sep = oracle.separate(intercept, coef, lam, np.zeros(di.n_samples))
    return float(lam * di.radius + di.p @ sep.violation)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_derivatives_match_central_differences(case):
    di, _ = bound(make(case))
    assert ss.slope_split_applies(di)[0]
    obj = ss.SlopeSplitObjective(di, grid_size=17)
    rng = np.random.default_rng(1)
    for tau in (0.3, 0.03):
        theta = random_theta(obj, rng)
        mu = 0.1 * tau
        _, grad, hess = obj.derivatives(theta, tau, mu)
        h = 1e-6
        for i in range(obj.dim):
            e = np.zeros(obj.dim)
            e[i] = h
            vp, gp, _ = obj.derivatives(theta + e, tau, mu)
            vm, gm, _ = obj.derivatives(theta - e, tau, mu)
            assert abs((vp - vm) / (2 * h) - grad[i]) <= 1e-6 * max(1.0, abs(grad[i])), (tau, i)
            assert np.max(np.abs((gp - gm) / (2 * h) - hess[i])) <= 1e-5 * max(1.0, np.max(np.abs(hess[i]))), (tau, i)
        assert obj.value(theta, tau, mu) == pytest.approx(obj.derivatives(theta, tau, mu)[0], rel=1e-12)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_smoothed_objective_brackets_the_exact_one(case):
    """``F_grid <= F_tau <= F_grid + tau log(K prod a_l)`` per sample (log-sum-exps), ``F_grid <= F`` (tangents
    below ``L``); so ``F_tau - F <= tau log(K prod a_l)``, and for hinge (its two slopes are exact) also
    ``F_tau >= F``, and ``F_tau -> F`` as ``tau -> 0`` (for logistic up to the grid's tangent error)."""
    di, oracle = bound(make(case))
    obj = ss.SlopeSplitObjective(di)
    rng = np.random.default_rng(2)
    K = obj.alpha.shape[1]
    spread = np.log(K) + float(np.sum(np.log(np.asarray(di.schema.levels, dtype=float))))
    for _ in range(3):
        theta = random_theta(obj, rng)
        F = exact_objective(di, oracle, theta, obj)
        for tau in (1e-1, 1e-3, 1e-6):
            F_tau = obj.value(theta, tau, 0.0)
            assert F_tau - F <= tau * spread + 1e-12
            if case[0] == "hinge":
                assert F_tau >= F - 1e-12
        # hinge: exact slopes; logistic: between grid margins u_k a tangent is below L by at most L'' du^2 / 8
        # (L'' <= 1/4), du the grid's spacing (the 33 margins over [-32, 32], the reach where L' meets its ends)
        du = 64.0 / (ss.GRID_SIZE - 1)
        assert abs(obj.value(theta, 1e-8, 0.0) - F) <= (1e-6 if case[0] == "hinge" else 0.25 * du ** 2 / 8)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fractional_dual_bound_is_below_the_optimum(case):
    inst = make(case)
    opt = inst.reference
    assert opt is not None
    di, oracle = bound(inst)
    obj = ss.SlopeSplitObjective(di)
    rng = np.random.default_rng(3)
    points = [(random_theta(obj, rng), tau) for tau in (0.3, 1e-3)]
    search = search_module.slope_split_search(di, oracle, tau_min=1e-3)
    best = np.concatenate([[search.intercept] if di.fit_intercept else [], search.coef, [search.lam]])
    points.append((best, 1e-4))
    finite = 0
    for theta, tau in points:
        rows, mass, slopes = obj.dual_point(theta, tau)
        assert isinstance(rows, FractionalRows)
        assert np.allclose(np.bincount(rows.sample, weights=mass, minlength=di.n_samples), di.p)
        value = lagrangian_bound(di, rows, mass, slopes).value
        assert value <= opt + 1e-9 * max(1.0, abs(opt))
        finite += np.isfinite(value)
    assert finite >= 1
    # the search's own bound (its slopes refined at the active margins) is close: a repair that broke it shows here
    certifying = search_module.slope_split_search(di, oracle, tau_min=1e-4, certify_tol=1e-6)
    assert opt - 1e-2 * max(1.0, abs(opt)) <= certifying.lower_bound <= opt + 1e-9 * max(1.0, abs(opt))


def test_doctored_fractional_rows_break_weak_duality():
    """The weak-duality check can fail: a dual point whose fractional rows lost their encoded rows (all zero, so
    that any slopes are stationary) with slopes at the middle of the slope domain claims ``log 2`` per sample,
    above the optimum; the honest point of the same search stays below it."""
    inst = make(CASES[0])
    opt = inst.reference
    di, oracle = bound(inst)
    search = search_module.slope_split_search(di, oracle, tau_min=1e-5, certify_tol=1e-6)
    theta = np.concatenate([[search.intercept], search.coef, [search.lam]])
    rows, mass, slopes = search.objective.dual_point(theta, search.tau)
    honest = lagrangian_bound(di, rows, mass, slopes).value
    emptied = FractionalRows(rows.sample, rows.flip, rows.cost, sp.csr_matrix(rows.matrix.shape))
    doctored = lagrangian_bound(di, emptied, mass, np.full_like(slopes, -0.5)).value
    assert honest <= opt + 1e-9 < doctored
    assert doctored == pytest.approx(np.log(2.0))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_search_upper_bound_is_an_exact_risk_near_the_optimum(case):
    inst = make(case)
    opt = inst.reference
    di, oracle = bound(inst)
    out = search_module.slope_split_search(di, oracle, tau_min=1e-4, certify_tol=1e-6)
    risk = inst.reference_risk(out.intercept, out.coef)     # min over lambda: at most the value at out.lam
    scale = max(1.0, abs(opt))
    assert opt - 1e-7 * scale <= risk <= out.upper_bound + 1e-8 * scale
    assert out.upper_bound <= opt + 1e-2 * scale     # a start for the masters (30 Newton steps per temperature)
    assert out.lower_bound <= opt + 1e-9 * scale
    assert out.lam >= lambda_floor(di, out.coef) - 1e-12
    if out.certified:
        assert out.upper_bound - out.lower_bound <= 1e-6 * max(1.0, abs(out.upper_bound))


def test_applies_only_where_the_split_is_exact():
    inst = make(CASES[0])
    di, _ = bound(inst)
    assert ss.slope_split_applies(di) == (True, "")
    p2 = dataclasses.replace(inst, cat_p=2.0)
    di2, _ = bound(p2)
    ok, why = ss.slope_split_applies(di2)
    assert not ok and "p != 1" in why


def fit(inst: fz.Instance, **options) -> dk.FitResult:
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                         task=inst.task)
    return problem.compile(inst.frame(), inst.y.copy(), "cutting_plane").solve(method_options=options or None)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fits_searched_by_slope_split_equal_the_reference(case):
    """``search="slope_split"`` (no phase 1): the certified fit's objective is the brute-force optimum and its
    lower bound is below it."""
    inst = make(case)
    opt = inst.reference
    res = fit(inst, search="slope_split")
    scale = max(1.0, abs(opt))
    assert res.status == "optimal"
    assert res.objective == pytest.approx(opt, abs=1e-6 * scale)
    assert res.lower_bound <= opt + 1e-9 * scale
    assert any(a["stage"] == "slope split" for a in res.attempts)


def wide_frame(seed: int = 5, N: int = 60, m: int = 32):
    """``m`` binary features with 1-decimal weights: phase 1's working set churns there."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    Z = rng.integers(0, 2, size=(N, m))
    y = np.where(Z @ rng.normal(size=m) * 0.7 + rng.normal(size=N) > 0, 1, -1)
    X = pd.DataFrame({f"f{j}": pd.Categorical(Z[:, j]) for j in range(m)})
    delta = {f"f{j}": float(np.round(rng.uniform(0.3, 2.0), 1)) for j in range(m)}
    return X, y, dk.GroundMetric(categorical=dk.MismatchCost(weights=delta))


def test_default_search_falls_back_to_slope_split_on_wide_data():
    """32 binary features, 1-decimal weights: phase 1 stops unconverged, the default search continues with the
    slope split, and the fit equals the one searched by phase 1 alone (two exact paths, both certified).  The
    slope-cut LP, which takes the split's place where it applies (tests/test_slope_cuts.py), is off here."""
    X, y, metric = wide_frame()
    fits = {}
    for search in ("auto", "phase_one"):
        clf = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1), method_options={"search": search,
                                                                                         "slope_cuts": False})
        fits[search] = clf.fit(X, y).result_
    auto, alone = fits["auto"], fits["phase_one"]
    assert auto.status == alone.status == "optimal"
    assert any(a["stage"] == "slope split" for a in auto.attempts)
    assert not any(a["stage"] == "slope split" for a in alone.attempts)
    assert auto.objective == pytest.approx(alone.objective, rel=2e-6)
    assert auto.lower_bound <= alone.objective + 1e-9
    # the phase-1 path's bound here is Clarabel's dual objective ("method": valid up to the solver's residuals), which
    # sits 7e-9 above the split path's exact risk; a Lagrangian bound would not
    assert alone.lower_bound <= auto.objective + (1e-9 if alone.auxiliary["lower_bound"]["source"] != "method" else 1e-7)


def test_search_option_is_checked():
    inst = make(CASES[0])
    with pytest.raises(dk.ParameterError, match="search must be"):
        fit(inst, search="newton")
    p2 = dataclasses.replace(inst, cat_p=2.0)
    with pytest.raises(dk.ParameterError, match="search='slope_split' does not apply.*p != 1"):
        fit(p2, search="slope_split")


def test_ordinal_level_costs_and_sample_weights():
    """Level costs ``delta_l U_l(v, v')`` (an ordinal feature, rank distance) and sample weights enter the split's
    costs and masses: the fit searched by it equals the reference (which repeats the weighted rows)."""
    base = make(CASES[0])
    inst = dataclasses.replace(base, ordinal=(1,), sample_weight=np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 2, 1]))
    opt = inst.reference
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                         task=inst.task)
    di = problem.bind(inst.frame(), inst.y.copy(), sample_weight=inst.sample_weight).fitting_view()
    split = search_module.slope_split_search(di, make_oracle(di, "dp"), tau_min=1e-4, certify_tol=1e-6)
    assert np.isfinite(split.lower_bound) and split.lower_bound <= opt + 1e-9 * max(1.0, abs(opt))
    assert opt - 1e-7 <= split.upper_bound <= opt + 1e-2
    res = problem.compile(inst.frame(), inst.y.copy(), "cutting_plane", sample_weight=inst.sample_weight).solve(
        method_options={"search": "slope_split"})
    assert res.status == "optimal"
    assert res.objective == pytest.approx(opt, abs=1e-6 * max(1.0, abs(opt)))
    assert res.lower_bound <= opt + 1e-9 * max(1.0, abs(opt))
