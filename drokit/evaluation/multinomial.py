"""Moved: the multinomial model's certificate is :mod:`drokit.certificates.multinomial` (issue 22: certificates sit
below the methods and estimators that use them).  This module re-exports its names."""

from ..certificates.multinomial import (CERTIFIED_GAP, RESIDUAL_RTOL, WorstCase, certified_lower_bound,  # noqa: F401
                                        lagrangian_bound, lambda_floor, worst_case_value)
