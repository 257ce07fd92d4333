"""Compile paths: each turns a :class:`~drokit.instance.DROInstance` into a ConicProgram."""

from .box import compile_box
from .dual import CompiledProgram, build_dual_program, row_design
from .graph import compile_graph
from .cutting_plane import CuttingPlaneOptions, CuttingPlaneOutcome, RoundRecord, solve_cutting_plane

#: names that moved to :mod:`drokit.methods` (issue 22), still importable from here (read lazily: the methods
#: import this package's modules)
_MOVED = ("compile_instance", "compile_erm", "compile_closed_form", "compile_monolithic", "compile_cutting_plane",
          "MONOLITHIC_AUTO_LIMIT", "choose_method", "MAX_CONFIGURATIONS")


def __getattr__(name):
    if name in _MOVED:
        from ... import methods
        return getattr(methods, name)
    if name == "METHODS":
        from ...methods import method_names
        return method_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["compile_box", "compile_graph", "CompiledProgram", "build_dual_program", "row_design",
           "solve_cutting_plane", "CuttingPlaneOptions", "CuttingPlaneOutcome", "RoundRecord"]
