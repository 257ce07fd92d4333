"""``mot``: optimal transport with a moment constraint (:class:`~drokit.OTMoment` with a ``radius``), bound as a
:class:`~drokit.instance.MOTInstance`.

Compiled to the MOT-DRO program (D) of ``spec/mot-dro-training.md`` (:mod:`drokit.reformulations.mot_dual`) over the
nominal rows, or over every configuration row when they are few (at most
:data:`~.monolithic.MONOLITHIC_AUTO_LIMIT`); the driver (:class:`drokit.models.mot_problem.CompiledMOT`) starts from MOT
phase 1's point and rows (:mod:`drokit.reformulations.mot_phase_one`), runs slope-cut masters on wide categorical data
(:mod:`drokit.reformulations.mot_slope_search`), adds the rows the Wasserstein oracle finds at ``lambda theta1``
round by round (a cutting plane) and certifies each model by its exact worst-case risk
(:mod:`drokit.certificates.mot_worst_case`) against an explicit dual point (:mod:`drokit.certificates.mot_lower_bound`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..instance import MOTInstance
from ..oracles.enumeration import count_configuration_rows, enumerate_configurations
from ..reformulations.dual import CompiledProgram
from ..reformulations.mot_dual import build_mot_program
from .monolithic import MONOLITHIC_AUTO_LIMIT
from .registry import AutoRule, Method, register_method

REASON = ("optimal transport with a moment constraint (MOT-DRO: blanchet2024 Def. 1, cost (2.1) with drokit's ground "
          "metric; spec/mot-dro-training.md (D)): the Wasserstein rows at lambda theta1 and the conjugate perspective "
          "of the reweighting divergence")


def first_rows(inst: MOTInstance, max_configurations: int = MONOLITHIC_AUTO_LIMIT):
    """Every configuration row when there are at most ``max_configurations`` of them (one program, exact), else the
    nominal rows (the cutting plane's start); only the nominal rows when no sample moves (``theta1 = inf``)."""
    training = inst.training
    if np.isinf(inst.theta1):
        return enumerate_configurations(training, nominal_only=True)
    if count_configuration_rows(training) <= min(int(max_configurations), MONOLITHIC_AUTO_LIMIT):
        return enumerate_configurations(training)
    return enumerate_configurations(training, nominal_only=True)


def mot_program(inst: MOTInstance, rows):
    """Program (D) of ``inst`` over ``rows`` (:func:`~drokit.reformulations.mot_dual.build_mot_program`)."""
    return build_mot_program(inst.training, rows, rho=inst.radius, theta1=inst.theta1, theta2=inst.theta2,
                             divergence=inst.divergence)


def compile_mot(inst: MOTInstance, max_configurations: int = MONOLITHIC_AUTO_LIMIT) -> CompiledProgram:
    """The first program of the MOT-DRO cutting plane (built when first asked for); ``info["rows"]`` its rows."""
    rows = first_rows(inst, max_configurations)
    return CompiledProgram(functools.partial(mot_program, inst, rows), "mot", REASON, rows.size, info={"rows": rows})


MOT = register_method(
    Method("mot", compile_mot, "optimal transport with a moment constraint (MOT-DRO): cutting plane over (D)",
           driver="mot", instance_type=MOTInstance),
    auto=(AutoRule("mot", 5, lambda inst, max_configurations: "an OT-with-moment set"),))
