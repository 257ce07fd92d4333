"""``box``: piecewise-affine losses with the categorical exponent ``p = 1``, one LP row per (sample, feature, level).

The per-feature LP of :mod:`drokit.reformulations.box` (the thesis's bounded relaxation, selvi2025 Prop. 10,
the note's C3): polynomial size and exact; on request (``method="box"``), ``auto`` does not take it (see below).
"""

from __future__ import annotations

from typing import Optional

from ..reformulations.box import box_rows, check_box_applicable, compile_box
from ..exceptions import DrokitError, ParameterError
from ..instance import DROInstance
from .registry import Method, refusal_of, register_method

#: ``auto`` does not take the box LP: measured against the cutting plane (hinge, radius 0.1, the sun2025 datasets of
#: 3,875-24,300 box rows, benchmarks/RESULTS.md "Box LP vs cutting plane"), the box LP took 1.05-4.5x longer on six of
#: seven (0.49x on breast-cancer): its LP solves in a few hundredths of a second, but its certificate does not find an
#: explicit dual point (the polish by the barrier master and a second, tighter solve: 0.3-4 s) and ends at the
#: solver's dual objective, while the cutting plane certifies with a Lagrangian bound.  It stays available as
#: ``method="box"``.  (Until the certificate work of issue 21 it was 2-5x faster and ``auto`` took it up to 25,000 rows.)
def box_refusal(inst: DROInstance, max_configurations: int = 0) -> Optional[DrokitError]:
    """Not piecewise affine, or ``p != 1`` (:func:`~drokit.reformulations.box.check_box_applicable`)."""
    return refusal_of(lambda: check_box_applicable(inst))


def box_auto_rows(inst: DROInstance) -> Optional[int]:
    """Rows of the box LP if it applies to ``inst``, else None."""
    try:
        return box_rows(inst)
    except ParameterError:
        return None


BOX = register_method(
    Method("box", lambda inst, max_configurations=0: compile_box(inst),
           "piecewise-affine loss, p = 1: the exact per-feature LP (selvi2025 Prop. 10)", refusal=box_refusal))
