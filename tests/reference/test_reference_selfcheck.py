"""Self-checks of the brute-force reference against closed forms, limits and an explicit
primal construction (spec belbasi2023-selvi2022 D2 items 3, 4, 5, 10, 11; sun2025 2.5).

These tests only exercise tests/reference/brute_force.py, never drokit.
"""

import itertools

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog, minimize_scalar

from . import brute_force as bf

LOSS_PARAMS = {
    "logistic": None,
    "hinge": None,
    "smooth_hinge": None,
    "huber": 0.7,
    "pinball": 0.3,
    "epsilon_insensitive": 0.25,
    "absolute": None,
}
CLS = list(bf.CLASSIFICATION_LOSSES)
REG = list(bf.REGRESSION_LOSSES)
TASK = {**{l: "classification" for l in CLS}, **{l: "regression" for l in REG}}
NORMS = [1, 2, np.inf]


def close(a, b, rel=1e-6, abs_=1e-7):
    return abs(a - b) <= abs_ + rel * max(abs(a), abs(b))


def _beta(r):
    return (r["b0"], r["bx"], r["bz"])


def _rand_beta(rng, n, c, scale=1.0):
    return (rng.normal(scale=scale), rng.normal(scale=scale, size=n), rng.normal(scale=scale, size=c))


# ----------------------------------------------------------------------------------------
# losses
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", bf.ALL_LOSSES)
def test_loss_atoms_match_piecewise_formulas_and_lip(loss):
    par = LOSS_PARAMS[loss]
    e = np.linspace(-4, 4, 801)
    atom = bf.cvx_loss(loss, cp.Constant(e), par).value
    np.testing.assert_allclose(atom, bf.loss_value(loss, e, par), atol=1e-12)
    # hand-written reference points
    pts = {
        "logistic": [(0.0, np.log(2)), (2.0, np.log(1 + np.exp(-2)))],
        "hinge": [(-1.0, 2.0), (0.5, 0.5), (3.0, 0.0)],
        "smooth_hinge": [(-1.0, 1.5), (0.0, 0.5), (0.5, 0.125), (1.0, 0.0), (2.0, 0.0)],
        "huber": [(0.5, 0.125), (-2.0, 0.7 * (2.0 - 0.35))],
        "pinball": [(-2.0, 0.6), (2.0, 1.4)],
        "epsilon_insensitive": [(0.2, 0.0), (-1.0, 0.75)],
        "absolute": [(-1.5, 1.5), (0.3, 0.3)],
    }[loss]
    for x, v in pts:
        assert abs(float(bf.loss_value(loss, x, par)) - v) < 1e-12
    # Lipschitz constant = largest slope, attained asymptotically
    big = np.linspace(-60, 60, 24001)
    slopes = np.abs(np.diff(bf.loss_value(loss, big, par)) / np.diff(big))
    assert slopes.max() <= bf.loss_lip(loss, par) + 1e-9
    assert slopes.max() >= bf.loss_lip(loss, par) - 1e-6
    lo, hi = bf.loss_asymptotic_slopes(loss, par)
    assert abs(max(lo, hi) - bf.loss_lip(loss, par)) < 1e-15


def test_encoding_and_distance():
    Z = np.array([[0, 2], [1, 0]])
    np.testing.assert_array_equal(bf.encode(Z, [2, 3]), [[0, 0, 1], [1, 0, 0]])
    d = np.array([2.0, 3.0])
    assert bf.categorical_distance([0, 1], [0, 1], d, 0.5) == 0
    assert close(bf.categorical_distance([0, 1], [1, 2], d, 1.0), 5.0)
    assert close(bf.categorical_distance([0, 1], [1, 2], d, 2.0), np.sqrt(13.0))
    assert close(bf.categorical_distance([0, 1], [1, 2], d, 0.5), (np.sqrt(2) + np.sqrt(3)) ** 2)
    # equal weights: delta * count^(1/q)
    assert close(bf.categorical_distance([0, 0, 0], [1, 1, 0], [1.5] * 3, 0.5), 1.5 * 2**2)
    assert np.isinf(bf.categorical_distance([0, 1], [1, 1], [np.inf, 1.0], 1.0))
    assert bf.categorical_distance([0, 1], [0, 2], [np.inf, 1.0], 1.0) == 1.0


def test_random_instance_properties():
    for seed in range(5):
        X, Z, y = bf.random_instance(seed, 6, 2, [2, 3, 4], "classification")
        assert X.shape == (6, 2) and Z.shape == (6, 3)
        for l, a in enumerate([2, 3, 4]):
            assert set(Z[:, l]) == set(range(a))
        assert set(y) == {-1.0, 1.0}


# ----------------------------------------------------------------------------------------
# D2 item 4: all-numerical closed forms
# ----------------------------------------------------------------------------------------
def _regularized_erm(X, y, task, loss, par, eps, p, gamma, kappa):
    """min_beta mean L + eps * lip * max(||Gamma^{-1} bx||_*, 1/kappa [regression])."""
    N, n = X.shape
    b0, bx = cp.Variable(), cp.Variable(n)
    f = b0 + X @ bx
    e = cp.multiply(y, f) if task == "classification" else f - y
    w = np.where(np.isinf(gamma), 0.0, 1.0 / gamma)
    pen = cp.norm(cp.multiply(w, bx), {1: np.inf, 2: 2}.get(p, 1))  # l1<->linf, l2<->l2
    if task == "regression" and np.isfinite(kappa):
        pen = cp.maximum(pen, 1.0 / kappa)
    prob = cp.Problem(cp.Minimize(cp.sum(bf.cvx_loss(loss, e, par)) / N
                                  + eps * bf.loss_lip(loss, par) * pen))
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value


@pytest.mark.parametrize("p", NORMS)
@pytest.mark.parametrize("loss", bf.ALL_LOSSES)
def test_all_numerical_closed_form(loss, p):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    X, Z, y = bf.random_instance(11, 7, 3, [], task)
    gamma = np.array([0.5, 2.0, 1.3])
    kappas = [np.inf] if task == "classification" else [np.inf, 0.8, 3.0]
    eps = 0.15
    rng = np.random.default_rng(3)
    lip = bf.loss_lip(loss, par)
    for kappa in kappas:
        kw = dict(task=task, loss=loss, loss_param=par, radius=eps, norm_p=p, gamma=gamma,
                  kappa=kappa)
        # exact for every beta
        for _ in range(3):
            beta = _rand_beta(rng, 3, 0)
            f = beta[0] + X @ beta[1]
            e = y * f if task == "classification" else f - y
            reg = bf.dual_norm_weighted(beta[1], gamma, p)
            if task == "regression" and np.isfinite(kappa):
                reg = max(reg, 1.0 / kappa)
            cf = np.mean(bf.loss_value(loss, e, par)) + eps * lip * reg
            assert close(bf.worst_case_risk(beta, X, Z, [], y, **kw), cf, 1e-8, 1e-9)
        # and at the optimum: DRO value == regularised ERM (a different convex program)
        v = bf.dro_value(X, Z, [], y, **kw)["value"]
        assert close(v, _regularized_erm(X, y, task, loss, par, eps, p, gamma, kappa), 1e-6)


@pytest.mark.parametrize("loss", CLS)
def test_all_numerical_classification_finite_kappa(loss):
    """No regularizer form: min_{lam >= lip||bx||_*} lam eps + mean max(L(m), L(-m) - lam kappa)."""
    X, Z, y = bf.random_instance(5, 6, 2, [], "classification")
    rng = np.random.default_rng(0)
    eps, kappa, p = 0.3, 0.9, 2
    for _ in range(4):
        beta = _rand_beta(rng, 2, 0)
        mrg = y * (beta[0] + X @ beta[1])
        l1, l2 = bf.loss_value(loss, mrg), bf.loss_value(loss, -mrg)
        lm = bf.dual_norm_weighted(beta[1], np.ones(2), p)
        g = lambda lam: lam * eps + np.mean(np.maximum(l1, l2 - lam * kappa))
        # convex piecewise-linear in lam: minimum at lm or at a breakpoint
        cands = [lm] + [b for b in (l2 - l1) / kappa if b > lm]
        ref = min(g(c) for c in cands)
        wc = bf.worst_case_risk(beta, X, Z, [], y, task="classification", loss=loss,
                                radius=eps, norm_p=p, kappa=kappa)
        assert close(wc, ref, 1e-8, 1e-9)


# ----------------------------------------------------------------------------------------
# strong duality by an explicit primal distribution (mixed features, sun2025 2.5)
# ----------------------------------------------------------------------------------------
def _dual_norm_maximizer(v, p):
    """w with ||w||_p = 1 and v.w = ||v||_{p*}."""
    if p == 1:
        j = int(np.argmax(np.abs(v)))
        w = np.zeros_like(v)
        w[j] = np.sign(v[j])
        return w
    if p == 2:
        return v / np.linalg.norm(v)
    return np.sign(v)


def explicit_worst_case(beta, X, Z, levels, y, *, task, loss, loss_param, radius, norm_p,
                        gamma, delta, cat_p, kappa, theta=1e-7):
    """Build an explicit discrete Q (atoms + one far-away atom of tiny mass) and return
    (E_Q[loss], transport cost of the coupling), both evaluated directly."""
    N, n = X.shape
    eps = radius
    sc, lr = bf.scenario_losses(beta, X, Z, levels, y, task=task, loss=loss,
                                loss_param=loss_param, delta=delta, cat_p=cat_p, kappa=kappa)
    lm = bf.lambda_min(beta[1], task=task, loss=loss, loss_param=loss_param, gamma=gamma,
                       norm_p=norm_p, kappa=kappa)
    R = lr.size
    A_eq = np.zeros((N, R))
    A_eq[sc["idx"], np.arange(R)] = 1.0
    res = linprog(-(lr - lm * sc["cost"]), A_ub=sc["cost"][None, :], b_ub=[eps],
                  A_eq=A_eq, b_eq=np.full(N, 1.0 / N), bounds=[(0, None)] * R, method="highs-ds")
    assert res.status == 0
    configs = bf.all_configurations(levels)
    atoms = []  # (source i, x, z, y', mass)
    for r in np.flatnonzero(res.x > 0):
        i = sc["idx"][r]
        z = configs[sc["conf"][r]]
        yp = -y[i] if sc["flip"][r] else y[i]
        atoms.append([i, X[i].copy(), z, yp, res.x[r]])

    def cost_of(a):
        i, x, z, yp, _ = a
        return bf.ground_cost(X[i], Z[i], y[i], x, z, yp, task=task, gamma=gamma,
                              delta=delta, cat_p=cat_p, kappa=kappa, norm_p=norm_p)

    used = sum(a[4] * cost_of(a) for a in atoms)
    budget = eps - used
    if lm > 0 and budget > 1e-12:
        k = int(np.argmax([a[4] for a in atoms]))
        i, x, z, yp, mass = atoms[k]
        th = min(theta, mass)
        atoms[k][4] = mass - th
        new = [i, x.copy(), z, yp, th]
        lip = bf.loss_lip(loss, loss_param)
        v = np.where(np.isinf(gamma), 0.0, np.asarray(beta[1]) / gamma) if n else np.zeros(0)
        num_rate = lip * (np.linalg.norm(v, bf._dual_exponent(norm_p)) if n else 0.0)
        lo, hi = bf.loss_asymptotic_slopes(loss, loss_param)
        if task == "regression" and np.isfinite(kappa) and lip / kappa > num_rate:
            # move the label: e = f - y grows when y decreases
            Rr = budget / (th * kappa)
            new[3] = yp - Rr if hi >= lo else yp + Rr
        else:
            w = _dual_norm_maximizer(v, norm_p)
            u = np.where(np.isinf(gamma), 0.0, w / gamma)  # ||Gamma u||_p = 1
            Rr = budget / th
            if task == "classification":
                direction = -np.sign(yp)  # decrease y' f
            else:
                direction = 1.0 if hi >= lo else -1.0
            new[1] = x + direction * Rr * u
        atoms.append(new)

    b0, bx, bz = beta
    EQ, W = 0.0, 0.0
    for a in atoms:
        i, x, z, yp, mass = a
        f = b0 + x @ bx + bf.encode(np.asarray(z)[None, :], levels)[0] @ bz
        e = yp * f if task == "classification" else f - yp
        EQ += mass * float(bf.loss_value(loss, e, loss_param))
        W += mass * cost_of(a)
    return EQ, W


EXPLICIT_CASES = [
    # loss, n, levels, p, cat_p, kappa, weighted
    ("logistic", 2, [2, 3], 1, 1.0, np.inf, False),
    ("logistic", 2, [2, 3], 2, 0.5, 0.8, True),
    ("hinge", 2, [3, 2], np.inf, 2.0, 1.5, True),
    ("smooth_hinge", 1, [2, 2], 2, 1.0, 0.5, False),
    ("smooth_hinge", 3, [], 1, 1.0, np.inf, True),
    ("huber", 2, [2, 3], 1, 0.5, np.inf, True),
    ("huber", 2, [2, 3], 2, 1.0, 0.3, False),
    ("pinball", 2, [3, 2], np.inf, 2.0, 0.5, True),
    ("epsilon_insensitive", 1, [2, 2], 1, 1.0, 2.0, False),
    ("absolute", 2, [2, 3], 2, 1.0, 0.2, True),
    ("absolute", 0, [2, 3], 1, 1.0, 0.2, True),
    ("hinge", 0, [2, 3], 1, 0.5, 1.0, True),
]


@pytest.mark.parametrize("case", EXPLICIT_CASES)
def test_explicit_primal_distribution_attains_dual(case):
    loss, n, levels, p, cat_p, kappa, weighted = case
    task, par = TASK[loss], LOSS_PARAMS[loss]
    X, Z, y = bf.random_instance(21, 6, n, levels, task)
    gamma = np.linspace(0.6, 1.8, n) if weighted else np.ones(n)
    delta = np.linspace(0.4, 1.2, len(levels)) if weighted else np.ones(len(levels))
    kw = dict(task=task, loss=loss, loss_param=par, norm_p=p, gamma=gamma, delta=delta,
              cat_p=cat_p, kappa=kappa)
    rng = np.random.default_rng(7)
    c = sum(a - 1 for a in levels)
    opt = bf.dro_value(X, Z, levels, y, radius=0.4, **kw)
    for beta in [_rand_beta(rng, n, c), _rand_beta(rng, n, c, 0.3), _beta(opt)]:
        for eps in (0.05, 0.4, 2.5):
            wc = bf.worst_case_risk(beta, X, Z, levels, y, radius=eps, **kw)
            EQ, W = explicit_worst_case(beta, X, Z, levels, y, radius=eps, **kw)
            assert W <= eps * (1 + 1e-9) + 1e-12  # Q is in the ball
            assert EQ <= wc + 1e-7 * max(1, wc)  # weak duality
            assert EQ >= wc - 2e-6 * max(1, wc)  # and the dual value is attained


# ----------------------------------------------------------------------------------------
# D2 item 5: single-sample closed form
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", bf.ALL_LOSSES)
def test_single_sample_closed_form(loss):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    rng = np.random.default_rng(1 + bf.ALL_LOSSES.index(loss))
    maxerr = 0.0
    for _ in range(20):
        beta = (rng.normal(), rng.normal(size=1) * 1.5, rng.normal(size=1) * 3)
        x1 = rng.normal() * 2
        y1 = rng.choice([-1.0, 1.0]) if task == "classification" else rng.normal()
        kz = rng.uniform(0.2, 2.0)
        g = rng.uniform(0.5, 2.0)
        for eps in (0.3 * kz, kz * 1.7, 0.05):
            cf = bf.single_sample_closed_form(beta, x1, y1, task=task, loss=loss, loss_param=par,
                                              radius=eps, kappa_z=kz, gamma=g)
            wc = bf.worst_case_risk(beta, np.array([[x1]]), np.array([[0]]), [2], np.array([y1]),
                                    task=task, loss=loss, loss_param=par, radius=eps, norm_p=1,
                                    gamma=[g], delta=[kz], cat_p=rng.choice([0.5, 1.0, 2.0]))
            maxerr = max(maxerr, abs(cf - wc) / max(1.0, abs(cf)))
    assert maxerr < 1e-8, maxerr


def test_single_sample_theorem2_witness_depends_on_x():
    """D2 item 6: with eps > kappa_z, WC-risk - a varies with x^1 at fixed beta."""
    beta = (0.0, np.array([0.5]), np.array([-3.0]))
    vals = []
    for x1 in (0.0, -20.0):
        wc = bf.worst_case_risk(beta, np.array([[x1]]), np.array([[0]]), [2], np.array([1.0]),
                                task="classification", loss="logistic", radius=2.0, delta=[1.0])
        a = float(bf.loss_value("logistic", 0.5 * x1))
        vals.append(wc - a)
    assert abs(vals[0] - vals[1]) > 1e-2


# ----------------------------------------------------------------------------------------
# worst-case risk at the optimum == optimal value
# ----------------------------------------------------------------------------------------
WCR_CASES = [
    ("logistic", 2, [2, 3, 2], 1, 1.0, np.inf, False, True),
    ("logistic", 1, [2, 3], 2, 0.5, 1.0, True, True),
    ("hinge", 2, [2, 3, 2], np.inf, 2.0, 0.7, True, True),
    ("smooth_hinge", 2, [3, 2], 2, 1.0, np.inf, True, False),
    ("huber", 2, [2, 3, 2], 1, 0.5, 1.0, True, True),
    ("pinball", 1, [2, 3], np.inf, 1.0, np.inf, False, True),
    ("epsilon_insensitive", 2, [3, 2], 2, 2.0, 0.5, True, True),
    ("absolute", 0, [2, 3, 2], 1, 1.0, 2.0, False, False),
]


@pytest.mark.parametrize("case", WCR_CASES)
def test_worst_case_risk_at_optimum_equals_value(case):
    loss, n, levels, p, cat_p, kappa, weighted, fit_intercept = case
    task, par = TASK[loss], LOSS_PARAMS[loss]
    X, Z, y = bf.random_instance(2, 8, n, levels, task)
    gamma = np.linspace(0.5, 2.0, n) if weighted else None
    delta = np.array([0.7, 1.4, 0.3][: len(levels)]) if weighted else None
    kw = dict(task=task, loss=loss, loss_param=par, radius=0.25, norm_p=p, gamma=gamma,
              delta=delta, cat_p=cat_p, kappa=kappa)
    r = bf.dro_value(X, Z, levels, y, fit_intercept=fit_intercept, **kw)
    if not fit_intercept:
        assert abs(r["b0"]) < 1e-9
    wc = bf.worst_case_risk(_beta(r), X, Z, levels, y, **kw)
    assert close(wc, r["value"], 1e-6)
    # and the reported lambda satisfies the dual-norm constraint
    lm = bf.lambda_min(r["bx"], task=task, loss=loss, loss_param=par,
                       gamma=np.ones(n) if gamma is None else gamma, norm_p=p, kappa=kappa)
    assert r["lam"] >= lm - 1e-7


# ----------------------------------------------------------------------------------------
# D2 item 3: primal transport LP (n = 0) == dual
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", CLS)
@pytest.mark.parametrize("kappa", [np.inf, 0.6, 2.0])
@pytest.mark.parametrize("cat_p", [0.5, 1.0, 2.0])
def test_primal_lp_equals_dual_categorical_only(loss, kappa, cat_p):
    levels = [2, 3, 2]
    X, Z, y = bf.random_instance(8, 7, 0, levels, "classification")
    N = len(y)
    delta = np.array([0.5, 1.0, 1.7])
    kw = dict(task="classification", loss=loss, delta=delta, cat_p=cat_p, kappa=kappa)
    rng = np.random.default_rng(1)
    opt = bf.dro_value(X, Z, levels, y, radius=0.3, **kw)
    for beta in [_rand_beta(rng, 0, 4), _beta(opt)]:
        for eps in (0.1, 0.3, 3.0):
            val, pi = bf.worst_case_primal_lp(beta, Z, levels, y, radius=eps, **kw)
            wc = bf.worst_case_risk(beta, X, Z, levels, y, radius=eps, **kw)
            assert close(val, wc, 1e-7, 1e-8)
            assert np.all(pi >= -1e-12)
            np.testing.assert_allclose(pi.sum(axis=(1, 2)), 1.0 / N, atol=1e-10)
            assert (pi > 1e-12).sum() <= N + 1  # vertex: at most N + 1 atoms
            if np.isinf(kappa):
                assert np.all(pi[:, :, 1] == 0)
    assert close(bf.worst_case_risk(_beta(opt), X, Z, levels, y, radius=0.3, **kw),
                 opt["value"], 1e-6)


def test_primal_lp_immutable_feature_gets_no_mass():
    levels = [2, 3]
    X, Z, y = bf.random_instance(4, 6, 0, levels, "classification")
    configs = bf.all_configurations(levels)
    beta = (0.2, np.zeros(0), np.array([2.0, -1.0, 1.5]))
    _, pi = bf.worst_case_primal_lp(beta, Z, levels, y, loss="hinge", radius=5.0,
                                    delta=[np.inf, 1.0], kappa=1.0)
    for i in range(len(y)):
        moved = configs[:, 0] != Z[i, 0]
        assert np.all(pi[i, moved, :] == 0)


# ----------------------------------------------------------------------------------------
# limits, monotonicity, invariances (D2 items 10, 11)
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["logistic", "hinge", "huber", "pinball"])
def test_monotone_in_radius(loss):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    levels = [2, 3]
    X, Z, y = bf.random_instance(13, 7, 2, levels, task)
    kw = dict(task=task, loss=loss, loss_param=par, norm_p=2, delta=[0.5, 1.0], kappa=1.0)
    vals = [bf.dro_value(X, Z, levels, y, radius=e, **kw)["value"]
            for e in (0.0, 0.01, 0.05, 0.2, 0.5, 1.5)]
    assert all(b >= a - 1e-7 for a, b in zip(vals, vals[1:])), vals
    assert vals[-1] > vals[0] + 1e-3


@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge", "epsilon_insensitive", "absolute"])
def test_cost_scaling(loss):
    """Value non-increasing when all costs grow; homogeneity (costs*c, eps*c) invariant."""
    task, par = TASK[loss], LOSS_PARAMS[loss]
    levels = [2, 3]
    X, Z, y = bf.random_instance(17, 7, 2, levels, task)
    gamma, delta, kappa = np.array([0.8, 1.5]), np.array([0.6, 1.1]), 0.9
    base = dict(task=task, loss=loss, loss_param=par, norm_p=1, cat_p=0.5)
    v = lambda c, eps: bf.dro_value(X, Z, levels, y, radius=eps, gamma=c * gamma,
                                    delta=c * delta, kappa=c * kappa, **base)["value"]
    v1, v2, v4 = v(1.0, 0.3), v(2.0, 0.3), v(4.0, 0.3)
    assert v2 <= v1 + 1e-7 and v4 <= v2 + 1e-7
    assert v4 < v1 - 1e-4
    assert close(v(2.5, 0.75), v1, 1e-6)


@pytest.mark.parametrize("loss", ["logistic", "hinge", "huber", "pinball"])
def test_reference_level_invariance(loss):
    task, par = TASK[loss], LOSS_PARAMS[loss]
    levels = [2, 3, 2]
    X, Z, y = bf.random_instance(23, 8, 1, levels, task)
    kw = dict(task=task, loss=loss, loss_param=par, radius=0.2, norm_p=2,
              delta=[0.7, 1.2, 0.9], cat_p=2.0, kappa=1.3)
    v0 = bf.dro_value(X, Z, levels, y, **kw)["value"]
    for l, k in [(1, 1), (1, 2), (0, 1), (2, 1)]:
        Z2 = Z.copy()
        a, b = Z[:, l] == 0, Z[:, l] == k
        Z2[a, l], Z2[b, l] = k, 0  # swap codes 0 and k: level k becomes the reference
        assert close(bf.dro_value(X, Z2, levels, y, **kw)["value"], v0, 1e-6)


def test_infinite_costs_are_limits_of_large_costs():
    levels = [2, 3]
    X, Z, y = bf.random_instance(31, 8, 2, levels, "regression")
    kw = dict(task="regression", loss="huber", loss_param=0.7, radius=0.3, norm_p=2)
    # immutable categorical feature
    vi = bf.dro_value(X, Z, levels, y, delta=[np.inf, 1.0], kappa=np.inf, **kw)["value"]
    vl = bf.dro_value(X, Z, levels, y, delta=[1e5, 1.0], kappa=np.inf, **kw)["value"]
    assert close(vi, vl, 1e-6)
    # label cost
    vk = bf.dro_value(X, Z, levels, y, kappa=1e5, **kw)["value"]
    assert close(bf.dro_value(X, Z, levels, y, kappa=np.inf, **kw)["value"], vk, 1e-6)
    # immutable numerical feature
    vg = bf.dro_value(X, Z, levels, y, gamma=[np.inf, 1.0], **kw)["value"]
    vG = bf.dro_value(X, Z, levels, y, gamma=[1e6, 1.0], **kw)["value"]
    assert close(vg, vG, 1e-5)
    assert vg <= bf.dro_value(X, Z, levels, y, gamma=[1.0, 1.0], **kw)["value"] + 1e-7


def test_classification_kappa_inf_limit_and_cat_p_irrelevant_for_one_feature():
    X, Z, y = bf.random_instance(3, 7, 1, [3], "classification")
    kw = dict(task="classification", loss="logistic", radius=0.3, norm_p=1)
    assert close(bf.dro_value(X, Z, [3], y, kappa=1e5, **kw)["value"],
                 bf.dro_value(X, Z, [3], y, kappa=np.inf, **kw)["value"], 1e-6)
    vals = [bf.dro_value(X, Z, [3], y, cat_p=q, delta=[0.8], **kw)["value"] for q in (0.5, 1, 2)]
    assert close(vals[0], vals[1], 1e-6) and close(vals[1], vals[2], 1e-6)


def test_erm_limit_logistic_matches_lbfgs():
    levels = [2]
    X, Z, y = bf.nonseparable_instance(8, 1, levels)
    r = bf.dro_value(X, Z, levels, y, task="classification", loss="logistic", radius=0.0)
    assert r["lam"] is None
    v, w = bf.erm_lbfgs_logistic(bf.design_matrix(X, Z, levels), y)
    assert close(r["value"], v, 1e-7)
    np.testing.assert_allclose(np.concatenate(([r["b0"]], r["bx"], r["bz"])), w, atol=1e-4)
    # tiny radius is close to ERM from above
    r2 = bf.dro_value(X, Z, levels, y, task="classification", loss="logistic", radius=1e-6)
    assert v - 1e-8 <= r2["value"] <= v + 1e-4
    # worst_case_risk at radius 0 is the empirical risk
    assert close(bf.worst_case_risk(_beta(r), X, Z, levels, y, task="classification",
                                    loss="logistic", radius=0.0), v, 1e-7)
