"""Conic reformulations of the OT stability criterion for max-affine losses of a linear score.

Reference: blanchet2024 (Blanchet, Cui, Li, Liu, "Stability Evaluation through Distributional Perturbation
Analysis", ICML 2024), Theorems 2 (KL) and 3 (chi^2), **as corrected** in the spec
(``spec/blanchet2024-ot-stability.md`` section 3.1 and section 8, errata 5 and 6).  The literal printed
programs must not be used: Theorem 2 / (A.19) write ``+ b_k`` where ``+ b_k h`` is meant, and the printed
Theorem 3 misses ``- alpha - theta2`` in the objective and writes ``2 theta2 alpha`` for ``alpha``, which
makes it unbounded.

Setting
-------
A linear model with score ``w^T x`` and a loss that is a maximum of affine functions of the margin
``m_i = y_i w^T x_i``:

```text
loss_i(t) = max_k  a_k (m_i + t) + b_k,
```

where moving sample ``i``'s covariates by ``delta`` changes its margin by ``t = y_i w^T delta``.  The
cheapest move achieving ``t`` under the spec's cost ``theta1 ||x - xhat||^2`` costs ``theta1 t^2 / S`` with
``S = slope_sq_norm = ||w||^2`` (``S = 0``: nothing moves).  In the spec's notation the pieces are
``ell = max_k y a_k'^T x + b_k`` with ``a_k' = a_k w``, so ``||a_k'||^2 = a_k^2 S``.  The hinge loss is
``a = (-1, 0)``, ``b = (1, 0)``.

The d-transform (spec section 2.3) of ``h * loss`` with step ``theta1`` is then, for ``h >= 0``,

    L_i(h) = max_k  h (a_k m_i + b_k) + q_k h^2,        q_k = a_k^2 S / (4 theta1)

(``q_k = 0`` when ``theta1 = inf``), and the criterion is (spec (2.2) / (2.3))

    KL:    R = sup_{h >= 0}  h r - theta2 log( (1/n) sum_i exp(L_i(h) / theta2) )
    chi2:  R = sup_{h >= 0, alpha}  h r + alpha + theta2
                                    - theta2 (1/n) sum_i ((L_i(h) + alpha)/(2 theta2) + 1)_+^2

Programs solved (``R = -`` optimal value):

* **KL** (Theorem 2, corrected: ``+ b_k h``):

    ```text
    min   -h r + t
    s.t.  h >= 0
          (eta_i, theta2, p_i - t) in K_exp        i.e.  theta2 exp((p_i - t)/theta2) <= eta_i
          q_k s + h (a_k m_i + b_k) <= p_i         for all i, k
          (1/n) sum_i eta_i <= theta2
          s >= h^2                                 (one rotated second-order cone)
    ```

* **chi2** (Theorem 3, corrected: objective ``- alpha - theta2``, ``+ b_k h``, ``+ alpha``):

    ```text
    min   -h r - alpha - theta2 + t
    s.t.  h >= 0,  eta >= 0
          q_k s + h (a_k m_i + b_k) + alpha + 2 theta2 <= 2 theta2 eta_i     for all i, k
          (theta2 / n) sum_i eta_i^2 <= t          (one rotated second-order cone)
          s >= h^2                                 (one rotated second-order cone)
    ```

The variable ``s`` (and its cone) is only created when some ``q_k > 0``; with ``theta1 = inf`` (pure
reweighting), ``S = 0`` or all ``a_k = 0`` the quadratic term vanishes.  ``theta2 = inf`` (pure
corruption) is not covered by these programs.

Size: KL has ``2n + 2 (+1)`` variables, ``n`` exponential cones, ``nK + 2`` linear rows and (with the
quadratic term) one 3-row SOC; chi2 has ``n + 3 (+1)`` variables, ``nK + n + 1`` linear rows, one
``(n + 2)``-row SOC and (with the quadratic term) one 3-row SOC.  Assembly is vectorized: each constraint
family is built for all ``n`` samples at once, with one Python iteration per piece ``k``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...conic.builder import Affine, ProgramBuilder
from ...conic.program import ConicProgram
from ...exceptions import DataError, ParameterError, SolverError
from ...solvers import get_backend
from .dual import validated_budget
from ...solvers.base import OPTIMAL, UNBOUNDED, UNBOUNDED_INACCURATE, solve_with_retries

DIVERGENCES = ("kl", "chi2")


@dataclass
class ConicStability:
    """Result of :func:`conic_stability`.

    Attributes
    ----------
    value : float
        The stability criterion ``R`` (minus the program's optimal value).  Mathematically ``R >= 0``;
        the raw solver value is returned, so it may be ``-1e-9`` or so when ``R = 0``.
    h : float
        The optimal multiplier ``h*`` of the risk constraint.
    alpha : float or None
        The optimal multiplier ``alpha*`` of ``E[W] = 1`` (chi2); ``None`` for KL, where it is
        eliminated (``alpha* = -theta2 log mean exp(L_i(h*)/theta2)``).
    status : str
        drokit's solver status (always ``"optimal"``: anything else raises).
    solver : str
        The back-end name.
    program : ConicProgram
        The :class:`~drokit.conic.program.ConicProgram` that was solved; its variables are ``h``,
        ``t``, ``eta``, ``p`` (KL), ``alpha`` (chi2) and ``s`` (when the quadratic term is present).
    time : float
        Wall-clock seconds for assembly plus solve.
    """

    value: float
    h: float
    alpha: Optional[float]
    status: str
    solver: str
    program: ConicProgram
    time: float


# ----------------------------------------------------------------------------------- validation
def _check_inputs(margins, pieces, slope_sq_norm, risk, theta1, theta2, divergence):
    m = np.asarray(margins, dtype=float)
    if m.ndim != 1 or m.size == 0:
        raise DataError(f"margins must be a non-empty 1-D array, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise DataError("margins contain NaN or inf")
    try:
        a, b = pieces
    except (TypeError, ValueError):
        raise ParameterError("pieces must be a pair (a, b) of arrays of slopes and intercepts") from None
    a = np.atleast_1d(np.asarray(a, dtype=float))
    b = np.atleast_1d(np.asarray(b, dtype=float))
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or a.shape != b.shape:
        raise ParameterError(
            f"pieces (a, b) must be two 1-D arrays of the same non-zero length, got shapes {a.shape} "
            f"and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ParameterError("pieces (a, b) contain NaN or inf")
    try:
        S = float(slope_sq_norm)
    except (TypeError, ValueError):
        raise ParameterError(f"slope_sq_norm must be a number, got {slope_sq_norm!r}") from None
    if not np.isfinite(S) or S < 0:
        raise ParameterError(f"slope_sq_norm must be finite and >= 0, got {slope_sq_norm!r}")
    r, theta1, theta2, div = validated_budget(risk, theta1, theta2, divergence)
    if np.isinf(theta2):
        raise ParameterError(
            "theta2 = inf (pure data corruption, no reweighting) is not covered by the conic programs of "
            "blanchet2024 Theorems 2-3; use a finite theta2 or the corruption-only dual "
            "R = sup_h h r - mean_i L_i(h) (method='dual')")
    return m, a, b, S, r, theta1, theta2, div


def quadratic_coefficients(a: np.ndarray, slope_sq_norm: float, theta1: float) -> np.ndarray:
    """``q_k = a_k^2 S / (4 theta1)``, the ``h^2`` coefficient of the d-transform (0 for ``theta1 = inf``)."""
    if np.isinf(theta1):
        return np.zeros_like(a, dtype=float)
    return a ** 2 * slope_sq_norm / (4.0 * theta1)


# ------------------------------------------------------------------------------------- assembly
def _add_square_epigraph(pb: ProgramBuilder, h: Affine) -> Affine:
    """A new variable ``s`` with ``s >= h^2``: the rotated cone ``||(2h, s - 1)|| <= s + 1``."""
    s = pb.var("s", 1)
    pb.add_soc(s + 1.0, [h * 2.0, s - 1.0])
    return s


def _quadratic_rows(pb: ProgramBuilder, margins, a, b, q, h: Affine) -> Affine:
    """``q_k s + h (a_k m_i + b_k)`` for all (k, i), stacked piece by piece (k-major): ``K n`` rows."""
    n = margins.size
    hn = h.repeat(n)
    s = _add_square_epigraph(pb, h).repeat(n) if np.any(q > 0) else None
    parts = []
    for k in range(a.size):
        row = hn * (a[k] * margins + b[k])
        if s is not None and q[k] > 0:
            row = row + s * q[k]
        parts.append(row)
    return Affine.vstack(parts)


def build_kl_program(margins, a, b, slope_sq_norm, risk, theta1, theta2) -> ConicProgram:
    """The corrected Theorem 2 exponential-cone program (module docstring); inputs already validated."""
    n = margins.size
    q = quadratic_coefficients(a, slope_sq_norm, theta1)
    pb = ProgramBuilder()
    h = pb.var("h", 1)
    t = pb.var("t", 1)
    eta = pb.var("eta", n)
    p = pb.var("p", n)
    pb.add_nonneg(h)
    # theta2 exp((p_i - t)/theta2) <= eta_i
    pb.add_exp(p - t.repeat(n), pb.constant(np.full(n, theta2)), eta)
    rows = _quadratic_rows(pb, margins, a, b, q, h)
    pb.add_leq(rows, Affine.vstack([p] * a.size))
    pb.add_leq(eta.sum() * (1.0 / n), theta2)
    pb.minimize(h * (-risk) + t)
    return pb.build()


def build_chi2_program(margins, a, b, slope_sq_norm, risk, theta1, theta2) -> ConicProgram:
    """The corrected Theorem 3 second-order-cone program (module docstring); inputs already validated."""
    n = margins.size
    q = quadratic_coefficients(a, slope_sq_norm, theta1)
    pb = ProgramBuilder()
    h = pb.var("h", 1)
    alpha = pb.var("alpha", 1)
    t = pb.var("t", 1)
    eta = pb.var("eta", n)
    pb.add_nonneg(h)
    pb.add_nonneg(eta)
    rows = _quadratic_rows(pb, margins, a, b, q, h)
    K = a.size
    pb.add_leq(rows + alpha.repeat(n * K) + 2.0 * theta2, Affine.vstack([eta] * K) * (2.0 * theta2))
    # (theta2/n) sum eta_i^2 <= t  <=>  ||eta / sqrt(n)||^2 <= (t / theta2) * 1
    #                              <=>  ||(2 eta / sqrt(n), t/theta2 - 1)|| <= t/theta2 + 1
    u = t * (1.0 / theta2)
    pb.add_norm2_leq(Affine.vstack([eta * (2.0 / np.sqrt(n)), u - 1.0]), u + 1.0)
    pb.minimize(h * (-risk) - alpha - theta2 + t)
    return pb.build()


# ------------------------------------------------------------------------------------------ API
def conic_stability(margins: Sequence[float], pieces: Tuple[Sequence[float], Sequence[float]],
                    slope_sq_norm: float, risk: float, theta1: float, theta2: float,
                    divergence: str = "kl", solver: str = "clarabel", *,
                    options: Optional[Mapping[str, Any]] = None) -> ConicStability:
    """The OT stability criterion ``R(beta, r)`` of blanchet2024 for a max-affine loss of a linear margin,
    by the **corrected** conic programs of Theorems 2 (KL, exponential cone) and 3 (chi^2, SOC)
    (spec section 3.1; errata 5-6 of spec section 8).  See the module docstring for the programs.

    Parameters
    ----------
    margins : array_like of shape (n,)
        Margins ``m_i = y_i w^T x_i`` of the evaluation samples (empirical ``P_0``, weights 1/n).
    pieces : tuple of (array_like, array_like)
        ``(a, b)``, two length-K arrays: ``loss_i(t) = max_k a_k (m_i + t) + b_k``.
        Hinge: ``a = (-1, 0)``, ``b = (1, 0)``.
    slope_sq_norm : float
        ``S = ||w||^2 >= 0``; moving a margin by ``t`` costs ``theta1 t^2 / S`` (``S = 0``: samples
        cannot move).
    risk : float
        The risk threshold ``r``.
    theta1 : float
        Data-corruption weight, ``> 0``; ``np.inf`` for pure reweighting.
    theta2 : float
        Sub-population-shift weight, ``> 0`` and finite (``theta2 = inf`` raises ParameterError).
    divergence : {"kl", "chi2"}
        ``"kl"`` (``phi(t) = t log t - t + 1``) or ``"chi2"`` (``phi(t) = (t - 1)^2``).
    solver : str
        A drokit conic back-end name (default ``"clarabel"``).
    options : mapping or None
        Back-end settings (passed to the back-end; retries with the back-end's retry settings are
        attempted when a solve does not end optimal).

    Returns
    -------
    ConicStability
        With ``value = R``, ``h*``, ``alpha*`` (chi2) and the program.

    Raises
    ------
    ParameterError
        For invalid input.
    DataError
        For invalid input.
    SolverError
        (With ``.status``) when the solver does not end ``optimal``.  An unbounded program means
        ``R = +inf``: ``r`` is at or above the largest risk any finite-cost perturbation reaches (e.g.
        ``max_i loss_i`` when samples cannot move).
    """
    t0 = time.perf_counter()
    m, a, b, S, r, th1, th2, div = _check_inputs(margins, pieces, slope_sq_norm, risk, theta1, theta2,
                                                 divergence)
    backend = get_backend(solver)
    build = build_kl_program if div == "kl" else build_chi2_program
    program = build(m, a, b, S, r, th1, th2)
    try:
        sol = solve_with_retries(backend, program, options)
    except (SolverError, ParameterError):
        raise
    except Exception as exc:
        raise SolverError(f"solver {backend.name!r} failed on the {div} stability program: "
                          f"{type(exc).__name__}: {exc}", solver=backend.name) from exc
    if sol.status != OPTIMAL:
        hint = ""
        if sol.status in (UNBOUNDED, UNBOUNDED_INACCURATE):
            hint = (" (the dual is unbounded: R = +inf, i.e. the risk threshold r is at or above the "
                    "largest risk reachable at finite cost)")
        raise SolverError(
            f"{div} stability program: solver {backend.name!r} ended with status {sol.status!r} "
            f"(raw {sol.raw_status!r}), not 'optimal'{hint}",
            status=sol.status, raw_status=sol.raw_status, solver=backend.name, solution=sol)
    x = sol.x
    h_star = float(program.value("h", x)[0])
    alpha_star = float(program.value("alpha", x)[0]) if div == "chi2" else None
    return ConicStability(value=-float(sol.primal_objective), h=h_star, alpha=alpha_star,
                          status=sol.status, solver=backend.name, program=program,
                          time=time.perf_counter() - t0)


__all__ = ["ConicStability", "conic_stability", "build_kl_program", "build_chi2_program",
           "quadratic_coefficients"]
