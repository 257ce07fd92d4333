"""The certificate of MOT-DRO's slope-cut masters (:mod:`.mot_slope_cuts`, :mod:`.mot_slope_search`): a linear
relaxation of the conic master solved by the dual simplex, whose vertex dual point of (D) is evaluated exactly.

An interior-point dual of the conic master satisfies the stationarity in the coefficients only to
the solver's tolerance (1e-9), and the repair of :func:`~drokit.certificates.mot_lower_bound.mot_lagrangian_bound`,
which needs ``1e-12``, fails where only rows at the ends of the slope domain tell duplicated columns apart (audiology
has such features).  So the bound comes from a *linear* relaxation of the master solved by the dual simplex
(HiGHS): the same cuts, and the aggregate ``A(s, h) = max_{W in simplex} sum_n W_n s_n - h sum_n psi_n(W_n)``,
``psi_n(W) = p_n phi(W / p_n)``, with each ``W_n`` restricted to a grid around the conic master's weights ``W0_n``
and ``psi_n`` replaced by its chords there (above ``psi_n``: a smaller aggregate, so a relaxation):

    min  mu rho / theta1 + alpha + sum_n t_n
    s.t. t_n >= W_nk s_n - W_nk alpha - (theta2 / theta1) psi_nk mu     for every grid point W_nk of sample n,
         the cuts, the level rows, the dual-norm rows of the numerical features (an LP for ground norm p = 1 or inf).

Its vertex dual is exact: the cut multipliers are masses at the cuts' slopes, the pair multipliers the mass that
changes each feature, the level rows' multipliers the levels it goes to, as in the Wasserstein LP
(:meth:`.slope_cut_master.SlopeCutMaster.dual_point`; here :meth:`.mot_slope_cuts.MOTSlopeCuts.dual_point`):
fractional rows (:class:`~drokit.oracles.rows.FractionalRows`) whose masses per sample are a point ``W`` of the grid's
hull.  :func:`~drokit.certificates.mot_lower_bound.
mot_lagrangian_bound` evaluates this dual point of (D) exactly (``psi_n(W_n)`` itself, below the chord that the LP
charged, so the budget holds): the lower bound that certifies, whatever the tolerances of either solver.  At the
conic master's optimum the weights ``W*`` lie inside the grid's hull and the chords' excess is ``~ eps^2 / 8``
(:data:`GRID_STEPS`), so the bound meets the master's value.  With CVaR's bound (``W_n <= p_n / level``, no price)
the grid is the interval's ends, its hull the whole interval; with ``theta2 = inf`` the single point ``p_n``.

The linear program is a relaxation of the cuts' model, and that model can be nearly flat far from the conic master's
box (cuts made without the ``y_l`` of features far from changing): its minimizer runs there (coefficients of 1e7 on
audiology).  :func:`mot_slope_certificate` keeps ``theta`` within a large box (:data:`LP_BOX`; its bounds' duals
are not part of the dual point, so a box that binds only means another round) and, at a minimizer far away, adds the
pairs left out that would change there and the oracle's cuts, re-solving from the last basis until it comes back.
"""

from __future__ import annotations

import time
from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ..certificates.lagrangian import LowerBound
from ..certificates.mot_lower_bound import mot_lagrangian_bound
from ..gaps import gap_scale
from .mot_slope_cuts import Columns, MOTSlopeCuts

#: relative offsets of the certificate LP's weight grid around the conic master's weights ``W0_n`` (and 0): the
#: chord between ``W0 (1 +- 1e-5)`` overestimates ``psi_n`` by at most ``(1e-5)^2 W0 / 8`` (KL), and the wider points
#: let the LP reach weights that the conic master's accuracy misplaced
GRID_STEPS = (1e-5, 1e-3, 1e-1)
#: the certificate's LP keeps ``theta`` within this many times ``max(1, max |theta_c|)`` of the best point ``theta_c``:
#: along a direction that the cuts leave nearly flat the LP's minimizer ran to coefficients of 1e7 and HiGHS failed
#: on it (audiology, KL 0.05).  Its dual point ignores these bounds: one that binds is a point far away where pairs and
#: cuts join, as any other (docstring of :func:`mot_slope_certificate`)
LP_BOX = 100.0


def mot_slope_certificate(cuts: MOTSlopeCuts, weights: np.ndarray, oracle=None, tol: float = 1e-9,
                          upper: float = np.inf, gap_tol: float = 0.0, center: Optional[np.ndarray] = None,
                          time_limit: float = np.inf, max_rounds: int = 30,
                          log=None) -> Tuple[Optional[LowerBound], dict]:
    """The best bound of the LP relaxation's dual points (module docstring) over the slope cuts ``cuts``, with the
    weight grid around ``weights`` (the conic master's ``W0``): ``(bound or None, info)``.  Each LP's dual point is
    evaluated (:func:`~drokit.certificates.mot_lower_bound.mot_lagrangian_bound`); it returns once one is within
    ``gap_tol`` of ``upper`` (relative, :mod:`drokit.gaps`).  Otherwise, while the LP's minimizer has a pair left out
    by :data:`~.slope_cut_master.KEEP_MARGIN` worth changing there (the LP, exact, finds the nearly flat directions
    that those leave far from the conic master's box), or a sample whose maximum there (``oracle``) exceeds its
    ``s_n`` by more than ``tol``, they join (:meth:`~.mot_slope_cuts.MOTSlopeCuts.complete_pairs`,
    :meth:`~.mot_slope_cuts.MOTSlopeCuts.add_violated`) and the LP is solved again from its last basis."""
    t_start = time.perf_counter()
    lp = _CertificateLP(cuts, weights, center)
    info = {"rounds": 0, "lp_seconds": 0.0}
    best: Optional[LowerBound] = None
    for round_ in range(1, max_rounds + 1):
        remaining = time_limit - (time.perf_counter() - t_start)
        if remaining <= 0:
            info["status"] = "time limit"
            break
        x, row_dual, seconds, status = lp.solve(remaining)
        info.update(rounds=round_, status=status, lp_rows=lp.n_rows, lp_columns=lp.n_cols)
        info["lp_seconds"] += seconds
        if x is None:
            break
        info["value"] = lp.value
        rows, mass, slopes = cuts.dual_point(row_dual, lp.cut_row, lp.pair_row, lp.level_row, lp.bound_row)
        if mass.sum() > 0:
            bound = mot_lagrangian_bound(cuts.inst, rows, mass, slopes, rho=cuts.rho, theta1=cuts.theta1,
                                         theta2=cuts.theta2, divergence=cuts.divergence)
            if best is None or bound.value > best.value:
                best = bound
        theta, mu, s = x[: cuts.n_theta], float(x[cuts.n_theta]), x[lp.cols.s]
        done = best is not None and upper - best.value <= gap_tol * gap_scale(upper)
        pairs_before, cuts_before = cuts.pair_cut.size, cuts.n_cuts
        added_pairs = 0 if done else cuts.complete_pairs(theta, mu)
        added_cuts = 0 if done or oracle is None else cuts.add_violated(oracle, theta, mu, s, tol)
        if log is not None:
            log(f"mot certificate LP {round_}: {status} {lp.value:.9f} (max |theta| "
                f"{np.max(np.abs(theta), initial=0.0):.3g}), bound "
                f"{best.value if best is not None else -np.inf:.9f}, +{added_pairs} pairs, +{added_cuts} cuts "
                f"({seconds:.2f} s)")
        if done or not (added_pairs or added_cuts):
            break
        lp.extend(cuts_before, pairs_before)
    info["seconds"] = time.perf_counter() - t_start
    return best, info


class _CertificateLP:
    """The certificate's LP in HiGHS (module docstring), extended in place as pairs and cuts join (the dual simplex
    restarts from the last basis).  Columns ``[theta, mu, s, M+, M-, alpha, t (N), norm auxiliaries, y ...]``; rows:
    the level rows and bounds, the weight grid's rows, the dual-norm rows, then the cuts' main rows and the pairs'
    rows as they come (``cut_row``, ``pair_row``)."""

    def __init__(self, cuts: MOTSlopeCuts, weights: np.ndarray, center: Optional[np.ndarray] = None):
        import highspy
        from ..solvers.highs import new_highs
        self.cuts, self.highspy = cuts, highspy
        inst = cuts.inst
        N, p = inst.n_samples, inst.p
        W0 = np.maximum(np.asarray(weights, dtype=float), 0.0)
        W0 = W0 / W0.sum() if W0.sum() > 0 else p.copy()
        if np.isfinite(cuts.theta2) and cuts.divergence.free_reweighting:
            # CVaR: the weights' bound W_n <= p_n / level and no price, so the grid's ends are the whole interval
            grid, psi, ratio = np.column_stack([np.zeros(N), p / cuts.divergence.validated_level()]), np.zeros((N, 2)), 0.0
        elif np.isfinite(cuts.theta2):
            factors = np.concatenate([[1.0], *[[1.0 - e, 1.0 + e] for e in GRID_STEPS]])
            grid = np.concatenate([np.zeros((N, 1)), W0[:, None] * factors[None, :]], axis=1)      # (N, G)
            ratio_w = np.divide(grid, p[:, None], out=np.ones_like(grid), where=p[:, None] > 0)   # weight 0: no term
            psi = p[:, None] * cuts.divergence.value(ratio_w)
            ratio = cuts.theta2 / cuts.theta1
        else:                               # weights fixed at 1: W = p, no price
            grid, psi, ratio = p[:, None].copy(), np.zeros((N, 1)), 0.0
        n_norm = cuts.limited.size if cuts.limited.size and inst.metric.numerical.lp_dual_exponent != np.inf else 0
        base = cuts.columns()
        self.c_alpha = base.n
        self.c_t = base.n + 1 + np.arange(N)
        self.c_norm = base.n + 1 + N + np.arange(n_norm)
        self.cols = cuts.columns(1 + N + n_norm)
        n_cols = self.cols.n
        inf = highspy.kHighsInf
        cost = np.zeros(n_cols)
        cost[self.cols.mu] = cuts.rho / cuts.theta1
        cost[self.c_alpha] = 1.0
        cost[self.c_t] = 1.0
        lo, hi = np.full(n_cols, -inf), np.full(n_cols, inf)
        lo[self.cols.mu] = 0.0
        if center is not None:        # a box far around the best point: no 1e7 coefficients along flat directions
            reach = LP_BOX * max(1.0, float(np.max(np.abs(center), initial=0.0)))
            lo[: cuts.n_theta], hi[: cuts.n_theta] = center - reach, center + reach
        lo[cuts.fixed], hi[cuts.fixed] = 0.0, 0.0
        lo[self.c_norm] = 0.0
        h = self.h = new_highs(highspy)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.addCols(n_cols, cost, lo, hi, 0, np.zeros(n_cols, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.n_cols, self.n_rows = n_cols, 0
        levels, self.bound_row = cuts.level_rows(self.cols)
        self.level_row = 0
        G = grid.shape[1]
        gr = np.arange(N * G)
        n_of = np.repeat(np.arange(N), G)
        Wg = grid.ravel()
        grid_rows = sp.csr_matrix((np.concatenate([np.ones(N * G), -Wg, Wg, ratio * psi.ravel()]),
                                   (np.tile(gr, 4), np.concatenate([self.c_t[n_of], self.cols.s[n_of],
                                                                    np.full(N * G, self.c_alpha),
                                                                    np.full(N * G, self.cols.mu)]))),
                                  shape=(N * G, n_cols))
        blocks, lower = [levels, grid_rows], [np.zeros(levels.shape[0]), np.zeros(N * G)]
        norm = self._norm_rows()
        if norm is not None:
            blocks.append(norm)
            lower.append(np.zeros(norm.shape[0]))
        self._add_rows(sp.vstack(blocks, format="csr"), np.concatenate(lower))
        self.cut_row = np.zeros(0, dtype=int)
        self.pair_row = np.zeros(0, dtype=int)
        self.pair_col = np.zeros(0, dtype=int)
        self.value = np.nan
        self.extend(0, 0)

    def _add_rows(self, A: sp.csr_matrix, lower: np.ndarray) -> np.ndarray:
        A = sp.csr_matrix(A)
        A.sort_indices()
        inf = self.highspy.kHighsInf
        self.h.addRows(A.shape[0], lower, np.full(A.shape[0], inf), A.nnz, A.indptr[:-1].astype(np.int32),
                       A.indices.astype(np.int32), A.data)
        rows = self.n_rows + np.arange(A.shape[0])
        self.n_rows += A.shape[0]
        return rows

    def _norm_rows(self) -> Optional[sp.csr_matrix]:
        """The dual-norm rows of the norm-priced numerical coefficients: ``mu -+ lip beta_j / gamma_j >= 0`` (ground
        norm p = 1, dual l_inf) or ``r_j -+ beta_j / gamma_j >= 0``, ``mu - lip sum_j r_j >= 0`` (p = inf, dual
        l_1); ``None`` without them."""
        cuts = self.cuts
        if not cuts.limited.size:
            return None
        inst = cuts.inst
        lip = float(inst.loss.lipschitz)
        g = np.asarray(inst.metric.gamma, dtype=float)[cuts.limited - cuts.offset]
        q, mu, j = cuts.limited.size, self.cols.mu, cuts.limited
        rr = np.arange(2 * q)
        if not self.c_norm.size:
            return sp.csr_matrix((np.concatenate([np.r_[-lip / g, lip / g], np.ones(2 * q)]),
                                  (np.tile(rr, 2), np.concatenate([np.r_[j, j], np.full(2 * q, mu)]))),
                                 shape=(2 * q, self.n_cols))
        aux = self.c_norm
        r = [np.tile(rr, 2), np.full(q + 1, 2 * q)]
        c = [np.concatenate([np.r_[j, j], np.r_[aux, aux]]), np.r_[mu, aux]]
        v = [np.concatenate([np.r_[-1 / g, 1 / g], np.ones(2 * q)]), np.r_[1.0, -lip * np.ones(q)]]
        return sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))),
                             shape=(2 * q + 1, self.n_cols))

    def extend(self, old_cuts: int, old_pairs: int) -> None:
        """The cuts from ``old_cuts`` and the pairs from ``old_pairs`` on (of :class:`MOTSlopeCuts`' arrays) join:
        a ``y`` column per pair, the new cuts' main rows, the pairs' rows, and ``-y`` in the main row of an older
        cut that gains a pair."""
        cuts = self.cuts
        new_pairs = np.arange(old_pairs, cuts.pair_cut.size)
        new_cuts = np.arange(old_cuts, cuts.n_cuts)
        P = new_pairs.size
        inf = self.highspy.kHighsInf
        if P:
            self.h.addCols(P, np.zeros(P), np.zeros(P), np.full(P, inf), 0, np.zeros(P, dtype=np.int32),
                           np.zeros(0, dtype=np.int32), np.zeros(0))
            y_cols = self.n_cols + np.arange(P)
            self.n_cols += P
            self.pair_col = np.r_[self.pair_col, y_cols]
        cols = Columns(self.cols.mu, self.cols.s, self.cols.up, self.cols.down, self.n_cols)
        owner = cuts.pair_cut[new_pairs]
        if new_cuts.size:
            main, k = cuts.main_rows(new_cuts, cols)
            mine = owner >= old_cuts
            own = sp.csr_matrix((-np.ones(int(mine.sum())), (owner[mine] - old_cuts, self.pair_col[new_pairs[mine]])),
                                shape=main.shape)
            main = main + own
            self.cut_row = np.r_[self.cut_row, self._add_rows(main, -k)]
        for pair in new_pairs[owner < old_cuts]:          # an older cut gains a y
            self.h.changeCoeff(int(self.cut_row[cuts.pair_cut[pair]]), int(self.pair_col[pair]), -1.0)
        if P:
            y = sp.csr_matrix((np.ones(P), (np.arange(P), self.pair_col[new_pairs])), shape=(P, cols.n))
            rows = cuts.pair_rows(new_pairs, cols) + y
            self.pair_row = np.r_[self.pair_row, self._add_rows(rows, np.zeros(P))]

    def solve(self, time_limit: float = np.inf):
        """``(x, row duals, seconds, status)``; ``x`` None when HiGHS does not end optimal."""
        h = self.h
        h.setOptionValue("time_limit", float(time_limit) if np.isfinite(time_limit) else self.highspy.kHighsInf)
        t0 = time.perf_counter()
        h.run()
        status = h.getModelStatus()
        if status != self.highspy.HighsModelStatus.kOptimal and time.perf_counter() - t0 < time_limit:
            h.clearSolver()              # once more from scratch, without presolve
            h.setOptionValue("presolve", "off")
            h.run()
            h.setOptionValue("presolve", "choose")
            status = h.getModelStatus()
        seconds = time.perf_counter() - t0
        if status != self.highspy.HighsModelStatus.kOptimal:
            return None, None, seconds, h.modelStatusToString(status)
        self.value = float(h.getInfo().objective_function_value)
        solution = h.getSolution()
        return np.asarray(solution.col_value), np.asarray(solution.row_dual), seconds, "optimal"


__all__ = ["mot_slope_certificate", "GRID_STEPS", "LP_BOX"]
