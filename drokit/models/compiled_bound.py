"""What the compiled problems of the bound instances that wrap a training instance share (an
:class:`~drokit.instance.IntersectionInstance`, a :class:`~drokit.instance.MOTInstance`): the bound instance, its
training instance (what the estimators read: the schema, the loss), the registered method's compiled form and its
reason, the compile time, and the last program solved."""

from __future__ import annotations

from ..reformulations.dual import CompiledProgram


class CompiledBound:
    """The fields every such compiled problem carries; its ``solve`` is the method's driver."""

    def __init__(self, bound, compiled: CompiledProgram, compile_time: float):
        self.bound = bound
        self.instance = bound.training
        self.evaluation_instance = bound.training
        self.compiled = compiled
        self.method = compiled.method
        self.method_reason = compiled.method_reason
        self.compile_time = compile_time
        self.program = None
