"""The loss protocol.

A loss is a convex function ``L : R -> R_+`` of the margin ``e = y f(x)`` (classification) or of the
residual ``e = f(x) - y`` (regression).  Every compile path, oracle and evaluation routine uses only
the members below, so a user-written loss that implements them works everywhere:

* :meth:`Loss.value` and :meth:`Loss.derivative` -- vectorized ``L(e)`` and a (sub)derivative;
* :meth:`Loss.second_derivative` -- ``L''(e)`` where it exists (0 for piecewise-affine losses; used by
  the cutting plane's Newton phase 1, which treats a missing one as 0);
* :attr:`Loss.lipschitz` -- ``lip(L) = sup |L'|``; Wasserstein DRO over unbounded numerical features
  reduces to the dual-norm constraint ``lip(L) ||Gamma^{-1} beta_x||_* <= lambda``
  (belbasi2023 Lemma 1; sun2025 Lemma 2);
* :meth:`Loss.epigraph` -- adds ``L(u_i) <= t_i`` for many rows at once to a
  :class:`~drokit.conic.ProgramBuilder` (the conic representation);
* :attr:`Loss.pieces` -- ``(a, b)`` with ``L(e) = max_j a_j e + b_j`` for piecewise-affine losses, else ``None``;
* :attr:`Loss.decreasing` -- ``True`` when L is non-increasing (lets oracles skip a direction).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError

CLASSIFICATION = "classification"
REGRESSION = "regression"


class Loss:
    """Base class of drokit losses (see the module docstring for the protocol)."""

    #: short name used in messages and by :func:`drokit.losses.get_loss`
    name: str = "loss"
    #: "classification", "regression" or "any"
    task: str = "any"
    #: True when L is non-increasing in e
    decreasing: bool = False
    #: the conic class its epigraph needs: "LP", "SOCP" or "EXP"
    cone_class: str = "LP"

    # ---------------------------------------------------------------- values
    def value(self, e: np.ndarray) -> np.ndarray:
        """Vectorized ``L(e)``; the default uses :attr:`pieces`."""
        pieces = self.pieces
        if pieces is None:
            raise NotImplementedError(f"{type(self).__name__} must implement value()")
        a, b = pieces
        e = np.asarray(e, dtype=float)
        return np.max(np.multiply.outer(e, a) + b, axis=-1)

    def derivative(self, e: np.ndarray) -> np.ndarray:
        """A subgradient ``L'(e)`` (the slope of an active piece for piecewise-affine losses)."""
        pieces = self.pieces
        if pieces is None:
            raise NotImplementedError(f"{type(self).__name__} must implement derivative()")
        a, b = pieces
        e = np.asarray(e, dtype=float)
        return a[np.argmax(np.multiply.outer(e, a) + b, axis=-1)]

    def second_derivative(self, e: np.ndarray) -> np.ndarray:
        """``L''(e)`` where L is twice differentiable; 0 by default (right for piecewise-affine losses)."""
        return np.zeros_like(np.asarray(e, dtype=float))

    @property
    def lipschitz(self) -> float:
        """``sup_e |L'(e)|``; for piecewise-affine losses ``max_j |a_j|``."""
        pieces = self.pieces
        if pieces is None:
            raise NotImplementedError(f"{type(self).__name__} must define lipschitz")
        return float(np.max(np.abs(pieces[0])))

    @property
    def pieces(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """``(a, b)`` arrays with ``L(e) = max_j a_j e + b_j``, or ``None`` if not piecewise affine."""
        return None

    @property
    def is_piecewise_affine(self) -> bool:
        return self.pieces is not None

    # ---------------------------------------------------------------- conic
    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        """Add ``L(u_i) <= t_i`` for every row i.  The default handles piecewise-affine losses:
        ``a_j u_i + b_j <= t_i`` for every piece j (an LP)."""
        pieces = self.pieces
        if pieces is None:
            raise NotImplementedError(f"{type(self).__name__} must implement epigraph()")
        a, b = pieces
        rows = [t - (u * float(aj) + float(bj)) for aj, bj in zip(a, b)]
        pb.add_nonneg(Affine.vstack(rows))

    # ------------------------------------------------------------ sklearn-ish
    def get_params(self, deep: bool = True) -> dict:
        """The loss's parameters (scikit-learn convention, so ``loss__delta`` works in grid searches)."""
        return {}

    def set_params(self, **params) -> "Loss":
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ParameterError(f"{type(self).__name__} has no parameter {key!r}; "
                                     f"its parameters are {sorted(valid)}")
            setattr(self, key, value)
        return self

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.get_params() == other.get_params()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.get_params().items()))))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def quadratic_epigraph(pb: ProgramBuilder, s: Affine, q: Affine) -> None:
    """``s_i^2 / 2 <= q_i`` as second-order cones ``||(s_i, q_i - 1/2)||_2 <= q_i + 1/2``.

    Uses ``(q + 1/2)^2 - (q - 1/2)^2 = 2 q``.
    """
    pb.add_soc(q + 0.5, [s, q - 0.5])
