"""Moved: the methods, their ``auto`` rules and the compile step are in :mod:`drokit.methods` (issue 22, step 2: a
registered :class:`~drokit.methods.Method` per method).  This module re-exports the old names."""

from ...methods import (BOX_AUTO_LIMIT, MAX_CONFIGURATIONS, MONOLITHIC_AUTO_LIMIT, box_auto_rows,  # noqa: F401
                        choose_method, compile_closed_form, compile_cutting_plane, compile_erm, compile_instance,
                        compile_monolithic, method_names, tangent_loss_with_structured_path)
from .box import compile_box  # noqa: F401
from .graph import compile_graph  # noqa: F401

#: the built-in method names (``drokit.methods.method_names()`` also lists methods registered later)
METHODS = method_names()

__all__ = ["BOX_AUTO_LIMIT", "MAX_CONFIGURATIONS", "MONOLITHIC_AUTO_LIMIT", "METHODS", "box_auto_rows", "choose_method",
           "compile_box", "compile_closed_form", "compile_cutting_plane", "compile_erm", "compile_graph",
           "compile_instance", "compile_monolithic", "tangent_loss_with_structured_path"]
