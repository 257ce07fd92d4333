"""Ambiguity sets: compiled directly (Wasserstein, Intersection, OTMoment for evaluation) or built from
them on the training data (the AmbiguitySet protocol, e.g. CalibratedWasserstein)."""

from .base import AmbiguitySet, build_ambiguity
from .calibrated import CalibratedWasserstein
from .intersection import Intersection
from .ot_moment import OTMoment
from .wasserstein import Wasserstein

__all__ = ["Wasserstein", "Intersection", "OTMoment", "AmbiguitySet", "CalibratedWasserstein", "build_ambiguity"]
