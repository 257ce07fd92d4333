"""The one scale of drokit's certified gaps.

A fit is certified to ``tol`` when ``upper - lower <= tol * max(|upper|, GAP_FLOOR)``: the gap relative to the
objective, with an absolute floor of ``tol * GAP_FLOOR`` for objectives near 0.  Every method's stopping rule and
the status rule (:meth:`drokit.models.result.FitResult.relative_gap`) use this scale.

Why not ``max(1, |upper|)``: below 1 it is an absolute gap, so an objective of 0.0264 "certified to 1e-6"
could be 5.7e-6 relative above the optimum, and one of 0.5 1.6e-6 above (fuzz seeds 40459, 41978;
``tests/data/fuzz_regressions.json``).  The floor keeps an optimum of exactly 0 (a separable hinge fit)
certifiable: there the gap must be below ``1e-8`` absolute at ``tol = 1e-6``.
"""

from __future__ import annotations

#: the smallest ``|upper|`` a gap is relative to
GAP_FLOOR = 1e-2


def gap_scale(upper: float) -> float:
    """``max(|upper|, GAP_FLOOR)``: what a certified gap is relative to."""
    return max(abs(float(upper)), GAP_FLOOR)


def relative_gap(lower: float, upper: float) -> float:
    """``(upper - lower) / max(|upper|, GAP_FLOOR)``."""
    return float((upper - lower) / gap_scale(upper))
