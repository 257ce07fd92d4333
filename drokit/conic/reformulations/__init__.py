"""Compile paths: each turns a :class:`~drokit.models.instance.DROInstance` into a ConicProgram."""

from .dual import CompiledProgram, build_dual_program, row_design
from .paths import (MAX_CONFIGURATIONS, METHODS, choose_method, compile_closed_form, compile_erm,
                    compile_instance, compile_monolithic)

__all__ = ["CompiledProgram", "build_dual_program", "row_design", "compile_instance", "compile_erm",
           "compile_closed_form", "compile_monolithic", "choose_method", "METHODS", "MAX_CONFIGURATIONS"]
