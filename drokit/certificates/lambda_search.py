"""The one-dimensional problem of every certificate: minimize ``F(lambda)`` over ``lambda >= lambda_min``.

For a fixed model the worst-case risk is (belbasi2023 (3) with ``beta`` fixed, sun2025 (3))

    WC(beta) = min_{lambda >= lambda_min(beta)} F(lambda),
    F(lambda) = lambda eps + sum_n p_n max_k (l_k - lambda c_k),

convex and piecewise linear in ``lambda``; one oracle call (or one pass over enumerated rows) at ``lambda`` gives
``F(lambda)`` and the subgradient ``eps - sum_n p_n c_{k*_n}`` of the maximizers there.  :func:`minimize_line` is
Kelley's cutting-plane method on this line: two supporting lines with slopes of opposite sign bracket the minimum, and
``F`` at their intersection either equals the lines' value there (optimal) or gives a new line; finite for a
piecewise-linear ``F``.  Used by the certified upper bound (:func:`drokit.certificates.worst_case.worst_case_value_oracle`)
and by the worst-case distribution (:func:`drokit.certificates.support.worst_case_support`, which also needs the
bracketing points: their maximizers are the two sides of the distribution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..exceptions import SolverError


@dataclass
class LinePoint:
    """``F`` and a subgradient at ``lam``, with what the caller needs of its maximizers (``data``: rows, a
    separation, or ``None``)."""

    lam: float
    value: float
    slope: float
    data: object = None


@dataclass
class LambdaSearch:
    """The minimizer ``lam`` of ``F`` and ``value = F(lam)`` (at convergence the last point evaluated, where ``F``
    met the cutting-plane model; else :attr:`best`), the lowest point evaluated (``best``: its value is ``F`` at a
    feasible ``lambda``, an upper bound on the minimum), the bracketing points ``left`` (slope ``<= 0``; ``None``
    when ``lambda_min`` was found optimal at once) and ``right`` (slope ``>= 0``), and the evaluations of ``F``."""

    lam: float
    value: float
    best: LinePoint
    left: Optional[LinePoint]
    right: LinePoint
    evaluations: int


def minimize_line(line: Callable[[float], LinePoint], lam_min: float, *, tol: float = 1e-13,
                  interval_tol: float = 1e-15, max_iter: int = 500, hint: Optional[float] = None,
                  lam_max: float = 1e15) -> LambdaSearch:
    """Minimize the convex piecewise-linear ``F`` over ``lam >= lam_min`` (module docstring); ``line(lam)`` returns
    the :class:`LinePoint` there.

    Stops when ``F`` at the lines' intersection is within ``tol max(1, |model|)`` of the model, when the slope there
    is 0, when the bracket is narrower than ``interval_tol max(1, lam)`` or repeats a point (rounding at the kink).
    ``hint``: a ``lambda`` near the minimizer (a fit's own): the bracket grows from it by factors of 4 from a relative
    width 1e-6 instead of from ``lam_min`` (fewer evaluations; the answer does not depend on it).  The bracket's
    right end grows fourfold while ``F`` decreases, up to ``lam_max`` (beyond: a :class:`~drokit.SolverError`, the
    costs are degenerate)."""
    evaluations = 0
    best = None

    def evaluate(lam: float) -> LinePoint:
        nonlocal evaluations, best
        evaluations += 1
        point = line(float(lam))
        if best is None or point.value < best.value:
            best = point
        return point

    def done(lam, value, left, right):
        return LambdaSearch(lam, value, best, left, right, evaluations)

    if hint is not None and hint == hint and lam_min < hint < float("inf"):
        a, b = _hinted_bracket(evaluate, lam_min, hint)
        if a.lam == lam_min and a.slope >= 0:
            return done(a.lam, a.value, None, a)
    else:
        a = evaluate(lam_min)
        if a.slope >= 0:                   # F increasing from lambda_min on
            return done(a.lam, a.value, None, a)
        b = evaluate(max(2.0 * lam_min, 1.0))
    while b.slope < 0:                     # F still decreasing: move right (the slope tends to eps > 0)
        a = b
        lam_b = 4.0 * max(b.lam, 0.25)
        if lam_b > lam_max:
            raise SolverError("worst-case evaluation: F(lambda) keeps decreasing; the radius is 0 or the transport "
                              "costs are degenerate", solver="worst_case")
        b = evaluate(lam_b)
    last_x, point = None, b
    for _ in range(max_iter):
        if b.slope - a.slope <= 0 or b.lam - a.lam <= interval_tol * max(1.0, b.lam):
            break
        x = (b.value - a.value + a.slope * a.lam - b.slope * b.lam) / (a.slope - b.slope)   # the lines' intersection
        x = min(max(x, a.lam), b.lam)
        if x == last_x:                    # no progress (rounding at the kink): x, evaluated last, is the minimizer
            return done(x, point.value, a, b)
        last_x = x
        cut = a.value + a.slope * (x - a.lam)
        point = evaluate(x)
        if point.slope < 0:
            a = point
        elif point.slope > 0:
            b = point
        else:
            a = b = point
        if point.slope == 0 or point.value <= cut + tol * max(1.0, abs(cut)):
            return done(x, point.value, a, b)
    return done(best.lam, best.value, a, b)


def _hinted_bracket(evaluate: Callable[[float], LinePoint], lam_min: float, hint: float):
    """``(lo, hi)`` with ``lo``'s slope < 0 (or ``lo`` at ``lambda_min``) and ``hi`` to its right, found from ``hint``
    outwards (widths 1e-6 hint, growing fourfold); ``hi``'s slope may still be negative (the caller moves right)."""
    h = evaluate(hint)
    width = 1e-6 * max(hint, 1e-12)
    if h.slope >= 0:                       # the minimum is at or left of the hint
        hi = h
        while True:
            lam = hint - width
            if lam <= lam_min:
                return evaluate(lam_min), hi
            x = evaluate(lam)
            if x.slope < 0:
                return x, hi
            hi, width = x, 4.0 * width
    lo = h                                 # decreasing at the hint: the minimum is to its right
    while True:
        x = evaluate(hint + width)
        if x.slope >= 0 or width > 1e12:
            return lo, x
        lo, width = x, 4.0 * width
