"""Losses written as sympy expressions: ``dk.losses.from_sympy(expr, e)``.

A loss is a convex function ``L(e)`` of one symbol, the margin ``e = y f(x)`` (classification) or the
residual ``e = f(x) - y`` (regression).  From the expression drokit derives everything the
:class:`~drokit.losses.Loss` protocol needs, and says how it knows it:

* ``L'`` and ``L''`` by symbolic differentiation; numpy functions by ``sympy.lambdify``;
* **convexity**, the **asymptotic slopes** ``L'(-inf)``, ``L'(+inf)`` and the **Lipschitz constant** ``sup |L'|``:
  proven symbolically (``L'' >= 0`` on the reals; limits by ``sympy.limit``), else convexity checked numerically
  with a warning, and the Lipschitz constant never certified by a grid (:mod:`.symbolic_analysis`, whose docstring
  states the rules);
* the **conic form**, by recognizing the expression (:mod:`.symbolic_forms`, whose docstring tables the forms):
  a maximum of affine pieces (LP; the pieces are exposed as :attr:`Loss.pieces`, so the box LP applies too),
  ``c log(sum_k exp(a_k e + b_k))`` (exponential cones), ``c sqrt(q(e)) + a e + b`` with ``q >= 0`` a quadratic
  (a second-order cone) and ``c Max(a_k e + b_k, ...)**2`` with the Max never negative (LP rows and one rotated
  second-order cone); :meth:`SymbolicLoss.epigraph` writes the epigraph ``L(u) <= t`` of the form found;
* anything else that is smooth, convex and Lipschitz is compiled by **outer approximation**: the epigraph is
  the maximum of tangents ``L(tau_j) + L'(tau_j) (u - tau_j) <= t`` at a set of points ``tau`` (an LP that
  under-estimates ``L``, so the solved program's value is a lower bound), while every fixed-model evaluation
  (oracles, certificate) uses the exact ``L``; :meth:`~drokit.models.CompiledProblem.solve` adds tangents at
  the fitted model's loss arguments until the certified gap ``upper - lower`` is below tolerance.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from .base import CLASSIFICATION, REGRESSION, Loss, quadratic_epigraph
from .symbolic_analysis import CHECK_GRID, check_convexity, lipschitz_constant, sympy_module
from .symbolic_forms import affine_pieces, log_sum_exp_form, sqrt_quadratic_form, squared_pieces_form

#: initial tangent points of an outer approximation
INITIAL_TANGENTS = np.concatenate([-np.logspace(2, -2, 17), [0.0], np.logspace(-2, 2, 17)])


# ------------------------------------------------------------------------------------ the loss
class SymbolicLoss(Loss):
    """A loss given by a sympy expression (see the module docstring); built by :func:`from_sympy`."""

    def __init__(self, expr, symbol, *, task: str, name: str, form: str, form_data, lipschitz: float,
                 lipschitz_how: str, convexity_how: str, decreasing: bool,
                 asymptotic_slopes: Optional[Tuple[float, float]] = None):
        sp = sympy_module()
        self.expr = expr
        self.symbol = symbol
        self.task = task
        self.name = name
        self.form = form
        self._form_data = form_data
        self._lipschitz = float(lipschitz)
        #: how ``lipschitz`` is known: "max |a_k| ...", "symbolic ...", "declared ..." or "undecided ..."
        self.lipschitz_how = lipschitz_how
        #: ``(L'(-inf), L'(+inf))`` as derived by sympy (exact; +-inf for a loss that grows faster than
        #: linearly), or None when sympy could not take the limits
        self.asymptotic_slopes = (tuple(float(v) for v in asymptotic_slopes) if asymptotic_slopes is not None
                                  else None)
        self.convexity_how = convexity_how
        self.decreasing = bool(decreasing)
        d1 = sp.diff(expr, symbol)
        d2 = sp.diff(d1, symbol)
        self.derivative_expr, self.second_derivative_expr = d1, d2
        self._f = sp.lambdify(symbol, expr, "numpy")
        self._d1 = sp.lambdify(symbol, d1, "numpy")
        # L'' where it exists: the point masses (DiracDelta) of a kink are dropped (numpy has no DiracDelta)
        self._d2 = sp.lambdify(symbol, d2.replace(sp.DiracDelta, lambda *args: sp.Integer(0)), "numpy")
        self.cone_class = {"pieces": "LP", "log_sum_exp": "EXP", "sqrt_quadratic": "SOCP", "squared_pieces": "SOCP",
                           "outer": "LP"}[form]
        #: tangent points of the outer approximation (form "outer"), shared by every row
        self.tangents = INITIAL_TANGENTS.copy() if form == "outer" else np.zeros(0)
        #: per-row tangent points: epigraph call index -> (K, R) array (NaN: none), one column per refinement
        self.row_points: dict = {}
        #: the ``u`` of each epigraph call of the last program built (see :meth:`refine_rows`)
        self._calls: list = []

    # ---------------------------------------------------------------- values
    def _eval(self, fn, e):
        e = np.asarray(e, dtype=float)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(e), dtype=float)
        return np.broadcast_to(out, e.shape).copy()

    def value(self, e):
        return self._eval(self._f, e)

    def derivative(self, e):
        return self._eval(self._d1, e)

    def second_derivative(self, e):
        out = self._eval(self._d2, e)
        return np.where(np.isfinite(out), out, 0.0)

    @property
    def lipschitz(self) -> float:
        return self._lipschitz

    def slope_domain(self) -> Tuple[float, float]:
        """``(inf L', sup L')``: the :attr:`asymptotic_slopes` when sympy derived them; otherwise ``L'`` read
        at ``e = -+1e8`` (an estimate, not a bound)."""
        if self.asymptotic_slopes is not None:
            return self.asymptotic_slopes
        ends = self.derivative(np.array([-1e8, 1e8]))
        return float(ends[0]), float(ends[1])

    @property
    def pieces(self):
        return self._form_data if self.form == "pieces" else None

    @property
    def outer_approximation(self) -> bool:
        """True when the conic form is the tangent outer approximation (a relaxation refined at solve)."""
        return self.form == "outer"

    def tangent_model(self, points: np.ndarray) -> np.ndarray:
        """The outer approximation ``max_j L(tau_j) + L'(tau_j)(e - tau_j)`` at ``points``."""
        tau = self.tangents
        points = np.asarray(points, dtype=float)
        if tau.size == 0:
            return np.full(points.shape, -np.inf)
        return np.max(self.value(tau) + self.derivative(tau) * (points[..., None] - tau), axis=-1)

    def add_tangents(self, points: np.ndarray, max_new: int = 64) -> int:
        """Add tangents at the ``points`` where the outer approximation is worst: the at most ``max_new``
        points with the largest gap ``L(e) - model(e) > 1e-12`` (Kelley's rule: the next model is exact
        there), one per ``1e-9``-cluster.  Returns how many were added."""
        points = np.asarray(points, dtype=float)
        points = np.unique(np.round(points[np.isfinite(points)], 9))
        if points.size == 0:
            return 0
        gap = self.value(points) - self.tangent_model(points)
        worst = np.argsort(-gap, kind="stable")[:max_new]
        new = points[worst[gap[worst] > 1e-12]]
        self.tangents = np.unique(np.concatenate([self.tangents, new]))
        return int(new.size)

    # ---------------------------------------------------------------- conic
    def epigraph(self, pb: ProgramBuilder, u: Affine, t: Affine) -> None:
        if self.form == "pieces":
            return Loss.epigraph(self, pb, u, t)
        if self.form == "log_sum_exp":
            c, a, b = self._form_data
            K = u.size
            w = pb.aux("lse_w", K * a.size)
            parts = [u * float(ak) + float(bk) - t * (1.0 / c) for ak, bk in zip(a, b)]
            ones = pb.constant(np.ones(K * a.size))
            pb.add_exp(Affine.vstack(parts), ones, w)
            total = sum((w[np.arange(k * K, (k + 1) * K)] for k in range(1, a.size)), w[np.arange(K)])
            pb.add_nonneg(1.0 - total)
            return None
        if self.form == "squared_pieces":
            c, a, b = self._form_data
            r = pb.aux("squared_pieces_r", u.size)
            pb.add_nonneg(Affine.vstack([r - (u * float(ak) + float(bk)) for ak, bk in zip(a, b)] + [r]))
            quadratic_epigraph(pb, r, t * (0.5 / c))       # r^2 / 2 <= t / (2 c)
            return None
        if self.form == "sqrt_quadratic":
            c, h, r, a, b = self._form_data
            rhs = (t - (u * a + b)) * (1.0 / c)
            pb.add_soc(rhs, [u + h, pb.constant(np.full(u.size, r))])
            return None
        # outer approximation: the shared tangents, plus each row's own tangents (Kelley's cuts at the
        # row's arguments in earlier solves of the same program, :meth:`refine_rows`)
        calls = pb.annotations.setdefault(("outer_rows", id(self)), [])
        self._calls = calls
        call = len(calls)
        calls.append(u)
        tau = self.tangents
        slopes, values = self.derivative(tau), self.value(tau)
        rows = [t - (u * float(s) + float(v - s * x)) for x, s, v in zip(tau, slopes, values)]
        own = self.row_points.get(call)
        if own is not None and own.shape[0] == u.size:
            for points in own.T:
                idx = np.flatnonzero(np.isfinite(points))
                if idx.size:
                    x = points[idx]
                    s, v = self.derivative(x), self.value(x)
                    rows.append(t[idx] - (u[idx] * s + (v - s * x)))
        pb.add_nonneg(Affine.vstack(rows))
        return None

    def row_model(self, call: int, points: np.ndarray) -> np.ndarray:
        """The outer approximation of the rows of epigraph call ``call`` at ``points`` (one per row)."""
        model = self.tangent_model(points)
        own = self.row_points.get(call)
        if own is not None and own.shape[0] == points.size:
            for column in own.T:
                ok = np.isfinite(column)
                cut = self.value(column[ok]) + self.derivative(column[ok]) * (points[ok] - column[ok])
                model[ok] = np.maximum(model[ok], cut)
        return model

    def refine_rows(self, x: np.ndarray, tol: float = 1e-12) -> int:
        """Kelley's step for every row of the last program built, solved at ``x``: a tangent at the row's
        argument ``u_i(x)`` wherever the row's model is below ``L`` there by more than ``tol (1 + |L|)``.
        Returns how many rows got one.  Each row thus carries its own few tangents instead of every row
        carrying every tangent (K rows x T tangents)."""
        added = 0
        for call, u in enumerate(self._calls):
            args = u.evaluate(x)
            exact = self.value(args)
            gap = exact - self.row_model(call, args)
            column = np.where(gap > tol * (1.0 + np.abs(exact)), args, np.nan)
            n_new = int(np.isfinite(column).sum())
            if n_new == 0:
                continue
            added += n_new
            old = self.row_points.get(call)
            if old is None or old.shape[0] != args.size:
                self.row_points[call] = column[:, None]
            else:
                self.row_points[call] = np.column_stack([old, column])
        return added

    def get_params(self, deep: bool = True) -> dict:
        return {"expr": str(self.expr)}

    def __repr__(self) -> str:
        return f"SymbolicLoss({self.expr}, form={self.form!r})"



def from_sympy(expr, e=None, *, task: Optional[str] = None, name: Optional[str] = None,
               conic: str = "auto", lipschitz: Optional[float] = None) -> SymbolicLoss:
    """A drokit loss from a sympy expression of the margin / residual symbol ``e``.

    Example:

    ```python
    import sympy as sp
    e = sp.Symbol("e")
    softplus = dk.losses.from_sympy(sp.log(1 + sp.exp(-e)), e)       # exponential cones
    hinge = dk.losses.from_sympy(sp.Max(0, 1 - e), e)                  # LP (affine pieces)
    pseudo_huber = dk.losses.from_sympy(sp.sqrt(1 + e**2) - 1, e, task="regression")   # SOC
    ```

    Parameters
    ----------
    expr : sympy.Expr
        Sympy expression in the single symbol ``e``.
    e : sympy.Symbol or None
        The symbol (default: the expression's only free symbol).
    task : str or None
        ``"classification"`` or ``"regression"``; default: classification when ``L`` is non-increasing,
        else regression.
    name : str or None
        A short name (default ``str(expr)``).
    conic : {"auto", "outer"}
        ``"auto"`` (recognize LP / exponential-cone / SOC forms, else outer approximation) or
        ``"outer"`` (always the tangent outer approximation; for cross-checks).
    lipschitz : float or None
        ``sup |L'|`` when sympy cannot take the limits of ``L'`` at ``+-oo`` (otherwise it must equal
        the derived constant).  Without it such a loss has no certified constant and is refused
        wherever one is needed.

    Notes
    -----
    A loss that grows faster than linearly (an infinite asymptotic slope, e.g. the squared hinge
    ``Max(0, 1 - e)**2``) is returned with ``lipschitz = inf``: fitting it with numerical features that can
    move (or, in regression, a label that can move) raises :class:`~drokit.ParameterError`, because its
    Wasserstein worst case is then infinite; with only categorical moves and label flips, or at radius 0,
    it fits.

    Raises
    ------
    ParameterError
        For a non-convex expression, a free symbol other than ``e``, an unknown ``conic``, or a ``lipschitz``
        that contradicts the derived constant (or a grid's lower bound on it).
    """
    sp = sympy_module()
    expr = sp.sympify(expr)
    free = expr.free_symbols
    if e is None:
        if len(free) != 1:
            raise ParameterError(f"from_sympy needs an expression in one symbol; {expr} has {sorted(map(str, free))}")
        e = next(iter(free))
    if free - {e}:
        raise ParameterError(f"loss expression {expr} has symbols {sorted(map(str, free - {e}))} besides {e}")
    if conic not in ("auto", "outer"):
        raise ParameterError(f"conic must be 'auto' or 'outer', got {conic!r}")
    if not e.is_real:  # the margin is real: lets sympy differentiate Abs, Max, sqrt of squares, ...
        real = sp.Symbol(e.name, real=True)
        expr, e = expr.subs(e, real), real
    pieces = affine_pieces(expr, e)
    squared = squared_pieces_form(expr, e) if pieces is None else None
    d1 = sp.diff(expr, e)
    d2 = sp.diff(d1, e)
    convexity = check_convexity(expr, e, d2, pieces, squared)
    lip, lip_how, slopes = lipschitz_constant(expr, e, d1, pieces, lipschitz)
    if slopes is not None:  # L' nondecreasing: L is non-increasing iff L'(+inf) <= 0
        decreasing = bool(slopes[1] <= 0)
    else:
        decreasing = bool(np.all(np.asarray(sp.lambdify(e, d1, "numpy")(CHECK_GRID)) <= 1e-12))
    form, data = "outer", None
    if conic == "auto":
        if pieces is not None:
            form, data = "pieces", pieces
        elif (lse := log_sum_exp_form(expr, e)) is not None:
            form, data = "log_sum_exp", lse
        elif (sq := sqrt_quadratic_form(expr, e)) is not None:
            form, data = "sqrt_quadratic", sq
        elif squared is not None:
            form, data = "squared_pieces", squared
    if task is None:
        task = CLASSIFICATION if decreasing else REGRESSION
    if task not in (CLASSIFICATION, REGRESSION):
        raise ParameterError(f"task must be 'classification' or 'regression', got {task!r}")
    return SymbolicLoss(expr, e, task=task, name=name or str(expr), form=form, form_data=data, lipschitz=lip,
                        lipschitz_how=lip_how, convexity_how=convexity, decreasing=decreasing,
                        asymptotic_slopes=slopes)
