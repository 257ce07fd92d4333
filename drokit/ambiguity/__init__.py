"""Ambiguity sets."""

from .intersection import Intersection
from .ot_moment import OTMoment
from .wasserstein import Wasserstein

__all__ = ["Wasserstein", "Intersection", "OTMoment"]
