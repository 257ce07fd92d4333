"""A hand-written cvxpy model of sun2025's graph formulation (Theorem 2, problem (14)), for comparison.

Written from the paper / notes (sun2025 notes §5.3-5.6), independently of drokit's compiler: its own
budget lattice, one graph per sample with source and sink (no shared potentials, no merged arcs),
logistic loss, categorical weights ``delta`` with ``p = 1`` (weighted
Hamming distance), ``kappa = inf``, numerical weights ``gamma`` with an l1 / l2 / l_inf cost:

    min   lambda eps + (1/N) sum_i r_i
    s.t.  y_i (beta_0 + beta_x^T x_i) >= mu^i_sink - mu^i_source                          (margin)
          mu^i_(k, d) - mu^i_(k-1, d') >= -y_i beta_{z_k}(v)       every arc (k-1,d') -> (k,d), level v
          log(1 + exp(mu^i_(m, d) - mu^i_sink)) <= r_i + lambda d                          (sink arcs)
          ||Gamma^{-1} beta_x||_* <= lambda,  lambda >= 0.

A layer k has for every node (k-1, d') one stay arc (level z_ik, to (k, d')) and a_k - 1 change arcs
(the other levels, to (k, d' + delta_k)); an immutable feature (delta = inf) has only its stay arc
(notes erratum 6).  Constraints are vectorized over the samples: one vector constraint per template
arc.  Every constraint involves a difference of potentials, so ``mu^i_source = 0`` is fixed (no loss
of generality).  ``sink_free=True`` also fixes ``mu^i_sink = y_i (beta_0 + beta_x^T x_i)`` (the margin
constraint is tight at an optimum since the sink arcs' left sides decrease in ``mu^i_sink``; notes
§5.9's sink-free form): the literal form leaves a slack sink potential per sample, and Clarabel stalls
on it (InsufficientProgress) on car-like instances from a few hundred samples, while the sink-free
one solves.

Run as a script for a side-by-side timing with ``drokit``'s ``compile_graph`` on a car-like instance:
``python benchmarks/cvxpy_graph_model.py [--n-samples 1728] [--radius 0.1]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Dict, List, Sequence, Tuple

import cvxpy as cp
import numpy as np
import scipy.sparse as sp


def _lattice(delta: Sequence[float], levels: Sequence[int]) -> List[List[float]]:
    """Budgets d reachable after each layer: D_0 = {0}, D_k = D_{k-1} U (D_{k-1} + delta_k)."""
    layers = [[0.0]]
    for dk_, a in zip(delta, levels):
        prev = layers[-1]
        nxt = set(prev)
        if np.isfinite(dk_) and a > 1:
            nxt |= {round(d + dk_, 12) for d in prev}
        layers.append(sorted(nxt))
    return layers


def _level_matrix(levels_of_rows: np.ndarray, a: int) -> sp.csr_matrix:
    """(N, a - 1) one-hot of the level (level 0 = reference = zero row)."""
    N = levels_of_rows.size
    on = levels_of_rows > 0
    return sp.csr_matrix((np.ones(int(on.sum())), (np.flatnonzero(on), levels_of_rows[on] - 1)),
                         shape=(N, max(a - 1, 0)))


def build_cvxpy_graph(X_num: np.ndarray, Z: np.ndarray, levels: Sequence[int], y: np.ndarray,
                      gamma: Sequence[float], delta: Sequence[float], eps: float,
                      norm_p: float = 1, *, sink_free: bool = False
                      ) -> Tuple[cp.Problem, Dict[str, cp.Variable]]:
    """Problem (14) as a ``cvxpy.Problem`` and its variables (``beta0``, ``beta_x``, ``beta_z`` (one per
    feature), ``lam``, ``r``, ``mu``).  ``y`` in {-1, +1}; ``Z`` integer level codes (0 = reference)."""
    X_num = np.asarray(X_num, float)
    Z = np.asarray(Z, int)
    y = np.asarray(y, float)
    N, n = X_num.shape
    levels = [int(a) for a in levels]
    delta = [float(d) for d in delta]
    lattice = _lattice(delta, levels)
    index = {}
    for k, budgets in enumerate(lattice):
        for d in budgets:
            index[(k, d)] = len(index)
    sink = len(index)
    source = index[(0, 0.0)]
    m = len(levels)

    beta0 = cp.Variable(name="beta0")
    beta_x = cp.Variable(n, name="beta_x") if n else None
    beta_z = [cp.Variable(a - 1, name=f"beta_z{l}") if a > 1 else None for l, a in enumerate(levels)]
    lam = cp.Variable(nonneg=True, name="lam")
    r = cp.Variable(N, name="r")
    mu = cp.Variable((N, sink + 1), name="mu")

    # mu is only defined up to a constant per sample (every constraint has a difference of two
    # potentials); fixing the source removes that degeneracy, which interior-point solvers dislike
    cons = [mu[:, source] == 0]
    score = beta0 + (X_num @ beta_x if n else 0)
    if sink_free:  # notes §5.9: mu_sink = y_i (beta_0 + beta_x^T x_i), the margin constraint is tight
        cons.append(mu[:, sink] == cp.multiply(y, score))
    else:
        cons.append(cp.multiply(y, score) >= mu[:, sink] - mu[:, source])
    for k in range(1, m + 1):
        l, a = k - 1, levels[k - 1]
        movable = np.isfinite(delta[l]) and a > 1
        alternatives = range(a) if movable else range(1)
        for d_prev in lattice[k - 1]:
            for alt in alternatives:
                level = (Z[:, l] + alt) % a
                d_next = d_prev if alt == 0 else round(d_prev + delta[l], 12)
                if a > 1:
                    weight = -cp.multiply(y, _level_matrix(level, a) @ beta_z[l])
                else:
                    weight = np.zeros(N)
                cons.append(mu[:, index[(k, d_next)]] - mu[:, index[(k - 1, d_prev)]] >= weight)
    for d in lattice[m]:
        cons.append(cp.logistic(mu[:, index[(m, d)]] - mu[:, sink]) <= r + lam * d)
    if n:
        w = cp.multiply(1.0 / np.asarray(gamma, float), beta_x)
        dual = {1: np.inf, 2: 2, np.inf: 1}[norm_p]
        cons.append(cp.norm(w, dual) <= lam)
    problem = cp.Problem(cp.Minimize(lam * eps + cp.sum(r) / N), cons)
    return problem, {"beta0": beta0, "beta_x": beta_x, "beta_z": beta_z, "lam": lam, "r": r, "mu": mu}


# ------------------------------------------------------------------------------------ benchmark
def car_like(n_samples: int, seed: int = 0):
    """Categorical-only data with levels (4, 4, 4, 3, 3, 3) (the UCI car dataset's shape); with
    ``n_samples = 1728`` the full factorial, as in car."""
    import itertools
    levels = [4, 4, 4, 3, 3, 3]
    rng = np.random.default_rng(seed)
    grid = np.array(list(itertools.product(*[range(a) for a in levels])))
    Z = grid if n_samples == grid.shape[0] else grid[rng.integers(0, grid.shape[0], n_samples)]
    w = [rng.normal(size=a) for a in levels]
    score = sum(w[l][Z[:, l]] for l in range(len(levels)))
    y = np.where(score + 0.5 * rng.normal(size=Z.shape[0]) > 0, 1.0, -1.0)
    return np.zeros((Z.shape[0], 0)), Z, levels, y


def main() -> None:
    import drokit as dk
    from drokit.reformulations.graph import compile_graph
    from drokit.models.problem import CompiledProblem

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1728)
    parser.add_argument("--radius", type=float, default=0.1)
    args = parser.parse_args()
    X_num, Z, levels, y = car_like(args.n_samples)
    delta = np.ones(len(levels))

    rows = []   # (name, seconds, value)
    for sink_free in (False, True):
        t0 = time.perf_counter()
        problem, _ = build_cvxpy_graph(X_num, Z, levels, y, [], delta, args.radius, sink_free=sink_free)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            problem.solve(solver=cp.CLARABEL)
            value = float(problem.value) if problem.status == "optimal" else np.nan
            status = problem.status
        except cp.error.SolverError as exc:
            value, status = np.nan, f"failed ({exc})"
        t_solve = time.perf_counter() - t0
        name = "cvxpy graph, sink-free" if sink_free else "cvxpy graph, literal (14)"
        rows.append((name, t_build + t_solve, value, status))

    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=delta))
    inst = dk.Problem("logistic", dk.Wasserstein(metric, radius=args.radius)).bind(
        Z, y, categorical_features=list(range(len(levels))))
    for variant in ("full", "compact"):
        t0 = time.perf_counter()
        compiled = compile_graph(inst, variant)
        t_build = time.perf_counter() - t0
        res = CompiledProblem(inst, compiled, t_build).solve(on_inaccurate="warn")
        rows.append((f"drokit graph, {variant}", time.perf_counter() - t0, res.objective, res.status))
    t0 = time.perf_counter()
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=args.radius),
                           categorical_features=list(range(len(levels)))).fit(Z, y)
    default = time.perf_counter() - t0
    rows.append((f"drokit default ({clf.result_.method})", default, clf.result_.objective, clf.result_.status))
    # the floor: plain logistic regression by L-BFGS on the same design
    from scipy.optimize import minimize
    design = clf.schema_.design(clf.schema_.transform(Z)).toarray()
    A = np.column_stack([np.ones(len(y)), design]) * y[:, None]

    def loss(w):
        margin = A @ w
        return np.mean(np.logaddexp(0, -margin)), -(A.T @ (1 / (1 + np.exp(margin)))) / len(y)

    t0 = time.perf_counter()
    minimize(loss, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-8})
    floor = time.perf_counter() - t0
    reference = clf.result_.objective
    print(f"car-like, N = {len(y)}, levels {levels}, unit weights, radius {args.radius}")
    print(f"{'model':<34} {'seconds':>8} {'/ default':>9} {'objective':>12} {'rel. diff':>9}  status")
    for name, sec, value, status in rows:
        print(f"{name:<34} {sec:8.2f} {sec / default:9.1f} {value:12.8f} "
              f"{abs(value - reference) / abs(reference):9.1e}  {status}")
    print(f"{'plain LR by L-BFGS (floor)':<34} {floor:8.3f}   default / floor = {default / floor:.0f}")


if __name__ == "__main__":
    main()
