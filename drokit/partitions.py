"""Where a distributed fit's partitions live: in this process, or as Dask actors on the workers (issue 25).

A distributed fit (:mod:`drokit.reformulations.distributed_fit`) talks to its partitions
(:class:`drokit.reformulations.partition_fit.PartitionFit`) through one
call, ``parts.call(name, *args) -> [result of partition 1, ...]``: the method ``name`` run on every partition with the
same small arguments (``theta``, ``tau``, ``mu``, tokens), its small results returned in partition order.

* :class:`LocalParts`: the partitions are objects of this process (the local scheduler computed them; tests);
* :class:`ActorParts`: each partition is a ``dask.distributed`` actor on the worker that built it, so its data, working
  rows and per-sample state stay there; a call sends the arguments to every actor at once and gathers the results.
  A worker lost mid-fit loses its partition: the call raises :class:`~drokit.exceptions.PartitionLostError` (a
  ``SolverError``) naming it (the fit cannot resume without the partition's working rows, and never returns a sum with
  a partition missing).
"""

from __future__ import annotations

from typing import List, Sequence

from .exceptions import PartitionLostError, SolverError


#: seconds between checks of the actors' workers while a call runs (:meth:`ActorParts._wait`)
POLL_SECONDS = 5.0
#: checks in a row that find a worker paused before the fit stops (:meth:`ActorParts._wait`): a worker at the edge of
#: its pause fraction pauses and resumes within a second (10M rows on 2 GB workers)
PAUSED_POLLS = 3


class LocalParts:
    """Partitions held in this process."""

    def __init__(self, objects: Sequence):
        self.objects = list(objects)

    def __len__(self) -> int:
        return len(self.objects)

    def call(self, name: str, *args, **kwargs) -> List:
        return [getattr(obj, name)(*args, **kwargs) for obj in self.objects]

    def keep(self, index: Sequence[int]) -> "LocalParts":
        return LocalParts([self.objects[i] for i in index])


class ActorParts:
    """Partitions held by ``dask.distributed`` actors (module docstring)."""

    def __init__(self, actors: Sequence):
        self.actors = list(actors)

    def __len__(self) -> int:
        return len(self.actors)

    def call(self, name: str, *args, **kwargs) -> List:
        try:
            pending = [getattr(actor, name)(*args, **kwargs) for actor in self.actors]
            return [self._wait(p, name) for p in pending]
        except SolverError:
            raise
        except Exception as exc:         # a lost worker surfaces as a comm, actor or cancelled error, by version
            raise PartitionLostError(f"a Dask worker holding a partition of the fit failed or was lost during "
                              f"{name!r} ({type(exc).__name__}: {exc}); a distributed fit does not resume without "
                              f"the partition's working rows: fit again (the data are read again)") from exc

    def _wait(self, pending, name: str):
        """The result of one actor call, checking every :data:`POLL_SECONDS` the workers holding partitions: a worker
        lost or closing stops the fit at once; a worker past its memory limit's pause fraction
        (``distributed.worker.memory.pause``, 0.8 by default) runs nothing more, so a worker found paused at
        :data:`PAUSED_POLLS` checks in a row stops it too (a pause of a moment, memory freed or spilled, does not)."""
        paused = 0
        while True:
            try:
                return pending.result(timeout=POLL_SECONDS)
            except Exception as exc:     # a timeout (its class differs by version): the workers' status, then wait on
                if "timeout" not in type(exc).__name__.lower() and not isinstance(exc, TimeoutError):
                    raise
            found = self._check_workers(name)
            paused = paused + 1 if found is not None else 0
            if paused >= PAUSED_POLLS:
                address, limit = found
                raise PartitionLostError(f"the Dask worker {address} holding a partition of the fit is paused during {name!r}"
                                  + (f" (memory limit {limit / 2 ** 30:.2f} GiB: a paused worker is past the pause "
                                     f"fraction of it; use more partitions per worker's memory, more workers or a "
                                     f"larger memory_limit)" if limit else "")
                                  + "; the distributed fit does not resume without the partition's working rows")

    def _check_workers(self, name: str):
        """Raises :class:`PartitionLostError` when a worker holding a partition is lost or neither running nor paused;
        returns ``(address, memory limit)`` of a paused one, else ``None``."""
        from distributed import get_client
        workers = get_client().scheduler_info().get("workers", {})
        found = None
        for address in {getattr(actor, "_address", None) for actor in self.actors}:
            info = workers.get(address)
            status = None if info is None else str(info.get("status", "running"))
            if status in ("paused", "Status.paused"):
                found = (address, info.get("memory_limit"))
            elif info is None or status not in ("running", "Status.running"):
                state = "was lost (gone from the scheduler)" if info is None else f"is {status}"
                raise PartitionLostError(f"the Dask worker {address} holding a partition of the fit {state} during {name!r}"
                                  f"; the distributed fit does not resume without the partition's working rows")
        return found

    def keep(self, index: Sequence[int]) -> "ActorParts":
        return ActorParts([self.actors[i] for i in index])


__all__ = ["LocalParts", "ActorParts"]
