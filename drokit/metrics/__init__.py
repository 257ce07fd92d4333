"""Ground metrics (transport costs) for mixed numerical + categorical data, and their calibration."""

from .calibration import (Calibration, calibrate, categorical_weight, laplace_scale, numerical_weight,
                          radius_from_theta, round_weights, sample_certainty, sample_feature_certainty)
from .costs import CategoricalCost, LabelCost, MismatchCost, NormCost, OrdinalCost, resolve_weights
from .ground import GroundMetric, ResolvedMetric
from .group_norm import GroupNormCost
from .norms import NumericalNorm
from .linear_map import LinearMap
from .transport import wasserstein_distance
from .radius import (THESIS_AUX_WEIGHT_GRID, THESIS_KAPPA_GRID, THESIS_RADIUS_GRID, auxiliary_radius,
                     feasible_radius_pairs, mixture_radii, rule_of_thumb_radius)

__all__ = ["GroundMetric", "NormCost", "NumericalNorm", "GroupNormCost", "MismatchCost", "OrdinalCost", "CategoricalCost", "LabelCost", "ResolvedMetric", "resolve_weights", "LinearMap",
           "Calibration", "calibrate", "numerical_weight", "categorical_weight", "laplace_scale",
           "radius_from_theta", "round_weights", "sample_certainty", "sample_feature_certainty",
           "wasserstein_distance", "rule_of_thumb_radius", "auxiliary_radius", "feasible_radius_pairs",
           "mixture_radii", "THESIS_RADIUS_GRID", "THESIS_KAPPA_GRID", "THESIS_AUX_WEIGHT_GRID"]
