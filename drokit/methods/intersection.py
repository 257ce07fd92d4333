"""``intersection``: an :class:`~drokit.Intersection` of a ball around the training data and one around auxiliary
data (DR-ARO), bound as an :class:`~drokit.instance.IntersectionInstance`.

Compiled to the static program of selvi2025 thesis Thm 11 with free ``s, s_hat`` (spec
``selvi2025-thesis-dr-aro.md`` §2.5.2; :mod:`drokit.reformulations.intersection`), built when first asked for: the
driver (:class:`drokit.models.intersection_problem.CompiledIntersection`) solves it whole or by its own cutting plane
(:mod:`drokit.reformulations.intersection_cuts`) and brackets the fitted model's worst case from below by the
finite-support LP (:mod:`drokit.reformulations.intersection_bound`).  The program's value is a conservative UPPER
bound on the worst-case risk: the exact problem is NP-hard (Prop. 18).
"""

from __future__ import annotations

import functools

from typing import Optional

import numpy as np

from ..exceptions import ParameterError
from ..instance import IntersectionInstance
from ..reformulations.dual import CompiledProgram
from ..reformulations.intersection import build_intersection_program, intersection_rows
from .registry import AutoRule, Method, register_method

REASON = ("intersection of two Wasserstein balls: the static program of selvi2025 Thm 11 with free s, s_hat "
          "(spec §2.5.2) -- a conservative UPPER bound on the worst-case risk (the exact problem is NP-hard, "
          "Prop. 18); lower_bound is a finite-support LP at the fitted model")


def program_arguments(inst: IntersectionInstance) -> dict:
    """The static program's data (:func:`~drokit.reformulations.intersection.build_intersection_program`'s arguments
    but ``fit_intercept``) from the bound intersection."""
    training = inst.training
    metric = training.metric
    return dict(X=training.data.X, y=training.y, X_aux=inst.X_aux, y_aux=inst.y_aux, radius=training.radius,
                radius_aux=inst.radius_aux, loss=training.loss, p=metric.numerical.validated_p(),
                gamma=np.asarray(metric.gamma, dtype=float), kappa=metric.kappa)


def intersection_refusal(inst: IntersectionInstance, max_configurations: int = 0) -> Optional[ParameterError]:
    """A penalty: the static program has no lasso or ridge term."""
    if inst.training.penalized:
        return ParameterError("l1_penalty / l2_penalty are not supported with an Intersection ambiguity set")
    return None


def compile_intersection(inst: IntersectionInstance, max_configurations: int = 0) -> CompiledProgram:
    """The static program of ``inst`` (built on first use: the driver's cutting plane builds its own masters)."""
    args = program_arguments(inst)
    n_rows = intersection_rows(args["y"], args["y_aux"], args["kappa"])[0].size
    return CompiledProgram(functools.partial(build_intersection_program, **args,
                                             fit_intercept=inst.training.fit_intercept),
                           "intersection", REASON, n_rows)


INTERSECTION = register_method(
    Method("intersection", compile_intersection, "an intersection of Wasserstein balls (DR-ARO): the static program",
           refusal=intersection_refusal, driver="intersection", instance_type=IntersectionInstance),
    auto=(AutoRule("intersection", 5, lambda inst, max_configurations: "an Intersection of two Wasserstein balls"),))
