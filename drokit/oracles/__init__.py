"""Separation oracles and configuration generators (brute-force enumeration is the reference)."""

from .enumeration import (ConfigurationRows, all_levels_grid, count_configuration_rows,
                          enumerate_configurations)

__all__ = ["ConfigurationRows", "all_levels_grid", "count_configuration_rows", "enumerate_configurations"]
