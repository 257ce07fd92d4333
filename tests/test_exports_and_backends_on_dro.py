"""The same compiled DRO program exported to cvxpy and PICOS, and solved by every back-end, gives the
same optimal value (cross-checks of the compiler and the back-end translations, on small instances)."""

import warnings

import numpy as np
import pytest

import drokit as dk
from tests.reference.brute_force import random_instance

LEVELS = [2, 3]


def _compiled(loss, task, kappa=1.0, norm_p=1):
    Xn, Z, y = random_instance(11, 8, 2, LEVELS, task)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p), label=dk.LabelCost(kappa))
    prob = dk.Problem(loss, dk.Wasserstein(metric, radius=0.2), task=task)
    return prob.compile(np.column_stack([Xn, Z]), y, method="monolithic", categorical_features=[2, 3],
                        categories=[list(range(a)) for a in LEVELS])


CASES = [("logistic", "classification", 1.0, 1), ("hinge", "classification", np.inf, 2),
         ("smooth_hinge", "classification", 0.5, np.inf), ("huber", "regression", 2.0, 2),
         ("pinball", "regression", np.inf, 1)]


@pytest.mark.parametrize("loss,task,kappa,norm_p", CASES)
def test_to_cvxpy_reproduces_objective(loss, task, kappa, norm_p):
    cp = pytest.importorskip("cvxpy")
    compiled = _compiled(loss, task, kappa, norm_p)
    ours = compiled.solve().objective
    problem, x = compiled.to_cvxpy()
    problem.solve(solver=cp.CLARABEL)
    assert problem.status == "optimal"
    assert problem.value == pytest.approx(ours, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("loss,task,kappa,norm_p", CASES[:3])
def test_to_picos_with_ecos_reproduces_objective(loss, task, kappa, norm_p):
    pytest.importorskip("picos")
    pytest.importorskip("ecos")
    compiled = _compiled(loss, task, kappa, norm_p)
    ours = compiled.solve().objective
    problem, x = compiled.to_picos()
    problem.solve(solver="ecos")
    assert problem.value == pytest.approx(ours, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("solver,tol", [("ecos", 1e-6), ("scs", 1e-4)])
@pytest.mark.parametrize("loss,task,kappa,norm_p", CASES[:4])
def test_other_backends_reproduce_objective(solver, tol, loss, task, kappa, norm_p):
    pytest.importorskip(solver)
    compiled = _compiled(loss, task, kappa, norm_p)
    ours = compiled.solve().objective
    # ECOS/SCS may stop at "close to optimal" (e.g. ECOS on smooth hinge): accept it explicitly, the
    # value is still checked below and the status must say so
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        other = compiled.solve(solver=solver, on_inaccurate="warn")
    assert other.solver == solver
    assert other.status in ("optimal", "optimal_inaccurate")
    assert (other.status == "optimal") == (not other.warnings)
    assert other.objective == pytest.approx(ours, rel=tol, abs=tol)
    assert other.upper_bound == pytest.approx(other.objective, rel=max(tol, 1e-6), abs=max(tol, 1e-6))


def test_mosek_without_licence_is_a_clear_error():
    compiled = _compiled("logistic", "classification")
    if "mosek" in dk.solvers.available_solvers():
        pytest.skip("a licensed MOSEK is installed")
    with pytest.raises(dk.SolverNotAvailableError, match="mosek"):
        compiled.solve(solver="mosek")
