"""Losses: the :class:`Loss` protocol and the built-in losses (see :mod:`drokit.losses.builtin`)."""

from __future__ import annotations

from .adversarial import Adversarial, AttackedLoss
from .base import CLASSIFICATION, REGRESSION, Loss
from .symbolic import SymbolicLoss, from_sympy
from .builtin import Absolute, EpsilonInsensitive, Huber, Hinge, Logistic, Pinball, SmoothHinge
from .registry import get_loss, loss_names

__all__ = ["from_sympy", "SymbolicLoss", "Adversarial", "AttackedLoss", "Loss", "Logistic", "Hinge", "SmoothHinge", "Huber", "Pinball", "EpsilonInsensitive",
           "Absolute", "get_loss", "loss_names", "CLASSIFICATION", "REGRESSION"]
