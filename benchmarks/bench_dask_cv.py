"""Cross-validated radius on Dask (issue 25): ``DROClassifierCV`` on a LocalCluster and in memory, the same folds.

What is measured
----------------
The synthetic 10 + 10 mixed table of ``benchmarks/bench_dask_fit.py`` (generated partition by partition on the workers,
``dask_table``; persisted before anything is timed).  For each size of ``--sizes``:

* **Dask CV**: ``dk.DROClassifierCV(radii=R, cv=K, random_state=0).fit(Xd, yd)`` with every other default, on a
  ``LocalCluster`` of ``--workers`` worker processes with one thread each and ``--memory-limit`` each (one BLAS
  thread): wall time of ``fit`` (binding, the ``K x |R|`` distributed fits, the scoring pass and the refit on every
  row), the chosen ``radius_``, ``scores_``, the largest certified relative gap of the path
  (``path_["max_relative_gap"]``), its failed fits (``path_["n_failed_fits"]``) and the refit's objective and gap.
* **In memory, the same folds** (sizes up to ``--memory-max``): the same partitions gathered into one pandas frame in
  this process (partition order), each row's fold the one the Dask CV dealt it
  (``drokit.model_selection.dask_scores.fold_numbers(y of partition i, K, 0, i, True)``), and
  ``dk.DROClassifierCV(radii=R, cv=PredefinedSplit(folds), random_state=0, n_jobs=2, backend="loky")`` fitted on it
  while the cluster idles: wall time, ``radius_``, ``scores_``, the refit's objective.

Per size: both times and their ratio, the number of fits, the chosen radii (equal?), the largest absolute difference
of the two ``scores_`` matrices (rows matched by radius; the Dask scores are partition sums, so equal up to the order
of the sums and the fits' certified tolerance), the refit objectives' relative difference, the Dask path's largest
gap and the failed fits.  A fit that raises is reported as a failure with its message, never as a timing row.  Both
sides are warmed up first (a 2,000-row Dask CV and a 2,000-row in-memory CV on the loky pool; not timed).

    python benchmarks/bench_dask_cv.py [--sizes 200000] [--partitions 8] [--radii 0.01 0.03 0.1] [--folds 3]
        [--workers 2] [--memory-limit 2GB] [--memory-max 1000000] [--seed 19] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks.bench_dask_fit import add_cluster_arguments, dask_table, header  # noqa: E402


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:160]}"


def gathered(table, folds: int) -> tuple:
    """``(X, y, fold of every row)``: the persisted table's partitions in this process, in partition order, with the
    folds the Dask CV deals (``fold_numbers`` of each partition's labels, seed 0, stratified)."""
    from drokit.model_selection.dask_scores import fold_numbers
    parts = [table.get_partition(i).compute() for i in range(table.npartitions)]
    ids = np.concatenate([fold_numbers(p["y"].to_numpy(), folds, 0, i, True) for i, p in enumerate(parts)])
    frame = pd.concat(parts, ignore_index=True)
    return frame.drop(columns="y"), frame["y"].to_numpy(), ids


def _in_memory(radii: list, ids: np.ndarray):
    import drokit as dk
    from sklearn.model_selection import PredefinedSplit
    return dk.DROClassifierCV(radii=radii, cv=PredefinedSplit(ids), random_state=0, n_jobs=2, backend="loky")


def _by_radius(est) -> np.ndarray:
    """``scores_`` with its rows sorted by radius (so the two sides' rows match)."""
    return est.scores_[np.argsort(est.path_["radius"].to_numpy(), kind="stable")]


def run(args) -> list:
    """One row per size (module docstring); each row is also printed as it is done."""
    import drokit as dk
    from distributed import Client, LocalCluster
    from threadpoolctl import threadpool_limits
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           memory_limit=args.memory_limit, dashboard_address=None)
    client = Client(cluster)
    rows = []
    try:
        warm = dask_table(2_000, 2, args.seed, client)                 # imports, actors, the loky pool: not timed
        dk.DROClassifierCV(radii=[0.1], cv=2, random_state=0).fit(warm.drop(columns="y"), warm["y"])
        X, y, ids = gathered(warm, 2)
        with threadpool_limits(limits=1):
            _in_memory([0.1], ids).fit(X, y)
        del warm, X, y, ids
        for n in args.sizes:
            table = dask_table(n, args.partitions, args.seed, client)
            Xd, yd = table.drop(columns="y"), table["y"]
            row = {"N": n, "partitions": args.partitions, "folds": args.folds, "fits": args.folds * len(args.radii)}
            est = dk.DROClassifierCV(radii=args.radii, cv=args.folds, random_state=0)
            try:
                t0 = time.perf_counter()
                est.fit(Xd, yd)
                row["dask_s"] = time.perf_counter() - t0
                row.update(dask_radius=est.radius_, dask_scores=est.scores_.tolist(),
                           dask_max_gap=float(est.path_["max_relative_gap"].max()),
                           dask_failed=int(est.path_["n_failed_fits"].sum()), dask_obj=est.result_.objective,
                           dask_refit_gap=est.result_.relative_gap)
            except Exception as exc:                                  # uncertified or failed: a failure row
                row["dask_error"] = _error(exc)
            if n <= args.memory_max:
                X, y, ids = gathered(table, args.folds)
                mem = _in_memory(args.radii, ids)
                try:
                    with threadpool_limits(limits=1):
                        t0 = time.perf_counter()
                        mem.fit(X, y)
                        row["memory_s"] = time.perf_counter() - t0
                    row.update(memory_radius=mem.radius_, memory_scores=mem.scores_.tolist(),
                               memory_failed=int(mem.path_["n_failed_fits"].sum()), memory_obj=mem.result_.objective)
                except Exception as exc:
                    row["memory_error"] = _error(exc)
                del X, y, ids
            if "dask_s" in row and "memory_s" in row:
                row["ratio"] = row["dask_s"] / row["memory_s"]
                row["same_radius"] = row["dask_radius"] == row["memory_radius"]
                row["score_diff"] = float(np.max(np.abs(_by_radius(est) - _by_radius(mem))))
                row["obj_rel_diff"] = (row["dask_obj"] - row["memory_obj"]) / max(1.0, abs(row["memory_obj"]))
            rows.append(row)
            print(row, flush=True)
            del table, Xd, yd
    finally:
        client.close()
        cluster.close()
    return rows


def markdown(rows: list) -> str:
    """The rows as a Markdown table (a failed fit shows its message in place of its time)."""
    head = ("| N | partitions | folds | fits | Dask CV s | in-memory CV s | Dask / memory | radius_ Dask | "
            "radius_ memory | same radius | max abs score diff | refit objective rel. diff | Dask max gap | "
            "failed fits Dask / memory |\n|" + "---|" * 14)
    out = [head]
    for r in rows:
        def f(key, fmt):
            v = r.get(key)
            return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)
        dask_s = f("dask_s", ".1f") if "dask_error" not in r else f"failed: {r['dask_error']}"
        mem_s = f("memory_s", ".1f") if "memory_error" not in r else f"failed: {r['memory_error']}"
        same = "-" if "same_radius" not in r else ("yes" if r["same_radius"] else "**no**")
        out.append(f"| {r['N']:,} | {r['partitions']} | {r['folds']} | {r['fits']} | {dask_s} | {mem_s} | "
                   f"{f('ratio', '.2f')} | {f('dask_radius', 'g')} | {f('memory_radius', 'g')} | {same} | "
                   f"{f('score_diff', '.1e')} | {f('obj_rel_diff', '+.1e')} | {f('dask_max_gap', '.1e')} | "
                   f"{f('dask_failed', 'd')} / {f('memory_failed', 'd')} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", type=int, default=[200_000])
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--radii", nargs="+", type=float, default=[0.01, 0.03, 0.1])
    ap.add_argument("--folds", type=int, default=3)
    add_cluster_arguments(ap, "largest N also cross-validated in memory")
    args = ap.parse_args()
    rows = run(args)
    print(header(args))
    print(markdown(rows) if args.markdown else rows)


if __name__ == "__main__":
    main()
