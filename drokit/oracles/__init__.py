"""Separation oracles (convex hull, dynamic programming, sorting; brute-force enumeration, the reference), their
registry (:mod:`.registry`: :func:`make_oracle`, :func:`register_oracle`) and configuration generators."""

from .base import Separation, SeparationOracle
from .enumeration import (ConfigurationRows, EnumerationOracle, all_levels_grid, concat_rows,
                          count_configuration_rows, enumerate_configurations, take_rows)
from .registry import make_oracle, oracle_names, register_oracle, unregister_oracle

__all__ = ["make_oracle", "ORACLES", "register_oracle", "unregister_oracle", "oracle_names", "Separation",
           "SeparationOracle", "EnumerationOracle", "concat_rows", "take_rows", "ConfigurationRows", "all_levels_grid",
           "count_configuration_rows", "enumerate_configurations"]

#: the built-in oracle names (``oracle_names()`` also lists oracles registered later)
ORACLES = oracle_names()
