"""Export a :class:`~drokit.conic.program.ConicProgram` to a modelling layer: cvxpy or PICOS.

Both exports are generic -- any program, whatever compile path produced it -- and vectorized: one
modelling-layer constraint per cone *block* (matrix row slices and reshapes, no Python loop over the
individual cones), so a block of 10,000 exponential cones costs one constraint object.  The returned
problem minimises ``c^T x + c0`` over the same ``x``; solve it with the layer's own ``solve``.

What a program of a DRO fit is (``CompiledProblem.to_cvxpy()``, ``FitResult.to_cvxpy()``):

* a **relaxation** when the loss is compiled by tangents (a :func:`~drokit.losses.from_sympy` loss without a
  recognized conic form, ``loss.form == "outer"``): the tangents under-estimate the loss, so the exported
  program's value is a lower bound, below the fit's objective (the exact worst-case risk of the model) by
  up to the certified gap (``result.upper_bound - result.lower_bound``, e.g. 4.7e-7);
* for a cutting-plane fit, the **final master** only: the working set of configuration rows the last round
  solved (with its coefficient box and budget cuts), again a relaxation whose value is the certified lower
  bound -- not the whole, possibly astronomically large, program (``method="monolithic"`` builds that);
* otherwise the exact program of the compile path, the one the conic solver solved (for a closed-form
  logistic fit solved by the structured barrier solver, the program that solver did not need to build).

Cone conventions (drokit's on the left, checked numerically in ``tests/test_solvers_backends.py``):

======================================  =====================================================
drokit                                  cvxpy / PICOS
======================================  =====================================================
``b - A x = 0`` / ``>= 0``              ``==`` / ``>=`` (both)
soc ``(t, u)``: ``||u|| <= t``          ``cp.SOC(t, U, axis=1)`` / ``abs(u) <= t``, or a product
                                        of ``picos.SecondOrderCone(d)`` for ``count > 1``
exp ``(x, y, z)``: ``y e^(x/y) <= z``   ``cp.ExpCone(x, y, z)`` (same order) /
                                        ``picos.ExponentialCone`` is ``x >= y e^(z/y)``, so the
                                        member is ``(z, y, x)``
pow ``(x, y, z)``: ``x^a y^(1-a)>=|z|`` ``cp.PowCone3D(x, y, z, a)`` / PICOS has no power cone
                                        (:class:`~drokit.exceptions.ParameterError`)
======================================  =====================================================
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import scipy.sparse as sp

from ..exceptions import ParameterError
from .program import ConicProgram


def _require(module: str, caller: str, extra: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"{caller} needs {module}, which is not installed: "
                          f'pip install "drokit[{extra}]"') from None


# ------------------------------------------------------------------------------------- cvxpy
def to_cvxpy(program: ConicProgram) -> Tuple[Any, Any]:
    """The program as a ``cvxpy.Problem`` over one vector variable ``x`` (returned with it).

    The program is exported as it is: for a loss compiled by tangents it is a **relaxation** (its value is
    below the fit's objective by up to the certified gap), for a cutting-plane fit the **final master** only
    (see the module docstring).

    Example:

    ```python
    problem, x = to_cvxpy(program)
    problem.solve(solver="CLARABEL")
    program.value("beta", x.value)
    ```
    """
    cp = _require("cvxpy", "to_cvxpy", "cvxpy")
    A = sp.csr_matrix(program.A)
    b = np.asarray(program.b, dtype=float)
    x = cp.Variable(program.n_variables, name="x")

    def slack(rows: np.ndarray):
        """``b[rows] - A[rows] x`` as one cvxpy expression."""
        return b[rows] - A[rows] @ x

    constraints = []
    for block, lo, hi in program.row_ranges():
        rows = np.arange(lo, hi)
        if block.kind == "zero":
            constraints.append(slack(rows) == 0)
        elif block.kind == "nonneg" or (block.kind == "soc" and block.dim == 1):
            constraints.append(slack(rows) >= 0)
        elif block.kind == "soc":
            cones = rows.reshape(block.count, block.dim)
            t = slack(cones[:, 0])
            U = cp.reshape(slack(cones[:, 1:].ravel()), (block.count, block.dim - 1), order="C")
            constraints.append(cp.SOC(t, U, axis=1))
        elif block.kind == "exp":
            cones = rows.reshape(block.count, 3)
            constraints.append(cp.ExpCone(slack(cones[:, 0]), slack(cones[:, 1]),
                                          slack(cones[:, 2])))
        elif block.kind == "pow":
            cones = rows.reshape(block.count, 3)
            constraints.append(cp.PowCone3D(slack(cones[:, 0]), slack(cones[:, 1]),
                                            slack(cones[:, 2]), np.full(block.count, block.param)))
    objective = cp.Minimize(np.asarray(program.c, dtype=float) @ x + float(program.c0))
    return cp.Problem(objective, constraints), x


# ------------------------------------------------------------------------------------- PICOS
_PICOS_EXP_CONE = None


def _picos_exp_cone(picos):
    """``picos.ExponentialCone`` usable inside a ``picos.ProductCone``.

    PICOS 2.6.2's ProductCone conversion reads ``cone.subtype.dim``, which ExponentialCone's
    (empty) subtype lacks, so a product of exponential cones fails at solve time with an
    AttributeError.  This subclass only adds the (always 3) dimension to the subtype.
    """
    global _PICOS_EXP_CONE
    if _PICOS_EXP_CONE is None or _PICOS_EXP_CONE[0] is not picos:
        from collections import namedtuple

        class _ExponentialCone3(picos.ExponentialCone):
            Subtype = namedtuple("Subtype", ("dim",))

            def _get_subtype(self):
                return self.Subtype(3)

        _PICOS_EXP_CONE = (picos, _ExponentialCone3)
    return _PICOS_EXP_CONE[1]


def to_picos(program: ConicProgram) -> Tuple[Any, Any]:
    """The program as a ``picos.Problem`` over one real vector variable ``x`` (returned with it).

    As for :func:`to_cvxpy`: for a loss compiled by tangents a **relaxation**, for a cutting-plane fit the
    **final master** only (module docstring).

    PICOS solves exponential cones only with ECOS or QICS (``problem.solve(solver="ecos")``) and has
    no power cone, so programs with ``pow`` blocks raise :class:`ParameterError`; use
    :func:`to_cvxpy` for those.
    """
    if any(block.kind == "pow" for block in program.cones):
        raise ParameterError("to_picos cannot export power cones (PICOS has no power-cone "
                             "constraint); use to_cvxpy for this program")
    picos = _require("picos", "to_picos", "picos")
    m, n = program.n_constraints, program.n_variables
    # PICOS's exponential cone is (x, y, z) with x >= y exp(z / y): flip each of our (x, y, z).
    perm = np.arange(m)
    for block, lo, hi in program.row_ranges():
        if block.kind == "exp":
            perm[lo:hi] = perm[lo:hi].reshape(-1, 3)[:, ::-1].ravel()
    x = picos.RealVariable("x", n)
    problem = picos.Problem()
    c = picos.Constant("c", np.asarray(program.c, dtype=float).reshape(-1, 1))
    problem.set_objective("min", c.T * x + float(program.c0))
    if m == 0:
        return problem, x
    A = picos.Constant("A", sp.csc_matrix(sp.csr_matrix(program.A)[perm]))
    b = picos.Constant("b", np.asarray(program.b, dtype=float)[perm].reshape(-1, 1))
    S = b - A * x
    for block, lo, hi in program.row_ranges():
        s = S[lo:hi]
        if block.kind == "zero":
            problem.add_constraint(s == 0)
        elif block.kind == "nonneg" or (block.kind == "soc" and block.dim == 1):
            problem.add_constraint(s >= 0)
        elif block.kind == "soc" and block.count == 1:
            problem.add_constraint(abs(s[1:]) <= s[0])
        elif block.kind == "soc":
            cone = picos.SecondOrderCone(block.dim)
            problem.add_constraint(s << picos.ProductCone(*((cone,) * block.count)))
        elif block.kind == "exp" and block.count == 1:
            problem.add_constraint(s << picos.ExponentialCone())
        elif block.kind == "exp":
            cone = _picos_exp_cone(picos)()
            problem.add_constraint(s << picos.ProductCone(*((cone,) * block.count)))
    return problem, x
