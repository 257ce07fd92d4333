"""The OT-with-moment stability criterion of blanchet2024: how much perturbation breaks a model.

``R(beta, r)`` is the smallest cost ``M_c`` (moving samples at price ``theta1``, reweighting them at price
``theta2`` with a KL or chi-square divergence; :class:`~drokit.OTMoment`) of a perturbation of the data that
raises the model's risk to ``r``.  Layers:

* :mod:`.adversaries` -- the inner maximization ``max_z h l(z) - theta1 d(z, z_i)`` per sample (closed forms
  for linear models, the minimal flip distance for the 0/1 loss, finite candidates, gradient ascent);
* :mod:`.divergences` -- the reweighting (alpha and the weights in closed form / by sorting);
* :mod:`.dual` -- the concave one-dimensional dual in ``h`` and the primal recovery;
* :mod:`.api` -- :func:`stability`, :func:`feature_stability`, :func:`stability_curve` on fitted models.
"""

from .adversaries import Adversary, FiniteCandidates, FixedLosses, LinearLoss, MinimalFlip, Response
from .api import (FeatureStability, StabilityCurve, bind_model, feature_stability, stability,
                  stability_curve)
from .dual import solve_stability
from .gradient import GradientAdversary, mlp_loss_and_grad
from .linear import LinearModelAdversary
from .result import StabilityResult
from .transforms import Squared, ZeroOne, d_transform

__all__ = ["Adversary", "Response", "FixedLosses", "FiniteCandidates", "MinimalFlip", "LinearLoss",
           "LinearModelAdversary", "GradientAdversary", "mlp_loss_and_grad", "solve_stability",
           "StabilityResult", "stability", "feature_stability", "stability_curve", "FeatureStability",
           "StabilityCurve", "bind_model", "Squared", "ZeroOne", "d_transform"]
