"""The barrier master's restricted problem in its own variables: ``f_mu`` with the epigraph levels eliminated.

Over a working set of configuration rows (their terms ``v_r(theta)``, :mod:`.row_terms`),

    f_mu(theta, s) = eps lambda + sum_n p_n s_n - mu sum_r log(s_n - v_r(theta)) + B_mu(theta),

and every ``s_n`` couples with ``theta`` only: :func:`epigraph_levels` finds each sample's minimizing ``s_n`` exactly
(vectorized over the samples), so :class:`EpigraphBarrier` evaluates ``phi_mu(theta) = min_s f_mu(theta, s)`` and its
reduced Newton step (the Schur complement at ``s*``).  The method that drives it is :mod:`.barrier_master`; the
formulas are in its module docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..instance import DROInstance
from ..oracles.enumeration import ConfigurationRows
from .row_terms import CodeLayout, ConeBarrier, RowTerms, TrustBox

#: safeguarded Newton iterations of :meth:`EpigraphBarrier.epigraph` at most (it stops when ``t`` moves by less
#: than 1e-13 relative; Newton from the left end of the bracket converges in a handful)
EPIGRAPH_ITERATIONS = 60
#: terms with a weight ``mu w_r`` below this times ``p_n`` are left out of the loss-curvature Gram product
CURVATURE_DROP = 1e-12


@dataclass
class SampleGroups:
    """Terms grouped by sample (``starts`` of consecutive segments, weights ``p``): the samples with one term and
    their term, and for the others their terms, counts and offsets (what :func:`epigraph_levels` vectorizes over)."""

    starts: np.ndarray
    segment: np.ndarray
    p: np.ndarray
    single: np.ndarray
    single_term: np.ndarray
    multi_terms: np.ndarray
    multi_samples: np.ndarray
    multi_counts: np.ndarray
    multi_starts: np.ndarray
    multi_owner: np.ndarray

    @staticmethod
    def of(starts: np.ndarray, n_terms: int, p: np.ndarray) -> "SampleGroups":
        counts = np.diff(np.r_[starts, n_terms])
        segment = np.repeat(np.arange(starts.size), counts)
        single = np.flatnonzero(counts == 1)
        multi_samples = np.flatnonzero(counts >= 2)
        multi_counts = counts[multi_samples]
        return SampleGroups(starts=starts, segment=segment, p=p, single=single, single_term=starts[single],
                       multi_terms=np.flatnonzero(counts[segment] >= 2), multi_samples=multi_samples,
                       multi_counts=multi_counts,
                       multi_starts=np.r_[0, np.cumsum(multi_counts)[:-1]].astype(int),     # within multi_terms
                       multi_owner=np.repeat(np.arange(multi_samples.size), multi_counts))


def epigraph_levels(groups: SampleGroups, v: np.ndarray, mu: float) -> Tuple[np.ndarray, np.ndarray]:
    """Per sample, the exact minimizer ``s_n`` of ``p_n s - mu sum_{r of n} log(s - v_r)``: the root of
    ``sum_r 1 / (s - v_r) = p_n / mu`` above ``max_r v_r``; returns ``(s, slacks s_n - v_r)``.  One term:
    ``s_n = v_r + mu / p_n``.  More terms: safeguarded Newton in ``t = log(s - max_r v_r)`` on
    ``log sum_r 1 / (s - v_r) - log(p_n / mu)`` (decreasing in ``t``; the root lies in
    ``[log(mu / p_n), log(k_n mu / p_n)]`` for ``k_n`` terms, so bisection keeps every iterate inside),
    vectorized over the samples.  The slacks are formed as ``(max v - v_r) + e^t``, not ``s_n - v_r``: with
    ``mu / p_n`` near 1e-10 the subtraction would leave them (and the masses ``mu / slack``) only 1e-7
    accurate."""
    top = np.maximum.reduceat(v, groups.starts)
    excess = mu / groups.p                                     # s_n - max_r v_r
    if groups.multi_terms.size:
        terms, first, owner = groups.multi_terms, groups.multi_starts, groups.multi_owner
        samples = groups.multi_samples
        gap = top[samples][owner] - v[terms]                   # >= 0, 0 at the maximum
        target = np.log(groups.p[samples] / mu)
        lo = -target                                           # log(mu / p): the sum is >= p / mu here
        hi = lo + np.log(groups.multi_counts)                  # log(k mu / p): the sum is <= p / mu here
        t = lo.copy()
        for _ in range(EPIGRAPH_ITERATIONS):
            e = np.exp(t)
            d = gap + e[owner]
            a = np.add.reduceat(1.0 / d, first)
            h = np.log(a) - target
            lo = np.where(h >= 0, t, lo)
            hi = np.where(h <= 0, t, hi)
            newton = t + h * a / (e * np.add.reduceat(1.0 / (d * d), first))
            t_new = np.where((newton > lo) & (newton < hi), newton, 0.5 * (lo + hi))
            done = np.max(np.abs(t_new - t)) <= 1e-13 * max(1.0, float(np.max(np.abs(t))))
            t = t_new
            if done:
                break
        excess = excess.copy()
        excess[samples] = np.exp(t)
    slack = (top[groups.segment] - v) + excess[groups.segment]
    return top + excess, slack


class EpigraphBarrier(RowTerms):
    """``f_mu`` over a working set: value, and the Newton direction by the Schur complement (module
    docstring)."""

    def __init__(self, inst: DROInstance, rows: ConfigurationRows, free: np.ndarray,
                 barrier: ConeBarrier, layout: Optional[CodeLayout] = None, factored: Optional[bool] = None):
        super().__init__(inst, rows, layout, factored=factored)
        if self.starts.size != inst.n_samples:
            raise ValueError("the barrier master's working set needs a row of every sample (the nominal rows)")
        self.free, self.barrier = free, barrier
        self.p = inst.p                                         # segments are the samples, in order
        self.center, self.prox = None, 0.0                      # proximal term prox/2 ||theta - center||^2
        self.box: Optional[TrustBox] = None                     # the trust region's barrier
        self.groups = SampleGroups.of(self.starts, self.n_terms, self.p)
        self.single, self.single_term = self.groups.single, self.groups.single_term
        self.multi_terms = self.groups.multi_terms

    def _prox(self, theta: np.ndarray) -> float:
        if not self.prox:
            return 0.0
        d = theta - self.center
        return 0.5 * self.prox * float(d @ d)

    def slacks(self, theta: np.ndarray, s: np.ndarray):
        u, ell, slope, curv = self.terms(theta)
        return s[self.segment] - (ell - theta[-1] * self.cost), slope, curv

    def epigraph(self, v: np.ndarray, mu: float) -> Tuple[np.ndarray, np.ndarray]:
        """Per sample, the exact minimizer ``s_n`` of ``p_n s - mu sum_{r of n} log(s - v_r)`` and the slacks
        (:func:`epigraph_levels`)."""
        return epigraph_levels(self.groups, v, mu)

    def terms_touching(self, columns: np.ndarray) -> np.ndarray:
        """The terms of every sample with a term whose design row is nonzero in one of ``columns`` (sorted): the
        terms whose ``v_r`` or epigraph level moves when only those parameters move."""
        if self.factored is not None:
            hit = self.factored.terms_with_columns(columns)
        elif self.dense is not None:
            hit = np.flatnonzero(np.any(self.dense[:, columns] != 0, axis=1))
        else:
            hit = np.flatnonzero(np.diff(self.A[:, columns].tocsr().indptr) > 0)
        touched = np.zeros(self.starts.size, dtype=bool)
        touched[self.segment[hit]] = True
        return np.flatnonzero(touched[self.segment])

    def settled(self, theta: np.ndarray, mu: float):
        """``(phi_mu(theta), s*(theta), (slacks, margins u))``: ``f_mu`` minimized over ``s`` exactly
        (:meth:`epigraph`), a smooth convex function of ``theta`` alone, finite wherever the cone barrier is.
        Newton then runs on ``theta`` with the reduced Hessian of the module docstring (the Schur complement at
        ``s*``, where ``g_s = 0``), and the line search is never cut by an epigraph slack: Newton on
        ``(theta, s)`` moved ``s_n`` by the linearization ``G_n . dtheta``, which brought a sample's other rows to
        their boundary, so steps were halved for 20-36 steps on synthetic 10 + 10, N = 100,000, and single-term
        slacks lagged ``mu`` after every cut.  The last item is what :meth:`direction` needs at ``theta``."""
        if not epigraph_feasible(self, theta):
            return np.inf, None, None
        sums, s, at = self.data_settled(theta, mu)
        if s is None:
            return np.inf, None, None
        return epigraph_value(self, theta, mu, sums), s, at

    def data_settled(self, theta: np.ndarray, mu: float):
        """The samples' part of :meth:`settled`: ``([sum_n p_n s*_n, mu sum_r log d_r], s*, (slacks, margins u))``
        (``(None, None, None)`` where a slack is not positive); sums over samples (:mod:`.partition_fit`)."""
        u, ell, _, _ = self.terms(theta, derivatives=False)
        v = ell - theta[-1] * self.cost
        s, slack = self.epigraph(v, mu)
        if not np.all(slack > 0):
            return None, None, None
        return np.array([self.p @ s, mu * np.sum(np.log(slack))]), s, (slack, u)

    def direction(self, theta: np.ndarray, s: np.ndarray, mu: float, at: Optional[tuple] = None):
        """``(dtheta, decrement^2, weights w_r, slopes)`` of the reduced Newton step at ``(theta, s)``, ``s`` the
        exact epigraph levels :meth:`epigraph` (``g_s`` is then 0 up to their rounding; it is kept in the reduced
        gradient)."""
        g_t, schur, curvature, w, slope = self.data_direction(theta, s, mu, at)
        dtheta, decrement2 = epigraph_step(self, theta, mu, g_t, schur, curvature)
        return dtheta, decrement2, w, slope

    def data_direction(self, theta: np.ndarray, s: np.ndarray, mu: float, at: Optional[tuple] = None):
        """The samples' part of :meth:`direction`: ``(g_theta, (G' g_s, centered Gram) or None, curvature Gram or None,
        w, slopes)``, the gradient without ``lambda eps``, the barriers and the proximal term (sums over samples:
        :mod:`.partition_fit`; :func:`epigraph_step` completes them)."""
        D = theta.size
        if at is None:
            slack, slope, curv = self.slacks(theta, s)
        else:                                  # (slacks, margins u) at theta, from settled()
            slack, (slope, curv) = at[0], self.slopes(at[1])
        w = 1.0 / slack
        w2 = w * w
        ss = slope * self.sigma
        # gradients
        mw = mu * w
        g_s = self.p - np.add.reduceat(mw, self.starts)
        # g_theta + G' g_s in one product over the terms: a sample with one term r has G_n = J_r, so its
        # ``g_{s,n}`` joins that term's weight (the samples with more terms add G_multi' g_s below)
        one, lone = self.single_term, self.single
        term_weight = mw.copy()
        term_weight[one] += g_s[lone]
        g_t = np.empty(D)
        g_t[:-1] = self.matvec_T(term_weight * ss)
        g_t[-1] = -float(term_weight @ self.cost)
        # G_n: w^2-weighted means of J_r = [ss_r a_r, -c_r] per sample with two terms or more (the single-term
        # samples' G_n are never built row by row: at N = 100,000 that copy was 29 % of a Newton step)
        schur = curvature = None
        if self.multi_terms.size:
            gram, G_gs = self.centered_gram(self.multi_terms, ss, w2, mu * w2, g_s)
            schur = (G_gs, gram)
        if curv is not None:
            weight = mw * curv
            curvature = self.curvature_gram(np.where(weight > CURVATURE_DROP * self.p[self.segment], weight, 0.0))
        return g_t, schur, curvature, w, slope


def epigraph_feasible(master, theta: np.ndarray) -> bool:
    """Whether ``theta`` is inside the cone barrier's region and the trust box (``master.box``, if any)."""
    return master.barrier.feasible(theta) and (master.box is None or master.box.feasible(theta))


def epigraph_value(master, theta: np.ndarray, mu: float, sums: np.ndarray) -> float:
    """``phi_mu(theta)`` from the samples' sums ``[sum_n p_n s*_n, mu sum_r log d_r]`` (:meth:`EpigraphBarrier.
    data_settled`, or their sums over partitions) and the parts that are not sums over samples: ``lambda eps``, the
    cone barrier, the trust box's and the proximal term (``master``: anything with ``inst.radius``, ``barrier``,
    ``box``, ``center``, ``prox``)."""
    bv = master.barrier.value(theta, mu)
    if master.box is not None:
        bv += master.box(theta, mu)[0]
    value = float(theta[-1] * master.inst.radius + sums[0] - sums[1] + bv)
    if master.prox:
        d = theta - master.center
        value += 0.5 * master.prox * float(d @ d)
    return value


def epigraph_step(master, theta: np.ndarray, mu: float, g_t: np.ndarray, schur, curvature):
    """``(dtheta, decrement^2)``: the reduced Newton step from the samples' parts (:meth:`EpigraphBarrier.
    data_direction`, or their sums over partitions: the gradient ``g_t``, ``schur = (G' g_s, centered Gram)`` of the
    samples with two terms or more, the loss curvature's Gram) completed with ``lambda eps``, the barriers and the
    proximal term, solved on the free coordinates (diagonally scaled)."""
    D = theta.size
    g_t = g_t.copy()
    g_t[-1] += float(master.inst.radius)
    _, bg, bh = master.barrier(theta, mu)
    g_t += bg
    if master.box is not None:
        _, box_g, box_h = master.box(theta, mu)
        g_t += box_g
        bh = bh + np.diag(box_h)
    if master.prox:
        g_t += master.prox * (theta - master.center)
        bh = bh + master.prox * np.eye(D)
    S = bh.copy()
    g_red = g_t.copy()
    if schur is not None:
        S += schur[1]
        g_red += schur[0]
    if curvature is not None:
        S[:-1, :-1] += curvature
    free = master.free
    Sf = S[np.ix_(free, free)]
    diag = np.sqrt(np.maximum(np.diag(Sf), 1e-300))
    try:
        step = np.linalg.solve(Sf / np.outer(diag, diag) + 1e-13 * np.eye(free.size), -g_red[free] / diag) / diag
    except np.linalg.LinAlgError:
        step = -g_red[free] / diag ** 2
    dtheta = np.zeros(D)
    dtheta[free] = step
    return dtheta, -float(g_red @ dtheta)
