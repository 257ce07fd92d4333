"""Estimators (:class:`DROClassifier`, :class:`DRORegressor`) and problem classes (:class:`Problem`)."""

from .auxiliary import AuxiliaryMixture
from .binding import FittedBinding, bind_fitted_model
from .estimators import DROClassifier, DRORegressor
from ..instance import DROInstance
from .problem import CompiledProblem, Problem
from .result import FitResult
from ..validation import check_array_2d, check_features

__all__ = ["AuxiliaryMixture", "DROClassifier", "DRORegressor", "Problem", "CompiledProblem", "FitResult", "DROInstance",
           "check_features", "check_array_2d", "bind_fitted_model", "FittedBinding"]
