"""Fuzz the slope-cut LP master (``drokit/reformulations/slope_cuts.py``) against the brute-force reference.

For each seed in ``[start, start + n)`` an instance is drawn by ``tests/fuzz_instances.draw_instance`` (the fuzz of
``fuzz_reference.py``); where the slope cuts apply (``slope_cuts_apply``: at least two mutable categorical features,
``p = 1``, the mismatch cost, a margin loss without attack or penalty, a numerical dual norm an LP represents) and
the reference solved, ``slope_cut_search`` runs from a cold start (coefficients 0, lambda 1) to a relative gap of
1e-7 and is checked:

* certified (its own gap closed),
* its upper bound is the reference optimum to ``2e-7 max(1, |opt|)`` and at least the reference's exact worst-case
  risk of the returned model (``opt`` is the smaller of the reference's optimum and that risk: the reference's
  program is solved to Clarabel's default tolerances),
* its lower bound (the LP's dual point, repaired and evaluated exactly) is at most ``opt + 1e-9 max(1, |opt|)``.

Run:  python benchmarks/fuzz_slope_cuts.py --n 2000 --start 0 [--jobs 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from collections import Counter
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import fuzz_instances as fz  # noqa: E402


def check(seed: int):
    """``(seed, verdict, detail)``; verdicts ``pass``, ``skip`` (not applicable / no reference) or a failure."""
    import drokit as dk
    from drokit.reformulations.slope_cuts import slope_cut_search, slope_cuts_apply
    from drokit.oracles import make_oracle
    inst = fz.draw_instance(seed)
    if inst.task != "classification" and np.isfinite(inst.kappa):
        return seed, "skip", "regression with a finite label cost"
    try:
        problem = dk.Problem(loss=inst.loss_object(), ambiguity=dk.Wasserstein(inst.metric(), radius=inst.radius),
                             task=inst.task, l1_penalty=inst.l1_penalty, l2_penalty=inst.l2_penalty)
        di = problem.bind(inst.frame(), inst.y.copy(), sample_weight=inst.sample_weight).fitting_view()
    except dk.DrokitError as exc:
        return seed, "skip", f"refused: {exc}"
    ok, why = slope_cuts_apply(di)
    if not ok or di.radius <= 0:
        return seed, "skip", why or "radius 0"
    opt = inst.reference
    if opt is None:
        return seed, "skip", "reference failed"
    start = SimpleNamespace(intercept=0.0, coef=np.zeros(di.schema.n_encoded), lam=1.0)
    out = slope_cut_search(di, make_oracle(di, "auto"), start, tol=1e-7)
    scale = max(1.0, abs(opt))
    risk = inst.reference_risk(out.intercept, out.coef)
    # the reference's program is solved by cvxpy/Clarabel to its default tolerances: where the reference's own exact
    # risk of the returned model is lower (smooth hinge at beta = 0: 0.5 against its 0.5000004), that is the optimum
    opt = min(opt, risk)
    if not out.certified:
        return seed, "uncertified", f"{out.stop}; upper {out.upper_bound:.10g} lower {out.lower_bound:.10g} opt {opt:.10g}"
    if out.lower_bound > opt + 1e-9 * scale:
        return seed, "lower_above_optimum", f"lower {out.lower_bound:.12g} opt {opt:.12g}"
    if abs(out.upper_bound - opt) > 2e-7 * scale:
        return seed, "upper_not_optimum", f"upper {out.upper_bound:.12g} opt {opt:.12g}"
    if risk > out.upper_bound + 1e-8 * scale:
        return seed, "upper_below_risk", f"upper {out.upper_bound:.12g} reference risk {risk:.12g}"
    return seed, "pass", f"{out.rounds} rounds"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    seeds = list(range(args.start, args.start + args.n))
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        results = pool.map(check, seeds, chunksize=8) if args.jobs > 1 else list(map(check, seeds))
    counts = Counter(v for _, v, _ in results)
    print(f"{len(seeds)} instances (seeds {args.start}-{args.start + args.n - 1}), {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for seed, verdict, detail in results:
        if verdict not in ("pass", "skip"):
            print(f"  seed {seed}: {verdict}: {detail}")
    skips = Counter(d.split(":")[0] for _, v, d in results if v == "skip")
    print("skipped: " + "; ".join(f"{k} ({v})" for k, v in skips.most_common()))
    sys.exit(1 if any(v not in ("pass", "skip") for _, v, _ in results) else 0)


if __name__ == "__main__":
    main()
