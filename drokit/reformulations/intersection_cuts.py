"""A cutting plane over the ``(i, j, l)`` rows of the static intersection program (Inter-ARO*, selvi2025 Thm 11)
for the l1 transport cost (``p = 1``, the thesis's experiments), where the monolithic program's
``2 N N_hat n`` z-variables are too many.

The master is the static program on a working set of rows (:func:`.intersection.assemble_program` with ``rows=``):
a relaxation, so its optimum is a LOWER bound on the full static optimum.  For ``p = 1`` the dual norm is
``l_inf``, and a row's best ``z`` is separable: the two constraints
``lip |l beta_c - z_c| <= lam gamma_c`` and ``lip |z_c| <= lam_hat gamma_c`` are a box per coordinate, and the
row's loss argument ``l f(x_i) + z^T (xhat_j - x_i) - tau`` is largest (the loss non-increasing) at the box
corner picked by the sign of ``d_c = xhat_jc - x_ic``:

    sigma_ij = sum_c max(lo_c d_c, hi_c d_c),   lo_c = max(l beta_c - lam gamma_c / lip, -lam_hat gamma_c / lip),
                                                hi_c = min(l beta_c + lam gamma_c / lip,  lam_hat gamma_c / lip)

(``gamma_c = inf``: the coordinate is free, ``sigma = +inf`` when ``d_c != 0``).  The violation of a row is
``L(l f_i + sigma_ij - tau) - rhs_ij``; raising each ``s_i`` by its sample's largest violation makes the master's
point feasible for every row, so ``master objective + mean_i max_{j,l} violation^+`` is an UPPER bound on the
full static optimum (and on the fitted model's worst case over the intersection).  Rows are added per sample
and per auxiliary sample (the most violated), until the two bounds meet (relative ``gap_tol``).

Separation costs ``O(N N_hat n)`` time per round, in chunks of samples (no ``N N_hat n`` array is kept).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

import scipy.sparse as sp

from ..exceptions import ParameterError
from ..gaps import gap_scale
from ..metrics.transport import wasserstein_distance
from .intersection import IntersectionResult, assemble_program, intersection_result, intersection_rows, solve_program
from .intersection_inputs import validate_inputs

#: samples per separation chunk (rows i x all j x labels at once)
CHUNK_ELEMENTS = 4_000_000


@dataclass
class CutRound:
    """One round: bounds, working rows, rows added, seconds."""

    lower: float
    upper: float
    rows: int
    added: int
    master_time: float
    separation_time: float


@dataclass
class CutOutcome:
    result: IntersectionResult
    lower_bound: float
    upper_bound: float
    history: List[CutRound] = field(default_factory=list)
    converged: bool = False


def _row_violations(d, intercept, coef, lam, lam_a, s, s_a, tau):
    """Per sample ``i``: the largest violation over its rows and the ``(j, l)`` attaining it; per auxiliary
    sample ``j``: the same over its rows with ``(i, l)``."""
    N, Na, n = d.X.shape[0], d.Xa.shape[0], d.n
    gamma = d.gamma
    finite = np.isfinite(gamma)
    g = np.where(finite, gamma, 0.0) / d.lip
    f = d.X @ coef + intercept
    labels = (-1.0, 1.0)
    best_i = np.full(N, -np.inf)
    arg_i = np.zeros((N, 2), dtype=np.int64)
    best_j = np.full(Na, -np.inf)
    arg_j = np.zeros((Na, 2), dtype=np.int64)
    labels_move = np.isfinite(d.kappa)  # else a row exists only for l = y_i = yhat_j (intersection_rows)
    chunk = max(1, CHUNK_ELEMENTS // max(1, Na * n))
    for start in range(0, N, chunk):
        rows = slice(start, min(N, start + chunk))
        D = d.Xa[None, :, :] - d.X[rows, None, :]                      # (c, Na, n)
        free_move = np.any((~finite)[None, None, :] & (D != 0), axis=2)
        D = np.where(finite[None, None, :], D, 0.0)
        for li, l in enumerate(labels):
            lo = np.maximum(l * coef - lam * g, -lam_a * g)
            hi = np.minimum(l * coef + lam * g, lam_a * g)
            sigma = np.sum(np.maximum(lo * D, hi * D), axis=2)          # (c, Na)
            u = l * f[rows, None] + sigma - tau
            rhs = s[rows, None] + s_a[None, :]
            if np.isfinite(d.kappa):
                rhs = rhs + d.kappa * (lam * (l != d.y[rows, None]) + lam_a * (l != d.ya[None, :]))
            loss = np.where(free_move, 0.0, d.loss.value(u))              # z free on a moving immutable coordinate
            viol = loss - rhs
            if not labels_move:
                viol = np.where((d.y[rows, None] == l) & (d.ya[None, :] == l), viol, -np.inf)
            jbest = np.argmax(viol, axis=1)
            vbest = viol[np.arange(viol.shape[0]), jbest]
            better = vbest > best_i[rows]
            best_i[rows] = np.where(better, vbest, best_i[rows])
            arg_i[rows] = np.where(better[:, None], np.column_stack([jbest, np.full_like(jbest, li)]), arg_i[rows])
            ibest = np.argmax(viol, axis=0)
            v_j = viol[ibest, np.arange(Na)]
            better_j = v_j > best_j
            best_j = np.where(better_j, v_j, best_j)
            arg_j = np.where(better_j[:, None], np.column_stack([ibest + start, np.full_like(ibest, li)]), arg_j)
    return best_i, arg_i, best_j, arg_j


def coupled_pairs(X, y, X_aux, y_aux, gamma, kappa, p: float = 1, plan=None) -> Tuple[np.ndarray, np.ndarray]:
    """``(i, j)``: the pairs an optimal transport plan between the two samples couples (cost
    ``||Gamma (x - x')||_p + kappa 1[y != y']``), plus each sample's nearest partner both ways.

    With the plan's pairs, the distribution that puts each planned pair's mass ``eps / (eps + eps_hat)`` of
    the way from ``x_i`` to ``xhat_j`` lies in both balls whenever the intersection is non-empty: these pairs
    make a first cutting-plane master bounded and a finite-support lower bound feasible.  O(N N_hat n) time
    in chunks; O(N + N_hat) pairs.  ``plan``: an optimal plan already computed (else one is solved for)."""
    from ..metrics import GroundMetric, LabelCost, NormCost
    gamma = np.asarray(gamma, dtype=float)
    if plan is None:
        metric = GroundMetric(numerical=NormCost(p=p, weights=gamma), label=LabelCost(kappa=kappa))
        _, plan = wasserstein_distance((X, y), (X_aux, y_aux), metric, return_plan=True, task="classification")
    i, j = (np.zeros(0, dtype=np.int64),) * 2 if plan is None else sp.csr_matrix(plan).nonzero()
    g = np.where(np.isfinite(gamma), gamma, 1e6)
    N, Na, n = X.shape[0], X_aux.shape[0], X.shape[1]
    chunk = max(1, CHUNK_ELEMENTS // max(1, Na * n))
    nearest_j = np.zeros(N, dtype=np.int64)
    nearest_i_val = np.full(Na, np.inf)
    nearest_i = np.zeros(Na, dtype=np.int64)
    for start in range(0, N, chunk):
        r = slice(start, min(N, start + chunk))
        dist = np.sum(np.abs(X_aux[None, :, :] - X[r, None, :]) * g, axis=2)
        nearest_j[r] = np.argmin(dist, axis=1)
        col = np.argmin(dist, axis=0)
        val = dist[col, np.arange(Na)]
        upd = val < nearest_i_val
        nearest_i_val = np.where(upd, val, nearest_i_val)
        nearest_i = np.where(upd, col + start, nearest_i)
    pairs = np.unique(np.column_stack([np.concatenate([i, np.arange(N), nearest_i]),
                                       np.concatenate([j, nearest_j, np.arange(Na)])]), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _initial_rows(d, pairs=None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first working set: the rows of :func:`coupled_pairs` on every allowed label, and a star per label
    (every sample with one auxiliary sample, every auxiliary sample with one sample), which keeps the row
    graph connected so that only the harmless shift ``s + c, s_hat - c`` of the free ``s, s_hat`` is left
    (module docstring of :mod:`.intersection`)."""
    I, J, L = intersection_rows(d.y, d.ya, d.kappa)
    pi, pj = coupled_pairs(d.X, d.y, d.Xa, d.ya, d.gamma, d.kappa) if pairs is None else pairs
    Na = d.Xa.shape[0]
    keep = np.isin(I * Na + J, pi * Na + pj)
    for l in (-1.0, 1.0):  # the star of label l: anchored at the first allowed row of that label
        on = np.flatnonzero(L == l)
        if on.size:
            i0, j0 = I[on[0]], J[on[0]]
            keep[on] |= (J[on] == j0) | (I[on] == i0)
    return I[keep], J[keep], L[keep]


def solve_intersection_cuts(X, y, X_aux, y_aux, radius, radius_aux, loss, *, p=1, gamma=None, kappa=np.inf,
                            fit_intercept=True, attack=None, solver: str = "clarabel", options=None,
                            gap_tol: float = 1e-6, max_rounds: int = 100, verbose: bool = False,
                            on_inaccurate: str = "raise", pairs=None) -> CutOutcome:
    """The static program by constraint generation over its ``(i, j, l)`` rows (``p = 1`` only; module
    docstring).  Same parameters as :func:`.intersection.solve_intersection`; the returned result's value is
    the certified UPPER bound of the last round's best point (at most ``gap_tol`` above the static optimum).
    ``pairs``: :func:`coupled_pairs` of the two samples, if already known."""
    if float(p) != 1:
        raise ParameterError("the intersection cutting plane separates exactly for the l1 transport cost "
                             "(p = 1, the thesis's setting); use the monolithic static program for other p")
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if verbose else (lambda m: None)
    t0 = time.perf_counter()
    d = validate_inputs(X, y, X_aux, y_aux, radius, radius_aux, loss, p, gamma, kappa, attack)
    I, J, L = _initial_rows(d, pairs)
    seen = set(zip(I.tolist(), J.tolist(), L.tolist()))
    history: List[CutRound] = []
    best: Optional[Tuple[float, IntersectionResult]] = None
    lower = -np.inf
    converged = False
    for r in range(max_rounds):
        tm = time.perf_counter()
        program = assemble_program(d, bool(fit_intercept), rows=(I, J, L))
        backend, sol = solve_program(program, solver, options, on_inaccurate)
        res = intersection_result(d, program, backend, sol, t0, None)
        master_time = time.perf_counter() - tm
        lower = max(lower, float(sol.dual_objective) if np.isfinite(sol.dual_objective) else res.value)
        ts = time.perf_counter()
        tau = res.attack if res.attack is not None else 0.0
        vi, ai, vj, aj = _row_violations(d, res.intercept, res.coef, res.lam, res.lam_aux, res.s, res.s_aux, tau)
        upper_here = res.value + float(np.mean(np.maximum(vi, 0.0)))
        if best is None or upper_here < best[0]:
            res.s = res.s + np.maximum(vi, 0.0)  # the feasible point of the full program
            res.value = upper_here
            best = (upper_here, res)
        tol = gap_tol * gap_scale(best[0])
        new = []
        for i in np.flatnonzero(vi > tol / 10):
            new.append((int(i), int(ai[i, 0]), -1.0 if ai[i, 1] == 0 else 1.0))
        for j in np.flatnonzero(vj > tol / 10):
            new.append((int(aj[j, 0]), int(j), -1.0 if aj[j, 1] == 0 else 1.0))
        new = [k for k in dict.fromkeys(new) if k not in seen]
        sep_time = time.perf_counter() - ts
        history.append(CutRound(lower, best[0], I.size, len(new), master_time, sep_time))
        log(f"{r:>4}  lower {lower:.9f}  upper {best[0]:.9f}  rows {I.size}  +{len(new)}  "
            f"master {master_time:.2f}s  separation {sep_time:.2f}s")
        if best[0] - lower <= tol or not new:
            converged = best[0] - lower <= tol  # no new rows with a gap left: the masters' accuracy limit
            break
        seen.update(new)
        add = np.array(new, dtype=float)
        I = np.concatenate([I, add[:, 0].astype(np.int64)])
        J = np.concatenate([J, add[:, 1].astype(np.int64)])
        L = np.concatenate([L, add[:, 2]])
    result = best[1]
    result.time = time.perf_counter() - t0
    result.n_rows = int(I.size)
    return CutOutcome(result=result, lower_bound=float(lower), upper_bound=float(best[0]), history=history,
                      converged=converged)
