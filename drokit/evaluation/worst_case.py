"""The exact worst-case value of a fixed model and the fit's certified upper bound: moved to
:mod:`drokit.certificates.worst_case` (below the methods, which use them); the names stay importable from here."""

from ..certificates.worst_case import (CERTIFICATE_ENUMERATION_ROWS, MAX_EVALUATION_ROWS, WorstCaseValue,
                                       certified_upper_bound, costless_worst_case, minimize_over_lambda,
                                       worst_case_value, worst_case_value_numerical, worst_case_value_oracle)
from ..oracles.rows import lambda_floor, row_losses, row_margins

__all__ = ["CERTIFICATE_ENUMERATION_ROWS", "MAX_EVALUATION_ROWS", "WorstCaseValue", "certified_upper_bound",
           "costless_worst_case", "minimize_over_lambda", "worst_case_value", "worst_case_value_numerical",
           "worst_case_value_oracle", "lambda_floor", "row_losses", "row_margins"]
