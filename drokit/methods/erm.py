"""``erm``: radius 0, where the Wasserstein ball is ``{P_N}`` and the problem is empirical risk minimization.

The dual program of :mod:`drokit.reformulations.dual` with the nominal rows only and no ``lambda``
(``radius_zero=True``): ``min sum_n p_n L(u_n)``.  Every other method compiles this one at radius 0.
"""

from __future__ import annotations

from typing import Optional

from ..reformulations.dual import CompiledProgram, build_dual_program
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import enumerate_configurations
from .registry import AutoRule, Method, register_method


def compile_erm(inst: DROInstance, max_configurations: int = 0) -> CompiledProgram:
    """The radius-0 program ``min sum_n p_n L(u_n)`` over the nominal rows."""
    rows = enumerate_configurations(inst, nominal_only=True)
    return CompiledProgram(build_dual_program(inst, rows, radius_zero=True), "erm",
                           "radius = 0: the Wasserstein ball is {P_N}, so the problem is plain "
                           "empirical risk minimization", rows.size)


def erm_refusal(inst: DROInstance, max_configurations: int = 0) -> Optional[ParameterError]:
    if inst.radius != 0:
        return ParameterError(f"method='erm' solves the radius-0 problem, but radius={inst.radius}")
    return None


def _radius_zero(inst: DROInstance, max_configurations: int) -> Optional[str]:
    return "radius = 0" if inst.radius == 0 else None


ERM = register_method(Method("erm", compile_erm, "radius 0: plain empirical risk minimization",
                             refusal=erm_refusal),
                      auto=(AutoRule("erm", 10, _radius_zero),))
