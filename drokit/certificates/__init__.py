"""Certificates of DRO fits, below the methods that produce them: the exact worst-case value and support of a fixed
model (:mod:`.worst_case`, :mod:`.support`), the Lagrangian bound of a repaired dual point (:mod:`.lagrangian`) and the
certified lower bound of a fitted model (:mod:`.lower_bound`)."""

from .lagrangian import LowerBound, lagrangian_bound
from .lower_bound import certified_lower_bound
from .support import WorstCaseSupport, worst_case_support
from .worst_case import WorstCaseValue, certified_upper_bound, worst_case_value

__all__ = ["LowerBound", "lagrangian_bound", "certified_lower_bound", "WorstCaseSupport", "worst_case_support",
           "WorstCaseValue", "certified_upper_bound", "worst_case_value"]
