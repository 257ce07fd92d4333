"""Datasets shipped with (or by packages drokit depends on)."""

from .german import load_german_credit

__all__ = ["load_german_credit"]
