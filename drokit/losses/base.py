"""The loss protocol.

A loss is a convex function ``L : R -> R_+`` of the margin ``e = y f(x)`` (classification) or of the
residual ``e = f(x) - y`` (regression).  Every compile path, oracle and evaluation routine uses only
the members below, so a user-written loss that implements them works everywhere:

* :meth:`Loss.value` and :meth:`Loss.derivative` -- vectorized ``L(e)`` and a (sub)derivative;
* :meth:`Loss.second_derivative` -- ``L''(e)`` where it exists (0 for piecewise-affine losses; used by
  the cutting plane's Newton phase 1, which treats a missing one as 0);
* :attr:`Loss.lipschitz` -- ``lip(L) = sup |L'|``; Wasserstein DRO over unbounded numerical features
  reduces to the dual-norm constraint ``lip(L) ||Gamma^{-1} beta_x||_* <= lambda``
  (belbasi2023 Lemma 1; sun2025 Lemma 2).  ``np.inf`` (also the default when a loss without
  :attr:`pieces` does not define it) declares a loss that grows faster than linearly: its worst case is
  infinite as soon as a numerical feature with a nonzero coefficient (or, in regression, the label) can move,
  so such fits are refused (:func:`check_growth`); with only categorical moves and label flips, or at radius
  0, it fits;
* ``slope_domain()`` (optional) -- ``(inf L', sup L')``, the asymptotic slopes of a convex ``L`` (see
  :func:`slope_bounds`);
* :meth:`Loss.epigraph` -- adds ``L(u_i) <= t_i`` for many rows at once to a
  :class:`~drokit.conic.ProgramBuilder` (the conic representation);
* :attr:`Loss.pieces` -- ``(a, b)`` with ``L(e) = max_j a_j e + b_j`` for piecewise-affine losses, else ``None``;
* :attr:`Loss.decreasing` -- ``True`` when L is non-increasing (lets oracles skip a direction).
* optional, for the certified lower bound (:mod:`drokit.certificates.lagrangian`): ``conjugate(a)``
  (``L*(a) = sup_e a e - L(e)``), ``slope_domain()`` (``[inf L', sup L']``) and ``dual_hypograph(pb, m, v)``
  (``w <= -m L*(v / m)`` as cones); :mod:`drokit.losses.conjugate` derives the first two from
  :attr:`Loss.pieces` or from :meth:`Loss.derivative` when they are absent.
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

    def value_and_derivatives(self, e: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(L(e), L'(e), L''(e))`` in one call; a loss may share work between them (drokit's Newton masters
        evaluate all three at every point)."""
        return self.value(e), self.derivative(e), self.second_derivative(e)

    @property
    def lipschitz(self) -> float:
        """``sup_e |L'(e)|``; for piecewise-affine losses ``max_j |a_j|``.  A loss that neither has
        :attr:`pieces` nor overrides this declares no constant: ``inf``, treated as growing faster than
        linearly (see :func:`check_growth`)."""
        pieces = self.pieces
        if pieces is None:
            return np.inf
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


# ------------------------------------------------------------------------------------ growth
def slope_bounds(loss: Loss) -> Tuple[float, float]:
    """``(lo, hi)`` with ``lo <= L'(e) <= hi`` for every ``e`` (valid bounds, not estimates): the affine
    pieces' extreme slopes; the exact :attr:`~drokit.losses.SymbolicLoss.asymptotic_slopes` of a sympy loss;
    a ``slope_domain()`` the loss declares; else ``(-lip, lip)``, ``(-lip, 0)`` for a non-increasing loss."""
    pieces = loss.pieces
    if pieces is not None:
        return float(np.min(pieces[0])), float(np.max(pieces[0]))
    if getattr(loss, "asymptotic_slopes", None) is not None:
        return tuple(float(v) for v in loss.asymptotic_slopes)
    if getattr(loss, "asymptotic_slopes", False) is None:   # a sympy loss whose limits are undecided
        lip = lipschitz_of(loss)
        return -lip, (0.0 if loss.decreasing else lip)
    own = getattr(loss, "slope_domain", None)
    if own is not None:
        lo, hi = own() if callable(own) else own
        return float(lo), float(hi)
    lip = lipschitz_of(loss)
    return -lip, (0.0 if loss.decreasing else lip)


def declares_no_lipschitz(loss: Loss) -> bool:
    """Whether ``loss`` is a hand-written loss that neither overrides :attr:`Loss.lipschitz` nor has pieces."""
    return type(loss).lipschitz is Loss.lipschitz and loss.pieces is None


def lipschitz_of(loss: Loss) -> float:
    """``loss.lipschitz`` as a float >= 0 (``inf`` allowed); :class:`ParameterError` for anything else."""
    value = loss.lipschitz
    try:
        lip = float(value)
    except (TypeError, ValueError):
        lip = float("nan")
    if not lip >= 0:
        raise ParameterError(f"loss {getattr(loss, 'name', loss)!r} declares lipschitz = {value!r}; a Loss's "
                             f"lipschitz must be a number >= 0, or np.inf for a loss that grows faster than "
                             f"linearly")
    return lip


def growth_reason(loss: Loss) -> str:
    """Why ``loss`` has no finite Lipschitz constant, in words (for error messages)."""
    name = getattr(loss, "name", type(loss).__name__)
    inner = getattr(loss, "inner", None)
    if isinstance(inner, Loss):          # an adversarial wrapper: the reason is its loss's
        return growth_reason(inner)
    how = getattr(loss, "lipschitz_how", None)
    if isinstance(how, str) and how.startswith("undecided"):
        return (f"loss {name!r}: it is not known to be Lipschitz -- {how[len('undecided: '):]}")
    slopes = getattr(loss, "asymptotic_slopes", None)
    if slopes is not None:
        show = ["+oo" if v == np.inf else "-oo" if v == -np.inf else f"{v:g}" for v in slopes]
        return (f"loss {name!r} grows faster than linearly: its asymptotic slopes are not finite (L'(e) -> "
                f"{show[0]} as e -> -oo and {show[1]} as e -> +oo, sympy limits), so sup |L'| = inf")
    if isinstance(how, str) and how:
        return f"loss {name!r} grows faster than linearly ({how})"
    if declares_no_lipschitz(loss):
        return (f"loss {name!r} does not declare a Lipschitz constant ({type(loss).__name__} neither defines "
                f"`lipschitz` nor `pieces`), so drokit treats it as growing faster than linearly (define "
                f"`lipschitz` = sup |L'| if it is finite)")
    return (f"loss {name!r} declares lipschitz = inf: it grows faster than linearly (an infinite asymptotic "
            f"slope)")


def check_growth(loss: Loss, *, radius: float, task: str, numerical_names, gamma, kappa: float,
                 where: str = "the fit") -> None:
    """Refuse a loss without a finite Lipschitz constant where its Wasserstein worst case is infinite.

    With ``lip(L) = inf`` (the loss grows faster than linearly), ``sup_{x'} L(beta_x^T x' + ...) -
    lambda ||Gamma (x - x')||`` is infinite for every ``lambda`` as soon as a numerical feature that can move
    at a finite positive cost (``0 < gamma_j < inf``) has a nonzero coefficient, and in regression with a
    finite label cost ``kappa`` (the response moves at cost ``kappa |y - y'|``) for every model.  So the
    problem's optimum puts 0 on every such coefficient, which is rarely what was meant: raise a
    :class:`ParameterError` that says what to do.  Features with weight 0 (free moves) already have their
    coefficients fixed at 0 by every program; radius 0 (plain ERM) and problems whose only moves are
    categorical changes and label flips (bounded) are fine.
    """
    lip = lipschitz_of(loss)
    if np.isfinite(lip) or radius == 0:
        return
    gamma = np.asarray(gamma, dtype=float)
    movable = [str(numerical_names[j]) for j in np.flatnonzero(np.isfinite(gamma) & (gamma > 0))]
    label = task == "regression" and np.isfinite(kappa)
    if not movable and not label:
        return
    reason = growth_reason(loss)
    how = getattr(getattr(loss, "inner", loss), "lipschitz_how", "")
    undecided = isinstance(how, str) and how.startswith("undecided")
    consequence = ("is finite only if the loss is Lipschitz, which is not established" if undecided else
                   "is +inf (the adversary moves it until the loss outgrows the linear transport cost)")
    if movable:
        shown = ", ".join(repr(n) for n in movable[:8]) + (f" and {len(movable) - 8} more" if len(movable) > 8
                                                            else "")
        where_moves = (f"the numerical feature{'s' if len(movable) > 1 else ''} {shown} can move at a finite "
                       f"cost, so the type-1 Wasserstein worst case of any model with a nonzero coefficient on "
                       f"{'them' if len(movable) > 1 else 'it'} {consequence}")
        todo = (f"make {'these features' if len(movable) > 1 else 'this feature'} immutable (weight np.inf, "
                f"e.g. dk.GroundMetric(numerical=dk.NormCost(weights={{{movable[0]!r}: np.inf, ...}}))), use a "
                f"Lipschitz loss (finite asymptotic slopes: logistic, hinge, smooth_hinge, huber, ...), or drop "
                f"{'these columns' if len(movable) > 1 else 'this column'} from X (the same model as "
                f"fixing {'their coefficients' if len(movable) > 1 else 'its coefficient'} at 0, the only "
                f"finite choice)")
        if label:
            todo += "; and set the label cost to LabelCost(kappa=np.inf)"
            where_moves += "; moreover the label can move (finite kappa), the same for every model"
    else:
        where_moves = (f"the label can move (regression with finite kappa = {kappa:g}, at cost kappa |y - y'|), "
                       f"so the type-1 Wasserstein worst case of every model {consequence}")
        todo = "fix the label (dk.LabelCost(kappa=np.inf)) or use a Lipschitz loss"
    if undecided:
        todo = "declare sup |L'| with from_sympy(..., lipschitz=...) if you know it, or " + todo
    raise ParameterError(f"{where} is refused: {reason}; {where_moves}. To fit: {todo}.")
