"""Independent brute-force reference for mixed-feature Wasserstein DRO linear models.

Written from the mathematics only (belbasi2023 Prop. 1 / Prop. 3, sun2025 Lemma 2 and
Theorem 1), NOT from drokit's source: every categorical configuration is enumerated
explicitly, so this is only usable on tiny instances.

Model
-----
Data ``X_num`` (N, n) floats, ``Z`` (N, m) integer codes with ``levels = [a_1..a_m]``,
labels ``y`` (+-1 for classification, real for regression).  Dummy coding: feature l has
a_l - 1 binary columns, code c > 0 sets column c-1 of its block, code 0 (reference) is
all zeros.  f(x, z) = b0 + bx^T x + bz^T onehot(z).

Ground cost
    d = ||Gamma (x - x')||_p + D(z, z') + label cost,
    D(z, z') = (sum_l delta_l^q 1[z_l != z'_l])^(1/q),  q = cat_p > 0,
    or, with per-feature level costs ``units`` (U_l an (a_l, a_l) matrix, zero diagonal, e.g. the
    rank distances |r(v) - r(v')| of an ordinal feature),
    D(z, z') = (sum_l (delta_l U_l[z_l, z'_l])^q)^(1/q),
    label cost = kappa 1[y != y'] (classification) or kappa |y - y'| (regression).
gamma_j = inf / delta_l = inf / kappa = inf mean "cannot move".

Loss names: logistic, hinge, smooth_hinge (classification, e = y f);
huber (loss_param = delta), pinball (loss_param = tau), epsilon_insensitive
(loss_param = tau), absolute (regression, e = f - y).

Conventions (documented choices):
* radius == 0 means plain ERM (no metric at all): ``dro_value`` and ``worst_case_risk``
  return the nominal empirical risk, even if some delta_l == 0 would allow free moves.
  ``worst_case_primal_lp`` is the literal transport LP and does not short-circuit.
* ``gamma_j = inf`` removes coordinate j from the dual norm (its coefficient is free).
"""

from __future__ import annotations

import itertools
import warnings

import cvxpy as cp
import numpy as np
from scipy.optimize import linprog, minimize

CLASSIFICATION_LOSSES = ("logistic", "hinge", "smooth_hinge")
REGRESSION_LOSSES = ("huber", "pinball", "epsilon_insensitive", "absolute")
ALL_LOSSES = CLASSIFICATION_LOSSES + REGRESSION_LOSSES
_PARAM_LOSSES = ("huber", "pinball", "epsilon_insensitive")


# --------------------------------------------------------------------------------------
# losses
# --------------------------------------------------------------------------------------
def _check_loss(loss, loss_param):
    if loss not in ALL_LOSSES:
        raise ValueError(f"unknown loss {loss!r}")
    if loss in _PARAM_LOSSES:
        if loss_param is None:
            raise ValueError(f"loss {loss!r} needs loss_param")
        loss_param = float(loss_param)
        if loss == "huber" and not loss_param > 0:
            raise ValueError("huber delta must be > 0")
        if loss == "pinball" and not 0 <= loss_param <= 1:
            raise ValueError("pinball tau must be in [0, 1]")
        if loss == "epsilon_insensitive" and not loss_param >= 0:
            raise ValueError("epsilon_insensitive tau must be >= 0")
    return loss_param


def loss_value(loss, e, loss_param=None):
    """Numpy evaluation of L(e), written piecewise from the definitions."""
    loss_param = _check_loss(loss, loss_param)
    e = np.asarray(e, dtype=float)
    if loss == "logistic":
        return np.logaddexp(0.0, -e)
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - e)
    if loss == "smooth_hinge":
        return np.where(e <= 0, 0.5 - e, np.where(e < 1, 0.5 * (1.0 - e) ** 2, 0.0))
    if loss == "huber":
        d = loss_param
        return np.where(np.abs(e) <= d, 0.5 * e**2, d * (np.abs(e) - 0.5 * d))
    if loss == "pinball":
        t = loss_param
        return np.maximum(-t * e, (1.0 - t) * e)
    if loss == "epsilon_insensitive":
        return np.maximum(np.abs(e) - loss_param, 0.0)
    if loss == "absolute":
        return np.abs(e)
    raise AssertionError


def loss_lip(loss, loss_param=None):
    """Lipschitz modulus lip(L)."""
    loss_param = _check_loss(loss, loss_param)
    if loss == "huber":
        return loss_param
    if loss == "pinball":
        return max(loss_param, 1.0 - loss_param)
    return 1.0


def loss_asymptotic_slopes(loss, loss_param=None):
    """(|slope| as e -> -inf, slope as e -> +inf); max of the two is lip(L)."""
    loss_param = _check_loss(loss, loss_param)
    if loss in CLASSIFICATION_LOSSES:
        return 1.0, 0.0
    if loss == "huber":
        return loss_param, loss_param
    if loss == "pinball":
        return loss_param, 1.0 - loss_param
    return 1.0, 1.0


def cvx_loss(loss, e, loss_param=None):
    """cvxpy expression of L(e) (elementwise), built from cvxpy atoms directly."""
    loss_param = _check_loss(loss, loss_param)
    if loss == "logistic":
        return cp.logistic(-e)  # log(1 + exp(-e))
    if loss == "hinge":
        return cp.pos(1 - e)
    if loss == "smooth_hinge":
        # u = 1 - e;  L = 0 (u <= 0), u^2/2 (0 < u < 1), u - 1/2 (u >= 1)
        # = huber(pos(u), 1) / 2 with cvxpy's huber(x, 1) = x^2 | 2|x| - 1.
        return 0.5 * cp.huber(cp.pos(1 - e), 1.0)
    if loss == "huber":
        # cvxpy huber(x, M) = x^2 (|x| <= M) else 2 M |x| - M^2  == 2 * our huber
        return 0.5 * cp.huber(e, loss_param)
    if loss == "pinball":
        return cp.maximum(-loss_param * e, (1.0 - loss_param) * e)
    if loss == "epsilon_insensitive":
        return cp.pos(cp.abs(e) - loss_param)
    if loss == "absolute":
        return cp.abs(e)
    raise AssertionError


# --------------------------------------------------------------------------------------
# encoding / metric
# --------------------------------------------------------------------------------------
def _dual_exponent(p):
    if p == 1:
        return np.inf
    if p == 2:
        return 2.0
    if np.isinf(p):
        return 1.0
    raise ValueError("norm_p must be 1, 2 or inf")


def encode(Z, levels):
    """Dummy coding (N, m) codes -> (N, sum(a_l - 1)) with code 0 = all zeros."""
    levels = [int(a) for a in levels]
    Z = np.asarray(Z, dtype=int).reshape(-1, len(levels)) if levels else np.zeros(
        (np.asarray(Z).shape[0] if np.asarray(Z).ndim else 0, 0), dtype=int)
    blocks = []
    for l, a in enumerate(levels):
        if a < 2:
            raise ValueError("each categorical feature needs >= 2 levels")
        if Z.size and (Z[:, l].min() < 0 or Z[:, l].max() >= a):
            raise ValueError(f"codes of feature {l} outside 0..{a - 1}")
        block = np.zeros((Z.shape[0], a - 1))
        for c in range(1, a):
            block[:, c - 1] = Z[:, l] == c
        blocks.append(block)
    return np.hstack(blocks) if blocks else np.zeros((Z.shape[0], 0))


def all_configurations(levels):
    """Every z in the full product of levels, shape (prod a_l, m)."""
    if len(levels) == 0:
        return np.zeros((1, 0), dtype=int)
    return np.array(list(itertools.product(*[range(int(a)) for a in levels])), dtype=int)


def categorical_distance(z, zp, delta, cat_p, units=None):
    """D(z, z') = (sum_l delta_l^q 1[z_l != z'_l])^(1/q); inf if an immutable feature differs.

    ``units``: optional list of per-feature level-cost matrices U_l; the term of feature l is then
    (delta_l U_l[z_l, z'_l])^q instead of delta_l^q (U_l = 1 - I is the mismatch cost)."""
    z = np.asarray(z)
    zp = np.asarray(zp)
    mism = z != zp
    if not mism.any():
        return 0.0
    d = np.asarray(delta, dtype=float)[mism]
    if np.any(np.isinf(d)):
        return np.inf
    if units is not None:
        d = d * np.array([units[l][z[l], zp[l]] for l in np.flatnonzero(mism)], dtype=float)
    return float(np.sum(d**cat_p) ** (1.0 / cat_p))


def numerical_cost(x, xp, gamma, norm_p):
    """||Gamma (x - x')||_p with gamma_j = inf meaning coordinate j is immutable."""
    diff = np.asarray(x, float) - np.asarray(xp, float)
    gamma = np.asarray(gamma, float)
    if diff.size == 0:
        return 0.0
    if np.any(np.isinf(gamma) & (diff != 0)):
        return np.inf
    scaled = np.where(np.isinf(gamma), 0.0, gamma * diff)
    return float(np.linalg.norm(scaled, ord=norm_p))


def ground_cost(x, z, y, xp, zp, yp, *, task, gamma, delta, cat_p, kappa, norm_p):
    """Full ground cost d((x,z,y),(x',z',y')) evaluated directly."""
    c = numerical_cost(x, xp, gamma, norm_p) + categorical_distance(z, zp, delta, cat_p)
    if task == "classification":
        if y != yp:
            c += kappa
    else:
        if y != yp:
            c += kappa * abs(y - yp)
    return c


def dual_norm_weighted(bx, gamma, norm_p):
    """||Gamma^{-1} bx||_{p*} (coordinates with gamma = inf dropped)."""
    bx = np.asarray(bx, float)
    if bx.size == 0:
        return 0.0
    gamma = np.asarray(gamma, float)
    v = np.where(np.isinf(gamma), 0.0, bx / gamma)
    return float(np.linalg.norm(v, ord=_dual_exponent(norm_p)))


def lambda_min(bx, *, task, loss, loss_param, gamma, norm_p, kappa):
    lip = loss_lip(loss, loss_param)
    lm = lip * dual_norm_weighted(bx, gamma, norm_p)
    if task == "regression" and np.isfinite(kappa):
        lm = max(lm, lip / kappa)
    return lm


# --------------------------------------------------------------------------------------
# argument normalisation and scenario enumeration
# --------------------------------------------------------------------------------------
def _prepare(X_num, Z, levels, y, task, gamma, delta, cat_p, kappa, norm_p):
    if task not in ("classification", "regression"):
        raise ValueError("task must be 'classification' or 'regression'")
    y = np.asarray(y, dtype=float).ravel()
    N = y.size
    levels = [int(a) for a in (levels if levels is not None else [])]
    m = len(levels)
    X_num = np.asarray(X_num if X_num is not None else np.zeros((N, 0)), float).reshape(N, -1)
    n = X_num.shape[1]
    Z = np.asarray(Z if Z is not None else np.zeros((N, 0)), dtype=int).reshape(N, m)
    gamma = np.ones(n) if gamma is None else np.asarray(gamma, float).reshape(n)
    delta = np.ones(m) if delta is None else np.asarray(delta, float).reshape(m)
    if np.any(gamma <= 0):
        raise ValueError("gamma must be in (0, inf]")
    if np.any(delta < 0):
        raise ValueError("delta must be in [0, inf]")
    if not cat_p > 0:
        raise ValueError("cat_p must be > 0")
    if not kappa > 0:
        raise ValueError("kappa must be in (0, inf]")
    _dual_exponent(norm_p)
    if task == "classification" and not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("classification labels must be +-1")
    return X_num, Z, levels, y, gamma, delta, float(cat_p), float(kappa)


def _scenarios(X_num, Z, levels, y, task, delta, cat_p, kappa, nominal_only=False, units=None):
    """Rows (n, z, flip): design row a, sign sigma, offset o, cost c, so e = sigma a.beta + o.

    Returns dict with arrays idx (R,), A (R, 1+n+c), sigma (R,), off (R,), cost (R,),
    conf (R,) index into all_configurations(levels), flip (R,) bool.
    """
    N = y.size
    configs = all_configurations(levels)
    onehots = encode(configs, levels)
    Zoh = encode(Z, levels)
    rows = dict(idx=[], A=[], sigma=[], off=[], cost=[], conf=[], flip=[])
    for i in range(N):
        if nominal_only:
            # nominal scenario only (ERM)
            cand = [(None, Zoh[i], 0.0)]
        else:
            cand = []
            for k, z in enumerate(configs):
                D = categorical_distance(Z[i], z, delta, cat_p, units)     # from the sample's levels to z
                if np.isinf(D):
                    continue
                cand.append((k, onehots[k], D))
        for k, oh, D in cand:
            a = np.concatenate(([1.0], X_num[i], oh))
            if task == "classification":
                flips = [False] + ([True] if (np.isfinite(kappa) and not nominal_only) else [])
                for fl in flips:
                    rows["idx"].append(i)
                    rows["A"].append(a)
                    rows["sigma"].append(-y[i] if fl else y[i])
                    rows["off"].append(0.0)
                    rows["cost"].append(D + (kappa if fl else 0.0))
                    rows["conf"].append(-1 if k is None else k)
                    rows["flip"].append(fl)
            else:
                rows["idx"].append(i)
                rows["A"].append(a)
                rows["sigma"].append(1.0)
                rows["off"].append(-y[i])
                rows["cost"].append(D)
                rows["conf"].append(-1 if k is None else k)
                rows["flip"].append(False)
    out = {key: np.asarray(val) for key, val in rows.items()}
    out["A"] = out["A"].reshape(len(out["idx"]), -1)
    out["idx"] = out["idx"].astype(int)
    return out


# --------------------------------------------------------------------------------------
# the DRO problem by full enumeration
# --------------------------------------------------------------------------------------
def dro_value(X_num, Z, levels, y, *, task, loss, loss_param=None, radius, norm_p=1,
              gamma=None, delta=None, cat_p=1.0, kappa=np.inf, fit_intercept=True,
              solver_opts=None, units=None, l1_penalty=0.0, l2_penalty=0.0):
    """Optimal value of min_beta sup_{W_1(Q, P_N) <= radius} E_Q[loss] by enumeration (plus
    ``l1_penalty ||beta||_1 + l2_penalty ||beta||_2^2`` over every coefficient but the intercept).

    Returns dict(value, b0, bx, bz, lam, s, status).  lam is None when radius == 0 (ERM).
    ``units``: optional per-feature level-cost matrices (see :func:`categorical_distance`).
    """
    loss_param = _check_loss(loss, loss_param)
    X_num, Z, levels, y, gamma, delta, cat_p, kappa = _prepare(
        X_num, Z, levels, y, task, gamma, delta, cat_p, kappa, norm_p)
    eps = float(radius)
    if eps < 0:
        raise ValueError("radius must be >= 0")
    N, n = X_num.shape
    c = sum(a - 1 for a in levels)
    erm = eps == 0.0
    sc = _scenarios(X_num, Z, levels, y, task, delta, cat_p, kappa, nominal_only=erm, units=units)

    beta = cp.Variable(1 + n + c)
    e = cp.multiply(sc["sigma"], sc["A"] @ beta) + sc["off"]
    Lr = cvx_loss(loss, e, loss_param)
    cons = []
    if not fit_intercept:
        cons.append(beta[0] == 0)
    if erm:
        # nominal rows are ordered by sample, exactly one per sample
        objective = cp.sum(Lr) / N
        lam = None
        s = None
    else:
        lam = cp.Variable(nonneg=True)
        s = cp.Variable(N)
        cons.append(Lr - lam * sc["cost"] <= s[sc["idx"]])
        lip = loss_lip(loss, loss_param)
        if n > 0:
            w = np.where(np.isinf(gamma), 0.0, 1.0 / gamma)
            if np.any(w > 0):
                cons.append(lip * cp.norm(cp.multiply(w, beta[1:1 + n]),
                                          _dual_exponent(norm_p)) <= lam)
        if task == "regression" and np.isfinite(kappa):
            cons.append(lip <= lam * kappa)
        objective = lam * eps + cp.sum(s) / N
    if l1_penalty:
        objective = objective + l1_penalty * cp.norm1(beta[1:])
    if l2_penalty:
        objective = objective + l2_penalty * cp.sum_squares(beta[1:])
    prob = cp.Problem(cp.Minimize(objective), cons)
    # Degenerate optima (e.g. beta = 0 for logistic at a large radius) can make Clarabel
    # stop at "AlmostSolved"; retry with slightly looser / unequilibrated settings.
    attempts = [solver_opts or {}] if solver_opts is not None else [
        {},
        dict(tol_gap_abs=1e-7, tol_gap_rel=1e-7, tol_feas=1e-7),
        dict(equilibrate_enable=False),
        dict(equilibrate_enable=False, tol_gap_abs=1e-7, tol_gap_rel=1e-7, tol_feas=1e-7),
    ]
    for opts in attempts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            try:
                prob.solve(solver=cp.CLARABEL, **opts)
            except cp.error.SolverError:
                continue
        if prob.status == cp.OPTIMAL:
            break
    if prob.status != cp.OPTIMAL:
        raise RuntimeError(f"reference solve failed: status {prob.status}")
    bv = np.asarray(beta.value, float)
    return dict(
        value=float(prob.value),
        b0=float(bv[0]),
        bx=bv[1:1 + n].copy(),
        bz=bv[1 + n:].copy(),
        lam=None if lam is None else float(lam.value),
        s=None if s is None else np.asarray(s.value, float).copy(),
        status=prob.status,
    )


def _unpack_beta(beta, n, c):
    b0, bx, bz = beta
    bx = np.asarray(bx, float).reshape(n)
    bz = np.asarray(bz, float).reshape(c)
    return np.concatenate(([float(b0)], bx, bz))


def scenario_losses(beta, X_num, Z, levels, y, *, task, loss, loss_param=None,
                    delta=None, cat_p=1.0, kappa=np.inf, nominal_only=False, units=None):
    """(scenarios dict, loss per scenario) for fixed beta = (b0, bx, bz)."""
    loss_param = _check_loss(loss, loss_param)
    X_num, Z, levels, y, _, delta, cat_p, kappa = _prepare(
        X_num, Z, levels, y, task, None, delta, cat_p, kappa, 1)
    n = X_num.shape[1]
    c = sum(a - 1 for a in levels)
    bvec = _unpack_beta(beta, n, c)
    sc = _scenarios(X_num, Z, levels, y, task, delta, cat_p, kappa, nominal_only=nominal_only,
                    units=units)
    e = sc["sigma"] * (sc["A"] @ bvec) + sc["off"]
    return sc, loss_value(loss, e, loss_param)


def worst_case_risk(beta, X_num, Z, levels, y, *, task, loss, loss_param=None, radius,
                    norm_p=1, gamma=None, delta=None, cat_p=1.0, kappa=np.inf,
                    fit_intercept=True, return_lambda=False, units=None):
    """sup_{W_1(Q,P_N) <= radius} E_Q[l_beta] for FIXED beta = (b0, bx, bz).

    = min_{lam >= lam_min} lam*eps + mean_n max_{z, flip}(l_{n,z,flip} - lam (D + kappa flip))
    solved as an LP with HiGHS.  ``fit_intercept`` is accepted for signature symmetry
    and ignored (b0 is part of beta).  radius == 0 returns the nominal empirical risk.
    ``units``: optional per-feature level-cost matrices (see :func:`categorical_distance`).
    """
    loss_param = _check_loss(loss, loss_param)
    X_num, Z, levels, y, gamma, delta, cat_p, kappa = _prepare(
        X_num, Z, levels, y, task, gamma, delta, cat_p, kappa, norm_p)
    eps = float(radius)
    N, n = X_num.shape
    if eps == 0.0:
        _, l_nom = scenario_losses(beta, X_num, Z, levels, y, task=task, loss=loss,
                                   loss_param=loss_param, delta=delta, cat_p=cat_p,
                                   kappa=kappa, nominal_only=True)
        val = float(np.mean(l_nom))
        return (val, None) if return_lambda else val
    sc, lr = scenario_losses(beta, X_num, Z, levels, y, task=task, loss=loss,
                             loss_param=loss_param, delta=delta, cat_p=cat_p, kappa=kappa,
                             units=units)
    lm = lambda_min(np.asarray(beta[1], float).reshape(n), task=task, loss=loss,
                    loss_param=loss_param, gamma=gamma, norm_p=norm_p, kappa=kappa)
    R = lr.size
    # variables [lam, t_1..t_N];  -cost_r*lam - t_{n_r} <= -l_r
    A_ub = np.zeros((R, 1 + N))
    A_ub[:, 0] = -sc["cost"]
    A_ub[np.arange(R), 1 + sc["idx"]] = -1.0
    b_ub = -lr
    cvec = np.concatenate(([eps], np.full(N, 1.0 / N)))
    bounds = [(lm, None)] + [(None, None)] * N
    res = linprog(cvec, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"worst_case_risk LP failed: {res.message}")
    # the LP's value and lambda hold only to HiGHS's tolerances (1e-7): on fuzz seed 122769 (lambda* ~ 3e-7) the value
    # sat 2.9e-8 below the exact risk and F at its lambda 2.8e-8 above.  F(lam) = lam eps + mean_n max_r (l_r - lam
    # c_r) is evaluated exactly at the LP's lambda and at the kinks near it (each sample's maximizer there tying
    # with another of its rows, within 1e-5 relative): the smallest is the risk (F is convex and piecewise linear, its minimum at a kink
    # or at lam_min), and every value is F at a feasible lambda, never below the risk
    idx, cost = sc["idx"], sc["cost"]

    def F(lam_):
        top = np.full(N, -np.inf)
        np.maximum.at(top, idx, lr - lam_ * cost)
        return float(lam_ * eps + np.mean(top))

    lam_lp = max(float(res.x[0]), float(lm))
    value = lr - lam_lp * cost
    top = np.full(N, -np.inf)
    np.maximum.at(top, idx, value)
    first = np.full(N, lr.size)              # each sample's first maximizing row at the LP's lambda
    ties = np.flatnonzero(value >= top[idx] - 1e-12 * max(1.0, float(np.max(np.abs(top)))))
    np.minimum.at(first, idx[ties], ties)
    own = first[idx]
    differ = cost != cost[own]
    kinks = (lr[differ] - lr[own[differ]]) / (cost[differ] - cost[own[differ]])
    near = (kinks >= lm) & (np.abs(kinks - lam_lp) <= 1e-5 * max(1.0, lam_lp))     # the LP's lambda is 1e-7 off
    candidates = np.unique(np.concatenate([[lam_lp, float(lm)], kinks[near]]))
    values = np.array([F(c) for c in candidates])
    best = int(np.argmin(values))
    val, lam = float(values[best]), float(candidates[best])
    return (val, lam) if return_lambda else val


def worst_case_primal_lp(beta, Z, levels, y, *, task="classification", loss,
                         loss_param=None, radius, delta=None, cat_p=1.0, kappa=np.inf):
    """Primal transport LP for n = 0 (no numerical features).

    max_{pi >= 0} sum pi_{n,(z,y')} l(z, y')  s.t.  sum_{(z,y')} pi_{n,.} = 1/N,
    sum pi d <= eps.  Atoms: every z with finite D and y' in {y_n} (+ {-y_n} when
    kappa < inf).  Returns (value, pi) with pi of shape (N, prod(levels), 2): [..., 0]
    keeps the label, [..., 1] flips it; unavailable atoms are 0.  beta = (b0, bx, bz)
    with bx empty (or beta = (b0, bz)).
    """
    loss_param = _check_loss(loss, loss_param)
    if task != "classification" and np.isfinite(kappa):
        raise ValueError("primal LP is finite only for classification or kappa = inf")
    y = np.asarray(y, float).ravel()
    N = y.size
    if len(beta) == 2:
        beta = (beta[0], np.zeros(0), beta[1])
    if np.asarray(beta[1]).size != 0:
        raise ValueError("worst_case_primal_lp is only for n = 0")
    X_num = np.zeros((N, 0))
    sc, lr = scenario_losses(beta, X_num, Z, levels, y, task=task, loss=loss,
                             loss_param=loss_param, delta=delta, cat_p=cat_p, kappa=kappa)
    R = lr.size
    A_eq = np.zeros((N, R))
    A_eq[sc["idx"], np.arange(R)] = 1.0
    b_eq = np.full(N, 1.0 / N)
    A_ub = sc["cost"].reshape(1, R)
    b_ub = np.array([float(radius)])
    res = linprog(-lr, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                  bounds=[(0, None)] * R, method="highs-ds")
    if res.status != 0:
        raise RuntimeError(f"primal LP failed: {res.message}")
    n_conf = all_configurations(levels).shape[0]
    pi = np.zeros((N, n_conf, 2))
    pi[sc["idx"], sc["conf"], sc["flip"].astype(int)] = res.x
    return float(-res.fun), pi


def single_sample_closed_form(beta, x1, y1, *, task, loss, loss_param=None, radius,
                              kappa_z, gamma=1.0):
    """Spec D2 item 5: N = 1, one numerical feature, one binary categorical feature with
    z^1 = 0, cost gamma |x - x'| + kappa_z 1[z != z'], kappa_y = inf.

    WC = a + eps lam0 + min(1, eps/kappa_z) max(0, b - a - kappa_z lam0),
    a = l(x1, 0, y1), b = l(x1, 1, y1), lam0 = lip |bx| / gamma.
    beta = (b0, bx, bz) with scalar (or length-1) bx, bz.
    """
    b0 = float(beta[0])
    bx = float(np.asarray(beta[1]).ravel()[0])
    bz = float(np.asarray(beta[2]).ravel()[0])
    f0 = b0 + bx * x1
    f1 = f0 + bz
    if task == "classification":
        a, b = loss_value(loss, y1 * f0, loss_param), loss_value(loss, y1 * f1, loss_param)
    else:
        a, b = loss_value(loss, f0 - y1, loss_param), loss_value(loss, f1 - y1, loss_param)
    eps = float(radius)
    lam0 = loss_lip(loss, loss_param) * abs(bx) / gamma
    return float(a + eps * lam0 + min(1.0, eps / kappa_z) * max(0.0, b - a - kappa_z * lam0))


def erm_lbfgs_logistic(X_design, y, x0=None):
    """Unregularised logistic regression: min_w mean log(1 + exp(-y X w)) by L-BFGS-B.

    ``X_design`` is used as given (add a column of ones for an intercept).
    Returns (value, w).
    """
    X = np.asarray(X_design, float)
    y = np.asarray(y, float).ravel()
    N = y.size

    def fg(w):
        mrg = y * (X @ w)
        val = np.mean(np.logaddexp(0.0, -mrg))
        sig = np.exp(-np.logaddexp(0.0, mrg))  # = 1 / (1 + exp(mrg))
        grad = -(X.T @ (y * sig)) / N
        return val, grad

    w0 = np.zeros(X.shape[1]) if x0 is None else np.asarray(x0, float)
    res = minimize(fg, w0, jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-10, ftol=1e-15, maxiter=100000, maxcor=50))
    return float(res.fun), res.x


def separable_direction_exists(X_design, y):
    """True if some w has y_n (X w)_n >= 0 for all n with sum > 0 (logistic ERM then has
    no minimiser).  LP: max sum y X w s.t. y X w >= 0, box |w| <= 1."""
    X = np.asarray(X_design, float)
    y = np.asarray(y, float).ravel()
    M = y[:, None] * X
    res = linprog(-M.sum(axis=0), A_ub=-M, b_ub=np.zeros(len(y)),
                  bounds=[(-1, 1)] * X.shape[1], method="highs")
    return res.status == 0 and -res.fun > 1e-9


def design_matrix(X_num, Z, levels, fit_intercept=True):
    X_num = np.asarray(X_num, float)
    N = X_num.shape[0]
    cols = [np.ones((N, 1))] if fit_intercept else []
    return np.hstack(cols + [X_num.reshape(N, -1), encode(Z, levels)])


def random_instance(seed, N, n, levels, task):
    """Random (X_num, Z, y): every level of every categorical feature appears at least
    once; labels from a noisy linear model (classification: both classes present)."""
    levels = [int(a) for a in levels]
    if levels and N < max(levels):
        raise ValueError("N must be >= max(levels) so that every level can appear")
    if task == "classification" and N < 2:
        raise ValueError("classification needs N >= 2")
    rng = np.random.default_rng(seed)
    X_num = rng.normal(size=(N, n))
    Z = np.zeros((N, len(levels)), dtype=int)
    for l, a in enumerate(levels):
        codes = np.concatenate((np.arange(a), rng.integers(0, a, size=N - a)))
        Z[:, l] = rng.permutation(codes)
    D = design_matrix(X_num, Z, levels)
    w = rng.normal(size=D.shape[1])
    signal = D @ w
    if task == "classification":
        y = np.sign(signal + rng.normal(scale=1.0, size=N))
        y[y == 0] = 1.0
        if np.all(y == y[0]):
            # force both classes present
            j = int(rng.integers(N))
            y[j] = -y[0]
    elif task == "regression":
        y = signal + 0.5 * rng.normal(size=N)
    else:
        raise ValueError("task must be 'classification' or 'regression'")
    return X_num, Z, y.astype(float)


def nonseparable_instance(N, n, levels, start_seed=0, max_tries=1000):
    """First random_instance (classification) from start_seed on whose nominal data admit
    no separating direction, so that the logistic ERM (radius 0) has a minimiser."""
    for seed in range(start_seed, start_seed + max_tries):
        X, Z, y = random_instance(seed, N, n, levels, "classification")
        if not separable_direction_exists(design_matrix(X, Z, levels), y):
            return X, Z, y
    raise RuntimeError("no non-separable instance found")
