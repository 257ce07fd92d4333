"""The slope-cut LP master (:mod:`drokit.reformulations.slope_cuts`) against the brute-force reference
(:mod:`tests.reference.brute_force`: cvxpy over every configuration row), its dual point checked as a dual point
(stationarity before any repair, weak duality at arbitrary masters), and the fits that take it by default.

The instances are test_slope_split's (12 samples, categorical features with 2, 3 and 2 levels, unequal weights,
p = 1), with sample weights and a numerical feature priced by an l1 or an l-inf ground norm."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import drokit as dk
from drokit.certificates.lagrangian import lagrangian_bound
from drokit.certificates.repair import column_roles
from drokit.reformulations import slope_cuts as sc
from drokit.oracles import make_oracle

sys.path.insert(0, os.path.dirname(__file__))
import fuzz_instances as fz  # noqa: E402
from test_slope_split import wide_frame  # noqa: E402

bf = fz.bf

CASES = [(loss, kappa, numerical, norm_p, weighted)
         for loss in ("logistic", "hinge", "smooth_hinge") for kappa in (np.inf, 1.3)
         for numerical, norm_p, weighted in ((0, 1.0, False), (1, 1.0, True), (1, np.inf, False))]


def case_id(case) -> str:
    loss, kappa, numerical, norm_p, weighted = case
    return (f"{loss}-{'nokappa' if np.isinf(kappa) else 'kappa'}-{numerical}num"
            f"{'-pinf' if numerical and np.isinf(norm_p) else ''}{'-weighted' if weighted else ''}")


@functools.lru_cache(maxsize=None)
def make(case) -> fz.Instance:
    """12 samples, categorical levels (2, 3, 2), weights (0.6, 0.9, 1.4), optionally one numerical feature and
    integer sample weights; labels redrawn until the optimum is attained."""
    loss, kappa, numerical, norm_p, weighted = case
    return fz.three_feature_instance(np.random.default_rng([78, CASES.index(case)]), loss, kappa, numerical, norm_p,
                                     weighted)


def bound(inst: fz.Instance):
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                         task=inst.task)
    di = problem.bind(inst.frame(), inst.y.copy(), sample_weight=inst.sample_weight).fitting_view()
    return di, make_oracle(di, "auto")


def cold_start(di) -> SimpleNamespace:
    """Coefficients 0 and lambda 1: the loop's start when it has no phase-1 point."""
    return SimpleNamespace(intercept=0.0, coef=np.zeros(di.schema.n_encoded), lam=1.0)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_slope_cut_search_certifies_the_reference_optimum(case):
    """From a cold start the loop certifies: its upper bound is the optimum, its lower bound (the LP's dual point
    repaired and evaluated exactly) below it."""
    inst = make(case)
    opt = inst.reference
    assert opt is not None
    di, oracle = bound(inst)
    assert sc.slope_cuts_apply(di) == (True, "")
    out = sc.slope_cut_search(di, oracle, cold_start(di), tol=1e-7)
    scale = max(1.0, abs(opt))
    assert out.certified, out.stop
    assert out.upper_bound == pytest.approx(opt, abs=2e-7 * scale)
    assert out.lower_bound <= opt + 1e-9 * scale
    assert out.dual is not None and out.dual.value == pytest.approx(out.lower_bound)
    # the upper bound is the exact worst-case risk of the returned model (the reference's own evaluation)
    assert inst.reference_risk(out.intercept, out.coef) <= out.upper_bound + 1e-9 * scale


def stationarity_residual(di, rows, mass, slopes, master=None) -> float:
    """``max |g_F - r_F|``, ``g = sum_k m_k alpha_k sigma_k a_k`` on the free columns before any repair and ``r`` the
    LP's reduced costs of ``theta`` (the trust region's multipliers; 0 where it is inactive or absent)."""
    sigma, _ = di.row_signs(rows.sample, rows.flip)
    g = rows.matrix.T @ (mass * slopes * sigma)
    free, _ = column_roles(di)
    r = np.zeros_like(g) if master is None else np.asarray(master.h.getSolution().col_dual)[: g.size]
    return float(np.max(np.abs(g[free] - r[free]), initial=0.0))


@pytest.mark.parametrize("case", CASES[:6], ids=case_id)
def test_dual_point_of_any_master_is_stationary_and_a_lower_bound(case):
    """At the masters of the first rounds (trust region active, few cuts) the fractional rows read off the LP's duals
    sum to p_n per sample, their free-column sums are the LP's reduced costs of ``theta`` (the trust region's
    multipliers) to its tolerance, and their Lagrangian value (repaired) is below the optimum (weak duality at points
    far from it)."""
    inst = make(case)
    opt = inst.reference
    di, oracle = bound(inst)
    rng = np.random.default_rng(5)
    for trial in range(3):
        master = sc.SlopeCutMaster(di)
        theta = np.concatenate([[0.0], 0.7 * rng.standard_normal(di.schema.n_encoded)])
        theta[master.fixed] = 0.0
        lam = 0.5 + rng.uniform()
        master.add_nominal_cuts(theta, lam)
        for _ in range(1 + trial):
            sep = oracle.separate(theta[0], theta[1:], lam, np.zeros(di.n_samples))
            order = np.argsort(sep.rows.sample)
            rows = sep.rows
            sigma, shift = di.row_signs(rows.sample, rows.flip)
            f = theta[0] + np.asarray(di.data.X, float)[rows.sample] @ theta[1: 1 + di.n_numerical] \
                + di.schema.level_scores(rows.Z, theta[1:])
            slopes = np.asarray(di.loss.derivative(sigma * f - shift), dtype=float)
            master.add_cuts(rows.sample[order], rows.flip[order], slopes[order], theta, lam)
            ok, x, lam_x, _, _, _ = master.solve(theta, 0.3)
            assert ok
            theta, lam = x, max(lam_x, 1e-3)
        rows, mass, slopes = master.dual_point()
        assert np.allclose(np.bincount(rows.sample, weights=mass, minlength=di.n_samples), di.p, rtol=1e-8)
        assert stationarity_residual(di, rows, mass, slopes, master) <= 1e-8
        value = lagrangian_bound(di, rows, mass, slopes).value
        assert value <= opt + 1e-9 * max(1.0, abs(opt))


def test_mutated_dual_point_is_not_stationary(monkeypatch):
    """The stationarity check can fail: level distributions read from the wrong direction's multipliers (the M+
    rows' for cuts that lower the score) leave the free columns far from stationary."""
    inst = make(CASES[0])
    di, oracle = bound(inst)
    out = sc.slope_cut_search(di, oracle, cold_start(di), tol=1e-7)
    assert out.certified
    honest = stationarity_residual(di, out.dual.rows, out.dual.mass, out.dual.slopes)
    assert honest <= 1e-10
    master = sc.SlopeCutMaster(di)
    theta = np.concatenate([[out.intercept], out.coef])
    sep = oracle.separate(out.intercept, out.coef, out.lam, np.zeros(di.n_samples))
    rows = sep.rows
    sigma, shift = di.row_signs(rows.sample, rows.flip)
    f = out.intercept + di.schema.level_scores(rows.Z, out.coef)
    slopes = np.asarray(di.loss.derivative(sigma * f - shift), dtype=float)
    master.add_nominal_cuts(theta, out.lam)
    master.add_cuts(rows.sample, rows.flip, slopes, theta, out.lam)
    assert master.solve(theta, 0.3)[0]
    good = stationarity_residual(di, *master.dual_point(), master)
    real = sc.SlopeCutMaster.level_distributions

    def swapped(self, row_dual, col_dual):       # each direction's levels read from the other's rows
        return real(self, row_dual, col_dual)[::-1]
    monkeypatch.setattr(sc.SlopeCutMaster, "level_distributions", swapped)
    bad = stationarity_residual(di, *master.dual_point(), master)
    assert good <= 1e-8 < 1e-3 < bad


def test_wide_data_is_certified_by_slope_cuts_by_default():
    """sun2025's audiology (226 rows, 62 categorical features, unit weights): phase 1 stops unconverged, the barrier
    master does not certify, and the slope-cut LP does, with an explicit dual point (source "lagrangian"); the fit
    equals the conic path's (``slope_cuts=False``: the budget-cut masters, whose bound is Clarabel's)."""
    X, y = dk.datasets.load("audiology", standardize=True)
    fits = {}
    for flag in ("auto", False):
        clf = dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(), radius=0.1),
                               method_options={"slope_cuts": flag})
        fits[flag] = clf.fit(X, y.to_numpy()).result_
    lp, conic = fits["auto"], fits[False]
    assert lp.status == conic.status == "optimal"
    assert lp.solver == "slope_cuts" and lp.auxiliary["slope_cuts"]["certified"]
    assert lp.auxiliary["lower_bound"]["source"] == "lagrangian"
    assert any(a["stage"] == "slope cuts" for a in lp.attempts)
    assert "slope_cuts" not in conic.auxiliary
    assert lp.objective == pytest.approx(conic.objective, rel=2e-6)
    assert lp.lower_bound <= conic.objective + 1e-9
    assert lp.relative_gap <= 1e-6


def test_wide_binary_data_stays_certified():
    """32 binary features with 1-decimal weights (test_slope_split's frame): whichever of drokit's own solvers
    certifies first (here the barrier master from phase 1's point), the fit equals the conic path's."""
    X, y, metric = wide_frame()
    fits = [dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1), method_options=options).fit(X, y).result_
            for options in ({"slope_cuts": True}, {"slope_cuts": False, "structured_master": False})]
    ours, conic = fits
    assert ours.status == conic.status == "optimal"
    assert ours.objective == pytest.approx(conic.objective, rel=2e-6)
    assert ours.lower_bound <= conic.objective + 1e-9


def test_slope_cuts_option_is_checked():
    inst = make(CASES[0])
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius))
    with pytest.raises(dk.ParameterError, match="slope_cuts must be"):
        problem.compile(inst.frame(), inst.y.copy(), "cutting_plane").solve(method_options={"slope_cuts": "yes"})
    p2 = dataclasses.replace(inst, cat_p=2.0)
    problem2 = dk.Problem(loss=p2.loss_object(), ambiguity=dk.Wasserstein(p2.metric(), radius=p2.radius))
    with pytest.raises(dk.ParameterError, match="slope_cuts=True does not apply.*p != 1"):
        problem2.compile(p2.frame(), p2.y.copy(), "cutting_plane").solve(method_options={"slope_cuts": True})
    di, _ = bound(dataclasses.replace(inst, loss="logistic"))
    assert sc.slope_cuts_apply(di)[0]
    num2 = make(CASES[1])
    di2, _ = bound(dataclasses.replace(num2, norm_p=2.0))
    ok, why = sc.slope_cuts_apply(di2)
    assert not ok and "dual norm" in why


def test_first_highs_prints_no_banner():
    """HiGHS prints a banner on standard output at its first construction in a process, before any option can be set;
    the slope cuts' master is built without it (a fresh interpreter: the first construction is ours)."""
    import subprocess
    code = ("import highspy\n"
            "from drokit.solvers.highs import new_highs\n"
            "h = new_highs(highspy)\n"
            "print('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "done\n"
    plain = subprocess.run([sys.executable, "-c", "import highspy; highspy.Highs(); print('done')"],
                           capture_output=True, text=True, timeout=120)
    assert "HiGHS" in plain.stdout        # what the check would catch


def test_slope_cuts_that_do_not_certify_hand_over_to_the_conic_masters(monkeypatch):
    """The fallback path: phase 1 and the barrier master made not to certify, the slope cuts stopped after one LP;
    the conic masters then certify from the slope cuts' point, and the fit equals the reference optimum."""
    import drokit.reformulations.own_solvers as own
    inst = make(CASES[1])                       # logistic, one numerical feature, sample weights
    opt = inst.reference
    real_p1, real_bm, real_sc = own.warm_phase_one, own.structured_master, own.slope_cut_search
    seen = []
    monkeypatch.setattr(own, "warm_phase_one",
                        lambda *a, **k: dataclasses.replace(real_p1(*a, **k), certified=False))
    monkeypatch.setattr(own, "structured_master",
                        lambda *a, **k: dataclasses.replace(real_bm(*a, **k), certified=False))

    def one_round(*args, **kwargs):
        out = real_sc(*args, **{**kwargs, "max_rounds": 1})
        seen.append(out)
        return out
    monkeypatch.setattr(own, "slope_cut_search", one_round)
    problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius))
    res = problem.compile(inst.frame(), inst.y.copy(), "cutting_plane", sample_weight=inst.sample_weight).solve(
        method_options={"slope_cuts": True})
    assert len(seen) == 1 and not seen[0].certified and seen[0].stop == "round limit"
    assert res.status == "optimal" and res.solver not in ("slope_cuts", "barrier_master", "phase_one")
    assert res.auxiliary["slope_cuts"]["certified"] is False
    scale = max(1.0, abs(opt))
    assert res.objective == pytest.approx(opt, abs=1e-6 * scale)
    assert res.lower_bound <= opt + 1e-9 * scale
