"""Adversarial + auxiliary-data DRO (issue 6): side-by-side timings in one run.

1. DR-ARO (selvi2025 Cor. 8, exp cones): drokit's compiled program vs a hand-written cvxpy model of the
   same problem (both Clarabel), numerical data N x n, ratio and objective agreement.
2. Intersection (Inter-ARO*, Thm 11 static program, l1 transport): all (i, j, l) rows at once vs drokit's
   row generation (exact box separation), N = N_aux growing; value agreement and rows kept.

Run:  python benchmarks/bench_adversarial.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import drokit as dk
from drokit.reformulations.intersection import MAX_Z_ENTRIES, solve_intersection
from drokit.reformulations.intersection_cuts import solve_intersection_cuts


def data(N, n, seed=0, noise=0.8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, n))
    w = rng.normal(size=n)
    y = np.where(X @ w + noise * rng.normal(size=N) > 0, 1.0, -1.0)
    return X, y, w


def dr_aro(sizes):
    import cvxpy as cp
    print("\n## 1. DR-ARO (Cor. 8): drokit vs hand-written cvxpy, both Clarabel; eps 0.05, alpha 0.05 (l2), "
          "l1 transport, kappa 1\n")
    print("| N | n | drokit s | cvxpy s | cvxpy / drokit | objective rel. diff | drokit method |")
    print("|---|---|---|---|---|---|---|")
    for N, n in sizes:
        X, y, _ = data(N, n)
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=1.0))
        t = time.perf_counter()
        clf = dk.DROClassifier(loss=dk.losses.Adversarial("logistic", norm=2, budget=0.05),
                               ambiguity=dk.Wasserstein(metric, radius=0.05)).fit(X, y)
        t_dk = time.perf_counter() - t
        t = time.perf_counter()
        beta, b, lam, tau, s = cp.Variable(n), cp.Variable(), cp.Variable(nonneg=True), cp.Variable(), cp.Variable(N)
        f = X @ beta + b
        prob = cp.Problem(cp.Minimize(0.05 * lam + cp.sum(s) / N),
                          [s >= cp.logistic(-cp.multiply(y, f) + tau),
                           s >= cp.logistic(cp.multiply(y, f) + tau) - lam,
                           cp.norm(beta, "inf") <= lam, tau >= 0.05 * cp.norm(beta, 2)])
        prob.solve(solver="CLARABEL")
        t_cp = time.perf_counter() - t
        rel = abs(prob.value - clf.result_.objective) / abs(prob.value)
        print(f"| {N:,} | {n} | {t_dk:.3f} | {t_cp:.3f} | {t_cp / t_dk:.1f}x | {rel:.1e} | {clf.result_.method} |")


def intersection(sizes):
    print("\n## 2. Intersection (Thm 11 static program, l1 transport, kappa 1, logistic, l2 attack 0.05): all rows "
          "vs row generation\n")
    print("Auxiliary data: noisy copies (sd 0.05) of resampled training rows; eps = 0.05, eps_aux = W(P_N, P_aux).\n")
    print("| N = N_aux | n | all rows: rows / s | row generation: rows kept / rounds / s | speed-up | value rel. diff |")
    print("|---|---|---|---|---|---|")
    for N, n in sizes:
        X, y, _ = data(N, n, seed=1)
        rng = np.random.default_rng(2)
        idx = rng.integers(0, N, N)
        Xa, ya = X[idx] + 0.05 * rng.normal(size=(N, n)), y[idx].copy()
        metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=1.0))
        W = dk.wasserstein_distance((X, y), (Xa, ya), metric)
        args = (X, y, Xa, ya, 0.05, W, "logistic")
        kw = dict(p=1, kappa=1.0, attack=(2, 0.05))
        t = time.perf_counter()
        cuts = solve_intersection_cuts(*args, **kw)
        t_cut = time.perf_counter() - t
        full_rows = 2 * N * N
        if full_rows * n <= MAX_Z_ENTRIES and N <= 100:
            t = time.perf_counter()
            full = solve_intersection(*args, **kw, on_inaccurate="warn")
            t_full = time.perf_counter() - t
            full_cell = f"{full_rows:,} / {t_full:.2f}"
            ratio = f"{t_full / t_cut:.1f}x"
            rel = f"{abs(full.value - cuts.upper_bound) / abs(full.value):.1e}"
        else:
            full_cell, ratio, rel = f"{full_rows:,} / not run (size)", "-", "-"
        print(f"| {N} | {n} | {full_cell} | {cuts.result.n_rows:,} / {len(cuts.history)} / {t_cut:.2f} | {ratio} | "
              f"{rel} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.quick:
        dr_aro([(500, 10)])
        intersection([(30, 5)])
    else:
        dr_aro([(1_000, 10), (10_000, 10), (10_000, 50)])
        intersection([(30, 5), (60, 5), (100, 5), (200, 5), (400, 5), (200, 20)])
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
