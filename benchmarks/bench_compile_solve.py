"""Compile + solve time of drokit's program vs a hand-written cvxpy model of the same problem (one run).

Instances (issue 2):
  A. all-numerical logistic, N = 5,000, d = 50, l1 ground metric (kappa = inf): the DRO problem is
     min mean log(1 + exp(-y f)) + eps ||beta_x||_inf  (drokit method "closed_form").
  B. mixed logistic, N = 500, 2 numerical + 5 binary categorical features, unit mismatch costs:
     full enumeration of the 32 configurations (drokit method "monolithic"); drokit's cutting plane too.

Both sides use Clarabel with its default settings (drokit with ``solver="clarabel"``: since session 9 its
default fits instance A with the structured barrier solver instead, which vs_libraries.py measures; this
benchmark compares the conic compilers). Reported: wall time of compile (building the model
and handing it to the solver) and solve, their ratio, and the objective agreement (must be <= 1e-6
relative). Run: python benchmarks/bench_compile_solve.py [--quick]   (writes nothing; paste into RESULTS.md)
"""

from __future__ import annotations

import argparse
import itertools
import time

import cvxpy as cp
import numpy as np

import drokit as dk


def numerical_instance(N, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = np.where(rng.random(N) < 1 / (1 + np.exp(-(X @ w) * 3)), 1.0, -1.0)
    return X, y


def mixed_instance(N, n, m, seed=0):
    rng = np.random.default_rng(seed)
    Xn = rng.normal(size=(N, n))
    Z = rng.integers(0, 2, size=(N, m))
    w = rng.normal(size=n + m)
    f = np.column_stack([Xn, Z]) @ w - w[n:].sum() / 2
    y = np.where(rng.random(N) < 1 / (1 + np.exp(-2 * f)), 1.0, -1.0)
    return Xn, Z, y


def drokit_solve(X, y, eps, method, categorical_features=None):
    t0 = time.perf_counter()
    prob = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(), radius=eps))
    compiled = prob.compile(X, y, method=method, categorical_features=categorical_features)
    t1 = time.perf_counter()
    res = compiled.solve(solver="clarabel")
    t2 = time.perf_counter()
    return res.objective, t1 - t0, t2 - t1, res


def cvxpy_numerical(X, y, eps):
    """Hand-written: min mean logistic(-y (b0 + X b)) + eps ||b||_inf."""
    t0 = time.perf_counter()
    N, d = X.shape
    b, b0 = cp.Variable(d), cp.Variable()
    obj = cp.sum(cp.logistic(-cp.multiply(y, X @ b + b0))) / N + eps * cp.norm(b, "inf")
    problem = cp.Problem(cp.Minimize(obj))
    return _cvxpy_solve(problem, t0)


def _cvxpy_solve(problem, t0):
    """One solve; compile = building the expressions + cvxpy's own compilation_time."""
    t1 = time.perf_counter()
    problem.solve(solver=cp.CLARABEL)
    t2 = time.perf_counter()
    compile_time = (t1 - t0) + problem.compilation_time
    return problem.value, compile_time, (t2 - t0) - compile_time, problem.status


def cvxpy_monolithic(Xn, Z, y, eps):
    """Hand-written enumeration: s_i >= logistic(-y_i f(x_i, z)) - lam * #mismatch(z, z_i) for all z."""
    t0 = time.perf_counter()
    N, n = Xn.shape
    m = Z.shape[1]
    confs = np.array(list(itertools.product([0, 1], repeat=m)), dtype=float)  # (C, m)
    C = len(confs)
    bx, bz, b0 = cp.Variable(n), cp.Variable(m), cp.Variable()
    lam, s = cp.Variable(nonneg=True), cp.Variable(N)
    num = Xn @ bx + b0                                   # (N,)
    cat = confs @ bz                                     # (C,)
    dist = (confs[None, :, :] != Z[:, None, :]).sum(axis=2).astype(float)  # (N, C)
    f = cp.reshape(num, (N, 1), order="C") @ np.ones((1, C)) + np.ones((N, 1)) @ cp.reshape(cat, (1, C), order="C")
    margins = cp.multiply(y[:, None], f)
    cons = [cp.logistic(-margins) - lam * dist <= cp.reshape(s, (N, 1), order="C") @ np.ones((1, C)),
            cp.norm(bx, "inf") <= lam]
    problem = cp.Problem(cp.Minimize(lam * eps + cp.sum(s) / N), cons)
    return _cvxpy_solve(problem, t0)


def report(name, ours, theirs):
    v1, c1, s1 = ours[:3]
    v2, c2, s2 = theirs[:3]
    rel = abs(v1 - v2) / max(1.0, abs(v2))
    print(f"{name:<44s} drokit {c1:7.3f} + {s1:7.3f} = {c1 + s1:7.3f} s | cvxpy {c2:7.3f} + {s2:7.3f} = "
          f"{c2 + s2:7.3f} s | ratio cvxpy/drokit {(c2 + s2) / (c1 + s1):5.2f} (compile {c2 / c1:5.1f}x) | "
          f"objectives {v1:.9f} vs {v2:.9f} (rel diff {rel:.1e}) {'OK' if rel <= 1e-6 else 'MISMATCH'}")
    return rel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller instances (a smoke run)")
    args = ap.parse_args()
    N_num, d = (1000, 20) if args.quick else (5000, 50)
    N_mix = 200 if args.quick else 500
    eps = 0.05
    print(f"clarabel, 1 process; eps = {eps}")

    X, y = numerical_instance(N_num, d)
    ours = drokit_solve(X, y, eps, "closed_form")
    report(f"A. all-numerical N={N_num} d={d} closed_form", ours, cvxpy_numerical(X, y, eps))

    Xn, Z, y = mixed_instance(N_mix, 2, 5)
    X = np.column_stack([Xn, Z])
    cats = list(range(2, 7))
    ours = drokit_solve(X, y, eps, "monolithic", cats)
    theirs = cvxpy_monolithic(Xn, Z, y, eps)
    report(f"B. mixed N={N_mix}, 5 binary, monolithic", ours, theirs)
    cpl = drokit_solve(X, y, eps, "cutting_plane", cats)
    report(f"B'. mixed N={N_mix}, 5 binary, cutting_plane", cpl, theirs)
    print(f"   cutting plane: {len(cpl[3].history)} rounds, gap {cpl[3].gap:.1e}, "
          f"max violation {cpl[3].max_violation:.1e}")


if __name__ == "__main__":
    main()
