"""The certificate of the barrier solver (:mod:`drokit.solvers.barrier`): a Lagrangian dual point of the scaled
program of :mod:`drokit.solvers.barrier_problem` and its value, a lower bound on the optimum.

For any ``a_n, pi_n`` in [0, 1], ``L(u) >= -a u + H(a)`` (``H(a) = -a log a - (1 - a) log(1 - a)``, the conjugate
of the log-loss) and ``(u - kappa lambda)_+ >= pi (u - kappa lambda)``; summing, the minimum over
``(phi, b, lambda)`` of the resulting linear function is ``sum_n p_n H(a_n)`` when

    sum_n p_n (a_n - pi_n) y_n z_n = 0   (z_n: 1 for the intercept, the columns of immutable features),
    ||sum_n p_n (a_n - pi_n) y_n x~_n||_p + kappa sum_n p_n pi_n <= eps

(``p`` the ground norm's exponent, dual to ``q``), and minus infinity otherwise.  So

    OPT >= sum_n p_n H(a_n)   for every such (a, pi).

:meth:`CertifiedProblem.lower_bound` takes ``a_n = sigma(-u_n)`` (the loss's slope) and ``pi_n = 1 / (tau (t_n -
u_n + kappa lambda))`` (the barrier's multiplier, :meth:`CertifiedProblem.flip_multipliers`), restores the equality
conditions exactly (the intercept's by rescaling one class's ``a_n``, those of immutable features' columns by a
weighted least-norm change, :meth:`CertifiedProblem.repaired`) and the budget by scaling ``(a, pi)`` by
``eps / budget`` when it is exceeded (both kinds of condition are homogeneous; :meth:`CertifiedProblem.dual_value`).
Near the optimum the samples at the kink ``u_n = kappa lambda`` defeat the barrier's multipliers
(:meth:`CertifiedProblem.polished_flip_multipliers` re-optimizes them).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from scipy.special import entr, expit

from ..metrics.costs import NormCost
from .barrier_problem import ScaledProblem, State

#: flip multipliers strictly between this and 1 minus this mark the samples at the kink
KINK_PI = 1e-4


class CertifiedProblem(ScaledProblem):
    """The scaled program with its dual side: the dual bound of the module docstring at a barrier iterate."""

    def lower_bound(self, state: State, tau: float, polish: bool = False) -> float:
        """The dual bound of the module docstring at the multipliers of ``state``; with ``polish`` (finite
        kappa) also at the multipliers re-optimized on the kink samples (:meth:`polished_flip_multipliers`),
        and the larger of the two."""
        u = self.margins(state.w)
        a = expit(-u)
        pi = self.flip_multipliers(state, tau, u)
        bound = self.dual_value(a, pi)
        if polish and self.flips:
            polished = self.polished_flip_multipliers(a, pi)
            if polished is not None:
                bound = max(bound, self.dual_value(a, polished))
        return bound

    def flip_multipliers(self, state: State, tau: float, u: np.ndarray) -> np.ndarray:
        """``pi_n``: the barrier's multiplier of ``t_n >= u_n - kappa lambda`` (0 without label flips)."""
        if not self.flips:
            return np.zeros_like(u)
        t = state.t
        h = t - u + self.kappa * state.w[self.lam_at]
        # 1 / (tau h) = 1 - 1 / (tau t) when centered: use the form without cancellation (h << t means
        # h = t - (u - kappa lambda) lost its digits, and 1 / (tau t) is then the accurate term)
        scale = 1.0 / (tau * self.p)                    # p > 0: samples of weight 0 are left out
        return np.clip(np.where(h >= t, scale / h, 1.0 - scale / t), 0.0, 1.0)

    def budget(self, a: np.ndarray, pi: np.ndarray) -> float:
        """``||sum_n p_n (a_n - pi_n) y_n x~_n||_p + kappa sum_n p_n pi_n``: dual feasible when <= eps."""
        v = self.A[:, : self.d].T @ (self.p * (a - pi))
        out = float(np.linalg.norm(v, ord=self.ground_exponent))
        return out + (self.kappa * float(self.p @ pi) if self.flips else 0.0)

    @property
    def ground_exponent(self) -> float:
        """The ground norm's exponent ``p``: the dual of the dual-norm exponent ``q``."""
        return NormCost(p=self.q).dual_p

    def dual_value(self, a: np.ndarray, pi: np.ndarray) -> float:
        """``sum_n p_n H(a_n)`` after making ``(a, pi)`` dual feasible: the free columns' conditions by
        :meth:`repaired`, the budget by scaling ``(a, pi)`` by ``eps / budget`` when it exceeds eps
        (the scaled point keeps the intercept condition: it is linear and homogeneous)."""
        a = self.repaired(a, pi)
        if a is None:
            return -np.inf
        spent = self.budget(a, pi)
        if spent > self.eps:
            a = a * (self.eps / spent)
        return float(self.p @ (entr(a) + entr(1.0 - a)))

    def polished_flip_multipliers(self, a: np.ndarray, pi: np.ndarray) -> Optional[np.ndarray]:
        """Flip multipliers re-optimized where the barrier cannot resolve them.

        At large ``tau`` the samples at the kink ``u_n = kappa lambda`` have both ``t_n`` and
        ``t_n - u_n + kappa lambda`` near 1 / tau; their Newton systems lose every digit and the barrier's
        ``pi_n`` (between 0 and 1 there) no longer satisfies stationarity.  Here ``pi_n`` is rounded to 0
        or 1 off the kink and chosen on the kink set ``K`` (``1e-4 < pi_n < 1 - 1e-4``: ``t_n`` and the slack
        both below ``1e4 / tau``; a kink multiplier can be small, e.g. ``eps / kappa`` when every sample is at
        the kink) to minimize the budget
        subject to the intercept condition, a small conic program solved by Clarabel:

            minimize ||v_0 - sum_{n in K} p_n pi_n y_n x~_n||_p + kappa sum_{n in K} p_n pi_n
            s.t.     sum_{n in K} p_n pi_n y_n = sum_n p_n a_n y_n - sum_{n not in K} p_n pi_n y_n,
                     0 <= pi_K <= 1.

        Any ``pi`` in [0, 1] gives a valid bound; this one is the best for the given ``a``.  ``None``
        when there is no kink set, it is too large (> 2,000 samples) or the small program fails."""
        from ..conic.builder import Affine, ProgramBuilder
        from .base import solve_with_retries
        from .clarabel import ClarabelBackend
        kink = np.flatnonzero((pi > KINK_PI) & (pi < 1.0 - KINK_PI))
        if kink.size == 0 or kink.size > 2000:
            return None
        fixed = np.round(pi)
        fixed[kink] = 0.0
        pk = self.p[kink]
        v0 = self.A[:, : self.d].T @ (self.p * (a - fixed))
        M = self.A[kink, : self.d].T * pk                 # columns p_n y_n x~_n (A holds y_n x~_n)
        pb = ProgramBuilder()
        x, z = pb.var("pi", kink.size), pb.var("z", 1)
        pb.add_nonneg(Affine.vstack([x, 1.0 - x]))
        NormCost(p=self.q).add_dual_norm_leq(pb, x.premultiply(-M) + v0, z, np.ones(self.d))
        if self.k > self.d:                                # the free columns' conditions
            F = self.A[:, self.d:]
            rhs = F.T @ (self.p * (a - fixed))
            pb.add_zero(x.premultiply((F[kink] * pk[:, None]).T) - rhs)
        pb.minimize(z + x.premultiply((self.kappa * pk)[None, :]))
        try:
            sol = solve_with_retries(ClarabelBackend(), pb.build())
        except Exception:                                  # the bound only improves on success
            return None
        if sol.x is None or sol.status not in ("optimal", "optimal_inaccurate"):
            return None
        out = fixed.copy()
        out[kink] = np.clip(sol.x[:kink.size], 0.0, 1.0)
        return out

    def repaired(self, a: np.ndarray, pi: np.ndarray) -> Optional[np.ndarray]:
        """``a`` changed so that ``sum_n p_n (a_n - pi_n) y_n z_n = 0`` for every free column ``z`` (the
        intercept's ``1`` included), staying in [0, 1]; ``None`` if that fails.

        The intercept alone: :func:`_balanced` (one class rescaled).  Several free columns: the change
        ``a_n + r_n (F c)_n`` with ``r_n = min(a_n, 1 - a_n)`` (room in [0, 1]) and ``F`` the free columns
        times ``y_n``, ``c`` solving ``F^T diag(p r) F c = -F^T (p (a - pi))``; valid when every
        ``|(F c)_n| <= 1``."""
        m = self.k - self.d
        if m == 0:
            return a
        if m == 1 and self.fit_intercept:
            return _balanced(a, pi, self.p, self.y)
        F = self.A[:, self.d:]
        residual = F.T @ (self.p * (a - pi))
        if not np.any(residual):
            return a
        room = np.minimum(a, 1.0 - a)
        gram = F.T @ (F * (self.p * room)[:, None])
        c = np.linalg.lstsq(gram, -residual, rcond=None)[0]
        step = F @ c
        if not np.all(np.abs(step) <= 1.0):
            return None
        return np.clip(a + room * step, 0.0, 1.0)


def _balanced(a: np.ndarray, pi: np.ndarray, p: np.ndarray, y: np.ndarray) -> Optional[np.ndarray]:
    """``a`` changed on one class so that ``sum_n p_n (a_n - pi_n) y_n = 0`` exactly, staying in [0, 1]
    (scale the class with the excess down, or else move the other class toward 1); ``None`` if impossible."""
    pos = y > 0
    target = float(p @ (pi * y))                     # needed: A_plus - A_minus = target
    a_plus, a_minus = float(p[pos] @ a[pos]), float(p[~pos] @ a[~pos])
    excess = a_plus - a_minus - target
    out = a.copy()
    if excess == 0.0:
        return out
    big, small = (pos, ~pos) if excess > 0 else (~pos, pos)
    a_big, a_small = (a_plus, a_minus) if excess > 0 else (a_minus, a_plus)
    need = a_big - abs(excess)                       # what the bigger side must sum to
    if need >= 0 and a_big > 0:
        out[big] *= need / a_big
        return out
    room = float(p[small] @ (1.0 - a[small]))        # or raise the other side toward 1
    if room > 0 and abs(excess) <= room:
        out[small] += (abs(excess) / room) * (1.0 - a[small])
        return out
    return None
