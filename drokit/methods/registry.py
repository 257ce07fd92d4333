"""The registry of methods: a :class:`Method` per way of solving a bound instance, and the rules ``method="auto"`` reads.

A method turns a bound instance (a problem bound to data: a :class:`~drokit.instance.DROInstance`, one Wasserstein
ball, or for the ``intersection`` method an :class:`~drokit.instance.IntersectionInstance`; its
:attr:`Method.instance_type`) into what its driver solves: a conic program for a back-end (``driver="program"``: ERM,
the closed form, the monolithic, box and graph programs), the first master of a loop (``driver="cutting_plane"``), or
the static program of two balls with its own cutting plane and lower bound (``driver="intersection"``).  It declares when it does
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
DRIVERS = ("program", "cutting_plane", "intersection", "mot")


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
    :data:`DRIVERS`.  ``summary``: one line for listings (:func:`describe_methods`).  ``instance_type``: the bound
    instance it fits (:class:`~drokit.instance.DROInstance` unless given); ``auto`` tries only the rules of the
    methods that fit the instance at hand, and an explicit request for another method is refused."""

    name: str
    compile: Callable[[DROInstance, int], object]
    summary: str
    refusal: Callable[[DROInstance, int], Optional[DrokitError]] = always_eligible
    driver: str = "program"
    instance_type: type = DROInstance

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name == "auto":
            raise ParameterError(f"a method's name must be a non-empty string other than 'auto', got {self.name!r}")
        if self.driver not in DRIVERS:
            raise ParameterError(f"driver must be one of {list(DRIVERS)}, got {self.driver!r}")
        if not callable(self.compile) or not callable(self.refusal):
            raise ParameterError(f"method {self.name!r}: compile and refusal must be callables")
        if not isinstance(self.instance_type, type):
            raise ParameterError(f"method {self.name!r}: instance_type must be a class, got {self.instance_type!r}")

    def fits(self, inst) -> bool:
        """Whether this method fits ``inst``'s kind of bound instance (:attr:`instance_type`)."""
        return isinstance(inst, self.instance_type)

    def kind_refusal(self, inst) -> Optional[ParameterError]:
        """The error of an explicit request for this method on another kind of bound instance (``None`` when it
        fits): what it fits, what the problem is, and the methods that fit it."""
        if self.fits(inst):
            return None
        names = [name for name, method in _METHODS.items() if method.fits(inst)]
        fitting = f" or method={names[0]!r}" if len(names) == 1 else f" or one of {names}" if names else ""
        return ParameterError(f"method={self.name!r} fits {_kind(self.instance_type)}; this problem's ambiguity set is "
                              f"{_kind(type(inst))}: use method='auto'{fitting}")


def _kind(instance_type: type) -> str:
    """What a bound-instance class holds, in words (its ``KIND``)."""
    return getattr(instance_type, "KIND", instance_type.__name__)


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
