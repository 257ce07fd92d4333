"""Losses written as sympy expressions: ``dk.losses.from_sympy(expr, e)``.

A loss is a convex function ``L(e)`` of one symbol, the margin ``e = y f(x)`` (classification) or the
residual ``e = f(x) - y`` (regression).  From the expression drokit derives everything the
:class:`~drokit.losses.Loss` protocol needs, and says how it knows it:

* ``L'`` and ``L''`` by symbolic differentiation; numpy functions by ``sympy.lambdify``;
* **convexity**: proven symbolically (``L''`` has no negative values on the reals, or ``L`` is a maximum of
  affine functions), else checked numerically on a dense grid, with a warning that the check is numeric;
  a negative ``L''`` found anywhere raises :class:`~drokit.ParameterError`;
* the **asymptotic slopes** ``L'(-inf)`` and ``L'(+inf)`` and the **Lipschitz constant** ``sup |L'|``: for a
  convex ``L``, ``L'`` is nondecreasing, so ``sup |L'| = max(|L'(-inf)|, |L'(+inf)|)``, both limits taken by
  ``sympy.limit`` (exact) after every ``Max``, ``Min``, ``Abs``, ``sign``, ``Heaviside`` and ``Piecewise`` of
  ``L'`` is replaced by the branch it takes for all large ``|e|`` (:func:`asymptotic_slope`; the branch is
  decided by limits too).  An infinite slope means ``L`` grows faster than linearly: the loss is accepted
  with ``lipschitz = inf`` -- its Wasserstein worst case is finite only without numerical moves (and, in
  regression, label moves), which the fit checks (:func:`drokit.losses.base.check_growth`).  A grid of
  values is never taken as a certificate: if sympy cannot decide a limit, the loss has no certified constant
  (``lipschitz = inf``, ``lipschitz_how`` says so) unless ``from_sympy(..., lipschitz=)`` declares one, which
  is then only checked against the grid's lower bound ``max |L'|`` (a grid can refute a declared constant,
  not prove it);
* the **conic form**, by recognizing the expression:

  ============================================  ==========================================================
  form                                          epigraph ``L(u) <= t``
  ============================================  ==========================================================
  ``Max(a_k e + b_k, ...)``, ``Abs(a e + b)``,  LP: ``a_k u + b_k <= t`` (the pieces are exposed as
  a convex ``Piecewise`` of affine pieces       :attr:`Loss.pieces`, so the box LP applies too)
  ``c log(sum_k exp(a_k e + b_k) [+ const])``   exponential cones: ``sum_k exp(a_k u + b_k - t/c) <= 1``
  (softplus, log-sum-exp), ``c > 0``            (one cone per term)
  ``c sqrt(q(e)) + a e + b``, ``q`` a quadratic  a second-order cone ``c sqrt(q2) ||(u + h, r)|| <= t - a u - b``
  with ``q >= 0`` (pseudo-Huber, ...), c > 0     with ``q = q2 (e + h)^2 + q2 r^2``
  ``c Max(a_k e + b_k, ...)**2`` with the Max    ``r >= a_k u + b_k``, ``r >= 0`` (LP rows) and ``c r^2 <= t``
  never negative (squared hinge ``Max(0, 1 -    (one rotated second-order cone)
  e)**2``, squared ReLU), c > 0
  ============================================  ==========================================================

* anything else that is smooth, convex and Lipschitz is compiled by **outer approximation**: the epigraph is
  the maximum of tangents ``L(tau_j) + L'(tau_j) (u - tau_j) <= t`` at a set of points ``tau`` (an LP that
  under-estimates ``L``, so the solved program's value is a lower bound), while every fixed-model evaluation
  (oracles, certificate) uses the exact ``L``; :meth:`~drokit.models.CompiledProblem.solve` adds tangents at
  the fitted model's loss arguments until the certified gap ``upper - lower`` is below tolerance.
"""

from __future__ import annotations

import warnings
from typing import Optional, Tuple

import numpy as np

from ..conic.builder import Affine, ProgramBuilder
from ..exceptions import ParameterError
from .base import CLASSIFICATION, REGRESSION, Loss, quadratic_epigraph

#: the grid of the numeric checks (convexity, Lipschitz fallback)
CHECK_GRID = np.linspace(-60.0, 60.0, 24_001)
#: initial tangent points of an outer approximation
INITIAL_TANGENTS = np.concatenate([-np.logspace(2, -2, 17), [0.0], np.logspace(-2, 2, 17)])


def _sympy():
    import sympy
    return sympy


# ------------------------------------------------------------------------------------ recognition
def _affine_coeffs(expr, e) -> Optional[Tuple[float, float]]:
    """``(a, b)`` if ``expr = a e + b`` with numeric a, b, else None."""
    sp = _sympy()
    try:
        poly = sp.Poly(sp.expand(expr), e)
    except (sp.PolynomialError, sp.GeneratorsNeeded):
        return None
    if poly.degree() > 1 or poly.free_symbols - {e}:
        return None
    coeffs = poly.all_coeffs()
    a, b = (coeffs if len(coeffs) == 2 else [0, coeffs[0]])
    try:
        return float(a), float(b)
    except TypeError:
        return None


def affine_pieces(expr, e) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """``(a, b)`` with ``expr = max_k a_k e + b_k`` when ``expr`` is an affine function, ``Abs`` of one, a
    ``Max`` of such, or a convex continuous ``Piecewise`` of affine pieces; else None."""
    sp = _sympy()
    single = _affine_coeffs(expr, e)
    if single is not None:
        return np.array([single[0]]), np.array([single[1]])
    if isinstance(expr, sp.Abs):
        inner = _affine_coeffs(expr.args[0], e)
        if inner is None:
            return None
        a, b = inner
        return np.array([a, -a]), np.array([b, -b])
    if isinstance(expr, sp.Max):
        parts = [affine_pieces(arg, e) for arg in expr.args]
        if any(p is None for p in parts):
            return None
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if isinstance(expr, sp.Mul) and len(expr.args) == 2 and expr.args[0].is_number and float(expr.args[0]) > 0:
        inner = affine_pieces(expr.args[1], e)
        if inner is not None:
            c = float(expr.args[0])
            return inner[0] * c, inner[1] * c
    if isinstance(expr, sp.Piecewise):
        parts = [_affine_coeffs(piece, e) for piece, _ in expr.args]
        if any(p is None for p in parts):
            return None
        a = np.array([p[0] for p in parts])
        b = np.array([p[1] for p in parts])
        f = sp.lambdify(e, expr, "numpy")
        grid = CHECK_GRID
        values = np.broadcast_to(np.asarray(f(grid), dtype=float), grid.shape)
        # the Piecewise is the max of its pieces exactly when it is convex and continuous
        if np.allclose(values, np.max(np.multiply.outer(grid, a) + b, axis=1), rtol=1e-12, atol=1e-12):
            return a, b
    return None


def log_sum_exp_form(expr, e) -> Optional[Tuple[float, np.ndarray, np.ndarray]]:
    """``(c, a, b)`` with ``expr = c log(sum_k exp(a_k e + b_k))`` (a positive constant inside the log is the
    term ``exp(log const)``; a constant ``d`` added outside is ``b_k + d / c``), ``c > 0``; else None.
    Hyperbolic functions are rewritten in exponentials first (``log(cosh(e))``)."""
    sp = _sympy()
    found = _log_sum_exp_form(expr, e)
    if found is None and expr.has(sp.cosh, sp.sinh):
        found = _log_sum_exp_form(expr.rewrite(sp.exp), e)
    return found


def _log_sum_exp_form(expr, e):
    sp = _sympy()
    shift = 0.0
    if isinstance(expr, sp.Add):  # c log(...) + d
        constants = [t for t in expr.args if not t.has(e)]
        rest = [t for t in expr.args if t.has(e)]
        if len(rest) != 1 or not all(t.is_number for t in constants):
            return None
        shift = float(sum(constants))
        expr = rest[0]
    c = 1.0
    body = expr
    if isinstance(expr, sp.Mul):
        coeff, rest = expr.as_coeff_Mul()
        if not coeff.is_number or float(coeff) <= 0:
            return None
        c, body = float(coeff), rest
    if not isinstance(body, sp.log):
        return None
    inner = body.args[0]
    terms = sp.Add.make_args(sp.expand(inner))
    a, b = [], []
    for term in terms:
        coeff, rest = term.as_coeff_Mul()
        if rest == 1 and coeff.is_number:  # a positive constant
            if float(coeff) <= 0:
                return None
            a.append(0.0)
            b.append(float(np.log(float(coeff))))
            continue
        if not isinstance(rest, sp.exp) or not coeff.is_number or float(coeff) <= 0:
            return None
        aff = _affine_coeffs(rest.args[0], e)
        if aff is None:
            return None
        a.append(aff[0])
        b.append(aff[1] + float(np.log(float(coeff))))
    return c, np.array(a), np.array(b) + shift / c


def sqrt_quadratic_form(expr, e) -> Optional[Tuple[float, float, float, float, float]]:
    """``(c, h, r, a, b)`` with ``expr = c sqrt(q2) sqrt((e + h)^2 + r^2) + a e + b`` when ``expr`` is a
    positive multiple of ``sqrt`` of a nonnegative quadratic plus an affine part; else None."""
    sp = _sympy()
    affine_part = sp.Integer(0)
    root_part = None
    for term in sp.Add.make_args(expr):
        if term.has(sp.sqrt(e)) or any(isinstance(f, sp.Pow) and f.exp == sp.Rational(1, 2)
                                       for f in sp.Mul.make_args(term)):
            if root_part is not None:
                return None
            root_part = term
        else:
            affine_part += term
    if root_part is None:
        return None
    aff = _affine_coeffs(affine_part, e)
    if aff is None:
        return None
    coeff, rest = root_part.as_coeff_Mul()
    if not (isinstance(rest, sp.Pow) and rest.exp == sp.Rational(1, 2)) or not coeff.is_number:
        return None
    c = float(coeff)
    if c <= 0:
        return None
    try:
        poly = sp.Poly(sp.expand(rest.base), e)
    except sp.PolynomialError:
        return None
    if poly.degree() != 2 or poly.free_symbols - {e}:
        return None
    q2, q1, q0 = (float(v) for v in poly.all_coeffs())
    if q2 <= 0:
        return None
    h = q1 / (2 * q2)
    r2 = q0 / q2 - h * h
    if r2 < -1e-12:
        return None  # the quadratic takes negative values: sqrt is not real everywhere
    return c * np.sqrt(q2), h, float(np.sqrt(max(r2, 0.0))), aff[0], aff[1]


def squared_pieces_form(expr, e) -> Optional[Tuple[float, np.ndarray, np.ndarray]]:
    """``(c, a, b)`` with ``expr = c (max_k a_k e + b_k)^2``, ``c > 0``, when the maximum of the affine pieces
    is nonnegative for every ``e`` (so the square is convex and nondecreasing in it: ``c r^2`` with
    ``r >= max_k``); else None."""
    sp = _sympy()
    c = 1.0
    if isinstance(expr, sp.Mul):
        coeff, rest = expr.as_coeff_Mul()
        if not coeff.is_number or float(coeff) <= 0:
            return None
        c, expr = float(coeff), rest
    if not (isinstance(expr, sp.Pow) and expr.exp == 2):
        return None
    pieces = affine_pieces(expr.base, e)
    if pieces is None:
        return None
    a, b = pieces
    # min_e max_k (a_k e + b_k) >= 0: bounded below needs slopes of both signs or a zero slope; the minimum of
    # a convex piecewise-affine function is then at a kink or on a flat piece
    if not ((np.any(a < 0) and np.any(a > 0)) or np.any(a == 0)):
        return None
    i, j = np.triu_indices(a.size, k=1)
    distinct = a[i] != a[j]
    points = np.concatenate([-(b[i] - b[j])[distinct] / (a[i] - a[j])[distinct], [0.0]])
    envelope = np.max(np.multiply.outer(points, a) + b, axis=1)
    flat = b[a == 0]
    lowest = min(float(np.min(envelope)), float(np.min(flat)) if flat.size else np.inf)
    if lowest < -1e-12:
        return None
    return c, a, b


# ------------------------------------------------------------------------------------ the loss
class SymbolicLoss(Loss):
    """A loss given by a sympy expression (see the module docstring); built by :func:`from_sympy`."""

    def __init__(self, expr, symbol, *, task: str, name: str, form: str, form_data, lipschitz: float,
                 lipschitz_how: str, convexity_how: str, decreasing: bool,
                 asymptotic_slopes: Optional[Tuple[float, float]] = None):
        sp = _sympy()
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


# ------------------------------------------------------------------------------------ analysis
def _convexity(expr, e, d2, pieces, squared=None) -> str:
    """How convexity is known: "max of affine pieces", "square of a nonnegative max of affine pieces",
    "symbolic", or "numeric" (with a warning); raises ParameterError when L'' < 0 somewhere."""
    sp = _sympy()
    if pieces is not None:
        return "max of affine pieces"
    if squared is not None:  # r -> c r^2 is convex and nondecreasing on r >= 0, the max of pieces convex
        return "square of a nonnegative max of affine pieces"
    if expr.has(sp.Piecewise, sp.Max, sp.Min, sp.Abs, sp.Heaviside):
        # kinks hide from L'': check midpoint convexity of L itself (second differences) on the grid
        f = sp.lambdify(e, expr, "numpy")
        with np.errstate(all="ignore"):
            vals = np.broadcast_to(np.asarray(f(CHECK_GRID), dtype=float), CHECK_GRID.shape)
        second = vals[:-2] - 2 * vals[1:-1] + vals[2:]
        if np.any(second < -1e-9 * (1 + np.abs(vals[1:-1]))):
            k = int(np.argmin(second)) + 1
            raise ParameterError(f"loss {expr} is not convex near e = {CHECK_GRID[k]:g} (negative second difference "
                                 f"{second[k - 1]:.3g}; numeric check of a non-smooth expression)")
    real = sp.Symbol(e.name, real=True)
    d2r = sp.simplify(d2.subs(e, real))
    try:
        negative = sp.solveset(d2r < 0, real, sp.S.Reals)
        if negative == sp.S.EmptySet:
            return "symbolic (L'' >= 0 on the reals)"
        point = _a_point_of(negative)
        if point is not None:
            raise ParameterError(f"loss {expr} is not convex: L''({point:g}) = {float(d2r.subs(real, point)):.3g} < 0 "
                                 f"(drokit's reformulations need a convex loss)")
    except (NotImplementedError, TypeError, ValueError):
        pass
    f = sp.lambdify(e, d2, "numpy")
    with np.errstate(all="ignore"):
        vals = np.broadcast_to(np.asarray(f(CHECK_GRID), dtype=float), CHECK_GRID.shape)
    finite = np.isfinite(vals)
    if np.any(vals[finite] < -1e-9):
        k = int(np.argmin(np.where(finite, vals, np.inf)))
        raise ParameterError(f"loss {expr} is not convex: L''({CHECK_GRID[k]:g}) = {vals[k]:.3g} < 0 "
                             f"(numeric check; drokit's reformulations need a convex loss)")
    warnings.warn(f"convexity of {expr} was checked numerically (L'' >= 0 on {CHECK_GRID.size:,} points in "
                  f"[{CHECK_GRID[0]:g}, {CHECK_GRID[-1]:g}]), not proven", RuntimeWarning, stacklevel=3)
    return "numeric (grid)"


def _a_point_of(interval_set) -> Optional[float]:
    sp = _sympy()
    if interval_set == sp.S.Reals:
        return 0.0
    try:
        if isinstance(interval_set, sp.Interval):
            lo, hi = interval_set.inf, interval_set.sup
            lo = float(lo) if lo.is_finite else float(hi) - 1.0
            hi = float(hi) if hi.is_finite else lo + 2.0
            return 0.5 * (lo + hi)
        if isinstance(interval_set, sp.Union):
            return _a_point_of(interval_set.args[0])
    except TypeError:
        return None
    return None


class UndecidedLimit(Exception):
    """sympy could not decide an asymptotic slope (a limit it cannot take, or a branch it cannot order)."""


def _limit_at_infinity(expr, t):
    """``lim_{t -> +oo} expr`` as a float (``+-inf`` allowed); :class:`UndecidedLimit` otherwise."""
    sp = _sympy()
    try:
        value = sp.limit(expr, t, sp.oo)
    except Exception as exc:  # sympy raises NotImplementedError, TypeError, PoleError, ValueError, ...
        raise UndecidedLimit(f"sympy.limit failed on {expr}: {type(exc).__name__}: {exc}") from None
    if value in (sp.oo, -sp.oo):
        return float(value)
    if value.is_real and value.is_finite and not value.has(t):
        return float(value)
    raise UndecidedLimit(f"the limit of {expr} as it -> oo is {value}")


def _eventual_sign(expr, t) -> int:
    """The sign (-1, 0, 1) that ``expr`` keeps for all large ``t``; 0 only when it is identically 0."""
    sp = _sympy()
    expr = _eventually(expr, t)
    if expr.is_number:
        value = complex(expr)
        if value.imag != 0:
            raise UndecidedLimit(f"{expr} is not real")
        return int(np.sign(value.real))
    if sp.simplify(expr) == 0:
        return 0
    value = _limit_at_infinity(expr, t)
    if value == 0:
        raise UndecidedLimit(f"the sign of {expr} for large values is not decided ({expr} -> 0)")
    return 1 if value > 0 else -1


def _eventual_truth(cond, t) -> bool:
    """Whether the condition ``cond`` holds for all large ``t`` (False: fails for all large ``t``)."""
    sp = _sympy()
    if cond in (sp.true, True):
        return True
    if cond in (sp.false, False):
        return False
    if isinstance(cond, sp.And):
        return all(_eventual_truth(c, t) for c in cond.args)
    if isinstance(cond, sp.Or):
        return any(_eventual_truth(c, t) for c in cond.args)
    if isinstance(cond, sp.Not):
        return not _eventual_truth(cond.args[0], t)
    if isinstance(cond, sp.core.relational.Relational):
        sign = _eventual_sign(cond.lhs - cond.rhs, t)
        if isinstance(cond, (sp.StrictGreaterThan,)):
            return sign > 0
        if isinstance(cond, (sp.GreaterThan,)):
            return sign >= 0
        if isinstance(cond, (sp.StrictLessThan,)):
            return sign < 0
        if isinstance(cond, (sp.LessThan,)):
            return sign <= 0
        if isinstance(cond, sp.Eq):
            return sign == 0
        if isinstance(cond, sp.Ne):
            return sign != 0
    raise UndecidedLimit(f"cannot decide the condition {cond} for large values")


def _eventually(expr, t):
    """``expr`` with every ``Piecewise``, ``Max``, ``Min``, ``Abs``, ``sign``, ``Heaviside`` and ``DiracDelta``
    replaced by the branch it takes for all sufficiently large ``t`` (decided by limits); raises
    :class:`UndecidedLimit` when a branch cannot be decided."""
    sp = _sympy()
    if not expr.has(t) or expr.is_Atom:
        return expr
    if isinstance(expr, sp.Piecewise):
        for value, cond in expr.args:
            if _eventual_truth(cond, t):
                return _eventually(value, t)
        raise UndecidedLimit(f"no branch of {expr} holds for large values")
    if isinstance(expr, (sp.Max, sp.Min)):
        args = [_eventually(a, t) for a in expr.args]
        best = args[0]
        for other in args[1:]:
            sign = _eventual_sign(other - best, t)
            if (sign > 0) if isinstance(expr, sp.Max) else (sign < 0):
                best = other
        return best
    if isinstance(expr, (sp.Abs, sp.sign, sp.Heaviside, sp.DiracDelta)):
        inner = _eventually(expr.args[0], t)
        sign = _eventual_sign(inner, t)
        if isinstance(expr, sp.Abs):
            return inner * sign
        if isinstance(expr, sp.sign):
            return sp.Integer(sign)
        if isinstance(expr, sp.Heaviside):
            if sign == 0:
                raise UndecidedLimit(f"{expr} at a zero argument")
            return sp.Integer(1 if sign > 0 else 0)
        if sign == 0:
            raise UndecidedLimit(f"{expr} at a zero argument")
        return sp.Integer(0)
    return expr.func(*[_eventually(a, t) for a in expr.args])


def asymptotic_slope(d1, e, direction: int) -> float:
    """``lim_{e -> direction * oo} L'(e)`` (``d1`` = ``L'``) as a float, ``+-inf`` included.

    The branches of ``L'`` (``Max``, ``Abs``, ``Piecewise``, ``Heaviside`` from differentiating a ``Max``, ...)
    are first resolved to the one taken for all large ``|e|`` -- each decided by the sign of a limit -- so that
    ``sympy.limit`` sees a smooth expression; raises :class:`UndecidedLimit` when sympy cannot decide."""
    sp = _sympy()
    t = sp.Symbol("t_asymptotic", positive=True)
    tail = _eventually(d1.subs(e, t if direction > 0 else -t), t)
    return _limit_at_infinity(tail, t)


def grid_slope_lower_bound(d1, e) -> float:
    """``max |L'|`` on 200,001 points of [-1e4, 1e4]: a LOWER bound on ``sup |L'|`` (a grid refutes a declared
    Lipschitz constant below it; it never certifies one)."""
    sp = _sympy()
    f = sp.lambdify(e, d1, "numpy")
    grid = np.linspace(-1e4, 1e4, 200_001)
    with np.errstate(all="ignore"):
        vals = np.abs(np.broadcast_to(np.asarray(f(grid), dtype=float), grid.shape))
    vals = vals[np.isfinite(vals)]
    return float(np.max(vals)) if vals.size else 0.0


def _lipschitz(expr, e, d1, pieces, declared: Optional[float]) -> Tuple[float, str, Optional[Tuple[float, float]]]:
    """``(lipschitz, how, (L'(-inf), L'(+inf)) or None)``; see the module docstring."""
    if pieces is not None:
        slopes = (float(np.min(pieces[0])), float(np.max(pieces[0])))
        lip, how = float(np.max(np.abs(pieces[0]))), "max |a_k| of the affine pieces"
    else:
        try:
            slopes = (asymptotic_slope(d1, e, -1), asymptotic_slope(d1, e, +1))
        except UndecidedLimit as why:
            return _undecided(expr, e, d1, declared, str(why))
        lip = float(max(abs(slopes[0]), abs(slopes[1])))
        how = (f"symbolic: L'(e) -> {_show(slopes[0])} as e -> -oo and {_show(slopes[1])} as e -> +oo "
               f"(sympy limits; L' nondecreasing)")
        if not np.isfinite(lip):
            how += "; L grows faster than linearly, so sup |L'| = inf"
    if declared is not None and not _agrees(declared, lip):
        if not np.isfinite(lip):
            raise ParameterError(f"loss {expr} grows faster than linearly ({how}): it has no finite Lipschitz "
                                 f"constant, but lipschitz={declared!r} was declared")
        raise ParameterError(f"loss {expr}: the derived Lipschitz constant is {lip:.10g} ({how}), but "
                             f"lipschitz={declared!r} was declared; omit lipschitz= (it is only needed when "
                             f"sympy cannot take the limits)")
    return lip, how, slopes


def _show(v: float) -> str:
    return "+oo" if v == np.inf else "-oo" if v == -np.inf else f"{v:.10g}"


def _agrees(declared, lip: float) -> bool:
    declared = float(declared)
    if np.isinf(lip) or np.isinf(declared):
        return np.isinf(lip) and np.isinf(declared)
    return abs(declared - lip) <= 1e-9 * max(1.0, lip)


def _undecided(expr, e, d1, declared, why: str):
    if declared is None:
        return np.inf, (f"undecided: sympy could not take the limits of L' at +-oo ({why}); no Lipschitz "
                        f"constant is certified (a grid estimate is not a proof): declare it with "
                        f"from_sympy(..., lipschitz=sup |L'|) if you know it"), None
    try:
        lip = float(declared)
    except (TypeError, ValueError):
        raise ParameterError(f"lipschitz must be a number >= 0 or np.inf, got {declared!r}") from None
    if not lip >= 0:
        raise ParameterError(f"lipschitz must be a number >= 0 or np.inf, got {declared!r}")
    seen = grid_slope_lower_bound(d1, e)
    if seen > lip * (1 + 1e-9) + 1e-12:
        raise ParameterError(f"loss {expr}: the declared lipschitz={declared!r} is below max |L'| = {seen:.6g} "
                             f"found on a grid of [-1e4, 1e4], so it is not a Lipschitz constant")
    return lip, (f"declared by the user (lipschitz={declared!r}); sympy could not take the limits of L' ({why}); "
                 f"a grid of [-1e4, 1e4] found max |L'| = {seen:.6g}, not above it"), None


def from_sympy(expr, e=None, *, task: Optional[str] = None, name: Optional[str] = None,
               conic: str = "auto", lipschitz: Optional[float] = None) -> SymbolicLoss:
    """A drokit loss from a sympy expression of the margin / residual symbol ``e``.

    Example::

        import sympy as sp
        e = sp.Symbol("e")
        softplus = dk.losses.from_sympy(sp.log(1 + sp.exp(-e)), e)       # exponential cones
        hinge = dk.losses.from_sympy(sp.Max(0, 1 - e), e)                  # LP (affine pieces)
        pseudo_huber = dk.losses.from_sympy(sp.sqrt(1 + e**2) - 1, e, task="regression")   # SOC

    Parameters
    ----------
    expr : sympy expression in the single symbol ``e``.
    e : the symbol (default: the expression's only free symbol).
    task : ``"classification"`` or ``"regression"``; default: classification when ``L`` is non-increasing,
        else regression.
    name : a short name (default ``str(expr)``).
    conic : ``"auto"`` (recognize LP / exponential-cone / SOC forms, else outer approximation) or
        ``"outer"`` (always the tangent outer approximation; for cross-checks).
    lipschitz : ``sup |L'|`` when sympy cannot take the limits of ``L'`` at ``+-oo`` (otherwise it must
        equal the derived constant).  Without it such a loss has no certified constant and is refused
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
    sp = _sympy()
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
    convexity = _convexity(expr, e, d2, pieces, squared)
    lip, lip_how, slopes = _lipschitz(expr, e, d1, pieces, lipschitz)
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
