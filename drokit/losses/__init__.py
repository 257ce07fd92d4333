"""Losses: the :class:`Loss` protocol and the built-in losses (see :mod:`drokit.losses.builtin`)."""

from __future__ import annotations

from typing import Union

from ..exceptions import ParameterError
from .adversarial import Adversarial, AttackedLoss
from .base import CLASSIFICATION, REGRESSION, Loss
from .symbolic import SymbolicLoss, from_sympy
from .builtin import Absolute, EpsilonInsensitive, Huber, Hinge, Logistic, Pinball, SmoothHinge

_BY_NAME = {
    "logistic": Logistic, "log": Logistic, "log_loss": Logistic,
    "hinge": Hinge,
    "smooth_hinge": SmoothHinge,
    "huber": Huber,
    "pinball": Pinball, "quantile": Pinball,
    "epsilon_insensitive": EpsilonInsensitive,
    "absolute": Absolute, "lad": Absolute,
}


def loss_names() -> list:
    return sorted(_BY_NAME)


def get_loss(loss: Union[str, Loss]) -> Loss:
    """A :class:`Loss` from a name (``"logistic"``, ``"huber"``, ...) or a loss object (returned as is)."""
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str) and loss.lower() in _BY_NAME:
        return _BY_NAME[loss.lower()]()
    raise ParameterError(
        f"unknown loss {loss!r}; pass a drokit.losses.Loss object or one of {loss_names()}")


__all__ = ["from_sympy", "SymbolicLoss", "Adversarial", "AttackedLoss", "Loss", "Logistic", "Hinge", "SmoothHinge", "Huber", "Pinball", "EpsilonInsensitive",
           "Absolute", "get_loss", "loss_names", "CLASSIFICATION", "REGRESSION"]
