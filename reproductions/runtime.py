"""The process side of a reproduction run: progress lines, the machine's facts, the Dask session.

Worker processes import ``reproductions.*`` by reference (nothing is sent by value): loky and the local
Dask cluster of :func:`dask_session` start them with this process's ``sys.path``, which holds the
repository root (``python -m reproductions.<paper>`` from the root, or the tests under ``python -m
pytest``).  The scheduler and workers of an outside cluster (``--scheduler``) must be able to import
``reproductions`` too: start them with the repository root on ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from typing import Iterator, Sequence

#: the dask client of a run with ``--backend dask`` (one cluster for every sweep; see :func:`dask_session`)
_DASK_CLIENT = None


class Progress:
    """Progress lines on stderr, prefixed with the reproduction's name and the elapsed time; silent with
    ``--quiet``."""

    def __init__(self, quiet: bool, name: str):
        self.quiet = quiet
        self.name = name
        self.start = time.perf_counter()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.start
            print(f"[{self.name} {elapsed:7.1f} s] {message}", file=sys.stderr, flush=True)


def cpu_count() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_average() -> str:
    """The machine's 1 / 5 / 15-minute load average, ``"n/a"`` where the OS has none."""
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def versions(extra: Sequence[str] = ()) -> str:
    """``Python 3.x, drokit a.b, numpy ...``: the versions a report's numbers depend on."""
    names = ["drokit", "numpy", "scipy", "pandas", "scikit-learn", "clarabel", "joblib", *extra]
    out = []
    for name in names:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return f"Python {platform.python_version()}, " + ", ".join(out)


def stamp(cfg) -> None:
    """Record on ``cfg`` when the run ended (UTC), the machine's load then and the commit (all shown in the
    report)."""
    from reproductions.freshness import current_commit
    cfg.generated = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M}"
    cfg.load_average = load_average()
    commit, dirty = current_commit()
    cfg.commit = (commit[:10] + ("+dirty" if dirty else "")) if commit else "unknown"
    cfg.environment = environment()


def environment() -> str:
    """The versions, platform and CPU cores of this process (a report's Environment line)."""
    return f"{versions()}; {platform.platform()}, {cpu_count()} CPU cores"


def dask_client():
    """The client of the current :func:`dask_session` (``None`` outside one)."""
    return _DASK_CLIENT


@contextlib.contextmanager
def dask_session(cfg) -> Iterator[None]:
    """With ``cfg.backend == "dask"`` and no ``cfg.scheduler``: one ``LocalCluster`` of ``cfg.n_jobs``
    single-threaded worker processes for every sweep of the run, closed at the end; otherwise nothing."""
    global _DASK_CLIENT
    if cfg.backend != "dask" or cfg.scheduler:
        yield
        return
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=max(1, cfg.n_jobs), threads_per_worker=1, processes=True)
    _DASK_CLIENT = Client(cluster)
    try:
        yield
    finally:
        _DASK_CLIENT.close()
        cluster.close()
        _DASK_CLIENT = None
