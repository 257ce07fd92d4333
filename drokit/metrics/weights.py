"""Per-column weights of the ground metric's components: ``None`` (all 1), a scalar, one number per column or a
``{column: weight}`` dict, checked and resolved to an array in the schema's column order (``np.inf``: the column is
immutable, ``0``: it moves for free)."""

from __future__ import annotations

from numbers import Real
from typing import List, Mapping, Sequence, Union

import numpy as np

from ..exceptions import ParameterError
from ..params import real_number

Weights = Union[None, Real, Sequence[float], np.ndarray, Mapping[str, float]]


class NamedWeights(dict):
    """``{column: weight}`` whose unnamed columns get ``default`` instead of 1.

    :meth:`GroundMetric.scaled` returns these so that scaling ``{"age": 2}`` by ``c`` also scales the
    columns the dict does not name (``{"age": 2 c}`` alone would leave them at 1).
    """

    def __init__(self, weights: Mapping[str, float], default: float = 1.0):
        super().__init__(weights)
        self.default = default

    def __repr__(self) -> str:
        return f"NamedWeights({dict.__repr__(self)}, default={self.default!r})"


def resolve_weights(weights: Weights, names: List[str], what: str) -> np.ndarray:
    """Per-column weights in schema order from ``None`` (all 1), a scalar, an array or ``{name: w}``
    (unnamed columns 1, or ``weights.default`` for :class:`NamedWeights`).

    Raises :class:`ParameterError` for NaN or negative weights, a wrong length or unknown names.
    """
    n = len(names)
    if weights is None:
        w = np.ones(n)
    elif isinstance(weights, Mapping):
        unknown = [k for k in weights if str(k) not in names]
        if unknown:
            raise ParameterError(f"{what} weights name unknown column(s) {unknown}; "
                                 f"the {what} columns are {names}")
        w = np.full(n, _as_weight(getattr(weights, "default", 1.0), what, "default"))
        for key, value in weights.items():
            w[names.index(str(key))] = _as_weight(value, what, key)
    elif (isinstance(weights, Real) or (isinstance(weights, np.ndarray) and weights.ndim == 0)) \
            and not isinstance(weights, (bool, np.bool_)):
        w = np.full(n, _as_weight(weights, what, "all"))
    else:
        raw = None if isinstance(weights, (str, bytes, bool, np.bool_)) else np.asarray(weights, dtype=object)
        if raw is None or raw.ndim == 0:
            raise ParameterError(f"{what} weights must be None, a number, one number per {what} "
                                 f"column or a {{column: weight}} dict, got {weights!r}")
        if raw.shape != (n,):
            raise ParameterError(f"{what} weights have shape {raw.shape}, but there are {n} {what} "
                                 f"columns {names} (expected shape ({n},))")
        w = np.array([_as_weight(value, what, name) for name, value in zip(names, raw)], dtype=float)
    return w.astype(float)


def _as_weight(value, what: str, name) -> float:
    v = real_number(value, f"{what} weight for {name!r}")
    if np.isnan(v) or v < 0:
        raise ParameterError(f"{what} weight for {name!r} must be a number >= 0 (np.inf = immutable), "
                             f"got {value!r}")
    return v


__all__ = ["Weights", "NamedWeights", "resolve_weights"]
