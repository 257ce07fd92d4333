"""``box``: piecewise-affine losses with the categorical exponent ``p = 1``, one LP row per (sample, feature, level).

The per-feature LP of :mod:`drokit.reformulations.box` (the thesis's bounded relaxation, selvi2025 Prop. 10,
the note's C3): polynomial size and exact.  ``auto`` takes it up to :data:`BOX_AUTO_LIMIT` rows.
"""

from __future__ import annotations

from typing import Optional

from ..reformulations.box import box_rows, check_box_applicable, compile_box
from ..exceptions import DrokitError, ParameterError
from ..instance import DROInstance
from .registry import AutoRule, Method, refusal_of, register_method

#: ``auto`` picks the box LP (piecewise-affine losses, p = 1) up to this many rows.  Measured, hinge,
#: radius 0.1 (benchmarks/RESULTS.md): box vs cutting plane 0.05 vs 0.25 s (hepatitis, 2.6k rows),
#: 0.10 vs 0.18 (spect, 6k), 0.21 vs 0.46 (voting, 15k), 0.40 vs 1.34 (audiology, 20k), 0.56 vs 1.86
#: (cylinder-bands, 24k), 0.55 vs 1.29 (credit-approval, 26k), but 0.52 vs 0.28 (car, 29k) and 3.8 vs
#: 1.2 (nursery, 272k); on belbasi2023's synthetic sets (radius 0.01, one cutting-plane round) the box
#: LP was 1.1-3x slower.
BOX_AUTO_LIMIT = 25_000


def box_refusal(inst: DROInstance, max_configurations: int = 0) -> Optional[DrokitError]:
    """Not piecewise affine, or ``p != 1`` (:func:`~drokit.reformulations.box.check_box_applicable`)."""
    return refusal_of(lambda: check_box_applicable(inst))


def box_auto_rows(inst: DROInstance) -> Optional[int]:
    """Rows of the box LP if it applies to ``inst``, else None."""
    try:
        return box_rows(inst)
    except ParameterError:
        return None


def _small_box(inst: DROInstance, max_configurations: int) -> Optional[str]:
    box = box_auto_rows(inst)
    if box is not None and box <= BOX_AUTO_LIMIT:
        return (f"piecewise-affine loss with p = 1, so the exact box LP applies; it has {box:,} rows "
                f"(<= {BOX_AUTO_LIMIT:,}), where it beat the cutting plane 2-5x on the sun2025 datasets")
    return None


BOX = register_method(
    Method("box", lambda inst, max_configurations=0: compile_box(inst),
           "piecewise-affine loss, p = 1: the exact per-feature LP (selvi2025 Prop. 10)", refusal=box_refusal),
    auto=(AutoRule("box", 50, _small_box),))
