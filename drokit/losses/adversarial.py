"""Adversarial losses: the worst test-time attack ``||delta||_p <= alpha`` on the numerical features.

selvi2025 thesis §4, Observation 7: for a non-increasing margin loss ``L`` and a linear score,

    sup_{||delta||_p <= alpha} L(y (b + beta^T (x + delta))) = L(y f(x) - alpha ||beta_x||_{p*}),

because the inner problem maximizes a linear function of ``delta`` over the ``l_p`` ball (its value is the
dual norm) and ``L`` is non-increasing.  For a convex regression loss of the residual ``r = f(x) - y`` the
worst attack moves ``r`` by ``+-alpha ||beta_x||_{p*}``: ``max(L(r + c), L(r - c))`` (spec §2.2).  The
attacked loss keeps ``lip(L)`` (spec §5.3 test 14), so every Wasserstein reformulation stays valid with
``L`` replaced by it; in a conic program the shift is one variable ``tau >= alpha ||beta_x||_{p*}`` (the
loss is non-decreasing in it, so the bound is tight at the optimum): DR-ARO (Cor. 8) at radius > 0,
adversarial training (ARO) at radius 0.

Categorical features are not attacked (their levels are not perturbed at test time).  At a fixed model
the attack is a constant shift ``c``: :meth:`Adversarial.at` gives the plain loss ``L(u - c)`` that every
oracle and evaluation routine uses (through :meth:`drokit.instance.DROInstance.evaluated_at`).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from .base import CLASSIFICATION, REGRESSION, Loss

#: the program variable holding ``tau >= alpha ||beta_x||_{p*}``
ATTACK_VARIABLE = "attack"


def _exponent(p) -> float:
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ParameterError(f"Adversarial norm must be a number p >= 1 or np.inf, got {p!r}") from None
    if not p >= 1:
        raise ParameterError(f"Adversarial norm must be p >= 1 (1, 2, np.inf compile to LP / SOC, other p to "
                             f"power cones), got {p!r}")
    return p


def dual_exponent(p: float) -> float:
    """``p*`` with ``1/p + 1/p* = 1``."""
    return np.inf if p == 1 else 1.0 if np.isinf(p) else p / (p - 1.0)


class Adversarial(Loss):
    """``L`` under the worst attack ``||delta||_p <= budget`` on the numerical features (thesis Obs. 7).

    Parameters
    ----------
    loss : drokit.losses.Loss or str
        The attacked loss (name or :class:`~drokit.losses.Loss`): a non-increasing margin loss for
        classification (logistic, hinge, smooth hinge), any convex loss of the residual for regression.
    norm : float
        ``p >= 1`` of the attack ball (``np.inf`` for l-infinity); the model pays
        ``budget ||beta_x||_{p*}``.
    budget : float
        The attack radius ``alpha >= 0`` (in the units of the numerical features as given to the model;
        ``0`` is the plain loss).

    Examples
    --------
    ```python
    clf = dk.DROClassifier(loss=dk.losses.Adversarial("logistic", norm=2, budget=0.05),
                           ambiguity=dk.Wasserstein(metric, radius=0.1))   # DR-ARO
    ```
    """

    def __init__(self, loss="logistic", norm: float = 2, budget: float = 0.0):
        self.loss = loss
        self.norm = norm
        self.budget = budget

    # ------------------------------------------------------------ validation
    @property
    def inner(self) -> Loss:
        from .registry import get_loss
        inner = get_loss(self.loss)
        if isinstance(inner, Adversarial):
            raise ParameterError("Adversarial(loss=...) must wrap a plain loss, not another Adversarial")
        if inner.task == CLASSIFICATION and not inner.decreasing:
            raise ParameterError(f"Adversarial needs a non-increasing margin loss for classification "
                                 f"(thesis Obs. 7); {inner.name!r} is not")
        return inner

    def validated(self) -> Tuple[Loss, float, float]:
        """``(inner loss, p, alpha)`` checked."""
        p = _exponent(self.norm)
        try:
            alpha = float(self.budget)
        except (TypeError, ValueError):
            raise ParameterError(f"Adversarial budget must be a number >= 0, got {self.budget!r}") from None
        if not (np.isfinite(alpha) and alpha >= 0):
            raise ParameterError(f"Adversarial budget must be finite and >= 0, got {self.budget!r}")
        return self.inner, p, alpha

    def shift(self, beta_x: np.ndarray) -> float:
        """``c = alpha ||beta_x||_{p*}``: how much the worst attack moves the loss argument."""
        _, p, alpha = self.validated()
        beta_x = np.asarray(beta_x, dtype=float)
        return float(alpha * np.linalg.norm(beta_x, ord=dual_exponent(p))) if beta_x.size else 0.0

    def at(self, shift: float) -> "AttackedLoss":
        """The loss at a fixed model whose attack shift is ``shift`` (:meth:`shift`)."""
        return AttackedLoss(self.inner, float(shift))

    # ------------------------------------------------------------ metadata
    @property
    def name(self) -> str:
        return f"adversarial_{self.inner.name}"

    @property
    def task(self) -> str:
        return self.inner.task

    @property
    def decreasing(self) -> bool:
        return self.inner.decreasing

    @property
    def cone_class(self) -> str:
        return self.inner.cone_class

    @property
    def lipschitz(self) -> float:
        return self.inner.lipschitz

    @property
    def pieces(self):
        return None  # the shift is a variable: no fixed pieces (the box LP does not apply)

    # ------------------------------------------------------------ values
    def _fixed_model_only(self, what):
        raise ParameterError(f"Adversarial.{what} depends on the model (the attack shift alpha ||beta_x||_*): "
                             f"evaluate Adversarial.at(shift) or DROInstance.evaluated_at(coef)")

    def value(self, e):
        self._fixed_model_only("value")

    def derivative(self, e):
        self._fixed_model_only("derivative")

    def second_derivative(self, e):
        self._fixed_model_only("second_derivative")

    # ------------------------------------------------------------ conic
    def declare(self, pb: ProgramBuilder, beta_x: Affine) -> None:
        """Add ``tau >= alpha ||beta_x||_{p*}`` (one variable named :data:`ATTACK_VARIABLE`)."""
        from ..metrics.costs import NormCost
        _, p, alpha = self.validated()
        tau = pb.var(ATTACK_VARIABLE, 1)
        if beta_x.size and alpha > 0:
            NormCost(p=p).add_dual_norm_leq(pb, beta_x * alpha, tau, np.ones(beta_x.size))
        else:
            pb.add_nonneg(tau)

    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        """``L(u_i - tau) <= t_i`` (classification) or ``L(u_i + tau), L(u_i - tau) <= t_i`` (regression)."""
        if ATTACK_VARIABLE not in pb.variables:
            raise ParameterError("the program has no attack variable: declare it with Adversarial.declare "
                                 "(drokit's compile paths do this in declare_parameters)")
        tau = pb.get(ATTACK_VARIABLE).repeat(u.size)
        inner = self.inner
        if inner.task == REGRESSION:
            inner.epigraph(pb, Affine.vstack([u + tau, u - tau]), Affine.vstack([t, t]))
        else:
            inner.epigraph(pb, u - tau, t)

    def get_params(self, deep: bool = True) -> dict:
        return {"loss": self.loss, "norm": self.norm, "budget": self.budget}


class AttackedLoss(Loss):
    """``L(u - c)`` (classification) or ``max(L(u + c), L(u - c))`` (regression) for a fixed shift ``c``."""

    def __init__(self, inner: Loss, shift: float):
        self.inner = inner
        self.c = float(shift)
        self.task = inner.task
        self.name = f"attacked_{inner.name}"
        self.cone_class = inner.cone_class
        self.decreasing = inner.decreasing if inner.task != REGRESSION else False
        self._regression = inner.task == REGRESSION

    def arguments(self, e):
        """The attacked loss's argument: ``e - c`` (classification), or the worse of ``e +- c`` (regression)."""
        e = np.asarray(e, dtype=float)
        if self._regression:
            up, down = e + self.c, e - self.c
            use_up = self.inner.value(up) >= self.inner.value(down)
            return np.where(use_up, up, down)
        return e - self.c

    def value(self, e):
        return self.inner.value(self.arguments(e))

    def derivative(self, e):
        return self.inner.derivative(self.arguments(e))

    def second_derivative(self, e):
        return self.inner.second_derivative(self.arguments(e))

    @property
    def lipschitz(self) -> float:
        return self.inner.lipschitz

    @property
    def pieces(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        pieces = self.inner.pieces
        if pieces is None:
            return None
        a, b = pieces
        if self._regression:
            return np.concatenate([a, a]), np.concatenate([b + a * self.c, b - a * self.c])
        return a, b - a * self.c

    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        if self._regression:
            self.inner.epigraph(pb, Affine.vstack([u + self.c, u - self.c]), Affine.vstack([t, t]))
        else:
            self.inner.epigraph(pb, u - self.c, t)

    def get_params(self, deep: bool = True) -> dict:
        return {"inner": self.inner, "shift": self.c}
