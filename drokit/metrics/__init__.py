"""Ground metrics (transport costs) for mixed numerical + categorical data."""

from .costs import LabelCost, MismatchCost, NormCost, resolve_weights
from .ground import GroundMetric, ResolvedMetric

__all__ = ["GroundMetric", "NormCost", "MismatchCost", "LabelCost", "ResolvedMetric", "resolve_weights"]
