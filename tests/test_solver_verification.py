"""drokit's own check of an inaccurate solver answer (drokit.solvers.verification): an exact answer the
solver calls inaccurate is accepted as optimal without the retry ladder; a wrong one is not."""

from __future__ import annotations

import numpy as np
import pytest

import drokit as dk
from drokit.solvers import get_backend
from drokit.solvers.base import OPTIMAL, OPTIMAL_INACCURATE, solve_with_retries
from drokit.solvers.clarabel import ClarabelBackend
from drokit.solvers.verification import ACCEPT_ACCURACY, certificate, is_verified_optimal


def _degenerate_problem(seed: int = 0):
    """Logistic loss, binary features as numerical with the l1 ground norm, a radius so large that the
    optimum is the constant classifier beta = 0 (value log 2 at intercept 0 for balanced labels): every
    exponential cone is tight there and Clarabel's default settings end AlmostSolved."""
    rng = np.random.default_rng(seed)
    X = (rng.random((60, 8)) < 0.4).astype(float)
    y = np.repeat([1, -1], 30)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=1.0)).scaled(0.1)
    return dk.Problem("logistic", dk.Wasserstein(metric, 1.0)).compile(X, y)


class CallsEverythingInaccurate(ClarabelBackend):
    """Clarabel whose every answer is labelled inaccurate; ``corrupt`` also damages it."""

    def __init__(self, corrupt: str = ""):
        super().__init__()
        self.corrupt = corrupt
        self.calls = 0

    def solve(self, program, options=None, verbose=False):
        self.calls += 1
        sol = super().solve(program, options, verbose)
        sol.status, sol.raw_status = OPTIMAL_INACCURATE, "AlmostSolved"
        if self.corrupt == "primal":
            sol.x = sol.x + 1e-3
        elif self.corrupt == "dual":
            sol.y = sol.y * (1 + 1e-3)
        elif self.corrupt == "gap":
            sol.dual_objective = sol.primal_objective - 1e-3 * max(1.0, abs(sol.primal_objective))
        return sol


def test_exact_answer_called_inaccurate_is_accepted_after_one_solve():
    program = _degenerate_problem().program
    backend = CallsEverythingInaccurate()
    sol = solve_with_retries(backend, program)
    assert backend.calls == 1 and sol.status == OPTIMAL and sol.raw_status == "AlmostSolved"
    cert = sol.info["certificate"]
    assert cert["gap"] <= ACCEPT_ACCURACY and cert["dual_residual"] <= ACCEPT_ACCURACY
    assert sol.primal_objective == pytest.approx(np.log(2), abs=1e-6)


@pytest.mark.parametrize("corrupt", ["primal", "dual", "gap"])
def test_damaged_answer_is_not_accepted(corrupt):
    program = _degenerate_problem().program
    backend = CallsEverythingInaccurate(corrupt)
    sol = solve_with_retries(backend, program)
    assert sol.status == OPTIMAL_INACCURATE                     # the ladder ran and nothing verified
    assert backend.calls == 1 + len(ClarabelBackend.RETRY_SETTINGS)
    assert not is_verified_optimal(program, sol)


def test_verification_can_be_switched_off():
    program = _degenerate_problem().program
    backend = CallsEverythingInaccurate()
    sol = solve_with_retries(backend, program, verify=False)
    assert sol.status == OPTIMAL_INACCURATE and backend.calls == 1 + len(ClarabelBackend.RETRY_SETTINGS)


def test_certificate_of_a_missing_solution_is_infinite():
    program = _degenerate_problem().program
    sol = get_backend("clarabel").solve(program)
    sol.x = None
    assert all(np.isinf(certificate(program, sol)[k]) for k in ("gap", "primal_residual", "dual_residual"))


@pytest.mark.parametrize("seed", [0, 1])
def test_degenerate_optimum_fits_optimal_with_the_default_raise(seed):
    """The estimator path: no SolverError with on_inaccurate='raise', the constant classifier, and the
    same value as the unverified retry ladder finds."""
    compiled = _degenerate_problem(seed)
    res = compiled.solve(solver="clarabel")     # the conic path (solver="auto" fits it with the barrier solver)
    assert res.status == "optimal" and not res.warnings
    assert res.objective == pytest.approx(np.log(2), abs=1e-6)
    assert np.abs(res.coef).max() <= 1e-6
    assert res.upper_bound == pytest.approx(np.log(2), abs=1e-6)    # the independent evaluation agrees
    if res.raw_status != "Solved":
        assert res.auxiliary["verified_inaccurate"]["raw_status"] == res.raw_status
    ladder = solve_with_retries(get_backend("clarabel"), compiled.program, verify=False)
    assert ladder.primal_objective == pytest.approx(res.objective, abs=1e-6)
