"""The registry of separation oracles: a name, a factory ``(instance, max_configurations) -> SeparationOracle`` and
a line for listings, read by :func:`make_oracle` (the cutting plane's ``method_options={"oracle": name}``, the
certificates' worst-case search) and by the ``"auto"`` rule (the hull oracle where it is exact, else the DP oracle).

The built-in factories import their oracle's module when called, so an oracle costs nothing until it is used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Tuple

from ..exceptions import ParameterError
from .base import SeparationOracle


@dataclass(frozen=True)
class OracleEntry:
    """A registered oracle: ``factory(inst, max_configurations)`` builds it for a bound instance (and raises a
    drokit error naming the reason when it does not apply); ``summary``: one line for listings."""

    name: str
    factory: Callable[..., SeparationOracle]
    summary: str


_ORACLES: Dict[str, OracleEntry] = {}


def register_oracle(name: str, factory: Callable[..., SeparationOracle], summary: str, *,
                    replace: bool = False) -> OracleEntry:
    """Register ``factory`` under ``name`` (``"auto"`` is reserved; a taken name needs ``replace=True``)."""
    if not isinstance(name, str) or not name or name == "auto":
        raise ParameterError(f"an oracle's name must be a non-empty string other than 'auto', got {name!r}")
    if not callable(factory):
        raise ParameterError(f"the factory of oracle {name!r} must be callable, got {type(factory).__name__}")
    if name in _ORACLES and not replace:
        raise ParameterError(f"an oracle named {name!r} is registered already (pass replace=True to replace it)")
    entry = _ORACLES[name] = OracleEntry(name, factory, summary)
    return entry


def unregister_oracle(name: str) -> None:
    """Remove the oracle ``name`` (a :class:`~drokit.ParameterError` if it is not registered)."""
    if name not in _ORACLES:
        raise ParameterError(f"unknown oracle {name!r}; choose one of {list(oracle_names())}")
    del _ORACLES[name]


def oracle_names() -> Tuple[str, ...]:
    """``"auto"`` and the registered oracles' names, in registration order."""
    return ("auto",) + tuple(_ORACLES)


def auto_oracle_name(inst) -> str:
    """The ``"auto"`` choice: ``"hull"`` where it is exact (:func:`drokit.oracles.hull.hull_applies`), else ``"dp"``."""
    from .hull import hull_applies
    return "hull" if hull_applies(inst)[0] else "dp"


def make_oracle(inst, name: str = "auto", max_configurations: int = 1_000_000) -> SeparationOracle:
    """The separation oracle called ``name`` for ``inst``: ``"auto"`` (default: :func:`auto_oracle_name`), ``"hull"``
    (exact for any positive weights and level costs with ``p >= 1``: the vertices of each sample's convex hull of
    (score change, budget) points; with the mismatch cost two sorts of ``m`` gains per sample), ``"dp"`` (exact, any
    level costs: a dynamic program over the transport budgets), ``"sorting"`` (exact, equal categorical weights only;
    belbasi2023 Alg. 2), ``"enumeration"`` (exact brute force, the reference; refused above ``max_configurations``
    rows), or an oracle registered with :func:`register_oracle`."""
    if name == "auto":
        name = auto_oracle_name(inst)
    try:
        entry = _ORACLES[name]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown oracle {name!r}; choose one of {list(oracle_names())}") from None
    return entry.factory(inst, max_configurations)


def _hull(inst, max_configurations):
    from .hull import HullOracle
    return HullOracle(inst)


def _dp(inst, max_configurations):
    from .dp import DPOracle
    return DPOracle(inst)


def _sorting(inst, max_configurations):
    from .sorting import SortingOracle
    return SortingOracle(inst)


def _enumeration(inst, max_configurations):
    from .enumeration import EnumerationOracle
    from .rows import check_enumeration_size
    check_enumeration_size(inst, "cutting_plane", max_configurations)
    return EnumerationOracle(inst)


register_oracle("hull", _hull, "vertices of each sample's convex hull of (score change, budget) points")
register_oracle("dp", _dp, "dynamic program over the transport budgets (any level costs)")
register_oracle("sorting", _sorting, "sorted gains, equal categorical weights only (belbasi2023 Alg. 2)")
register_oracle("enumeration", _enumeration, "every configuration row (the reference)")
