"""Conic back-ends (Clarabel, SCS, ECOS, MOSEK's unavailable paths) and the cvxpy / PICOS exports.

Every program is tiny and has a known optimum (or a scipy reference), so each back-end is checked
against the truth and against each other: primal and dual objectives, ``A^T y + c = 0``, ``y in K*``,
complementary slackness, and drokit's statuses for infeasible / unbounded programs.  SCS, ECOS, cvxpy
and PICOS are optional: their tests are skipped when the package is missing.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import scipy.optimize as so

from drokit.conic import ProgramBuilder
from drokit.exceptions import ParameterError, SolverNotAvailableError
from drokit.solvers import available_solvers, get_backend

# objective / residual tolerances per back-end (SCS is a first-order method)
TOL = {"clarabel": 1e-6, "ecos": 1e-6, "scs": 1e-4}


def backend(name: str):
    if name != "clarabel":
        pytest.importorskip(name)
    return get_backend(name)


# ------------------------------------------------------------------------------ test programs
def lp_program():
    """min -x0 - 2 x1 + 3  s.t.  x0 + x1 <= 4, x0 - x1 == 1, 0 <= x <= 3  (optimum -3.5 + 3)."""
    pb = ProgramBuilder()
    x = pb.var("x", 2)
    pb.add_leq(x[0] + x[1], pb.constant(4.0))
    pb.add_zero(x[0] - x[1] - 1.0)
    pb.add_nonneg(x)
    pb.add_leq(x, pb.constant(3.0, 2))
    pb.minimize(-1.0 * x[0] - 2.0 * x[1] + 3.0)
    res = so.linprog([-1, -2], A_ub=[[1, 1]], b_ub=[4], A_eq=[[1, -1]], b_eq=[1],
                     bounds=[(0, 3), (0, 3)])
    return pb.build(), res.fun + 3.0


def socp_program():
    """Sum of distances of ``w`` to 4 points (one soc block of 4 cones) + ||w||_2 (a single cone),
    with an equality between the blocks; reference from scipy."""
    P = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.5], [0.3, -1.0]])
    pb = ProgramBuilder()
    w = pb.var("w", 2)
    t = pb.var("t", 4)
    r = pb.var("r", 1)
    pb.add_soc(t, [w[0].repeat(4) - P[:, 0], w[1].repeat(4) - P[:, 1]])
    pb.add_zero(w[0] + 2.0 * w[1] - 0.4)
    pb.add_norm2_leq(w, r)
    pb.minimize(t.sum() + r + 1.5)

    def f(u):  # w = (0.4 - 2 u, u)
        wv = np.array([0.4 - 2 * u, u])
        return np.linalg.norm(P - wv, axis=1).sum() + np.linalg.norm(wv) + 1.5
    ref = so.minimize_scalar(f, bounds=(-5, 5), method="bounded", options={"xatol": 1e-12})
    return pb.build(), float(ref.fun)


def exp_program():
    """Softplus epigraph: min sum t_i + 0.5  s.t.  log(1 + e^{a_i}) <= t_i, written as
    e^{a_i - t_i} <= u_i, e^{-t_i} <= v_i, u_i + v_i <= 1 (two exp blocks, then a nonneg block,
    so SCS / ECOS must regroup the rows)."""
    a = np.array([0.3, -1.2, 2.0, 0.0])
    N = a.size
    pb = ProgramBuilder()
    t, u, v = pb.var("t", N), pb.var("u", N), pb.var("v", N)
    pb.add_exp(pb.constant(a) - t, pb.constant(1.0, N), u)
    pb.add_leq(u + v, pb.constant(1.0, N))
    pb.add_exp(-t, pb.constant(1.0, N), v)
    pb.add_zero(u[0] + v[0] - 1.0)  # an equality between cone blocks (tight at the optimum)
    pb.minimize(t.sum() + 0.5)
    return pb.build(), float(np.logaddexp(0.0, a).sum() + 0.5)


def pow_program(p: float = 3.0):
    """min_s ||q - s 1||_p via power cones: |z_i| <= r_i^{1/p} t^{1-1/p}, sum r = t."""
    q = np.array([1.0, -0.5, 2.0, 0.25])
    N = q.size
    pb = ProgramBuilder()
    s, t, r = pb.var("s", 1), pb.var("t", 1), pb.var("r", N)
    pb.add_pow(r, t.repeat(N), pb.constant(q) - s.repeat(N), 1.0 / p)
    pb.add_zero(r.sum() - t)
    pb.minimize(t + 0.0)
    ref = so.minimize_scalar(lambda z: np.sum(np.abs(q - z) ** p) ** (1 / p), bounds=(-3, 3),
                             method="bounded", options={"xatol": 1e-12})
    return pb.build(), float(ref.fun)


def single_cone_program():
    """Blocks of one cone each: min z + w  s.t.  (1, 2, z) in K_exp, (w) in Q^1 (w >= 0),
    ||(x0 - 1, x1)|| <= w + 1  (optimum 2 e^{1/2})."""
    pb = ProgramBuilder()
    z, w, x = pb.var("z", 1), pb.var("w", 1), pb.var("x", 2)
    pb.add_exp(pb.constant(1.0), pb.constant(2.0), z)
    pb.add_soc(w, [])
    pb.add_soc(w + 1.0, [x[0] - 1.0, x[1]])
    pb.minimize(z + w)
    return pb.build(), float(2 * np.exp(0.5))


PROGRAMS = {"lp": lp_program, "socp": socp_program, "exp": exp_program, "pow": pow_program,
            "single": single_cone_program}
SOLVERS = ["clarabel", "scs", "ecos"]


# ------------------------------------------------------------------------------- dual checks
def dual_cone_violation(program, y: np.ndarray) -> float:
    """Largest violation of ``y in K*`` (K* of zero rows is free; nonneg and soc are self-dual;
    K_exp* = cl{(u, v, w): u < 0, -u e^{v/u} <= e w}; K_pow(a)* = {(u/a)^a (v/(1-a))^(1-a) >= |w|})."""
    worst = 0.0
    for block, lo, hi in program.row_ranges():
        yb = y[lo:hi]
        if block.kind == "nonneg":
            worst = max(worst, float(np.max(-yb, initial=0.0)))
        elif block.kind == "soc":
            c = yb.reshape(block.count, block.dim)
            worst = max(worst, float(np.max(np.linalg.norm(c[:, 1:], axis=1) - c[:, 0],
                                            initial=0.0)))
        elif block.kind == "exp":
            c = yb.reshape(block.count, 3)
            u, v, w = c[:, 0], c[:, 1], c[:, 2]
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                lhs = np.where(u < 0, -u * np.exp(v / np.where(u < 0, u, -1.0)), 0.0)
            worst = max(worst, float(np.max(lhs - np.e * w, initial=0.0)),
                        float(np.max(u, initial=0.0)))
        elif block.kind == "pow":
            a = block.param
            c = yb.reshape(block.count, 3)
            u, v, w = np.maximum(c[:, 0], 0), np.maximum(c[:, 1], 0), c[:, 2]
            lhs = (u / a) ** a * (v / (1 - a)) ** (1 - a)
            worst = max(worst, float(np.max(np.abs(w) - lhs, initial=0.0)),
                        float(np.max(-c[:, :2], initial=0.0)))
    return worst


@pytest.mark.parametrize("kind", list(PROGRAMS))
@pytest.mark.parametrize("solver", SOLVERS)
def test_backends_reach_known_optimum_with_certified_duals(solver, kind):
    program, expected = PROGRAMS[kind]()
    be = backend(solver)
    if not {b.kind for b in program.cones} <= set(be.cones):
        pytest.skip(f"{solver} does not support {kind} programs")
    tol = TOL[solver]
    sol = be.solve(program)
    assert sol.status == "optimal", sol.raw_status
    scale = 1.0 + abs(expected)
    assert abs(sol.primal_objective - expected) <= tol * scale
    assert abs(sol.dual_objective - sol.primal_objective) <= tol * scale
    # primal feasibility, dual feasibility (A^T y + c = 0, y in K*), complementary slackness
    assert max(program.residual_by_cone(sol.x).values()) <= tol
    assert np.max(np.abs(program.A.T @ sol.y + program.c)) <= tol
    assert dual_cone_violation(program, sol.y) <= tol
    slack = program.b - program.A @ sol.x
    assert abs(slack @ sol.y) <= 10 * tol * scale
    # the dual objective is -b^T y + c0 in drokit's row order
    assert abs(-program.b @ sol.y + program.c0 - sol.dual_objective) <= 10 * tol * scale


@pytest.mark.parametrize("kind", list(PROGRAMS))
def test_backends_agree_with_clarabel(kind):
    program, _ = PROGRAMS[kind]()
    ref = get_backend("clarabel").solve(program)
    for solver in ("scs", "ecos"):
        try:
            be = get_backend(solver)
        except ImportError:
            continue
        if not be.available() or not {b.kind for b in program.cones} <= set(be.cones):
            continue
        sol = be.solve(program)
        assert abs(sol.primal_objective - ref.primal_objective) <= TOL[solver] * (
            1 + abs(ref.primal_objective)), solver


# --------------------------------------------------------------------- infeasible / unbounded
def infeasible_lp():
    pb = ProgramBuilder()
    x = pb.var("x", 2)
    pb.add_leq(pb.constant(1.0), x[0] + x[1])      # x0 + x1 >= 1
    pb.add_leq(x, pb.constant(-1.0, 2))            # x <= -1
    pb.minimize(x.sum())
    return pb.build()


def unbounded_lp():
    pb = ProgramBuilder()
    x = pb.var("x", 2)
    pb.add_nonneg(x[0])
    pb.add_zero(x[0] - x[1])
    pb.minimize(-1.0 * x[1] + 0.0)
    return pb.build()


@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible_and_unbounded_statuses(solver):
    be = backend(solver)
    sol = be.solve(infeasible_lp())
    assert sol.status == "infeasible", sol.raw_status
    assert not sol.has_solution
    sol = be.solve(unbounded_lp())
    assert sol.status == "unbounded", sol.raw_status
    assert not sol.has_solution


def test_ecos_iteration_limit_is_not_a_solution():
    be = backend("ecos")
    program, _ = exp_program()
    sol = be.solve(program, options={"max_iters": 1})
    assert sol.status == "max_iterations"
    assert not sol.has_solution


def test_scs_options_are_passed_through():
    be = backend("scs")
    program, expected = lp_program()
    sol = be.solve(program, options={"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000})
    assert abs(sol.primal_objective - expected) <= 1e-6


# ---------------------------------------------------------------------------- option errors
@pytest.mark.parametrize("solver", SOLVERS)
def test_unknown_option_names_the_option(solver):
    be = backend(solver)
    program, _ = lp_program()
    with pytest.raises(ParameterError, match="not_a_real_option"):
        be.solve(program, options={"not_a_real_option": 1})


def test_ecos_rejects_power_cones():
    be = backend("ecos")
    program, _ = pow_program()
    with pytest.raises(ParameterError, match="pow"):
        be.solve(program)


# ------------------------------------------------------------------- cone orders (numerical)
def test_ecos_exponential_cone_order():
    """ECOS's exp cone is z e^{x/z} <= y: our (x, y, z) must be passed as (x, z, y)."""
    ecos = pytest.importorskip("ecos")
    import scipy.sparse as sp
    c = np.array([0.0, 0.0, 1.0])                      # min z  s.t. x = 1, y = 2
    A, b = sp.csc_matrix(np.array([[1.0, 0, 0], [0, 1.0, 0]])), np.array([1.0, 2.0])
    G = sp.csc_matrix(-np.eye(3)[[0, 2, 1]])
    sol = ecos.solve(c, G, np.zeros(3), {"l": 0, "q": [], "e": 1}, A, b, verbose=False)
    assert sol["info"]["exitFlag"] == 0
    assert abs(sol["x"][2] - 2 * np.exp(0.5)) <= 1e-6


def test_picos_exponential_cone_order():
    """PICOS's ExponentialCone is x >= y e^{z/y}: our (x, y, z) is PICOS's (z, y, x)."""
    picos = pytest.importorskip("picos")
    pytest.importorskip("ecos")
    v = picos.RealVariable("v", 3)
    P = picos.Problem()
    P.set_objective("min", v[2])
    P.add_constraint(v[0] == 1)
    P.add_constraint(v[1] == 2)
    P.add_constraint(picos.block([[v[2]], [v[1]], [v[0]]]) << picos.ExponentialCone())
    P.solve(solver="ecos")
    assert abs(float(P.value) - 2 * np.exp(0.5)) <= 1e-6


# ---------------------------------------------------------------------------------- MOSEK
@pytest.fixture
def mosek_module(monkeypatch):
    """drokit.solvers.mosek with the per-process licence cache cleared."""
    import drokit.solvers.mosek as mod
    monkeypatch.setattr(mod, "_LICENCE_CACHE", None)
    return mod


def fake_mosek(checkout_error=None, env_error=None):
    """A stand-in ``mosek`` module whose licence checkout raises ``checkout_error``."""
    mosek = types.ModuleType("mosek")

    class Error(Exception):
        def __init__(self, errno, msg=""):
            super().__init__(f"{errno}: {msg}")
            self.errno, self.msg = errno, msg

    class Env:
        created = 0

        def __init__(self):
            Env.created += 1
            if env_error is not None:
                raise env_error

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def checkoutlicense(self, feature):
            if checkout_error is not None:
                raise checkout_error(Error)

    mosek.Error, mosek.Env = Error, Env
    mosek.feature = types.SimpleNamespace(pts="pts", pton="pton")
    return mosek


def test_mosek_not_installed(monkeypatch, mosek_module):
    monkeypatch.setitem(sys.modules, "mosek", None)  # makes ``import mosek`` raise ImportError
    be = get_backend("mosek")
    reason = be.unavailable_reason()
    assert reason.startswith("mosek is not installed")
    assert "Clarabel" in reason
    assert "mosek" not in available_solvers()
    program, _ = lp_program()
    with pytest.raises(SolverNotAvailableError, match="mosek is not installed") as err:
        be.solve(program)
    assert err.value.solver == "mosek"


def test_mosek_without_licence_is_a_clear_sentence(monkeypatch, mosek_module):
    fake = fake_mosek(checkout_error=lambda Error: Error(
        "rescode.err_missing_license_file(1008)", ""))
    monkeypatch.setitem(sys.modules, "mosek", fake)
    be = get_backend("mosek")
    reason = be.unavailable_reason()
    assert reason.startswith("mosek is installed but no licence was found")
    assert "err_missing_license_file" in reason and "Clarabel" in reason
    assert not be.available()
    assert "mosek" not in available_solvers()
    assert fake.Env.created == 1  # checked once per process, then cached
    program, _ = exp_program()
    with pytest.raises(SolverNotAvailableError, match="no licence"):
        be.solve(program)
    assert fake.Env.created == 1


def test_mosek_broken_environment_does_not_crash(monkeypatch, mosek_module):
    monkeypatch.setitem(sys.modules, "mosek", fake_mosek(env_error=RuntimeError("no env")))
    reason = get_backend("mosek").unavailable_reason()
    assert "no licence" in reason and "no env" in reason


def test_mosek_licensed_fake_is_available(monkeypatch, mosek_module):
    monkeypatch.setitem(sys.modules, "mosek", fake_mosek())
    assert get_backend("mosek").unavailable_reason() is None


def test_mosek_translation_and_readback_without_mosek(mosek_module):
    """apply() and invert() are plain numpy: F = -A, g = b with exp cones flipped to MOSEK's
    (z, y, x), and ACC duals come back in drokit's order with drokit's sign."""
    program, _ = exp_program()
    be = mosek_module.MosekBackend()
    data = be.apply(program)
    m, n = program.A.shape
    import scipy.sparse as sp
    F = sp.coo_matrix((data["F_vals"], (data["F_rows"], data["F_cols"])), shape=(m, n)).toarray()
    perm = data["perm"]
    assert np.allclose(F, -program.A.toarray()[perm])
    assert np.allclose(data["g"], program.b[perm])
    lo = program.row_ranges()[0][1]
    assert list(perm[lo:lo + 3]) == [lo + 2, lo + 1, lo]  # first exp cone (x, y, z) -> (z, y, x)
    ref = get_backend("clarabel").solve(program)
    raw = {"solsta": "optimal", "prosta": "prim_and_dual_feas", "trm": "ok", "x": ref.x,
           "y": ref.y[perm], "pobj": ref.primal_objective - program.c0,
           "dobj": ref.dual_objective - program.c0, "iterations": 7, "solve_time": 0.1}
    sol = be.invert(raw, program, data)
    assert sol.status == "optimal"
    assert np.allclose(sol.y, ref.y)
    assert np.allclose(program.A.T @ sol.y + program.c, 0, atol=1e-6)
    assert sol.primal_objective == pytest.approx(ref.primal_objective)
    assert be.status_of("prim_infeas_cer", "ok") == "infeasible"
    assert be.status_of("dual_infeas_cer", "ok") == "unbounded"
    assert be.status_of("unknown", "trm_max_iterations") == "max_iterations"
    assert be.status_of("unknown", "trm_max_time") == "time_limit"
    assert be.status_of("prim_and_dual_feas", "trm_stall") == "optimal_inaccurate"
    assert be.status_of("unknown", "trm_stall") == "solver_error"


# ---------------------------------------------------------------------------------- exports
@pytest.mark.parametrize("kind", list(PROGRAMS))
def test_to_cvxpy_reproduces_clarabel(kind):
    cp = pytest.importorskip("cvxpy")
    from drokit.conic.export import to_cvxpy
    program, expected = PROGRAMS[kind]()
    ref = get_backend("clarabel").solve(program)
    problem, x = to_cvxpy(program)
    problem.solve(solver=cp.CLARABEL)
    assert problem.status == cp.OPTIMAL
    assert abs(problem.value - ref.primal_objective) <= 1e-6 * (1 + abs(expected))
    assert max(program.residual_by_cone(x.value).values()) <= 1e-6


@pytest.mark.parametrize("kind", ["lp", "socp", "exp", "single"])
def test_to_picos_reproduces_clarabel(kind):
    pytest.importorskip("picos")
    pytest.importorskip("ecos")
    from drokit.conic.export import to_picos
    program, expected = PROGRAMS[kind]()
    ref = get_backend("clarabel").solve(program)
    problem, x = to_picos(program)
    problem.solve(solver="ecos")
    assert abs(float(problem.value) - ref.primal_objective) <= 1e-6 * (1 + abs(expected))
    xv = np.asarray(x.value, dtype=float).ravel()
    assert max(program.residual_by_cone(xv).values()) <= 1e-6


def test_picos_export_is_one_constraint_per_block():
    pytest.importorskip("picos")
    from drokit.conic.export import to_picos
    program, _ = exp_program()
    problem, _ = to_picos(program)
    assert len(problem.constraints) == len(program.cones)


def test_to_picos_rejects_power_cones():
    from drokit.conic.export import to_picos
    program, _ = pow_program()
    with pytest.raises(ParameterError, match="to_cvxpy"):
        to_picos(program)


def _stored_program(name: str):
    """A ConicProgram stored by ``np.savez_compressed`` (COO matrix, cone blocks as (kind, dim, count))."""
    from pathlib import Path

    import scipy.sparse as sp

    from drokit.conic.program import ConeBlock, ConicProgram
    d = np.load(Path(__file__).parent / "data" / name)
    kinds = ("zero", "nonneg", "soc", "exp")
    A = sp.csc_matrix((d["data"], (d["row"], d["col"])), shape=tuple(d["shape"]))
    return ConicProgram(c=d["c"], A=A, b=d["b"], cones=[ConeBlock(kinds[k], int(dim), int(n)) for k, dim, n in d["cones"]],
                        c0=float(d["c0"][0]))


def test_clarabel_solves_the_master_its_scaling_switch_stalls_on():
    """A cutting-plane master of calibrated audiology (logistic, multi-class budget cuts; 6,770 variables,
    838 exponential cones).  With Clarabel's own settings its steps collapse after the switch to dual
    scaling (InsufficientProgress with every other retry setting; MaxIterations at max_step_fraction
    0.8).  SCS solves it to 0.2129028; the retry ladder's ``min_switch_step_length=1e-3`` does too."""
    from drokit.solvers.base import solve_with_retries
    program = _stored_program("clarabel_switch_master.npz")
    sol = solve_with_retries(get_backend("clarabel"), program, {"tol_gap_rel": 1e-7, "tol_gap_abs": 1e-7,
                                                                 "tol_feas": 1e-7})
    assert sol.status == "optimal", sol.info["attempts"]
    assert sol.primal_objective == pytest.approx(0.2129028, abs=2e-7)
    assert sol.dual_objective == pytest.approx(0.2129028, abs=2e-7)


@pytest.mark.parametrize("kind", ["exp", "socp", "single"])
def test_sorted_by_cone_is_the_same_program(kind):
    """ConicProgram.sorted_by_cone: blocks grouped zero < nonneg < soc < exp < pow, the rows permuted
    with them; the same optimum, and the permuted dual is a dual of the original (A^T y + c = 0)."""
    program, optimum = PROGRAMS[kind]()
    ordered, perm = program.sorted_by_cone()
    ranks = [("zero", "nonneg", "soc", "exp", "pow").index(b.kind) for b in ordered.cones]
    assert ranks == sorted(ranks) and sorted(perm.tolist()) == list(range(program.A.shape[0]))
    assert ordered.cone_counts() == program.cone_counts()
    sol = get_backend("clarabel").solve(ordered)
    assert sol.primal_objective == pytest.approx(optimum, abs=1e-6)
    y = np.empty_like(sol.y)
    y[perm] = sol.y
    assert np.max(np.abs(program.A.T @ y + program.c)) <= 1e-6
    assert max(program.residual_by_cone(sol.x).values()) <= 1e-7
    if kind != "single":        # these builders emit at least two kinds out of cvxpy's order
        assert [b.kind for b in ordered.cones] != [b.kind for b in program.cones]
