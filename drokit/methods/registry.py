"""The registry of methods: a :class:`Method` per way of solving a bound instance, and the rules ``method="auto"`` reads.

A method turns a :class:`~drokit.instance.DROInstance` (a problem bound to data) into what its driver solves:
a conic program for a back-end (``driver="program"``: ERM, the closed form, the monolithic, box and graph
programs), the first master of a loop (``driver="cutting_plane"``), or nothing for a pipeline of its own
(``driver="intersection"``, compiled from the :class:`~drokit.Problem`, not from an instance).  It declares when it does
not apply (:attr:`Method.refusal`: the error an explicit request raises, before any work, or ``None``; its message is
the reason in words).

``method="auto"`` tries the registered :class:`AutoRule` s in the order of their ``rank``: the first rule that
returns a reason names the method, and the reason is recorded in ``method_reason`` (the rules and their measured
thresholds: ``docs/method_selection.md``).  In the image of cvxpy's ``SOLVER_MAP_CONIC`` and MathOptInterface's
bridges, one registration per method, read by the code that dispatches: adding a method touches its own module only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from ..exceptions import DrokitError, ParameterError
from ..instance import DROInstance

#: the drivers a method's compiled form can go to (``drokit.models.compiled.CompiledProblem.solve``)
DRIVERS = ("program", "cutting_plane", "intersection")


def always_eligible(inst: DROInstance, max_configurations: int) -> Optional[DrokitError]:
    """The :attr:`Method.refusal` of a method that applies to every instance."""
    return None


def refusal_of(check: Callable[[], object]) -> Optional[DrokitError]:
    """The drokit error ``check()`` raises, or ``None`` when it returns (a :attr:`Method.refusal` from a check
    written to raise)."""
    try:
        check()
    except DrokitError as exc:
        return exc
    return None


@dataclass(frozen=True)
class Method:
    """One way of solving a bound DRO instance.

    ``compile(inst, max_configurations)`` returns a :class:`~drokit.reformulations.dual.CompiledProgram` (the
    program, or the first master for the cutting plane), with ``method`` set to :attr:`name` and ``method_reason``
    saying which reformulation it is (paper and equation).  ``refusal(inst, max_configurations)``: the error (a
    :class:`~drokit.ParameterError` or :class:`~drokit.ProblemTooLargeError`, its message the reason) when the method
    does not apply to ``inst``, ``None`` when it does; cheap checks only, ``compile`` may still refuse (the graph
    method's budget lattice is known once it is built).  ``driver``: one of
    :data:`DRIVERS`.  ``summary``: one line for listings (:func:`describe_methods`)."""

    name: str
    compile: Callable[[DROInstance, int], object]
    summary: str
    refusal: Callable[[DROInstance, int], Optional[DrokitError]] = always_eligible
    driver: str = "program"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name == "auto":
            raise ParameterError(f"a method's name must be a non-empty string other than 'auto', got {self.name!r}")
        if self.driver not in DRIVERS:
            raise ParameterError(f"driver must be one of {list(DRIVERS)}, got {self.driver!r}")
        if not callable(self.compile) or not callable(self.refusal):
            raise ParameterError(f"method {self.name!r}: compile and refusal must be callables")


@dataclass(frozen=True)
class AutoRule:
    """A rule of ``method="auto"``: ``applies(inst, max_configurations)`` returns the reason to choose
    :attr:`method` (recorded as ``"auto: <reason>"``) or ``None``.  Rules are tried by increasing ``rank``; the
    built-in ones use 10 (radius 0) to 100 (the cutting plane, which always applies)."""

    method: str
    rank: float
    applies: Callable[[DROInstance, int], Optional[str]]


_METHODS: Dict[str, Method] = {}
_RULES: List[AutoRule] = []


def register_method(method: Method, *, auto: Tuple[AutoRule, ...] = (), replace: bool = False) -> Method:
    """Register ``method`` (and the ``auto`` rules that choose it) under ``method.name``; returns it.

    A name already registered raises :class:`~drokit.ParameterError` unless ``replace=True`` (which also drops the
    old method's rules).  Every ``AutoRule`` in ``auto`` must name this method."""
    if not isinstance(method, Method):
        raise ParameterError(f"register_method needs a drokit.methods.Method, got {type(method).__name__}")
    if method.name in _METHODS and not replace:
        raise ParameterError(f"a method named {method.name!r} is registered already (pass replace=True to replace it)")
    for rule in auto:
        if not isinstance(rule, AutoRule) or rule.method != method.name:
            raise ParameterError(f"the auto rules of method {method.name!r} must be AutoRules naming it, got {rule!r}")
    if method.name in _METHODS:
        unregister_method(method.name)
    _METHODS[method.name] = method
    _RULES.extend(auto)
    _RULES.sort(key=lambda rule: rule.rank)          # stable: equal ranks keep their registration order
    return method


def unregister_method(name: str) -> None:
    """Remove the method ``name`` and its ``auto`` rules (a :class:`~drokit.ParameterError` if it is not registered)."""
    get_method(name)
    del _METHODS[name]
    _RULES[:] = [rule for rule in _RULES if rule.method != name]


def method_names() -> Tuple[str, ...]:
    """``"auto"`` and the registered methods' names, in registration order (the values ``method=`` accepts)."""
    return ("auto",) + tuple(_METHODS)


def get_method(name: str) -> Method:
    """The registered method ``name``; an unknown name raises :class:`~drokit.ParameterError` listing the choices."""
    try:
        return _METHODS[name]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown method {name!r}; choose one of {list(method_names())}") from None


def auto_rules() -> Tuple[AutoRule, ...]:
    """The registered ``auto`` rules, in the order they are tried."""
    return tuple(_RULES)


def describe_methods() -> str:
    """One line per registered method: its name, driver and summary."""
    width = max(len(name) for name in _METHODS)
    return "\n".join(f"{m.name:<{width}}  {'[' + m.driver + ']':<15}  {m.summary}" for m in _METHODS.values())
