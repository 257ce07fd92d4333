"""A rigorous lower bound for MOT-DRO: an explicit dual point of program (D), repaired and evaluated exactly.

Program (D) of ``spec/mot-dro-training.md`` §2 (:mod:`drokit.reformulations.mot_dual`) over every configuration row
``k`` (sample ``n_k``, loss argument ``u_k = sigma_k theta' a_k - shift_k``, ground cost ``c_k``):

    min   lambda rho + alpha + sum_n p_n h phi*((s_n - alpha) / h)          h = lambda theta2
    s.t.  s_{n_k} >= L(u_k) - lambda theta1 c_k,      lip ||Gamma^{-1} beta_L||_* <= lambda theta1,      lambda >= 0.

Its Lagrangian with masses ``m_k >= 0`` on the row constraints, minimized over ``s`` (the conjugate of ``phi*`` is
``phi``: ``min_s p h phi*((s - alpha)/h) - M s = -M alpha - h p phi(M / p)``), over ``alpha`` (``sum_k m_k = 1``: the
moment ``E[W] = 1``), over ``beta`` with Fenchel's inequality ``L(u) >= alpha_k u - L*(alpha_k)`` and over ``lambda``:

    OPT >= sum_k m_k (-alpha_k shift_k - L*(alpha_k))
          + lambda_0 (rho - spent)     (regression with a finite label cost: lambda_0 = lip / (theta1 kappa); else 0)
    when  g_F = sum_k m_k alpha_k sigma_k a_{k,F} = 0   (free columns: intercept, dummies, immutable numerical ones)
    and   spent = theta1 (sum_k m_k c_k + ||Gamma g_L||_p / lip) + theta2 sum_n p_n phi(W_n) <= rho,
          W_n = sum_{k of n} m_k / p_n  (the weights; ``theta2 = inf``: ``W = 1``, no term).

With ``theta1 = inf`` only the nominal rows (cost 0) exist and no numerical cone: every unfixed column is free.  The
point is made feasible as the Wasserstein certificate's (:mod:`.lagrangian`): the slopes are repaired until ``g_F = 0``
(:func:`~drokit.certificates.repair.repair_free_columns`), and an overspent budget is met by mixing with the nominal
rows at weight 1 and slope 0, ``m' = t m + (1 - t) p``: ``g`` and the transport scale by ``t``, ``phi(t W + 1 - t)
<= t phi(W)`` (convex, ``phi(1) = 0``), so ``t = rho / spent`` is feasible and the value becomes ``t value - (1 - t)
L*(0)``.

The masses come from the model's worst case (:func:`~drokit.certificates.mot_worst_case.worst_case_atoms`: ``p_n w_n``
at each sample's maximizer, the tied samples split to spend the budget), the slopes from ``L'(u_k)``, then the
weighted ERM's (:mod:`.erm_polish`) where it applies; the larger bound is kept.  At an optimal model these are the
KKT multipliers of (D), so the bound meets the upper bound up to the model's optimization error.

Where the optimum's multipliers spread over ties the worst case names one at a time (a sample's mass over tied rows,
CVaR's samples at the value at risk, slopes at a kink of a piecewise-affine loss), a restricted dual chooses them
(:func:`mot_kkt_multipliers`, a small conic program; :func:`mot_certified_lower_bound` stops at the first point within
the tolerance): first over the tied samples alone, the settled ones held at their worst-case mass and slope
(:func:`held_samples`: about a dozen rows at 1,000 or 10,000 samples, milliseconds), then over every candidate row
(:func:`candidate_sets`: the rows near their sample's maximum, widening), and over those by a linear program that
the dual simplex solves exactly (:func:`mot_lp_multipliers`: each sample's mass at its worst-case weight, the slopes at
``L'(u_k)``, then also at ``L'(u_k +- d)``), with no cap of 2,000 rows and no interior-point residual for the repair
to meet (nursery: every one of 10,368 samples tied, 24,192 candidate rows, certified in 1.8 s).  Any masses and slopes
give a valid bound: these choices only make it tight.  The slope-cut masters' certificate
(:mod:`drokit.reformulations.mot_slope_certificate`) feeds :func:`mot_lagrangian_bound` its own dual point (fractional
rows).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..ambiguity.divergences import get_divergence
from ..gaps import gap_scale
from ..instance import DROInstance
from ..losses.conjugate import conjugate, slope_domain
from ..oracles.rows import ConfigurationRows, concat_rows, take_rows, unique_rows
from .erm_polish import polished_slopes
from .lagrangian import LowerBound, initial_slopes, loss_arguments, row_matrix
from .lower_bound import CANDIDATE_RTOLS, HELD_KINK_RTOL, KKT_MAX_ROWS, solve_multiplier_program
from .repair import column_roles, column_sums, repair_free_columns

#: the candidate rows' relative distances to their sample's maximum at the model, widening: the Wasserstein
#: certificate's :data:`~drokit.certificates.lower_bound.CANDIDATE_RTOLS`, then wider.  A MOT model can be optimal to
#: 1e-8 in value and still misplace by 1e-2 the losses of rows that carry the optimum's multipliers: the coefficient of
#: a categorical level that one or two training samples hold is nearly invisible to the objective (sun2025's hepatitis
#: split, calibrated integer weights, MOT KL 0.05: a row 1.03e-2 below its sample's maximum carries mass 1.7e-6 at the
#: optimum, and the restricted dual without it stops 4.5e-6 below; ``tests/test_mot_lower_bound.py``)
MOT_CANDIDATE_RTOLS = CANDIDATE_RTOLS + (1e-1, 1.0)

#: the second linear program of :func:`mot_lp_multipliers` also offers each row of a smooth loss the slopes ``L'(u_k +-
#: d)``: a model optimal to 1e-8 in value can be 1e-4 off in its coefficients along a flat direction, and the slopes
#: there miss the free columns' balance (``tests/test_mot_search.py``'s instance: 3.5e-6 short with ``L'(u_k)`` alone,
#: 4e-8 with these)
SLOPE_OFFSETS = (1e-3, 1e-2, 1e-1)
#: ... when it has at most this many entries (rows times slopes; nursery's 24,192 rows at one slope: 1.8 s, at seven:
#: minutes)
LP_OFFSET_MAX_ENTRIES = 20_000

#: candidate rows at most for the linear program of :func:`mot_lp_multipliers` (nursery, KL 0.05: 24,192 rows, 1.8 s)
LP_MAX_ROWS = 200_000

#: the multiplier program's soft conditions weigh this many times the largest multiplier they have at an optimum near
#: the model (``max |theta_j|`` for the free columns, ``lambda`` for the budget; at least 1): an exact penalty with room
#: to spare.  A weight of ``1e4 max(1, |L(u_k)|, |u_k|)`` (1.4e5 on the hepatitis fit above, whose multipliers are at
#: most 5.3) left Clarabel AlmostSolved at points up to 5e-5 off, which the repair could not make feasible
PENALTY_MARGIN = 100.0


def mot_lagrangian_bound(inst: DROInstance, rows: ConfigurationRows, mass: np.ndarray, slopes: np.ndarray, *,
                         rho: float, theta1: float, theta2: float, divergence,
                         room: np.ndarray = None) -> LowerBound:
    """The bound of the module docstring at the masses ``mass`` (normalized to sum 1) and slopes ``slopes`` on
    ``rows`` of the training instance ``inst``; ``-inf`` when the free columns cannot be repaired.  Only for losses
    without an attack (the MOT program has none)."""
    divergence = get_divergence(divergence)
    loss = inst.loss
    lo, hi = slope_domain(loss)
    mass = np.maximum(np.asarray(mass, dtype=float), 0.0)
    mass = mass / mass.sum()
    p = inst.p
    if np.isinf(theta2):              # weights fixed at 1: each sample's masses sum to p_n
        total = np.bincount(rows.sample, weights=mass, minlength=inst.n_samples)
        mass = mass * np.divide(p, total, out=np.zeros_like(p), where=total > 0)[rows.sample]
    room = np.minimum(room, hi - lo) if room is not None else np.maximum(np.minimum(slopes - lo, hi - slopes), 0.0)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    if np.isinf(theta1):
        free, limited = np.sort(np.concatenate([free, limited])), limited[:0]
    kept = np.concatenate([free, limited])
    g0 = A.T @ (mass * slopes * sigma)
    target = np.concatenate([np.zeros(free.size), g0[limited]])
    repaired = repair_free_columns(A[:, kept], target, mass, sigma, slopes, room, lo, hi, bvls=False)
    if repaired is None:
        return LowerBound(-np.inf, rows, mass, slopes, 1.0, float(np.max(np.abs(g0[free]), initial=0.0)))
    slopes = repaired
    g, residual, met = column_sums(A, mass, sigma, slopes, free)
    if not met:
        return LowerBound(-np.inf, rows, mass, slopes, 1.0, residual)
    value = float(mass @ (-slopes * shift - conjugate(loss, slopes)))
    spent = 0.0
    if np.isfinite(theta1):
        offset = 1 if inst.fit_intercept else 0
        gamma = np.asarray(inst.metric.gamma, dtype=float)[limited - offset]
        norm = float(inst.metric.numerical.value(gamma * g[limited], limited - offset)) if limited.size else 0.0
        lip = float(loss.lipschitz)
        spent += theta1 * (float(mass @ rows.cost) + (norm / lip if lip > 0 else (np.inf if norm > 0 else 0.0)))
    if np.isfinite(theta2) and not divergence.free_reweighting:
        W = _sample_weights(rows, mass, p)
        spent += theta2 * (float(p[p > 0] @ divergence.value(W[p > 0])) if np.all(np.isfinite(W)) else np.inf)
    elif np.isfinite(theta2):       # a bound on the weights (CVaR): outside it the point is infeasible
        W = _sample_weights(rows, mass, p)
        if not np.all(np.isfinite(divergence.value(W))):
            return LowerBound(-np.inf, rows, mass, slopes, 1.0, residual)
    if spent <= rho:
        return LowerBound(value + _label_floor(inst, theta1) * (rho - spent), rows, mass, slopes, 1.0, residual)
    t = rho / spent if np.isfinite(spent) else 0.0
    at_zero = float(conjugate(loss, np.zeros(1))[0])
    return LowerBound(t * value - (1.0 - t) * at_zero, rows, mass, slopes, t, residual)


def _sample_weights(rows, mass: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each sample's weight ``W_n = (sum of its masses) / p_n``: ``1`` for a sample of probability 0 without mass (it
    adds no divergence), ``inf`` for one with mass (no distribution of the set puts mass there)."""
    total = np.bincount(rows.sample, weights=mass, minlength=p.size)
    return np.divide(total, p, out=np.where(total > 0, np.inf, 1.0), where=p > 0)


def _label_floor(inst: DROInstance, theta1: float) -> float:
    """``lambda_0 = lip(L) / (theta1 kappa)``: in regression with a finite label cost (D) has ``lip(L) <= lambda theta1
    kappa`` (the response's moves), so the Lagrangian's minimum over ``lambda >= lambda_0`` of ``lambda (rho - spent)``
    is ``lambda_0 (rho - spent)`` within the budget; 0 otherwise."""
    kappa = float(inst.metric.kappa)
    if inst.is_classification or not np.isfinite(kappa) or not np.isfinite(theta1):
        return 0.0
    return float(inst.loss.lipschitz) / (theta1 * kappa)


def mot_kkt_multipliers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, *, rho: float,
                        theta1: float, theta2: float, divergence, control=None, fixed=None, lam: float = 0.0):
    """Masses and slopes on ``rows`` (the rows near their sample's maximum at the model) from the Lagrange dual of (D)
    restricted to them, a small conic program over the masses ``m`` and slope masses ``v = m alpha`` (as
    :func:`drokit.certificates.lower_bound.kkt_multipliers` for the Wasserstein ball):

        max   sum_k [-m_k L*(v_k / m_k) - v_k shift_k]  -  M (||r||_1 + b)
        s.t.  sum_k m_k = 1,  m >= 0,  r = A_F^T (sigma v),
              theta1 (sum_k m_k c_k + ||Gamma A_L^T (sigma v)||_p / lip) + theta2 sum_n q_n <= rho + b,  b >= 0,
              q_n >= p_n phi(M_n / p_n)   (M_n = sum_{k of n} m_k; KL: an exponential cone, chi-square: a rotated
              second-order cone, CVaR: M_n <= p_n / level and no q).

    The conditions are soft, with the weight ``M`` of an exact penalty: :data:`PENALTY_MARGIN` times the largest
    multiplier they have at an optimum near the model (``|theta_j|`` for ``r_j``, ``lambda`` = ``lam`` for ``b``).
    :func:`mot_lagrangian_bound` makes the point exactly feasible and evaluates it exactly, so this program only
    chooses it.  ``fixed``: ``(rows, mass, slopes, room)`` of samples held at their worst-case mass and slope
    (:func:`held_samples`): constants in the mass sum, ``r``, the norm, the transport and the divergence, appended to
    the point returned.  Returns ``(rows, mass, slopes, room)`` or ``None`` when it is not solved.  Piecewise-affine
    losses and those with a dual hypograph only (no tangent fallback: ``None``)."""
    import scipy.sparse as sp

    from ..conic.builder import Affine, ProgramBuilder
    from ..losses.conjugate import dual_hypograph
    divergence = get_divergence(divergence)
    loss = inst.loss
    u = loss_arguments(inst, rows, intercept, coef)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    if np.isinf(theta1):
        free, limited = np.sort(np.concatenate([free, limited])), limited[:0]
    K, p = rows.size, inst.p
    theta = np.r_[intercept, coef] if inst.fit_intercept else np.asarray(coef, dtype=float)
    weight = PENALTY_MARGIN * max(1.0, float(np.max(np.abs(theta), initial=0.0)), float(lam) if np.isfinite(lam) else 0)
    g_held, held_mass, held_cost, held_divergence = np.zeros(A.shape[1]), 0.0, 0.0, 0.0
    if fixed is not None:          # held samples: one row each, constants of the program
        f_rows, f_mass, f_slopes = fixed[:3]
        g_held = row_matrix(inst, f_rows).T @ (f_mass * f_slopes * inst.row_signs(f_rows.sample, f_rows.flip)[0])
        held_mass, held_cost = float(f_mass.sum()), float(f_mass @ f_rows.cost)
        if np.isfinite(theta2) and not divergence.free_reweighting:
            held_divergence = float(p[f_rows.sample] @ divergence.value(f_mass / p[f_rows.sample]))
    pb = ProgramBuilder()
    m, v = pb.var("mass", K), pb.var("slope_mass", K)
    pb.add_nonneg(m)
    pb.add_zero(m.sum() - max(1.0 - held_mass, 0.0))
    w = dual_hypograph(pb, loss, m, v)
    if w is None:
        return None
    value = w.sum() - v.premultiply(shift[None, :])
    weighted = sp.csr_matrix(A.multiply(sigma[:, None])).T.tocsr()
    if free.size:
        r = pb.var("residual", free.size)
        g_F = v.premultiply(weighted[free]) + g_held[free]
        pb.add_nonneg(Affine.vstack([r - g_F, r + g_F]))
        value = value - r.sum() * weight
    spent = None
    if np.isfinite(theta1):
        spent = (m.premultiply(rows.cost[None, :]) + held_cost) * theta1
        lip = float(loss.lipschitz)
        if limited.size and lip > 0:
            offset = 1 if inst.fit_intercept else 0
            gamma = np.asarray(inst.metric.gamma, dtype=float)[limited - offset]
            t = pb.var("norm", 1)
            g_L = v.premultiply(sp.diags(gamma) @ weighted[limited]) + gamma * g_held[limited]
            inst.metric.numerical.add_value_leq(pb, g_L, t, limited - offset)
            spent = spent + t * (theta1 / lip)
    owned = np.unique(rows.sample)             # the samples of the program's rows (the held ones are constants)
    owner = sp.csr_matrix((np.ones(K), (np.searchsorted(owned, rows.sample), np.arange(K))), shape=(owned.size, K))
    if np.isfinite(theta2):
        M = m.premultiply(owner)
        p = p[owned]
        if divergence.free_reweighting:                  # CVaR: M_n <= p_n / level
            pb.add_nonneg(M * -1.0 + p / divergence.validated_level())
        else:
            q = pb.var("divergence", owned.size)
            if divergence.name == "kl":                  # M log(M / p) <= q + M - p:  p >= M exp(-(q + M - p) / M)
                pb.add_exp((q + M - p) * -1.0, M, M * 0.0 + p)
            else:                                        # (M - p)^2 <= p q
                pb.add_soc(q + p, [(M - p) * 2.0, q - p])
            # the held samples' divergence, and p_n phi(0) for each sample with no row here (no mass)
            rowless = float(inst.p.sum() - p.sum()) - (float(inst.p[fixed[0].sample].sum()) if fixed is not None else 0)
            extra = held_divergence + float(divergence.value(np.zeros(1))[0]) * max(rowless, 0.0)
            term = (q.sum() + extra) * theta2
            spent = term if spent is None else spent + term
    else:                                                # weights fixed at 1: each sample's masses sum to p_n
        pb.add_zero(m.premultiply(owner) - p[owned])
    point = solve_multiplier_program(pb, loss, u, control, value=value, spent=spent, budget=rho, weight=weight,
                                     price=_label_floor(inst, theta1))
    if point is None:
        return None
    mass, slopes = point
    lo, hi = slope_domain(loss)
    room = np.maximum(np.minimum(slopes - lo, hi - slopes), 0.0)
    if fixed is not None:
        rows = concat_rows([rows, fixed[0]])
        mass, slopes, room = (np.concatenate([a, b]) for a, b in zip((mass, slopes, room), fixed[1:4]))
    return rows, mass, slopes, room


def mot_lp_multipliers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, worst, *,
                       rho: float, theta1: float, theta2: float, divergence, lam: float = 0.0,
                       offsets=()):
    """Masses on ``rows`` (the rows near their sample's maximum at the model) from a linear program solved by the
    dual simplex (HiGHS), exact where the conic restricted dual of :func:`mot_kkt_multipliers` is not: each sample's
    mass held at its worst-case weight ``W_n = p_n w_n`` (``worst``), the slopes at ``L'(u_k)`` (each near-active
    piece's slope for a piecewise-affine loss) and, with ``offsets``, also at ``L'(u_k +- d)`` for each ``d`` in it
    (a row's entries at several slopes: their mixture is a slope between them, valued below ``-L*`` by its
    concavity), the masses split over the sample's entries to

        max   sum_k m_k (-alpha_k shift_k - L*(alpha_k))  -  M (||r||_1 + b)
        s.t.  sum_{k of n} m_k = W_n,   m >= 0,   r = A_F^T (sigma alpha m),
              theta1 sum_k m_k c_k <= rho - theta2 sum_n p_n phi(W_n / p_n) + b,   b >= 0,

    (soft conditions with the weight ``M`` of :func:`mot_kkt_multipliers`; ``theta2 = inf``: ``W = p``).  At an optimal
    model the KKT multipliers solve it; :func:`mot_lagrangian_bound` makes the point exactly feasible and evaluates it.
    Only without norm-priced numerical columns (their term is a norm).  Returns ``(rows, mass, slopes, room)`` or
    ``None``."""
    import importlib.util
    if importlib.util.find_spec("highspy") is None:
        return None
    import highspy
    from ..solvers.highs import new_highs
    divergence = get_divergence(divergence)
    free, limited = column_roles(inst)
    if np.isinf(theta1):
        free, limited = np.sort(np.concatenate([free, limited])), limited[:0]
    if limited.size:
        return None
    loss = inst.loss
    u = loss_arguments(inst, rows, intercept, coef)
    if loss.pieces is None:                        # the slope at u_k, and at u_k +- each offset
        shifts = np.concatenate([[0.0], -np.asarray(offsets, dtype=float), np.asarray(offsets, dtype=float)])
        index = np.tile(np.arange(rows.size), shifts.size)
        lo_s, hi_s = slope_domain(loss)
        slopes = np.clip(np.asarray(loss.derivative(u[index] + np.repeat(shifts, rows.size)), dtype=float),
                         lo_s, hi_s)
    else:                                           # one variable per near-active piece of each row
        a, b = (np.asarray(v, dtype=float) for v in loss.pieces)
        values = np.multiply.outer(u, a) + b
        top = values.max(axis=1, keepdims=True)
        index, piece = np.nonzero(values >= top - HELD_KINK_RTOL * np.maximum(1.0, np.abs(top)))
        slopes = a[piece]
    rows = take_rows(rows, index)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    value = -slopes * shift - conjugate(loss, slopes)
    if not np.all(np.isfinite(value)):
        return None
    N, p, K = inst.n_samples, inst.p, rows.size
    W = p * np.asarray(worst.weight, dtype=float) if np.isfinite(theta2) else p.copy()
    W = W / W.sum()
    ratio_w = np.divide(W, p, out=np.ones_like(W), where=p > 0)            # a sample of weight 0 adds no term
    spent = theta2 * float(p @ divergence.value(ratio_w)) if np.isfinite(theta2) and not divergence.free_reweighting \
        else 0.0
    A = row_matrix(inst, rows)
    S = sp.csr_matrix(A[:, free].multiply((sigma * slopes)[:, None])).T.tocsr()     # (F, K)
    F = free.size
    theta = np.r_[intercept, coef] if inst.fit_intercept else np.asarray(coef, dtype=float)
    weight = PENALTY_MARGIN * max(1.0, float(np.max(np.abs(theta), initial=0.0)), float(lam) if np.isfinite(lam) else 0)
    # columns: m (K), r+ (F), r- (F), b
    n_cols = K + 2 * F + 1
    cost = np.concatenate([-value, np.full(2 * F, weight), [weight]])
    inf = highspy.kHighsInf
    lo, hi = np.zeros(n_cols), np.full(n_cols, inf)
    owner = sp.csr_matrix((np.ones(K), (rows.sample, np.arange(K))), shape=(N, K))
    blocks = [sp.hstack([owner, sp.csr_matrix((N, 2 * F + 1))]),
              sp.hstack([S, -sp.identity(F), sp.identity(F), sp.csr_matrix((F, 1))])]
    lower, upper = [W, np.zeros(F)], [W, np.zeros(F)]
    if np.isfinite(theta1):
        blocks.append(sp.hstack([sp.csr_matrix(theta1 * rows.cost[None, :]), sp.csr_matrix((1, 2 * F)),
                                 sp.csr_matrix(-np.ones((1, 1)))]))
        lower.append(np.array([-inf]))
        upper.append(np.array([rho - spent]))
    M = sp.csr_matrix(sp.vstack(blocks))
    M.sort_indices()
    h = new_highs(highspy)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("dual_feasibility_tolerance", 1e-10)
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.addCols(n_cols, cost, lo, hi, 0, np.zeros(n_cols, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    h.addRows(M.shape[0], np.concatenate(lower), np.concatenate(upper), M.nnz, M.indptr[:-1].astype(np.int32),
              M.indices.astype(np.int32), M.data)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    mass = np.maximum(np.asarray(h.getSolution().col_value)[:K], 0.0)
    keep = np.flatnonzero(mass > 0)
    if not keep.size:
        return None
    lo_s, hi_s = slope_domain(loss)
    room = np.maximum(np.minimum(slopes - lo_s, hi_s - slopes), 0.0)
    return take_rows(rows, keep), mass[keep], slopes[keep], room[keep]


def mot_certified_lower_bound(inst: DROInstance, atoms, intercept: float, coef: np.ndarray, *, rho: float,
                              theta1: float, theta2: float, divergence, upper: float = None, tol: float = 1e-7,
                              worst=None, pool=None, linear_programs: bool = True) -> LowerBound:
    """The bound at the worst-case atoms of the model ``(intercept, coef)`` (``atoms``:
    :class:`~drokit.certificates.mot_worst_case.MOTAtoms`) with slopes ``L'(u_k)``, and with the weighted ERM's slopes
    (:func:`~drokit.certificates.erm_polish.polished_slopes`) where they apply; while that is not within ``tol`` of
    ``upper`` (relative, :mod:`drokit.gaps`), at the multipliers of :func:`mot_kkt_multipliers` on each candidate set
    of :func:`candidate_sets` in turn (the atoms' rows, then the rows of ``pool`` near their sample's maximum at
    ``worst.lam``, widening, then all of ``pool``: every configuration row when they can be enumerated, else the
    atoms' and the cutting plane's rows; ``pool`` may be a function that returns them, called when needed): first with
    the settled samples held (:func:`held_samples`: a program over the tied samples only, at any size), then over
    the whole set (at most :data:`~drokit.certificates.lower_bound.KKT_MAX_ROWS` rows), then by the linear programs of
    :func:`mot_lp_multipliers` (at most :data:`LP_MAX_ROWS` rows; the second, with more slopes per row, at most
    :data:`LP_OFFSET_MAX_ENTRIES` entries; ``linear_programs=False``: not these, e.g. past a fit's time limit).  The
    largest bound."""
    rows, mass = atoms.rows, atoms.mass
    slopes, room = initial_slopes(inst.loss, loss_arguments(inst, rows, intercept, coef))
    options = dict(rho=rho, theta1=theta1, theta2=theta2, divergence=divergence)
    best = mot_lagrangian_bound(inst, rows, mass, slopes, room=room, **options)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    theta = np.r_[intercept, coef] if inst.fit_intercept else np.asarray(coef, dtype=float)
    better = polished_slopes(inst, rows, mass / mass.sum(), row_matrix(inst, rows), sigma, shift, theta)
    if better is not None:
        candidate = mot_lagrangian_bound(inst, rows, mass, better, **options)
        if candidate.value > best.value:
            best = candidate
    if upper is None:
        return best
    lam = float(worst.lam) if worst is not None and np.isfinite(worst.lam) else 0.0
    tried = set()
    sets = []
    for rows_, rtol in candidate_sets(inst, atoms, pool, intercept, coef, lam, theta1, upper):
        # ties: the optimum's multipliers spread mass over tied rows (or samples at CVaR's value at risk) that the
        # worst case names one at a time; the restricted dual chooses them
        sets.append(rows_)
        plans = [(rows_, None, "all")]
        if worst is not None and rtol is not None:
            free_rows, held = held_samples(inst, rows_, intercept, coef, worst, rtol=rtol, scale=upper, **options)
            if free_rows.size < rows_.size:
                plans.insert(0, (free_rows, held, "tied"))
        best = _best_of_plans(inst, plans, best, tried, intercept, coef, worst, lam, upper, tol, options)
        if upper - best.value <= tol * gap_scale(upper):
            return best
    if worst is None or not linear_programs:
        return best
    # the linear programs, once no conic restricted dual has closed the gap: over the same sets in turn
    for rows_ in sets:
        plans = [(rows_, None, "lp")]
        if inst.loss.pieces is None and rows_.size * (1 + 2 * len(SLOPE_OFFSETS)) <= LP_OFFSET_MAX_ENTRIES:
            plans.append((rows_, None, "lp_slopes"))
        best = _best_of_plans(inst, plans, best, tried, intercept, coef, worst, lam, upper, tol, options)
        if upper - best.value <= tol * gap_scale(upper):
            return best
    return best


def _best_of_plans(inst, plans, best, tried, intercept, coef, worst, lam, upper, tol, options):
    """The best of ``best`` and the bounds at the multipliers of each plan ``(rows, held, kind)`` in turn (``kind``
    ``"tied"`` / ``"all"``: :func:`mot_kkt_multipliers`; ``"lp"`` / ``"lp_slopes"``: :func:`mot_lp_multipliers`),
    until one is within ``tol`` of ``upper``; a plan of a kind and size already in ``tried`` is skipped (the sets
    widen, nested)."""
    for free_rows, held, kind in plans:
        key = (kind, free_rows.size)
        if upper - best.value <= tol * gap_scale(upper):
            return best
        limit = LP_MAX_ROWS if kind.startswith("lp") else KKT_MAX_ROWS
        if not 0 < free_rows.size <= limit or key in tried:
            continue
        tried.add(key)
        if kind.startswith("lp"):       # the dual simplex's exact multipliers at the worst-case weights
            point = mot_lp_multipliers(inst, free_rows, intercept, coef, worst, lam=lam, **options,
                                       offsets=SLOPE_OFFSETS if kind == "lp_slopes" else ())
        else:
            point = mot_kkt_multipliers(inst, free_rows, intercept, coef, fixed=held, lam=lam, **options)
        if point is not None:
            candidate = mot_lagrangian_bound(inst, point[0], point[1], point[2], room=point[3], **options)
            if candidate.value > best.value:
                best = candidate
    return best


def candidate_sets(inst: DROInstance, atoms, pool, intercept: float, coef: np.ndarray, lam: float, theta1: float,
                   scale: float):
    """``(rows, rtol)`` in turn: the atoms' rows (``rtol`` the first of :data:`MOT_CANDIDATE_RTOLS`), the rows of
    ``pool`` within each ``rtol`` of :data:`MOT_CANDIDATE_RTOLS` (relative to ``max(1, |scale|)``) of their sample's
    maximum at ``lam`` (:func:`near_maximizers`), then ``pool`` itself (``rtol`` None: no sample held)."""
    yield unique_rows(atoms.rows), MOT_CANDIDATE_RTOLS[0]
    if pool is None:
        return
    pool = pool() if callable(pool) else pool
    for rtol in MOT_CANDIDATE_RTOLS:
        yield near_maximizers(inst, pool, intercept, coef, lam, theta1, rtol, scale), rtol
    yield pool, None


def held_samples(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, worst, *, rtol: float,
                 scale: float, rho: float, theta1: float, theta2: float, divergence):
    """``(free rows, held)``: the candidate ``rows`` split into those of the samples whose multipliers the restricted
    dual must choose and ``held = (rows, mass, slopes, room)``, one row per settled sample at its worst-case mass
    ``p_n w_n`` (``worst``: :class:`~drokit.certificates.mot_worst_case.MOTWorstCase`) and its loss's slope, for
    :func:`mot_kkt_multipliers`; ``held`` None when no sample is settled (the rows unchanged) or none of the settled
    ones has mass (CVaR: below the value at risk; they then count as samples without a row).

    A sample is settled when it has one candidate row (no tie between configurations, nor at a kink of ``lambda``),
    off every kink of a piecewise-affine loss (no second piece within ``max(rtol, HELD_KINK_RTOL)`` of the loss's
    value, relative) and with its weight off the divergence's kinks (CVaR: ``S_n`` farther than ``rtol max(1,
    |scale|)`` from the value at risk ``alpha*``, where the weight jumps from 0 to ``1/level``; chi-square: from
    ``alpha* - 2h``, where it reaches 0).  At an optimum with the same ties a settled sample's KKT multipliers are
    exactly these (``spec/mot-dro-training.md`` §3), so only the tied samples' are left to choose: a few dozen rows at
    CVaR's value at risk or at the hinge's kink where the whole set has thousands."""
    divergence = get_divergence(divergence)
    N, p = inst.n_samples, inst.p
    settled = np.bincount(rows.sample, minlength=N) == 1
    loss = inst.loss
    u = loss_arguments(inst, rows, intercept, coef)
    slopes, room = initial_slopes(loss, u)
    if loss.pieces is not None:
        a, b = (np.asarray(x, dtype=float) for x in loss.pieces)
        values = np.multiply.outer(u, a) + b
        top = values.max(axis=1)
        near = values >= (top - max(rtol, HELD_KINK_RTOL) * np.maximum(1.0, np.abs(top)))[:, None]
        settled[rows.sample[near.sum(axis=1) > 1]] = False
    S, tol = np.asarray(worst.S, dtype=float), rtol * max(1.0, abs(scale))
    if divergence.free_reweighting:                    # CVaR's weights jump at the value at risk
        settled &= np.abs(S - worst.alpha) > tol
    elif np.isfinite(theta2) and divergence.name != "kl":  # chi-square's reach 0 at alpha* - 2h (KL's: no kink)
        h = worst.lam * theta2
        if not (np.isfinite(h) and h > 0):
            return rows, None
        settled &= np.abs(S - (worst.alpha - 2.0 * h)) > tol
    held = settled[rows.sample]
    if not held.any():
        return rows, None
    mass = (p * np.asarray(worst.weight, dtype=float))[rows.sample]
    keep = np.flatnonzero(held & (mass > 0))          # a held sample without mass is a sample without a row
    fixed = (take_rows(rows, keep), mass[keep], slopes[keep], room[keep]) if keep.size else None
    return take_rows(rows, np.flatnonzero(~held)), fixed


def near_maximizers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, lam: float,
                    theta1: float, rtol: float, scale: float) -> ConfigurationRows:
    """The rows of ``rows`` within ``rtol * max(1, scale)`` of their sample's maximum of ``L(u_k) - lam theta1 c_k``."""
    from ..oracles.rows import row_losses, take_rows
    phi = row_losses(inst, rows, intercept, coef) - (lam * theta1 * rows.cost if np.isfinite(theta1) else 0.0)
    top = np.full(inst.n_samples, -np.inf)
    np.maximum.at(top, rows.sample, phi)
    return take_rows(rows, np.flatnonzero(phi >= top[rows.sample] - rtol * max(1.0, abs(scale))))


__all__ = ["mot_lagrangian_bound", "mot_kkt_multipliers", "mot_lp_multipliers", "LP_MAX_ROWS", "SLOPE_OFFSETS",
           "mot_certified_lower_bound", "candidate_sets", "held_samples",
           "near_maximizers", "MOT_CANDIDATE_RTOLS", "PENALTY_MARGIN"]
