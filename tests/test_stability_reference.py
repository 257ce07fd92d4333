"""Independent correctness tests of the OT-with-moment stability criterion (blanchet2024; spec
``blanchet2024-ot-stability.md`` sections 2, 3 and 7.2, corrected forms).

Every expected number comes from ``tests/reference/stability_lp.py`` (written from the mathematics
only: brute-force primal LP on a weight grid, an own 1-D dual, closed forms) or is typed in from the
spec.  The first block checks the references against each other and against the spec's numbers
without touching drokit; the rest compares drokit with them.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.reference import stability_lp as ref

try:  # the API is compared against, never used to build the expected values
    import drokit as dk
    from drokit.evaluation.stability import (FiniteCandidates, FixedLosses, LinearLoss, MinimalFlip,
                                             solve_stability)
    _API_ERROR = None
except ImportError as exc:  # pragma: no cover - reported as a failure by _api()
    _API_ERROR = exc

INF = np.inf
DIVS = ("kl", "chi2")


def _api():
    if _API_ERROR is not None:
        pytest.fail(f"drokit.evaluation.stability is not importable: {_API_ERROR!r}")


# ------------------------------------------------------------------------------------------------
# instances
# ------------------------------------------------------------------------------------------------
# T1/T2: n = 10, two misclassified samples (p = 0.2), the others cannot be flipped.
T1_FLIP = np.array([0.0, 0.0] + [INF] * 8)
T1_LOSSES = (T1_FLIP == 0).astype(float)
T1_VALUE = 0.0261624071882  # spec T1 (theta2 = 0.25, r = 0.4)

# T4: fractional knapsack (spec T4), optimum at a kink -> split atom on the sample with d* = 0.2.
T4_FLIP = np.array([0.0, 0.1, 0.4, 0.05, 0.9, 0.3, 0.2, 0.7, 0.0, 0.6])


def _logistic_1d():
    """Spec T7-like case: 1-D logistic model, 4 points, 41 candidates on a grid (+ the observed point
    in column 0, the nominal column).  Cost |z - x|^2, label fixed."""
    xh = np.array([-1.0, 0.3, 0.8, 1.6])
    y = np.array([1.0, -1.0, 1.0, 1.0])
    beta, b = 1.5, -0.2
    grid = np.linspace(-2.5, 2.5, 41)
    Z = np.column_stack([xh, np.tile(grid, (4, 1))])
    L = np.logaddexp(0.0, -y[:, None] * (beta * Z + b))
    D = (Z - xh[:, None]) ** 2
    return L, D


LOGI_L, LOGI_D = _logistic_1d()
LOGI_M = LOGI_L[:, 0].mean()
LOGI_R = LOGI_M + 0.3

# linear loss l_i = margins_i + t, cost t^2 / S (spec T5/T6)
LIN_MARGINS = np.array([0.1, 0.5, 0.9, 1.3, 0.2, 0.7, 1.1, 0.4])
LIN_S = 2.0
LIN_M = LIN_MARGINS.mean()


def _fixed_losses(seed=3, n=12):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.2, 1.4, size=n)


def _ref_finite(L, D, r, theta1, theta2, div):
    return ref.dual_value(r, ref.finite_dtransform(L, D, theta1), theta2, div)


W_GRID = np.linspace(0.0, 8.0, 801)  # the spec's T7 grid


# ================================================================================================
# A. the references against each other and against the spec (no drokit)
# ================================================================================================
def test_ref_T1_bernoulli_closed_form_dual_and_lp():
    L, D = ref.flip_tables(T1_FLIP)
    cf = ref.bernoulli_kl(0.4, 0.2, 0.25)
    dual, _ = _ref_finite(L, D, 0.4, INF, 0.25, "kl")
    lp = ref.primal_lp(L, D, 0.4, INF, 0.25, "kl", np.linspace(0.0, 10.0, 401))
    assert cf == pytest.approx(T1_VALUE, abs=1e-13)
    assert dual == pytest.approx(T1_VALUE, rel=1e-9)
    # optimal weights 2 and 0.75 lie on the 0.025 grid -> the LP is exact
    assert lp == pytest.approx(T1_VALUE, rel=1e-9)


def test_ref_T2_boundary_and_infeasible():
    L, D = ref.flip_tables(T1_FLIP)
    near, _ = _ref_finite(L, D, 1 - 1e-7, INF, 0.25, "kl")
    assert near == pytest.approx(0.4023590, abs=1e-7)  # spec: dual at r = 1 - 1e-7
    grid = np.linspace(0.0, 10.0, 401)
    assert ref.primal_lp(L, D, 1.0, INF, 0.25, "kl", grid) == pytest.approx(0.25 * np.log(5), rel=1e-9)
    # chi2 boundary: w = n/m on the m maximal samples -> theta2 (n/m - 1)
    assert ref.primal_lp(L, D, 1.0, INF, 0.25, "chi2", grid) == pytest.approx(0.25 * 4, rel=1e-9)
    assert ref.primal_lp(L, D, 1.01, INF, 0.25, "kl", grid) == INF


def test_ref_T3_chi2_closed_form_dual_and_lp():
    l = _fixed_losses()
    r = l.mean() + 0.1
    cf, w = ref.chi2_reweight_closed_form(l, r, 0.25)
    L, D = l[:, None], np.zeros((l.size, 1))
    dual, _ = _ref_finite(L, D, r, INF, 0.25, "chi2")
    lp = ref.primal_lp(L, D, r, INF, 0.25, "chi2", W_GRID)
    assert dual == pytest.approx(cf, rel=1e-9)
    assert cf - 1e-10 <= lp <= cf + ref.grid_gap_bound(w, W_GRID, 0.25, "chi2") + 1e-10


def test_ref_T4_knapsack_dual_and_lp():
    L, D = ref.flip_tables(T4_FLIP)
    assert ref.knapsack_01(T4_FLIP, 0.45, 1.0) == pytest.approx(0.025, abs=1e-15)
    assert _ref_finite(L, D, 0.45, 1.0, INF, "kl")[0] == pytest.approx(0.025, rel=1e-7)
    assert ref.primal_lp(L, D, 0.45, 1.0, INF) == pytest.approx(0.025, rel=1e-9)


@pytest.mark.parametrize("div", DIVS)
def test_ref_T5_T6_linear_loss_inf_convolution_equals_dual(div):
    r = LIN_M + 0.25
    for theta1, theta2 in [(1.0, 0.25), (0.4, 0.4), (3.0, 0.1)]:
        conv = ref.inf_convolution_linear(LIN_MARGINS, LIN_S, r, theta1, theta2, div)
        dual, _ = ref.dual_value(r, ref.linear_dtransform(LIN_MARGINS, LIN_S, theta1), theta2, div)
        assert conv == pytest.approx(dual, rel=1e-8)
    # T5 (theta2 = inf): theta1 (r - m)^2 / S
    dual, _ = ref.dual_value(r, ref.linear_dtransform(LIN_MARGINS, LIN_S, 1.3), INF, div)
    assert dual == pytest.approx(1.3 * 0.25 ** 2 / LIN_S, rel=1e-9)


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("theta1,theta2", [(1.0, 0.25), (INF, 0.25), (1.0, INF)])
def test_ref_T7_lp_converges_to_dual_within_grid_bound(div, theta1, theta2):
    """LP (restriction, upper bound) - dual in [0, theta2 max phi'' dw^2 / 8] (see grid_gap_bound)."""
    dual, h = _ref_finite(LOGI_L, LOGI_D, LOGI_R, theta1, theta2, div)
    w = ref.dual_weights(h, ref.finite_dtransform(LOGI_L, LOGI_D, theta1), theta2, div)
    lp = ref.primal_lp(LOGI_L, LOGI_D, LOGI_R, theta1, theta2, div, W_GRID)
    bound = 0.0 if not np.isfinite(theta2) else ref.grid_gap_bound(w, W_GRID, theta2, div)
    assert np.isfinite(bound) and bound < 1e-5
    assert dual - 1e-9 <= lp <= dual + bound + 1e-9
    # refining the grid cannot make the LP worse (the coarse grid is a subset of the fine one)
    if np.isfinite(theta2):
        coarse = ref.primal_lp(LOGI_L, LOGI_D, LOGI_R, theta1, theta2, div, W_GRID[::4])
        assert coarse >= lp - 1e-10


def test_ref_T10_joint_below_pure_cases_on_logistic_instance():
    joint = _ref_finite(LOGI_L, LOGI_D, LOGI_R, 1.0, 0.25, "kl")[0]
    rew = _ref_finite(LOGI_L, LOGI_D, LOGI_R, INF, 0.25, "kl")[0]
    cor = _ref_finite(LOGI_L, LOGI_D, LOGI_R, 1.0, INF, "kl")[0]
    assert 0 < joint < min(rew, cor)


# ================================================================================================
# B. drokit's solve_stability against the references
# ================================================================================================
def _solve(adv, r, theta1, theta2, div="kl"):
    _api()
    return solve_stability(adv, risk=r, theta1=theta1, theta2=theta2, divergence=div)


def _check_primal(res, *, r, theta1, theta2, div, value, m, n, tol=1e-6, L=None, D=None):
    """Spec T9 from the returned atoms only: masses, E[W] = 1, E[W loss] = r, primal cost = value,
    Delta_I + Delta_II = r - m; (L, D) given: every atom is one of its sample's candidates."""
    at = res.atoms
    for col in ("sample", "mass", "weight", "loss", "cost"):
        assert col in at.columns, f"atoms lacks column {col!r}"
    mass = at["mass"].to_numpy(float)
    w = at["weight"].to_numpy(float)
    loss = at["loss"].to_numpy(float)
    cost = at["cost"].to_numpy(float)
    smp = at["sample"].to_numpy()
    assert np.all(mass >= -1e-12) and np.all(w >= -1e-12)
    assert mass.sum() == pytest.approx(1.0, abs=1e-9)
    per_sample = np.bincount(smp.astype(int), weights=mass, minlength=n)
    np.testing.assert_allclose(per_sample, np.full(n, 1.0 / n), atol=1e-9)
    assert (mass * w).sum() == pytest.approx(1.0, abs=tol)
    assert (mass * w * loss).sum() == pytest.approx(r, abs=tol)
    live = mass > 1e-12
    if np.isfinite(theta1):
        transport = theta1 * np.sum(mass * w * cost)
    else:  # theta1 = inf: nothing with positive weight may move (inf * 0 = 0)
        assert np.all((w * cost)[live] <= 1e-12)
        transport = 0.0
    if np.isfinite(theta2):
        reweight = theta2 * np.sum(mass * ref.phi(w, div))
    else:
        np.testing.assert_allclose(w[live], 1.0, atol=1e-9)
        reweight = 0.0
    assert transport + reweight == pytest.approx(value, rel=tol, abs=tol)
    # excess-risk decomposition (spec 3.4) recomputed from the atoms
    d1 = (mass * loss).sum() - m
    d2 = (mass * (w - 1.0) * loss).sum()
    assert d1 + d2 == pytest.approx(r - m, abs=tol)
    e1, e2 = res.excess_risk
    assert e1 == pytest.approx(d1, abs=tol) and e2 == pytest.approx(d2, abs=tol)
    # reported diagnostics
    assert res.mean_weight == pytest.approx(1.0, abs=tol)
    assert res.attained_risk == pytest.approx(r, abs=tol)
    assert res.primal_cost == pytest.approx(value, rel=tol, abs=tol)
    assert res.dual_value == pytest.approx(value, rel=tol, abs=tol)
    assert abs(res.gap) <= 10 * tol * max(1.0, value)
    weights = np.asarray(res.weights, float)
    assert weights.shape == (n,) and weights.mean() == pytest.approx(1.0, abs=tol)
    if L is not None:
        for s, lo, co in zip(smp[live], loss[live], cost[live]):
            s = int(s)
            ok = np.isclose(L[s], lo, atol=1e-9) & np.isclose(D[s], co, atol=1e-9)
            assert ok.any(), f"atom (loss={lo}, cost={co}) of sample {s} is not a candidate"


# ----- T1 ---------------------------------------------------------------------------------------
def test_T1_bernoulli_kl_minimal_flip_and_fixed_losses():
    res = _solve(MinimalFlip(T1_FLIP), 0.4, INF, 0.25, "kl")
    assert res.status == "finite"
    assert res.value == pytest.approx(T1_VALUE, rel=1e-8)
    # tilted weights: r/p = 2 on the errors, (1-r)/(1-p) = 0.75 elsewhere
    np.testing.assert_allclose(np.asarray(res.weights, float), np.where(T1_FLIP == 0, 2.0, 0.75), atol=1e-6)
    # fixed losses: nothing can move whatever theta1 -> same value for theta1 finite
    for theta1 in (INF, 1.0, 1e-3):
        res2 = _solve(FixedLosses(T1_LOSSES), 0.4, theta1, 0.25, "kl")
        assert res2.value == pytest.approx(T1_VALUE, rel=1e-8)
    assert res.nominal_risk == pytest.approx(0.2)
    assert res.max_risk == pytest.approx(1.0)


@pytest.mark.parametrize("r", [0.25, 0.4, 0.7, 0.95])
def test_T1_bernoulli_kl_closed_form_over_r(r):
    res = _solve(MinimalFlip(T1_FLIP), r, INF, 0.7, "kl")
    assert res.value == pytest.approx(ref.bernoulli_kl(r, 0.2, 0.7), rel=1e-7)


# ----- T2 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("adv", ["flip", "fixed"])
def test_T2_boundary_and_infeasible(adv):
    make = (lambda: MinimalFlip(T1_FLIP)) if adv == "flip" else (lambda: FixedLosses(T1_LOSSES))
    _api()
    near = _solve(make(), 1 - 1e-7, INF, 0.25, "kl")
    assert near.value == pytest.approx(0.4023590, abs=2e-7)  # spec: 0.4023590
    at = _solve(make(), 1.0, INF, 0.25, "kl")
    assert at.value == pytest.approx(0.25 * np.log(5), rel=1e-7)  # theta2 log(n/m)
    # chi2: w = n/m on the m maximal samples, 0 elsewhere -> theta2 (n/m - 1); attained at finite h
    # (the chi2 weights reach 0 exactly), so the status may be finite or boundary
    at2 = _solve(make(), 1.0, INF, 0.25, "chi2")
    assert at2.status in ("boundary", "finite")
    assert at2.value == pytest.approx(0.25 * (10 / 2 - 1), rel=1e-7)
    np.testing.assert_allclose(np.asarray(at2.weights, float), np.where(T1_LOSSES == 1, 5.0, 0.0), atol=1e-7)
    for div in DIVS:
        over = _solve(make(), 1.0 + 1e-3, INF, 0.25, div)
        assert over.status == "infeasible" and over.value == INF


@pytest.mark.parametrize("adv", ["flip", "fixed"])
def test_T2_kl_boundary_status(adv):
    """Spec 2.2: KL at r = r_max (ties m < n) is the boundary case, the dual sup is only approached as
    h -> inf (E_Q_h[W l] < r_max for every finite h), so the status must be "boundary"."""
    make = (lambda: MinimalFlip(T1_FLIP)) if adv == "flip" else (lambda: FixedLosses(T1_LOSSES))
    _api()
    at = _solve(make(), 1.0, INF, 0.25, "kl")
    assert at.status == "boundary", (at.status, at.h)


def test_T2_infeasible_without_reweighting_or_moves():
    l = _fixed_losses()
    res = _solve(FixedLosses(l), l.mean() + 0.05, 1.0, INF, "kl")  # nothing can change at all
    assert res.status == "infeasible" and res.value == INF
    # pure corruption, some samples unflippable: r_max = fraction flippable, attained at r = r_max
    flip = np.array([0.0, 0.3, INF, 0.5, INF])
    res = _solve(MinimalFlip(flip), 0.6, 2.0, INF, "kl")
    assert res.value == pytest.approx(2.0 * (0.3 + 0.5) / 5, rel=1e-7)
    res = _solve(MinimalFlip(flip), 0.61, 2.0, INF, "kl")
    assert res.status == "infeasible" and res.value == INF


# ----- T3 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dr", [0.02, 0.1])
def test_T3_chi2_reweighting_closed_form(dr):
    l = _fixed_losses()
    r = l.mean() + dr
    cf, w = ref.chi2_reweight_closed_form(l, r, 0.25)
    res = _solve(FixedLosses(l), r, INF, 0.25, "chi2")
    assert res.status == "finite"
    assert res.value == pytest.approx(cf, rel=1e-7)
    np.testing.assert_allclose(np.asarray(res.weights, float), w, atol=1e-6)
    # the LP on the spec grid brackets it
    lp = ref.primal_lp(l[:, None], np.zeros((l.size, 1)), r, INF, 0.25, "chi2", W_GRID)
    assert res.value - 1e-8 <= lp <= res.value + ref.grid_gap_bound(w, W_GRID, 0.25, "chi2") + 1e-8


def test_T3_chi2_weights_hit_zero_matches_dual():
    """Beyond the affine regime some w_i = 0: the closed form no longer applies, the dual/LP do."""
    l = _fixed_losses()
    r = l.mean() + 0.35
    with pytest.raises(ValueError):
        ref.chi2_reweight_closed_form(l, r, 0.25)
    L, D = l[:, None], np.zeros((l.size, 1))
    expected, _ = _ref_finite(L, D, r, INF, 0.25, "chi2")
    res = _solve(FixedLosses(l), r, INF, 0.25, "chi2")
    assert res.value == pytest.approx(expected, rel=1e-7)
    assert np.min(res.weights) == pytest.approx(0.0, abs=1e-9)


# ----- T4 ---------------------------------------------------------------------------------------
def test_T4_knapsack_pure_corruption_split_atom():
    res = _solve(MinimalFlip(T4_FLIP), 0.45, 1.0, INF, "kl")
    assert res.status == "finite"
    assert res.value == pytest.approx(0.025, rel=1e-7)
    at = res.atoms[res.atoms["mass"] > 1e-12]
    # the sample with d* = 0.2 (index 6) is split half stay / half flip
    six = at[at["sample"] == 6].sort_values("loss")
    assert len(six) == 2, f"sample 6 should be split into two atoms, got\n{six}"
    np.testing.assert_allclose(six["mass"].to_numpy(float), [0.05, 0.05], atol=1e-6)
    np.testing.assert_allclose(six["loss"].to_numpy(float), [0.0, 1.0], atol=1e-12)
    L, D = ref.flip_tables(T4_FLIP)
    _check_primal(res, r=0.45, theta1=1.0, theta2=INF, div="kl", value=0.025, m=0.2, n=10, L=L, D=D)


@pytest.mark.parametrize("r", [0.2, 0.3, 0.35, 0.6, 0.85])
def test_T4_knapsack_over_r_and_finite_candidates(r):
    expected = ref.knapsack_01(T4_FLIP, r, 1.7)
    res = _solve(MinimalFlip(T4_FLIP), r, 1.7, INF, "chi2")
    assert res.value == pytest.approx(expected, rel=1e-7, abs=1e-12)
    L, D = ref.flip_tables(T4_FLIP)
    L, D = L[:, ::-1], D[:, ::-1]  # nominal column last
    res2 = solve_stability(FiniteCandidates(L, D, nominal=1), risk=r, theta1=1.7, theta2=INF, divergence="kl")
    assert res2.value == pytest.approx(expected, rel=1e-7, abs=1e-12)


# ----- T5 / T6 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("div", DIVS)
def test_T5_linear_loss_pure_corruption(div):
    r = LIN_M + 0.3
    res = _solve(LinearLoss(LIN_MARGINS, LIN_S), r, 1.3, INF, div)
    assert res.value == pytest.approx(1.3 * 0.3 ** 2 / LIN_S, rel=1e-8)
    # every sample shifted by t = r - m: loss margins + 0.3, cost t^2 / S
    at = res.atoms.sort_values("sample")
    np.testing.assert_allclose(at["loss"].to_numpy(float), LIN_MARGINS + 0.3, atol=1e-6)
    np.testing.assert_allclose(at["cost"].to_numpy(float), 0.3 ** 2 / LIN_S, atol=1e-6)
    assert res.max_risk == INF
    _check_primal(res, r=r, theta1=1.3, theta2=INF, div=div, value=1.3 * 0.09 / LIN_S, m=LIN_M, n=LIN_MARGINS.size)


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("theta1,theta2", [(1.0, 0.25), (0.4, 0.4), (3.0, 0.1)])
def test_T6_joint_linear_loss_inf_convolution(div, theta1, theta2):
    r = LIN_M + 0.25
    expected = ref.inf_convolution_linear(LIN_MARGINS, LIN_S, r, theta1, theta2, div)
    res = _solve(LinearLoss(LIN_MARGINS, LIN_S), r, theta1, theta2, div)
    assert res.status == "finite"
    assert res.value == pytest.approx(expected, rel=1e-7)
    _check_primal(res, r=r, theta1=theta1, theta2=theta2, div=div, value=expected, m=LIN_M, n=LIN_MARGINS.size)


def test_T6_linear_loss_intercept_shifts_risk():
    """loss = margins + intercept + t: R(r) with intercept b equals R(r - b) without."""
    r = LIN_M + 0.25
    base = _solve(LinearLoss(LIN_MARGINS, LIN_S), r, 1.0, 0.25, "kl").value
    shifted = _solve(LinearLoss(LIN_MARGINS, LIN_S, intercept=0.8), r + 0.8, 1.0, 0.25, "kl").value
    assert shifted == pytest.approx(base, rel=1e-8)


# ----- T7 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("theta1,theta2", [(1.0, 0.25), (INF, 0.25), (1.0, INF), (0.3, 2.0)])
def test_T7_finite_candidates_match_dual_and_lp(div, theta1, theta2):
    dual, h = _ref_finite(LOGI_L, LOGI_D, LOGI_R, theta1, theta2, div)
    res = _solve(FiniteCandidates(LOGI_L, LOGI_D, nominal=0), LOGI_R, theta1, theta2, div)
    assert res.status == "finite"
    assert res.value == pytest.approx(dual, rel=1e-7)
    assert res.nominal_risk == pytest.approx(LOGI_M, rel=1e-12)
    if (theta1, theta2) in [(1.0, 0.25), (INF, 0.25)]:  # the spec's grid LP (slow case only twice)
        w = ref.dual_weights(h, ref.finite_dtransform(LOGI_L, LOGI_D, theta1), theta2, div)
        lp = ref.primal_lp(LOGI_L, LOGI_D, LOGI_R, theta1, theta2, div, W_GRID)
        assert res.value - 1e-8 <= lp <= res.value + ref.grid_gap_bound(w, W_GRID, theta2, div) + 1e-8
    _check_primal(res, r=LOGI_R, theta1=theta1, theta2=theta2, div=div, value=dual, m=LOGI_M, n=4,
                  L=LOGI_L, D=LOGI_D)


def test_T7_forbidden_candidates_and_nominal_column():
    """np.inf costs forbid a candidate; the nominal column may be any index."""
    D = LOGI_D.copy()
    D[:, 1:21] = INF  # forbid the left half of the grid
    expected, _ = _ref_finite(LOGI_L, D, LOGI_R, 1.0, 0.25, "kl")
    full, _ = _ref_finite(LOGI_L, LOGI_D, LOGI_R, 1.0, 0.25, "kl")
    assert expected > full + 1e-6  # the restriction matters on this instance
    perm = np.r_[1:LOGI_L.shape[1], 0]  # nominal moved to the last column
    res = _solve(FiniteCandidates(LOGI_L[:, perm], D[:, perm], nominal=LOGI_L.shape[1] - 1), LOGI_R, 1.0, 0.25)
    assert res.value == pytest.approx(expected, rel=1e-7)


# ----- T9 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("theta1,theta2", [(1.0, 0.25), (INF, 0.25), (0.5, INF)])
def test_T9_primal_recovery_zero_one_at_kinks(div, theta1, theta2):
    """0/1 loss: the dual is piecewise, so h* sits at a kink for many r; recovery needs split atoms."""
    L, D = ref.flip_tables(T4_FLIP)
    _api()
    for r in (0.3, 0.45, 0.55):
        expected, _ = _ref_finite(L, D, r, theta1, theta2, div)
        res = _solve(MinimalFlip(T4_FLIP), r, theta1, theta2, div)
        assert res.value == pytest.approx(expected, rel=1e-6, abs=1e-10)
        _check_primal(res, r=r, theta1=theta1, theta2=theta2, div=div, value=expected, m=0.2, n=10, L=L, D=D)


# ----- T10 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("div", DIVS)
def test_T10_zero_below_mean_loss(div):
    _api()
    for r in (LOGI_M - 0.2, LOGI_M):
        res = _solve(FiniteCandidates(LOGI_L, LOGI_D, nominal=0), r, 1.0, 0.25, div)
        assert res.status == "zero" and res.value == 0.0
        assert res.attained_risk >= r - 1e-12
        np.testing.assert_allclose(np.asarray(res.weights, float), 1.0)


@pytest.mark.parametrize("div", DIVS)
def test_T10_nondecreasing_and_convex_in_r(div):
    rs = LOGI_M + np.linspace(0.0, 0.9, 13)
    _api()
    vals = np.array([_solve(FiniteCandidates(LOGI_L, LOGI_D), r, 1.0, 0.25, div).value for r in rs])
    expected = np.array([_ref_finite(LOGI_L, LOGI_D, r, 1.0, 0.25, div)[0] for r in rs])
    np.testing.assert_allclose(vals, expected, rtol=1e-6, atol=1e-10)
    assert np.all(np.diff(vals) >= -1e-10) and vals[-1] > vals[1] > 0
    assert np.all(np.diff(vals, 2) >= -1e-8)


@pytest.mark.parametrize("div", DIVS)
def test_T10_monotone_in_thetas_joint_below_pure_homogeneous(div):
    _api()
    adv = lambda: FiniteCandidates(LOGI_L, LOGI_D, nominal=0)
    R = lambda t1, t2: _solve(adv(), LOGI_R, t1, t2, div).value
    t1s = [0.1, 0.3, 1.0, 3.0, 10.0, INF]
    v1 = [R(t, 0.25) for t in t1s]
    assert np.all(np.diff(v1) >= -1e-10), v1
    t2s = [0.05, 0.25, 1.0, 4.0, INF]
    v2 = [R(1.0, t) for t in t2s]
    assert np.all(np.diff(v2) >= -1e-10), v2
    joint = R(1.0, 0.25)
    assert joint <= min(R(INF, 0.25), R(1.0, INF)) + 1e-12
    assert joint < min(R(INF, 0.25), R(1.0, INF)) - 1e-4  # strictly on this instance
    for c in (0.2, 3.0):
        assert R(c * 1.0, c * 0.25) == pytest.approx(c * joint, rel=1e-7)
        assert R(INF, c * 0.25) == pytest.approx(c * R(INF, 0.25), rel=1e-7)


@pytest.mark.parametrize("div", DIVS)
@pytest.mark.parametrize("theta1,theta2", [(1.0, 0.25), (INF, 0.25), (1.0, INF)])
def test_T10_affine_loss_invariance(div, theta1, theta2):
    s, b = 2.5, -0.7
    base = _solve(FiniteCandidates(LOGI_L, LOGI_D), LOGI_R, theta1, theta2, div).value
    moved = _solve(FiniteCandidates(s * LOGI_L + b, LOGI_D), s * LOGI_R + b, theta1, theta2, div).value
    assert moved == pytest.approx(base, rel=1e-7)
    fl = _fixed_losses()
    r = fl.mean() + 0.1
    if not np.isfinite(theta2):
        return
    base = _solve(FixedLosses(fl), r, theta1, theta2, div).value
    moved = _solve(FixedLosses(s * fl + b), s * r + b, theta1, theta2, div).value
    assert moved == pytest.approx(base, rel=1e-7)


# ----- T11 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("div", DIVS)
def test_T11_theta1_to_inf_tends_to_reweighting_only(div):
    r = LIN_M + 0.25
    limit = _solve(LinearLoss(LIN_MARGINS, LIN_S), r, INF, 0.25, div).value
    expected = ref.dual_value(r, ref.linear_dtransform(LIN_MARGINS, LIN_S, INF), 0.25, div)[0]
    assert limit == pytest.approx(expected, rel=1e-7)
    vals = [_solve(LinearLoss(LIN_MARGINS, LIN_S), r, t, 0.25, div).value for t in (1.0, 10.0, 100.0, 1e4)]
    assert np.all(np.diff(vals) > 0) and vals[-1] < limit
    assert abs(vals[-1] - limit) < 1e-2 * limit and abs(vals[-1] - limit) < abs(vals[0] - limit) / 50


@pytest.mark.parametrize("div", DIVS)
def test_T11_theta2_to_inf_tends_to_corruption_only(div):
    r = LIN_M + 0.25
    limit = _solve(LinearLoss(LIN_MARGINS, LIN_S), r, 1.0, INF, div).value
    assert limit == pytest.approx(1.0 * 0.25 ** 2 / LIN_S, rel=1e-8)
    vals = [_solve(LinearLoss(LIN_MARGINS, LIN_S), r, 1.0, t, div).value for t in (0.25, 2.5, 25.0, 2.5e4)]
    assert np.all(np.diff(vals) > 0) and vals[-1] <= limit + 1e-12
    assert abs(vals[-1] - limit) < 1e-3 * limit
    # finite candidates, KL: theta2 log E exp(L/theta2) -> E L
    big = _solve(FiniteCandidates(LOGI_L, LOGI_D), LOGI_R, 1.0, 1e5, div).value
    pure = _solve(FiniteCandidates(LOGI_L, LOGI_D), LOGI_R, 1.0, INF, div).value
    assert big == pytest.approx(pure, rel=1e-3) and big <= pure + 1e-12


def test_T11_chi2_over_kl_ratio_tends_to_two():
    l = _fixed_losses()
    m, var = l.mean(), l.var()
    ratios = []
    for dr in (1e-2, 1e-3, 1e-4):
        kl = _solve(FixedLosses(l), m + dr, INF, 0.25, "kl").value
        chi = _solve(FixedLosses(l), m + dr, INF, 0.25, "chi2").value
        assert kl == pytest.approx(0.25 * dr ** 2 / (2 * var), rel=20 * dr)  # local formula (spec 2.5)
        ratios.append(chi / kl)
    assert abs(ratios[-1] - 2.0) < 1e-3
    assert abs(ratios[-1] - 2.0) < abs(ratios[0] - 2.0)


# ----- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    ({"theta1": -1.0}, "theta1"),
    ({"theta2": -0.25}, "theta2"),
    ({"theta1": np.nan}, "theta1"),
    ({"theta1": INF, "theta2": INF}, "theta"),
    ({"risk": np.nan}, "risk"),
    ({"risk": INF}, "risk"),
    ({"risk": -INF}, "risk"),
    ({"divergence": "tv"}, "divergence"),
])
def test_errors_bad_parameters(kwargs, match):
    _api()
    args = dict(risk=0.4, theta1=1.0, theta2=0.25, divergence="kl")
    args.update(kwargs)
    with pytest.raises(dk.ParameterError, match=match):
        solve_stability(MinimalFlip(T4_FLIP), **args)


def test_errors_bad_adversary_data():
    _api()
    with pytest.raises((dk.DataError, dk.ParameterError), match="cost|loss"):
        FiniteCandidates(np.zeros((3, 4)), np.zeros((3, 5)))
    with pytest.raises((dk.DataError, dk.ParameterError), match="cost|loss"):
        FiniteCandidates(np.zeros((3, 4)), -np.ones((3, 4)))
    with pytest.raises((dk.DataError, dk.ParameterError), match="loss"):
        FixedLosses(np.array([0.1, np.nan]))
    with pytest.raises((dk.DataError, dk.ParameterError), match="flip_cost"):
        MinimalFlip(np.array([0.1, -0.2]))
    with pytest.raises((dk.DataError, dk.ParameterError), match="margins|slope"):
        LinearLoss(np.array([[0.1, 0.2]]), 1.0)
    with pytest.raises((dk.DataError, dk.ParameterError), match="slope_sq_norm"):
        LinearLoss(np.array([0.1, 0.2]), -1.0)


# ================================================================================================
# C. high level: dk.OTMoment, dk.stability, dk.feature_stability, dk.stability_curve
# ================================================================================================
def _toy_classification(n=30, seed=0):
    """Paper §5.1-like 2-D toy (plus a third, weak feature), labels 0/1."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    X0 = rng.normal(size=(n // 2, 3)) + np.array([1.0, 1.0, 0.0])
    X1 = rng.normal(size=(n - n // 2, 3)) + np.array([-0.5, -0.5, 0.0])
    X = pd.DataFrame(np.vstack([X0, X1]), columns=["a", "b", "c"])
    y = np.r_[np.zeros(n // 2), np.ones(n - n // 2)].astype(int)
    return X, y


def _margins(model, X, y):
    coef = np.asarray(model.coef_, float).ravel()
    f = np.asarray(X, float) @ coef + float(np.ravel(model.intercept_)[0])
    ys = np.where(np.asarray(y) == model.classes_[1], 1.0, -1.0)
    return ys * f, coef


def test_budget_split():
    _api()
    cases = [(0.5, 0.4, 0.4), (0.2, 1.0, 0.25), (0.0, INF, 0.2), (1.0, 0.2, INF)]
    for share, t1, t2 in cases:
        amb = dk.OTMoment.from_budget_split(C=5.0, corruption_share=share)
        assert float(amb.theta1) == pytest.approx(t1) and float(amb.theta2) == pytest.approx(t2)
        if np.isfinite(t1) and np.isfinite(t2):
            assert 1 / float(amb.theta1) + 1 / float(amb.theta2) == pytest.approx(5.0)


HL_CASES = [("kl", 1.0, 0.25), ("chi2", 1.0, 0.25), ("kl", INF, 0.25), ("chi2", 0.4, INF), ("kl", 0.4, 0.4)]


@pytest.mark.parametrize("div,theta1,theta2", HL_CASES)
def test_stability_logistic_regression_log_loss(div, theta1, theta2):
    from sklearn.linear_model import LogisticRegression

    _api()
    X, y = _toy_classification()
    model = LogisticRegression(C=1.0).fit(X, y)
    mg, coef = _margins(model, X, y)
    m = np.logaddexp(0.0, -mg).mean()
    r = m + 0.2
    expected, _ = ref.dual_value(r, ref.margin_loss_dtransform("logistic", mg, coef @ coef, theta1), theta2, div)
    amb = dk.OTMoment(theta1=theta1, theta2=theta2, divergence=div)
    res = dk.stability(model, X, y, risk=r, ambiguity=amb)
    assert res.nominal_risk == pytest.approx(m, rel=1e-10)
    assert res.value == pytest.approx(expected, rel=1e-6)
    assert res.attained_risk == pytest.approx(r, abs=1e-7)
    assert res.primal_cost == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("div,theta1,theta2", HL_CASES)
def test_stability_linear_svc_hinge(div, theta1, theta2):
    from sklearn.svm import LinearSVC

    _api()
    X, y = _toy_classification(seed=1)
    model = LinearSVC(C=1.0).fit(X, y)
    mg, coef = _margins(model, X, y)
    m = np.maximum(0.0, 1.0 - mg).mean()
    r = m + 0.3
    expected, _ = ref.dual_value(r, ref.margin_loss_dtransform("hinge", mg, coef @ coef, theta1), theta2, div)
    res = dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(theta1=theta1, theta2=theta2, divergence=div))
    assert res.value == pytest.approx(expected, rel=1e-6)
    assert res.attained_risk == pytest.approx(r, abs=1e-7)


@pytest.mark.parametrize("div,theta1,theta2", [("kl", 1.0, 0.25), ("chi2", 1.0, 0.25), ("kl", INF, 0.2),
                                               ("kl", 0.2, INF)])
def test_stability_zero_one_paper_setting(div, theta1, theta2):
    """0/1 loss (error rate), spec §3.2: d*_i = (margin_i)_+^2 / ||w||^2 (boundary counts as an error)."""
    from sklearn.linear_model import LogisticRegression

    _api()
    X, y = _toy_classification(n=40, seed=2)
    model = LogisticRegression(C=1.0).fit(X, y)
    mg, coef = _margins(model, X, y)
    flip = np.maximum(mg, 0.0) ** 2 / (coef @ coef)
    p = np.mean(mg <= 0)
    r = 0.4  # the paper's Section 4.2 threshold
    L, D = ref.flip_tables(flip)
    expected, _ = _ref_finite(L, D, r, theta1, theta2, div)
    if not np.isfinite(theta1):
        expected_cf = ref.bernoulli_kl(r, p, theta2)
        assert expected == pytest.approx(expected_cf, rel=1e-8)
    if not np.isfinite(theta2):
        assert expected == pytest.approx(ref.knapsack_01(flip, r, theta1), rel=1e-7)
    res = dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(theta1=theta1, theta2=theta2, divergence=div),
                       loss="zero_one")
    assert res.nominal_risk == pytest.approx(p, abs=1e-12)
    assert res.value == pytest.approx(expected, rel=1e-6)
    assert res.attained_risk == pytest.approx(r, abs=1e-7)


@pytest.mark.parametrize("div,theta1,theta2", [("kl", 1.0, 0.25), ("chi2", 2.0, 0.5), ("kl", 3.0, INF)])
def test_stability_linear_regression_squared(div, theta1, theta2):
    from sklearn.linear_model import LinearRegression

    _api()
    rng = np.random.default_rng(5)
    X = rng.normal(size=(25, 2))
    y = X @ np.array([0.8, -0.4]) + 0.3 + 0.5 * rng.normal(size=25)
    model = LinearRegression().fit(X, y)
    e = X @ model.coef_ + model.intercept_ - y
    S = float(model.coef_ @ model.coef_)
    r = np.mean(e ** 2) + 0.1
    expected, _ = ref.dual_value(r, ref.squared_dtransform(e, S, theta1), theta2, div, h_upper=theta1 / S)
    res = dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(theta1=theta1, theta2=theta2, divergence=div))
    assert res.nominal_risk == pytest.approx(np.mean(e ** 2), rel=1e-10)
    assert res.value == pytest.approx(expected, rel=1e-6)
    if not np.isfinite(theta2):
        # pure corruption, squared loss: every residual scaled by (1 + s) with s = h S / (theta1 - h S)
        # -> R = theta1 mean(s^2 e^2) / S with (1 + s)^2 mean e^2 = r
        s = np.sqrt(r / np.mean(e ** 2)) - 1.0
        assert res.value == pytest.approx(theta1 * s ** 2 * np.mean(e ** 2) / S, rel=1e-6)


@pytest.mark.parametrize("div", DIVS)
def test_feature_stability_per_feature_reference_and_above_full(div):
    from sklearn.linear_model import LogisticRegression

    _api()
    X, y = _toy_classification()
    model = LogisticRegression(C=1.0).fit(X, y)
    mg, coef = _margins(model, X, y)
    r = np.logaddexp(0.0, -mg).mean() + 0.2
    amb = dk.OTMoment(theta1=1.0, theta2=0.25, divergence=div)
    fs = dk.feature_stability(model, X, y, risk=r, ambiguity=amb)
    table = fs.table
    assert list(table["feature"]) == sorted(["a", "b", "c"], key=lambda f: float(
        table.set_index("feature").loc[f, "value"]))
    assert np.all(np.diff(table["value"].to_numpy(float)) >= 0)
    full, _ = ref.dual_value(r, ref.margin_loss_dtransform("logistic", mg, coef @ coef, 1.0), 0.25, div)
    for j, name in enumerate(["a", "b", "c"]):
        # only feature j moves: the dual norm of the cost is coef_j^2
        exp_j, _ = ref.dual_value(r, ref.margin_loss_dtransform("logistic", mg, coef[j] ** 2, 1.0), 0.25, div)
        got = float(table.set_index("feature").loc[name, "value"])
        assert got == pytest.approx(exp_j, rel=1e-6), name
        assert got >= full - 1e-10
    assert fs.full.value == pytest.approx(full, rel=1e-6)
    # the full-feature criterion through dk.stability agrees
    assert dk.stability(model, X, y, risk=r, ambiguity=amb).value == pytest.approx(full, rel=1e-6)


def test_feature_weights_in_the_metric():
    """d = sum_j gamma_j^2 (x_j - x'_j)^2 (||Gamma dx||_2^2): the dual norm is sum_j coef_j^2 / gamma_j^2."""
    from sklearn.linear_model import LogisticRegression

    _api()
    X, y = _toy_classification()
    model = LogisticRegression(C=1.0).fit(X, y)
    mg, coef = _margins(model, X, y)
    r = np.logaddexp(0.0, -mg).mean() + 0.2
    gamma = np.array([2.0, 0.5, 1.0])
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=gamma))
    amb = dk.OTMoment(metric=metric, theta1=1.0, theta2=0.25, divergence="kl")
    S = float(np.sum(coef ** 2 / gamma ** 2))
    expected, _ = ref.dual_value(r, ref.margin_loss_dtransform("logistic", mg, S, 1.0), 0.25, "kl")
    assert dk.stability(model, X, y, risk=r, ambiguity=amb).value == pytest.approx(expected, rel=1e-6)
    # an immutable feature (gamma = inf) drops out of the dual norm
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=[np.inf, 1.0, 1.0]))
    amb = dk.OTMoment(metric=metric, theta1=1.0, theta2=0.25, divergence="kl")
    S = float(coef[1] ** 2 + coef[2] ** 2)
    expected, _ = ref.dual_value(r, ref.margin_loss_dtransform("logistic", mg, S, 1.0), 0.25, "kl")
    assert dk.stability(model, X, y, risk=r, ambiguity=amb).value == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("div", DIVS)
def test_stability_curve_matches_reference_convex(div):
    from sklearn.svm import LinearSVC

    _api()
    X, y = _toy_classification(seed=1)
    model = LinearSVC(C=1.0).fit(X, y)
    mg, coef = _margins(model, X, y)
    m = np.maximum(0.0, 1.0 - mg).mean()
    risks = m + np.array([0.5, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4])  # unsorted on purpose
    amb = dk.OTMoment.from_budget_split(C=5.0, corruption_share=0.5, divergence=div)
    curve = dk.stability_curve(model, X, y, risks=risks, ambiguity=amb)
    dt = ref.margin_loss_dtransform("hinge", mg, coef @ coef, 0.4)
    expected = np.array([ref.dual_value(r, dt, 0.4, div)[0] for r in risks])
    np.testing.assert_allclose(np.asarray(curve.values, float), expected, rtol=1e-6, atol=1e-12)
    order = np.argsort(risks)
    v = np.asarray(curve.values, float)[order]
    assert v[0] == 0.0 and v[1] == 0.0
    assert np.all(np.diff(v) >= -1e-12) and np.all(np.diff(v[1:], 2) >= -1e-9)


def test_high_level_errors():
    from sklearn.linear_model import LogisticRegression

    _api()
    X, y = _toy_classification()
    model = LogisticRegression().fit(X, y)
    r = 1.0
    with pytest.raises(dk.ParameterError, match="theta1"):
        dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(theta1=-1.0, theta2=0.25))
    with pytest.raises(dk.ParameterError, match="theta2"):
        dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(theta1=1.0, theta2=-0.25))
    with pytest.raises(dk.ParameterError, match="theta"):
        dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(theta1=INF, theta2=INF))
    with pytest.raises(dk.ParameterError, match="divergence"):
        dk.stability(model, X, y, risk=r, ambiguity=dk.OTMoment(divergence="hellinger"))
    with pytest.raises(dk.ParameterError, match="risk"):
        dk.stability(model, X, y, risk=np.nan, ambiguity=dk.OTMoment())
    with pytest.raises(dk.ParameterError, match="risk"):
        dk.stability_curve(model, X, y, risks=[0.5, np.inf], ambiguity=dk.OTMoment())
    with pytest.raises(dk.DataError):
        dk.stability(model, X, y[:-1], risk=r, ambiguity=dk.OTMoment())
    with pytest.raises(dk.ParameterError, match="ambiguity"):
        dk.stability(model, X, y, risk=r, ambiguity=dk.Wasserstein(dk.GroundMetric(), radius=0.1))
    with pytest.raises(dk.ParameterError, match="share"):
        dk.OTMoment.from_budget_split(C=5.0, corruption_share=1.5)


@pytest.mark.parametrize("div,theta1,theta2", [("kl", 1.0, 0.25), ("chi2", 0.4, 0.4)])
def test_stability_dro_classifier_and_moved_points(div, theta1, theta2):
    """A drokit DROClassifier (its own logistic loss); the atoms' moved points must reproduce the atoms'
    loss (recomputed from the features) and cost (||x* - x_hat||^2, label unchanged)."""
    import pandas as pd

    _api()
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 3)), columns=list("abc"))
    y = (X["a"] + 0.5 * rng.normal(size=30) > 0).astype(int).to_numpy()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2))
    clf = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=0.05)).fit(X, y)
    mg, coef = _margins(clf, X, y)
    r = np.logaddexp(0.0, -mg).mean() + 0.25
    expected, _ = ref.dual_value(r, ref.margin_loss_dtransform("logistic", mg, coef @ coef, theta1), theta2, div)
    res = dk.stability(clf, X, y, risk=r, ambiguity=dk.OTMoment(theta1=theta1, theta2=theta2, divergence=div))
    assert res.value == pytest.approx(expected, rel=1e-6)
    at = res.atoms
    assert set("abc") <= set(at.columns), f"atoms lack the moved features: {list(at.columns)}"
    smp = at["sample"].to_numpy(int)
    Xn = X.to_numpy(float)
    xs = at[list("abc")].to_numpy(float)
    np.testing.assert_allclose(at["cost"].to_numpy(float), np.sum((xs - Xn[smp]) ** 2, axis=1), atol=1e-7)
    f = xs @ coef + float(np.ravel(clf.intercept_)[0])
    ys = np.where(y[smp] == clf.classes_[1], 1.0, -1.0)
    np.testing.assert_allclose(at["loss"].to_numpy(float), np.logaddexp(0.0, -ys * f), atol=1e-7)
    if "y" in at.columns:
        np.testing.assert_array_equal(at["y"].to_numpy(), y[smp])
    _check_primal(res, r=r, theta1=theta1, theta2=theta2, div=div, value=expected,
                  m=np.logaddexp(0.0, -mg).mean(), n=30)
