"""The dual function at a dual point's masses: slopes from the weighted ERM over the free columns.

The Lagrangian bound of :mod:`.lagrangian` takes masses ``m_k`` (a distribution over configuration rows, ``sum_{k
of n} m_k = p_n``) and slopes ``alpha_k``, and repairs the slopes until the free columns' sums ``g_F = sum_k m_k
alpha_k sigma_k a_{k,F}`` vanish.  The repair restores feasibility; it does not choose the best slopes.  For fixed
masses the best slopes are those of the *weighted ERM* (Fenchel duality, belbasi2023 Prop. 1 read at fixed ``m``):

    max_alpha { sum_k m_k (-alpha_k shift_k - L*(alpha_k)) : g_F(alpha) = 0 }
        = min_{theta_F} sum_k m_k L(sigma_k a_k' theta - shift_k)          (theta_L held at the model's values)

attained at ``alpha_k = L'(u_k(theta_F*))``: the stationarity of the right-hand side is ``g_F = 0``.  With every
column free (all-categorical data) this is the dual function at ``m`` itself; with norm-priced numerical columns the
slopes also set ``g_L``, which :func:`~drokit.certificates.lagrangian.lagrangian_bound` pays from the budget as
always, so the bound stays valid whatever ``theta_L`` (the split is first order exact at an optimal ``theta_L``).

Why: a barrier master's central point at ``mu`` carries the prox and trust-region terms in its stationarity, and its
slopes miss the masses' best ones by ``O(mu)``; the repair's least-norm change then costs second-order value.  Where
the Gram of the free columns is near singular (collinear dummies, rare levels) this left the bound 2 x 1e-6 relative
below the optimum while the upper bound had converged (selvi2022's lymphography at kappa = 1, radius 1e-4: lower
0.04527134 against upper 0.04527142; from the weighted ERM, 0.04527140: certified).

Newton's method with a backtracking line search on the free coordinates; every step is one weighted Gram product of
the rows' free columns.  Only for losses that are twice differentiable somewhere (not piecewise affine), not
adversarial, without a penalty: elsewhere :func:`polished_slopes` returns ``None``.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..instance import DROInstance
from ..losses.conjugate import slope_domain
from ..oracles.enumeration import concat_rows, enumerate_configurations, take_rows
from ..oracles.rows import ConfigurationRows, FractionalRows
from .lagrangian import LowerBound, lagrangian_bound, row_matrix, with_every_sample
from .repair import column_roles, weighted_gram

#: Newton steps of the weighted ERM at most
MAX_NEWTON_STEPS = 20

#: the ERM's gradient on the free columns is small enough relative to ``max(1, max |m_k L'(u_k)|)``
GRADIENT_RTOL = 1e-14

#: ridge added to the Newton system, relative to its largest diagonal entry (null directions: collinear dummies)
RIDGE = 1e-12


def polish_applies(inst: DROInstance) -> bool:
    """Whether :func:`polished_slopes` runs for this instance: a smooth, non-adversarial loss and no penalty."""
    loss = inst.loss
    return not (hasattr(loss, "at") or loss.is_piecewise_affine or inst.penalized
                or getattr(loss, "outer_approximation", False))


def polished_slopes(inst: DROInstance, rows: ConfigurationRows, mass: np.ndarray, A: sp.csr_matrix,
                    sigma: np.ndarray, shift: np.ndarray, theta: np.ndarray) -> Optional[np.ndarray]:
    """Slopes ``L'(u_k(theta*))`` of the weighted ERM ``min_{theta_F} sum_k m_k L(sigma_k a_k' theta - shift_k)``
    (module docstring) from ``theta = [intercept, coef]`` (the rows' design ``A``, signs ``sigma`` and shifts
    ``shift``), the norm-priced and fixed columns held at ``theta``; ``None`` when the polish does not apply or the
    Newton iterations produce a non-finite point."""
    if not polish_applies(inst):
        return None
    loss = inst.loss
    free, _ = column_roles(inst)
    theta = np.asarray(theta, dtype=float).copy()
    if free.size == 0:
        return None
    A = sp.csr_matrix(A)
    A_F = A[:, free]
    signed = sp.diags(sigma) @ A_F

    def margins(t: np.ndarray) -> np.ndarray:
        return sigma * np.asarray(A @ t).ravel() - shift

    def objective(t: np.ndarray) -> float:
        return float(mass @ loss.value(margins(t)))

    value = objective(theta)
    for _ in range(MAX_NEWTON_STEPS):
        u = margins(theta)
        _, first, second = loss.value_and_derivatives(u)
        grad = np.asarray(signed.T @ (mass * first)).ravel()
        if not np.all(np.isfinite(grad)):
            return None
        if np.max(np.abs(grad)) <= GRADIENT_RTOL * max(1.0, float(np.max(np.abs(mass * first), initial=0.0))):
            break
        hess = weighted_gram(A_F, mass * np.maximum(second, 0.0))
        hess[np.diag_indices_from(hess)] += RIDGE * max(float(np.max(np.diag(hess), initial=0.0)), 1e-300)
        try:
            step = np.linalg.solve(hess, -grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hess, -grad, rcond=None)[0]
        decrease = float(grad @ step)
        if not np.isfinite(decrease) or decrease >= 0:
            break
        t = 1.0
        while t > 1e-10:
            trial = theta.copy()
            trial[free] += t * step
            trial_value = objective(trial)
            if trial_value <= value + 1e-4 * t * decrease:
                break
            t *= 0.5
        else:
            break
        theta, value = trial, trial_value
    slopes = loss.derivative(margins(theta))
    return slopes if np.all(np.isfinite(slopes)) else None


def polished_bound(inst: DROInstance, rows: ConfigurationRows, mass: np.ndarray, slopes: np.ndarray,
                   theta: np.ndarray, *, bvls: bool = False) -> Optional[LowerBound]:
    """The Lagrangian bound of the masses ``mass`` on ``rows`` with the weighted ERM's slopes
    (:func:`polished_slopes` from the model ``theta = [intercept, coef]``), through the same repair and budget as
    :func:`~drokit.certificates.lagrangian.lagrangian_bound` (valid for any slopes); ``None`` where the polish does
    not apply.  ``slopes``: the point's own slopes, which fill the rows a sample adds without mass."""
    if not polish_applies(inst):
        return None
    lo, hi = slope_domain(inst.loss)
    rows, mass, slopes, _ = with_every_sample(inst, rows, mass, slopes, None, lo, hi)
    rows, mass = within_budget(inst, rows, mass)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    better = polished_slopes(inst, rows, mass, row_matrix(inst, rows), sigma, shift, theta)
    if better is None:
        return None
    return lagrangian_bound(inst, rows, mass, better, bvls=bvls)


def within_budget(inst: DROInstance, rows: ConfigurationRows, mass: np.ndarray):
    """Masses whose transport budget ``S_c = sum_k m_k c_k`` is at most ``eps``: when it is over, every costly row
    keeps ``t = eps / S_c`` of its mass and hands the rest to its sample's nominal row (cost 0), so ``S_c`` becomes
    ``eps``.  The lagrangian bound's own remedy, mixing the whole point with the nominal rows at slope 0, costs
    ``(1 - t)`` of the bound; this costs about ``(1 - t) lambda eps`` (the moved masses' loss gain is what the budget
    pays at the optimum), and the weighted ERM then sets the slopes for the new masses.  Fractional rows (level-max
    columns) get the nominal rows as fractional rows of one configuration."""
    eps = float(inst.radius)
    spent = float(mass @ rows.cost)
    if spent <= eps or not np.isfinite(spent):
        return rows, mass
    t = eps / spent * (1.0 - 4 * np.finfo(float).eps)
    costly = rows.cost > 0
    moved = np.bincount(rows.sample[costly], weights=(1.0 - t) * mass[costly], minlength=inst.n_samples)
    keep = np.where(costly, t * mass, mass)
    to = np.flatnonzero(moved > 0)
    nominal = take_rows(enumerate_configurations(inst, nominal_only=True), to)
    if isinstance(rows, FractionalRows):
        nominal = FractionalRows(nominal.sample, nominal.flip, nominal.cost, row_matrix(inst, nominal))
        joined = FractionalRows(np.concatenate([rows.sample, nominal.sample]), np.concatenate([rows.flip, nominal.flip]),
                                np.concatenate([rows.cost, nominal.cost]), sp.vstack([rows.matrix, nominal.matrix],
                                                                                     format="csr"))
        return joined, np.concatenate([keep, moved[to]])
    return concat_rows([rows, nominal]), np.concatenate([keep, moved[to]])
