"""Evaluation of fixed models: exact worst-case risk over an ambiguity set."""

from .worst_case import WorstCaseValue, lambda_floor, worst_case_value

__all__ = ["WorstCaseValue", "worst_case_value", "lambda_floor"]
