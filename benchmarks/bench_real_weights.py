"""Real-valued categorical weights at the speed of unit weights (issue 27): drokit's default fit, side by side.

Cases (synthetic, seeded; ``--seed``, default 19):

* ``binary20``: 20 binary categorical features (uniform levels), 10,000 rows, labels from a sparse linear model
  with logistic noise.  Weights ``unit`` (all 1) against ``real`` (each ``Uniform(0.3, 1.7)``): ``2^20`` distinct
  transport budgets, which the budget DP refuses (``ProblemTooLargeError`` above 200,000 per layer).
* ``wide60``: 60 categorical features with 2-5 levels, 10,000 rows.  Weights ``unit`` against ``calibrated``:
  sun2025's calibration (:meth:`drokit.GroundMetric.calibrated`, ``delta_l = log(rho_l (|C_l| - 1) / (1 - rho_l))``)
  with ``rho_l ~ Uniform(0.6, 0.95)``, **not rounded** (the paper rounds to integers or one decimal because its DP
  and graph grow with the distinct budgets).

Each fit is ``dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(categorical=dk.MismatchCost(weights),
label=dk.LabelCost(kappa)), radius=r)).fit(X, y)`` with every default (an uncertified fit is a failure row), in a
spawned child process after an untimed warm-up fit, peak memory its ``ru_maxrss``.  The floor is plain logistic
regression by L-BFGS-B on the same one-hot design, one BLAS thread (``bench_scaling.floor_time``), and "x unit" the
time against the same (case, kappa, radius) with unit weights.  Goals (issue 27): every fit certified; ``binary20``
real within 2x of unit; ``wide60`` calibrated within 20x the floor.

Run: ``python benchmarks/bench_real_weights.py [--kappas inf 1] [--radii 0.1] [--out F.csv] [--markdown]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_scaling import (_maxrss_mb, _num, _summary, _use_snapshot, add_common_arguments, floor_time,  # noqa: E402
                           git_commit, header_lines, read_csv, run_in_child, snapshot_drokit, write_csv)

N_ROWS = 10_000
CASES = {"binary20": ("unit", "real"), "wide60": ("unit", "calibrated")}
FIELDS = ["case", "weights", "seed", "N", "kappa", "radius", "drokit_s", "relative_gap", "status", "certified_by",
          "lb_source", "phase1_s", "barrier_s", "masters", "masters_s", "oracle_s", "peak_mb", "floor_s", "ratio",
          "vs_unit", "objective", "error"]


def make_case(case: str, n: int, seed: int):
    """``(X, y, levels)``: the case's table (categorical columns ``c0, c1, ...``) and its numbers of levels."""
    rng = np.random.default_rng(seed)
    levels = np.full(20, 2) if case == "binary20" else rng.integers(2, 6, 60)
    Z = np.column_stack([rng.integers(0, a, n) for a in levels])
    effect = [rng.normal(size=a) * (rng.random() < 0.3) for a in levels]
    score = sum(effect[l][Z[:, l]] for l in range(levels.size))
    y = np.where(score + rng.logistic(size=n) > np.median(score), 1, 0)
    X = pd.DataFrame({f"c{l}": pd.Categorical(Z[:, l], categories=range(a)) for l, a in enumerate(levels)})
    return X, y, levels


def case_weights(case: str, weights: str, X, levels: np.ndarray, seed: int):
    """The categorical weights of a (case, weights) setting: ``None`` for unit weights."""
    rng = np.random.default_rng(seed + 1000)
    if weights == "unit":
        return None
    if weights == "real":
        return list(rng.uniform(0.3, 1.7, levels.size))
    import drokit as dk
    rho = dict(zip(X.columns, rng.uniform(0.6, 0.95, levels.size)))
    return dk.GroundMetric.calibrated(X, rho_categorical=rho, round=None).categorical.weights


def _child(conn, case: str, weights: str, n: int, seed: int, kappa: float, radius: float) -> None:
    _use_snapshot()
    import drokit as dk
    out = {"pid": os.getpid()}
    try:
        X, y, levels = make_case(case, n, seed)
        delta = case_weights(case, weights, X, levels, seed)

        def estimator():
            metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=delta), label=dk.LabelCost(kappa))
            return dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=radius))
        Xw, yw, _ = make_case(case, 300, seed + 1)
        estimator().fit(Xw, yw)                              # warm-up, not timed
        conn.send({"started": True})
        clf = estimator()
        t0 = time.perf_counter()
        clf.fit(X, y)
        out.update(_summary(clf.result_, time.perf_counter() - t0), peak_mb=_maxrss_mb())
    except Exception as exc:   # uncertified (SolverError), too large, anything: a failure row
        out.update(error=f"{type(exc).__name__}: {exc}", peak_mb=_maxrss_mb())
    conn.send(out)


def _cell(row, key, fmt):
    v = _num(row.get(key))
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def render(rows, markdown: bool) -> str:
    heads = ["case", "weights", "N", "kappa", "radius", "drokit s", "rel. gap", "certified by", "lower bound",
             "phase 1 s", "barrier s", "masters (n) s", "oracle s", "peak MB", "floor s", "x floor", "x unit"]
    lines = []
    for r in rows:
        if r.get("error"):
            cells = [r["case"], r["weights"], r["N"], r["kappa"], r["radius"], "FAILED: " + str(r["error"])[:80]]
            cells += [""] * (len(heads) - len(cells))
        else:
            cells = [r["case"], r["weights"], f"{int(_num(r['N'])):,}", r["kappa"], r["radius"],
                     _cell(r, "drokit_s", "{:.2f}"), _cell(r, "relative_gap", "{:.1e}"), r.get("certified_by", ""),
                     r.get("lb_source", ""), _cell(r, "phase1_s", "{:.2f}"), _cell(r, "barrier_s", "{:.2f}"),
                     f"({r.get('masters', 0)}) " + _cell(r, "masters_s", "{:.2f}"), _cell(r, "oracle_s", "{:.2f}"),
                     _cell(r, "peak_mb", "{:.0f}"), _cell(r, "floor_s", "{:.3f}"), _cell(r, "ratio", "{:.0f}x"),
                     _cell(r, "vs_unit", "{:.2f}x")]
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
        return "\n".join(out + ["| " + " | ".join(str(c) for c in cells) + " |" for cells in lines])
    return "\n".join(["  ".join(heads)] + ["  ".join(str(c) for c in cells) for cells in lines])


def main(argv=None):
    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--n", type=int, default=N_ROWS, help=f"rows of every case (default {N_ROWS:,})")
    ap.add_argument("--kappas", nargs="+", type=float, default=[math.inf, 1.0])
    ap.add_argument("--radii", nargs="+", type=float, default=[0.1])
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--floor-repeat", type=int, default=5)
    add_common_arguments(ap, "row")
    args = ap.parse_args(argv[1:])
    if args.render:
        header, rows = read_csv(args.render)
        print("\n".join(header) + "\n\n" + render(rows, args.markdown))
        return 0
    commit, dirty = git_commit()
    snapshot = commit is not None and not args.no_snapshot
    if snapshot:
        snapshot_drokit(commit)
    header = header_lines(argv, commit, dirty, snapshot)
    rows = []
    failed = False
    for case in args.cases:
        X, y, _ = make_case(case, args.n, args.seed)
        fl = floor_time(X, y, args.floor_repeat)[0]
        for kappa in args.kappas:
            for radius in args.radii:
                unit_s = None
                for weights in CASES[case]:
                    out = run_in_child(_child, (case, weights, args.n, args.seed, kappa, radius), args.timeout)
                    row = {"case": case, "weights": weights, "seed": args.seed, "N": args.n, "kappa": kappa,
                           "radius": radius, "floor_s": fl, **out}
                    if not out.get("error"):
                        row["ratio"] = row["drokit_s"] / fl
                        if weights == "unit":
                            unit_s = row["drokit_s"]
                        elif unit_s:
                            row["vs_unit"] = row["drokit_s"] / unit_s
                    failed |= bool(out.get("error"))
                    rows.append(row)
                    if not args.quiet:
                        print(render([row], False).splitlines()[-1], file=sys.stderr, flush=True)
                    if args.out:
                        write_csv(args.out, header, rows, FIELDS)
    print("\n".join(header) + "\n\n" + render(rows, args.markdown))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
