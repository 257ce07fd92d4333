"""Worst-case risk AND a worst-case distribution of a fixed model under optimal transport with a moment constraint
(MOT-DRO; ``spec/mot-dro-training.md`` §3).

At the optimal multipliers ``(lambda*, alpha*)`` of the dual (:func:`drokit.certificates.mot_worst_case.mot_worst_case`)
sample ``n`` sends its mass ``p_n`` to a maximizer ``k_n`` of ``l_k - lambda* theta1 c_k`` with the weight
``w_n = (phi*)'((S_n - alpha*) / h)`` (``h = lambda* theta2``; KL ``exp((S_n - alpha*)/h)``, chi-square
``((S_n - alpha*)/(2h) + 1)_+``), so the effective distribution ``Q~ = sum_n p_n w_n delta_(xi_k_n)`` has total mass
``sum_n p_n w_n = 1``.  By the Lagrangian at those inner maximizers,

    R(beta) = E_Q~[l] + lambda* (rho - theta1 sum_n p_n w_n c_k_n - theta2 sum_n p_n phi(w_n)),

so ``Q~`` attains ``R`` when the budget binds.  The optimal ``lambda*`` is typically a kink of the piecewise-linear
``S_n(lambda theta1)``, where some samples have two maximizers, one of higher cost (chosen just left of the kink) and
one of lower cost (just right of it); their weights are the same (``S_n`` ties).  Optimality in ``lambda`` puts
``rho`` between the two budgets (``0`` is in the subdifferential ``[rho - spent_left, rho - spent_right]``), so a split
``t`` of those samples' mass, ``t`` on the left rows and ``1 - t`` on the right ones, spends exactly ``rho``: the
distribution returned, with at most ``2 N`` atoms, attains ``R(beta)`` (up to the search's accuracy in ``lambda``).
When ``lambda* theta1`` sits at the dual-norm floor of the numerical moves and the budget does not bind, the rest is
spent in the limit by moving numerical features (as for the Wasserstein ball): ``attained = False``.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from ..ambiguity.divergences import get_divergence
from ..certificates.mot_worst_case import KINK_STEP, mot_worst_case, worst_case_atoms
from ..instance import DROInstance
from ..oracles import make_oracle
from ..oracles.enumeration import enumerate_configurations
from ..oracles.rows import lambda_floor, row_losses
from .worst_case_result import WorstCaseResult, assemble_result


def divergence_value(w: np.ndarray, divergence) -> np.ndarray:
    """``phi(w)`` (:meth:`drokit.ambiguity.divergences.Divergence.value`): KL ``w log w - w + 1`` (``1`` at ``w = 0``),
    chi-square ``(w - 1)^2``, CVaR 0 within its weight bound."""
    return get_divergence(divergence).value(w)


def mot_worst_case_from_instance(inst: DROInstance, intercept: float, coef: np.ndarray, *, rho: float, theta1: float,
                                 theta2: float, divergence, classes: Optional[np.ndarray] = None
                                 ) -> WorstCaseResult:
    """The worst-case risk and distribution of the module docstring (``inst``: the data, loss and ground metric ``d``;
    the budget is ``rho``).  The atoms' ``mass`` is ``p_n w_n`` (times the split); ``cost`` the transport cost ``d``."""
    t0 = time.perf_counter()
    divergence = get_divergence(divergence)
    inst = inst.evaluated_at(coef)
    coef = np.asarray(coef, dtype=float).ravel()
    oracle = None if np.isinf(theta1) else make_oracle(inst, "auto")
    worst = mot_worst_case(inst, oracle, intercept, coef, rho=rho, theta1=theta1, theta2=theta2,
                           divergence=divergence)
    nominal = enumerate_configurations(inst, nominal_only=True)
    nominal_risk = float(inst.p @ row_losses(inst, nominal, intercept, coef))
    notes = [f"MOT-DRO (theta1 = {theta1:g}, theta2 = {theta2:g}, {divergence!r}): mass = p_n w_n, weights of mean 1"]
    atoms = worst_case_atoms(inst, oracle, intercept, coef, worst, rho=rho, theta1=theta1, theta2=theta2,
                             divergence=divergence)
    rows, mass, spent, attained = atoms.rows, atoms.mass, atoms.spent, atoms.attained
    if not attained:
        notes.append(f"lambda theta1 is at the dual-norm floor and the moves spend {spent:.6g} of {rho:.6g}: "
                     f"the rest is spent in the limit by moving numerical features")
    losses = row_losses(inst, rows, intercept, coef)
    costs = rows.cost
    lam = worst.lam if np.isfinite(worst.lam) else 0.0
    lower = float(mass @ losses) + lam * (rho - spent)       # the Lagrangian identity: = value when it binds
    result = assemble_result(inst, classes, value=worst.value, nominal_risk=nominal_risk, lam=worst.lam,
                             lam_min=lambda_floor(inst, coef) / theta1 if np.isfinite(theta1) else 0.0, rows=rows,
                             mass=mass, losses=losses, costs=costs, lower=min(lower, worst.value), limit=None,
                             method="oracle" if oracle is not None else "nominal", evaluations=0,
                             elapsed=time.perf_counter() - t0, notes=notes, radius=rho)
    result.attained = attained
    result.budget_used = float(spent)
    return result


__all__ = ["mot_worst_case_from_instance", "divergence_value", "KINK_STEP"]
