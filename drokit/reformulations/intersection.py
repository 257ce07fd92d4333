r"""Inter-ARO*: the static (Theorem 11) program for the intersection of two Wasserstein balls.

Reference: selvi2025 thesis §4.5 (UAI 2025, "Distributionally and adversarially robust logistic regression
via intersecting Wasserstein balls"): Proposition 17 (the semi-infinite dual), Lemma 31, Proposition 18
(the adjustable form, NP-hard) and **Theorem 11** (the static relaxation Inter-ARO*), read with the spec's
findings ``spec/selvi2025-thesis-dr-aro.md`` §2.5.2-2.5.4 and §5.4:

* **s, s_hat are free** (§2.5.2).  The thesis's ``s, s_hat >= 0`` come from relaxing the mass constraints
  ``int dQ^i = 1`` to ``<= 1``, which is harmless for one ball but not for two balls that share a marginal
  (1-D counterexample: exact 0.551592; the sign-restricted dual gives 0.846574 = 0.5 + log(2)/2 with
  features in R -- the spec's 0.829245 is that dual with x truncated to [-20, 22], see
  ``tests/test_intersection.py``).  This module uses free s, s_hat.
* **Theorem 11 is an upper bound** (§2.5.3): "relaxation" is meant in the adjustable-robust sense; the
  program is a *restriction* of the exact dual, so its value is >= the true worst case.  It can be loose
  (1.193147 vs 0.551592 on the 1-D instance at beta = 1).
* **An empty intersection is not detected** (§2.5.4): when ``eps + eps_hat < W(P_N, P_hat)`` the exact
  value is ``-inf`` but the static program may return a finite number; the caller must check
  non-emptiness itself.  (One special case is detected here, see "kappa = inf" below.)

Setting (drokit's conventions, classification, numerical features only)
-----------------------------------------------------------------------
Samples ``xi_i = (x_i, y_i)``, ``i in [N]`` (empirical ``P_N``) and auxiliary samples ``xhat_j, yhat_j``,
``j in [N_hat]`` (``P_hat``), labels in ``{-1, +1}``.  Ground metric

    d((x, y), (x', y')) = ||Gamma (x - x')||_p + kappa 1[y != y'],      Gamma = diag(gamma),

with dual norm ``||.||_{q*}``, ``1/p + 1/q* = 1``.  Score ``f(x) = b + beta^T x`` (``b`` optional); a convex
**non-increasing** margin loss ``L`` (logistic, hinge, smooth hinge) with ``lip = sup |L'|``; optionally the
test-time attack ``||delta||_{p_a} <= alpha`` of Obs. 7, which turns the loss into
``L(y f(x) - alpha ||beta||_{p_a*})``.  Ambiguity set ``B_eps(P_N) ∩ B_eps_hat(P_hat)``.

Exact dual (Prop. 17 with free s, s_hat; re-derived)
-----------------------------------------------------
Write ``Q = (1/N) sum_i Q^i = (1/N_hat) sum_j Qhat^j`` with probability measures ``Q^i`` (the conditional of
the coupling with ``P_N`` given ``xi_i``) and ``Qhat^j``.  Dualize ``(1/N) sum_i int d(., xi_i) dQ^i <= eps``
(``lam >= 0``), the hat budget (``lam_hat >= 0``), the shared marginal (a function ``phi``) and the mass
equalities ``int dQ^i = 1`` (``s_i`` **free**), ``int dQhat^j = 1`` (``s_hat_j`` free).  The inner sups over
``Q^i, Qhat^j >= 0`` give ``ell - lam d(., xi_i) - s_i <= phi <= lam_hat d(., xihat_j) + s_hat_j``, and
eliminating ``phi``:

    min  eps lam + eps_hat lam_hat + (1/N) sum_i s_i + (1/N_hat) sum_j s_hat_j
    s.t. sup_x { L(l f(x) - tau) - lam ||Gamma(x - x_i)||_p - lam_hat ||Gamma(x - xhat_j)||_p }
             <= s_i + kappa 1[l != y_i] lam + s_hat_j + kappa 1[l != yhat_j] lam_hat   for all (i, j, l)

with ``tau = alpha ||beta||_{p_a*}`` and ``1[l != y] = (1 - l y) / 2``.  (This normalization needs no
rescaling of ``lam_hat, s_hat``; the thesis's is the same after its rescaling.)  Weak duality alone makes
every feasible point an upper bound on the worst case; equality (strong duality) is Prop. 17's claim for
``eps, eps_hat > 0`` and a non-empty intersection.  With the attack,
``tau`` becomes one variable ``tau >= alpha ||beta||_{p_a*}``: every constraint is non-decreasing in tau
(L is non-increasing), so the bound is tight at the optimum.

Static relaxation (Theorem 11, with intercept and lip)
------------------------------------------------------
``L(u) = sup_{theta in dom L*} theta u - L*(theta)`` with ``dom L* ⊆ [-lip, 0]`` (L non-increasing; Rockafellar
Cor. 13.3.3 for ``sup |theta| = lip``).  For **any** ``z in R^n`` chosen independently of theta (the static
decision rule of Prop. 18), split ``l beta^T x = (l beta - z)^T x + z^T x`` and bound each piece on its own
ball:

    sup_x { theta l beta^T x - lam ||Gamma(x - x_i)|| - lam_hat ||Gamma(x - xhat_j)|| }
      <= theta (l beta - z)^T x_i + sup_x' { theta (l beta - z)^T x' - lam ||Gamma x'|| }
       + theta z^T xhat_j        + sup_x'' { theta z^T x'' - lam_hat ||Gamma x''|| }

(sup of a sum <= sum of sups).  The two sups are 0 when ``|theta| ||Gamma^{-1}(l beta - z)||_{q*} <= lam`` and
``|theta| ||Gamma^{-1} z||_{q*} <= lam_hat`` for every ``theta in dom L*``, i.e. when
``lip ||Gamma^{-1}(l beta - z)||_{q*} <= lam`` and ``lip ||Gamma^{-1} z||_{q*} <= lam_hat``; then
``sup_theta theta (l b - tau + l beta^T x_i + z^T (xhat_j - x_i)) - L*(theta) = L(...)`` (biconjugate).
This gives the program built here (one ``z_ijl`` per row):

    minimize   eps lam + eps_hat lam_hat + (1/N) sum_i s_i + (1/N_hat) sum_j s_hat_j
    s.t.       L( l (b + beta^T x_i) + z_ijl^T (xhat_j - x_i) - tau )
                   <= s_i + kappa 1[l != y_i] lam + s_hat_j + kappa 1[l != yhat_j] lam_hat
               lip ||Gamma^{-1} (l beta - z_ijl)||_{q*} <= lam,    lip ||Gamma^{-1} z_ijl||_{q*} <= lam_hat
                                                                     for all (i, j, l) in [N] x [N_hat] x {-1, +1}
               tau >= alpha ||beta||_{p_a*}   (attack only; otherwise tau = 0)
               lam, lam_hat >= 0;   s, s_hat, z, beta, b free.

Every feasible point satisfies the exact dual's constraints, so the value is an **upper bound** on
``sup_{Q in intersection} E_Q[loss]`` (for the fitted model: on Inter-ARO).  Immutable features
(``gamma_j = inf``) leave coordinate j out of both dual norms; free features (``gamma_j = 0``) force
``beta_j = z_j = 0``; the bound stays valid in both cases.

kappa = inf (labels never move)
-------------------------------
Then ``Q^i`` can only charge label ``y_i`` and ``Qhat^j`` only label ``yhat_j`` (any other mass has infinite
transport cost), so the dual constraint ``... <= phi`` is only imposed where ``Q^i`` lives (label
``y_i``) and ``phi <= ...`` only where ``Qhat^j`` lives (label ``yhat_j``).  Eliminating ``phi`` per label
``l`` leaves the constraint for ``(i, j, l)`` **only when** ``l = y_i = yhat_j``: a mass point of Q that is
coupled with ``xi_i`` carries label ``y_i``, one coupled with ``xihat_j`` carries ``yhat_j``, so a pair with
``y_i != yhat_j`` never shares mass and gives no constraint at all -- not even one with ``lam = 0`` (taking
``kappa -> inf`` in the finite-kappa program gives the same: a row with ``l != y_i`` has ``kappa lam`` on its
right-hand side, and any solution of the reduced program can be perturbed to ``lam, lam_hat > 0``, where those
rows become vacuous for kappa large; its ``z`` for those rows exists because the kept rows force
``lam + lam_hat >= lip ||Gamma^{-1} beta||_{q*}``).  So with ``kappa = inf`` the program has
``sum_l N_l N_hat_l`` rows instead of ``2 N N_hat``.

The same argument shows that with ``kappa = inf`` the intersection is empty unless both samples have
**exactly the same label proportions** (Q's label marginal would have to equal both).  If they differ the
exact value is ``-inf`` and the static program is unbounded too (shift ``s_i`` up by c on label l and
``s_hat_j`` down by c: the objective changes by ``c (N_l / N - N_hat_l / N_hat)``);
:func:`build_intersection_program` raises :class:`ParameterError` instead of building it.  When the
proportions agree the objective is bounded below by 0 (sum the row constraints of each label block).

Non-uniqueness: ``s_i + c``, ``s_hat_j - c`` (finite kappa; per label with kappa = inf) leaves every constraint
and the objective unchanged, so ``s`` and ``s_aux`` are determined only up to that shift.

Size: ``K = 2 N N_hat`` rows (kappa finite) or ``sum_l N_l N_hat_l`` (kappa = inf); ``K n`` z-entries; K loss
epigraphs (logistic: 2K exponential cones); 2K dual-norm constraints (q* = inf: 4 K n linear rows; q* = 1:
2 K n auxiliary variables and 4 K n + 2 K rows; q* = 2: 2K second-order cones of dimension n + 1).
Assembly is vectorized over all rows (a Python loop over features only for q* = 2).  Programs with more than
:data:`MAX_Z_ENTRIES` z-entries are refused with :class:`ProblemTooLargeError`.

Accuracy and time
-----------------
The programs have large optimal faces (the ``z`` of non-binding rows, the ``s``-shift, many optimal
couplings in the dual), and Clarabel often ends ``AlmostSolved`` a little short of its 1e-8 tolerances, or
stalls (``InsufficientProgress``) on its first attempt for ``N = N_hat = 100``.  :func:`solve_program`
verifies an ``AlmostSolved`` answer (primal feasibility, dual residual, gap <= 1e-6) and otherwise retries
with the back-end's retry settings.  Measured (n = 5, logistic, attack, Clarabel, 2 cores): N = N_hat = 20:
4.8k variables, 1,600 exp cones, 0.2 s; 50: 30k variables, 10k exp cones, 1.2-2.6 s; 100: 120k variables,
40k exp cones, 520k rows, 16-17 s per attempt (33-45 s with the stalled first attempt); kappa = inf (equal
classes) has about a quarter of the rows: 1.7 s at 100.

Lower bound
-----------
:func:`.intersection_bound.finite_support_lower_bound` maximizes ``E_Q[loss]`` of a fixed model over the Q supported on a finite
candidate set that lie in both balls (an LP).  Every such Q is in the intersection, so the LP value is a
**lower bound** on the exact worst case; with :func:`static_value_at` it brackets the exact value.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..exceptions import ParameterError, ProblemTooLargeError, SolverError
from ..metrics.costs import NormCost
from ..conic.builder import Affine, ProgramBuilder
from ..conic.program import ConicProgram
from .intersection_inputs import IntersectionInputs, check_label_proportions, validate_inputs

#: largest number of z-entries (``rows * n``, at most ``2 N N_hat n``) a static program may have
MAX_Z_ENTRIES = 2_000_000


def intersection_rows(y, y_aux, kappa=np.inf) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The constraint rows ``(i, j, l)`` of the static program, in program order.

    ``kappa`` finite: all ``2 N N_hat`` triples, ordered ``((i * N_hat + j) * 2 + [l == +1])``.
    ``kappa = inf``: the same order restricted to ``l = y_i = yhat_j`` (module docstring).
    Returns integer arrays ``i``, ``j`` and a float array ``l`` in ``{-1, +1}``.
    """
    y = np.asarray(y, dtype=float)
    y_aux = np.asarray(y_aux, dtype=float)
    N, Na = y.size, y_aux.size
    i = np.repeat(np.arange(N), 2 * Na)
    j = np.tile(np.repeat(np.arange(Na), 2), N)
    l = np.tile(np.array([-1.0, 1.0]), N * Na)
    if np.isinf(float(kappa)):
        keep = (l == y[i]) & (l == y_aux[j])
        i, j, l = i[keep], j[keep], l[keep]
    return i, j, l


# --------------------------------------------------------------------------------------- assembly
def _group_sum(count: int, k: int) -> sp.csr_matrix:
    """``(count, count * k)`` matrix summing consecutive groups of ``k`` rows."""
    return sp.csr_matrix((np.ones(count * k), np.arange(count * k), np.arange(0, count * k + 1, k)),
                         shape=(count, count * k))


def add_dual_norm_rows(pb: ProgramBuilder, v: Affine, t: Affine, count: int, n: int, gamma: np.ndarray,
                       q: float, scale: float = 1.0) -> None:
    """``scale ||Gamma^{-1} v_k||_q <= t`` for ``count`` vectors ``v_k`` at once (``t`` one affine function).

    ``v`` has ``count * n`` rows, vector by vector (row ``k n + c`` is component c of ``v_k``); the cone
    encodings are those of :meth:`~drokit.metrics.costs.NormCost.add_dual_norm_leq`, vectorized over k.
    ``gamma_c = inf`` leaves component c unconstrained, ``gamma_c = 0`` fixes it to 0.
    """
    comp = np.tile(np.arange(n), count)
    zero = gamma == 0
    if zero.any():
        pb.add_zero(v[np.flatnonzero(zero[comp])])
    keep = np.flatnonzero(np.isfinite(gamma) & (gamma > 0))
    if keep.size == 0 or count == 0:
        return
    k = keep.size
    rows = (np.arange(count)[:, None] * n + keep[None, :]).ravel()
    w = v[rows] * np.tile(scale / gamma[keep], count)
    if np.isinf(q):
        tk = t.repeat(count * k)
        pb.add_nonneg(Affine.vstack([tk - w, tk + w]))
    elif q == 1:
        r = pb.aux("dual_norm_r", count * k)
        pb.add_nonneg(Affine.vstack([r - w, r + w, t.repeat(count) - r.premultiply(_group_sum(count, k))]))
    elif q == 2:
        pb.add_soc(t.repeat(count), [w[np.arange(count) * k + c] for c in range(k)])
    else:
        r = pb.aux("dual_norm_r", count * k)
        pb.add_pow(r, t.repeat(count * k), w, 1.0 / q)
        pb.add_nonneg(t.repeat(count) - r.premultiply(_group_sum(count, k)))


def _check_size(K: int, n: int, N: int, Na: int) -> None:
    if K * n > MAX_Z_ENTRIES:
        raise ProblemTooLargeError(
            f"the intersection program (Inter-ARO*) would have {K:,} constraint rows and {K * n:,} z-entries "
            f"(at most 2 N N_aux n with N = {N}, N_aux = {Na}, n = {n}); the limit is {MAX_Z_ENTRIES:,}. "
            f"Use fewer samples (e.g. subsample the auxiliary data) or fewer features.")


def assemble_program(d: IntersectionInputs, fit_intercept: bool, fixed: Optional[Tuple[float, np.ndarray]] = None,
              rows: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None) -> ConicProgram:
    """The static program of the module docstring; ``fixed = (intercept, coef)`` makes the model a constant
    (then the program has no ``coef`` / ``intercept`` / ``attack`` variables); ``rows = (i, j, l)``
    restricts it to those constraint rows (a cutting-plane master, :mod:`.intersection_cuts`)."""
    if np.isinf(d.kappa):
        check_label_proportions(d.y, d.ya)
    N, Na, n = d.X.shape[0], d.Xa.shape[0], d.n
    I, J, Lab = intersection_rows(d.y, d.ya, d.kappa) if rows is None else rows
    K = I.size
    _check_size(K, n, N, Na)

    pb = ProgramBuilder()
    if fixed is None:
        coef = pb.var("coef", n)
        intercept = pb.var("intercept", 1) if fit_intercept else None
    else:
        b0, beta = fixed
        coef = pb.constant(np.asarray(beta, dtype=float))
        intercept = pb.constant(np.array([float(b0)])) if b0 else None
    lam = pb.var("lambda", 1)
    lam_a = pb.var("lambda_aux", 1)
    s = pb.var("s", N)
    s_a = pb.var("s_aux", Na)
    z = pb.var("z", K * n)
    tau = None
    if d.attack is not None:
        if fixed is None:
            pa, alpha = d.attack
            tau = pb.var("attack", 1)
            if alpha > 0:
                NormCost(pa).add_dual_norm_leq(pb, coef * alpha, tau, np.ones(n))
            else:
                pb.add_nonneg(tau)
        else:
            tau = pb.constant(np.array([d.attack_shift(np.asarray(fixed[1], dtype=float))]))

    # margins u_k = l (b + beta^T x_i) + z_k^T (xhat_j - x_i) - tau, all rows at once
    u = coef.premultiply(sp.csr_matrix(d.X[I] * Lab[:, None]))
    if intercept is not None:
        u = u + intercept.repeat(K) * Lab
    D = d.Xa[J] - d.X[I]
    Zmat = sp.csr_matrix((D.ravel(), np.arange(K * n), np.arange(0, K * n + 1, n)), shape=(K, K * n))
    u = u + z.premultiply(Zmat)
    if tau is not None:
        u = u - tau.repeat(K)
    t = s[I] + s_a[J]
    if np.isfinite(d.kappa) and d.kappa > 0:
        flip, flip_a = (Lab != d.y[I]).astype(float), (Lab != d.ya[J]).astype(float)
        t = t + lam.repeat(K) * (d.kappa * flip) + lam_a.repeat(K) * (d.kappa * flip_a)
    d.loss.epigraph(pb, u, t)

    # lip ||Gamma^{-1}(l beta - z_k)||_* <= lam,  lip ||Gamma^{-1} z_k||_* <= lam_aux
    q = d.norm.dual_p
    lbeta = coef[np.tile(np.arange(n), K)] * np.repeat(Lab, n)
    add_dual_norm_rows(pb, lbeta - z, lam, K, n, d.gamma, q, d.lip)
    add_dual_norm_rows(pb, z, lam_a, K, n, d.gamma, q, d.lip)
    pb.add_nonneg(Affine.vstack([lam, lam_a]))
    pb.minimize(lam * d.eps + lam_a * d.eps_a + s.sum() * (1.0 / N) + s_a.sum() * (1.0 / Na))
    return pb.build()


def build_intersection_program(X, y, X_aux, y_aux, radius, radius_aux, loss, *, p=1, gamma=None,
                               kappa=np.inf, fit_intercept=True, attack=None) -> ConicProgram:
    """The static Inter-ARO* program (selvi2025 Thm 11, free s / s_hat; module docstring) as a
    :class:`~drokit.conic.program.ConicProgram`.

    Parameters
    ----------
    X : array_like of shape (N, n)
        Numerical features of the samples (``P_N``).
    y : array_like of shape (N,)
        Labels in {-1, +1} of the samples (``P_N``).
    X_aux : array_like of shape (N_aux, n)
        Numerical features of the auxiliary samples (``P_hat``).
    y_aux : array_like of shape (N_aux,)
        Labels in {-1, +1} of the auxiliary samples (``P_hat``).
    radius, radius_aux : float
        ``eps, eps_hat >= 0``.
    loss : drokit.losses.Loss or str
        A non-increasing margin loss (name or :class:`~drokit.losses.Loss`: logistic, hinge,
        smooth_hinge) or an :class:`~drokit.losses.Adversarial` wrapper of one (then ``attack`` must be
        None).
    p : float
        Transport norm ``||Gamma (x - x')||_p``, ``p >= 1``.
    gamma : array_like of shape (n,) or None
        Feature weights (default ones; ``np.inf`` immutable, ``0`` free).
    kappa : float
        Label-flip cost (``np.inf``: labels never move; rows as in :func:`intersection_rows`).
    fit_intercept : bool
        Include the intercept ``b``.
    attack : tuple of (float, float) or None
        ``(p_a, alpha)``: the loss is attacked by ``||delta||_{p_a} <= alpha`` (Obs. 7), through one
        variable ``tau >= alpha ||beta||_{p_a*}``.

    Returns
    -------
    ConicProgram
        Variables: ``coef`` (n), ``intercept`` (1, if fitted), ``lambda``, ``lambda_aux``, ``s`` (N),
        ``s_aux`` (N_aux), ``z`` (K n; ``z.reshape(K, n)`` row k belongs to row k of
        :func:`intersection_rows`), ``attack`` (1, with an attack) and the loss's auxiliary variables.

    Raises
    ------
    ParameterError
        On bad input (also: kappa = inf with different label proportions, an empty intersection).
    DataError
        On bad input.
    ProblemTooLargeError
        Beyond :data:`MAX_Z_ENTRIES` z-entries.
    """
    d = validate_inputs(X, y, X_aux, y_aux, radius, radius_aux, loss, p, gamma, kappa, attack)
    return assemble_program(d, bool(fit_intercept))


# ------------------------------------------------------------------------------------------ solve
@dataclass
class IntersectionResult:
    """Result of :func:`solve_intersection` / :func:`static_value_at`.

    Attributes
    ----------
    value : float
        The static program's optimal value (the primal objective of the solver's feasible point, within
        the certified gap of the optimum): an **upper bound** on the worst-case expected loss over the
        intersection (for :func:`solve_intersection`: on Inter-ARO's optimal value).
    intercept : float
        The model's intercept (fitted, or the fixed one for :func:`static_value_at`); 0.0 if none.
    coef : numpy.ndarray of shape (n,)
        The model's coefficients (fitted, or the fixed ones for :func:`static_value_at`).
    lam, lam_aux : float
        The multipliers of the two transport budgets.
    s, s_aux : numpy.ndarray
        The epigraph variables (free; unique only up to ``s + c, s_aux - c``, see module docstring).
    attack : float or None
        ``tau`` (``= alpha ||beta||_{p_a*}`` at the optimum) or None without attack.
    status : str
        drokit's solver status: "optimal", or "optimal_inaccurate" when accepted with
        ``on_inaccurate="warn"`` (anything else raises SolverError).
    solver : str
        Back-end name.
    program : ConicProgram
        The :class:`ConicProgram` that was solved.
    n_rows : int
        Number of ``(i, j, l)`` constraint rows.
    time : float
        Wall-clock seconds (assembly + solve).
    solve_time : float
        The back-end's solve time (last attempt).
    certificate : dict
        The verified accuracy of the solution (:func:`drokit.solvers.verification.certificate`):
        ``raw_status`` (Clarabel's own, "AlmostSolved" when accepted by the check of
        :func:`solve_program`), relative ``gap``, ``primal_residual``, ``dual_residual``, and the
        solver ``attempts`` (settings, raw status).
    upper_bound : bool
        Always True: the value is an upper bound on the worst case, not the exact value.
    """

    value: float
    intercept: float
    coef: np.ndarray
    lam: float
    lam_aux: float
    s: np.ndarray
    s_aux: np.ndarray
    attack: Optional[float]
    status: str
    solver: str
    program: ConicProgram
    n_rows: int
    time: float
    solve_time: float
    certificate: dict
    upper_bound: bool = True


def solve_program(program: ConicProgram, solver: str, options, on_inaccurate: str = "raise"):
    """Solve; a non-optimal answer raises SolverError (``on_inaccurate="warn"``: an inaccurate optimum is
    accepted with a RuntimeWarning).  A certified infeasible or unbounded answer is not retried.

    Accuracy: Clarabel's default tolerances are 1e-8.  These programs have large optimal faces (the ``z`` of
    non-binding rows, the ``s + c, s_aux - c`` shift, many optimal couplings in the dual), and Clarabel
    often stalls just short of 1e-8: ``AlmostSolved`` with a relative gap of 1e-8 to 2e-7 (about a third of
    the solves at N = N_aux = 30-50, n = 5; also with the model fixed).  Retrying with other settings costs
    a full solve each and succeeds at random, so an ``AlmostSolved`` answer is instead **verified**
    (:func:`drokit.solvers.verification.is_verified_optimal`, inside
    :func:`~drokit.solvers.base.solve_with_retries`): it is accepted as optimal when its primal point is
    feasible (cone violation <= 1e-7), and its dual residual and relative gap are <= 1e-6.  The value
    reported is the primal objective of that feasible point: a valid upper bound (a feasible point of the
    static program), within the gap of the static optimum.  Otherwise the back-end's retry settings are tried
    in turn, each answer checked the same way; the first optimal (or certified infeasible / unbounded) answer
    ends the loop.  User ``options`` always take precedence.
    """
    import warnings

    from ..solvers import get_backend
    from ..solvers.base import (INFEASIBLE, OPTIMAL, OPTIMAL_INACCURATE, UNBOUNDED, UNBOUNDED_INACCURATE,
                                 solve_with_retries)
    from ..solvers.verification import certificate

    if on_inaccurate not in ("raise", "warn"):
        raise ParameterError(f"on_inaccurate must be 'raise' or 'warn', got {on_inaccurate!r}")
    backend = get_backend(solver)
    try:
        sol = solve_with_retries(backend, program, options, final=(OPTIMAL, INFEASIBLE, UNBOUNDED))
    except (SolverError, ParameterError):
        raise
    except Exception as exc:
        raise SolverError(f"solver {backend.name!r} failed on the intersection program: "
                          f"{type(exc).__name__}: {exc}", solver=backend.name) from exc
    if sol.status == OPTIMAL and "certificate" not in sol.info:
        sol.info["certificate"] = certificate(program, sol)
    if sol.status == OPTIMAL_INACCURATE and on_inaccurate == "warn" and sol.x is not None:
        warnings.warn(f"intersection program: solver {backend.name!r} reports an inaccurate optimum "
                      f"({sol.raw_status}; attempts {sol.info.get('attempts')}; "
                      f"{sol.info.get('certificate')})", RuntimeWarning, stacklevel=3)
    elif sol.status != OPTIMAL:
        hint = ""
        if sol.status in (UNBOUNDED, UNBOUNDED_INACCURATE):
            hint = (" (unbounded: the intersection of the two balls is empty; check "
                    "radius + radius_aux >= W(P_N, P_aux))")
        elif sol.status == OPTIMAL_INACCURATE:
            hint = " (pass on_inaccurate='warn' to accept an inaccurate optimum)"
        raise SolverError(
            f"intersection program: solver {backend.name!r} ended with status {sol.status!r} "
            f"(raw {sol.raw_status!r}; attempts {sol.info.get('attempts')}), not 'optimal'{hint}",
            status=sol.status, raw_status=sol.raw_status, solver=backend.name, solution=sol)
    return backend, sol


def intersection_result(d: IntersectionInputs, program: ConicProgram, backend, sol, t0: float,
                        fixed: Optional[Tuple[float, np.ndarray]]) -> IntersectionResult:
    """The :class:`IntersectionResult` of a solved program (the model, or the ``fixed`` one, and its values)."""
    x = sol.x
    if fixed is None:
        coef = np.array(program.value("coef", x))
        b = float(program.value("intercept", x)[0]) if "intercept" in program.variables else 0.0
        tau = float(program.value("attack", x)[0]) if "attack" in program.variables else None
    else:
        b, coef = float(fixed[0]), np.asarray(fixed[1], dtype=float).copy()
        tau = d.attack_shift(coef) if d.attack is not None else None
    n_rows = program.variables["z"].stop - program.variables["z"].start
    return IntersectionResult(
        value=float(sol.primal_objective), intercept=b, coef=coef,
        lam=float(program.value("lambda", x)[0]), lam_aux=float(program.value("lambda_aux", x)[0]),
        s=np.array(program.value("s", x)), s_aux=np.array(program.value("s_aux", x)), attack=tau,
        status=sol.status, solver=backend.name, program=program, n_rows=n_rows // max(d.n, 1),
        time=time.perf_counter() - t0, solve_time=float(sol.solve_time),
        certificate={**sol.info.get("certificate", {}), "attempts": sol.info.get("attempts", [])})


def solve_intersection(X, y, X_aux, y_aux, radius, radius_aux, loss, *, p=1, gamma=None, kappa=np.inf,
                       fit_intercept=True, attack=None, solver: str = "clarabel",
                       options: Optional[Mapping[str, Any]] = None,
                       on_inaccurate: str = "raise") -> IntersectionResult:
    """Fit the model by the static Inter-ARO* program (:func:`build_intersection_program`; same
    parameters) and solve it (Clarabel by default, with the back-end's retries).

    The value is an **upper bound** on Inter-ARO (spec §2.5.3); it does **not** detect an empty
    intersection (spec §2.5.4: check ``radius + radius_aux >= W(P_N, P_aux)`` first).  A status other than
    optimal raises :class:`SolverError` (an unbounded program means an empty intersection); with
    ``on_inaccurate="warn"`` an inaccurate optimum is accepted with a RuntimeWarning (see
    :func:`solve_program` for the verified acceptance of Clarabel's ``AlmostSolved``).  ``solver``,
    ``options``: the back-end and its settings.
    """
    t0 = time.perf_counter()
    d = validate_inputs(X, y, X_aux, y_aux, radius, radius_aux, loss, p, gamma, kappa, attack)
    program = assemble_program(d, bool(fit_intercept))
    backend, sol = solve_program(program, solver, options, on_inaccurate)
    return intersection_result(d, program, backend, sol, t0, None)


def static_value_at(intercept, coef, X, y, X_aux, y_aux, radius, radius_aux, loss, *, p=1, gamma=None,
                    kappa=np.inf, attack=None, solver: str = "clarabel",
                    options: Optional[Mapping[str, Any]] = None, on_inaccurate: str = "raise",
                    full: bool = False):
    """The static program's value with the model ``(intercept, coef)`` FIXED (minimized over lam, lam_aux,
    s, s_aux and z only): an **upper bound** on ``sup_{Q in B_eps(P_N) ∩ B_eps_aux(P_aux)} E_Q[loss]`` of
    that model (with the attack: of its attacked loss).  ``intercept=None`` means no intercept.

    Returns the value (float), or the :class:`IntersectionResult` with ``full=True``.  Other parameters as in
    :func:`build_intersection_program`.
    """
    t0 = time.perf_counter()
    d = validate_inputs(X, y, X_aux, y_aux, radius, radius_aux, loss, p, gamma, kappa, attack)
    coef = np.asarray(coef, dtype=float).ravel()
    if coef.shape != (d.n,) or not np.all(np.isfinite(coef)):
        raise ParameterError(f"coef must be {d.n} finite numbers, got shape {coef.shape}")
    b = 0.0 if intercept is None else float(intercept)
    if not np.isfinite(b):
        raise ParameterError(f"intercept must be finite, got {intercept!r}")
    fixed = (b, coef)
    program = assemble_program(d, False, fixed)
    backend, sol = solve_program(program, solver, options, on_inaccurate)
    res = intersection_result(d, program, backend, sol, t0, fixed)
    return res if full else res.value


__all__ = ["MAX_Z_ENTRIES", "IntersectionResult", "build_intersection_program", "solve_intersection", "static_value_at",
           "intersection_rows", "add_dual_norm_rows"]
