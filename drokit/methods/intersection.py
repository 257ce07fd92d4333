"""``intersection``: an :class:`~drokit.Intersection` of a ball around the training data and one around auxiliary
data (DR-ARO).  Compiled from the :class:`~drokit.Problem` and its two data sets
(:func:`drokit.models.intersection_problem.compile_intersection`), not from one bound instance: registered so that
``method=`` accepts it and an instance of another ambiguity set is refused with the reason."""

from __future__ import annotations

from typing import Optional

from ..exceptions import ParameterError
from ..instance import DROInstance
from .registry import Method, register_method

NEEDS_INTERSECTION = ("method='intersection' needs an Intersection ambiguity set "
                      "(ball_around_training & Wasserstein(metric, radius, center=(X_aux, y_aux)))")


def intersection_refusal(inst: DROInstance, max_configurations: int = 0) -> Optional[ParameterError]:
    """Always: a bound instance holds one ball (an Intersection never reaches :func:`.auto.compile_instance`)."""
    return ParameterError(NEEDS_INTERSECTION)


def _not_from_an_instance(inst: DROInstance, max_configurations: int = 0):
    raise ParameterError(NEEDS_INTERSECTION)


INTERSECTION = register_method(Method("intersection", _not_from_an_instance,
                                      "an intersection of Wasserstein balls (DR-ARO), from the Problem",
                                      refusal=intersection_refusal, driver="intersection"))
