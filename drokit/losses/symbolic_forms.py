"""The conic forms of a loss written in sympy (:func:`~drokit.losses.symbolic.from_sympy`), recognized from the
expression ``L(e)``; :meth:`~drokit.losses.symbolic.SymbolicLoss.epigraph` writes the epigraph of the form found:

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

Each recognizer returns the form's numeric data (the ``form_data`` of :class:`~drokit.losses.symbolic.SymbolicLoss`)
or None: :func:`affine_pieces` ``(a, b)``, :func:`log_sum_exp_form` ``(c, a, b)``, :func:`sqrt_quadratic_form`
``(c sqrt(q2), h, r, a, b)`` and :func:`squared_pieces_form` ``(c, a, b)``.  An expression of none of these forms is
compiled by the tangent outer approximation (:mod:`drokit.losses.symbolic`).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .symbolic_analysis import CHECK_GRID, sympy_module


def _affine_coeffs(expr, e) -> Optional[Tuple[float, float]]:
    """``(a, b)`` if ``expr = a e + b`` with numeric a, b, else None."""
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
    found = _log_sum_exp_form(expr, e)
    if found is None and expr.has(sp.cosh, sp.sinh):
        found = _log_sum_exp_form(expr.rewrite(sp.exp), e)
    return found


def _log_sum_exp_form(expr, e):
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
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
