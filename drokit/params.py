"""scikit-learn's ``get_params`` / ``set_params`` for drokit's declaration objects (ground metrics, costs,
ambiguity sets), so that ``DROClassifier(...).set_params(ambiguity__radius=0.2)``, ``clone`` and
``GridSearchCV`` reach the parameters nested inside an estimator's ``ambiguity``; and the declarative parameter
checks (:class:`OneOf`, :class:`PositiveInteger`, :class:`Boolean`, :class:`RealNumber`, :class:`MappingOrNone`,
:class:`Check`, read by
:func:`validate_parameters`), in the image of scikit-learn's ``_parameter_constraints``."""

from __future__ import annotations

import copy
import inspect
from numbers import Real
from typing import Any, Callable, Iterable, Mapping, Union

import numpy as np

from .exceptions import ParameterError


def real_number(value, name: str) -> float:
    """``value`` as a float when it is a real number: an ``int``, a ``float`` or a numpy number (0-d
    arrays too); a string (``"0.1"``), a boolean, ``None`` or anything else raises a
    :class:`ParameterError` naming ``name``.  The one check of drokit's numeric parameters: a value
    that merely converts to a float (``float("0.1")``, ``float(True)``) is not accepted, since it would
    be kept as given (``radius='0.1'`` shown and compared as a string)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.integer, np.floating)):
        if isinstance(value, (str, bytes)):
            got = f"the string {value!r}" + (f"; pass the number {float(value)!r}" if _parses(value) else "")
        elif value is None:
            got = "None"
        elif isinstance(value, (bool, np.bool_)):
            got = f"the boolean {value!r}"
        else:
            got = f"a {type(value).__name__}: {value!r}"
        raise ParameterError(f"{name} must be a real number (an int or a float), got {got}")
    return float(value)


def nonnegative_real(value, name: str) -> float:
    """``value`` as a finite float ``>= 0`` (a radius, a penalty weight): :func:`real_number`, then the range; a
    :class:`ParameterError` naming ``name`` otherwise."""
    r = real_number(value, name)
    if not (np.isfinite(r) and r >= 0):
        raise ParameterError(f"{name} must be finite and >= 0, got {value!r}")
    return r


class OneOf:
    """The value is one of ``choices`` (a tuple, or a function returning one: a registry read at check time);
    ``normalize`` (e.g. ``str.lower``) is applied to a string value before the comparison."""

    def __init__(self, choices: Union[Iterable[Any], Callable[[], Iterable[Any]]],
                 normalize: Callable[[str], str] = None):
        self.choices, self.normalize = choices, normalize

    def options(self) -> list:
        return list(self.choices() if callable(self.choices) else self.choices)

    def __call__(self, value, name: str) -> None:
        options = self.options()
        if self.normalize is not None:
            ok = isinstance(value, str) and self.normalize(value) in options
        else:
            ok = _member(value, options)
        if not ok:
            shown = tuple(options) if isinstance(self.choices, tuple) else options
            raise ParameterError(f"{name} must be one of {shown}, got {value!r}")


def _member(value, options) -> bool:
    try:
        return value in options
    except (TypeError, ValueError):              # an array compared elementwise
        return False


class PositiveInteger:
    """An ``int`` (or numpy integer) above 0."""

    def __call__(self, value, name: str) -> None:
        if not (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value > 0):
            raise ParameterError(f"{name} must be a positive integer, got {value!r}")


class Boolean:
    """``True`` or ``False`` (numpy booleans too)."""

    def __call__(self, value, name: str) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterError(f"{name} must be True or False, got {value!r}")


class RealNumber:
    """A real number (:func:`real_number`); its range is checked where it is used."""

    def __call__(self, value, name: str) -> None:
        real_number(value, name)


class MappingOrNone:
    """A mapping of option names to values (a ``dict``), or ``None``."""

    def __call__(self, value, name: str) -> None:
        if value is not None and not isinstance(value, Mapping):
            raise ParameterError(f"{name} must be a dict of option names to values, or None, got {value!r}")


class Check:
    """A check written as a function ``check(value)`` that raises :class:`ParameterError` itself (its message names
    the parameter)."""

    def __init__(self, check: Callable[[Any], Any]):
        self.check = check

    def __call__(self, value, name: str) -> None:
        self.check(value)


def validate_parameters(owner, constraints: Mapping[str, Callable[[Any, str], None]]) -> None:
    """Check every ``owner.<name>`` against its constraint in ``constraints`` (in their order: the first failing one
    raises :class:`ParameterError` naming the parameter, what it must be and what it got)."""
    for name, constraint in constraints.items():
        constraint(getattr(owner, name), name)


def _parses(text) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def component(owner, name: str):
    """``owner.<name>``, or, when it is ``None``, a new default object of the class the owner declares
    for it in ``DEFAULT_COMPONENTS`` (e.g. ``GroundMetric.label = None`` stands for ``LabelCost()``).
    The one place that says what ``None`` means: the metrics, the ambiguity set, the problem and the
    sweep's defaults for nested grid names all read it."""
    value = getattr(owner, name)
    if value is None:
        factory = getattr(type(owner), "DEFAULT_COMPONENTS", {}).get(name)
        if factory is not None:
            return factory()
    return value


def nested_params(owner, name: str) -> dict:
    """``{f"{name}__{key}": value}`` of ``owner.<name>``'s deep parameters; for a ``None`` component,
    those of the default object it stands for (so that ``get_params(deep=True)`` lists every name that
    ``set_params`` reaches, and what ``repr`` shows)."""
    value = getattr(owner, name)
    if value is None:
        value = component(owner, name)
    if value is None or isinstance(value, type) or not hasattr(value, "get_params"):
        return {}
    return {f"{name}__{key}": val for key, val in value.get_params(deep=True).items()}


def materialized(owner, name: str):
    """``owner.<name>``; a ``None`` component is first replaced, on ``owner``, by the default object it
    stands for (:func:`component`), so that a nested ``set_params`` name can reach into it."""
    value = getattr(owner, name)
    if value is None:
        value = component(owner, name)
        if value is not None:
            setattr(owner, name, value)
    return value


class ParamsMixin:
    """``get_params`` / ``set_params`` in scikit-learn's convention for drokit's declaration objects.

    The parameters are the ``__init__`` arguments, stored unchanged as attributes.  Nested names
    address components (``metric__label__kappa``), so that an estimator's
    ``set_params(ambiguity__radius=0.2)`` and ``GridSearchCV`` reach them.  ``clone`` deep-copies the
    object (``__sklearn_clone__``), as it did before these methods existed; so attributes that are
    not parameters, such as ``GroundMetric.calibration``, survive cloning.
    """

    #: ``{parameter: class}``: the default object a ``None`` parameter stands for (:func:`component`)
    DEFAULT_COMPONENTS: dict = {}

    @classmethod
    def _get_param_names(cls) -> list:
        """The ``__init__`` argument names, sorted."""
        signature = inspect.signature(cls.__init__)
        return sorted(name for name, par in signature.parameters.items()
                      if name != "self" and par.kind not in (par.VAR_POSITIONAL, par.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> dict:
        """``{name: value}`` of the parameters; with ``deep``, also ``component__name`` entries, those of
        a ``None`` component being its default object's (what ``repr`` shows and ``set_params`` reaches)."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep:
                out.update(nested_params(self, name))
            out[name] = value
        return out

    def set_params(self, **params):
        """Set parameters (nested names allowed); returns ``self``.

        A nested name through a ``None`` component (``label__kappa`` while ``label`` is ``None``) first
        stores the default object that ``None`` stands for (:func:`component`, e.g. ``LabelCost()``), then
        sets the name on it.  Raises :class:`ParameterError` naming an unknown parameter, or a component
        that has no parameters.
        """
        valid = self.get_params(deep=False)
        nested: dict = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ParameterError(f"Invalid parameter {name!r} for {type(self).__name__}. "
                                     f"Valid parameters are: {self._get_param_names()!r}.")
            if delim:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            part = materialized(self, name)
            if not hasattr(part, "set_params"):
                raise ParameterError(f"Cannot set {', '.join(sorted(sub_params))} on "
                                     f"{type(self).__name__}.{name}, which is {part!r}; set "
                                     f"{name} to an explicit drokit object first")
            part.set_params(**sub_params)
        return self

    def __sklearn_clone__(self):
        return copy.deepcopy(self)
