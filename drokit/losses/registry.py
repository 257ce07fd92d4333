"""The built-in losses by name: :func:`get_loss` turns a name (or a loss object) into a :class:`~drokit.losses.Loss`."""

from __future__ import annotations

from typing import Union

from ..exceptions import ParameterError
from .base import Loss
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
    """The names :func:`get_loss` knows, sorted."""
    return sorted(_BY_NAME)


def get_loss(loss: Union[str, Loss]) -> Loss:
    """A :class:`Loss` from a name (``"logistic"``, ``"huber"``, ...) or a loss object (returned as is)."""
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str) and loss.lower() in _BY_NAME:
        return _BY_NAME[loss.lower()]()
    raise ParameterError(
        f"unknown loss {loss!r}; pass a drokit.losses.Loss object or one of {loss_names()}")
