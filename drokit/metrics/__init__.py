"""Ground metrics (transport costs) for mixed numerical + categorical data, and their calibration."""

from .calibration import (Calibration, calibrate, categorical_weight, laplace_scale, numerical_weight,
                          radius_from_theta, round_weights, sample_certainty, sample_feature_certainty)
from .costs import LabelCost, MismatchCost, NormCost, resolve_weights
from .ground import GroundMetric, ResolvedMetric

__all__ = ["GroundMetric", "NormCost", "MismatchCost", "LabelCost", "ResolvedMetric", "resolve_weights",
           "Calibration", "calibrate", "numerical_weight", "categorical_weight", "laplace_scale",
           "radius_from_theta", "round_weights", "sample_certainty", "sample_feature_certainty"]
