"""Ambiguity sets."""

from .wasserstein import Wasserstein

__all__ = ["Wasserstein"]
