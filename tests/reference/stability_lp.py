"""Independent reference for the OT-with-moment stability criterion (blanchet2024, spec
``blanchet2024-ot-stability.md`` sections 1-3 and 7.2, corrected forms), written from the
mathematics only, NOT from drokit's source.

Problem (P) on an empirical reference ``P0 = (1/n) sum_i delta_{zhat_i}``:

    R(r) = inf  E_pi[ theta1 * W * d(Z, Zhat) + theta2 * phi(W) ]
           s.t. E_pi[W] = 1,  E_pi[W * loss(Z)] >= r,  pi has first marginal P0 (x) delta_1.

Finite model used throughout: sample ``i`` may go to candidate ``j`` with loss ``L[i, j]`` and transport
cost ``D[i, j]`` (``inf`` = forbidden; the nominal point has cost 0).

Three independent ways to get R:

* :func:`primal_lp` -- the literal LP on a finite weight grid (spec T7), solved by HiGHS.  It is a
  restriction of (P), hence an UPPER bound that converges as the grid refines;
  :func:`grid_gap_bound` gives a rigorous a-posteriori bound for the discretisation error.
* :func:`dual_value` -- the one-dimensional concave dual (spec (2.2) / (2.3)) for any d-transform
  ``h -> (L_{h,theta1}(zhat_i))_i``, maximised by bounded Brent on a doubling bracket.
* closed forms (spec T1-T6).

Conventions (spec §0): ``inf * 0 = 0``; ``theta1 = inf`` keeps only zero-cost candidates,
``theta2 = inf`` keeps ``w = 1``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq, linprog, minimize_scalar
from scipy.special import logsumexp

DIVERGENCES = ("kl", "chi2")


# --------------------------------------------------------------------------------------------------
# divergences
# --------------------------------------------------------------------------------------------------
def phi(t, divergence):
    """phi_KL(t) = t log t - t + 1 (phi(0) = 1), phi_chi2(t) = (t - 1)^2."""
    t = np.asarray(t, dtype=float)
    if divergence == "kl":
        with np.errstate(divide="ignore", invalid="ignore"):
            tlogt = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)
        return tlogt - t + 1.0
    if divergence == "chi2":
        return (t - 1.0) ** 2
    raise ValueError(divergence)


def phi_second_derivative_max(lo, hi, divergence):
    """max of phi'' on [lo, hi] (KL: 1/t, chi2: 2)."""
    if divergence == "chi2":
        return 2.0
    return np.inf if lo <= 0 else 1.0 / lo


# --------------------------------------------------------------------------------------------------
# finite adversaries as (L, D) tables
# --------------------------------------------------------------------------------------------------
def flip_tables(flip_cost):
    """0/1 loss with minimal flip costs d*_i as a 2-candidate table: column 0 the observed point
    (loss 1 iff d*_i == 0), column 1 the flipped point (loss 1, cost d*_i; forbidden if inf)."""
    d = np.asarray(flip_cost, dtype=float)
    L = np.column_stack([(d == 0).astype(float), np.ones_like(d)])
    D = np.column_stack([np.zeros_like(d), d])
    return L, D


def finite_dtransform(L, D, theta1):
    """h -> L_{h,theta1}(zhat_i) = max_j h L_ij - theta1 D_ij (theta1 = inf: zero-cost columns only)."""
    L = np.asarray(L, float)
    D = np.asarray(D, float)
    allowed = np.isfinite(D) if np.isfinite(theta1) else (D == 0)
    Dm = np.where(allowed, D, 0.0)

    def f(h):
        vals = h * L - (theta1 * Dm if np.isfinite(theta1) else 0.0)
        return np.where(allowed, vals, -np.inf).max(axis=1)

    return f


def finite_max_risk(L, D, theta1):
    """sup of E_Q[W loss] at finite cost: the largest reachable loss (any sample can take all weight
    when theta2 < inf; with theta2 = inf use :func:`finite_max_risk_corruption`)."""
    allowed = np.isfinite(D) if np.isfinite(theta1) else (D == 0)
    return float(np.where(allowed, L, -np.inf).max())


def finite_max_risk_corruption(L, D, theta1):
    allowed = np.isfinite(D) if np.isfinite(theta1) else (D == 0)
    return float(np.where(allowed, L, -np.inf).max(axis=1).mean())


# --------------------------------------------------------------------------------------------------
# brute-force primal LP (spec T7)
# --------------------------------------------------------------------------------------------------
def primal_lp(L, D, r, theta1, theta2, divergence="kl", w_grid=None, return_plan=False):
    """Literal LP over pi_{ijk} >= 0 (sample i -> candidate j with weight w_k):

        sum_{jk} pi_ijk = 1/n (each i),  sum pi_ijk w_k = 1,  sum pi_ijk w_k L_ij >= r,
        min sum pi_ijk (theta1 w_k D_ij + theta2 phi(w_k)).

    ``theta2 = inf`` forces the grid {1}; ``theta1 = inf`` keeps only zero-cost candidates (any
    candidate is free at w = 0, which is irrelevant since it then carries no risk).
    Returns the LP value (np.inf if infeasible)."""
    L = np.asarray(L, float)
    D = np.asarray(D, float)
    n, J = L.shape
    if not np.isfinite(theta2):
        w = np.array([1.0])
        phic = np.zeros(1)
    else:
        w = np.asarray(w_grid, float)
        phic = theta2 * phi(w, divergence)
    allowed = np.isfinite(D) if np.isfinite(theta1) else (D == 0)
    ii, jj = np.nonzero(allowed)
    K = w.size
    # columns: (pair p, weight k) -> index p*K + k
    P = ii.size
    wk = np.tile(w, P)
    Lp = np.repeat(L[ii, jj], K)
    if np.isfinite(theta1):
        Dp = np.repeat(D[ii, jj], K)
        c = theta1 * wk * Dp + np.tile(phic, P)
    else:
        c = np.tile(phic, P)
    rows_i = np.repeat(ii, K)
    import scipy.sparse as sp

    nv = P * K
    A_eq = sp.vstack([
        sp.csr_matrix((np.ones(nv), (rows_i, np.arange(nv))), shape=(n, nv)),
        sp.csr_matrix(wk[None, :]),
    ]).tocsr()
    b_eq = np.concatenate([np.full(n, 1.0 / n), [1.0]])
    A_ub = sp.csr_matrix(-(wk * Lp)[None, :])
    b_ub = np.array([-float(r)])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status == 2:
        return (np.inf, None) if return_plan else np.inf
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed: {res.message}")
    if return_plan:
        plan = {"i": rows_i, "j": np.repeat(jj, K), "w": wk, "mass": res.x}
        return float(res.fun), plan
    return float(res.fun)


def grid_gap_bound(weights, w_grid, theta2, divergence):
    """Rigorous bound on primal_lp(grid) - R for an optimal primal whose atoms have weights
    ``weights`` (all inside the grid range, mass 1/n each or any split): splitting an atom of weight
    w* between the two grid neighbours w_k <= w* <= w_{k+1} keeps E[W], E[W loss] and E[W d] and
    raises E[phi] by at most phi''max * (w_{k+1} - w_k)^2 / 8."""
    g = np.asarray(w_grid, float)
    worst = 0.0
    for wstar in np.atleast_1d(weights):
        if wstar > g[-1] + 1e-12 or wstar < g[0] - 1e-12:
            return np.inf
        k = np.searchsorted(g, wstar, side="right") - 1
        k = min(max(k, 0), g.size - 2)
        lo, hi = g[k], g[k + 1]
        if abs(wstar - lo) < 1e-13 or abs(wstar - hi) < 1e-13:
            continue
        worst = max(worst, phi_second_derivative_max(lo, hi, divergence) * (hi - lo) ** 2 / 8.0)
    return theta2 * worst


# --------------------------------------------------------------------------------------------------
# one-dimensional dual (spec (2.2), (2.3))
# --------------------------------------------------------------------------------------------------
def chi2_alpha(Lh, theta2):
    """alpha solving mean(((Lh + alpha) / (2 theta2) + 1)_+) = 1 (spec A.3), by brentq."""
    Lh = np.asarray(Lh, float)
    f = lambda a: np.mean(np.maximum((Lh + a) / (2.0 * theta2) + 1.0, 0.0)) - 1.0
    lo = -Lh.max() - 2.0 * theta2  # f(lo) = -1
    hi = -Lh.min()                  # every term >= 1 -> f >= 0
    if f(hi) == 0:
        return hi
    return brentq(f, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)


def dual_objective(h, r, dtransform, theta2, divergence):
    Lh = np.asarray(dtransform(h), float)
    if not np.isfinite(theta2):
        return h * r - Lh.mean()
    if divergence == "kl":
        return h * r - theta2 * (logsumexp(Lh / theta2) - np.log(Lh.size))
    a = chi2_alpha(Lh, theta2)
    return h * r + a + theta2 - theta2 * np.mean(np.maximum((Lh + a) / (2.0 * theta2) + 1.0, 0.0) ** 2)


def dual_value(r, dtransform, theta2, divergence="kl", h_max=1e7, xatol=1e-12, h_upper=None):
    """sup_{h >= 0} of the concave 1-D dual.  Brackets by doubling until the objective decreases,
    then bounded Brent.  Returns (value, h*).  ``h_max`` caps the search (a value still increasing at
    h_max means the sup is not attained: boundary/infeasible).  ``h_upper``: the d-transform is +inf
    for h >= h_upper (squared loss); the search is then confined to [0, h_upper)."""
    g = lambda h: dual_objective(h, r, dtransform, theta2, divergence)
    g0 = g(0.0)
    H = 1e-3
    prev = g(H)
    if h_upper is not None:
        hi = h_upper * (1.0 - 1e-12)
    elif prev <= g0:
        # maximiser in [0, H]
        hi = H
    else:
        while True:
            H2 = 2.0 * H
            cur = g(H2)
            if cur <= prev:
                hi = H2
                break
            H, prev = H2, cur
            if H > h_max:
                return float(cur), np.inf
    res = minimize_scalar(lambda h: -g(h), bounds=(0.0, hi), method="bounded",
                          options={"xatol": xatol * max(1.0, hi), "maxiter": 2000})
    best_h, best = float(res.x), float(-res.fun)
    # a concave sup at h = 0 (r <= mean loss) is exactly 0
    if g0 >= best:
        return float(g0), 0.0
    return best, best_h


# --------------------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------------------
def bernoulli_kl(r, p, theta2):
    """T1: theta2 * KL(Bern(r) || Bern(p)) for p <= r <= 1."""
    t1 = r * np.log(r / p) if r > 0 else 0.0
    t2 = (1 - r) * np.log((1 - r) / (1 - p)) if r < 1 else 0.0
    return theta2 * (t1 + t2)


def chi2_reweight_closed_form(losses, r, theta2):
    """T3: theta2 (r - m)^2 / Var when every w_i = 1 + lam (l_i - m) >= 0, lam = (r - m) / Var.
    Returns (value, weights)."""
    l = np.asarray(losses, float)
    m, var = l.mean(), l.var()
    lam = (r - m) / var
    w = 1.0 + lam * (l - m)
    if np.any(w < 0):
        raise ValueError("closed form needs all w_i >= 0")
    return theta2 * (r - m) ** 2 / var, w


def knapsack_01(flip_cost, r, theta1):
    """T4: pure corruption with 0/1 loss = fractional knapsack over sorted d*."""
    d = np.sort(np.asarray(flip_cost, float))
    n = d.size
    k = n * r
    fk = int(np.floor(k + 1e-12))
    val = d[:fk].sum() + ((k - fk) * d[fk] if fk < n and k - fk > 1e-12 else 0.0)
    return theta1 * val / n


def kl_rate(losses, s):
    """I_KL(s) = inf {KL(Q || P0) : E_Q loss >= s} (exponential tilting), for s < max loss."""
    l = np.asarray(losses, float)
    m = l.mean()
    if s <= m:
        return 0.0
    if s >= l.max():
        return np.inf if s > l.max() else float(np.log(l.size / np.sum(l == l.max())))
    tilt_mean = lambda lam: np.sum(l * np.exp(lam * l - logsumexp(lam * l))) - s
    hi = 1.0
    while tilt_mean(hi) < 0:
        hi *= 2.0
    lam = brentq(tilt_mean, 0.0, hi, xtol=1e-15, rtol=1e-15, maxiter=500)
    return float(lam * s - (logsumexp(lam * l) - np.log(l.size)))


def chi2_rate(losses, s):
    """I_chi2(s) = (s - m)^2 / Var when the affine weights stay >= 0 (checked)."""
    l = np.asarray(losses, float)
    m, var = l.mean(), l.var()
    if s <= m:
        return 0.0
    w = 1.0 + (s - m) / var * (l - m)
    if np.any(w < 0):
        raise ValueError("chi2 rate outside the affine regime")
    return (s - m) ** 2 / var


def inf_convolution_linear(margins, slope_sq_norm, r, theta1, theta2, divergence="kl"):
    """T6: R(r) = min_s theta2 I(s) + theta1 (r - s)^2 / ||a||^2, s in [m, r] (bounded Brent, convex)."""
    l = np.asarray(margins, float)
    m = l.mean()
    if r <= m:
        return 0.0
    rate = kl_rate if divergence == "kl" else chi2_rate
    hi = min(r, l.max() - 1e-12) if divergence == "kl" else r
    f = lambda s: theta2 * rate(l, s) + theta1 * (r - s) ** 2 / slope_sq_norm
    res = minimize_scalar(f, bounds=(m, hi), method="bounded", options={"xatol": 1e-13, "maxiter": 2000})
    return float(min(res.fun, f(m), f(hi)))


def linear_dtransform(margins, slope_sq_norm, theta1):
    """L_{h,theta1} for loss margins_i + t, cost t^2/||a||^2: h m_i + h^2 ||a||^2 / (4 theta1)."""
    mg = np.asarray(margins, float)
    return lambda h: h * mg + (h * h * slope_sq_norm / (4.0 * theta1) if np.isfinite(theta1) else 0.0)


def dual_weights(h, dtransform, theta2, divergence="kl"):
    """Optimal weights of the primal recovered from h* (spec Remark 4, corrected): KL softmax tilt
    exp(L_i/theta2) / mean exp(L_j/theta2); chi2 ((L_i + alpha*) / (2 theta2) + 1)_+."""
    Lh = np.asarray(dtransform(h), float)
    if not np.isfinite(theta2):
        return np.ones_like(Lh)
    if divergence == "kl":
        return np.exp(Lh / theta2 - (logsumexp(Lh / theta2) - np.log(Lh.size)))
    a = chi2_alpha(Lh, theta2)
    return np.maximum((Lh + a) / (2.0 * theta2) + 1.0, 0.0)


def margin_loss_dtransform(loss, margins, slope_sq_norm, theta1, n_grid=4001, n_golden=80):
    """d-transform of a margin loss loss(m) (nonincreasing in m) for a linear model whose covariates
    move with squared cost: lowering sample i's margin by u >= 0 costs u^2 / S (S = ||w||^2 in the
    dual norm of the cost; labels fixed).  L_i(h) = max_{u >= 0} h loss(m_i - u) - theta1 u^2 / S.
    The maximiser lies in [0, S h sup|loss'| / (2 theta1)]; dense grid + vectorised golden polish.
    ``loss``: "logistic" (log(1 + e^{-m})) or "hinge" (max(0, 1 - m), closed form)."""
    mg = np.asarray(margins, float)
    S = float(slope_sq_norm)

    if loss == "hinge":
        def f(h):
            extra = h * h * S / (4.0 * theta1) if (np.isfinite(theta1) and S > 0) else 0.0
            return np.maximum(0.0, h * (1.0 - mg) + extra)
        return f

    if loss != "logistic":
        raise ValueError(loss)
    val = lambda m: np.logaddexp(0.0, -m)

    def f(h):
        if not np.isfinite(theta1) or S == 0 or h == 0:
            return h * val(mg)
        umax = S * h / (2.0 * theta1)
        u = np.linspace(0.0, umax, n_grid)
        obj = h * val(mg[:, None] - u[None, :]) - theta1 * u[None, :] ** 2 / S
        k = obj.argmax(axis=1)
        du = u[1] - u[0]
        a = np.maximum(u[k] - du, 0.0)
        b = np.minimum(u[k] + du, umax)
        g = lambda uu: h * val(mg - uu) - theta1 * uu ** 2 / S
        invphi = (np.sqrt(5.0) - 1.0) / 2.0
        c = b - invphi * (b - a)
        d = a + invphi * (b - a)
        for _ in range(n_golden):
            left = g(c) > g(d)
            b = np.where(left, d, b)
            a = np.where(left, a, c)
            c = b - invphi * (b - a)
            d = a + invphi * (b - a)
        best = 0.5 * (a + b)
        return np.maximum.reduce([g(best), obj.max(axis=1)])

    return f


def squared_dtransform(residuals, slope_sq_norm, theta1):
    """Squared residual loss e^2, residual moved by t at cost t^2 / S:
    L_i(h) = max_t h (e_i + t)^2 - theta1 t^2 / S = h a e_i^2 / (a - h) for h < a = theta1 / S
    (stationary point t = h e / (a - h)), +inf for h >= a."""
    e = np.asarray(residuals, float)
    a = theta1 / slope_sq_norm if slope_sq_norm > 0 else np.inf

    def f(h):
        if not np.isfinite(a):
            return h * e ** 2
        if h >= a:
            return np.full_like(e, np.inf)
        return h * a * e ** 2 / (a - h)

    return f
