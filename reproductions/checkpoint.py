"""Resumable reproduction runs (issue 26): each finished unit of work (a data set, or a data set's variant) is saved
as it ends, and ``--resume`` takes the saved ones instead of running them again.

The full protocols take hours to days (100 splits); a run stopped by a lost worker, a reboot or a time limit should
not start over.  :class:`Checkpoints` keeps ``<out>/partial/<unit>.pkl`` (the unit's run object, pickled) next to
``<out>/partial/config.json`` (the configuration that produced them).  A resumed run reuses a unit only when the
configuration's *protocol* -- every option but where and how it runs (output folder, jobs, backend, scheduler,
verbosity, the command line and the run's stamps) -- equals the saved one, and only with ``--resume``; any other
protocol starts a fresh folder.  The finished report deletes the folder (:meth:`Checkpoints.clear`), so committed
reports carry no partial results.  Without ``--resume`` the units are still saved (a later ``--resume`` can use them).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil
from pathlib import Path
from typing import Callable, List, Optional, Sequence, TypeVar

T = TypeVar("T")

#: configuration fields that do not change the results
RUN_ONLY = ("out", "n_jobs", "backend", "scheduler", "quiet", "verbose", "command", "render_only", "generated",
            "load_average", "commit", "environment", "resume")
FOLDER = "partial"


def protocol_of(cfg) -> dict:
    """The fields of ``cfg`` (a dataclass) that determine the results, JSON-ready."""
    values = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(vars(cfg))
    return json.loads(json.dumps({k: v for k, v in values.items() if k not in RUN_ONLY}, default=str))


class Checkpoints:
    """The saved units of one run's output folder (module docstring)."""

    def __init__(self, cfg, resume: bool, log: Optional[Callable[[str], None]] = None):
        self.folder = Path(cfg.out) / FOLDER
        self.protocol = protocol_of(cfg)
        self.log = log or (lambda message: None)
        saved = self.folder / "config.json"
        same = saved.is_file() and json.loads(saved.read_text()) == self.protocol
        if self.folder.exists() and not (resume and same):
            if resume:
                self.log(f"--resume: the partial results in {self.folder} are of another protocol; starting afresh")
            shutil.rmtree(self.folder)
        self.resume = resume and same
        self.folder.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(self.protocol, indent=1))

    def _path(self, unit: str) -> Path:
        return self.folder / (unit.replace("/", "_") + ".pkl")

    def run(self, unit: str, work: Callable[[], T]) -> T:
        """The saved result of ``unit`` when resuming, else ``work()``, saved as it ends."""
        path = self._path(unit)
        if self.resume and path.is_file():
            self.log(f"{unit}: taken from {path} (--resume)")
            return pickle.loads(path.read_bytes())
        result = work()
        try:
            data = pickle.dumps(result)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:     # the run goes on, unsaved
            self.log(f"{unit}: not saved for --resume ({type(exc).__name__}: {exc})")
            return result
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)                   # a unit is saved whole or not at all
        return result

    def run_all(self, units: Sequence[str], work: Callable[[str], T]) -> List[T]:
        return [self.run(unit, lambda unit=unit: work(unit)) for unit in units]

    def clear(self) -> None:
        """The run finished and its report is written: no partial results are left."""
        shutil.rmtree(self.folder, ignore_errors=True)


__all__ = ["Checkpoints", "protocol_of", "RUN_ONLY"]
