"""The repair of a dual point's free columns for the Lagrangian certificate (:mod:`.lagrangian`): the slopes
``alpha_k`` change, within the slope domain of the loss, until ``g = sum_k m_k alpha_k sigma_k a_k`` vanishes on every
free column up to rounding (:data:`RESIDUAL_RTOL`), in the manner of the barrier solver's certificate
(:mod:`drokit.solvers.barrier`).

The columns of ``theta = [intercept, coef]`` (:func:`column_roles`) are free (intercept, dummies, immutable numerical
features; at radius 0 every column not fixed), norm-priced (numerical with ``0 < gamma_j < inf``: the budget pays
their sums) or fixed at 0 (``fixed_zero``; numerical with ``gamma_j = 0`` at a positive radius).  The repair
(:func:`repair_free_columns`) meets ``A_C^T (m alpha sigma) = target`` (zeros on the free columns, and the norm-priced
columns' current values where the rows allow):

1. the slopes change by ``r_k sigma_k (A_C c)_k`` with room ``r_k`` to the slope domain's ends (:func:`slope_room`),
   ``c`` solving ``A_C^T diag(m r) A_C c = target - A_C^T (m alpha sigma)`` (valid when ``|A_C c| <= 1``:
   :func:`_least_norm_step`, its Gram matrix by :func:`weighted_gram`);
2. else a bounded least-squares change by an active set that fixes each row at the end it reaches
   (:func:`_bounded_repair`);
3. failing that, on up to :data:`BVLS_MAX_ROWS` rows, a bounded least-squares change in which every row may move back
   into the domain (:func:`_bvls_repair`; the smooth hinge's rows at its flat pieces' slopes 0 and -1 needed it on
   hepatitis);

each followed by at most two least-norm corrections of the residual within the domain.  The order of these steps is
:func:`repair_steps`'s, over operations on slope vectors: arrays here, vectors held by a distributed fit's partitions in
:mod:`.partitioned_bound` (which has no step 3).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..oracles.design import sparse_gram

#: largest free-column residual |g_F| (relative to max |m alpha|) accepted after the repair: rounding
RESIDUAL_RTOL = 1e-12

#: :func:`_bvls_repair` runs on at most this many rows (a dense bounded least-squares problem of that width;
#: scipy's BVLS on random problems of 40 columns: 0.04 s at 500 rows, 0.45 s at 1,000, 4.7 s at 2,000)
BVLS_MAX_ROWS = 1_000

#: its weight on the conditions against the size of the change (relative to the masses' scale)
BVLS_WEIGHT = 1e6

#: :func:`_bounded_repair` gives up after this many rounds of its active set
BOUNDED_MAX_ITER = 30

#: :func:`weighted_gram` densifies a design of at most this many entries (256 MB)
DENSE_GRAM_LIMIT = 32_000_000

#: ... unless at most this fraction of its entries are nonzero: a wide one-hot design, whose sparse product is cheaper
#: (5,000 rows x 310 columns, 2 % nonzero, as the 300-level table: 11.2 -> 4.6 ms, one thread; its fits 2-4 % faster;
#: synthetic 10 + 10 is 35 % nonzero and census-like 15 %: dense)
SPARSE_GRAM_DENSITY = 0.05


def slope_room(alpha: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """How far each slope may move and stay in the slope domain ``[lo, hi]``: the distance to its nearer end,
    capped at ``1 + |alpha|`` (a loss growing faster than linearly has an unbounded domain)."""
    alpha = np.asarray(alpha, dtype=float)
    return np.minimum(np.minimum(alpha - lo, hi - alpha), 1.0 + np.abs(alpha))


def column_roles(inst: DROInstance):
    """Positions in ``theta = [intercept, coef]`` of the free columns and of the norm-priced numerical ones;
    the rest (``fixed_zero``; numerical with ``gamma = 0`` at a positive radius) are fixed at 0."""
    offset = 1 if inst.fit_intercept else 0
    n_theta = offset + inst.schema.n_encoded
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    numerical = offset + np.arange(inst.n_numerical)
    fixed = np.zeros(n_theta, dtype=bool)
    fixed[offset + np.asarray(inst.fixed_zero, dtype=int)] = True
    limited = np.zeros(n_theta, dtype=bool)
    if inst.radius > 0:
        fixed[numerical[gamma == 0]] = True
        limited[numerical[np.isfinite(gamma) & (gamma > 0)]] = True
    limited &= ~fixed
    free = ~fixed & ~limited
    return np.flatnonzero(free), np.flatnonzero(limited)


def column_sums(A: sp.csr_matrix, mass, sigma, slopes, exact: np.ndarray):
    """``(g, residual, met)``: the column sums ``g = A' (m alpha sigma)`` of a repaired point, the largest ``|g_j|`` on
    the columns that must vanish (``exact``), and whether it is rounding (:data:`RESIDUAL_RTOL` relative to
    ``max(1, max |m alpha|)``): the check every Lagrangian bound makes after its repair."""
    g = A.T @ (mass * slopes * sigma)
    residual = float(np.max(np.abs(g[exact]), initial=0.0))
    return g, residual, within_rounding(residual, float(np.max(np.abs(mass * slopes), initial=0.0)))


def within_rounding(residual: float, largest: float) -> bool:
    """Whether a residual of the conditions is rounding: at most :data:`RESIDUAL_RTOL` times ``max(1, largest)``,
    ``largest = max_k |m_k alpha_k|`` (the scale of the terms summed into ``g``)."""
    return residual <= RESIDUAL_RTOL * max(1.0, largest)


def repair_free_columns(A_C: sp.csr_matrix, target: np.ndarray, mass, sigma, slopes, room, lo, hi,
                        bvls: bool = True) -> Optional[np.ndarray]:
    """Slopes changed so that ``A_C^T (m alpha sigma) = target`` (the free columns' zeros, and the norm-priced
    columns' current values): the least-norm change ``alpha + r sigma (A_C c)`` within the preferred
    ``room`` (or, when that step leaves it, a bounded least-squares change anywhere in the slope domain),
    then least-norm corrections of the residual within the domain; ``None`` if no change meets the
    conditions."""
    if A_C.shape[1] == 0:
        return slopes
    last = (lambda: _bvls_repair(A_C, target, mass, sigma, slopes, lo, hi)) \
        if bvls and A_C.shape[0] <= BVLS_MAX_ROWS else None
    return repair_steps(_ArrayRepair(A_C, target, mass, sigma, lo, hi), slopes, room, last)


def repair_steps(ops, slopes, room, last_resort=None):
    """The order of :func:`repair_free_columns`'s steps, over the operations ``ops`` on slope vectors (arrays here;
    the names of vectors held by a fit's partitions in :mod:`.partitioned_bound`): ``ops.met(alpha)``, whether the
    conditions hold up to rounding (:func:`within_rounding`); ``ops.residual(alpha)``, their largest violation;
    ``ops.least_norm(alpha, room)``, the least-norm step within ``room`` (``None``: within the slope domain's room
    at ``alpha``, :func:`slope_room`), or ``None`` when it leaves it; ``ops.bounded(alpha)``, the active-set change
    (:func:`_bounded_repair`), or ``None``.  ``last_resort()``: a last candidate (:func:`_bvls_repair`), or None.

    The least-norm step within ``room``, else the active-set change, else the last resort, each followed by at most
    two corrections of the residual within the domain (a least-norm step, or the active-set change from there when
    that step fails or misses, whichever leaves less); ``None`` if none meets the conditions."""
    def refined(alpha):
        for _ in range(2):
            if ops.met(alpha):
                return alpha
            step = ops.least_norm(alpha, None)
            if step is None or not ops.met(step):
                # near a singular Gram the least-norm step leaves the room or drops the directions that remain
                # (lymphography, kappa = 1, radius 1e-4: 1.6e-12 left, a 1e-12 tolerance): an active-set pass
                # from here, whichever leaves less
                polish = ops.bounded(alpha)
                if polish is not None and (step is None or ops.residual(polish) < ops.residual(step)):
                    step = polish
            if step is None:
                break
            alpha = step
        return alpha if ops.met(alpha) else None

    if ops.met(slopes):
        return slopes
    first = ops.least_norm(slopes, room)
    out = refined(first) if first is not None else None
    if out is None:
        bounded = ops.bounded(slopes)
        out = refined(bounded) if bounded is not None else None
    if out is None and last_resort is not None:
        candidate = last_resort()
        out = refined(candidate) if candidate is not None else None
    return out


class _ArrayRepair:
    """:func:`repair_steps`'s operations on slope arrays, for the conditions ``A_C^T (m alpha sigma) = target``."""

    def __init__(self, A_C, target, mass, sigma, lo, hi):
        self.A_C, self.target, self.mass, self.sigma, self.lo, self.hi = A_C, target, mass, sigma, lo, hi

    def residual(self, alpha) -> float:
        return float(np.max(np.abs(self.A_C.T @ (self.mass * alpha * self.sigma) - self.target)))

    def met(self, alpha) -> bool:
        return within_rounding(self.residual(alpha), float(np.max(np.abs(self.mass * alpha), initial=0.0)))

    def least_norm(self, alpha, room):
        room = slope_room(alpha, self.lo, self.hi) if room is None else room
        return _least_norm_step(self.A_C, self.target, self.mass, self.sigma, alpha, room, self.lo, self.hi)

    def bounded(self, alpha):
        return _bounded_repair(self.A_C, self.target, self.mass, self.sigma, alpha, self.lo, self.hi)


def _bvls_repair(A_C, target, mass, sigma, alpha, lo, hi) -> Optional[np.ndarray]:
    """A small change ``d`` with ``A_C^T (m sigma (alpha + d)) ~= target`` and ``lo <= alpha + d <= hi``, every row
    free to move into the domain (the active set of :func:`_bounded_repair` fixes a row at the end it reached,
    and some conditions then need the rows at a flat piece's slope to move inward): bounded least squares on
    ``[w B'; I] d ~= [w r; 0]`` (``B`` the rows ``m_k sigma_k a_k``), to be polished by the least-norm steps;
    None when scipy's solver fails."""
    from scipy.optimize import lsq_linear
    a0 = np.clip(np.asarray(alpha, dtype=float), lo, hi)
    B = sp.csr_matrix(A_C.multiply((mass * sigma)[:, None])).toarray()
    r = target - B.T @ a0
    scale = max(float(np.max(np.abs(B), initial=0.0)), 1e-300)
    w = BVLS_WEIGHT / scale
    C = np.vstack([w * B.T, np.eye(B.shape[0])])
    rhs = np.concatenate([w * r, np.zeros(B.shape[0])])
    lower = np.where(np.isfinite(lo), lo - a0, -np.inf)
    upper = np.where(np.isfinite(hi), hi - a0, np.inf)
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(rhs))):
        return None
    try:
        res = lsq_linear(C, rhs, bounds=(lower, upper), method="bvls")
    except (np.linalg.LinAlgError, ValueError):    # an SVD that does not converge (sample weights: integer masses)
        return None
    return np.clip(a0 + res.x, lo, hi)


def weighted_gram(A: sp.csr_matrix, w: np.ndarray) -> np.ndarray:
    """``A' diag(w) A`` for ``w >= 0``: as ``X' X`` with ``X = diag(sqrt(w)) A`` dense when it fits in
    :data:`DENSE_GRAM_LIMIT` (one symmetric rank-k update; scipy.sparse's product of a 110,000-row design with few
    columns took 0.3 s of a 0.4 s bound), as the sparse product ``A' (diag(w) A)`` when ``A`` is sparse with at most
    :data:`SPARSE_GRAM_DENSITY` of its entries nonzero, by blocks of dense rows otherwise."""
    w = np.maximum(w, 0.0)
    if sp.issparse(A) and A.nnz <= SPARSE_GRAM_DENSITY * A.shape[0] * A.shape[1]:
        A = sp.csr_matrix(A)
        return np.asarray((A.T @ A.multiply(w[:, None]).tocsr()).todense())
    root = np.sqrt(w)
    if A.shape[0] * A.shape[1] <= DENSE_GRAM_LIMIT:
        X = A.toarray() if sp.issparse(A) else np.array(A, dtype=float)
        X *= root[:, None]
        return X.T @ X
    # larger: densified a block of rows at a time (scipy.sparse's X' X took 18 s of a 117 s fit at 1M rows)
    return sparse_gram(A, root)


def gram_solve(gram: np.ndarray, rhs: np.ndarray) -> Optional[np.ndarray]:
    """A least-squares solution ``c`` of ``gram c = rhs`` with the near-null directions dropped (singular values below
    ``1e-12`` of the largest: no huge steps); ``None`` when either is not finite or the solver fails."""
    if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(rhs))):
        return None
    try:
        return np.linalg.lstsq(gram, rhs, rcond=1e-12)[0]
    except np.linalg.LinAlgError:
        return None


def _least_norm_step(A_C, target, mass, sigma, alpha, room, lo, hi) -> Optional[np.ndarray]:
    """``alpha + r sigma (A_C c)`` with ``c`` solving ``A_C^T diag(m r) A_C c = target - A_C^T (m alpha sigma)``;
    ``None`` when some ``|(A_C c)_k| > 1`` (the step would leave the room)."""
    g = A_C.T @ (mass * alpha * sigma) - target
    if not np.any(g):
        return alpha
    c = gram_solve(weighted_gram(A_C, mass * room), -g)
    if c is None:
        return None
    step = np.asarray(A_C @ c).ravel()
    if not np.all(np.abs(step) <= 1.0):
        return None
    return np.clip(alpha + room * sigma * step, lo, hi)


def _bounded_repair(A_C, target, mass, sigma, alpha, lo, hi, max_iter: int = BOUNDED_MAX_ITER) -> Optional[np.ndarray]:
    """The smallest change ``d`` (least squares) with ``A_C^T (m sigma (alpha + d)) = target`` and
    ``lo <= alpha + d <= hi``, by an active set: the least-norm change over the movable rows, rows that leave
    the domain clipped to its end and fixed there, repeated (a few rounds; ``None`` if it does not settle)."""
    alpha = np.clip(np.asarray(alpha, dtype=float).copy(), lo, hi)
    movable = mass > 0
    B = sp.csr_matrix(A_C.multiply((mass * sigma)[:, None]))           # row k: m_k sigma_k a_k
    for _ in range(max_iter):
        r = target - B.T @ alpha
        if not np.any(r):
            return alpha
        Bm = B[np.flatnonzero(movable)]
        c = gram_solve(np.asarray((Bm.T @ Bm).todense()), r)
        if c is None:
            return None
        d = np.zeros_like(alpha)
        d[movable] = np.asarray(Bm @ c).ravel()
        new = alpha + d
        out = movable & ((new < lo) | (new > hi))
        alpha = np.clip(new, lo, hi)
        if not out.any():
            return alpha
        movable &= ~out
        if not movable.any():
            return None
    return None
