"""Ordinal categorical costs and user-extensible losses (issue 7): side-by-side timings in one run.

1. DRO logistic regression with an ordinal cost on German credit subsets: drokit (auto: cutting plane + DP
   oracle) against a hand-written cvxpy model of the full enumeration (both Clarabel), plus drokit's own
   monolithic program; objective agreement and ratios.
2. The DP oracle: one separation with the ordinal cost against the mismatch cost on the full German credit
   training data (every categorical feature mutable), and against the enumeration oracle where it fits.
3. A smooth loss with no recognized conic form (log cosh forced to the tangent outer approximation) against
   its exponential-cone form: solves, tangents, time, objective agreement.

Run:  python benchmarks/bench_ordinal.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

import drokit as dk
from drokit.oracles.dp import DPOracle
from drokit.oracles.enumeration import EnumerationOracle

ORDER = {"employment_since": ["a71", "a72", "a73", "a74", "a75"],
         "savings_account": ["a65", "a61", "a62", "a63", "a64"],
         "checking_account_status": ["a14", "a11", "a12", "a13"]}


def german(n_rows, categorical):
    X, y = dk.datasets.load("german-credit")
    X = X[["duration_months", "credit_amount"] + categorical].iloc[:n_rows].copy()
    X[["duration_months", "credit_amount"]] = (X[["duration_months", "credit_amount"]]
                                               - X[["duration_months", "credit_amount"]].mean()) \
        / X[["duration_months", "credit_amount"]].std()
    return X, np.where(np.asarray(y)[:n_rows] == 1, 1.0, -1.0)


def cvxpy_enumeration(X, y, categorical, delta, radius):
    """min lam eps + mean s  s.t.  log(1 + exp(-y f(x_n, z))) - lam D(z, z_n) <= s_n for all n, z;
    ||beta_x||_inf <= lam (l1 transport on the numerical features, logistic lip 1)."""
    import cvxpy as cp
    levels = [list(X[c].cat.categories) for c in categorical]
    rank = [{v: (ORDER[c].index(v) if c in ORDER else None) for v in lv} for c, lv in zip(categorical, levels)]
    codes = np.column_stack([X[c].cat.codes.to_numpy() for c in categorical])
    Xn = X[["duration_months", "credit_amount"]].to_numpy()
    N = len(y)
    configs = np.array(list(itertools.product(*[range(len(lv)) for lv in levels])))
    beta_x, b0 = cp.Variable(2), cp.Variable()
    beta_z = [cp.Variable(len(lv) - 1) for lv in levels]
    lam, s = cp.Variable(nonneg=True), cp.Variable(N)
    # dummy design of every configuration (reference level 0), shared by all samples
    D_conf = np.hstack([np.eye(len(lv))[configs[:, k]][:, 1:] for k, lv in enumerate(levels)])
    conf_score = D_conf @ cp.hstack(beta_z)
    rows_n, rows_c, cost = [], [], []
    for n in range(N):
        c = np.zeros(len(configs))
        for k, (lv, rk) in enumerate(zip(levels, rank)):
            u, v = codes[n, k], configs[:, k]
            if rk[lv[0]] is None:
                c += delta * (v != u)
            else:
                r = np.array([rk[x] for x in lv])
                c += delta * np.abs(r[v] - r[u])
        rows_n.append(np.full(len(configs), n))
        rows_c.append(np.arange(len(configs)))
        cost.append(c)
    rows_n, rows_c, cost = np.concatenate(rows_n), np.concatenate(rows_c), np.concatenate(cost)
    base = Xn @ beta_x + b0
    margin = cp.multiply(y[rows_n], base[rows_n] + conf_score[rows_c])
    prob = cp.Problem(cp.Minimize(radius * lam + cp.sum(s) / N),
                      [cp.logistic(-margin) - lam * cost <= s[rows_n], cp.norm(beta_x, "inf") <= lam])
    for solver in ("CLARABEL", "ECOS"):  # Clarabel stalls on these enumerations (as drokit's first try does)
        t = time.perf_counter()
        try:
            prob.solve(solver=solver)
            return prob.value, rows_n.size, solver, time.perf_counter() - t
        except cp.error.SolverError:
            continue
    return np.nan, rows_n.size, "failed", np.nan


def fits(sizes, categorical, delta=0.5, radius=0.1):
    print(f"\n## 1. Ordinal DRO logistic regression, German credit, categorical {categorical}, "
          f"delta {delta}, eps {radius}\n")
    print("| N | configuration rows | drokit auto s (method) | drokit monolithic s | cvxpy enumeration s (solver: its solve s) | "
          "cvxpy / auto | monolithic / auto | objective rel. diff (cvxpy, monolithic) |")
    print("|---|---|---|---|---|---|---|---|")
    for N in sizes:
        X, y = german(N, categorical)
        cost = dk.OrdinalCost(weights=delta, features={c: ORDER[c] for c in categorical if c in ORDER})
        amb = dk.Wasserstein(dk.GroundMetric(categorical=cost), radius=radius)
        t = time.perf_counter()
        auto = dk.DROClassifier(ambiguity=amb).fit(X, y)
        t_auto = time.perf_counter() - t
        t = time.perf_counter()
        mono = dk.DROClassifier(ambiguity=amb, method="monolithic").fit(X, y)
        t_mono = time.perf_counter() - t
        t = time.perf_counter()
        value, rows, solver, t_solve = cvxpy_enumeration(X, y, categorical, delta, radius)
        t_cp = time.perf_counter() - t
        ref = auto.result_.objective
        cvx = f"{t_cp:.2f} ({solver}{'' if solver == 'CLARABEL' else ' after Clarabel failed'}: {t_solve:.2f})"
        print(f"| {N:,} | {rows:,} | {t_auto:.2f} ({auto.result_.method}) | {t_mono:.2f} | {cvx} | "
              f"{t_cp / t_auto:.1f}x | {t_mono / t_auto:.1f}x | {abs(value - ref) / ref:.1e}, "
              f"{abs(mono.result_.objective - ref) / ref:.1e} |")


def oracle_timing(repeats=5):
    X, y = dk.datasets.load("german-credit")
    y = np.where(np.asarray(y) == 1, 1.0, -1.0)
    print(f"\n## 2. One DP separation, German credit (N = {len(y)}, 13 categorical features, all mutable)\n")
    print("| categorical cost | final budgets | DP s / separation | ordinal / mismatch |")
    print("|---|---|---|---|")
    times = {}
    for name, cost in (("mismatch, delta 0.5", dk.MismatchCost(weights=0.5)),
                       ("ordinal (3 features), delta 0.5", dk.OrdinalCost(weights=0.5, features=ORDER))):
        inst = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(categorical=cost), 0.1)).bind(X, y)
        oracle = DPOracle(inst)
        rng = np.random.default_rng(0)
        coef = rng.normal(size=inst.schema.n_encoded)
        t = time.perf_counter()
        for _ in range(repeats):
            oracle.separate(0.1, coef, 0.5, np.zeros(inst.n_samples))
        times[name] = (time.perf_counter() - t) / repeats
        ratio = f"{times[name] / next(iter(times.values())):.2f}x"
        print(f"| {name} | {oracle.budgets.size} | {times[name]:.4f} | {ratio} |")
    Xs, ys = german(200, list(ORDER) + ["housing"])
    inst = dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(
        categorical=dk.OrdinalCost(weights=0.5, features=ORDER)), 0.1)).bind(Xs, ys)
    rng = np.random.default_rng(1)
    coef = rng.normal(size=inst.schema.n_encoded)
    res = {}
    for name, oracle in (("dp", DPOracle(inst)), ("enumeration", EnumerationOracle(inst))):
        t = time.perf_counter()
        res[name] = oracle.separate(0.1, coef, 0.5, np.zeros(inst.n_samples)).violation
        res[name + "_t"] = time.perf_counter() - t
    print(f"\nN = 200, 4 categorical features (3 ordinal), {inst.mutable_configurations()} configurations per "
          f"sample: DP {res['dp_t']:.4f} s, enumeration {res['enumeration_t']:.4f} s "
          f"({res['enumeration_t'] / res['dp_t']:.1f}x), max |violation difference| "
          f"{np.max(np.abs(res['dp'] - res['enumeration'])):.1e}")


def outer_approximation():
    import sympy as sp
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    y = (y - y.mean()) / y.std()
    e = sp.Symbol("e")
    print("\n## 3. log cosh regression (diabetes, 442 x 10, eps 0.1): exp-cone form vs tangent outer approximation\n")
    print("| form | solves | tangents | s | objective | relative gap |")
    print("|---|---|---|---|---|---|")
    out = {}
    for conic in ("auto", "outer"):
        loss = dk.losses.from_sympy(sp.log(sp.cosh(e)), e, conic=conic)
        t = time.perf_counter()
        r = dk.DRORegressor(loss=loss, ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y).result_
        out[conic] = r.objective
        print(f"| {loss.form} | {r.auxiliary.get('tangent_solves', 1)} | {r.auxiliary.get('tangents', '-')} | "
              f"{time.perf_counter() - t:.2f} | {r.objective:.9f} | {r.relative_gap:.1e} |")
    print(f"\nobjective rel. diff {abs(out['outer'] - out['auto']) / out['auto']:.1e}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    categorical = ["employment_since", "savings_account"]
    fits([100] if args.quick else [100, 200, 400], categorical)
    oracle_timing(2 if args.quick else 5)
    outer_approximation()


if __name__ == "__main__":
    main()
