"""Convex conjugates of losses, for Lagrangian lower bounds.

For a convex loss ``L`` the conjugate is ``L*(a) = sup_e (a e - L(e))``, finite on the slope domain
``[inf L', sup L']`` and ``+inf`` outside it.  Fenchel's inequality ``L(e) >= a e - L*(a)`` holds for every
``a`` and every ``e``: it is what turns multipliers into a certified lower bound
(:mod:`drokit.certificates.lagrangian`), whatever the multipliers are, as long as ``L*(a)`` is evaluated
exactly (or from above).

Sources of ``L*``, in order:

* the loss's own ``conjugate(a)`` method (the smooth built-ins have closed forms: logistic
  ``L*(a) = (-a) log(-a) + (1 + a) log(1 + a)`` on ``[-1, 0]``; smooth hinge ``a + a^2 / 2`` on ``[-1, 0]``;
  Huber ``a^2 / 2`` on ``[-delta, delta]``);
* piecewise-affine losses ``L(e) = max_j a_j e + b_j`` (:attr:`Loss.pieces`): the supremum of the concave
  piecewise-linear ``a e - L(e)`` is attained at a kink of ``L``, so ``L*(a) = max_kinks (a e_k - L(e_k))``,
  exact;
* any other convex loss with :meth:`Loss.value` and :meth:`Loss.derivative`: ``e(a)`` with ``L'(e) = a`` by
  bisection (``L'`` is non-decreasing), then ``a e - L(e)``, which is below ``L*(a)`` by a second-order
  term of the bisection's error (machine precision after 200 halvings).  The bracket grows from
  ``[-1, 1]`` by doubling only while ``L'`` and ``L`` stay finite (a loss written in sympy overflows:
  ``log(1 + exp(-e))`` is ``inf`` at ``e = -1000`` and its derivative ``nan``; a bracket of ``+-1e8`` gave
  ``L*(-0.5) = -inf`` and a "lower bound" of ``+inf``); a value that is still not finite is ``+inf``, which
  only weakens the bound.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

#: the slope domain of a smooth loss without a ``slope_domain`` is read off ``L'`` this far out
_FAR = 1e8
_BISECTIONS = 200


def slope_domain(loss) -> Tuple[float, float]:
    """``[inf_e L'(e), sup_e L'(e)]``: where ``L*`` is finite (its closure)."""
    own = getattr(loss, "slope_domain", None)
    lo = hi = np.nan
    if own is not None:
        lo, hi = (float(v) for v in (own() if callable(own) else own))
    elif loss.pieces is not None:
        return float(np.min(loss.pieces[0])), float(np.max(loss.pieces[0]))
    if np.isnan(lo) or np.isnan(hi):           # not known: read off L' far out, within +-lip(L)
        far_lo, far_hi = (float(v) for v in loss.derivative(np.array([_finite_reach(loss, -1.0),
                                                                       _finite_reach(loss, 1.0)])))
        lo, hi = (far_lo if np.isnan(lo) else lo), (far_hi if np.isnan(hi) else hi)
    lip = float(getattr(loss, "lipschitz", np.inf))
    return max(lo, -lip), min(hi, lip)


def conjugate(loss, a: np.ndarray) -> np.ndarray:
    """``L*(a)`` elementwise (``+inf`` outside the slope domain); see the module docstring."""
    a = np.asarray(a, dtype=float)
    own = getattr(loss, "conjugate", None)
    if own is not None:
        return np.asarray(own(a), dtype=float)
    lo, hi = slope_domain(loss)
    inside = (a >= lo) & (a <= hi)
    pieces = loss.pieces
    if pieces is not None:
        kinks = _kinks(*pieces)
        out = np.max(np.multiply.outer(a, kinks) - loss.value(kinks), axis=-1)
    else:
        e = _inverse_derivative(loss, np.clip(a, lo, hi))
        with np.errstate(all="ignore"):
            out = a * e - loss.value(e)
        out = np.where(np.isfinite(out), out, np.inf)    # never below L*: an unknown value only weakens the bound
    return np.where(inside, out, np.inf)


def _kinks(slopes: np.ndarray, intercepts: np.ndarray) -> np.ndarray:
    """The points where two pieces of ``max_j a_j e + b_j`` meet on the envelope (one point, 0, when
    there is a single slope)."""
    a, b = np.asarray(slopes, dtype=float), np.asarray(intercepts, dtype=float)
    i, j = np.triu_indices(a.size, k=1)
    distinct = a[i] != a[j]
    e = -(b[i] - b[j])[distinct] / (a[i] - a[j])[distinct]
    if e.size == 0:
        return np.zeros(1)
    envelope = np.max(np.multiply.outer(e, a) + b, axis=-1)
    on = np.isclose(a[i][distinct] * e + b[i][distinct], envelope, rtol=1e-12, atol=1e-12)
    return np.unique(e[on]) if np.any(on) else e


def _finite_reach(loss, sign: float) -> float:
    """The farthest ``e = sign 2^k`` (``2^k <= _FAR``) from 0 out to which ``L`` and ``L'`` are finite."""
    reach = 0.0
    e = 1.0
    while e <= _FAR:
        point = np.array([sign * e])
        with np.errstate(all="ignore"):
            ok = np.all(np.isfinite(loss.value(point))) and np.all(np.isfinite(loss.derivative(point)))
        if not ok:
            break
        reach, e = e, 2.0 * e
    return sign * reach


def _inverse_derivative(loss, a: np.ndarray) -> np.ndarray:
    """``e`` with ``L'(e) ~ a`` by vectorized bisection (``L'`` non-decreasing) on the bracket where ``L`` and
    ``L'`` are finite (:func:`_finite_reach`)."""
    lo = np.full(a.shape, _finite_reach(loss, -1.0))
    hi = np.full(a.shape, _finite_reach(loss, 1.0))
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        with np.errstate(all="ignore"):
            below = loss.derivative(mid) < a
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
        if np.all(hi - lo <= 1e-15 * np.maximum(1.0, np.abs(mid))):
            break
    return 0.5 * (lo + hi)


def dual_hypograph(pb, loss, m, v):
    """Add variables ``w`` with ``w_k <= -m_k L*(v_k / m_k)`` (the perspective of ``-L*``, jointly concave in
    ``(m, v)``; it also keeps ``v_k / m_k`` in the slope domain) to the
    :class:`~drokit.conic.ProgramBuilder` ``pb`` and return them; ``None`` for a loss with neither a
    ``dual_hypograph`` method nor pieces (the caller then uses tangents).

    Piecewise-affine losses: ``-m L*(v / m) = min_kinks (m L(e_j) - v e_j)`` with ``m lo <= v <= m hi`` (an LP).
    The smooth built-ins implement it with exponential or second-order cones."""
    own = getattr(loss, "dual_hypograph", None)
    if own is not None:
        return own(pb, m, v)
    pieces = loss.pieces
    if pieces is None:
        return None
    from ..conic.builder import Affine
    lo, hi = slope_domain(loss)
    kinks = _kinks(*pieces)
    w = pb.aux("dual_value", m.size)
    parts = [m * float(L_j) - v * float(e_j) - w for e_j, L_j in zip(kinks, loss.value(kinks))]
    pb.add_nonneg(Affine.vstack(parts + [v - m * lo, m * hi - v]))
    return w
