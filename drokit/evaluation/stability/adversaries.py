"""Adversaries: what the perturbation can do to each sample, as the inner maximization of the dual.

For a multiplier ``h >= 0`` an adversary returns, per sample ``i``, a maximizer ``z_i*`` of

    L_i(h) = max_z  h l(z) - theta1 d(z, z_i)          (the d-transform, blanchet2024 Prop. 1)

as its loss ``l(z_i*)`` and transport cost ``d(z_i*, z_i)`` (``L_i = h l* - theta1 d*``).  ``L_i`` is convex
in ``h`` with slope ``l(z_i*)``; at a kink the maximizers tie and ``side = -1 / +1`` picks the one of
smallest / largest loss (the left / right derivative), which the primal recovery mixes (a split atom).

Every adversary also gives the nominal losses and ``sup_losses``: the largest loss each sample reaches at
finite cost, from which the largest achievable risk follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...exceptions import DataError, ParameterError

#: relative tolerance under which two candidate values count as tied
TIE_TOL = 1e-11


@dataclass
class Response:
    """Maximizers at one ``h``: ``loss[i] = l(z_i*)``, ``cost[i] = d(z_i*, z_i)``, and ``choice`` (what the
    adversary needs to rebuild ``z_i*``: candidate indices, new points, ...)."""

    loss: np.ndarray
    cost: np.ndarray
    choice: Any = None


class Adversary:
    """Base class.  Subclasses set ``n_samples`` and implement :meth:`respond`, :meth:`nominal_losses`
    and :meth:`sup_losses`."""

    n_samples: int
    #: whether :meth:`respond` is an exact maximization (False for gradient ascent)
    exact: bool = True

    def nominal_losses(self) -> np.ndarray:
        raise NotImplementedError

    def sup_losses(self, theta1: float) -> np.ndarray:
        """Largest loss sample i reaches at finite cost (its own loss when ``theta1 = inf``)."""
        raise NotImplementedError

    def respond(self, h: float, theta1: float, side: int = 1) -> Response:
        raise NotImplementedError

    def h_limit(self, theta1: float) -> float:
        """Supremum of the ``h`` with finite ``L_i(h)`` (``inf`` unless a loss grows quadratically)."""
        return np.inf

    def points(self, choice: Any, samples: np.ndarray):
        """The moved points of ``samples`` under ``choice`` as a DataFrame in the user's columns, or
        ``None`` when the adversary has no feature representation."""
        return None


def pick_among_ties(values: np.ndarray, losses: np.ndarray, side: int) -> np.ndarray:
    """Per row, the argmax of ``values``; among near-ties the smallest (side -1) / largest (+1) loss."""
    best = np.max(values, axis=1, keepdims=True)
    tied = values >= best - TIE_TOL * (1.0 + np.abs(best))
    key = np.where(tied, side * losses, -np.inf)
    return np.argmax(key, axis=1)


def _as_1d(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise DataError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise DataError(f"{name} contains NaN")
    return arr


class FixedLosses(Adversary):
    """No sample can move: ``l(z_i*) = losses[i]`` and ``L_i(h) = h losses[i]`` (the pure-reweighting
    criterion whatever ``theta1``)."""

    def __init__(self, losses):
        self.losses = _as_1d(losses, "losses")
        if not np.isfinite(self.losses).all():
            raise DataError("losses must be finite")
        self.n_samples = self.losses.size

    def nominal_losses(self):
        return self.losses

    def sup_losses(self, theta1):
        return self.losses

    def respond(self, h, theta1, side=1):
        return Response(self.losses, np.zeros(self.n_samples), np.zeros(self.n_samples, dtype=int))


class FiniteCandidates(Adversary):
    """Sample ``i`` may move to candidate ``k`` with loss ``losses[i, k]`` at cost ``costs[i, k]`` (``inf``:
    not allowed); column ``nominal`` is the observed point (cost 0).  Exact by enumeration,
    ``O(N K)`` per ``h``: the reference for the tests and the categorical moves of non-linear models."""

    def __init__(self, losses, costs, nominal: int = 0, points: Optional[list] = None):
        L = np.asarray(losses, dtype=float)
        C = np.asarray(costs, dtype=float)
        if L.ndim != 2 or L.shape != C.shape or L.size == 0:
            raise DataError(f"losses and costs must be 2-D arrays of the same shape (samples x candidates), "
                            f"got {L.shape} and {C.shape}")
        if np.isnan(L).any() or np.isnan(C).any():
            raise DataError("losses and costs must not contain NaN")
        if (C < 0).any():
            raise DataError("costs must be >= 0 (np.inf forbids a candidate)")
        if not (0 <= int(nominal) < L.shape[1]):
            raise ParameterError(f"nominal must be a column index in [0, {L.shape[1]}), got {nominal!r}")
        if np.any(C[:, int(nominal)] != 0):
            raise DataError("costs[:, nominal] must be 0 (the observed point costs nothing)")
        if not np.isfinite(L[np.isfinite(C)]).all():
            raise DataError("losses of allowed candidates must be finite")
        self.L, self.C, self.nominal = L, C, int(nominal)
        self.n_samples = L.shape[0]

    def nominal_losses(self):
        return self.L[:, self.nominal]

    def sup_losses(self, theta1):
        allowed = (self.C == 0) if np.isinf(theta1) else np.isfinite(self.C)
        return np.max(np.where(allowed, self.L, -np.inf), axis=1)

    def respond(self, h, theta1, side=1):
        if np.isinf(theta1):
            values = np.where(self.C == 0, h * self.L, -np.inf)
        else:
            with np.errstate(invalid="ignore"):
                values = np.where(np.isfinite(self.C), h * self.L - theta1 * self.C, -np.inf)
        k = pick_among_ties(values, self.L, side)  # the nominal column is always allowed, so every row has a max
        rows = np.arange(self.n_samples)
        return Response(self.L[rows, k], self.C[rows, k], k)


class MinimalFlip(Adversary):
    """0/1 loss with the minimal flip costs ``d*_i`` (spec §3.2): sample ``i`` is misclassified after a move
    of cost ``>= flip_cost[i]`` (``0``: already misclassified; ``inf``: cannot be flipped).  Each point either
    stays or moves exactly to the decision boundary: ``L_i(h) = (h - theta1 d*_i)_+``."""

    def __init__(self, flip_cost):
        self.d = _as_1d(flip_cost, "flip_cost")
        if (self.d < 0).any():
            raise DataError("flip_cost must be >= 0")
        self.n_samples = self.d.size

    def nominal_losses(self):
        return (self.d == 0).astype(float)

    def sup_losses(self, theta1):
        return (self.d == 0).astype(float) if np.isinf(theta1) else np.isfinite(self.d).astype(float)

    def respond(self, h, theta1, side=1):
        if np.isinf(theta1):
            flip = self.d == 0
        else:
            with np.errstate(invalid="ignore"):
                gain = h - theta1 * self.d
            tie = np.abs(gain) <= TIE_TOL * (1.0 + h)
            flip = (self.d == 0) | (gain > 0) | (tie & (side > 0))
            flip &= np.isfinite(self.d)
        return Response(flip.astype(float), np.where(flip, self.d, 0.0), flip)


class LinearLoss(Adversary):
    """Linear loss ``l = margins_i + intercept + t`` where moving by ``t`` costs ``t^2 / slope_sq_norm`` (the
    spec's ``l = y a^T x + b`` with ``slope_sq_norm = ||a||^2``): ``L_i(h) = h l_i + h^2 slope_sq_norm /
    (4 theta1)``, ``t* = h slope_sq_norm / (2 theta1)`` (spec §2.5)."""

    def __init__(self, margins, slope_sq_norm: float, intercept: float = 0.0):
        self.e = _as_1d(margins, "margins") + float(intercept)
        self.nu = float(slope_sq_norm)
        if not (np.isfinite(self.nu) and self.nu >= 0):
            raise ParameterError(f"slope_sq_norm must be a finite number >= 0, got {slope_sq_norm!r}")
        self.n_samples = self.e.size

    def nominal_losses(self):
        return self.e

    def sup_losses(self, theta1):
        if np.isinf(theta1) or self.nu == 0:
            return self.e
        return np.full(self.n_samples, np.inf)

    def respond(self, h, theta1, side=1):
        if np.isinf(theta1) or self.nu == 0:
            return Response(self.e, np.zeros(self.n_samples), np.zeros(self.n_samples))
        t = np.full(self.n_samples, h * self.nu / (2.0 * theta1))
        return Response(self.e + t, t ** 2 / self.nu, t)
