"""Certificates of DRO fits: the Lagrangian lower bound of an explicit dual point (:mod:`.lagrangian`)."""

from .lagrangian import LowerBound, lagrangian_bound

__all__ = ["LowerBound", "lagrangian_bound"]
