"""What a radius path costs: warm-started fits against cold fits (issue 24).

For each case, drokit's default fit (``dk.DROClassifier``, ``on_inaccurate="raise"``: every fit certified) at
``--n-radii`` radii spaced evenly in log scale over ``[--r-min, --r-max]``, three ways, in one process, one run:

* ``one cold`` -- one fit at the largest radius (the unit of the issue's goal: a 20-radius path in <= 3x it);
* ``cold path`` -- every radius fitted from scratch (what ``dk.cross_validate_grid`` does per task);
* ``warm path`` -- one estimator with ``warm_start=True`` fitted at each radius in turn, from the largest down
  (``set_params(ambiguity__radius=r).fit(X, y)``: phase 1 starts from the last solution; what
  ``DROClassifierCV(warm_path=True)`` does per split).

The objectives of the warm and cold fits at each radius are compared (the largest relative difference is
reported; both are certified to 1e-6 relative).  An untimed warm-up fit of 200 rows comes first.  Cases:
``synthetic`` (10 numerical + 10 categorical features with 3-8 levels, ``benchmarks/bench_scaling.py``'s table, N
from ``--sizes``) and ``credit-approval`` (690 rows, 6 numerical + 9 categorical, z-scored), labels fixed
(``kappa = inf``) and ``kappa = 1``.  The header records commit, date, machine and command.

    python benchmarks/bench_radius_path.py [--sizes 1000 10000] [--n-radii 20] [--r-min 1e-3] [--r-max 0.3]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import drokit as dk  # noqa: E402
from bench_scaling import make_synthetic  # noqa: E402


def cases(sizes):
    for n in sizes:
        X, y = make_synthetic(n, 19)
        yield f"synthetic {n:,}", X, y
    X, y = dk.datasets.load("credit-approval", standardize=True)
    yield "credit-approval 690", X, y


def estimator(kappa: float, radius: float, warm: bool = False):
    metric = dk.GroundMetric(label=dk.LabelCost(kappa))
    return dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=radius), warm_start=warm)


def timed_fit(model, X, y):
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start, model.result_


def run_case(name, X, y, kappa, radii):
    estimator(kappa, radii[0]).fit(X.iloc[:200], np.asarray(y)[:200])            # warm-up, untimed
    cold = [timed_fit(estimator(kappa, r), X, y) for r in radii]
    warm_model = estimator(kappa, radii[0], warm=True)
    warm = []
    for r in radii:
        warm.append(timed_fit(warm_model.set_params(ambiguity__radius=float(r)), X, y))
    for seconds, result in cold + warm:
        if result.status != "optimal":
            raise RuntimeError(f"{name}: an uncertified fit ({result.status})")
    one = cold[0][0]
    cold_total = sum(s for s, _ in cold)
    warm_total = sum(s for s, _ in warm)
    diff = max(abs(w.objective - c.objective) / max(abs(c.objective), 1e-2) for (_, w), (_, c) in zip(warm, cold))
    return {"case": name, "kappa": kappa, "radii": len(radii), "one cold s": one, "cold path s": cold_total,
            "warm path s": warm_total, "cold / one": cold_total / one, "warm / one": warm_total / one,
            "cold / warm": cold_total / warm_total, "max rel. diff": diff,
            "warm fits s": " ".join(f"{s:.2f}" for s, _ in warm)}


def header(argv) -> str:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"commit {commit}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"{platform.platform()}, {os.cpu_count()} CPUs, load {load} at start, python {platform.python_version()}, "
            f"numpy {np.__version__}\ncommand: python {shlex.join(argv)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", nargs="*", type=int, default=[1_000, 10_000])
    ap.add_argument("--n-radii", type=int, default=20)
    ap.add_argument("--r-min", type=float, default=1e-3)
    ap.add_argument("--r-max", type=float, default=0.3)
    ap.add_argument("--kappas", nargs="*", type=float, default=[np.inf, 1.0])
    args = ap.parse_args(argv)
    radii = np.geomspace(args.r_min, args.r_max, args.n_radii)[::-1]
    print(header(sys.argv))
    rows = []
    with threadpool_limits(1):
        for name, X, y in cases(args.sizes):
            for kappa in args.kappas:
                row = run_case(name, X, y, kappa, radii)
                rows.append(row)
                print(f"{name} kappa {kappa:g}: one {row['one cold s']:.2f} s, cold path {row['cold path s']:.2f} s "
                      f"({row['cold / one']:.1f}x), warm path {row['warm path s']:.2f} s ({row['warm / one']:.1f}x), "
                      f"max rel. diff {row['max rel. diff']:.1e}", flush=True)
    cols = ["case", "kappa", "radii", "one cold s", "cold path s", "warm path s", "cold / one", "warm / one",
            "cold / warm", "max rel. diff"]
    print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for row in rows:
        cells = [f"{row[c]:.2f}" if isinstance(row[c], float) and c != "max rel. diff" else
                 (f"{row[c]:.1e}" if c == "max rel. diff" else str(row[c])) for c in cols]
        print("| " + " | ".join(cells) + " |")
    print("\nwarm fits (seconds, largest radius first):")
    for row in rows:
        print(f"- {row['case']} kappa {row['kappa']:g}: {row['warm fits s']}")


if __name__ == "__main__":
    main()
