"""Distributed fits on Dask (issue 25): the same default fit, in memory and on a LocalCluster, side by side.

What is measured
----------------
The synthetic 10 + 10 mixed table of ``benchmarks/bench_scaling.py`` (10 standard-normal numerical features, 10
categorical ones with 3-8 levels, labels from a noisy linear model; the same model at every size), generated
*partition by partition on the workers* (``dask.delayed``; partition ``k`` draws its rows from the seed and ``k``),
so the client never holds the table.  For each kappa / radius:

* **Dask**: ``dk.DROClassifier(ambiguity=dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(kappa)), radius=r))
  .fit(Xd, yd)`` with every default, on a ``LocalCluster`` of ``--workers`` worker processes with one thread each and
  ``--memory-limit`` each (``OPENBLAS_NUM_THREADS=1``): wall time of ``fit`` (its binding of the partitions on the
  workers included, the generation of the data not: the partitions are persisted first), the certificate, and every
  worker's peak resident memory during the fit (sampled every 0.2 s by ``client.run``), how often the partitions'
  derived objects were released to stay within the workers' memory (rebuilt at their next call:
  ``drokit/partition_memory.py``) and their cold state per row at the end of the fit.
* **In memory** (sizes up to ``--memory-max``): the same partitions gathered into one pandas frame in this process and
  the same estimator fitted on it, one BLAS thread, while the cluster idles: wall time, the certificate, and the
  objective's relative difference to the Dask fit's (both are certified within 1e-6 of the optimum).

An uncertified fit raises (``on_inaccurate="raise"``, the default) and is reported as a failure with its message,
never as a timing row.  The results file's first lines record the commit, date, machine and command.

    python benchmarks/bench_dask_fit.py [--sizes 1000000] [--partitions 8] [--kappas inf 1] [--radii 0.01 0.1]
        [--workers 2] [--memory-limit 2GB] [--memory-max 1000000] [--markdown]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_scaling import _estimator, synthetic_rows  # noqa: E402


def synthetic_part(n: int, seed: int, part: int) -> pd.DataFrame:
    """Partition ``part`` of the synthetic 10 + 10 table (``bench_scaling.make_synthetic``'s model, drawn from
    ``[seed, 1, 0]``; the rows from ``[seed, 3, part]``), with its label column ``y``."""
    X, y = synthetic_rows(n, seed, np.random.default_rng([seed, 3, part]))
    return X.assign(y=y)


def dask_table(n: int, partitions: int, seed: int, client):
    """The table as a persisted Dask DataFrame of ``partitions`` equal pieces, generated on the workers."""
    import dask
    import dask.dataframe as dd
    sizes = np.full(partitions, n // partitions)
    sizes[: n - sizes.sum()] += 1
    meta = synthetic_part(1, seed, 0).iloc[:0]
    frame = dd.from_delayed([dask.delayed(synthetic_part)(int(s), seed, k) for k, s in enumerate(sizes)], meta=meta,
                            verify_meta=False)
    return client.persist(frame)


class MemoryWatch:
    """Every worker's peak resident memory (MB) while it runs, sampled by ``client.run``."""

    def __init__(self, client, every: float = 0.2):
        self.client, self.every, self.peak = client, every, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _rss() -> float:
        import psutil
        return psutil.Process().memory_info().rss / 2 ** 20

    def _loop(self):
        while not self._stop.is_set():
            try:
                for w, mb in self.client.run(self._rss).items():
                    self.peak[w] = max(self.peak.get(w, 0.0), mb)
            except Exception:       # a worker restarting: the next sample
                pass
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run(args) -> list:
    from distributed import Client, LocalCluster
    from threadpoolctl import threadpool_limits
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           memory_limit=args.memory_limit, dashboard_address=None)
    client = Client(cluster)
    rows = []
    try:
        warm = dask_table(2_000, 2, args.seed, client)               # imports and first actors: not timed
        _estimator(float("inf"), 0.1).fit(warm.drop(columns="y"), warm["y"])
        for n in args.sizes:
            table = dask_table(n, args.partitions, args.seed, client)
            Xd, yd = table.drop(columns="y"), table["y"]
            for kappa in args.kappas:
                for radius in args.radii:
                    row = {"N": n, "kappa": kappa, "radius": radius, "partitions": args.partitions}
                    est = _estimator(kappa, radius)
                    try:
                        with MemoryWatch(client) as watch:
                            t0 = time.perf_counter()
                            est.fit(Xd, yd)
                            row["dask_s"] = time.perf_counter() - t0
                        res = est.result_
                        memory = res.auxiliary.get("partition_memory", {})
                        row.update(dask_gap=res.relative_gap, dask_obj=res.objective, stage=res.auxiliary["stage"],
                                   worker_peak_mb=max(watch.peak.values()) if watch.peak else np.nan,
                                   releases=memory.get("releases"), cold_b=memory.get("cold_bytes_per_sample"))
                    except Exception as exc:                          # uncertified or failed: a failure row
                        row["dask_error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
                    if n <= args.memory_max:
                        frame = table.compute()
                        X, y = frame.drop(columns="y"), frame["y"].to_numpy()
                        del frame
                        mem = _estimator(kappa, radius)
                        try:
                            with threadpool_limits(limits=1):
                                t0 = time.perf_counter()
                                mem.fit(X, y)
                                row["memory_s"] = time.perf_counter() - t0
                            row.update(memory_gap=mem.result_.relative_gap, memory_obj=mem.result_.objective)
                        except Exception as exc:
                            row["memory_error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
                        del X, y
                    if "dask_s" in row and "memory_s" in row:
                        row["ratio"] = row["dask_s"] / row["memory_s"]
                        row["obj_rel_diff"] = (row["dask_obj"] - row["memory_obj"]) / max(1.0, abs(row["memory_obj"]))
                    rows.append(row)
                    print(row, flush=True)
            del table, Xd, yd
    finally:
        client.close()
        cluster.close()
    return rows


def header(args) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    return (f"# commit {commit}, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {platform.platform()}, "
            f"{os.cpu_count()} CPUs\n# command: python benchmarks/{Path(sys.argv[0]).name} {' '.join(sys.argv[1:])}\n")


def markdown(rows: list) -> str:
    head = ("| N | kappa | radius | partitions | Dask fit s | stage | Dask gap | worker peak MB | releases | "
            "cold B / row at the end | in-memory s | in-memory gap | Dask / memory | objective rel. diff |\n|"
            + "---|" * 14)
    out = [head]
    for r in rows:
        def f(key, fmt):
            v = r.get(key)
            return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)
        dask_s = f("dask_s", ".1f") if "dask_error" not in r else f"failed: {r['dask_error']}"
        mem_s = f("memory_s", ".1f") if "memory_error" not in r else f"failed: {r['memory_error']}"
        out.append(f"| {r['N']:,} | {r['kappa']:g} | {r['radius']:g} | {r['partitions']} | {dask_s} | "
                   f"{r.get('stage', '-')} | {f('dask_gap', '.1e')} | {f('worker_peak_mb', '.0f')} | "
                   f"{f('releases', 'd')} | "
                   f"{f('cold_b', '.0f')} | {mem_s} | "
                   f"{f('memory_gap', '.1e')} | {f('ratio', '.2f')} | {f('obj_rel_diff', '+.1e')} |")
    return "\n".join(out)


def add_cluster_arguments(ap: argparse.ArgumentParser, memory_max_help: str) -> None:
    """The options of the Dask benchmarks' cluster, in-memory comparison, seed and output."""
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="2GB")
    ap.add_argument("--memory-max", type=int, default=1_000_000, help=memory_max_help)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--markdown", action="store_true")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", type=int, default=[1_000_000])
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--kappas", nargs="+", type=float, default=[float("inf"), 1.0])
    ap.add_argument("--radii", nargs="+", type=float, default=[0.01, 0.1])
    add_cluster_arguments(ap, "largest N also fitted in memory")
    args = ap.parse_args()
    rows = run(args)
    print(header(args))
    print(markdown(rows) if args.markdown else rows)


if __name__ == "__main__":
    main()
