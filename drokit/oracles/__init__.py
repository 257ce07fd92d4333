"""Separation oracles and configuration generators (brute-force enumeration is the reference)."""

from .base import Separation, SeparationOracle
from .enumeration import (ConfigurationRows, EnumerationOracle, all_levels_grid, concat_rows,
                          count_configuration_rows, enumerate_configurations, take_rows)

__all__ = ["Separation", "SeparationOracle", "EnumerationOracle", "concat_rows", "take_rows",
           "ConfigurationRows", "all_levels_grid", "count_configuration_rows", "enumerate_configurations"]
