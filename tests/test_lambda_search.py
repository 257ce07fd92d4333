"""The one F(lambda) minimizer every certificate uses (drokit.certificates.lambda_search): Kelley's method on
``F(lambda) = lambda eps + sum_n p_n max_k (l_k - lambda c_k)`` against the LP solution of the same problem
(``minimize_over_lambda``, scipy's HiGHS), with and without a hint, at the floor, and its bracket."""

from __future__ import annotations

import numpy as np
import pytest

from drokit.certificates.lambda_search import LinePoint, minimize_line
from drokit.certificates.worst_case import minimize_over_lambda
from drokit.exceptions import SolverError


def _random_F(seed: int, N: int = 7, K: int = 5):
    rng = np.random.default_rng(seed)
    sample = np.repeat(np.arange(N), K)
    losses = rng.exponential(size=N * K)
    cost = rng.exponential(size=N * K)
    cost[::K] = 0.0                                     # every sample's nominal row costs nothing
    losses[::K] = rng.exponential(size=N) * 0.2
    p = rng.dirichlet(np.ones(N))
    eps = float(rng.uniform(0.05, 1.0))

    def line(lam):
        value = losses - lam * cost
        best = np.full(N, -np.inf)
        np.maximum.at(best, sample, value)
        arg = np.array([np.flatnonzero((sample == n) & (value == best[n]))[-1] for n in range(N)])
        return LinePoint(lam, lam * eps + float(p @ best), eps - float(p @ cost[arg]))

    return line, (losses, cost, sample, p, eps)


@pytest.mark.parametrize("seed", range(40))
def test_kelley_equals_the_lp(seed):
    line, (losses, cost, sample, p, eps) = _random_F(seed)
    lam_min = [0.0, 0.3, 2.0][seed % 3]
    reference, lam_ref, _ = minimize_over_lambda(losses, cost, sample, p, eps, lam_min)
    plain = minimize_line(line, lam_min)
    assert plain.value == pytest.approx(reference, rel=1e-10, abs=1e-12)
    assert plain.best.value >= reference - 1e-12          # F at an evaluated lambda: an upper bound
    assert plain.lam >= lam_min
    assert plain.right.slope >= 0 and (plain.left is None or plain.left.slope <= 0)
    if plain.left is None:                                # optimal at the floor, found at once
        assert plain.lam == lam_min
    for hint in (lam_ref * 1.5 + 0.1, max(lam_ref * 0.5, lam_min + 1e-3)):
        hinted = minimize_line(line, lam_min, hint=hint)
        assert hinted.best.value == pytest.approx(reference, rel=1e-10, abs=1e-12)


def test_a_line_that_keeps_decreasing_is_an_error():
    with pytest.raises(SolverError, match="keeps decreasing"):
        minimize_line(lambda lam: LinePoint(lam, -lam, -1.0), 0.0, lam_max=1e6)
