"""Compile paths: each turns a :class:`~drokit.instance.DROInstance` into a ConicProgram."""

from .box import compile_box
from .dual import CompiledProgram, build_dual_program, row_design
from .graph import compile_graph
from .cutting_plane import CuttingPlaneOptions, CuttingPlaneOutcome, RoundRecord, solve_cutting_plane

def __getattr__(name):
    """The names that moved to :mod:`drokit.methods` (issue 22), still importable from here: read from the
    :mod:`.paths` re-export when first asked for (the methods import this package's modules)."""
    from importlib import import_module
    paths = import_module(f"{__name__}.paths")     # not ``from . import paths``: that asks this hook for "paths"
    if name in paths.__all__:
        return getattr(paths, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["compile_box", "compile_graph", "CompiledProgram", "build_dual_program", "row_design",
           "solve_cutting_plane", "CuttingPlaneOptions", "CuttingPlaneOutcome", "RoundRecord"]
