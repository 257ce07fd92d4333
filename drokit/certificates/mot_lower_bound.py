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
"""

from __future__ import annotations

import numpy as np

from ..ambiguity.divergences import get_divergence
from ..gaps import gap_scale
from ..instance import DROInstance
from ..losses.conjugate import conjugate, slope_domain
from ..oracles.rows import ConfigurationRows
from .erm_polish import polished_slopes
from .lagrangian import LowerBound, initial_slopes, loss_arguments, row_matrix
from .lower_bound import KKT_MAX_ROWS, solve_multiplier_program
from .repair import column_roles, column_sums, repair_free_columns


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
        norm = float(np.linalg.norm(gamma * g[limited], ord=inst.metric.numerical.validated_p())) if limited.size else 0.0
        lip = float(loss.lipschitz)
        spent += theta1 * (float(mass @ rows.cost) + (norm / lip if lip > 0 else (np.inf if norm > 0 else 0.0)))
    if np.isfinite(theta2) and not divergence.free_reweighting:
        W = np.bincount(rows.sample, weights=mass, minlength=inst.n_samples) / p
        spent += theta2 * float(p @ divergence.value(W))
    elif np.isfinite(theta2):       # a bound on the weights (CVaR): outside it the point is infeasible
        W = np.bincount(rows.sample, weights=mass, minlength=inst.n_samples) / p
        if not np.all(np.isfinite(divergence.value(W))):
            return LowerBound(-np.inf, rows, mass, slopes, 1.0, residual)
    if spent <= rho:
        return LowerBound(value + _label_floor(inst, theta1) * (rho - spent), rows, mass, slopes, 1.0, residual)
    t = rho / spent if np.isfinite(spent) else 0.0
    at_zero = float(conjugate(loss, np.zeros(1))[0])
    return LowerBound(t * value - (1.0 - t) * at_zero, rows, mass, slopes, t, residual)


def _label_floor(inst: DROInstance, theta1: float) -> float:
    """``lambda_0 = lip(L) / (theta1 kappa)``: in regression with a finite label cost (D) has ``lip(L) <= lambda theta1
    kappa`` (the response's moves), so the Lagrangian's minimum over ``lambda >= lambda_0`` of ``lambda (rho - spent)``
    is ``lambda_0 (rho - spent)`` within the budget; 0 otherwise."""
    kappa = float(inst.metric.kappa)
    if inst.is_classification or not np.isfinite(kappa) or not np.isfinite(theta1):
        return 0.0
    return float(inst.loss.lipschitz) / (theta1 * kappa)


def mot_kkt_multipliers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, *, rho: float,
                        theta1: float, theta2: float, divergence, control=None):
    """Masses and slopes on ``rows`` (the rows near their sample's maximum at the model) from the Lagrange dual of (D)
    restricted to them, a small conic program over the masses ``m`` and slope masses ``v = m alpha`` (as
    :func:`drokit.certificates.lower_bound.kkt_multipliers` for the Wasserstein ball):

        max   sum_k [-m_k L*(v_k / m_k) - v_k shift_k]  -  M (||r||_1 + b)
        s.t.  sum_k m_k = 1,  m >= 0,  r = A_F^T (sigma v),
              theta1 (sum_k m_k c_k + ||Gamma A_L^T (sigma v)||_p / lip) + theta2 sum_n q_n <= rho + b,  b >= 0,
              q_n >= p_n phi(M_n / p_n)   (M_n = sum_{k of n} m_k; KL: an exponential cone, chi-square: a rotated
              second-order cone, CVaR: M_n <= p_n / level and no q).

    The conditions are soft (weight ``M``); :func:`mot_lagrangian_bound` makes the point exactly feasible and evaluates
    it exactly, so this program only chooses it.  Returns ``(rows, mass, slopes, room)`` or ``None`` when it is not
    solved.  Piecewise-affine losses and those with a dual hypograph only (no tangent fallback: ``None``)."""
    import scipy.sparse as sp

    from ..conic.builder import Affine, ProgramBuilder
    from ..losses.conjugate import dual_hypograph
    from ..metrics.costs import NormCost
    divergence = get_divergence(divergence)
    loss = inst.loss
    u = loss_arguments(inst, rows, intercept, coef)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    A = row_matrix(inst, rows)
    free, limited = column_roles(inst)
    if np.isinf(theta1):
        free, limited = np.sort(np.concatenate([free, limited])), limited[:0]
    K, N = rows.size, inst.n_samples
    weight = 1e4 * max(1.0, float(np.max(np.abs(loss.value(u)), initial=0.0)), float(np.max(np.abs(u), initial=0.0)))
    pb = ProgramBuilder()
    m, v = pb.var("mass", K), pb.var("slope_mass", K)
    pb.add_nonneg(m)
    pb.add_zero(m.sum() - 1.0)
    w = dual_hypograph(pb, loss, m, v)
    if w is None:
        return None
    value = w.sum() - v.premultiply(shift[None, :])
    weighted = sp.csr_matrix(A.multiply(sigma[:, None])).T.tocsr()
    if free.size:
        r = pb.var("residual", free.size)
        pb.add_nonneg(Affine.vstack([r - v.premultiply(weighted[free]), r + v.premultiply(weighted[free])]))
        value = value - r.sum() * weight
    spent = None
    if np.isfinite(theta1):
        spent = m.premultiply(rows.cost[None, :]) * theta1
        lip = float(loss.lipschitz)
        if limited.size and lip > 0:
            offset = 1 if inst.fit_intercept else 0
            gamma = np.asarray(inst.metric.gamma, dtype=float)[limited - offset]
            t = pb.var("norm", 1)
            NormCost(p=inst.metric.dual_p).add_dual_norm_leq(pb, v.premultiply(sp.diags(gamma) @ weighted[limited]), t,
                                                           np.ones(limited.size))
            spent = spent + t * (theta1 / lip)
    if np.isfinite(theta2):
        owner = sp.csr_matrix((np.ones(K), (rows.sample, np.arange(K))), shape=(N, K))
        M = m.premultiply(owner)
        p = inst.p
        if divergence.free_reweighting:                  # CVaR: M_n <= p_n / level
            pb.add_nonneg(M * -1.0 + p / divergence.validated_level())
        else:
            q = pb.var("divergence", N)
            if divergence.name == "kl":                  # M log(M / p) <= q + M - p:  p >= M exp(-(q + M - p) / M)
                pb.add_exp((q + M - p) * -1.0, M, M * 0.0 + p)
            else:                                        # (M - p)^2 <= p q
                pb.add_soc(q + p, [(M - p) * 2.0, q - p])
            spent = q.sum() * theta2 if spent is None else spent + q.sum() * theta2
    else:                                                # weights fixed at 1: each sample's masses sum to p_n
        owner = sp.csr_matrix((np.ones(K), (rows.sample, np.arange(K))), shape=(N, K))
        pb.add_zero(m.premultiply(owner) - inst.p)
    point = solve_multiplier_program(pb, loss, u, control, value=value, spent=spent, budget=rho, weight=weight,
                                     price=_label_floor(inst, theta1))
    if point is None:
        return None
    mass, slopes = point
    lo, hi = slope_domain(loss)
    return rows, mass, slopes, np.maximum(np.minimum(slopes - lo, hi - slopes), 0.0)


def mot_certified_lower_bound(inst: DROInstance, atoms, intercept: float, coef: np.ndarray, *, rho: float,
                              theta1: float, theta2: float, divergence, upper: float = None, tol: float = 1e-7,
                              candidates=None) -> LowerBound:
    """The bound at the worst-case atoms of the model ``(intercept, coef)`` (``atoms``:
    :class:`~drokit.certificates.mot_worst_case.MOTAtoms`) with slopes ``L'(u_k)``, and with the weighted ERM's slopes
    (:func:`~drokit.certificates.erm_polish.polished_slopes`) where they apply; while that is not within ``tol`` of
    ``upper`` (relative, :mod:`drokit.gaps`), at the multipliers of :func:`mot_kkt_multipliers` on each row set of
    ``candidates`` in turn (the rows near their sample's maximum, widening; each of at most
    :data:`~drokit.certificates.lower_bound.KKT_MAX_ROWS` rows): the largest."""
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
    tried = set()
    for rows_ in candidates or ():
        if upper is None or upper - best.value <= tol * gap_scale(upper):
            break
        if not 0 < rows_.size <= KKT_MAX_ROWS or rows_.size in tried:
            continue                # the sets widen (nested): one of a size already tried is the same set
        tried.add(rows_.size)
        # ties: the optimum's multipliers spread mass over tied rows (or samples at CVaR's value at risk) that the
        # worst case names one at a time; the restricted dual chooses them
        point = mot_kkt_multipliers(inst, rows_, intercept, coef, **options)
        if point is not None:
            candidate = mot_lagrangian_bound(inst, point[0], point[1], point[2], room=point[3], **options)
            if candidate.value > best.value:
                best = candidate
    return best


def near_maximizers(inst: DROInstance, rows: ConfigurationRows, intercept: float, coef: np.ndarray, lam: float,
                    theta1: float, rtol: float, scale: float) -> ConfigurationRows:
    """The rows of ``rows`` within ``rtol * max(1, scale)`` of their sample's maximum of ``L(u_k) - lam theta1 c_k``."""
    from ..oracles.rows import row_losses, take_rows
    phi = row_losses(inst, rows, intercept, coef) - (lam * theta1 * rows.cost if np.isfinite(theta1) else 0.0)
    top = np.full(inst.n_samples, -np.inf)
    np.maximum.at(top, rows.sample, phi)
    return take_rows(rows, np.flatnonzero(phi >= top[rows.sample] - rtol * max(1.0, abs(scale))))


__all__ = ["mot_lagrangian_bound", "mot_kkt_multipliers", "mot_certified_lower_bound", "near_maximizers"]
