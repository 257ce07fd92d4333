"""The reweighting part of the stability dual: the divergences ``phi`` and their optimal weights.

With per-sample values ``L_i(h) = max_z h l(z) - theta1 d(z, z_i)`` (the d-transform, blanchet2024 Prop. 1)
the dual (D) is maximized over ``alpha`` in closed form (KL) or by sorting (chi-square).  Everything is
written with the SHIFTED values ``s_i = L_i - h r``, so that ``G(h) = h r + ...`` never subtracts two
large numbers (the boundary case ``r -> r_max`` sends ``h -> inf``):

* KL, ``phi(t) = t log t - t + 1`` (blanchet2024 (2.2), with the exp the paper's A.2 drops, spec §8.3):

    ```text
    G(h) = -theta2 log mean_i exp(s_i / theta2),    w_i = exp(s_i / theta2) / mean_j exp(s_j / theta2)
    ```

  (``alpha = -theta2 log mean exp(L / theta2)``; Remark 4 with ``t log t``, spec §8.4);
* chi-square, ``phi(t) = (t - 1)^2`` (blanchet2024 (2.3), weights of Remark 4 with ``+alpha``, spec §2.4):

    ```text
    G(h) = max_a  a + theta2 - theta2 mean_i w_i^2,    w_i = ((s_i + a) / (2 theta2) + 1)_+,
    ```

  where ``a = alpha + h r`` solves ``mean_i w_i = 1`` (A.3), found exactly by sorting;
* ``theta2 = inf`` (pure corruption): ``G(h) = -mean_i s_i`` and ``w = 1``.

In all three cases ``dG/dh = r - mean_i w_i l(z_i*)`` (Danskin), nonincreasing in ``h``.  With sample weights
(a reference distribution ``P0 = sum_i p_i delta_{z_i}``) every ``mean_i`` is ``sum_i p_i``.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
from scipy.special import logsumexp


def kl_phi(w: np.ndarray) -> np.ndarray:
    """``t log t - t + 1`` (0 log 0 = 0)."""
    w = np.asarray(w, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)) - w + 1.0, 1.0)


def chi2_phi(w: np.ndarray) -> np.ndarray:
    """``(t - 1)^2``."""
    return (np.asarray(w, dtype=float) - 1.0) ** 2


def chi2_offset(u: np.ndarray, p: np.ndarray) -> float:
    """The ``c`` with ``sum_i p_i (u_i + c)_+ = 1`` (unique: the left side increases from 0 to inf).

    Sort ``u`` descending; with the top ``k`` active, ``c_k = (1 - sum_{j<=k} p_j u_j) / sum_{j<=k} p_j``; the
    answer is ``c_k`` for the largest ``k`` with ``u_(k) + c_k > 0``.  ``O(n log n)``.
    """
    order = np.argsort(-u, kind="stable")
    us, ps = u[order], p[order]
    mass = np.cumsum(ps)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = (1.0 - np.cumsum(ps * us)) / mass
    active = (mass > 0) & (us + c > 0)
    last = int(np.flatnonzero(active)[-1]) if active.any() else int(np.flatnonzero(mass > 0)[0])
    return float(c[last])


def reweight(shifted: np.ndarray, theta2: float, divergence: str,
             p: np.ndarray) -> Tuple[float, np.ndarray, float]:
    """``(G, w, a)`` for shifted values ``s = L - h r`` under the reference probabilities ``p`` (``1/n`` for
    the empirical distribution): the dual value at this ``h``, the optimal weights (``sum p w = 1``) and the
    optimal shifted multiplier ``a = alpha + h r`` (``nan`` when ``theta2 = inf``)."""
    s = np.asarray(shifted, dtype=float)
    if np.isinf(theta2):
        return float(-(p @ s)), np.ones(s.size), float("nan")
    if divergence == "kl":
        lse = float(logsumexp(s / theta2, b=p))
        w = np.exp(s / theta2 - lse)
        return -theta2 * lse, w, -theta2 * lse
    u = s / (2.0 * theta2) + 1.0
    c = chi2_offset(u, p)
    w = np.maximum(u + c, 0.0)
    a = 2.0 * theta2 * c
    return float(a + theta2 - theta2 * (p @ w ** 2)), w, a


def divergence_cost(w: np.ndarray, divergence: str) -> np.ndarray:
    """``phi(w)`` elementwise."""
    return kl_phi(w) if divergence == "kl" else chi2_phi(w)
