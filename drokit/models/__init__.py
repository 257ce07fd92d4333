"""Estimators (:class:`DROClassifier`, :class:`DRORegressor`) and problem classes (:class:`Problem`)."""

from .auxiliary import AuxiliaryMixture
from .estimators import DROClassifier, DRORegressor
from .instance import DROInstance
from .problem import CompiledProblem, Problem
from .result import FitResult

__all__ = ["AuxiliaryMixture", "DROClassifier", "DRORegressor", "Problem", "CompiledProblem", "FitResult", "DROInstance"]
