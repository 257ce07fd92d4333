"""Ambiguity sets: compiled directly (Wasserstein, Intersection, OTMoment for evaluation) or built from
them on the training data (the AmbiguitySet protocol, e.g. CalibratedWasserstein)."""

from .base import AmbiguitySet, build_ambiguity
from .calibrated import CalibratedWasserstein
from .intersection import Intersection
from . import divergences
from .ot_moment import OTMoment
from .phi_divergence import ChiSquareBall, CVaRSet, KLBall
from .wasserstein import Wasserstein

__all__ = ["Wasserstein", "Intersection", "OTMoment", "KLBall", "ChiSquareBall", "CVaRSet", "divergences",
           "AmbiguitySet", "CalibratedWasserstein", "build_ambiguity"]
