"""The inputs of the intersection program (selvi2025 thesis §4.5, Inter-ARO*), checked and converted.

Both samples (numerical features, labels in ``{-1, +1}``), the two radii, the loss (a non-increasing margin loss for
classification, optionally with the test-time attack of Obs. 7, or an :class:`~drokit.losses.Adversarial` loss that
carries one), the transport norm, the feature weights ``gamma`` and the label cost ``kappa``: what
:mod:`.intersection` (the static program) and :mod:`.intersection_bound` (the finite-support lower bound) read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError
from ..params import nonnegative_real
from ..losses import get_loss
from ..losses.base import REGRESSION, Loss
from ..metrics.costs import NormCost


@dataclass
class IntersectionInputs:
    X: np.ndarray
    y: np.ndarray
    Xa: np.ndarray
    ya: np.ndarray
    eps: float
    eps_a: float
    loss: Loss
    lip: float
    norm: NormCost
    gamma: np.ndarray
    kappa: float
    attack: Optional[Tuple[float, float]]

    @property
    def n(self) -> int:
        return self.X.shape[1]

    def attack_shift(self, coef: np.ndarray) -> float:
        """``alpha ||beta||_{p_a*}`` at a fixed model (0 without attack)."""
        if self.attack is None:
            return 0.0
        pa, alpha = self.attack
        return float(alpha * np.linalg.norm(coef, ord=NormCost(pa).dual_p))


def _samples(X, y, what: str) -> Tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{what}: X and y must be numeric arrays") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"{what}: X must be a non-empty 2-D array (samples x numerical features), "
                        f"got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise DataError(f"{what}: y must have shape ({X.shape[0]},), got {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise DataError(f"{what}: X or y contains NaN or inf")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise DataError(f"{what}: labels must be -1 or +1, got {np.unique(y)[:5]}")
    return X, y


def _loss_and_attack(loss, attack):
    """The plain non-increasing margin loss and ``(p_a, alpha)`` or ``None``; an
    :class:`~drokit.losses.Adversarial` loss is unwrapped into its inner loss and attack."""
    loss = get_loss(loss)
    if hasattr(loss, "validated") and type(loss).__name__ == "Adversarial":
        inner, pa, alpha = loss.validated()
        if attack is not None:
            raise ParameterError("pass the attack either as an Adversarial loss or as attack=(p, alpha), "
                                 "not both")
        loss, attack = inner, (pa, alpha)
    if loss.task == REGRESSION or not loss.decreasing:
        raise ParameterError(
            f"the intersection program (selvi2025 Thm 11) needs a non-increasing margin loss for "
            f"classification (logistic, hinge, smooth_hinge); {getattr(loss, 'name', loss)!r} is not")
    lip = float(loss.lipschitz)
    if not (np.isfinite(lip) and lip >= 0):
        raise ParameterError(f"loss {loss.name!r} has no finite Lipschitz constant ({lip!r})")
    if attack is not None:
        try:
            pa, alpha = attack
            pa, alpha = float(pa), float(alpha)
        except (TypeError, ValueError):
            raise ParameterError(f"attack must be a pair (p, alpha) with p >= 1 and alpha >= 0, "
                                 f"got {attack!r}") from None
        if not (pa >= 1) or not (np.isfinite(alpha) and alpha >= 0):
            raise ParameterError(f"attack must be a pair (p, alpha) with p >= 1 and finite alpha >= 0, "
                                 f"got {attack!r}")
        attack = (pa, alpha)
    return loss, lip, attack


def validate_inputs(X, y, X_aux, y_aux, radius, radius_aux, loss, p, gamma, kappa, attack) -> IntersectionInputs:
    """The intersection problem's inputs checked and converted (samples and auxiliary samples of equal width,
    radii, loss and attack, norm, feature weights, label cost)."""
    X, y = _samples(X, y, "samples")
    Xa, ya = _samples(X_aux, y_aux, "auxiliary samples")
    if Xa.shape[1] != X.shape[1]:
        raise DataError(f"X has {X.shape[1]} features but X_aux has {Xa.shape[1]}")
    n = X.shape[1]
    eps, eps_a = nonnegative_real(radius, "radius"), nonnegative_real(radius_aux, "radius_aux")
    loss, lip, attack = _loss_and_attack(loss, attack)
    norm = NormCost(p=p)
    norm.validated_p()
    if gamma is None:
        gamma = np.ones(n)
    gamma = np.asarray(gamma, dtype=float)
    if gamma.ndim == 0:
        gamma = np.full(n, float(gamma))
    if gamma.shape != (n,) or np.any(np.isnan(gamma)) or np.any(gamma < 0):
        raise ParameterError(f"gamma must be {n} weights >= 0 (np.inf = immutable), got {gamma!r}")
    try:
        kappa = float(kappa)
    except (TypeError, ValueError):
        raise ParameterError(f"kappa must be a number >= 0 or np.inf, got {kappa!r}") from None
    if np.isnan(kappa) or kappa < 0:
        raise ParameterError(f"kappa must be >= 0 or np.inf, got {kappa!r}")
    return IntersectionInputs(X, y, Xa, ya, eps, eps_a, loss, lip, norm, gamma, kappa, attack)


def check_label_proportions(y: np.ndarray, y_aux: np.ndarray) -> None:
    """With kappa = inf the intersection is empty unless both label marginals agree exactly."""
    N, Na = y.size, y_aux.size
    pos, pos_a = int(np.sum(y > 0)), int(np.sum(y_aux > 0))
    if pos * Na != pos_a * N:
        raise ParameterError(
            f"with kappa = inf labels never move, so every distribution in both balls has the label "
            f"proportions of both samples; they differ ({pos}/{N} vs {pos_a}/{Na} positive), so the "
            f"intersection is empty (the worst case is -inf and the static program is unbounded). "
            f"Use a finite kappa.")


__all__ = ["IntersectionInputs", "validate_inputs", "check_label_proportions"]
