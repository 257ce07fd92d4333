"""The reweighting divergences ``phi`` of an OT-with-moment set (blanchet2024 (2.1)) and what MOT-DRO needs of each.

A sample of weight ``w`` (density ``dQ/dP_N``, ``E[W] = 1``) pays ``theta2 phi(w)``.  MOT-DRO's dual
(``spec/mot-dro-training.md`` §2, program (D)) uses ``phi`` only through its convex conjugate
``phi*(u) = sup_{w >= 0} (u w - phi(w))``, in the *aggregate* of the per-sample values ``S_n``:

    A(S, h) = min_alpha  alpha + sum_n p_n h phi*((S_n - alpha) / h)             (h = lambda theta2 > 0)

whose minimizer ``alpha*`` gives the worst-case weights ``w_n = (phi*)'((S_n - alpha*) / h)`` (``sum p_n w_n = 1``).
Each divergence gives ``phi``, ``A`` with ``alpha*`` and ``w`` in closed form, and ``A``'s conic form:

* **KL**, ``phi(w) = w log w - w + 1``, ``phi*(u) = e^u - 1``: ``alpha* = h log sum_n p_n e^{S_n / h}`` and
  ``A = alpha*`` (note (D-KL)); one exponential cone per sample.  ``theta1 = inf``: the KL ball's dual
  ``min_{h > 0} h rho + h log E e^{loss / h}`` (Hu and Hong 2013).
* **Chi-square**, ``phi(w) = (w - 1)^2``, ``phi*(u) = ((u/2 + 1)_+)^2 - 1``: ``alpha*`` solves
  ``sum_n p_n ((S_n - alpha)/(2h) + 1)_+ = 1``, found exactly by sorting (blanchet2024 (A.3), sign corrected in its
  note); one rotated second-order cone per sample.
* **CVaR** at level ``a`` in ``(0, 1]``: ``phi(w) = 0`` for ``0 <= w <= 1/a``, ``+inf`` above (the likelihood-ratio
  bound ``dQ/dP_N <= 1/a``), ``phi*(u) = u_+ / a`` and ``h phi*(v / h) = v_+ / a`` whatever ``h``:
  ``A = min_alpha alpha + (1/a) sum_n p_n (S_n - alpha)_+ = CVaR_a(S)`` (Rockafellar and Uryasev 2000, Thm. 1),
  ``alpha*`` the upper ``a``-quantile of ``S`` under ``p`` (the value at risk); ``w_n = 1/a`` above it, ``0`` below,
  the rest of the mass at it.  Linear.  The reweighting is free inside the bound, so ``theta2`` does not enter and a
  zero budget ``rho`` still leaves the CVaR set; with ``theta1 = inf`` the set is the CVaR set itself (Ben-Tal et al.
  2013's phi-divergence family's limit; ``dro``'s ``CVaRDRO``).  ``a = 1`` is the empirical risk, ``a -> 0`` the
  largest loss.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
from scipy.special import logsumexp

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from ..params import ParamsMixin, real_number


class Divergence(ParamsMixin):
    """A reweighting divergence ``phi`` (module docstring): its value, its aggregate ``A(S, h)`` with the minimizer
    and the worst-case weights, and ``A``'s conic form."""

    #: the short name ("kl", "chi2", "cvar")
    name: str = ""
    #: ``phi`` vanishes on a set of weights around 1 (CVaR): a zero budget still reweights, ``theta2`` does not enter
    free_reweighting: bool = False

    def value(self, w: np.ndarray) -> np.ndarray:
        """``phi(w)`` per weight."""
        raise NotImplementedError

    def aggregate(self, S: np.ndarray, p: np.ndarray, h: float) -> Tuple[float, float, np.ndarray]:
        """``(A(S, h), alpha*, w)`` for ``h > 0`` (module docstring)."""
        raise NotImplementedError

    def supremum(self, S: np.ndarray, p: np.ndarray) -> Tuple[float, float, np.ndarray]:
        """``A`` at ``h = 0`` (reweighting at no price): ``max S`` with every mass on the largest values, unless the
        divergence bounds the weights itself."""
        top = S == S.max()
        return float(S.max()), float(S.max()), np.where(top, 1.0 / p[top].sum(), 0.0)

    def declare(self, pb: ProgramBuilder, v: Affine, h: Affine, N: int) -> Tuple[Affine, Affine]:
        """Conic form of ``h phi*(v_n / h)`` per sample: ``(t, offset)`` with ``sum_n p_n h phi*(v_n / h) =
        min (sum_n p_n t_n) + offset`` over the auxiliary variables (``offset`` an affine function of ``h``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class KL(Divergence):
    """Kullback-Leibler: ``phi(w) = w log w - w + 1`` (module docstring)."""

    name = "kl"

    def value(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=float)
        safe = np.where(w > 0, w, 1.0)
        return np.where(w > 0, w * np.log(safe) - w + 1.0, 1.0)

    def aggregate(self, S, p, h):
        alpha = float(h * logsumexp(S / h, b=p))
        return alpha, alpha, np.exp((S - alpha) / h)

    def declare(self, pb, v, h, N):
        t = pb.aux("mot_t", N)
        pb.add_exp(v, h.repeat(N), t)               # t_n >= h exp(v_n / h)
        return t, -h


class ChiSquare(Divergence):
    """Chi-square: ``phi(w) = (w - 1)^2`` (module docstring)."""

    name = "chi2"

    def value(self, w: np.ndarray) -> np.ndarray:
        return (np.asarray(w, dtype=float) - 1.0) ** 2

    def aggregate(self, S, p, h):
        order = np.argsort(-S, kind="stable")
        s_sorted, p_sorted = S[order], p[order]
        mass = np.cumsum(p_sorted)
        weighted = np.cumsum(p_sorted * (s_sorted / (2.0 * h) + 1.0))
        # with the top k active: alpha = 2h (weighted_k - 1) / mass_k; valid when S_(k) > alpha - 2h >= S_(k+1)
        alpha_k = 2.0 * h * (weighted - 1.0) / mass
        below = np.r_[s_sorted[1:], -np.inf]
        valid = (s_sorted > alpha_k - 2.0 * h) & (below <= alpha_k - 2.0 * h)
        k = int(np.flatnonzero(valid)[0]) if valid.any() else s_sorted.size - 1
        alpha = float(alpha_k[k])
        w = np.maximum((S - alpha) / (2.0 * h) + 1.0, 0.0)
        return alpha + float(p @ (h * (w ** 2 - 1.0))), alpha, w

    def declare(self, pb, v, h, N):
        q, r = pb.aux("mot_q", N), pb.aux("mot_r", N)
        pb.add_nonneg(Affine.vstack([q, q - v * 0.5 - h.repeat(N)]))      # q_n >= (v_n / 2 + h)_+
        pb.add_soc(r + h.repeat(N), [q * 2.0, r - h.repeat(N)])            # r_n h >= q_n^2
        return r, -h


class CVaR(Divergence):
    """The likelihood-ratio bound ``dQ/dP_N <= 1 / level`` (``phi`` its indicator): the CVaR set at ``level``
    (module docstring).

    Parameters
    ----------
    level : float
        The tail fraction ``a`` in ``(0, 1]``: the worst-case risk of a model is the mean of its worst ``a`` share
        of losses (``CVaR_a``); ``1`` is the empirical risk.
    """

    name = "cvar"
    free_reweighting = True

    def __init__(self, level: float = 0.1):
        self.level = level

    def validated_level(self) -> float:
        a = real_number(self.level, "CVaR level")
        if not (0.0 < a <= 1.0):
            raise ParameterError(f"CVaR level must be in (0, 1] (the tail fraction of the losses), got {self.level!r}")
        return a

    def value(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=float)
        a = self.validated_level()
        return np.where((w >= 0) & (w <= (1.0 + 1e-12) / a), 0.0, np.inf)

    def aggregate(self, S, p, h):
        """``CVaR_a(S)`` and its weights: the samples sorted by decreasing ``S`` take weight ``1/a`` until their mass
        ``a`` is used up; the sample that crosses it takes the rest (Rockafellar and Uryasev 2000)."""
        a = self.validated_level()
        order = np.argsort(-S, kind="stable")
        before = np.r_[0.0, np.cumsum(p[order])[:-1]]                 # mass above each sorted sample
        take = np.clip(a - before, 0.0, p[order])                      # mass of the top a share it holds
        w = np.zeros_like(S, dtype=float)
        w[order] = take / np.where(p[order] > 0, p[order], 1.0) / a
        k = int(np.searchsorted(np.cumsum(p[order]), a * (1.0 - 1e-12)))
        alpha = float(S[order][min(k, S.size - 1)])                    # the value at risk
        return float(S[order] @ take) / a, alpha, w

    def supremum(self, S, p):
        return self.aggregate(S, p, 0.0)

    def declare(self, pb, v, h, N):
        a = self.validated_level()
        t = pb.aux("mot_t", N)
        pb.add_nonneg(Affine.vstack([t, t - v * (1.0 / a)]))            # t_n >= (v_n)_+ / a
        return t, h * 0.0

    def __repr__(self) -> str:
        return f"CVaR(level={self.level!r})"


#: the divergences named by a string
NAMED = {"kl": KL, "chi2": ChiSquare}


def get_divergence(spec) -> Divergence:
    """A :class:`Divergence` from ``"kl"``, ``"chi2"`` or a divergence object (checked)."""
    if isinstance(spec, Divergence):
        if isinstance(spec, CVaR):
            spec.validated_level()
        return spec
    name = str(spec).lower()
    if name in NAMED:
        return NAMED[name]()
    if name == "cvar":
        raise ParameterError("the CVaR divergence needs its level: pass divergence=dk.divergences.CVaR(level=0.1)")
    raise ParameterError(f"divergence must be 'kl', 'chi2' or a drokit divergence (dk.divergences.KL(), ChiSquare(), "
                         f"CVaR(level)), got {spec!r}")


__all__ = ["Divergence", "KL", "ChiSquare", "CVaR", "get_divergence", "NAMED"]
