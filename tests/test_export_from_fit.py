"""Exports and size errors as a user meets them (issue 20, item 9).

* A fitted estimator keeps no compiled problem: ``est.result_.to_cvxpy()`` rebuilds the program of the fit on
  the training data bound at fit (what is kept is the encoded instance, not the program; the cutting plane's
  final master is kept as it is small by construction).
* What is exported is said where it is exported: a tangent-approximated loss's program is a relaxation
  (its value is below the fit's objective), a cutting-plane fit's program is the final master.
* ``ProblemTooLargeError`` suggests a way out that differs from what is already in use.
"""

import pickle

import numpy as np
import pytest

import drokit as dk
from drokit.conic import export
from tests.factories import two_plus_two_frame

cp = pytest.importorskip("cvxpy")
sp = pytest.importorskip("sympy")


def _solve(problem):
    problem.solve(solver="CLARABEL")
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


@pytest.mark.parametrize("method", ["monolithic", "graph", "box", "closed_form", "erm"])
def test_the_export_of_a_fitted_estimator_reproduces_its_objective(method):
    X, y = two_plus_two_frame(30, 3)
    if method == "closed_form":
        X = X[["a", "b"]]
    loss = "hinge" if method == "box" else "logistic"
    radius = 0.0 if method == "erm" else 0.1
    est = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=radius), method=method).fit(X, y)
    problem, x = est.result_.to_cvxpy()
    assert _solve(problem) == pytest.approx(est.result_.objective, rel=1e-6, abs=1e-8)
    program = est.result_.conic_program()
    np.testing.assert_allclose(program.value("coef", x.value), est.coef_.ravel(), atol=1e-3)


def test_the_export_after_the_barrier_solver_is_the_conic_program_it_did_not_need():
    X, y = two_plus_two_frame(40, 3)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1)).fit(X[["a", "b"]], y)
    assert est.result_.solver == "barrier"
    problem, _ = est.result_.to_cvxpy()
    assert _solve(problem) == pytest.approx(est.result_.objective, rel=1e-6)


@pytest.mark.parametrize("structured", [False, True])
def test_the_export_of_a_cutting_plane_fit_is_its_final_master(structured):
    """With the conic masters: the last one solved.  Certified by drokit's own solvers (no conic master,
    ``solver`` "phase_one" or "barrier_master"): the master over their final working set, built when asked for; its size is
    then not ``n_constraints`` (the terms drokit's solver had), so only its value is compared."""
    X, y = two_plus_two_frame(30, 3)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1), method="cutting_plane",
                           method_options={"structured_master": structured}).fit(X, y)
    r = est.result_
    assert (r.solver in ("phase_one", "barrier_master")) == structured
    problem, _ = r.to_cvxpy()
    master = _solve(problem)
    # the final master is a relaxation (a subset of the configuration rows): at most the optimum, within
    # the certified gap of it
    assert master <= r.upper_bound + 1e-6
    assert master == pytest.approx(r.objective, rel=1e-5)
    if not structured:
        assert r.conic_program().n_constraints == r.n_constraints


def test_the_export_of_a_tangent_approximated_loss_is_a_relaxation_below_the_fit():
    X, _ = two_plus_two_frame(40, 3)
    yr = X["a"] - X["b"] + np.random.default_rng(2).normal(size=40) * 0.5
    e = sp.Symbol("e")
    huber = dk.losses.from_sympy(sp.Piecewise((e ** 2 / 2, sp.Abs(e) <= 1), (sp.Abs(e) - sp.Rational(1, 2), True)),
                                 e, task="regression")
    assert huber.form == "outer"
    est = dk.DRORegressor(loss=huber, ambiguity=dk.Wasserstein(radius=0.05), method="monolithic").fit(X, yr)
    r = est.result_
    value = _solve(r.to_cvxpy()[0])
    assert value <= r.objective + 1e-9                       # tangents under-estimate the loss
    assert r.objective - value <= 2e-6 * max(1.0, abs(r.objective))   # by at most about the certified gap
    assert value <= r.upper_bound and value >= r.lower_bound - 2e-6 * max(1.0, abs(r.objective))


def test_the_export_survives_pickling_and_refits():
    X, y = two_plus_two_frame(30, 3)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1), method="monolithic").fit(X, y)
    first = est.result_
    clone = pickle.loads(pickle.dumps(est))
    assert _solve(clone.result_.to_cvxpy()[0]) == pytest.approx(first.objective, rel=1e-6)
    est.set_params(ambiguity=dk.Wasserstein(radius=0.3)).fit(X, y)
    assert _solve(first.to_cvxpy()[0]) == pytest.approx(first.objective, rel=1e-6)   # the old fit's program
    assert _solve(est.result_.to_cvxpy()[0]) == pytest.approx(est.result_.objective, rel=1e-6)


def test_what_is_exported_is_said_where_it_is_exported():
    from drokit.models.problem import CompiledProblem
    for doc in (export.to_cvxpy.__doc__, export.to_picos.__doc__, dk.FitResult.to_cvxpy.__doc__,
                CompiledProblem.to_cvxpy.__doc__):
        text = " ".join(doc.split())
        assert "relaxation" in text and "final master" in text, doc


# ------------------------------------------------------------------------------ ProblemTooLargeError
def test_the_size_error_of_the_enumeration_oracle_does_not_suggest_the_cutting_plane_in_use():
    X, y = two_plus_two_frame(30, 3)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1), method="cutting_plane", max_configurations=50,
                           method_options={"oracle": "enumeration"})
    with pytest.raises(dk.ProblemTooLargeError) as info:
        est.fit(X, y)
    msg = str(info.value)
    assert "use method='cutting_plane'" not in msg
    assert "oracle" in msg and "'auto'" in msg


def test_the_size_error_of_the_monolithic_program_suggests_the_cutting_plane():
    X, y = two_plus_two_frame(30, 3)
    est = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1), method="monolithic", max_configurations=50)
    with pytest.raises(dk.ProblemTooLargeError, match="method='cutting_plane'"):
        est.fit(X, y)
