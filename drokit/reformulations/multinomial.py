"""The exact conic program of the multinomial DRO logistic model (issue 20 item 7; the model, its dual and its
certificate: :mod:`drokit.models.multinomial`).

Rows: every categorical configuration ``z'`` of the mutable features of every sample, each with every label ``y'``
the ball reaches (its own, and every other one at ``+ kappa`` when ``kappa`` is finite).  Program:

    min  lambda eps + sum_n p_n s_n
    s.t. sum_k exp(f_k(r) - f_{y'_r}(r) - lambda c_r - s_{n_r}) <= 1          (K exponential cones + 1 row per row r)
         ||Gamma^{-1} (w_{k,x} - w_{j,x})||_* <= lambda                      (every pair of classes)

with ``f_k(r) = b_k + w_k^T a_r``, ``a_r = [x_n, dummies(z'_r)]``, ``c_r = d(z_n, z'_r) + kappa 1[y'_r != y_n]``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..conic.builder import ProgramBuilder
from ..instance import DROInstance
from ..oracles.multinomial_rows import (MultinomialRows, limited_columns, multinomial_rows, row_design,  # noqa: F401
                                         row_losses, scores, take)


def build_program(inst: DROInstance, mrows: MultinomialRows, n_classes: int):
    """The exact conic program of the module docstring over ``mrows``; variables ``coef`` (``K x d``, class-major),
    ``intercept`` (``K``, when fitted), ``lambda`` and ``s``."""
    K, d, R = n_classes, inst.schema.n_encoded, mrows.size
    pb = ProgramBuilder()
    W = pb.var("coef", K * d)
    b = pb.var("intercept", K) if inst.fit_intercept else None
    lam = pb.var("lambda", 1)
    s = pb.var("s", inst.n_samples)
    pb.add_nonneg(lam)
    A = row_design(inst, mrows.rows)
    own = sp.csr_matrix((np.ones(R), (np.arange(R), mrows.target)), shape=(R, K))
    slack = lam.repeat(R) * mrows.cost + s.premultiply(_owner(inst, mrows))
    diffs = []
    for k in range(K):                 # f_k - f_{y'} - lambda c - s_n per row (0 - lambda c - s_n when k = y')
        pick = sp.csr_matrix((np.ones(R), (np.arange(R), np.full(R, k))), shape=(R, K)) - own
        f = W.premultiply(_class_blocks(A, pick))
        if b is not None:
            f = f + b.premultiply(pick)
        diffs.append(f - slack)
    t = pb.var("lse_terms", R * K)
    for k in range(K):
        pb.add_exp(diffs[k], pb.constant(np.ones(R)), t[np.arange(k * R, (k + 1) * R)])
    pb.add_nonneg(1.0 - t.premultiply(sp.hstack([sp.identity(R)] * K, format="csr")))
    cols, gamma = limited_columns(inst)
    if cols.size:
        norm = inst.metric.numerical                 # N_*(Gamma^{-1} (w_k - w_j)) <= lambda per pair of classes
        for k in range(K):
            for j in range(k + 1, K):
                diff = W[k * d + cols] - W[j * d + cols]
                norm.add_dual_norm_leq(pb, diff, lam, gamma, columns=cols)
    pb.minimize(lam * float(inst.radius) + s.premultiply(inst.p[None, :]))
    return pb.build()


def _class_blocks(A: sp.csr_matrix, pick: sp.csr_matrix) -> sp.csr_matrix:
    """``sum_k pick[r, k] a_r^T w_k`` as a matrix on ``vec(W)`` (class-major): row ``r`` holds ``pick[r, k] a_r`` in
    block ``k``."""
    K = pick.shape[1]
    pick = pick.tocsc()
    return sp.hstack([sp.diags(pick[:, k].toarray().ravel()) @ A for k in range(K)], format="csr")


def _owner(inst: DROInstance, mrows: MultinomialRows) -> sp.csr_matrix:
    R = mrows.size
    return sp.csr_matrix((np.ones(R), (np.arange(R), mrows.rows.sample)), shape=(R, inst.n_samples))


# ------------------------------------------------------------------------------------------ the cutting plane
#: a row whose value ``l_r - lambda c_r`` exceeds its sample's epigraph ``s_n`` by more than this (relative to
#: ``max(1, |s_n|)``) joins the master
VIOLATION_TOL = 1e-9
#: method "auto" solves the whole program up to this many exponential cones, the cutting plane above
MONOLITHIC_CONES = 3_000


def read_solution(inst: DROInstance, program, x: np.ndarray, n_classes: int):
    """``(coef (K, d), intercept (K,), lambda, s)`` of a solution of :func:`build_program`."""
    d = inst.schema.n_encoded
    coef = x[program.variables["coef"]].reshape(n_classes, d)
    intercept = x[program.variables["intercept"]] if inst.fit_intercept else np.zeros(n_classes)
    return coef, intercept, float(x[program.variables["lambda"]][0]), x[program.variables["s"]]


def cutting_plane(inst: DROInstance, mrows: MultinomialRows, n_classes: int, solve, max_rounds: int = 100,
                  log=None):
    """The program of every row in ``mrows`` by constraint generation: masters over a working set (first the costless
    rows with the sample's own label), each sample's most violated row added while any exceeds its epigraph by more
    than :data:`VIOLATION_TOL` (separation by enumeration: every row's ``l_r - lambda c_r`` at the master's point).
    A master without violated rows solves the whole program.  ``solve(program)`` returns a solution (or raises).
    Returns ``(solution, program, working indices, rounds, converged)``."""
    sample = mrows.rows.sample
    work = np.flatnonzero(mrows.cost == 0)
    sol = program = None
    for rounds in range(1, max_rounds + 1):
        program = build_program(inst, take(mrows, work), n_classes)
        sol = solve(program)
        coef, intercept, lam, s = read_solution(inst, program, sol.x, n_classes)
        excess = row_losses(inst, mrows, coef, intercept) - lam * mrows.cost - s[sample]
        order = np.lexsort((-excess, sample))
        first = order[np.r_[True, sample[order][1:] != sample[order][:-1]]]
        violated = first[excess[first] > VIOLATION_TOL * np.maximum(1.0, np.abs(s[sample[first]]))]
        new = np.setdiff1d(violated, work)
        if log is not None:
            log(f"multinomial round {rounds:>3}: {work.size:,} rows, objective {sol.primal_objective:.9g}, "
                f"{new.size} violated rows added")
        if not new.size:
            return sol, program, work, rounds, True
        work = np.union1d(work, new)
    return sol, program, work, max_rounds, False
