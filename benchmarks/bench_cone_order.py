"""Does the order of the cone blocks change Clarabel's iteration count on drokit's programs?

Run:  python benchmarks/bench_cone_order.py [--sizes 10000x10 30000x10 100000x10 10000x50] [--seeds 0 1]

drokit's builders emit the cone blocks in the order the reformulation declares them (for the closed form of
the all-numerical logistic model: the exponential cones first, then the norm cone and ``lambda >= 0``);
cvxpy hands Clarabel zero, nonneg, second-order, then exponential cones.  In exact arithmetic the order of
the rows does not matter; in Clarabel's KKT solves (AMD ordering, static regularization, iterative
refinement) it can, and at N = 100,000 drokit's closed-form program took 50 iterations against 35 for
dro's cvxpy model of the same problem (benchmarks/RESULTS.md, "drokit vs dro and skwdro").

For each instance the same drokit program is solved by Clarabel (default settings) in its own block order
and with the blocks sorted as cvxpy sorts them (:meth:`drokit.conic.ConicProgram.sorted_by_cone`), and a
hand-written cvxpy model of the same problem (dro's: ``s >= logistic(-y f)``, ``lam >= ||theta||_2``) is
solved by the same Clarabel.  Prints one markdown row per instance: iterations, seconds, objectives.
Instances: the synthetic all-numerical logistic data of ``vs_libraries.py`` (W1 ball, l2 cost, labels
fixed, eps = 0.05), and mixed data through ``--mixed`` (the monolithic program of ``bench_compile_solve``).
"""

from __future__ import annotations

import argparse
import time

import clarabel
import numpy as np
import scipy.sparse as sp

import drokit as dk
from drokit.solvers.clarabel import ClarabelBackend

EPS = 0.05


def synthetic(n: int, d: int, seed: int):
    """x ~ N(0, I_d), P(y = 1 | x) = sigmoid(2 x^T u + 0.3) (vs_libraries.py, part a)."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-(2.0 * X @ u + 0.3))), 1, -1)
    return X, y


def clarabel_solve(data):
    P, q, A, b, cones = data
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    start = time.perf_counter()
    out = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
    return out.iterations, time.perf_counter() - start, out.obj_val, str(out.status)


def cvxpy_data(X, y):
    """dro's cvxpy model, compiled for Clarabel by cvxpy (its cone order: zero, nonneg, soc, exp)."""
    import cvxpy as cp
    n, d = X.shape
    theta, b, lam, s = cp.Variable(d), cp.Variable(), cp.Variable(), cp.Variable(n)
    problem = cp.Problem(cp.Minimize(cp.sum(s) / n + EPS * lam),
                         [lam >= cp.norm(theta, 2), s >= cp.logistic(-cp.multiply(y, X @ theta + b))])
    data, _, _ = problem.get_problem_data("CLARABEL")
    dims = data["dims"]
    cones = ([clarabel.ZeroConeT(dims.zero)] if dims.zero else []) + \
        ([clarabel.NonnegativeConeT(dims.nonneg)] if dims.nonneg else []) + \
        [clarabel.SecondOrderConeT(k) for k in dims.soc] + [clarabel.ExponentialConeT() for _ in range(dims.exp)]
    n_var = data["A"].shape[1]
    return sp.csc_matrix((n_var, n_var)), data["c"], sp.csc_matrix(data["A"]), data["b"], cones


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["10000x10", "30000x10", "100000x10", "10000x50", "30000x50"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--no-cvxpy", action="store_true")
    args = ap.parse_args()
    backend = ClarabelBackend()
    print("| N | d | seed | drokit order: it (s) | sorted by cone: it (s) | cvxpy (dro's model): it (s) "
          "| objectives (drokit / sorted / cvxpy) |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        n, d = (int(v) for v in size.split("x"))
        for seed in args.seeds:
            X, y = synthetic(n, d, seed)
            metric = dk.GroundMetric(numerical=dk.NormCost(p=2))
            program = dk.Problem("logistic", dk.Wasserstein(metric, EPS)).compile(X, y).program
            own = clarabel_solve(backend.apply(program))
            ordered = clarabel_solve(backend.apply(program.sorted_by_cone()[0]))
            peer = (None, float("nan"), float("nan"), "") if args.no_cvxpy else clarabel_solve(cvxpy_data(X, y))
            cell = lambda r: f"{r[0]} ({r[1]:.1f})" if r[0] is not None else "-"
            print(f"| {n:,} | {d} | {seed} | {cell(own)} | {cell(ordered)} | {cell(peer)} | "
                  f"{own[2]:.9f} / {ordered[2]:.9f} / {peer[2]:.9f} |", flush=True)


if __name__ == "__main__":
    main()
