"""The sparse conic layer: affine algebra, cone interleaving, program checks and cone residuals."""

import numpy as np
import pytest
import scipy.sparse as sp

from drokit.conic import Affine, ConeBlock, ConicProgram, ProgramBuilder
from drokit.conic.builder import interleave
from drokit.conic.program import cone_violation
from drokit.solvers import get_backend


def test_affine_algebra_matches_dense_evaluation():
    pb = ProgramBuilder()
    x = pb.var("x", 3)
    y = pb.var("y", 2)  # allocated after x: x's matrix must be padded when combined
    rng = np.random.default_rng(0)
    D = rng.normal(size=(4, 3))
    expr = x.premultiply(sp.csr_matrix(D)) * np.array([1.0, -2.0, 0.5, 3.0]) + 1.5 - y[[0, 1, 1, 0]]
    v = rng.normal(size=5)
    expected = (D @ v[:3]) * np.array([1.0, -2.0, 0.5, 3.0]) + 1.5 - v[3:][[0, 1, 1, 0]]
    np.testing.assert_allclose(expr.evaluate(v), expected)
    np.testing.assert_allclose((D @ x).evaluate(v), D @ v[:3])
    assert x.sum().evaluate(v)[0] == pytest.approx(v[:3].sum())
    np.testing.assert_allclose(x[[2]].repeat(3).evaluate(v), [v[2]] * 3)


def test_interleave_orders_rows_cone_by_cone():
    pb = ProgramBuilder()
    a, b, c = (pb.constant(np.array([1.0, 2.0]) + k) for k in (0, 10, 20))
    np.testing.assert_allclose(interleave([a, b, c]).k, [1, 11, 21, 2, 12, 22])


def test_program_check_rejects_bad_shapes_and_nan():
    A = sp.csc_matrix(np.ones((2, 2)))
    with pytest.raises(ValueError, match="cones cover"):
        ConicProgram(np.zeros(2), A, np.zeros(2), [ConeBlock("nonneg", 1)]).check()
    with pytest.raises(ValueError, match="non-finite"):
        ConicProgram(np.array([np.nan, 0]), A, np.zeros(2), [ConeBlock("nonneg", 2)]).check()
    with pytest.raises(ValueError, match="unknown cone"):
        ConeBlock("psd", 3)


def test_cone_violation_detects_infeasible_points():
    assert cone_violation(ConeBlock("soc", 3, 1), np.array([1.0, 0.6, 0.8])) == pytest.approx(0, abs=1e-12)
    assert cone_violation(ConeBlock("soc", 3, 1), np.array([1.0, 1.0, 1.0])) > 0.4
    assert cone_violation(ConeBlock("exp", 3, 1), np.array([0.0, 1.0, 1.0])) == pytest.approx(0)
    assert cone_violation(ConeBlock("exp", 3, 1), np.array([1.0, 1.0, 1.0])) == pytest.approx(np.e - 1)
    assert cone_violation(ConeBlock("pow", 3, 1, 0.5), np.array([4.0, 1.0, 2.0])) == pytest.approx(0)
    assert cone_violation(ConeBlock("pow", 3, 1, 0.5), np.array([4.0, 1.0, 3.0])) == pytest.approx(1)


def test_builder_merges_blocks_and_solution_is_feasible():
    pb = ProgramBuilder()
    x = pb.var("x", 3)
    pb.add_nonneg(x)
    pb.add_nonneg(3.0 - x.sum())
    pb.add_norm2_leq(x - 1.0, pb.constant([0.5]))
    pb.minimize(-(x.sum()))
    program = pb.build()
    assert [b.kind for b in program.cones] == ["nonneg", "soc"]
    sol = get_backend().solve(program)
    assert sol.status == "optimal"
    assert max(program.residual_by_cone(sol.x).values()) < 1e-7
    # maximize sum x on the ball ||x - 1|| <= 0.5 intersected with sum x <= 3
    assert sol.primal_objective == pytest.approx(-3.0, abs=1e-6)


def test_dual_norm_constraint_for_each_p():
    """max v^T b s.t. ||Gamma^{-1} b||_q <= 1 equals ||Gamma v||_p (the cost norm), for p in 1, 2, 3, inf."""
    from drokit.metrics import NormCost
    rng = np.random.default_rng(1)
    v, gamma = rng.normal(size=4), np.array([0.5, 1.0, 2.0, 3.0])
    for p in (1, 2, 3, np.inf):
        pb = ProgramBuilder()
        b = pb.var("b", 4)
        NormCost(p=p).add_dual_norm_leq(pb, b, pb.constant([1.0]), gamma)
        pb.minimize(-(b.premultiply(v.reshape(1, -1))))
        sol = get_backend().solve(pb.build())
        assert sol.status == "optimal"
        assert -sol.primal_objective == pytest.approx(np.linalg.norm(gamma * v, ord=p), rel=1e-6)
