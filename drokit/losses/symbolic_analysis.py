"""The symbolic analysis of a loss written in sympy (:func:`~drokit.losses.symbolic.from_sympy`): its convexity, its
asymptotic slopes and its Lipschitz constant, each returned with how it is known.

* **convexity** (:func:`check_convexity`): proven symbolically (``L''`` has no negative values on the reals, or ``L``
  is a maximum of affine functions, or ``c`` times the square of a nonnegative such maximum), else checked
  numerically on a dense grid (:data:`CHECK_GRID`), with a warning that the check is numeric; a negative ``L''``
  found anywhere raises :class:`~drokit.ParameterError`.  An expression with kinks (``Piecewise``, ``Max``,
  ``Min``, ``Abs``, ``Heaviside``), which hide from ``L''``, is first checked for midpoint convexity of ``L``
  itself (its second differences on the grid);
* the **asymptotic slopes** ``L'(-inf)`` and ``L'(+inf)`` and the **Lipschitz constant** ``sup |L'|``
  (:func:`lipschitz_constant`): for a convex ``L``, ``L'`` is nondecreasing, so ``sup |L'| = max(|L'(-inf)|,
  |L'(+inf)|)``, both limits taken by ``sympy.limit`` (exact) after every ``Max``, ``Min``, ``Abs``, ``sign``,
  ``Heaviside`` and ``Piecewise`` of ``L'`` is replaced by the branch it takes for all large ``|e|``
  (:func:`asymptotic_slope`; the branch is decided by limits too).  An infinite slope means ``L`` grows faster
  than linearly: the loss is accepted with ``lipschitz = inf`` -- its Wasserstein worst case is finite only
  without numerical moves (and, in regression, label moves), which the fit checks
  (:func:`drokit.losses.base.check_growth`).  A grid of values is never taken as a certificate: if sympy cannot
  decide a limit (:class:`UndecidedLimit`), the loss has no certified constant (``lipschitz = inf``,
  ``lipschitz_how`` says so) unless ``from_sympy(..., lipschitz=)`` declares one, which is then only checked
  against the grid's lower bound ``max |L'|`` (:func:`grid_slope_lower_bound`: a grid can refute a declared
  constant, not prove it).  A loss of affine pieces ``max_k a_k e + b_k`` has ``sup |L'| = max_k |a_k|``
  directly.
"""

from __future__ import annotations

import warnings
from typing import Optional, Tuple

import numpy as np

from ..exceptions import ParameterError

#: the grid of the numeric checks (convexity; a convex ``Piecewise``; a non-increasing ``L`` when sympy gave no
#: asymptotic slopes)
CHECK_GRID = np.linspace(-60.0, 60.0, 24_001)


def sympy_module():
    """The ``sympy`` module, imported at first use (importing drokit does not import sympy)."""
    import sympy
    return sympy


def check_convexity(expr, e, d2, pieces, squared=None) -> str:
    """How convexity is known: "max of affine pieces", "square of a nonnegative max of affine pieces",
    "symbolic", or "numeric" (with a warning); raises ParameterError when L'' < 0 somewhere."""
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
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
    sp = sympy_module()
    t = sp.Symbol("t_asymptotic", positive=True)
    tail = _eventually(d1.subs(e, t if direction > 0 else -t), t)
    return _limit_at_infinity(tail, t)


def grid_slope_lower_bound(d1, e) -> float:
    """``max |L'|`` on 200,001 points of [-1e4, 1e4]: a LOWER bound on ``sup |L'|`` (a grid refutes a declared
    Lipschitz constant below it; it never certifies one)."""
    sp = sympy_module()
    f = sp.lambdify(e, d1, "numpy")
    grid = np.linspace(-1e4, 1e4, 200_001)
    with np.errstate(all="ignore"):
        vals = np.abs(np.broadcast_to(np.asarray(f(grid), dtype=float), grid.shape))
    vals = vals[np.isfinite(vals)]
    return float(np.max(vals)) if vals.size else 0.0


def lipschitz_constant(expr, e, d1, pieces,
                       declared: Optional[float]) -> Tuple[float, str, Optional[Tuple[float, float]]]:
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

