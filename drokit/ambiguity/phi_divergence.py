"""The phi-divergence sets by their usual names: :class:`KLBall`, :class:`ChiSquareBall` and :class:`CVaRSet`.

Each is an OT-with-moment set (:class:`~drokit.OTMoment`, blanchet2024 (2.1)) whose samples do not move
(``theta1 = inf``) and are only reweighted (``spec/mot-dro-training.md`` §4, limit 2), so a fit with one goes through
the same MOT-DRO program, certificate and worst case; the divergences' formulas are in
:mod:`drokit.ambiguity.divergences`:

* ``KLBall(radius)``: ``{Q : KL(Q || P_N) <= radius}``; worst-case risk ``min_{h > 0} h radius + h log E_{P_N}
  e^{loss / h}`` (Hu and Hong 2013; Ben-Tal et al. 2013);
* ``ChiSquareBall(radius)``: ``{Q : E_{P_N}[(dQ/dP_N - 1)^2] <= radius}``;
* ``CVaRSet(level)``: ``{Q : dQ/dP_N <= 1 / level}``; worst-case risk ``CVaR_level`` of the losses, the mean of the
  worst ``level`` share (Rockafellar and Uryasev 2000), the phi-divergence family's limit of an indicator ``phi``.

The same sets are ``dro``'s ``KLDRO``, ``Chi2DRO`` and ``CVaRDRO`` (on all-numerical data; drokit takes mixed data,
every built-in loss and sample weights).
"""

from __future__ import annotations

import numpy as np

from .divergences import CVaR
from .ot_moment import OTMoment


class _DivergenceBall(OTMoment):
    """``{Q : D_phi(Q || P_N) <= radius}`` for the divergence named by :attr:`NAME`: samples stay, weights move."""

    NAME = ""

    def __init__(self, radius: float = 0.1):
        self.radius = radius
        self.metric, self.theta1, self.theta2, self.divergence, self.exponent = None, np.inf, 1.0, self.NAME, 2

    def __repr__(self) -> str:
        return f"{type(self).__name__}(radius={self.radius!r})"


class KLBall(_DivergenceBall):
    """The Kullback-Leibler ball ``{Q : KL(Q || P_N) <= radius}`` (module docstring).

    Parameters
    ----------
    radius : float
        ``>= 0``; ``0`` is the empirical distribution.

    Examples
    --------
    ```python
    clf = dk.DROClassifier(ambiguity=dk.KLBall(radius=0.1)).fit(X, y)
    ```
    """

    NAME = "kl"


class ChiSquareBall(_DivergenceBall):
    """The chi-square ball ``{Q : E_{P_N}[(dQ/dP_N - 1)^2] <= radius}`` (module docstring).

    Parameters
    ----------
    radius : float
        ``>= 0``; ``0`` is the empirical distribution.
    """

    NAME = "chi2"


class CVaRSet(OTMoment):
    """The CVaR set ``{Q : dQ/dP_N <= 1 / level}``: a model's worst-case risk is ``CVaR_level`` of its losses (module
    docstring).

    Parameters
    ----------
    level : float
        The tail fraction in ``(0, 1]``: ``1`` is the empirical risk, smaller values weigh the worst losses more.

    Examples
    --------
    ```python
    clf = dk.DROClassifier(ambiguity=dk.CVaRSet(level=0.2)).fit(X, y)   # the worst 20 % of the losses
    ```
    """

    def __init__(self, level: float = 0.1):
        self.level = level
        self.metric, self.theta1, self.theta2, self.radius, self.exponent = None, np.inf, 1.0, 0.0, 2

    @property
    def divergence(self) -> CVaR:
        """The likelihood-ratio bound at ``level`` (follows ``set_params(level=...)``)."""
        return CVaR(self.level)

    def __repr__(self) -> str:
        return f"CVaRSet(level={self.level!r})"


__all__ = ["KLBall", "ChiSquareBall", "CVaRSet"]
