"""Inter-ARO*: the static program for the intersection of two Wasserstein balls (selvi2025 Thm 11, with the
spec's errata: free s / s_hat, an upper bound, empty intersections not detected), spec §5.3 items 5-7 and 15.

References used here, all independent of the module under test:
* the 1-D Prop 17 instance of spec §2.5.2 (closed-form worst case 0.551592; the exact dual discretized on a
  grid as an LP, with free and with sign-restricted s, s_hat: 0.551592 and 0.829245);
* DR-ARO (single ball, selvi2025 Cor. 8) written here with ProgramBuilder;
* a loop-by-loop cvxpy transcription of the static program;
* OT distances W(P_N, P_hat) by a small LP.
"""

import numpy as np
import pytest
from scipy.optimize import linprog

from drokit.conic.builder import ProgramBuilder
from drokit.reformulations import intersection as inter
from drokit.reformulations.intersection import (MAX_Z_ENTRIES, build_intersection_program, intersection_rows,
                                               solve_intersection, static_value_at)
from drokit.reformulations.intersection_bound import candidate_support, finite_support_lower_bound
from drokit.exceptions import DataError, ParameterError, ProblemTooLargeError, SolverError
from drokit.losses import get_loss
from drokit.metrics.costs import NormCost
from drokit.solvers import get_backend

LOG2 = np.log(2.0)

# the 1-D instance of spec §2.5.2: P_N = delta_(0,+1), P_hat = delta_(2,+1), eps = 0.5, eps_hat = 1.5
X1, Y1, XA1, YA1 = np.array([[0.0]]), np.array([1.0]), np.array([[2.0]]), np.array([1.0])
EPS1, EPSA1, KAPPA1 = 0.5, 1.5, 100.0
EXACT1 = 0.75 * LOG2 + 0.25 * np.log1p(np.exp(-2.0))          # Q = 3/4 delta_0 + 1/4 delta_2: 0.551592


def logistic(u):
    return np.logaddexp(0.0, -u)


# ------------------------------------------------------------------------------------ references
def dual_norm(v, p):
    return np.linalg.norm(v, ord=NormCost(p).dual_p)


def wasserstein(X, y, Xa, ya, p=1, kappa=1.0):
    """W(P_N, P_hat) for d = ||x - x'||_p + kappa 1[y != y'] (transport LP)."""
    C = np.linalg.norm(X[:, None, :] - Xa[None, :, :], ord=p, axis=2) + np.where(
        y[:, None] != ya[None, :], kappa, 0.0)
    N, M = C.shape
    A = np.vstack([np.kron(np.eye(N), np.ones((1, M))), np.kron(np.ones((1, N)), np.eye(M))])
    b = np.concatenate([np.full(N, 1.0 / N), np.full(M, 1.0 / M)])
    res = linprog(C.ravel(), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def dr_aro(X, y, eps, loss="logistic", p=1, kappa=1.0, attack=None, fit_intercept=True):
    """Single-ball DR-ARO (selvi2025 Cor. 8):
    min eps lam + mean_i max(L(y_i f_i - tau), L(-y_i f_i - tau) - lam kappa),  lip ||beta||_* <= lam."""
    loss = get_loss(loss)
    N, n = X.shape
    pb = ProgramBuilder()
    coef = pb.var("coef", n)
    u = coef.premultiply(X * y[:, None])
    if fit_intercept:
        u = u + pb.var("intercept", 1).repeat(N) * y
    lam = pb.var("lambda", 1)
    s = pb.var("s", N)
    if attack is not None:
        tau = pb.var("attack", 1)
        NormCost(attack[0]).add_dual_norm_leq(pb, coef * attack[1], tau, np.ones(n))
        u = u - tau.repeat(N)
        flipped = -(u + tau.repeat(N)) - tau.repeat(N)
    else:
        flipped = -u
    loss.epigraph(pb, u, s)
    if np.isfinite(kappa):
        loss.epigraph(pb, flipped, s + lam.repeat(N) * kappa)
    NormCost(p).add_dual_norm_leq(pb, coef * loss.lipschitz, lam, np.ones(n))
    pb.add_nonneg(lam)
    pb.minimize(lam * eps + s.sum() * (1.0 / N))
    sol = get_backend("clarabel").solve(pb.build())
    assert sol.status in ("optimal", "optimal_inaccurate")
    return sol.primal_objective


def exact_dual_1d(beta, sign_restricted, support=None, step=1e-3):
    """Prop 17's exact (non-static) dual at fixed beta on the 1-D instance, its semi-infinite constraint
    imposed on a grid (an LP in (lam, lam_hat, s, s_hat)).

    ``support=None``: features in R.  The grid covers [0, 2] and ``lam + lam_hat >= lip |beta|`` is added:
    the constraint needs it (Lemma 31), and with it the left side is non-increasing outside [0, 2], so the
    grid loses nothing there.  ``support=(lo, hi)``: features restricted to [lo, hi] (grid only); this is
    the LP dual of the finite-grid primal LP of spec §2.5.2.
    """
    lo, hi = (0.0, 2.0) if support is None else support
    xs = np.linspace(lo, hi, int(round((hi - lo) / step)) + 1)
    # rows: l(x) - lam |x| - lam_hat |x - 2| <= s + s_hat + kappa 1[l = -1] (lam + lam_hat)
    A, b = [], []
    for l in (1.0, -1.0):
        flip = KAPPA1 if l != 1.0 else 0.0
        A.append(np.column_stack([-np.abs(xs) - flip, -np.abs(xs - 2.0) - flip, -np.ones(xs.size),
                                  -np.ones(xs.size)]))
        b.append(-logistic(l * beta * xs))
    if support is None:
        A.append(np.array([[-1.0, -1.0, 0.0, 0.0]]))
        b.append(np.array([-abs(beta)]))
    bounds = [(0, None), (0, None)] + ([(0, None)] * 2 if sign_restricted else [(None, None)] * 2)
    res = linprog([EPS1, EPSA1, 1.0, 1.0], A_ub=np.vstack(A), b_ub=np.concatenate(b), bounds=bounds,
                  method="highs")
    assert res.status == 0
    return res.fun, res.x


def random_instance(seed=4, N=6, Na=7, n=2, noise=0.3):
    """2-D instance in the spirit of spec §2.5.1: P_hat = noisy copies of P_N plus extra samples."""
    rng = np.random.default_rng(seed)
    beta_true = np.array([2.0, -1.5, 1.0, 0.5, -0.5])[:n]
    X = rng.normal(size=(N, n))
    y = np.where(rng.random(N) < 1 / (1 + np.exp(-X @ beta_true)), 1.0, -1.0)
    extra = rng.normal(size=(Na - N, n))
    Xa = np.vstack([X + noise * rng.normal(size=(N, n)), extra])
    ya = np.concatenate([y, np.where(rng.normal(size=(Na - N, n)) @ beta_true > 0, 1.0, -1.0)])
    return X, y, Xa, ya


# --------------------------------------------------------------- spec §5.3 item 6: the 1-D instance
def test_prop17_instance_exact_value_and_sign_regression():
    """Exact worst case 0.551592; the exact dual with free s, s_hat gives it; with s, s_hat >= 0 it is larger.

    The sign-restricted value depends on how far the features may go: with x in R it is
    0.5 + log(2) / 2 = 0.846574 (a vanishing mass far left earns eps |beta| = 0.5, the rest of the budget of
    the auxiliary ball keeps mass 1/2 at x = 0); the spec's 0.829245 is the same dual with x restricted to
    [-20, 22] (mass 0.025 at x = -20 earns 0.5, mass 0.475 at 0 earns 0.475 log 2), a truncation of the grid
    of its LP check.  Both differ from 0.551592, which is the spec's point (§2.5.2).
    """
    assert EXACT1 == pytest.approx(0.551592, abs=5e-7)
    free, x = exact_dual_1d(1.0, sign_restricted=False)
    assert free == pytest.approx(EXACT1, abs=1e-6)
    # s, s_hat enter only as s + s_hat: every free optimum has s + s_hat < 0 (else it would be feasible,
    # with the same value, for the sign-restricted dual, whose value is larger); the spec found -2.94
    assert x[2] + x[3] < -0.1
    restricted, _ = exact_dual_1d(1.0, sign_restricted=True)
    assert restricted == pytest.approx(0.5 + LOG2 / 2, abs=1e-6)
    truncated, _ = exact_dual_1d(1.0, sign_restricted=True, support=(-20.0, 22.0), step=1e-2)
    assert truncated == pytest.approx(0.829245, abs=1e-6)
    free_truncated, _ = exact_dual_1d(1.0, sign_restricted=False, support=(-20.0, 22.0), step=1e-2)
    assert free_truncated == pytest.approx(EXACT1, abs=1e-6)


def test_prop17_instance_static_value_is_upper_bound_not_exact():
    """Static Inter-ARO*(beta = 1) = 0.5 + log 2 = 1.193147: an upper bound, never the exact 0.5516."""
    v = static_value_at(None, [1.0], X1, Y1, XA1, YA1, EPS1, EPSA1, "logistic", kappa=KAPPA1)
    assert v == pytest.approx(0.5 + LOG2, abs=1e-6)
    assert v > EXACT1 + 0.5
    # = single-ball DR-ARO value of this beta (spec §2.5.3): log 2 + eps |beta|
    res = static_value_at(0.0, [1.0], X1, Y1, XA1, YA1, EPS1, EPSA1, "logistic", kappa=KAPPA1, full=True)
    assert res.upper_bound and res.status == "optimal"
    assert res.value == pytest.approx(v, abs=1e-7)


@pytest.mark.parametrize("segment_points", [0, 3, 50])
def test_prop17_instance_finite_support_lower_bound(segment_points):
    """The finite-support LP (total mass exactly 1) reaches the exact 0.551592 from below (the extreme
    points 0 and 2 are samples); never the 0.829245 of mass <= 1."""
    lb = finite_support_lower_bound(None, [1.0], X1, Y1, XA1, YA1, EPS1, EPSA1, "logistic", kappa=KAPPA1,
                                    segment_points=segment_points)
    assert lb <= EXACT1 + 1e-8
    assert lb == pytest.approx(EXACT1, abs=1e-7)
    value, pts, labels, q = finite_support_lower_bound(None, [1.0], X1, Y1, XA1, YA1, EPS1, EPSA1,
                                                       "logistic", kappa=KAPPA1, segment_points=segment_points,
                                                       return_distribution=True)
    assert q.sum() == pytest.approx(1.0, abs=1e-9)
    assert float(q @ pts[:, 0]) == pytest.approx(0.5, abs=1e-7)   # mean 0.5: in both balls


def test_prop17_instance_fit():
    """Fitting beta (no intercept): the static optimum is log 2 at beta = 0 (the worst case of any beta != 0
    is larger in the static bound: log 2 + 0.5 |beta| at best)."""
    r = solve_intersection(X1, Y1, XA1, YA1, EPS1, EPSA1, "logistic", kappa=KAPPA1, fit_intercept=False)
    assert r.value == pytest.approx(LOG2, abs=1e-6)
    assert abs(r.coef[0]) < 1e-5


# ------------------------------------------------------------------- spec §5.3 item 5: bounds/limits
@pytest.mark.parametrize("seed", [0, 4])
def test_bounded_by_both_single_ball_problems(seed):
    """Inter-ARO* <= min(DR-ARO(P_N, eps), DR-ARO(P_hat, eps_hat)) (Cor. 9 and its symmetric form); on these
    instances strictly."""
    X, y, Xa, ya = random_instance(seed)
    kappa, attack = 2.0, (2, 0.1)
    W = wasserstein(X, y, Xa, ya, p=1, kappa=kappa)
    eps = epsa = 0.6 * W
    r = solve_intersection(X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=kappa, attack=attack)
    d1 = dr_aro(X, y, eps, p=1, kappa=kappa, attack=attack)
    d2 = dr_aro(Xa, ya, epsa, p=1, kappa=kappa, attack=attack)
    assert r.value <= min(d1, d2) + 1e-6
    assert r.value < min(d1, d2) - 5e-3
    assert r.attack == pytest.approx(0.1 * np.linalg.norm(r.coef, 2), abs=1e-6)


def test_converges_to_dr_aro_as_aux_radius_grows():
    """Inter-ARO* -> DR-ARO(P_N, eps) as eps_hat -> inf (spec: 0.69314720 vs 0.69314718 at eps_hat = 50)."""
    X, y, Xa, ya = random_instance(4)
    kappa, attack = 2.0, (2, 0.1)
    eps = 0.6 * wasserstein(X, y, Xa, ya, p=1, kappa=kappa)
    d1 = dr_aro(X, y, eps, p=1, kappa=kappa, attack=attack)
    values = [solve_intersection(X, y, Xa, ya, eps, ea, "logistic", p=1, kappa=kappa, attack=attack).value
              for ea in (0.2, 1.0, 50.0)]
    assert values[0] <= values[1] + 1e-6 <= values[2] + 2e-6     # non-decreasing in eps_hat
    assert values[2] == pytest.approx(d1, abs=5e-7)
    assert values[0] < d1 - 1e-2


@pytest.mark.parametrize("seed", [0, 4])
def test_sandwich_at_fitted_model(seed):
    """finite-support LB <= static value at the fitted model, which equals the fitted optimum."""
    X, y, Xa, ya = random_instance(seed)
    kappa, attack = 2.0, (2, 0.1)
    eps = epsa = 0.6 * wasserstein(X, y, Xa, ya, p=1, kappa=kappa)
    r = solve_intersection(X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=kappa, attack=attack)
    ub = static_value_at(r.intercept, r.coef, X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=kappa,
                         attack=attack)
    assert ub == pytest.approx(r.value, abs=5e-7)
    lb = finite_support_lower_bound(r.intercept, r.coef, X, y, Xa, ya, eps, epsa, "logistic", p=1,
                                    kappa=kappa, attack=attack, segment_points=8)
    assert np.isfinite(lb)
    assert lb <= ub + 1e-7
    # a worst case over the intersection is at least the loss at each center (when in both balls) -- and
    # the mixture (Prop 19) is feasible here, so the LB exceeds the mixture's expected loss
    shift = 0.1 * np.linalg.norm(r.coef, 2)
    mix = (logistic(y * (X @ r.coef + r.intercept) - shift).mean()
           + logistic(ya * (Xa @ r.coef + r.intercept) - shift).mean()) / 2
    assert lb >= mix - 1e-7


def test_static_value_is_upper_bound_of_exact_on_random_models():
    """At several fixed models: LB (finite support) <= static value, with hinge and logistic."""
    X, y, Xa, ya = random_instance(0, N=4, Na=5)
    eps = epsa = 0.7 * wasserstein(X, y, Xa, ya, p=2, kappa=1.0)
    rng = np.random.default_rng(1)
    for loss in ("logistic", "hinge", "smooth_hinge"):
        for _ in range(2):
            b, coef = rng.normal(), rng.normal(size=2)
            ub = static_value_at(b, coef, X, y, Xa, ya, eps, epsa, loss, p=2, kappa=1.0)
            lb = finite_support_lower_bound(b, coef, X, y, Xa, ya, eps, epsa, loss, p=2, kappa=1.0,
                                            segment_points=6)
            assert np.isfinite(lb) and lb <= ub + 1e-6


# ----------------------------------------------------------------- independent cvxpy transcription
def cvxpy_static(X, y, Xa, ya, eps, epsa, loss, p, gamma, kappa, attack, fit_intercept):
    cp = pytest.importorskip("cvxpy")
    N, n = X.shape
    Na = Xa.shape[0]
    q = NormCost(p).dual_p
    beta = cp.Variable(n)
    b = cp.Variable() if fit_intercept else 0.0
    lam, lama = cp.Variable(nonneg=True), cp.Variable(nonneg=True)
    s, sa = cp.Variable(N), cp.Variable(Na)
    tau = cp.Variable() if attack else 0.0
    cons = [tau >= attack[1] * cp.norm(beta, NormCost(attack[0]).dual_p)] if attack else []
    L = {"logistic": lambda u: cp.logistic(-u), "hinge": lambda u: cp.pos(1 - u)}[loss]
    for i in range(N):
        for j in range(Na):
            for l in (-1.0, 1.0):
                if np.isinf(kappa) and not (l == y[i] == ya[j]):
                    continue
                z = cp.Variable(n)
                rhs = s[i] + sa[j]
                if np.isfinite(kappa):
                    rhs = rhs + kappa * (l != y[i]) * lam + kappa * (l != ya[j]) * lama
                cons += [L(l * (b + X[i] @ beta) + z @ (Xa[j] - X[i]) - tau) <= rhs,
                         cp.norm(cp.multiply(1 / gamma, l * beta - z), q) <= lam,
                         cp.norm(cp.multiply(1 / gamma, z), q) <= lama]
    prob = cp.Problem(cp.Minimize(eps * lam + epsa * lama + cp.sum(s) / N + cp.sum(sa) / Na), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


@pytest.mark.parametrize("loss,p,kappa,attack,fit_intercept", [
    ("logistic", 1, 1.5, (2, 0.05), True),
    ("logistic", 2, 0.7, None, True),
    ("logistic", np.inf, np.inf, (1, 0.1), False),
    ("logistic", 3, 2.0, (np.inf, 0.05), True),
    ("hinge", 2, 1.0, (2, 0.1), True),
])
def test_matches_cvxpy_transcription(loss, p, kappa, attack, fit_intercept):
    X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 0.8], [0.1, 0.2]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    Xa = np.array([[0.9, -0.6], [-1.0, 1.1], [0.4, 0.0], [-0.2, -0.3], [1.2, 0.9], [0.0, 1.0]])
    ya = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    gamma = np.array([1.0, 2.0])
    eps, epsa = 0.3, 0.5
    ref = cvxpy_static(X, y, Xa, ya, eps, epsa, loss, p, gamma, kappa, attack, fit_intercept)
    r = solve_intersection(X, y, Xa, ya, eps, epsa, loss, p=p, gamma=gamma, kappa=kappa, attack=attack,
                           fit_intercept=fit_intercept)
    assert r.value == pytest.approx(ref, rel=1e-5, abs=1e-6)


# --------------------------------------------------------------------------- attack (Obs. 7) term
def test_attack_raises_value_and_is_tight():
    X, y, Xa, ya = random_instance(4)
    eps = epsa = 0.6 * wasserstein(X, y, Xa, ya, p=1, kappa=2.0)
    values = []
    for alpha in (0.0, 0.1, 0.3):
        r = solve_intersection(X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=2.0, attack=(2, alpha))
        assert r.attack == pytest.approx(alpha * np.linalg.norm(r.coef, 2), abs=1e-6)
        values.append(r.value)
    assert values[0] < values[1] - 1e-3 < values[2] - 2e-3
    plain = solve_intersection(X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=2.0)
    assert plain.value == pytest.approx(values[0], abs=1e-6)
    assert plain.attack is None and "attack" not in plain.program.variables
    # at a fixed model the attack is the constant shift alpha ||beta||_{p*}
    coef = np.array([1.0, -0.5])
    v0 = static_value_at(0.2, coef, X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=2.0)
    v1 = static_value_at(0.2, coef, X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=2.0, attack=(2, 0.3))
    assert v1 > v0 + 1e-3


def test_adversarial_loss_object_is_unwrapped():
    Adversarial = pytest.importorskip("drokit.losses").__dict__.get("Adversarial")
    if Adversarial is None:
        pytest.skip("drokit.losses.Adversarial not available")
    X, y, Xa, ya = random_instance(4)
    a = solve_intersection(X, y, Xa, ya, 0.3, 0.4, Adversarial("logistic", norm=2, budget=0.1), kappa=2.0)
    b = solve_intersection(X, y, Xa, ya, 0.3, 0.4, "logistic", kappa=2.0, attack=(2, 0.1))
    assert a.value == pytest.approx(b.value, abs=1e-7)
    with pytest.raises(ParameterError, match="not both"):
        build_intersection_program(X, y, Xa, ya, 0.3, 0.4, Adversarial("logistic", norm=2, budget=0.1),
                                   attack=(2, 0.1))


# ------------------------------------------------------------ spec test 15: exp-cone sign (both signs)
@pytest.mark.parametrize("intercept,beta", [(None, 2.0), (None, -2.0), (None, 0.5), (0.5, -3.0), (-4.0, 1.0)])
def test_exp_cone_sign_margins_of_both_signs(intercept, beta):
    """Both samples at x = 1 (label +1), kappa = inf: the intersection is the smaller ball, and the worst
    case is L(m) + min(eps, eps_hat) |beta| exactly (static = exact here), m = b + beta.  A flipped
    exp-cone bracket (App. 4.C erratum) would give log(1 + e^{+m}) instead."""
    X = np.array([[1.0]])
    y = np.array([1.0])
    m = (intercept or 0.0) + beta
    v = static_value_at(intercept, [beta], X, y, X, y, 0.1, 0.3, "logistic")
    assert v == pytest.approx(logistic(m) + 0.1 * abs(beta), abs=1e-6)
    assert abs(v - (np.logaddexp(0.0, m) + 0.1 * abs(beta))) > 0.1


# ----------------------------------------------------------------------- kappa = inf: rows and limits
def test_kappa_inf_rows():
    y = np.array([1.0, -1.0, 1.0])
    ya = np.array([-1.0, 1.0])
    i, j, l = intersection_rows(y, ya, np.inf)
    assert set(zip(i.tolist(), j.tolist(), l.tolist())) == {(0, 1, 1.0), (1, 0, -1.0), (2, 1, 1.0)}
    i, j, l = intersection_rows(y, ya, 3.0)
    assert i.size == 2 * 3 * 2
    assert np.array_equal(l[:2], [-1.0, 1.0]) and np.array_equal(j[:4], [0, 0, 1, 1])


def test_kappa_inf_is_the_limit_of_large_kappa():
    X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 0.8], [0.1, 0.2]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    Xa = np.array([[0.9, -0.6], [-1.0, 1.1], [0.4, 0.0], [-0.2, -0.3], [1.2, 0.9], [0.0, 1.0]])
    ya = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    coef = np.array([1.0, -0.5])
    vals = [static_value_at(0.1, coef, X, y, Xa, ya, 0.3, 0.5, "logistic", p=2, kappa=k)
            for k in (0.5, 2.0, 1e3, np.inf)]
    assert all(a >= b - 1e-6 for a, b in zip(vals, vals[1:]))          # non-increasing in kappa
    assert vals[2] == pytest.approx(vals[3], abs=1e-5)
    fit = {k: solve_intersection(X, y, Xa, ya, 0.3, 0.5, "logistic", p=2, kappa=k).value for k in (1e3, np.inf)}
    assert fit[1e3] == pytest.approx(fit[np.inf], abs=1e-5)
    lb = finite_support_lower_bound(0.1, coef, X, y, Xa, ya, 0.3, 0.5, "logistic", p=2, kappa=np.inf)
    assert np.isfinite(lb) and lb <= vals[3] + 1e-7


def test_kappa_inf_with_different_label_proportions_is_refused():
    X = np.array([[0.0], [1.0]])
    with pytest.raises(ParameterError, match="label proportions|proportions"):
        build_intersection_program(X, np.array([1.0, -1.0]), X, np.array([1.0, 1.0]), 1.0, 1.0, "logistic")
    # with a finite kappa the same data are fine
    r = solve_intersection(X, np.array([1.0, -1.0]), X, np.array([1.0, 1.0]), 1.0, 1.0, "logistic", kappa=1.0)
    assert np.isfinite(r.value)


# ------------------------------------------------------------ spec §5.3 item 7: empty intersection
def test_empty_intersection_gives_a_finite_static_value():
    """eps + eps_hat < W(P_N, P_hat): the exact worst case is -inf, but the static program may still return a
    finite number (spec §2.5.4; here 0.13-ish with eps + eps_hat = 3% of W) -- the non-emptiness check
    belongs to the caller.  (On other empty instances the static program is unbounded and solve raises
    SolverError with status 'unbounded'.)  The finite-support LP sees the emptiness (-inf)."""
    X, y, Xa, ya = random_instance(0)
    Xa = Xa + 3.0
    W = wasserstein(X, y, Xa, ya, p=1, kappa=1.0)
    eps = epsa = 0.015 * W
    r = solve_intersection(X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=1.0)
    assert np.isfinite(r.value) and 0.0 < r.value < LOG2
    lb = finite_support_lower_bound(r.intercept, r.coef, X, y, Xa, ya, eps, epsa, "logistic", p=1, kappa=1.0)
    assert lb == -np.inf
    # unshifted, tiny radii: unbounded, reported as an empty intersection
    X, y, Xa, ya = random_instance(0)
    W = wasserstein(X, y, Xa, ya, p=1, kappa=1.0)
    with pytest.raises(SolverError, match="empty") as info:
        solve_intersection(X, y, Xa, ya, 0.015 * W, 0.015 * W, "logistic", p=1, kappa=1.0)
    assert info.value.status == "unbounded"


# --------------------------------------------------------------------------------- program structure
def test_program_variables_and_sizes():
    X, y, Xa, ya = random_instance(0, N=3, Na=4, n=2)
    prog = build_intersection_program(X, y, Xa, ya, 0.2, 0.3, "logistic", p=1, kappa=1.0, attack=(2, 0.1))
    K = 2 * 3 * 4
    for name, size in [("coef", 2), ("intercept", 1), ("lambda", 1), ("lambda_aux", 1), ("s", 3),
                       ("s_aux", 4), ("z", 2 * K), ("attack", 1)]:
        sl = prog.variables[name]
        assert sl.stop - sl.start == size, name
    assert prog.cone_counts()["exp"] == 2 * K
    prog = build_intersection_program(X, y, Xa, ya, 0.2, 0.3, "hinge", p=2, kappa=1.0, fit_intercept=False)
    assert "intercept" not in prog.variables and "attack" not in prog.variables
    assert prog.cone_counts()["soc"] == 2 * K


def test_candidate_support():
    X = np.array([[0.0, 0.0]])
    Xa = np.array([[1.0, 2.0], [0.0, 0.0]])
    pts = candidate_support(X, Xa, segment_points=1)
    assert {tuple(p) for p in pts} == {(0.0, 0.0), (1.0, 2.0), (0.5, 1.0)}


def test_too_large_is_refused(monkeypatch):
    X, y, Xa, ya = random_instance(0, N=5, Na=6, n=2)
    monkeypatch.setattr(inter, "MAX_Z_ENTRIES", 100)
    with pytest.raises(ProblemTooLargeError, match="fewer samples"):
        build_intersection_program(X, y, Xa, ya, 0.2, 0.3, "logistic", kappa=1.0)
    assert MAX_Z_ENTRIES >= 1_000_000


@pytest.mark.parametrize("kwargs,err", [
    (dict(loss="huber"), ParameterError),
    (dict(loss="absolute"), ParameterError),
    (dict(radius=-1.0), ParameterError),
    (dict(kappa=-1.0), ParameterError),
    (dict(p=0.5), ParameterError),
    (dict(gamma=[1.0]), ParameterError),
    (dict(attack=(2, -0.1)), ParameterError),
    (dict(y=np.array([0.0, 1.0, 1.0])), DataError),
])
def test_bad_input(kwargs, err):
    X, y, Xa, ya = random_instance(0, N=3, Na=4, n=2)
    args = dict(X=X, y=y, X_aux=Xa, y_aux=ya, radius=0.2, radius_aux=0.3, loss="logistic")
    args.update(kwargs)
    with pytest.raises(err):
        build_intersection_program(args.pop("X"), args.pop("y"), args.pop("X_aux"), args.pop("y_aux"),
                                   args.pop("radius"), args.pop("radius_aux"), args.pop("loss"), **args)
