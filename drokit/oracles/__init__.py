"""Separation oracles (dynamic programming; brute-force enumeration, the reference) and configuration
generators."""

from .base import Separation, SeparationOracle
from .enumeration import (ConfigurationRows, EnumerationOracle, all_levels_grid, concat_rows,
                          count_configuration_rows, enumerate_configurations, take_rows)

__all__ = ["make_oracle", "ORACLES", "Separation", "SeparationOracle", "EnumerationOracle", "concat_rows", "take_rows",
           "ConfigurationRows", "all_levels_grid", "count_configuration_rows", "enumerate_configurations"]


ORACLES = ("auto", "hull", "dp", "sorting", "enumeration")


def make_oracle(inst, name: str = "auto", max_configurations: int = 1_000_000):
    """The separation oracle called ``name``: ``"auto"`` (default: ``"hull"`` where it is exact, else ``"dp"``),
    ``"hull"`` (exact for any positive weights and level costs with ``p >= 1``: the vertices of each sample's convex
    hull of (score change, budget) points; with the mismatch cost two sorts of ``m`` gains per sample), ``"dp"`` (exact, any level costs: a dynamic program over the transport budgets),
    ``"sorting"`` (exact, equal categorical weights only; belbasi2023 Alg. 2) or ``"enumeration"``
    (exact brute force, the reference; refused above ``max_configurations`` rows)."""
    from ..exceptions import ParameterError
    if name == "auto":
        from .hull import hull_applies
        name = "hull" if hull_applies(inst)[0] else "dp"
    if name == "hull":
        from .hull import HullOracle
        return HullOracle(inst)
    if name == "dp":
        from .dp import DPOracle
        return DPOracle(inst)
    if name == "sorting":
        from .sorting import SortingOracle
        return SortingOracle(inst)
    if name == "enumeration":
        from .rows import check_enumeration_size
        check_enumeration_size(inst, "cutting_plane", max_configurations)
        return EnumerationOracle(inst)
    raise ParameterError(f"unknown oracle {name!r}; choose one of {list(ORACLES)}")
