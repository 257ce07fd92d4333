"""Inner maximization by gradient ascent, for differentiable non-linear models (blanchet2024 Alg. 1-2's inner
loop): ``max_delta h l(x + delta) - theta1 ||Gamma delta||_2^2`` per sample, over the numerical columns.

The search is a monotone ascent with a per-sample step size (grown by 1.2 after an improving step, halved
after a failed one), warm-started from the previous multiplier's maximizers.  It finds the global
maximizer when the inner problem is strongly concave, ``2 theta1 min_j gamma_j^2 > h * smoothness(l)``
(the Sinha et al. regime, spec §3.3); otherwise it is a local search and the criterion it gives is an
upper bound on the true one (the recovered distribution is feasible, its cost is the primal value).
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np
from scipy.special import expit

from ...exceptions import DataError, ParameterError
from .adversaries import Adversary, Response

LossAndGrad = Callable[[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]


class GradientAdversary(Adversary):
    """Gradient-ascent adversary over the columns ``movable`` of the model input ``X``.

    Parameters
    ----------
    loss_and_grad : callable
        ``f(X, y) -> (losses (N,), gradient (N, p) of each loss w.r.t. its own row of X)``.
    X, y : numpy.ndarray
        Model inputs (the design the model was fitted on) and targets.
    movable : numpy.ndarray of int
        Column indices that may move; ``gamma`` their weights in ``||Gamma delta||_2^2``.
    steps : int
        Ascent steps per call.
    """

    exact = False

    def __init__(self, loss_and_grad: LossAndGrad, X: np.ndarray, y: np.ndarray, movable: np.ndarray,
                 gamma: np.ndarray, steps: int = 100, frame_builder: Optional[Callable] = None):
        self.f = loss_and_grad
        self.X = np.asarray(X, dtype=float)
        self.y = y
        self.movable = np.asarray(movable, dtype=int)
        self.gamma2 = np.asarray(gamma, dtype=float) ** 2
        if self.gamma2.shape != self.movable.shape:
            raise ParameterError("gamma must have one weight per movable column")
        if not (isinstance(steps, (int, np.integer)) and steps > 0):
            raise ParameterError(f"steps must be a positive integer, got {steps!r}")
        self.steps = int(steps)
        self.n_samples = self.X.shape[0]
        losses, grad = self.f(self.X, self.y)
        losses = np.asarray(losses, dtype=float)
        if losses.shape != (self.n_samples,) or np.shape(grad) != self.X.shape:
            raise DataError(f"loss_and_grad must return losses of shape ({self.n_samples},) and a gradient of "
                            f"shape {self.X.shape}; got {losses.shape} and {np.shape(grad)}")
        if not np.isfinite(losses).all():
            raise DataError("the model's losses on X are not all finite")
        self._nominal = losses
        self._delta = np.zeros((self.n_samples, self.movable.size))
        self._step = None
        self._frame = frame_builder

    def nominal_losses(self):
        return self._nominal

    def sup_losses(self, theta1):
        if np.isinf(theta1) or self.movable.size == 0:
            return self._nominal
        return np.full(self.n_samples, np.inf)  # unbounded inputs: assume the loss is unbounded too

    def _objective(self, h, theta1, delta):
        Xm = self.X.copy()
        Xm[:, self.movable] += delta
        losses, grad = self.f(Xm, self.y)
        cost = np.sum(self.gamma2 * delta ** 2, axis=1)
        value = h * losses - theta1 * cost
        g = h * np.asarray(grad)[:, self.movable] - 2.0 * theta1 * self.gamma2 * delta
        return value, np.asarray(losses, float), cost, g

    def respond(self, h, theta1, side=1):
        if np.isinf(theta1) or self.movable.size == 0 or h == 0:
            zero = np.zeros((self.n_samples, self.movable.size))
            return Response(self._nominal, np.zeros(self.n_samples), zero)
        # warm start from the previous maximizers where they beat the observed point
        start = self._delta
        v0, l0, c0, g0 = self._objective(h, theta1, np.zeros_like(start))
        v1, l1, c1, g1 = self._objective(h, theta1, start)
        better = v1 > v0
        delta = np.where(better[:, None], start, 0.0)
        value = np.where(better, v1, v0)
        loss = np.where(better, l1, l0)
        cost = np.where(better, c1, c0)
        grad = np.where(better[:, None], g1, g0)
        curvature = 2.0 * theta1 * float(np.max(self.gamma2))
        step = np.full(self.n_samples, 1.0 / curvature)
        for _ in range(self.steps):
            trial = delta + step[:, None] * grad
            tv, tl, tc, tg = self._objective(h, theta1, trial)
            ok = tv > value
            delta = np.where(ok[:, None], trial, delta)
            value = np.where(ok, tv, value)
            loss = np.where(ok, tl, loss)
            cost = np.where(ok, tc, cost)
            grad = np.where(ok[:, None], tg, grad)
            step = np.where(ok, step * 1.2, step * 0.5)
            if np.all(step < 1e-12 / curvature):
                break
        self._delta = delta
        return Response(loss, cost, delta)

    def points(self, choice, samples):
        if self._frame is None:
            return None
        samples = np.asarray(samples, dtype=int)
        Xm = self.X[samples].copy()
        Xm[:, self.movable] += np.asarray(choice)[samples]
        return self._frame(Xm, samples)


# ---------------------------------------------------------------- scikit-learn MLPs
_ACTIVATIONS = {
    "relu": (lambda z: np.maximum(z, 0.0), lambda z, a: (z > 0).astype(float)),
    "tanh": (np.tanh, lambda z, a: 1.0 - a ** 2),
    "logistic": (expit, lambda z, a: a * (1.0 - a)),
    "identity": (lambda z: z, lambda z, a: np.ones_like(z)),
}


def mlp_loss_and_grad(mlp, positive_label) -> LossAndGrad:
    """Log-loss of a fitted binary scikit-learn ``MLPClassifier`` and its gradient w.r.t. the input rows,
    by a forward and a backward pass over ``mlp.coefs_`` / ``mlp.intercepts_``.  ``y`` is +-1 (+1 for
    ``positive_label``)."""
    if mlp.activation not in _ACTIVATIONS:
        raise ParameterError(f"MLP activation {mlp.activation!r} is not supported")
    if getattr(mlp, "out_activation_", "logistic") != "logistic" or mlp.coefs_[-1].shape[1] != 1:
        raise ParameterError("only binary MLPClassifier models (one logistic output) are supported")
    act, dact = _ACTIVATIONS[mlp.activation]

    def loss_and_grad(X, y):
        a = np.asarray(X, dtype=float)
        zs, acts = [], [a]
        for W, b in zip(mlp.coefs_[:-1], mlp.intercepts_[:-1]):
            z = a @ W + b
            a = act(z)
            zs.append(z)
            acts.append(a)
        out = (a @ mlp.coefs_[-1] + mlp.intercepts_[-1]).ravel()
        margin = y * out
        losses = np.logaddexp(0.0, -margin)
        d = (-y * expit(-margin))[:, None]                 # dloss / dout
        d = d @ mlp.coefs_[-1].T
        for layer in range(len(zs) - 1, -1, -1):
            d = d * dact(zs[layer], acts[layer + 1])
            d = d @ mlp.coefs_[layer].T
        return losses, d

    return loss_and_grad
