"""The seven built-in losses of belbasi2023 (Table in §2; the note's A1) and selvi2022.

=====================  ==============================================  ===========  ============
loss                   L(e)                                            lip(L)       cone class
=====================  ==============================================  ===========  ============
Logistic               log(1 + exp(-e))                                1            exponential
Hinge                  max(0, 1 - e)                                   1            LP
SmoothHinge            1/2 - e (e<=0); (1-e)^2/2 (0<e<1); 0 (e>=1)    1            SOCP
Huber(delta)           e^2/2 (|e|<=delta); delta(|e| - delta/2)        delta        SOCP
Pinball(tau)           max(-tau e, (1 - tau) e)                        max(tau,1-tau)  LP
EpsilonInsensitive(t)  max(|e| - t, 0)                                 1            LP
Absolute               |e|                                             1            LP
=====================  ==============================================  ===========  ============

The first three act on the margin ``e = y f(x)`` (classification), the others on the residual
``e = f(x) - y`` (regression).
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr, expit

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from .base import CLASSIFICATION, REGRESSION, Loss, quadratic_epigraph


class Logistic(Loss):
    """Log-loss ``L(e) = log(1 + exp(-e))``, lip 1.

    Epigraph (selvi2022 Thm 1 / sun2025 App. E.1): ``log(1 + exp(-u)) <= t`` iff
    ``exp(-t) + exp(-u - t) <= 1`` iff ``exists v: (-t, 1, 1 - v) in K_exp, (-u - t, 1, v) in K_exp`` with
    ``K_exp = {(x, y, z): y exp(x / y) <= z}``: two exponential cones and one variable per term.
    """

    name = "logistic"
    task = CLASSIFICATION
    decreasing = True
    cone_class = "EXP"

    def value(self, e):
        """``max(-e, 0) + log1p(exp(-|e|))``, no overflow (2.4x faster than ``np.logaddexp(0, -e)``)."""
        e = np.asarray(e, dtype=float)
        if e.ndim == 0:
            return np.logaddexp(0.0, -e)
        out = np.exp(-np.abs(e))
        np.log1p(out, out=out)
        out += np.maximum(-e, 0.0)
        return out

    def derivative(self, e):
        """``L'(e) = -1 / (1 + exp(e)) = -expit(-e)`` (no overflow at large margins)."""
        return -expit(-np.asarray(e, dtype=float))

    def second_derivative(self, e):
        s = 1.0 / (1.0 + np.exp(-np.abs(np.asarray(e, dtype=float))))
        return s * (1.0 - s)

    def value_and_derivatives(self, e):
        """With ``t = exp(-|e|)``: ``L = max(-e, 0) + log1p(t)``, ``L' = -expit(-e)`` (``-t / (1 + t)`` for
        ``e >= 0``, ``-1 / (1 + t)`` otherwise), ``L'' = t / (1 + t)^2``: one exponential and one logarithm
        for all three (the three methods apart: 4.4 -> 3.3 ms per 100,000 margins)."""
        e = np.asarray(e, dtype=float)
        t = np.exp(-np.abs(e))
        inv = 1.0 / (1.0 + t)
        value = np.maximum(-e, 0.0) + np.log1p(t)
        slope = -np.where(e >= 0, t * inv, inv)
        return value, slope, t * inv * inv

    def conjugate(self, a):
        """``L*(a) = (-a) log(-a) + (1 + a) log(1 + a)`` on the slope domain ``[-1, 0]`` (minus the binary
        entropy of ``-a``), ``+inf`` outside."""
        a = np.asarray(a, dtype=float)
        inside = (a >= -1.0) & (a <= 0.0)
        b = np.clip(-a, 0.0, 1.0)
        return np.where(inside, -(entr(b) + entr(1.0 - b)), np.inf)

    def slope_domain(self):
        return -1.0, 0.0

    def dual_hypograph(self, pb: ProgramBuilder, m: Affine, v: Affine) -> Affine:
        """``w <= -m L*(v / m) = a log(m / a) + b log(m / b)`` with ``a = -v``, ``b = m + v`` (two relative
        entropies: exponential cones ``a exp(w_1 / a) <= m``, ``b exp(w_2 / b) <= m``, ``w = w_1 + w_2``)."""
        K = m.size
        w1, w2 = pb.aux("dual_entropy", K), pb.aux("dual_entropy", K)
        pb.add_exp(w1, -v, m)
        pb.add_exp(w2, m + v, m)
        return w1 + w2

    @property
    def lipschitz(self) -> float:
        return 1.0

    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        # v1 = 1 - v2 is substituted (v1 + v2 <= 1 is tight at the optimum): one variable and one
        # linear row fewer per term, which measurably helps Clarabel converge (fewer AlmostSolved).
        K = u.size
        v = pb.aux("logistic_v", K)
        one = pb.constant(np.ones(K))
        pb.add_exp(Affine.vstack([-t, -u - t]), Affine.vstack([one, one]), Affine.vstack([1.0 - v, v]))


class Hinge(Loss):
    """Hinge loss ``max(0, 1 - e)`` (pieces (a, b) = (-1, 1), (0, 0)), lip 1."""

    name = "hinge"
    task = CLASSIFICATION
    decreasing = True

    @property
    def pieces(self):
        return np.array([-1.0, 0.0]), np.array([1.0, 0.0])


class SmoothHinge(Loss):
    """Smooth hinge: ``1/2 - e`` for ``e <= 0``, ``(1 - e)^2 / 2`` for ``0 < e < 1``, ``0`` after; lip 1.

    Epigraph through the Moreau envelope ``L(e) = min_w (w - e)^2 / 2 + max(1 - w, 0)``
    (belbasi2023 Cor. 1(i)): ``q >= (w - u)^2 / 2`` (one SOC), ``q <= t``, ``q + 1 - w <= t``.
    """

    name = "smooth_hinge"
    task = CLASSIFICATION
    decreasing = True
    cone_class = "SOCP"

    def value(self, e):
        e = np.asarray(e, dtype=float)
        return np.where(e <= 0, 0.5 - e, np.where(e < 1, 0.5 * (1 - e) ** 2, 0.0))

    def derivative(self, e):
        e = np.asarray(e, dtype=float)
        return np.where(e <= 0, -1.0, np.where(e < 1, e - 1.0, 0.0))

    def second_derivative(self, e):
        e = np.asarray(e, dtype=float)
        return ((e > 0) & (e < 1)).astype(float)

    def conjugate(self, a):
        """``L*(a) = a + a^2 / 2`` on the slope domain ``[-1, 0]``, ``+inf`` outside."""
        a = np.asarray(a, dtype=float)
        return np.where((a >= -1.0) & (a <= 0.0), a + 0.5 * a ** 2, np.inf)

    def slope_domain(self):
        return -1.0, 0.0

    def dual_hypograph(self, pb: ProgramBuilder, m: Affine, v: Affine) -> Affine:
        """``w <= -m L*(v / m) = -v - v^2 / (2 m)``: ``v^2 <= 2 m s`` (a rotated second-order cone,
        ``||(sqrt(2) v, m - s)|| <= m + s``) with ``s = -v - w``, and ``-m <= v <= 0``."""
        K = m.size
        s = pb.aux("dual_quadratic", K)
        pb.add_soc(m + s, [v * np.sqrt(2.0), m - s])
        pb.add_nonneg(Affine.vstack([v + m, -v]))
        return -v - s

    @property
    def lipschitz(self) -> float:
        return 1.0

    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        K = u.size
        w = pb.aux("smooth_hinge_w", K)
        q = pb.aux("smooth_hinge_q", K)
        quadratic_epigraph(pb, w - u, q)
        pb.add_nonneg(Affine.vstack([t - q, t - q + w - 1.0]))


class Huber(Loss):
    """Huber loss ``e^2/2`` for ``|e| <= delta``, ``delta (|e| - delta/2)`` otherwise; lip = delta.

    Epigraph (belbasi2023 Cor. 3): ``L(e) = min_p (e - p)^2 / 2 + delta |p|``, so
    ``q >= (u - p)^2 / 2`` (one SOC), ``r >= |p|``, ``q + delta r <= t``.
    """

    name = "huber"
    task = REGRESSION
    cone_class = "SOCP"

    def __init__(self, delta: float = 1.0):
        self.delta = delta

    def _check(self) -> float:
        d = float(self.delta)
        if not (np.isfinite(d) and d > 0):
            raise ParameterError(f"Huber delta must be a positive finite number, got {self.delta!r}")
        return d

    def value(self, e):
        d = self._check()
        a = np.abs(np.asarray(e, dtype=float))
        return np.where(a <= d, 0.5 * a ** 2, d * (a - 0.5 * d))

    def derivative(self, e):
        d = self._check()
        return np.clip(np.asarray(e, dtype=float), -d, d)

    def second_derivative(self, e):
        return (np.abs(np.asarray(e, dtype=float)) <= self._check()).astype(float)

    def conjugate(self, a):
        """``L*(a) = a^2 / 2`` on the slope domain ``[-delta, delta]``, ``+inf`` outside."""
        d = self._check()
        a = np.asarray(a, dtype=float)
        return np.where(np.abs(a) <= d, 0.5 * a ** 2, np.inf)

    def slope_domain(self):
        d = self._check()
        return -d, d

    def dual_hypograph(self, pb: ProgramBuilder, m: Affine, v: Affine) -> Affine:
        """``w <= -m L*(v / m) = -v^2 / (2 m)``: ``v^2 <= 2 m s`` (a rotated second-order cone) with ``s = -w``,
        and ``-delta m <= v <= delta m``."""
        d = self._check()
        K = m.size
        s = pb.aux("dual_quadratic", K)
        pb.add_soc(m + s, [v * np.sqrt(2.0), m - s])
        pb.add_nonneg(Affine.vstack([v + m * d, m * d - v]))
        return -s

    @property
    def lipschitz(self) -> float:
        return self._check()

    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        d = self._check()
        K = u.size
        p = pb.aux("huber_p", K)
        q = pb.aux("huber_q", K)
        r = pb.aux("huber_r", K)
        quadratic_epigraph(pb, u - p, q)
        pb.add_nonneg(Affine.vstack([r - p, r + p, t - q - r * d]))

    def get_params(self, deep=True):
        return {"delta": self.delta}


class Pinball(Loss):
    """Pinball (quantile) loss ``max(-tau e, (1 - tau) e)``, ``0 <= tau <= 1``; lip = max(tau, 1 - tau).

    With drokit's residual ``e = f - y`` this is the check loss of the ``tau``-quantile of y given x:
    over-predicting (``e > 0``) costs ``1 - tau`` per unit and under-predicting costs ``tau``, so at radius 0
    ``Pinball(0.9)`` fits the 0.9-quantile (an intercept-only fit is ``np.quantile(y, 0.9)``; checked in
    ``tests/test_losses.py``).  belbasi2023 writes the residual as ``y - f``, where the same formula is the
    ``(1 - tau)``-quantile's.  ``tau = 1/2`` gives ``|e| / 2`` (the median).
    """

    name = "pinball"
    task = REGRESSION

    def __init__(self, tau: float = 0.5):
        self.tau = tau

    @property
    def pieces(self):
        tau = float(self.tau)
        if not (0.0 <= tau <= 1.0):
            raise ParameterError(f"Pinball tau must lie in [0, 1], got {self.tau!r}")
        return np.array([-tau, 1.0 - tau]), np.array([0.0, 0.0])

    def get_params(self, deep=True):
        return {"tau": self.tau}


class EpsilonInsensitive(Loss):
    """Epsilon-insensitive loss ``max(|e| - tau, 0)``, ``tau >= 0`` (support vector regression); lip 1."""

    name = "epsilon_insensitive"
    task = REGRESSION

    def __init__(self, tau: float = 0.1):
        self.tau = tau

    @property
    def pieces(self):
        tau = float(self.tau)
        if not (np.isfinite(tau) and tau >= 0.0):
            raise ParameterError(f"EpsilonInsensitive tau must be >= 0, got {self.tau!r}")
        return np.array([1.0, -1.0, 0.0]), np.array([-tau, -tau, 0.0])

    def get_params(self, deep=True):
        return {"tau": self.tau}


class Absolute(Loss):
    """Absolute loss ``|e|`` (pieces (1, 0), (-1, 0)); lip 1."""

    name = "absolute"
    task = REGRESSION

    @property
    def pieces(self):
        return np.array([1.0, -1.0]), np.array([0.0, 0.0])
