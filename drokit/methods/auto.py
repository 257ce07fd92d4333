"""``method="auto"`` and the compile step: read the registry (:mod:`.registry`), choose, refuse or compile.

The built-in rules, in the order they are tried (``docs/method_selection.md`` gives the measurements behind them):
radius 0 -> ``erm`` (10); a smooth loss compiled by tangents -> ``cutting_plane`` (20); no mutable categorical feature
-> ``closed_form`` (30); at most :data:`~.monolithic.MONOLITHIC_AUTO_LIMIT` configuration rows -> ``monolithic`` (40);
otherwise ``cutting_plane`` (100).  The box LP, the graph and the intersection / MOT methods of other bound instances
have no rule for a single ball (``box``: see :mod:`.box`).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from ..reformulations.dual import CompiledProgram
from ..exceptions import ParameterError
from ..instance import BoundInstance, DROInstance
from .erm import compile_erm
from .monolithic import MAX_CONFIGURATIONS
from .registry import auto_rules, get_method, method_names


def choose_method(inst: BoundInstance, method: str, max_configurations: int = MAX_CONFIGURATIONS) -> Tuple[str, str]:
    """``(method, reason)``: ``method`` itself when it is not ``"auto"`` (a registered name, else
    :class:`~drokit.ParameterError`), or the method of the first ``auto`` rule that applies to ``inst``, with
    ``"auto: <its reason>"``."""
    if method != "auto":
        get_method(method)                       # an unknown name: the error lists the choices
        return method, f"method={method!r} requested by the user"
    for rule in auto_rules():
        if not get_method(rule.method).fits(inst):
            continue                             # a rule of a method for another kind of bound instance
        reason = rule.applies(inst, max_configurations)
        if reason is not None:
            return rule.method, f"auto: {reason}"
    raise ParameterError(f"no method's auto rule applies to this problem; choose one of {list(method_names()[1:])}")


def eligible_methods(inst: BoundInstance, max_configurations: int = MAX_CONFIGURATIONS) -> Dict[str, Optional[str]]:
    """Every registered method and why it does not apply to ``inst`` (``None`` when it does, as far as the cheap
    checks of :attr:`~.registry.Method.refusal` tell)."""
    out = {}
    for name in method_names()[1:]:
        method = get_method(name)
        refusal = method.kind_refusal(inst) or method.refusal(inst, max_configurations)
        out[name] = None if refusal is None else str(refusal)
    return out


def compile_instance(inst: BoundInstance, method: str = "auto",
                     max_configurations: int = MAX_CONFIGURATIONS) -> CompiledProgram:
    """The compiled form of ``inst`` by ``method`` (``"auto"``: :func:`choose_method`), with the choice's reason
    appended to ``method_reason``.  A method that does not apply raises its :attr:`~.registry.Method.refusal`.  At
    radius 0 every method's program is the ERM program, which is what is compiled (the reason says so)."""
    chosen, reason = choose_method(inst, method, max_configurations)
    target = get_method(chosen)
    refusal = target.kind_refusal(inst) or target.refusal(inst, max_configurations)
    if refusal is not None:
        raise refusal
    if isinstance(inst, DROInstance) and inst.radius == 0 and chosen != "erm":
        compiled = compile_erm(inst)
        reason += "; radius = 0 so the problem is ERM"
    else:
        compiled = target.compile(inst, max_configurations)
    compiled.method_reason = f"{compiled.method_reason} [{reason}]"
    return compiled
