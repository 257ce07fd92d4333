"""Independent reference for the RWPI radius (``spec/rwpi-radius.md``): the robust Wasserstein profile function
itself, written from the note's §2, not from ``drokit/model_selection/rwpi.py``.

    R_N(beta) = min { sum_ik pi_ik c_ik : sum_k pi_ik = 1/N,  sum_ik pi_ik h(u_ik; beta) = 0,  pi >= 0 }

the optimal transport of the empirical distribution to a distribution under which ``beta`` solves the estimating
equation ``E[h(U; beta)] = 0`` of the logistic loss, ``h(u; beta) = -y sigma(-y beta'a(u)) a(u)``, when every sample
can only move to finitely many points ``u_ik`` (its categorical changes and label flips, numerical features held
fixed): a linear program, solved by HiGHS through scipy (``profile``; ``one_feature_profile``: one numerical feature
moving over a fine grid of steps, an upper bound).  ``numerical_profile`` is the closed form of the note's §5
(numerical moves, labels fixed, ``beta = 0``, no intercept): ``R_N(0) = N(Gamma E_N[y x])``.

The well-specified model of the simulations: ``x ~ N(0, 1)`` (immutable here), ``z1`` uniform on 3 levels, ``z2`` on
2, ``P(y = 1 | x, z) = sigma(beta*'a(x, z))``, ``a = [1, x, 1[z1 = 1], 1[z1 = 2], 1[z2 = 1]]``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.optimize import linprog
from scipy.sparse import csr_matrix, identity, kron
from scipy.special import expit

#: the true parameter of the simulations: intercept, x, z1 = 1, z1 = 2, z2 = 1
BETA_STAR = np.array([0.2, 1.0, 0.5, -0.5, 0.8])
LEVELS = (3, 2)


def design(x, z1, z2) -> np.ndarray:
    return np.column_stack([np.ones_like(x), x, z1 == 1, z1 == 2, z2 == 1]).astype(float)


def logistic_h(x, z1, z2, y, beta) -> np.ndarray:
    """``h(u; beta) = L'(y f) y a`` of the logistic loss ``L(m) = log(1 + exp(-m))``, one row per point."""
    a = design(x, z1, z2)
    return (-expit(-y * (a @ beta)) * y)[:, None] * a


def sample(rng, n_samples: int, beta=BETA_STAR):
    """A DataFrame (``x``, ``z1``, ``z2`` categorical) and labels in {-1, +1} from the well-specified model."""
    x = rng.normal(size=n_samples)
    z1 = rng.integers(0, LEVELS[0], n_samples)
    z2 = rng.integers(0, LEVELS[1], n_samples)
    y = np.where(rng.random(n_samples) < expit(design(x, z1, z2) @ beta), 1, -1)
    X = pd.DataFrame({"x": x, "z1": pd.Categorical(z1, categories=range(LEVELS[0])),
                      "z2": pd.Categorical(z2, categories=range(LEVELS[1]))})
    return X, y


def transport_profile(H: np.ndarray, C: np.ndarray) -> float:
    """``min { sum_ik pi_ik C_ik : sum_k pi_ik = 1/N, sum_ik pi_ik H_ik = 0, pi >= 0 }`` (HiGHS through scipy), ``H``
    ``(N, K, p)`` the values of ``h`` at the ``K`` points each sample may move to, ``C`` ``(N, K)`` their costs;
    ``inf`` when no such distribution exists."""
    N, K, p = H.shape
    A_eq = csr_matrix(np.vstack([kron(identity(N), np.ones((1, K))).toarray(), H.reshape(N * K, p).T]))
    b_eq = np.r_[np.full(N, 1.0 / N), np.zeros(p)]
    res = linprog(C.ravel(), A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 2:
        return float("inf")
    assert res.status == 0, res.message
    return float(res.fun)


def profile(X, y, beta=BETA_STAR, delta=(1.0, 1.0), kappa=1.0) -> float:
    """``R_N(beta)`` of the logistic estimating equation under the cost ``delta_1 1[z1 != z1'] + delta_2 1[z2 != z2']
    + kappa 1[y != y']`` (``x`` immutable), by the transport LP over every configuration of every sample."""
    x, z1, z2 = X["x"].to_numpy(float), X["z1"].cat.codes.to_numpy(), X["z2"].cat.codes.to_numpy()
    y = np.asarray(y, dtype=float)
    N = x.size
    configs = list(itertools.product(range(LEVELS[0]), range(LEVELS[1]), (False, True)))
    H = np.stack([logistic_h(x, np.full(N, a), np.full(N, b), -y if flip else y, beta) for a, b, flip in configs],
                 axis=1)                                                   # (N, K, p)
    C = np.stack([delta[0] * (z1 != a) + delta[1] * (z2 != b) + kappa * flip for a, b, flip in configs], axis=1)
    return transport_profile(H, C)


def one_feature_profile(x, y, beta, steps) -> float:
    """``R_N(beta)`` of the logistic model ``a = [1, x]`` with one numerical feature moving at cost ``|x - x'|``,
    labels fixed, each sample restricted to ``x_i + steps`` (an upper bound on the profile, which the grid's
    refinement lowers to it: the benchmark's ``steps`` reach 12 with a geometric spacing down to 1e-3)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    moved = x[:, None] + np.asarray(steps)[None, :]
    a = np.stack([np.ones_like(moved), moved], axis=-1)
    H = (-expit(-y[:, None] * (a @ beta)) * y[:, None])[..., None] * a
    return transport_profile(H, np.broadcast_to(np.abs(steps), moved.shape))


def numerical_profile(X, y, weights=None, p=2.0) -> float:
    """``R_N(0) = N(Gamma E_N[y x])`` (note §5): the profile at ``beta = 0`` without intercept, numerical moves only
    under ``||Gamma (x - x')||_p``, labels fixed."""
    X = np.asarray(X, dtype=float)
    g = np.ones(X.shape[1]) if weights is None else np.asarray(weights, dtype=float)
    return float(np.linalg.norm(g * (np.asarray(y, dtype=float) @ X) / X.shape[0], ord=p))
