"""Independent reference for MOT-DRO (optimal transport with a moment constraint) at a FIXED model.

Written from ``spec/mot-dro-training.md`` (§2 and §5), not from drokit's source, on tiny instances whose moves are
categorical changes and label flips only (every configuration enumerated).  Two formulations, each a cvxpy program
solved by Clarabel, so that each checks the other and both check the note's derivation:

* :func:`worst_case_primal`: the supremum of ``sum_ik v_ik L_ik`` over the masses ``m_ik`` of sample ``i`` sent to
  configuration ``k`` and their weighted masses ``v_ik = m_ik w_ik``: ``sum_k m_ik = p_i``, ``sum v = 1`` (the moment
  ``E[W] = 1``), ``theta1 sum c_ik v_ik + theta2 sum m_ik phi(v_ik / m_ik) <= rho`` (note §5);
* :func:`worst_case_dual`: ``min_{lambda >= 0, alpha} lambda rho + alpha + sum_i p_i h phi*((S_i - alpha) / h)``,
  ``h = lambda theta2``, ``S_i = max_k L_ik - lambda theta1 c_ik`` (note §2, (D)), with ``phi*`` the conjugate of
  KL (``exp(u) - 1``) or chi-square (``((u/2 + 1)_+)^2 - 1``) in conic form.

``divergence``: ``"kl"``, ``"chi2"`` or ``("cvar", a)``: the likelihood-ratio bound ``w <= 1/a`` (``phi`` its indicator,
no price: ``theta2`` does not enter), ``phi*(u) = u_+ / a`` (Rockafellar and Uryasev 2000).

Inputs: ``L`` (N, K) the losses of every configuration of every sample (the fixed model's), ``C`` (N, K) the
transport costs ``d`` from each sample to each configuration (``0`` at its own), ``p`` (N,) probabilities.
``theta1`` / ``theta2`` may be ``inf`` (no moves / weights fixed at 1).
"""

from __future__ import annotations

import itertools
from typing import Sequence, Tuple

import numpy as np

DIVERGENCES = ("kl", "chi2")


def _cvar_level(divergence):
    """``a`` of ``("cvar", a)``, else ``None``."""
    if isinstance(divergence, tuple) and len(divergence) == 2 and divergence[0] == "cvar":
        return float(divergence[1])
    if getattr(divergence, "name", None) == "cvar":      # drokit's object: only its level is read
        return float(divergence.level)
    return None


def _check(divergence, theta1: float, theta2: float) -> None:
    if divergence not in DIVERGENCES and _cvar_level(divergence) is None:
        raise ValueError(f"divergence must be one of {DIVERGENCES} or ('cvar', level)")
    if not (theta1 > 0 and theta2 > 0) or (np.isinf(theta1) and np.isinf(theta2)):
        raise ValueError("theta1, theta2 must be > 0 and not both inf")


def worst_case_primal(L: np.ndarray, C: np.ndarray, p: np.ndarray, rho: float, theta1: float, theta2: float,
                      divergence: str) -> float:
    """``sup_{Q in A_rho} E_Q[W l]`` by the finite-support primal of note §5."""
    import cvxpy as cp
    _check(divergence, theta1, theta2)
    N, K = L.shape
    m = cp.Variable((N, K), nonneg=True)
    v = cp.Variable((N, K), nonneg=True)
    cons = [cp.sum(m, axis=1) == p, cp.sum(v) == 1]
    cost = 0
    if np.isfinite(theta1):
        cost = cost + theta1 * cp.sum(cp.multiply(C, v))
    else:
        cons.append(cp.multiply((C > 0).astype(float), v) == 0)
    if _cvar_level(divergence) is not None and np.isfinite(theta2):   # every atom's weight v / m <= 1 / a
        cons.append(v <= m / _cvar_level(divergence))
    elif np.isfinite(theta2):
        if divergence == "kl":      # m phi(v / m) = v log(v / m) - v + m
            perspective = cp.sum(cp.rel_entr(v, m)) - cp.sum(v) + cp.sum(m)
        else:                       # m (v / m - 1)^2 = (v - m)^2 / m
            perspective = sum(cp.quad_over_lin(v[i, k] - m[i, k], m[i, k]) for i in range(N) for k in range(K))
        cost = cost + theta2 * perspective
    else:
        cons.append(v == m)
    if not isinstance(cost, (int, float)):     # (CVaR without moves: no budget is spent)
        cons.append(cost <= rho)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(L, v))), cons)
    problem.solve(solver="CLARABEL")
    if problem.status != "optimal":
        raise RuntimeError(f"primal: {problem.status}")
    return float(problem.value)


def worst_case_dual(L: np.ndarray, C: np.ndarray, p: np.ndarray, rho: float, theta1: float, theta2: float,
                    divergence: str) -> float:
    """The dual (D) of note §2 at the fixed model (conic forms of the note)."""
    import cvxpy as cp
    _check(divergence, theta1, theta2)
    N, K = L.shape
    lam = cp.Variable(nonneg=True)
    s = cp.Variable(N)
    if np.isfinite(theta1):
        cons = [s[i] >= cp.max(L[i] - theta1 * lam * C[i]) for i in range(N)]
    else:
        cons = [s[i] >= L[i][C[i] == 0].max() for i in range(N)]
    problem = cp.Problem(cp.Minimize(lam * rho + moment_terms(s, lam, p, theta2, divergence, cons)), cons)
    problem.solve(solver="CLARABEL")
    if problem.status != "optimal":
        raise RuntimeError(f"dual: {problem.status}")
    return float(problem.value)


def moment_terms(s, lam, p: np.ndarray, theta2: float, divergence: str, cons: list):
    """``min_alpha alpha + sum_i p_i h phi*((s_i - alpha) / h)`` (``h = theta2 lam``) as a cvxpy expression, its
    cones appended to ``cons`` (note §2): KL ``t_i >= h exp((s_i - alpha)/h)``, term ``t_i - h``; chi-square
    ``q_i >= (s_i - alpha)/2 + h``, ``q_i^2 / h <= r_i``, term ``r_i - h``; ``theta2 = inf``: ``sum_i p_i s_i`` (weights
    fixed at 1, the moment automatic)."""
    import cvxpy as cp
    if np.isinf(theta2):
        return p @ s
    N = p.size
    alpha, h = cp.Variable(), theta2 * lam
    if _cvar_level(divergence) is not None:
        return alpha + p @ cp.pos(s - alpha) / _cvar_level(divergence)
    if divergence == "kl":
        t = cp.Variable(N)
        cons.append(cp.constraints.ExpCone(s - alpha, cp.hstack([h] * N), t))
        return alpha + p @ t - h
    q, r = cp.Variable(N, nonneg=True), cp.Variable(N)
    cons.append(q >= (s - alpha) / 2 + h)
    cons += [cp.quad_over_lin(q[i], h) <= r[i] for i in range(N)]
    return alpha + p @ r - h


def categorical_instance(seed: int = 0, n: int = 6, levels: Sequence[int] = (3, 2),
                         delta: Sequence[float] = (0.7, 1.3), kappa: float = 2.0) -> Tuple[np.ndarray, np.ndarray]:
    """``(L, C)`` of the note's verified instance: ``n`` samples with categorical codes and +-1 labels drawn with
    ``seed``, a model ``f(z) = b + sum_l w_l[z_l]`` drawn with the same stream, the logistic loss
    ``log(1 + exp(-y f))`` of every (configuration, label), and the mismatch + label-flip costs."""
    rng = np.random.default_rng(seed)
    Z = np.column_stack([rng.integers(0, a, n) for a in levels])
    y = rng.choice([-1, 1], n)
    b, weights = 0.2, [rng.normal(size=a) for a in levels]
    configurations = [(c, label) for c in itertools.product(*[range(a) for a in levels]) for label in (-1, 1)]

    def score(c):
        return b + sum(weights[l][c[l]] for l in range(len(levels)))

    L = np.array([[np.logaddexp(0.0, -label * score(c)) for c, label in configurations] for _ in range(n)])
    C = np.array([[sum(delta[l] * (c[l] != Z[i, l]) for l in range(len(levels))) + kappa * (label != y[i])
                   for c, label in configurations] for i in range(n)])
    return L, C


def mot_training_value(X_num, Z, levels, y, *, task: str, loss: str, loss_param=None, rho: float, theta1: float,
                       theta2: float, divergence: str, norm_p=1, gamma=None, delta=None, kappa=np.inf) -> dict:
    """``min_beta R(beta)``: MOT-DRO training by full enumeration (note §2, (D) with ``beta`` free), written with the
    brute-force reference's configuration scenarios and cvxpy loss atoms (``tests/reference/brute_force.py``), not
    with drokit's builder.  Returns ``dict(value, beta)`` (``beta = (b0, bx, bz)`` stacked)."""
    import cvxpy as cp
    from . import brute_force as bf
    _check(divergence, theta1, theta2)
    loss_param = bf._check_loss(loss, loss_param)
    X_num, Z, levels, y, gamma, delta, cat_p, kappa = bf._prepare(X_num, Z, levels, y, task, gamma, delta, 1.0,
                                                                   kappa, norm_p)
    N, n = X_num.shape
    c = sum(a - 1 for a in levels)
    sc = bf._scenarios(X_num, Z, levels, y, task, delta, cat_p, kappa, nominal_only=bool(np.isinf(theta1)))
    beta = cp.Variable(1 + n + c)
    losses = bf.cvx_loss(loss, cp.multiply(sc["sigma"], sc["A"] @ beta) + sc["off"], loss_param)
    lam, s = cp.Variable(nonneg=True), cp.Variable(N)
    p = np.full(N, 1.0 / N)
    if np.isfinite(theta1):
        cons = [losses - theta1 * lam * sc["cost"] <= s[sc["idx"]]]
        lip = bf.loss_lip(loss, loss_param)
        if n > 0:
            w = np.where(np.isinf(gamma), 0.0, 1.0 / gamma)
            if np.any(w > 0):
                cons.append(lip * cp.norm(cp.multiply(w, beta[1:1 + n]), bf._dual_exponent(norm_p)) <= theta1 * lam)
        if task == "regression" and np.isfinite(kappa):
            cons.append(lip <= theta1 * lam * kappa)
    else:
        cons = [losses <= s[sc["idx"]]]
    problem = cp.Problem(cp.Minimize(lam * rho + moment_terms(s, lam, p, theta2, divergence, cons)), cons)
    problem.solve(solver="CLARABEL")
    if problem.status != "optimal":
        raise RuntimeError(f"training: {problem.status}")
    return dict(value=float(problem.value), beta=np.asarray(beta.value, float))
