"""scikit-learn's ``get_params`` / ``set_params`` for drokit's declaration objects (ground metrics, costs,
ambiguity sets), so that ``DROClassifier(...).set_params(ambiguity__radius=0.2)``, ``clone`` and
``GridSearchCV`` reach the parameters nested inside an estimator's ``ambiguity``."""

from __future__ import annotations

import copy
import inspect

from .exceptions import ParameterError


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
        """``{name: value}`` of the parameters; with ``deep``, also ``component__name`` entries."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{key}", val) for key, val in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params):
        """Set parameters (nested names allowed); returns ``self``.

        Raises :class:`ParameterError` naming an unknown parameter, or a component that is ``None``
        (a default): pass the component explicitly, e.g. ``GroundMetric(label=LabelCost())``.
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
            component = valid[name]
            if not hasattr(component, "set_params"):
                raise ParameterError(f"Cannot set {', '.join(sorted(sub_params))} on "
                                     f"{type(self).__name__}.{name}, which is {component!r}; set "
                                     f"{name} to an explicit drokit object first")
            component.set_params(**sub_params)
        return self

    def __sklearn_clone__(self):
        return copy.deepcopy(self)
