"""Declarative parameter checks (issue 22 step 4): the estimators declare what each parameter must be
(``_parameter_constraints``, read by ``drokit.params.validate_parameters``), and every bad value is refused at ``fit``
with an error naming the parameter."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import drokit as dk
from drokit.params import Boolean, Check, OneOf, PositiveInteger, RealNumber, validate_parameters

BAD = {"method": "nope", "solver": "gurobi", "handle_unknown": "skip", "on_inaccurate": "ignore",
       "max_configurations": 0, "fit_intercept": "yes", "l1_penalty": "0.1", "l2_penalty": None, "time_limit": -1.0,
       "verbose": "loud", "solver_options": "tol=1e-9", "method_options": [("max_rounds", 5)]}


@pytest.mark.parametrize("estimator", [dk.DROClassifier, dk.DRORegressor])
def test_every_plain_parameter_is_declared(estimator):
    names = [p for p in inspect.signature(estimator.__init__).parameters if p != "self"]
    declared = set(estimator._parameter_constraints)
    # declarations check themselves; the categorical columns and levels are checked against the data
    assert set(names) - declared == {"loss", "ambiguity", "categorical_features", "categories"}
    assert declared <= set(names)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_refused_naming_the_parameter(name):
    X, y = np.eye(4), np.array([0, 1, 0, 1])
    with pytest.raises(dk.ParameterError, match=rf"^{name} must be"):
        dk.DROClassifier(**{name: BAD[name]}).fit(X, y)


def test_the_constraints_themselves():
    class Owner:
        pass
    owner = Owner()
    owner.a, owner.b, owner.c, owner.d, owner.e = "X", 3, np.True_, np.float64(0.5), 7
    validate_parameters(owner, {"a": OneOf(("x", "y"), normalize=str.lower), "b": PositiveInteger(),
                                "c": Boolean(), "d": RealNumber(), "e": Check(lambda v: None)})
    for value in (True, 2.0, -1, np.array([1, 2])):
        with pytest.raises(dk.ParameterError, match="b must be a positive integer"):
            PositiveInteger()(value, "b")
    with pytest.raises(dk.ParameterError, match=r"a must be one of \('x', 'y'\), got 3"):
        OneOf(("x", "y"), normalize=str.lower)(3, "a")
    with pytest.raises(dk.ParameterError, match=r"m must be one of \['p', 'q'\], got array"):
        OneOf(lambda: ["p", "q"])(np.array(["p", "q"]), "m")
    registry = ["one"]
    rule = OneOf(lambda: list(registry))
    registry.append("two")                                         # read at check time
    rule("two", "m")
