"""``closed_form``: no mutable categorical feature, where the DRO problem is a regularized ERM.

belbasi2023 Lemmas 1-3 (note D2 item 4): classification with ``kappa = inf`` is ``mean L + eps lip ||Gamma^{-1}
beta_x||_*``; regression is ``mean L + eps lip max(||Gamma^{-1} beta_x||_*, 1/kappa)``; classification with finite
``kappa`` is the small program ``min lambda eps + mean max(L(y f), L(-y f) - lambda kappa)``, ``lambda >= lip
||.||_*``.  All are the dual program of :mod:`drokit.reformulations.dual` over the (nominal and label-flipped)
rows; the logistic model also goes to the structured barrier solver (:mod:`drokit.solvers.barrier`).
"""

from __future__ import annotations

import functools

from typing import Optional

import numpy as np

from ..reformulations.dual import CompiledProgram, build_dual_program
from ..exceptions import ParameterError
from ..instance import DROInstance
from ..oracles.enumeration import enumerate_configurations
from .registry import AutoRule, Method, register_method


def closed_form_refusal(inst: DROInstance, max_configurations: int = 0) -> Optional[ParameterError]:
    if inst.n_categorical and np.any(np.isfinite(inst.metric.delta)):
        return ParameterError(
            f"method='closed_form' needs data whose categorical features are all immutable (or none), but "
            f"{int(np.isfinite(inst.metric.delta).sum())} categorical features can change; use method='monolithic' "
            f"or 'auto'")
    return None


def compile_closed_form(inst: DROInstance, max_configurations: int = 0) -> CompiledProgram:
    """The regularized form of the module docstring (built when the program is first asked for)."""
    refusal = closed_form_refusal(inst)
    if refusal is not None:
        raise refusal
    rows = enumerate_configurations(inst)
    if inst.is_classification and inst.label_flips:
        why = ("all features numerical, finite kappa: min lambda*eps + mean max(L(y f), L(-y f) - "
               "lambda*kappa) with lambda >= lip*||Gamma^-1 beta_x||_* (belbasi2023 Prop. 1 with K = 0)")
    elif inst.is_classification:
        why = ("all features numerical, kappa = inf: the DRO problem equals regularized ERM "
               "mean L(y f) + eps*lip*||Gamma^-1 beta_x||_* (belbasi2023 Lemma 1; note D2 item 4)")
    else:
        why = ("all features numerical (regression): the DRO problem equals mean L(f - y) + "
               "eps*lip*max(||Gamma^-1 beta_x||_*, 1/kappa) (belbasi2023 Lemmas 2-3; note D2 item 4)")
    return CompiledProgram(functools.partial(build_dual_program, inst, rows), "closed_form", why, rows.size)


def _no_mutable_categorical(inst: DROInstance, max_configurations: int) -> Optional[str]:
    return "no mutable categorical features" if closed_form_refusal(inst) is None else None


CLOSED_FORM = register_method(
    Method("closed_form", compile_closed_form, "no mutable categorical feature: regularized ERM (belbasi2023 Lemmas 1-3)",
           refusal=closed_form_refusal),
    auto=(AutoRule("closed_form", 30, _no_mutable_categorical),))
