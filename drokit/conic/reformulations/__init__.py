"""Compile paths: each turns a :class:`~drokit.models.instance.DROInstance` into a ConicProgram."""

from .box import compile_box
from .dual import CompiledProgram, build_dual_program, row_design
from .graph import compile_graph
from .cutting_plane import CuttingPlaneOptions, CuttingPlaneOutcome, RoundRecord, solve_cutting_plane
from .paths import (MAX_CONFIGURATIONS, METHODS, MONOLITHIC_AUTO_LIMIT, choose_method, compile_closed_form,
                    compile_cutting_plane, compile_erm, compile_instance, compile_monolithic)

__all__ = ["compile_box", "compile_graph", "CompiledProgram", "build_dual_program", "row_design", "compile_instance", "compile_erm",
           "compile_closed_form", "compile_monolithic", "compile_cutting_plane", "solve_cutting_plane",
           "CuttingPlaneOptions", "CuttingPlaneOutcome", "RoundRecord", "MONOLITHIC_AUTO_LIMIT", "choose_method", "METHODS", "MAX_CONFIGURATIONS"]
