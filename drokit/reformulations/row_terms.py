"""Configuration rows as loss *terms* over the small parameter vector, shared by drokit's own Newton-type
master solvers (:mod:`.phase_one`'s smoothed master, :mod:`.barrier_master`).

Every row ``r = (n, z, flip)`` of a working set (:mod:`drokit.oracles.enumeration`) enters the restricted
problem (belbasi2023 (3), sun2025 (3)) through

    v_r(theta) = L(u_r) - lambda c_r,     u_r = sigma_r [1, x_n, dummies(z)] . params - shift_r,

``theta = (params, lambda)``, ``params = (beta_0, beta)``.  For a piecewise-affine loss
``L = max_j (a_j u + b_j)`` each row is split into one term per piece, ``v_{r,j} = a_j u_r + b_j - lambda c_r``,
so every term is smooth.  :class:`RowTerms` holds the term design (dense when small), the per-sample grouping
and maps term weights back to row masses and slopes (a dual point for
:func:`drokit.certificates.lagrangian.lagrangian_bound`); :class:`ConeBarrier` is the logarithmic barrier of the
constraints on ``(beta_x, lambda)`` (the dual-norm cone ``lip ||Gamma^{-1} beta_x||_* <= lambda``, and
``lambda >= 0``).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows, RowIndex, take_rows
from ..oracles.design import (GRAM_CHUNK, CodeLayout, csr_design_of_codes, csr_row_design, dense_row_design,
                               design_of_codes, sparse_gram)
from .factored_design import FactoredDesign, NominalChanges, sorted_runs, use_factored


#: a term design is kept dense when it has at most this many entries (3.2e7: 256 MB; synthetic 10 + 10 at
#: N = 100,000, phase 1's 283,726 terms x 61 columns, are dense: scipy.sparse products were most of its time)
DENSE_TERMS_LIMIT = 32_000_000
#: :meth:`RowTerms.curvature_gram` reuses a term's weight in its Gram while it moves by at most this (relative).
#: Synthetic 10 + 10, kappa = inf, radius 0.1, N = 1k / 10k / 100k: 0.4 / 2.1 / 11.6 s exact, 0.4 / 1.8 / 10.0-10.3 s
#: with 0.05-0.2, the same certificates
CURVATURE_RTOL = 0.1
#: ... and computes the Gram afresh when more than this fraction of the weights moved further
CURVATURE_REFRESH = 0.3
#: :meth:`RowTerms.weighted_gram` gathers its terms' rows when they are fewer than this fraction of all terms
GATHER_FRACTION = 0.5
#: :class:`RowTerms` computes ``A x`` and ``A' w`` as nominal rows plus changes (:class:`.factored_design.NominalChanges`)
#: when ``N D + 2 nnz(C)`` is at most this fraction of the ``K D`` entries of the term design (``K`` terms, ``D``
#: columns): equal at synthetic 10 + 10 with N = 10,000 (0.2 ms), 1.4x faster at N = 100,000, 4x at 151 columns
NOMINAL_CHANGES_FRACTION = 0.6


def nominal_changes(inst: DROInstance, sample: np.ndarray, Z: np.ndarray,
                    layout: CodeLayout) -> Optional[NominalChanges]:
    """The term design of the rows ``(sample[k], Z[k])`` as nominal rows plus changes
    (:class:`.factored_design.NominalChanges`), or ``None`` when that does not save :data:`NOMINAL_CHANGES_FRACTION`
    of the reads of the plain design.  Every change of feature ``l`` from the sample's code ``o`` to ``v`` puts ``+1``
    in ``v``'s dummy column (``v > 0``) and ``-1`` in ``o``'s (``o > 0``): the columns of :func:`design_of_codes`."""
    n_cols = int(inst.fit_intercept) + layout.n_encoded
    own = inst.data.Z[sample] if Z.shape[1] else Z
    term, feature = np.nonzero(Z != own)
    N = inst.n_samples
    if N * n_cols + 4 * term.size > NOMINAL_CHANGES_FRACTION * sample.size * n_cols:
        return None
    first = layout.code_base(int(inst.fit_intercept) + inst.n_numerical)[feature]          # code c -> first + c
    new, old = Z[term, feature], own[term, feature]
    up, down = new > 0, old > 0
    entries = np.r_[term[up], term[down]]
    columns = np.r_[first[up] + new[up], first[down] + old[down]]
    values = np.r_[np.ones(int(up.sum())), -np.ones(int(down.sum()))]
    changes = sp.csr_matrix((values, (entries, columns)), shape=(sample.size, n_cols))
    everyone = np.arange(N)
    if N * (n_cols + 1) <= DENSE_TERMS_LIMIT:
        nominal = design_of_codes(inst, everyone, inst.data.Z, layout)
    else:
        nominal = csr_design_of_codes(inst, everyone, inst.data.Z, layout)
    return NominalChanges(nominal, changes, sample)


class RowTerms:
    """The terms ``v_r(theta)`` of a working set of rows, sorted by sample (module docstring)."""

    def __init__(self, inst: DROInstance, rows: ConfigurationRows, layout: Optional[CodeLayout] = None,
                 factored: Optional[bool] = None):
        """``factored``: the term design kept as :class:`.factored_design.FactoredDesign` (``True``), or by the rule
        :func:`.factored_design.use_factored` (``None``).  A distributed fit's partitions take ``True``: its lead
        columns per sample and sparse dummies per term hold 1.7 kB a row at the peak against 2.4 kB dense, and the
        partitioned fit ran 25 s against 59 s (synthetic 10 + 10, 400,000 rows in 4 partitions, one process)."""
        self.inst = inst
        layout = CodeLayout.of(inst) if layout is None else layout
        self.layout = layout
        rows = take_rows(rows, np.argsort(rows.sample, kind="stable"))
        self.rows = rows
        self.index = RowIndex(rows, inst.n_samples, layout.levels)
        sigma, shift = inst.row_signs(rows.sample, rows.flip)
        pieces = inst.loss.pieces
        if pieces is None:
            self.slope = self.offset = None
            rep = None
        else:   # one term per (row, piece)
            a, b = pieces
            rep = np.repeat(np.arange(rows.size), len(a))
            self.slope = np.tile(a, rows.size)
            self.offset = np.tile(b, rows.size)
        n_terms = rows.size * (1 if pieces is None else len(pieces[0]))
        self.n_columns = int(inst.fit_intercept) + layout.n_encoded
        # dense when small: each Newton step's products are then BLAS calls, not scipy.sparse constructions
        # (balance-scale, unit weights: phase 1 was 80 % of a 0.1 s fit, mostly in scipy.sparse overhead);
        # built directly, not through a sparse design (0.25 s of 0.35 s per working set at N = 100,000)
        # factored where the one-hot columns are many and each row has few (:mod:`.factored_design`)
        self.factored = None
        n_lead = int(inst.fit_intercept) + inst.n_numerical
        if factored or (factored is None and use_factored(layout.n_encoded - inst.n_numerical, rows.Z.shape[1])):
            self.A = self.dense = None
            lead = np.ones((inst.n_samples, n_lead))
            lead[:, int(inst.fit_intercept):] = inst.data.X
            self.factored = FactoredDesign(lead, csr_row_design(inst, rows, rep, layout, dummies_only=True),
                                           rows.sample if rep is None else rows.sample[rep])
        elif n_terms * (self.n_columns + 1) <= DENSE_TERMS_LIMIT:
            self.A, self.dense = None, dense_row_design(inst, rows, rep, layout)
        else:
            self.A, self.dense = csr_row_design(inst, rows, rep, layout), None
        rep = np.arange(rows.size) if rep is None else rep
        self.term_row = rep                       # each term's row in ``self.rows``
        self.changes = None if self.factored is not None else nominal_changes(inst, rows.sample[rep], rows.Z[rep], layout)
        self.sigma, self.shift, self.cost = sigma[rep], shift[rep], rows.cost[rep]
        self.sample = rows.sample[rep]
        self.starts = np.flatnonzero(np.r_[True, np.diff(self.sample) != 0])
        self.segment = np.repeat(np.arange(self.starts.size), np.diff(np.r_[self.starts, self.sample.size]))
        self.log_count = float(np.log(np.diff(np.r_[self.starts, self.sample.size]).max()))
        self.n_terms = self.sample.size
        self._gram, self._gram_weight = None, None      # curvature_gram's Gram and the weights it holds

    def terms(self, theta: np.ndarray, derivatives: bool = True):
        """Per term: ``u``, the loss value ``l`` (``a_j u + b_j`` for a piece), its slope and curvature
        (``None`` for pieces, and with ``derivatives=False`` for a value only)."""
        u = self.sigma * self.matvec(theta[:-1]) - self.shift
        if self.slope is None:
            loss = self.inst.loss
            if not derivatives:
                return u, loss.value(u), None, None
            value, slope, curv = loss.value_and_derivatives(u)
            return u, value, slope, curv
        return u, self.slope * u + self.offset, self.slope, None

    def term_values(self, u: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """The loss values of the terms ``idx`` at margins ``u`` (one per term of ``idx``): ``L(u)``, or the
        piece's ``a_j u + b_j``."""
        if self.slope is None:
            return self.inst.loss.value(u)
        return self.slope[idx] * u + self.offset[idx]

    def slopes(self, u: np.ndarray):
        """``(L'(u), L''(u))`` per term (the pieces' slopes and ``None`` for a piecewise-affine loss)."""
        if self.slope is None:
            _, slope, curv = self.inst.loss.value_and_derivatives(u)
            return slope, curv
        return self.slope, None

    def design(self, idx: np.ndarray) -> np.ndarray:
        """Dense rows ``idx`` of the term design (without the lambda column)."""
        if self.factored is not None:
            return self.factored.rows(idx)
        return self.dense[idx] if self.dense is not None else self.A[idx].toarray()

    def gradients(self, idx: np.ndarray, ss: np.ndarray) -> np.ndarray:
        """Rows ``J_r = grad v_r = [ss_r a_r, -c_r]`` of the terms ``idx`` (``ss = slope * sigma`` per term)."""
        J = np.empty((idx.size, self.n_columns + 1))
        np.multiply(self.design(idx), ss[idx, None], out=J[:, :-1])     # no temporary (6 -> 3 ms at 49,012 x 20)
        J[:, -1] = -self.cost[idx]
        return J

    def centered_gram(self, idx: np.ndarray, ss: np.ndarray, mean_weight: np.ndarray, gram_weight: np.ndarray,
                      project: Optional[np.ndarray] = None):
        """``(sum_r gram_weight_r (J_r - G_n)(J_r - G_n)', G' project[segments])`` over the terms ``idx`` (sorted, every
        sample among them with two terms or more), ``G_n`` the ``mean_weight``-weighted mean of sample ``n``'s
        ``J_r`` (one row per segment of ``idx``); the second item is ``None`` without ``project`` (a vector over
        the segments).  Centered before the product: no cancellation when the weights carry ``1 / tau`` or
        ``1 / slack^2``.  Computed :data:`GRAM_CHUNK` terms at a time, cut at sample boundaries: the dense ``J``
        of a million-row working set would take three copies of 0.5 GB (synthetic 10 + 10, N = 1,000,000).  A
        factored design computes it by blocks (:meth:`.factored_design.FactoredDesign.centered_gram`)."""
        if self.factored is not None:
            return self.factored.centered_gram(idx, self.segment, self.cost, ss, mean_weight, gram_weight, project)
        D = self.n_columns + 1
        gram = np.zeros((D, D))
        projected = None if project is None else np.zeros(D)
        seg = self.segment[idx]
        start = 0
        while start < idx.size:
            stop = min(idx.size, start + GRAM_CHUNK)
            stop = int(np.searchsorted(seg, seg[stop - 1], side="right"))       # the last sample whole
            sub = idx[start:stop]
            J = self.gradients(sub, ss)
            firsts, owner, runs = sorted_runs(seg[start:stop])                    # seg is sorted: runs, no sort
            M = sp.csr_matrix((mean_weight[sub], (owner, np.arange(sub.size))), shape=(runs, sub.size))
            G = (M @ J) / np.asarray(M.sum(axis=1))
            J -= G[owner]
            J *= np.sqrt(gram_weight[sub])[:, None]       # gram weights are >= 0 (1/tau, mu/slack^2 ones)
            gram += J.T @ J                               # one symmetric rank-k update: half a general product
            if project is not None:
                projected += G.T @ project[seg[start:stop][firsts]]
            start = stop
        return gram, projected

    def weighted_gram(self, idx: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """``sum_r weight_r a_r a_r'`` over the terms ``idx`` (the loss-curvature part of a Hessian; ``weight >= 0``),
        as ``X' X`` with ``X = diag(sqrt(weight)) A`` (numpy computes ``X.T @ X`` as one symmetric rank-k update,
        half a general product's work).  When ``idx`` holds most terms the dense design is scaled whole with zero
        weights elsewhere rather than gathered (synthetic 10 + 10, N = 100,000: 76 -> 34 ms per Gram)."""
        if self.factored is not None:
            return self.factored.weighted_gram(idx, np.maximum(weight[idx], 0.0))
        root = np.sqrt(np.maximum(weight[idx], 0.0))
        if self.dense is not None and idx.size >= GATHER_FRACTION * self.n_terms:
            full = np.zeros(self.n_terms)
            full[idx] = root
            X = self.dense * full[:, None]
            return X.T @ X
        return self._scaled_gram(idx, root)

    def _scaled_gram(self, idx: np.ndarray, root: np.ndarray) -> np.ndarray:
        """``X' X`` for ``X = diag(root) A[idx]`` (a sparse design through :func:`sparse_gram`)."""
        if self.factored is not None:
            return self.factored.weighted_gram(idx, root * root)
        if self.dense is not None:
            X = self.dense[idx] * root[:, None]
            return X.T @ X
        return sparse_gram(self.A[idx], root)

    def curvature_gram(self, weight: np.ndarray) -> np.ndarray:
        """``sum_r w~_r a_r a_r'`` with every ``w~_r`` within ``CURVATURE_RTOL`` of ``weight_r`` (a weight per term,
        ``>= 0``; 0 leaves a term out): the Gram kept from the last call is corrected by
        ``sum_r (weight_r - w~_r) a_r a_r'`` over the terms whose weight moved by more than that, and computed
        afresh (:meth:`weighted_gram`) when more than ``CURVATURE_REFRESH`` of them did.  Since all weights are
        nonnegative, ``(1 - rtol) H <= H~ <= (1 + rtol) H`` for the exact Gram ``H``: a Newton step with ``H~``
        is a preconditioned step, fast-linear instead of quadratic, and the line search on the exact function
        keeps it safe.  Late in a centering 0-8 % of the loss curvatures move by 5 % per step (synthetic
        10 + 10, N = 100,000), so the Gram (a third of a Newton step) costs a few percent of itself."""
        weight = np.asarray(weight, dtype=float)
        old = self._gram_weight
        if old is not None:
            changed = np.flatnonzero(np.abs(weight - old) > CURVATURE_RTOL * np.maximum(weight, old))
            if changed.size <= CURVATURE_REFRESH * self.n_terms:
                if changed.size:
                    delta = weight[changed] - old[changed]          # a signed correction: +Gram(up) - Gram(down)
                    up = delta > 0
                    self._gram += self._scaled_gram(changed[up], np.sqrt(delta[up]))
                    self._gram -= self._scaled_gram(changed[~up], np.sqrt(-delta[~up]))
                    old[changed] = weight[changed]
                return self._gram.copy()
        self._gram = self.weighted_gram(np.flatnonzero(weight > 0), weight)
        self._gram_weight = weight.copy()
        return self._gram.copy()

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A x`` over the terms."""
        products = self.factored if self.factored is not None else self.changes
        if products is not None:
            return products.matvec(x)
        return self.A @ x if self.dense is None else self.dense @ x

    def matvec_T(self, w: np.ndarray) -> np.ndarray:
        """``A' w`` over the terms."""
        products = self.factored if self.factored is not None else self.changes
        if products is not None:
            return products.matvec_T(w)
        return self.A.T @ w if self.dense is None else self.dense.T @ w

    def row_dual(self, weight: np.ndarray, slope: np.ndarray):
        """Row masses and slopes from per-term weights ``weight`` (summing to 1 per sample): for a smooth loss
        ``m_r = p_n w_r`` and ``alpha_r = L'(u_r)``; for a piecewise-affine loss ``m_r = p_n sum_j w_{r,j}`` and
        ``alpha_r`` the weighted mean of the pieces' slopes (a point of the slope domain; the Lagrangian bound
        evaluates the exact conjugate there).  Returns ``(rows, mass, slopes)``."""
        rows = self.rows
        if self.slope is None:
            mass, slopes = weight, np.asarray(slope, dtype=float)
        else:
            a = np.asarray(self.inst.loss.pieces[0], dtype=float)
            mass = weight.reshape(-1, a.size).sum(axis=1)
            weighted = (weight * self.slope).reshape(-1, a.size).sum(axis=1)
            middle = np.full(rows.size, 0.5 * (a.min() + a.max()))
            slopes = np.divide(weighted, mass, out=middle, where=mass > 0)
        return rows, mass * self.inst.p[rows.sample], slopes


def cone_barrier_refusal(inst: DROInstance) -> Optional[str]:
    """Why :class:`ConeBarrier` (and so every Newton-type master built on it: phase 1, the barrier master, the slope
    split) does not apply to ``inst``, or ``None``: its barrier is written for the dual norms ``||.||_q`` of an l_p
    ground norm (:attr:`~drokit.metrics.norms.NumericalNorm.lp_exponent`); another numerical norm that prices a
    column steps aside to the conic masters."""
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    priced = inst.n_numerical and np.any(np.isfinite(gamma) & (gamma > 0))
    if priced and inst.metric.numerical.lp_exponent is None:
        return (f"the numerical cost {inst.metric.numerical!r} is not an l_p norm (the barrier is written for the "
                f"dual norms ||.||_q)")
    return None


class ConeBarrier:
    """``-mu sum_j log g_j(theta)`` for the constraints on ``(beta_x, lambda)``; value, gradient, Hessian.

    ``theta = (params, lambda)``; ``cols`` are the positions of the numerical coefficients with
    ``0 < gamma_j < inf`` in ``params``, ``w_j = lip beta_j / gamma_j``.  ``lambda > lam0``: ``lam0 = 0``, or
    ``lip / kappa`` in regression with a finite label cost (a label move of ``Delta`` at cost
    ``kappa |Delta|`` raises the loss by up to ``lip |Delta|``; :func:`drokit.evaluation.worst_case.lambda_floor`).
    """

    def __init__(self, inst: DROInstance, cols: np.ndarray, scale: np.ndarray, dim: int):
        self.cols, self.scale, self.dim = cols, scale, dim
        reason = cone_barrier_refusal(inst)
        if reason is not None:
            raise ParameterError(f"drokit's cone barrier does not apply: {reason}")
        q = inst.metric.numerical.lp_dual_exponent
        self.q = 2.0 if q is None else q                  # (no priced column: the cone is lambda > lam0 alone)
        kappa = float(inst.metric.kappa)
        self.lam0 = float(inst.loss.lipschitz) / kappa if not inst.is_classification and np.isfinite(kappa) else 0.0

    def feasible(self, theta: np.ndarray) -> bool:
        """Whether every barrier argument is positive, computed as :meth:`__call__` computes it (``lam^2 - ||w||^2``
        for the second-order cone, the smoothed norm for other ``q``): an exact-norm test passed points a hair outside
        the barrier's own domain (``log`` of a number that rounded to 0 or below: RuntimeWarnings and a ``nan``
        value, rejected only through its comparisons)."""
        lam = theta[-1]
        if lam <= self.lam0:
            return False
        if self.cols.size == 0:
            return True
        w = theta[self.cols] * self.scale
        if np.isinf(self.q):
            return bool(lam - np.max(np.abs(w)) > 0)
        if self.q == 2:
            return bool(lam ** 2 - float(w @ w) > 0)
        return bool(lam - float(np.sum(np.sqrt(w ** 2 + 1e-24) ** self.q) ** (1.0 / self.q)) > 0)

    def value(self, theta: np.ndarray, mu: float) -> float:
        """The barrier's value alone (a line search's)."""
        return float(self(theta, mu)[0])

    def __call__(self, theta: np.ndarray, mu: float):
        d = self.dim
        lam = theta[-1]
        grad = np.zeros(d)
        hess = np.zeros((d, d))
        value = -mu * np.log(lam - self.lam0)
        grad[-1] -= mu / (lam - self.lam0)
        hess[-1, -1] += mu / (lam - self.lam0) ** 2
        if self.cols.size == 0:
            return value, grad, hess
        w = theta[self.cols] * self.scale
        idx = np.r_[self.cols, d - 1]
        if np.isinf(self.q):   # lam - w_j > 0 and lam + w_j > 0, linear
            for sign in (-1.0, 1.0):
                g = lam + sign * w
                value -= mu * float(np.sum(np.log(g)))
                # d g / d beta_j = sign * scale_j, d g / d lam = 1
                grad[self.cols] -= mu * sign * self.scale / g
                grad[-1] -= mu * float(np.sum(1.0 / g))
                c = mu / g ** 2
                hess[self.cols, self.cols] += c * self.scale ** 2
                hess[self.cols, -1] += c * sign * self.scale
                hess[-1, self.cols] += c * sign * self.scale
                hess[-1, -1] += float(c.sum())
            return value, grad, hess
        if self.q == 2:        # second-order cone lam^2 - ||w||^2 > 0 (with lam > 0)
            g = lam ** 2 - float(w @ w)
            dg = np.r_[-2.0 * w * self.scale, 2.0 * lam]
            d2g = np.diag(np.r_[-2.0 * self.scale ** 2, 2.0])
        else:                  # lam - ||w||_q > 0; Gauss-Newton curvature (the norm's Hessian dropped)
            a = np.sqrt(w ** 2 + 1e-24)
            norm = float(np.sum(a ** self.q) ** (1.0 / self.q))
            g = lam - norm
            dnorm = (a / norm) ** (self.q - 1) * (w / a) * self.scale
            dg = np.r_[-dnorm, 1.0]
            d2g = np.zeros((idx.size, idx.size))
        value -= mu * np.log(g)
        grad[idx] -= mu * dg / g
        hess[np.ix_(idx, idx)] += mu * (np.outer(dg, dg) / g ** 2 - d2g / g)
        return value, grad, hess


def parameter_layout(inst: DROInstance):
    """``(offset, dim, free, cone)`` of ``theta = (beta_0, beta, lambda)`` for drokit's Newton-type masters:
    ``offset`` 1 with an intercept, ``dim = len(theta)``, ``free`` the coordinates that move (a numerical
    feature with weight ``gamma_j = 0`` moves at no cost, so ``beta_j = 0``), and the :class:`ConeBarrier` of the
    norm-priced numerical coefficients (``0 < gamma_j < inf``, ``w_j = lip beta_j / gamma_j``)."""
    offset = 1 if inst.fit_intercept else 0
    dim = offset + inst.schema.n_encoded + 1
    gamma = np.asarray(inst.metric.gamma, dtype=float)
    numerical = np.arange(inst.n_numerical)
    fixed = offset + numerical[gamma == 0]
    limited = numerical[np.isfinite(gamma) & (gamma > 0)]
    cone = ConeBarrier(inst, offset + limited, float(inst.loss.lipschitz) / gamma[limited], dim)
    return offset, dim, np.setdiff1d(np.arange(dim), fixed), cone


def split_theta(inst: DROInstance, theta: np.ndarray) -> Tuple[float, np.ndarray, float]:
    """``(beta_0, beta, lambda)`` of ``theta`` in :func:`parameter_layout`'s order (``beta_0 = 0`` without an
    intercept)."""
    offset = 1 if inst.fit_intercept else 0
    return (float(theta[0]) if offset else 0.0), theta[offset:-1], float(theta[-1])


class TrustBox:
    """``-mu sum_j [log(r_j - (theta_j - c_j)) + log(r_j + (theta_j - c_j))]`` over the coordinates ``coords``:
    the barrier of a box-step trust region ``|theta_j - c_j| < r_j``."""

    def __init__(self, coords: np.ndarray, center: np.ndarray, radius: np.ndarray):
        self.coords, self.center, self.radius = coords, np.asarray(center, dtype=float), np.asarray(radius, dtype=float)

    def offsets(self, theta: np.ndarray) -> np.ndarray:
        return theta[self.coords] - self.center

    def feasible(self, theta: np.ndarray) -> bool:
        return bool(np.all(np.abs(self.offsets(theta)) < self.radius))

    def reach(self, theta: np.ndarray) -> float:
        return float(np.max(np.abs(self.offsets(theta)) / self.radius, initial=0.0))

    def __call__(self, theta: np.ndarray, mu: float):
        d = self.offsets(theta)
        hi, lo = self.radius - d, self.radius + d
        grad = np.zeros(theta.size)
        hess = np.zeros(theta.size)
        grad[self.coords] = mu * (1.0 / hi - 1.0 / lo)
        hess[self.coords] = mu * (1.0 / hi ** 2 + 1.0 / lo ** 2)
        return -mu * float(np.sum(np.log(hi) + np.log(lo))), grad, hess
