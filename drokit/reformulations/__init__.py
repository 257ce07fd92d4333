"""The DRO reformulations and the algorithms that solve them.

Each module turns a bound :class:`~drokit.instance.DROInstance` into a :class:`~drokit.conic.ConicProgram`
(the dual programs of :mod:`.dual`, the box LP, the longest-path graph, the multinomial model, the intersections)
or solves one by drokit's own algorithms (the cutting plane and its stages: phase 1, the barrier master, the slope
cuts, the budget cuts).  They sit above the oracles, the solvers and the certificates they use, and below
:mod:`drokit.methods`, whose registered methods call them.
"""

from .box import compile_box
from .dual import CompiledProgram, build_dual_program, row_design
from .graph import compile_graph
from .cutting_plane import CuttingPlaneOptions, CuttingPlaneOutcome, RoundRecord, solve_cutting_plane

__all__ = ["compile_box", "compile_graph", "CompiledProgram", "build_dual_program", "row_design",
           "solve_cutting_plane", "CuttingPlaneOptions", "CuttingPlaneOutcome", "RoundRecord"]
