"""The support function of the RWPI multiplier set over many directions (:mod:`drokit.model_selection.rwpi`):

    S_d = sup { Z_d'zeta : zeta in Lambda_hat },      d = 1..n_draws,

``Lambda_hat = {zeta : R zeta <= rhs,  N_*(Gamma^{-1} v_i(zeta)) <= 1 (i = 1..N)}`` (``v_i`` linear in ``zeta``: the
x-gradient of ``zeta'h`` at sample ``i``; :class:`~drokit.model_selection.rwpi.Gradient`).  Most constraints never bind,
so they join a working set lazily: the draws of a block (1, 2, 4, ... draws, so that the first ones build the set)
are solved, their violations of every row and every sample's dual-norm constraint checked at once, and the
:data:`CUTS_PER_DRAW` worst of each unconverged draw join; a draw is done when nothing is violated by more than
:data:`TOL`.  Polyhedral ``Lambda_hat`` (no numerical move, or an ``l_1`` / ``l_inf`` cost): an LP in HiGHS re-solved
from the last basis (0.2-0.5 ms a draw), the norm constraints by their facets ``d'Gamma^{-1} v_i(zeta) <= 1`` (``d``
the norm's maximizer at a violated ``v_i``; finitely many).  Any other norm: the LP over the rows alone first, kept
when its optimum satisfies every sample's cone, else the samples' exact cones in a Clarabel program (drokit's conic
builder; the norm's own conic form, and for ``l_2`` the 3-dimensional cones ``||(alpha_i(zeta), s_i rho)|| <= 1``,
``rho >= ||P zeta_x||``, below) whose objective is updated per draw (2-5 ms).  A box ``|zeta_j| <= BOX`` keeps the
first programs bounded; a draw whose optimum needs it is ``inf``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import SolverError
from ..solvers.highs import new_highs

#: violation (relative: rows scaled to a right-hand side of 1 or 0, dual norms against 1) accepted at a draw's optimum
TOL = 1e-6
#: the box |zeta_j| <= BOX (features scaled to unit RMS); a draw with value > BOX_VALUE BOX ||Z|| is unbounded
BOX, BOX_VALUE = 1e6, 1e-3
#: constraints joining per unconverged draw and round; rounds per block of draws
CUTS_PER_DRAW, MAX_ROUNDS = 5, 400
#: entries of the violation arrays checked at once (rows x draws, samples x draws x numerical columns)
BLOCK_ENTRIES = 4_000_000


def support_values(Z, rows, rhs, grad):
    """``S_d = sup {Z_d'zeta : zeta in Lambda_hat}`` for every row ``Z_d`` of ``Z`` (module docstring): ``rows``,
    ``rhs`` the linear constraints ``R zeta <= rhs``, ``grad`` the samples' dual-norm constraints
    (:class:`~drokit.model_selection.rwpi.Gradient`).  Returns the values (``inf`` where the box is needed), their
    relative gaps (to the value of the optimum scaled into ``Lambda_hat``, a lower bound) and the constraints used."""
    D, p = Z.shape
    solver = _LP(p, grad) if grad.keep.size == 0 or grad.p in (1.0, np.inf) else _Hybrid(p, grad)
    in_rows = np.zeros(rows.shape[0], dtype=bool)
    gaps, sol, n_cuts = np.zeros(D), np.zeros((D, p)), 0
    most = max(1, BLOCK_ENTRIES // (rows.shape[0] + grad.A.shape[0] * max(1, grad.keep.size)))
    start, block = 0, 1
    while start < D:
        pending = np.arange(start, min(D, start + block))
        start, block = start + block, min(2 * block, most)
        for _ in range(MAX_ROUNDS):
            for d in pending:
                sol[d] = solver.solve(Z[d])
            S = sol[pending]
            Rv = rows @ S.T - rhs[:, None]
            Nv = grad.violations(S) if grad.keep.size else np.zeros((0, pending.size))
            unit = np.maximum(np.max(np.where(rhs[:, None] > 0, Rv, -np.inf), axis=0, initial=-np.inf),
                              np.max(Nv, axis=0, initial=-np.inf))
            gaps[pending] = 1.0 - 1.0 / (1.0 + np.maximum(unit, 0.0))     # zeta / (1 + violation) lies in Lambda_hat
            bad = np.maximum(np.max(Rv, axis=0, initial=-np.inf), np.max(Nv, axis=0, initial=-np.inf)) > TOL
            if not bad.any():
                break
            new = np.setdiff1d(_most_violated(Rv[:, bad])[0], np.flatnonzero(in_rows))
            in_rows[new] = True
            samples, draw = _most_violated(Nv[:, bad])
            n_cuts += solver.grow(rows[new], rhs[new], samples, S[bad][draw])
            pending = pending[bad]
        else:
            warnings.warn(f"RWPI: {pending.size} draws not within {TOL:g} after {MAX_ROUNDS} rounds; their values "
                          f"are upper bounds (a larger radius)", RuntimeWarning, stacklevel=3)
    values = np.einsum("dp,dp->d", Z, sol)
    unbounded = (np.max(np.abs(sol), axis=1) >= 0.5 * BOX) & (values > BOX_VALUE * BOX * np.linalg.norm(Z, axis=1))
    values[unbounded] = np.inf
    return values, gaps, n_cuts


class _LP:
    """``max z'zeta`` over the box and the rows so far, solved in HiGHS as its dual, ``min rhs'mu + BOX 1'(nu+ + nu-)``
    subject to ``R'mu + nu+ - nu- = z``, ``mu, nu >= 0`` (``p`` rows, one column per constraint; ``zeta`` the rows'
    duals): a new draw changes the right-hand side only, so the last basis stays dual feasible and the dual simplex
    goes on from it, and a new constraint is a new column; with few rows per iteration, 2x faster than the primal."""

    def __init__(self, p, grad=None):
        import highspy
        self.highspy, self.grad, self.seen, self.p = highspy, grad, set(), p
        h = self.h = new_highs(highspy)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")
        self.index = np.arange(p, dtype=np.int32)
        h.addRows(p, np.zeros(p), np.zeros(p), 0, np.zeros(p, dtype=np.int32), np.zeros(0, dtype=np.int32),
                  np.zeros(0))
        self._add(np.vstack([np.eye(p), -np.eye(p)]), np.full(2 * p, BOX))

    def _add(self, rows, rhs):
        import scipy.sparse as sp
        C = sp.csc_matrix(rows.T)
        self.h.addCols(C.shape[1], rhs, np.zeros(C.shape[1]), np.full(C.shape[1], self.highspy.kHighsInf), C.nnz,
                       C.indptr[:-1].astype(np.int32), C.indices.astype(np.int32), C.data)

    def solve(self, z):
        h, optimal = self.h, self.highspy.HighsModelStatus.kOptimal
        h.changeRowsBounds(self.p, self.index, z, z)
        h.run()
        if h.getModelStatus() != optimal:
            h.clearSolver()
            h.run()
            if h.getModelStatus() != optimal:
                raise SolverError(f"HiGHS ended {h.modelStatusToString(h.getModelStatus())} on an RWPI LP",
                                  solver="highs")
        return np.asarray(h.getSolution().row_dual)

    def grow(self, rows, rhs, samples, points) -> int:
        """Add ``rows`` and the facets of the samples' norm constraints at ``points`` (each new facet once)."""
        if samples.size:
            cuts = self.grad.cuts(samples, self.grad.vectors(samples, points))
            fresh = [k for k, key in enumerate(map(bytes, np.round(cuts, 12))) if key not in self.seen
                     and not self.seen.add(key)]
            rows, rhs = np.vstack([rows, cuts[fresh]]), np.r_[rhs, np.ones(len(fresh))]
        if rows.shape[0]:
            self._add(rows, rhs)
        return rows.shape[0]


class _Cones:
    """``max z'zeta`` over the box, the rows so far and the exact dual-norm cones of the samples so far, in Clarabel
    (the program rebuilt when they grow, its objective updated per draw)."""

    def __init__(self, p, grad):
        self.p, self.grad = p, grad
        self.rows, self.rhs, self.samples = np.zeros((0, p)), np.zeros(0), np.zeros(0, dtype=int)
        self.solver = None

    def _build(self):
        import clarabel
        from ..conic.builder import Affine, ProgramBuilder
        from ..solvers.clarabel import ClarabelBackend
        pb, g = ProgramBuilder(), self.grad
        zeta = pb.var("zeta", self.p)
        linear = [BOX - zeta, BOX + zeta] + ([self.rhs - self.rows @ zeta] if self.rhs.size else [])
        pb.add_nonneg(Affine.vstack(linear))
        i = self.samples
        W = (g.s2[i, None, None] * g.b[None, :, None]) * g.A[i, None, :]       # Gamma^{-1} v_i = W_i zeta
        W[:, :, g.cols] += g.s1[i, None, None] * np.diag(g.w)
        if g.p == 2:        # ||v_i||^2 = alpha_i^2 + s1_i^2 ||P zeta_x / gamma||^2, P the projection orthogonal to b
            u = g.b / np.linalg.norm(g.b) if np.any(g.b) else np.eye(g.keep.size)[0]
            rho = pb.var("rho", 1)
            pb.add_norm2_leq((np.eye(g.keep.size) - np.outer(u, u)) @ (zeta[g.cols] * g.w), rho)
            alpha = np.einsum("j,sjp->sp", u, W) @ zeta
            pb.add_soc(pb.constant(np.ones(i.size)), [alpha, rho.repeat(i.size) * g.s1[i]])
        else:                                     # the norm's own conic form, one cone per sample (tens)
            for Wi in W:
                g.norm.add_dual_value_leq(pb, Wi @ zeta, pb.constant(1.0), g.keep)
        pb.minimize((np.zeros((1, self.p)) @ zeta).sum())
        P, q, A, b, cones = ClarabelBackend().apply(pb.build())
        settings = clarabel.DefaultSettings()
        settings.verbose, settings.presolve_enable = False, False
        self.solver, self.n = clarabel.DefaultSolver(P, q, A, b, cones, settings), q.size

    def solve(self, z):
        if self.solver is None:
            self._build()
        q = np.zeros(self.n)
        q[:self.p] = -z
        self.solver.update(q=q)
        out = self.solver.solve()
        if str(out.status) not in ("Solved", "AlmostSolved"):
            raise SolverError(f"Clarabel ended {out.status} on an RWPI program", solver="clarabel")
        return np.asarray(out.x[:self.p])

    def grow(self, rows, rhs, samples, points) -> int:
        samples = np.setdiff1d(samples, self.samples)
        self.rows, self.rhs = np.vstack([self.rows, rows]), np.r_[self.rhs, rhs]
        self.samples = np.r_[self.samples, samples].astype(int)
        self.solver = None                        # rebuilt at the next solve
        return rows.shape[0] + samples.size


class _Hybrid:
    """A curved norm: the LP over the rows alone first (:class:`_LP`); when its optimum also satisfies every sample's
    dual-norm constraint (as when categorical changes and flips bind before the numerical moves) it is the optimum,
    otherwise the conic program (:class:`_Cones`) is solved."""

    def __init__(self, p, grad):
        self.lp, self.cones, self.grad = _LP(p), _Cones(p, grad), grad

    def solve(self, z):
        zeta = self.lp.solve(z)
        if np.max(self.grad.violations(zeta[None]), initial=-np.inf) <= TOL:
            return zeta
        return self.cones.solve(z)

    def grow(self, rows, rhs, samples, points) -> int:
        self.lp.grow(rows, rhs, np.zeros(0, dtype=int), points)
        return self.cones.grow(rows, rhs, samples, points)


def _most_violated(M):
    """``(row, column)`` of up to :data:`CUTS_PER_DRAW` entries above ``TOL`` per column of ``M``, largest first."""
    k = min(CUTS_PER_DRAW, M.shape[0])
    if k == 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    top = np.argpartition(-M, k - 1, axis=0)[:k]
    col = np.broadcast_to(np.arange(M.shape[1]), top.shape)
    hit = M[top, col] > TOL
    return top[hit], col[hit]


__all__ = ["support_values", "TOL", "BOX"]
