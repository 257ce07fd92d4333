"""drokit's phi-divergence sets (KLBall, ChiSquareBall, CVaRSet; issue 23) side by side with ``dro``'s KLDRO, Chi2DRO
and CVaRDRO on the same all-numerical data, logistic loss, in one run.

For each data set and set: drokit's default fit (``dk.DROClassifier(ambiguity=...)``, certified) and ``dro``'s fit
(``model_type="logistic"``, its default solver Clarabel through cvxpy), each timed once after an untimed warm-up
fit, one BLAS thread.  Both models are then scored by the same exact worst-case risk (``dk.worst_case`` under the
set, drokit's evaluation, at ``dro``'s coefficients for ``dro``'s model): equal values mean both found the optimum.

The sets are the same: KL ``KL(Q || P_N) <= eps`` (dro ``eps``), chi-square ``E[(dQ/dP_N - 1)^2] <= eps`` (dro's
``sum_i n (p_i - 1/n)^2 <= eps``), CVaR ``dQ/dP_N <= 1 / alpha`` (dro ``alpha``).

``dro`` needs torch: run in an environment that has both (``pip install -e ".[bench]"``, or a separate venv with
``pip install dro==0.4.3`` and ``pip install --no-deps -e .`` plus ``highspy``).

    python benchmarks/bench_phi_divergence.py [--sizes 1000 10000] [--markdown]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import platform
import subprocess
import time
import warnings

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

import drokit as dk  # noqa: E402


def synthetic(n: int, d: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + 0.8 * rng.normal(size=n) > 0).astype(int)
    return X, y


def breast_cancer():
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


SETS = [("KL eps 0.1", lambda: dk.KLBall(radius=0.1), "KLDRO", {"eps": 0.1}),
        ("chi-square eps 0.1", lambda: dk.ChiSquareBall(radius=0.1), "Chi2DRO", {"eps": 0.1}),
        ("CVaR alpha 0.2", lambda: dk.CVaRSet(level=0.2), "CVaRDRO", {"alpha": 0.2})]


def dro_fit(name: str, options: dict, X, y):
    import dro.linear_model as lm
    model = getattr(lm, name)(input_dim=X.shape[1], model_type="logistic")
    model.update(options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.fit(X, 2 * y - 1)
    return np.asarray(out["theta"], dtype=float), float(out.get("b", 0.0))


def regression(n: int, d: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + 0.5 * rng.standard_t(3, size=n)


def mot_sets():
    """MOT-DRO (blanchet2024 (2.1), KL) as dro's MOTDRO has it: samples' features move at theta1 w ||x - x'||_2 (labels
    fixed, ``square=1``), weights at theta2 KL; theta1 = theta2 = 2 (dro ties 1/theta1 + 1/theta2 = 1), budget 0.1."""
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(np.inf))
    return dk.OTMoment(metric, theta1=2.0, theta2=2.0, divergence="kl", radius=0.1, exponent=1)


def mot_rows(sizes, threads):
    """Part 2: MOT-DRO, hinge (dro 'svm') and absolute loss (dro 'lad')."""
    import dro.linear_model as lm
    print("\n| data | loss | drokit s | dro s | dro / drokit | drokit objective | dro model's worst case | rel. diff "
          "| drokit bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    with threads:
        for n in sizes:
            for loss, kind, make in (("hinge", "svm", synthetic), ("absolute", "lad", regression)):
                X, y = make(n)
                Estimator = dk.DROClassifier if kind == "svm" else dk.DRORegressor
                t = time.perf_counter()
                fitted = Estimator(loss=loss, ambiguity=mot_sets()).fit(X, y)
                t_dk = time.perf_counter() - t
                model = lm.MOTDRO(input_dim=X.shape[1], model_type=kind)
                model.update({"theta1": 2.0, "eps": 0.1, "p": 2, "square": 1})
                t = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        out = model.fit(X, 2 * y - 1 if kind == "svm" else y)
                except Exception as exc:                      # noqa: BLE001 -- a failed fit is a result
                    print(f"| synthetic {n:,} x 10 | {loss} ({kind}) | {t_dk:.3f} | failed after "
                          f"{time.perf_counter() - t:.1f} s ({type(exc).__name__}) | - | "
                          f"{fitted.result_.objective:.9f} | - | - | {fitted.result_.auxiliary['lower_bound']['source']} |",
                          flush=True)
                    continue
                t_dro = time.perf_counter() - t
                coef, intercept = np.asarray(out["theta"], dtype=float), float(np.ravel(out["b"])[0])
                theirs = worst_risk(fitted, X, y, coef, intercept)
                ours = fitted.result_.objective
                print(f"| synthetic {n:,} x 10 | {loss} ({kind}) | {t_dk:.3f} | {t_dro:.3f} | {t_dro / t_dk:.1f}x | "
                      f"{ours:.9f} | {theirs:.9f} | {(theirs - ours) / abs(ours):+.1e} | "
                      f"{fitted.result_.auxiliary['lower_bound']['source']} |", flush=True)


def worst_risk(fitted, X, y, coef, intercept) -> float:
    """The exact worst-case risk (drokit's evaluation) of the linear model ``(coef, intercept)`` under ``fitted``'s set."""
    twin = copy.deepcopy(fitted)
    twin.coef_ = np.asarray(coef, dtype=float).reshape(twin.coef_.shape)
    twin.intercept_ = np.asarray(intercept, dtype=float).reshape(np.shape(twin.intercept_))
    twin.result_ = copy.copy(fitted.result_)
    twin.result_.coef = twin.coef_.ravel()
    twin.result_.intercept = float(np.ravel(twin.intercept_)[0])
    return float(dk.worst_case(twin, X, y).value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    print(f"# commit {commit}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"# command: python benchmarks/bench_phi_divergence.py --sizes {' '.join(map(str, args.sizes))}\n")
    data = [(f"synthetic {n:,} x 10", *synthetic(n)) for n in args.sizes] + [("breast cancer 569 x 30", *breast_cancer())]
    print("| data | set | drokit s | dro s | dro / drokit | drokit objective | dro model's worst case | rel. diff "
          "| drokit bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        X0, y0 = synthetic(200, seed=9)
        for label, make, name, options in SETS:                    # warm-up (imports, first solves)
            dk.DROClassifier(ambiguity=make()).fit(X0, y0)
            dro_fit(name, options, X0, y0)
        for data_name, X, y in data:
            for label, make, name, options in SETS:
                t = time.perf_counter()
                try:
                    fitted = dk.DROClassifier(ambiguity=make()).fit(X, y)
                except dk.SolverError as exc:                 # not certified: a failure, never a row
                    reason = "separable data" if "separable" in str(exc) else type(exc).__name__
                    print(f"| {data_name} | {label} | not certified after {time.perf_counter() - t:.1f} s ({reason}) "
                          f"| - | - | - | - | - | - |", flush=True)
                    continue
                t_dk = time.perf_counter() - t
                ours, source = fitted.result_.objective, fitted.result_.auxiliary["lower_bound"]["source"]
                t = time.perf_counter()
                try:
                    coef, intercept = dro_fit(name, options, X, y)
                except Exception as exc:                      # noqa: BLE001 -- a failed fit is a result
                    t_dro = time.perf_counter() - t
                    print(f"| {data_name} | {label} | {t_dk:.3f} | failed after {t_dro:.1f} s "
                          f"({type(exc).__name__}) | - | {ours:.9f} | - | - | {source} |", flush=True)
                    continue
                t_dro = time.perf_counter() - t
                theirs = worst_risk(fitted, X, y, coef, intercept)
                rel = (theirs - ours) / abs(ours)
                print(f"| {data_name} | {label} | {t_dk:.3f} | {t_dro:.3f} | {t_dro / t_dk:.1f}x | {ours:.9f} | "
                      f"{theirs:.9f} | {rel:+.1e} | {source} |", flush=True)
    mot_rows(args.sizes, threadpool_limits(1))


if __name__ == "__main__":
    main()
