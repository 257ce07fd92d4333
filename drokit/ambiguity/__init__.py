"""Ambiguity sets."""

from .ot_moment import OTMoment
from .wasserstein import Wasserstein

__all__ = ["Wasserstein", "OTMoment"]
