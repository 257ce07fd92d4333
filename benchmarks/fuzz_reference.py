"""Fuzz drokit against the brute-force reference on thousands of seeded tiny instances (issue 21).

Each seed in ``[start, start + n)`` draws an instance with ``tests/fuzz_instances.draw_instance`` (N 3-12
rows, 0-2 numerical and 0-3 categorical features, 7 losses, norms, exponents, label costs, immutable
and ordinal features, asymmetric level costs, integer sample weights, radius 0 sometimes) and fits it
with every requested method / oracle through ``check_instance``, which compares the fit with
``tests/reference/brute_force.py`` (categories: see ``tests/fuzz_instances.py``).  Inapplicable methods
must refuse with a ParameterError and are counted as skips.

Prints a summary table (failure category x method, with pass / fail / skip counts and the quantiles of
the certificate's excess lower - upper) and writes one CSV row per failure, with the full instance
description, to ``--csv`` (plus informational ``reference_failed`` rows where the reference's own solve
failed).

Run:  python benchmarks/fuzz_reference.py --n 10000 --start 0 [--methods monolithic,cutting_plane/dp]
      [--csv fuzz_failures.csv] [--jobs 2] [--quiet]
      python benchmarks/fuzz_reference.py --seeds 236,288 --methods cutting_plane/dp   (reproduce)
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import sys
import time
from collections import Counter, defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import fuzz_instances as fz  # noqa: E402

CSV_FIELDS = ["seed", "method", "category", "detail", "reference", "objective", "lower_bound",
              "upper_bound", "excess", "status", "summary", "instance"]


def run_seed(args):
    """All requested methods on one seed: ``(seed, summary, instance json, outcomes)``."""
    seed, labels = args
    inst = fz.draw_instance(seed)
    outcomes = [fz.check_instance(inst, *fz.parse_label(lbl)) for lbl in labels]
    return seed, inst.summary(), fz.describe_json(inst), outcomes


def summary_table(counts: Counter, bounds: dict, labels, n_instances: int, seconds: float) -> str:
    """The table printed at the end: verdicts and failure categories (rows) by method (columns), the fits by the
    source of their lower bound (``auxiliary["lower_bound"]["source"]``; ``"method"`` is a solver's dual
    objective capped at the upper bound, the others explicit dual points evaluated exactly), then
    quantiles of the certificate's excess ``lower - upper``: relative (over the fits with ``|upper| >=
    1e-6``) and absolute (all fits)."""
    rows = ["pass", "fail", "skip", "reference_failed"] + list(fz.CATEGORIES)  # verdicts, then categories
    short = [lbl.replace("cutting_plane", "cp").replace("enumeration", "enum") for lbl in labels]
    width = max(9, *(len(s) for s in short))
    head = f"{'':<18}" + "".join(f"{s:>{width + 2}}" for s in short)
    lines = [f"{n_instances} instances, {seconds:.0f} s", head, "-" * len(head)]
    for r in rows:
        if r == fz.CATEGORIES[0]:
            lines.append(f"{'failures by category':<18}")
        lines.append(f"{r:<18}" + "".join(f"{counts[(lbl, r)]:>{width + 2}}" for lbl in labels))
    lines.append("-" * len(head))
    for source in sorted({key[1][len("source "):] for key in counts if key[1].startswith("source ")}):
        key = f"source {source or '(none)'}"
        lines.append(f"{key[:18]:<18}" + "".join(f"{counts[(lbl, 'source ' + source)]:>{width + 2}}" for lbl in labels))
    lines.append("-" * len(head))
    for kind in ("rel", "abs"):
        for q in (50, 90, 99, 100):
            cells = []
            for lbl in labels:
                lower, upper = np.asarray(bounds[lbl], dtype=float).reshape(-1, 2).T
                keep = np.abs(upper) >= 1e-6 if kind == "rel" else np.ones(upper.size, bool)
                e = (lower - upper)[keep] / (np.abs(upper[keep]) if kind == "rel" else 1.0)
                cells.append(f"{np.percentile(e, q):>{width + 2}.1e}" if e.size else f"{'-':>{width + 2}}")
            lines.append(f"{f'{kind} excess p{q}':<18}" + "".join(cells))
    lines.append("rel excess = (lower - upper) / |upper| over the fits with |upper| >= 1e-6; abs excess = "
                 "lower - upper; the goal is <= 1e-12 relative")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of instances (seeds)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds to run instead of --n/--start "
                                                  "(reproduce failures)")
    ap.add_argument("--methods", default="all",
                    help=f"comma-separated method labels, or 'all': {','.join(fz.METHOD_LABELS)}")
    ap.add_argument("--csv", default="fuzz_failures.csv", help="where the failing fits are written")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines (the summary is still printed)")
    ap.add_argument("--progress-every", type=int, default=100, help="instances between progress lines")
    args = ap.parse_args(argv)

    labels = list(fz.METHOD_LABELS) if args.methods == "all" else [m.strip() for m in args.methods.split(",")]
    unknown = [lbl for lbl in labels if lbl not in fz.METHOD_LABELS]
    if unknown:
        ap.error(f"unknown method label(s) {unknown}; choose from {list(fz.METHOD_LABELS)}")

    counts, bounds = Counter(), defaultdict(list)
    t0 = time.perf_counter()
    seeds = ([int(v) for v in args.seeds.split(",")] if args.seeds
             else list(range(args.start, args.start + args.n)))
    tasks = [(seed, labels) for seed in seeds]
    pool = mp.Pool(args.jobs) if args.jobs > 1 else None
    results = pool.imap(run_seed, tasks, chunksize=4) if pool else map(run_seed, tasks)
    with open(args.csv, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for done, (seed, summary, description, outcomes) in enumerate(results, start=1):
            for o in outcomes:
                counts[(o.method, o.verdict)] += 1
                if np.isfinite(o.lower_bound):
                    counts[(o.method, "source " + o.source)] += 1
                if np.isfinite(o.excess):
                    bounds[o.method].append((o.lower_bound, o.upper_bound))
                for category in o.categories:
                    counts[(o.method, category)] += 1
                failures = o.failures + ([("reference_failed", "the reference solve failed (informational)")]
                                         if o.reference_failed else [])
                for category, detail in failures:
                    writer.writerow(dict(seed=seed, method=o.method, category=category, detail=detail,
                                         reference=o.reference, objective=o.objective,
                                         lower_bound=o.lower_bound, upper_bound=o.upper_bound,
                                         excess=o.excess, status=o.status, summary=summary,
                                         instance=description))
            fh.flush()
            if not args.quiet and (done % args.progress_every == 0 or done == len(seeds)):
                failed = sum(counts[(lbl, "fail")] for lbl in labels)
                hard = sum(counts[(lbl, c)] for lbl in labels for c in fz.CATEGORIES if c != "certificate")
                rate = done / (time.perf_counter() - t0)
                print(f"[{done}/{len(seeds)}] seed {seed}: {failed} failing fits ({hard} non-certificate "
                      f"failures), {rate:.1f} instances/s", file=sys.stderr, flush=True)
    if pool:
        pool.close()
        pool.join()
    print(summary_table(counts, bounds, labels, len(seeds), time.perf_counter() - t0))
    print(f"failing fits written to {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
