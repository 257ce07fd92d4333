"""The MOT-DRO training program over configuration rows (``spec/mot-dro-training.md`` §2, program (D)).

Optimal transport with a moment constraint (blanchet2024 Def. 1, cost (2.1) ``theta1 w d + theta2 phi(w)``, with
drokit's mixed ground metric ``d``, its numerical norm not squared), radius ``rho``:

    min   lambda rho + alpha + sum_n p_n h phi*((s_n - alpha) / h)              h = lambda theta2
    s.t.  L(u_k) <= s_{n_k} + lambda theta1 c_k                 for every row k (belbasi2023 (3)'s rows at lambda theta1)
          lip(L) ||Gamma^{-1} beta_x||_* <= lambda theta1       (numerical moves; lip(L) <= lambda theta1 kappa in regression)
          lambda >= 0

over ``(beta, lambda, alpha, s)``, with ``phi*`` in conic form:

* KL (``phi*(u) = exp(u) - 1``): ``t_n >= h exp((s_n - alpha) / h)``, one exponential cone per sample, term ``t_n - h``;
* chi-square (``phi*(u) = ((u/2 + 1)_+)^2 - 1``): ``q_n >= 0``, ``q_n >= (s_n - alpha)/2 + h``, ``r_n h >= q_n^2`` (a
  rotated second-order cone ``||(2 q_n, r_n - h)||_2 <= r_n + h``), term ``r_n - h``;
* CVaR at level ``a`` (``phi*(u) = u_+ / a``): ``t_n >= 0``, ``t_n >= (s_n - alpha) / a``, term ``t_n`` (linear; the
  divergences' module :mod:`drokit.ambiguity.divergences` writes each form).

``theta2 = inf`` (weights fixed at 1) drops ``alpha`` and the cones: the objective is ``lambda rho + sum_n p_n s_n``,
the Wasserstein program of cost ``theta1 d``.  ``theta1 = inf`` (no sample moves): only the nominal rows (cost 0), no
dual-norm constraint.  With every configuration row the program is exact; with a subset, a relaxation (a lower bound),
as for the Wasserstein master.
"""

from __future__ import annotations

import numpy as np

from ..ambiguity.divergences import Divergence, get_divergence
from ..conic.builder import Affine, ProgramBuilder, linear_score
from ..conic.program import ConicProgram
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.design import row_design
from ..oracles.enumeration import ConfigurationRows
from .dual import declare_parameters, expected, penalty_term

def build_mot_program(inst: DROInstance, rows: ConfigurationRows, *, rho: float, theta1: float, theta2: float,
                      divergence) -> ConicProgram:
    """Program (D) of the module docstring over ``rows`` (``inst`` the data, loss and ground metric ``d``; its own
    radius is not used: the budget is ``rho``); ``divergence`` a :class:`~drokit.ambiguity.divergences.Divergence`
    or its name."""
    divergence = get_divergence(divergence)
    if not (theta1 > 0 and theta2 > 0) or (np.isinf(theta1) and np.isinf(theta2)):
        raise ParameterError(f"theta1 and theta2 must be > 0 and not both inf, got {theta1!r}, {theta2!r}")
    if np.isinf(theta1) and np.any(rows.cost > 0):
        raise ParameterError("theta1 = inf: no sample moves, so only the nominal rows (cost 0) belong to the program")
    pb = ProgramBuilder()
    coef, intercept, s = declare_parameters(pb, inst)
    sigma, shift = inst.row_signs(rows.sample, rows.flip)
    u = linear_score(coef, intercept, row_design(inst, rows)) * sigma - shift
    lam = pb.var("lambda", 1)
    if np.isfinite(theta1):
        mu = lam * float(theta1)                          # the rows' multiplier: the Wasserstein lambda of cost d
        inst.loss.epigraph(pb, u, s[rows.sample] + mu.repeat(rows.size) * rows.cost)
        numerical_moves(pb, inst, coef, mu)
    else:
        inst.loss.epigraph(pb, u, s[rows.sample])
    if inst.fixed_zero.size:
        pb.add_zero(coef[inst.fixed_zero])
    pb.add_nonneg(lam)
    pb.minimize(lam * float(rho) + divergence_aggregate(pb, inst, s, lam, theta2, divergence) + penalty_term(pb, inst, coef))
    return pb.build()


def numerical_moves(pb: ProgramBuilder, inst: DROInstance, coef: Affine, mu: Affine) -> None:
    """``lip(L) ||Gamma^{-1} beta_x||_* <= mu`` where a numerical feature can move, and ``lip(L) <= mu kappa`` for a
    regression label that can move (belbasi2023 Lemmas 1-3, at the rows' multiplier ``mu = lambda theta1``)."""
    lip = float(inst.loss.lipschitz)
    n = inst.n_numerical
    if n and np.any(np.isfinite(inst.metric.gamma)):
        inst.metric.numerical.add_dual_norm_leq(pb, coef[np.arange(n)] * lip, mu, inst.metric.gamma)
    if not inst.is_classification and np.isfinite(inst.metric.kappa):
        pb.add_nonneg(mu * inst.metric.kappa - lip)


def divergence_aggregate(pb: ProgramBuilder, inst: DROInstance, s: Affine, lam: Affine, theta2: float,
               divergence: Divergence) -> Affine:
    """``min_alpha alpha + sum_n p_n h phi*((s_n - alpha) / h)`` in conic form (module docstring;
    :meth:`Divergence.declare`), or ``sum_n p_n s_n`` with ``theta2 = inf``."""
    if np.isinf(theta2):
        return expected(s, inst)
    N = inst.n_samples
    alpha = pb.var("alpha", 1)
    t, offset = divergence.declare(pb, s - alpha.repeat(N), lam * float(theta2), N)
    return alpha + expected(t, inst) + offset


__all__ = ["build_mot_program"]
