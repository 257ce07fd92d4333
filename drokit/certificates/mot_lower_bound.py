"""A rigorous lower bound for MOT-DRO: an explicit dual point of program (D), repaired and evaluated exactly.

Program (D) of ``spec/mot-dro-training.md`` §2 (:mod:`drokit.reformulations.mot_dual`) over every configuration row
``k`` (sample ``n_k``, loss argument ``u_k = sigma_k theta' a_k - shift_k``, ground cost ``c_k``):

    min   lambda rho + alpha + sum_n p_n h phi*((s_n - alpha) / h)          h = lambda theta2
    s.t.  s_{n_k} >= L(u_k) - lambda theta1 c_k,      lip ||Gamma^{-1} beta_L||_* <= lambda theta1,      lambda >= 0.

Its Lagrangian with masses ``m_k >= 0`` on the row constraints, minimized over ``s`` (the conjugate of ``phi*`` is
``phi``: ``min_s p h phi*((s - alpha)/h) - M s = -M alpha - h p phi(M / p)``), over ``alpha`` (``sum_k m_k = 1``: the
moment ``E[W] = 1``), over ``beta`` with Fenchel's inequality ``L(u) >= alpha_k u - L*(alpha_k)`` and over ``lambda``:

    OPT >= sum_k m_k (-alpha_k shift_k - L*(alpha_k))
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
from ..instance import DROInstance
from ..losses.conjugate import conjugate, slope_domain
from ..oracles.rows import ConfigurationRows
from .erm_polish import polished_slopes
from .lagrangian import LowerBound, initial_slopes, loss_arguments, row_matrix
from .repair import RESIDUAL_RTOL, column_roles, repair_free_columns


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
    g = A.T @ (mass * slopes * sigma)
    residual = float(np.max(np.abs(g[free]), initial=0.0))
    if residual > RESIDUAL_RTOL * max(1.0, float(np.max(np.abs(mass * slopes), initial=0.0))):
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
        return LowerBound(value, rows, mass, slopes, 1.0, residual)
    t = rho / spent if np.isfinite(spent) else 0.0
    at_zero = float(conjugate(loss, np.zeros(1))[0])
    return LowerBound(t * value - (1.0 - t) * at_zero, rows, mass, slopes, t, residual)


def mot_certified_lower_bound(inst: DROInstance, atoms, intercept: float, coef: np.ndarray, *, rho: float,
                              theta1: float, theta2: float, divergence) -> LowerBound:
    """The bound at the worst-case atoms of the model ``(intercept, coef)`` (``atoms``:
    :class:`~drokit.certificates.mot_worst_case.MOTAtoms`) with slopes ``L'(u_k)``, and with the weighted ERM's slopes
    (:func:`~drokit.certificates.erm_polish.polished_slopes`) where they apply: the larger."""
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
    return best


__all__ = ["mot_lagrangian_bound", "mot_certified_lower_bound"]
