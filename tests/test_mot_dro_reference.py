"""The MOT-DRO derivation (``spec/mot-dro-training.md``) checked by its independent reference
(``tests/reference/mot_dro.py``): the finite-support primal equals the dual (D) for both divergences, the limits
(weights fixed = Wasserstein; no moves = phi-divergence DRO and its KL closed form; radius 0 = ERM), the
monotonicity and the invariances, with the note's verified numbers.  These are the expected values the MOT-DRO
training of issue 23 must reproduce."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

pytest.importorskip("cvxpy")

from reference.mot_dro import categorical_instance, worst_case_dual, worst_case_primal  # noqa: E402

L, C = categorical_instance()
P = np.full(L.shape[0], 1.0 / L.shape[0])

#: (divergence, rho, theta1, theta2, value) of the note's table (§4)
VERIFIED = [("kl", 0.3, 1.0, 1.0, 2.65718799), ("kl", 0.3, 0.5, 2.0, 3.00607340), ("kl", 0.05, 1.0, 0.25, 2.43304829),
            ("kl", 0.3, np.inf, 1.0, 2.51130738), ("chi2", 0.3, 1.0, 1.0, 2.59841383),
            ("chi2", 0.3, 0.5, 2.0, 2.99110904), ("chi2", 0.05, 1.0, 0.25, 2.32566745),
            ("chi2", 0.3, np.inf, 1.0, 2.38359047)]


@pytest.mark.parametrize("divergence, rho, theta1, theta2, value", VERIFIED)
def test_primal_equals_dual_at_the_notes_values(divergence, rho, theta1, theta2, value):
    primal = worst_case_primal(L, C, P, rho, theta1, theta2, divergence)
    dual = worst_case_dual(L, C, P, rho, theta1, theta2, divergence)
    assert primal == pytest.approx(value, abs=2e-7)
    assert dual == pytest.approx(primal, abs=2e-7)


def _wasserstein(rho: float, theta1: float) -> float:
    """Wasserstein DRO with cost ``theta1 d``, written directly: ``min_lambda lambda rho + mean_i max_k (L - lambda theta1 c)``."""
    def value(lam):
        return lam * rho + P @ (L - lam * theta1 * C).max(axis=1)
    grid = np.linspace(0.0, 5.0, 50001)      # piecewise linear and convex in lambda: the grid's best is exact at a kink
    best = grid[np.argmin([value(g) for g in grid])]
    return float(min(value(g) for g in np.linspace(max(0.0, best - 1e-3), best + 1e-3, 20001)))


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_weights_fixed_is_the_wasserstein_model(divergence):
    """Limit 1 (note §4): theta2 = inf is the Wasserstein model with cost theta1 d; a large theta2 approaches it."""
    wasserstein = _wasserstein(0.3, 1.0)
    assert worst_case_primal(L, C, P, 0.3, 1.0, np.inf, divergence) == pytest.approx(wasserstein, abs=1e-6)
    assert worst_case_dual(L, C, P, 0.3, 1.0, np.inf, divergence) == pytest.approx(wasserstein, abs=1e-6)
    near = worst_case_dual(L, C, P, 0.3, 1.0, 1e3, divergence)
    assert wasserstein - 1e-6 <= near <= wasserstein + 1e-2


def test_no_moves_is_kl_dro_and_its_closed_form():
    """Limit 2: theta1 = inf, KL: min_h h rho / theta2 + h log mean exp(l_i / h) over the nominal losses."""
    nominal = np.array([L[i][C[i] == 0].max() for i in range(L.shape[0])])
    theta2, rho = 1.0, 0.3
    closed = minimize_scalar(lambda h: h * rho / theta2 + h * np.log(P @ np.exp(nominal / h)),
                             bounds=(1e-3, 1e3), method="bounded", options={"xatol": 1e-10}).fun
    assert worst_case_dual(L, C, P, rho, np.inf, theta2, "kl") == pytest.approx(closed, abs=1e-6)
    assert nominal @ P < closed < nominal.max()


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_radius_zero_is_erm_and_the_risk_grows_with_the_radius(divergence):
    nominal = float(P @ np.array([L[i][C[i] == 0].max() for i in range(L.shape[0])]))
    # the primal, and a radius of 1e-8 for 0: at rho = 0 the dual's optimum runs off to lambda = inf and the primal's
    # feasible set is a single point (no Slater point; Clarabel ends "inaccurate" on both); the risk grows like
    # sqrt(rho) near 0 (the divergence is quadratic at w = 1)
    values = [worst_case_primal(L, C, P, rho, 1.0, 1.0, divergence) for rho in (1e-8, 0.05, 0.3, 1.0)]
    assert values[0] == pytest.approx(nominal, abs=1e-3)
    assert all(b >= a - 1e-7 for a, b in zip(values, values[1:])) and values[-1] > values[0] + 0.1


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_the_joint_set_holds_both_pure_perturbations(divergence):
    """R(theta1, theta2) >= max(R(theta1, inf), R(inf, theta2)), and R is nonincreasing in each theta."""
    joint = worst_case_dual(L, C, P, 0.3, 1.0, 1.0, divergence)
    moves = worst_case_dual(L, C, P, 0.3, 1.0, np.inf, divergence)
    weights = worst_case_dual(L, C, P, 0.3, np.inf, 1.0, divergence)
    assert joint >= max(moves, weights) - 1e-7 and joint > max(moves, weights) + 1e-3
    assert worst_case_dual(L, C, P, 0.3, 2.0, 1.0, divergence) <= joint + 1e-7
    assert worst_case_dual(L, C, P, 0.3, 1.0, 2.0, divergence) <= joint + 1e-7


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_shift_and_homogeneity(divergence):
    """l -> l + b moves R by b (E[W] = 1); (theta1, theta2, rho) -> s (theta1, theta2, rho) leaves R unchanged."""
    base = worst_case_primal(L, C, P, 0.3, 1.0, 1.0, divergence)
    assert worst_case_primal(L + 0.5, C, P, 0.3, 1.0, 1.0, divergence) == pytest.approx(base + 0.5, abs=1e-6)
    assert worst_case_primal(L, C, P, 0.6, 2.0, 2.0, divergence) == pytest.approx(base, abs=1e-6)
