"""A quiet ``highspy.Highs()``: HiGHS prints its banner at its first construction in a process, before any option
can be set (``output_flag=False`` silences everything after it).  drokit's LP users (the slope-cut master,
:mod:`drokit.reformulations.slope_cut_master`; the RWPI support function, :mod:`drokit.model_selection.rwpi_support`)
construct their models here."""

from __future__ import annotations

import os
import sys

_BANNER_SHOWN = False


def new_highs(highspy):
    """``highspy.Highs()``; the first construction in the process runs with file descriptor 1 sent to ``os.devnull``
    (left as it is where there is no real descriptor 1, e.g. an embedding host)."""
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return highspy.Highs()
    _BANNER_SHOWN = True
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        return highspy.Highs()
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
