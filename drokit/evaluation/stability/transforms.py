"""The d-transform of a loss of a linear score under the squared transport cost (blanchet2024 Prop. 1).

For a linear model the loss of a moved sample depends on the move only through the change ``t`` of its
loss argument ``e`` (margin ``y f(x)`` or residual ``f(x) - y``), and the cheapest numerical move with
``beta_x^T delta = t`` costs ``||Gamma delta||_2^2 = t^2 / nu`` with ``nu = ||Gamma^{-1} beta_x||_2^2``
(Cauchy-Schwarz; spec §3.1 (A.19) and §4 "feature-specific cost weights").  With ``a = theta1 / nu`` the
inner maximization of the dual is the one-dimensional problem

    T(h, a, e) = max_v  h L(v) - a (v - e)^2,        v* its maximizer (the new loss argument).

Closed forms (each a sup over the conjugate, ``L(v) = sup_g g v - L*(g)``, so
``T = sup_{g in dom L*} h g e - h L*(g) + h^2 g^2 / (4 a)`` and ``v* = e + h g* / (2 a)``):

* max-affine ``L = max_k a_k v + b_k`` (hinge, absolute, pinball, epsilon-insensitive):
  ``T = max_k h (a_k e + b_k) + h^2 a_k^2 / (4 a)`` (spec §3.1; the paper's ``b_k`` erratum fixed);
* Huber, smooth hinge: ``L*`` is quadratic on an interval, so ``T`` maximizes a quadratic in ``g`` on an
  interval: interior point when ``c = h / (2a) < 1`` (concave), an endpoint otherwise;
* squared ``L = v^2``: ``T = h a e^2 / (a - h)`` for ``h < a`` and ``+inf`` for ``h >= a``;
* logistic: ``v*`` solves ``g(v) = v - e + c sigmoid(-v) = 0`` on ``[e - c, e]``.  ``g' = 1 - c s (1 - s)``:
  monotone when ``c <= 4``; otherwise ``g`` rises, falls on ``|v| < v0`` and rises again, so there are at
  most two local maxima (one per rising piece), found by safeguarded Newton and compared;
* 0/1 loss ``1[v <= 0]`` (a misclassification, boundary included): ``T = (h - a (e)_+^2)_+`` (spec §3.2);
* any other convex loss with a finite Lipschitz constant (a hand-written :class:`~drokit.losses.Loss`, a
  :func:`~drokit.losses.from_sympy` loss), from :meth:`~drokit.losses.Loss.value` (and ``derivative`` /
  ``second_derivative`` to polish): a certified one-dimensional global maximization, :func:`generic_transform`.
  Its maximizer satisfies ``v* - e = c g`` for a subgradient ``g`` of ``L`` at ``v*``, so it lies in
  ``[e + c lo, e + c hi]`` (``lo <= L' <= hi``: :func:`drokit.losses.base.slope_bounds`), ``c = h / (2a)``.
  On a cell ``[v0, v1]`` of that bracket ``L`` is below its chord (convexity), so ``F = h L(v) - a (v - e)^2``
  is below a concave quadratic whose maximum is explicit: branch and bound (cells split fourfold, those
  whose bound is below the best value found are dropped) certifies ``T`` to a relative ``1e-13``; Newton's
  method on ``v - e - c L'(v) = 0`` from the best point then polishes the maximizer.

``a = inf`` (nothing numerical can move) gives ``T = h L(e)``.  A loss that grows faster than linearly has
no such bracket (``T`` may be infinite): the squared loss is the only one handled (closed form).
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
from scipy.special import expit

from ...exceptions import ParameterError
from ...losses.base import Loss, REGRESSION, growth_reason, lipschitz_of, slope_bounds
from ...losses.builtin import Huber, Logistic, SmoothHinge


class Squared(Loss):
    """Squared loss ``L(e) = e^2`` of the residual (for linear regressors in the stability criterion;
    its slope is unbounded, so it has no Wasserstein-DRO reformulation over numerical features)."""

    name = "squared"
    task = REGRESSION
    cone_class = "SOCP"

    def value(self, e):
        return np.asarray(e, dtype=float) ** 2

    def derivative(self, e):
        return 2.0 * np.asarray(e, dtype=float)

    def second_derivative(self, e):
        return np.full_like(np.asarray(e, dtype=float), 2.0)

    @property
    def lipschitz(self) -> float:
        return np.inf


class ZeroOne(Loss):
    """0/1 loss of the margin, ``L(e) = 1[e <= 0]`` (a point on the decision boundary counts as an error,
    which makes the loss upper semicontinuous, as the stability duality needs; spec §3.2).  Not convex:
    usable in :func:`drokit.stability` only."""

    name = "zero_one"
    task = "classification"
    decreasing = True

    def value(self, e):
        return (np.asarray(e, dtype=float) <= 0).astype(float)

    def derivative(self, e):
        return np.zeros_like(np.asarray(e, dtype=float))

    @property
    def lipschitz(self) -> float:
        return np.inf


def _newton_root(g, dg, lo, hi, iters: int = 100, tol: float = 1e-14):
    """Root of an increasing ``g`` on ``[lo, hi]`` (``g(lo) <= 0 <= g(hi)``), elementwise: Newton steps,
    bisection when a step leaves the bracket."""
    lo, hi = lo.copy(), hi.copy()
    x = 0.5 * (lo + hi)
    for _ in range(iters):
        gx = g(x)
        lo = np.where(gx <= 0, x, lo)
        hi = np.where(gx >= 0, x, hi)
        d = dg(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x - gx / d
        inside = (d > 0) & (step >= lo) & (step <= hi)  # a step onto a bracket end is the root itself
        x_new = np.where(inside, step, 0.5 * (lo + hi))
        width = np.abs(x_new - x)
        x = x_new
        if np.all(width <= tol * (1.0 + np.abs(x))):
            break
    return x


def _logistic_transform(h: float, a: float, e: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    c = h / (2.0 * a)

    def g(v):
        return v - e_b + c * expit(-v)

    def dg(v):
        s = expit(v)
        return 1.0 - c * s * (1.0 - s)

    def F(v):
        return h * np.logaddexp(0.0, -v) - a * (v - e) ** 2

    e_b = e
    lo, hi = e - c, e.copy()
    if c <= 4.0:
        v = _newton_root(g, dg, lo, hi)
        return F(v), v
    v0 = float(np.log((1.0 + np.sqrt(1.0 - 4.0 / c)) / (1.0 - np.sqrt(1.0 - 4.0 / c))))
    # left rising piece (-inf, -v0] and right rising piece [v0, inf), each intersected with [e - c, e]
    left_hi = np.minimum(hi, -v0)
    right_lo = np.maximum(lo, v0)
    has_left = (lo <= left_hi) & (g(left_hi) >= 0)
    has_right = (right_lo <= hi) & (g(right_lo) <= 0)
    vl = _newton_root(g, dg, lo, np.where(has_left, left_hi, lo + 1.0))
    vr = _newton_root(g, dg, np.where(has_right, right_lo, hi - 1.0), hi)
    Fl = np.where(has_left, F(vl), -np.inf)
    Fr = np.where(has_right, F(vr), -np.inf)
    take_right = Fr > Fl
    return np.where(take_right, Fr, Fl), np.where(take_right, vr, vl)


def _quadratic_conjugate(h, a, slope_term, g_lo, g_hi, offset_term):
    """max over g in [g_lo, g_hi] of ``h g slope_term + q g^2`` with ``q = (h/2)(c - 1)``, ``c = h/(2a)``."""
    c = h / (2.0 * a)
    q = 0.5 * h * (c - 1.0)
    if q < 0:
        g = np.clip(h * slope_term / (-2.0 * q), g_lo, g_hi)
    else:
        val_lo = h * g_lo * slope_term + q * g_lo ** 2
        val_hi = h * g_hi * slope_term + q * g_hi ** 2
        g = np.where(val_hi >= val_lo, g_hi, g_lo)
    return h * g * slope_term + q * g ** 2 + offset_term, g


def d_transform(loss: Loss, h: float, a: float, e: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(T(h, a, e), v*)`` elementwise (see the module docstring); ``a = theta1 / nu`` in ``(0, inf]``."""
    e = np.asarray(e, dtype=float)
    if h == 0:
        return np.zeros_like(e), e.copy()
    if np.isinf(a):
        return h * loss.value(e), e.copy()
    if isinstance(loss, ZeroOne):
        moved = np.maximum(e, 0.0)
        value = np.maximum(h - a * moved ** 2, 0.0)
        flip = (e > 0) & (h - a * moved ** 2 >= 0)
        return np.where(e <= 0, h, value), np.where(flip, 0.0, e)
    pieces = loss.pieces
    if pieces is not None:
        slopes, offsets = pieces
        vals = h * (np.multiply.outer(e, slopes) + offsets) + h ** 2 * slopes ** 2 / (4.0 * a)
        k = np.argmax(vals, axis=-1)
        return np.take_along_axis(vals, k[..., None], -1)[..., 0], e + h * slopes[k] / (2.0 * a)
    if isinstance(loss, Logistic):
        return _logistic_transform(h, a, e)
    if isinstance(loss, Squared):
        if h >= a:
            return np.full_like(e, np.inf), np.full_like(e, np.nan)
        return h * a * e ** 2 / (a - h), a * e / (a - h)
    if isinstance(loss, Huber):
        d = loss._check()
        value, g = _quadratic_conjugate(h, a, e, -d, d, 0.0)
        return value, e + h * g / (2.0 * a)
    if isinstance(loss, SmoothHinge):
        # L*(g) = g + g^2/2 on [-1, 0]:  h g e - h (g + g^2/2) + h^2 g^2/(4a) = h g (e - 1) + q g^2
        value, g = _quadratic_conjugate(h, a, e - 1.0, -1.0, 0.0, 0.0)
        return value, e + h * g / (2.0 * a)
    return generic_transform(loss, h, a, e)


#: cells of the first grid over each maximizer's bracket, the split factor and the rounds of the refinement
GENERIC_GRID, GENERIC_SPLIT, GENERIC_ROUNDS = 64, 4, 80
#: relative accuracy to which :func:`generic_transform` certifies ``T``
GENERIC_RTOL = 1e-13


def generic_transform(loss: Loss, h: float, a: float, e: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(T(h, a, e), v*)`` for any convex loss with finite slope bounds ``lo <= L' <= hi``, by branch and
    bound on ``[e + c lo, e + c hi]`` with the chord bound, then Newton polishing (module docstring).

    ``T`` is the value at a point (a lower bound) certified within ``GENERIC_RTOL (1 + |T|)`` of the maximum;
    the polished maximizer is kept where Newton converged and its value is within that tolerance of the best
    point's."""
    lip = lipschitz_of(loss)
    lo, hi = slope_bounds(loss)
    if not (np.isfinite(lip) and np.isfinite(lo) and np.isfinite(hi)):
        raise ParameterError(f"the stability criterion needs a loss that grows at most linearly for a linear "
                             f"model whose numerical features move (its inner maximization is otherwise "
                             f"unbounded or has no bracket): {growth_reason(loss)}; the squared loss is the "
                             f"exception drokit handles (loss='squared')")
    e = np.asarray(e, dtype=float)
    shape = e.shape
    e = e.ravel()
    c = h / (2.0 * a)
    width = c * (hi - lo)
    left = e + c * lo

    def F(v, ee):
        values = np.asarray(loss.value(v), dtype=float)
        if not np.all(np.isfinite(values)):
            bad = np.asarray(v)[~np.isfinite(values)].ravel()[0]
            raise ParameterError(f"loss {getattr(loss, 'name', loss)!r} returned a non-finite value at {bad:.6g} "
                                 f"in the stability criterion's inner maximization; its value() must be finite on "
                                 f"the reals")
        return h * values - a * (v - ee) ** 2, values

    if width == 0 or e.size == 0:  # an affine loss: the maximizer is explicit
        T, _ = F(left, e)
        return T.reshape(shape), left.reshape(shape)
    M = e.size
    nodes = left[:, None] + width * np.linspace(0.0, 1.0, GENERIC_GRID + 1)[None, :]
    Fn, Ln = F(nodes, e[:, None])
    k = np.argmax(Fn, axis=1)
    rows = np.arange(M)
    best, v_best = Fn[rows, k], nodes[rows, k]
    # the cells: element, ends and loss values at the ends
    elem = np.repeat(rows, GENERIC_GRID)
    v0, v1 = nodes[:, :-1].ravel(), nodes[:, 1:].ravel()
    L0, L1 = Ln[:, :-1].ravel(), Ln[:, 1:].ravel()
    step = np.full(M, width / GENERIC_GRID)
    for _ in range(GENERIC_ROUNDS):
        ee = e[elem]
        slope = (L1 - L0) / (v1 - v0)
        top = np.clip(ee + c * slope, v0, v1)                # the vertex of the concave quadratic bound
        bound = h * (L0 + slope * (top - v0)) - a * (top - ee) ** 2
        alive = (bound > best[elem] + GENERIC_RTOL * (1.0 + np.abs(best[elem]))) \
            & (v1 - v0 > 8 * np.finfo(float).eps * (1.0 + np.abs(v0)))
        if not alive.any():
            break
        elem, v0, v1, L0, L1 = elem[alive], v0[alive], v1[alive], L0[alive], L1[alive]
        # split every live cell into GENERIC_SPLIT cells
        frac = np.arange(1, GENERIC_SPLIT) / GENERIC_SPLIT
        inner = v0[:, None] + (v1 - v0)[:, None] * frac[None, :]
        Fi, Li = F(inner, e[elem][:, None])
        flat_F, flat_v, flat_e = Fi.ravel(), inner.ravel(), np.repeat(elem, GENERIC_SPLIT - 1)
        top_F = best.copy()
        np.maximum.at(top_F, flat_e, flat_F)
        better = flat_F > best[flat_e]
        hit = better & (flat_F >= top_F[flat_e])
        v_best[flat_e[hit]] = flat_v[hit]
        best = top_F
        np.minimum.at(step, elem, (v1 - v0) / GENERIC_SPLIT)
        ends_v = np.column_stack([v0, inner, v1])
        ends_L = np.column_stack([L0, Li, L1])
        elem = np.repeat(elem, GENERIC_SPLIT)
        v0, v1 = ends_v[:, :-1].ravel(), ends_v[:, 1:].ravel()
        L0, L1 = ends_L[:, :-1].ravel(), ends_L[:, 1:].ravel()
    # Newton on g(v) = v - e - c L'(v) (F' = -2a g) from the best point, within a few of the finest cells
    # around it (the bound locates the maximizer to about sqrt(GENERIC_RTOL); Newton's root is exact)
    step = np.minimum(64 * step, width / GENERIC_GRID)
    v = v_best.copy()
    for _ in range(30):
        g = v - e - c * np.asarray(loss.derivative(v), dtype=float)
        dg = 1.0 - c * np.asarray(loss.second_derivative(v), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            trial = np.where(dg > 0, v - g / dg, v)
        trial = np.clip(trial, v_best - step, v_best + step)
        if np.all(np.abs(trial - v) <= 4 * np.finfo(float).eps * (1.0 + np.abs(v))):
            break
        v = trial
    F_polished, _ = F(v, e)
    residual = np.abs(v - e - c * np.asarray(loss.derivative(v), dtype=float))
    take = (residual <= 1e-12 * (1.0 + np.abs(v))) & (F_polished >= best - GENERIC_RTOL * (1.0 + np.abs(best)))
    T = np.where(take, F_polished, best)
    v_star = np.where(take, v, v_best)
    return T.reshape(shape), v_star.reshape(shape)


def h_limit(loss: Loss, a: float) -> float:
    """Largest ``h`` with a finite transform: ``a`` for the squared loss (its ``T`` blows up at ``h = a``),
    else ``inf``."""
    return a if isinstance(loss, Squared) and np.isfinite(a) else np.inf


def sup_loss_unbounded(loss: Loss) -> bool:
    """Whether ``sup_v L(v) = inf`` (every built-in convex loss; not the 0/1 loss)."""
    return not isinstance(loss, ZeroOne)
