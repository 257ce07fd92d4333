"""The method registry (issue 22, step 2): every method is a registered :class:`drokit.methods.Method` with its
refusal and ``auto`` rules, read by ``method="auto"``, the compile step, the estimators' validation and the solve
dispatch.  A method registered from outside drokit is fitted and certified like a built-in one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.reformulations.dual import CompiledProgram, build_dual_program
from drokit.methods import (AutoRule, Method, auto_rules, choose_method, compile_instance, eligible_methods,
                            get_method, method_names, register_method, unregister_method)
from drokit.oracles.enumeration import enumerate_configurations

BUILT_IN = ("auto", "erm", "closed_form", "monolithic", "cutting_plane", "box", "graph", "intersection", "mot")


def _mixed(n: int = 40, seed: int = 3):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n),
                      "c": pd.Categorical(rng.choice(["a", "b", "c"], size=n)),
                      "d": pd.Categorical(rng.choice(["u", "v"], size=n))})
    y = np.where(X["x"] + (X["c"] == "a") + 0.5 * rng.normal(size=n) > 0.3, 1, -1)
    return X, y


def _instance(loss="logistic", radius=0.1, X=None, y=None):
    X, y = _mixed() if X is None else (X, y)
    return dk.Problem(loss=loss, ambiguity=dk.Wasserstein(radius=radius)).bind(X, y)


def test_the_built_in_methods_are_registered_in_order():
    assert method_names() == BUILT_IN
    assert get_method("cutting_plane").driver == "cutting_plane"
    assert get_method("intersection").driver == "intersection"
    assert {get_method(name).driver for name in ("erm", "closed_form", "monolithic", "box", "graph")} == {"program"}
    assert [rule.rank for rule in auto_rules()] == sorted(rule.rank for rule in auto_rules())
    assert auto_rules()[-1].method == "cutting_plane"     # the fallback is tried last


def test_auto_reads_the_rules_and_reports_the_reason():
    assert choose_method(_instance(radius=0.0), "auto") == ("erm", "auto: radius = 0")
    method, reason = choose_method(_instance(), "auto")
    assert method == "monolithic" and reason.startswith("auto: full enumeration is tiny")
    X, y = _mixed()
    numeric = _instance(X=X[["x"]], y=y)
    assert choose_method(numeric, "auto")[0] == "closed_form"
    assert choose_method(_instance(), "graph") == ("graph", "method='graph' requested by the user")
    with pytest.raises(dk.ParameterError, match=r"unknown method 'nope'; choose one of \['auto', 'erm'"):
        choose_method(_instance(), "nope")


def test_refusals_name_the_reason_and_keep_their_error_class():
    inst = _instance()
    why = eligible_methods(inst)
    assert why["monolithic"] is None and why["cutting_plane"] is None and why["graph"] is None
    assert "radius-0 problem" in why["erm"]
    assert "categorical features can change" in why["closed_form"]
    assert "piecewise-affine loss" in why["box"]
    assert why["intersection"].startswith("method='intersection' fits an Intersection of two Wasserstein balls; this "
                                          "problem's ambiguity set is a Wasserstein ball: use method='auto' or one of "
                                          "['erm', 'closed_form'")
    assert eligible_methods(_instance(loss="hinge"))["box"] is None
    # an explicit request raises the refusal itself, before any work
    with pytest.raises(dk.ParameterError, match="piecewise-affine loss"):
        compile_instance(inst, "box")
    with pytest.raises(dk.ProblemTooLargeError, match="max_configurations=10"):
        compile_instance(inst, "monolithic", max_configurations=10)
    assert "max_configurations=10" in eligible_methods(inst, max_configurations=10)["monolithic"]


def _enumerated(inst, max_configurations):
    """The monolithic program under another name: a method written outside drokit."""
    rows = enumerate_configurations(inst)
    return CompiledProgram(build_dual_program(inst, rows), "enumerated_copy",
                           "every configuration, compiled by a registered method of a test", rows.size)


@pytest.fixture
def registered():
    method = Method("enumerated_copy", _enumerated, "the monolithic program, registered by a test")
    register_method(method)
    try:
        yield method
    finally:
        if "enumerated_copy" in method_names():
            unregister_method("enumerated_copy")


def test_a_registered_method_is_fitted_and_certified(registered):
    X, y = _mixed()
    ball = dk.Wasserstein(radius=0.2)
    mine = dk.DROClassifier(ambiguity=ball, method="enumerated_copy").fit(X, y)
    reference = dk.DROClassifier(ambiguity=ball, method="monolithic").fit(X, y)
    assert mine.result_.method == "enumerated_copy"
    assert mine.result_.status == "optimal"
    assert mine.result_.objective == pytest.approx(reference.result_.objective, rel=1e-6)
    assert mine.result_.lower_bound <= mine.result_.upper_bound
    assert "registered method of a test" in mine.result_.method_reason
    # not in auto's choices until a rule names it
    assert dk.DROClassifier(ambiguity=ball).fit(X, y).result_.method != "enumerated_copy"


def test_an_auto_rule_of_a_registered_method_is_tried_by_rank(registered):
    X, y = _mixed()
    register_method(registered, replace=True,
                    auto=(AutoRule("enumerated_copy", 35, lambda inst, mc: "a test's rule before monolithic's"),))
    inst = _instance()
    assert choose_method(inst, "auto") == ("enumerated_copy", "auto: a test's rule before monolithic's")
    assert choose_method(_instance(radius=0.0), "auto")[0] == "erm"      # rank 10 comes first
    fit = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    assert fit.result_.method == "enumerated_copy"
    unregister_method("enumerated_copy")
    assert "enumerated_copy" not in method_names()
    assert all(rule.method != "enumerated_copy" for rule in auto_rules())
    assert choose_method(inst, "auto")[0] == "monolithic"
    with pytest.raises(dk.ParameterError, match="method must be one of"):
        dk.DROClassifier(method="enumerated_copy").fit(X, y)


def test_bad_registrations_are_refused(registered):
    with pytest.raises(dk.ParameterError, match="registered already"):
        register_method(Method("enumerated_copy", _enumerated, "again"))
    with pytest.raises(dk.ParameterError, match="other than 'auto'"):
        Method("auto", _enumerated, "x")
    with pytest.raises(dk.ParameterError, match="driver must be one of"):
        Method("other", _enumerated, "x", driver="mine")
    with pytest.raises(dk.ParameterError, match="must be AutoRules naming it"):
        register_method(Method("other", _enumerated, "x"), auto=(AutoRule("monolithic", 1, lambda i, m: "x"),))
    assert "other" not in method_names()
    with pytest.raises(dk.ParameterError, match="needs a drokit.methods.Method"):
        register_method("enumerated_copy")
    with pytest.raises(dk.ParameterError, match="unknown method"):
        unregister_method("never_registered")


def test_a_registered_oracle_drives_the_cutting_plane():
    """Oracles have a registry too: one registered by hand is what the cutting plane calls by name."""
    from drokit.oracles import EnumerationOracle, make_oracle, oracle_names, register_oracle, unregister_oracle
    calls = []

    class CountingOracle(EnumerationOracle):
        def separate(self, *args, **kwargs):
            calls.append(1)
            return super().separate(*args, **kwargs)

    X, y = _mixed()
    problem = dk.Problem(loss="logistic", ambiguity=dk.Wasserstein(radius=0.2))
    register_oracle("counting", lambda inst, max_configurations: CountingOracle(inst), "enumeration, counted")
    try:
        assert oracle_names()[-1] == "counting"
        res = problem.compile(X, y, "cutting_plane").solve(method_options={"oracle": "counting"})
        ref = problem.compile(X, y, "monolithic").solve()
        assert calls and res.status == "optimal"
        assert res.objective == pytest.approx(ref.objective, rel=1e-6)
        with pytest.raises(dk.ParameterError, match="registered already"):
            register_oracle("counting", lambda inst, mc: CountingOracle(inst), "again")
    finally:
        unregister_oracle("counting")
    with pytest.raises(dk.ParameterError, match=r"unknown oracle 'counting'; choose one of \['auto', 'hull', 'dp'"):
        make_oracle(_instance(), "counting")
    with pytest.raises(dk.ParameterError, match="other than 'auto'"):
        register_oracle("auto", lambda inst, mc: None, "x")
