"""Where a distributed fit's partitions live: in this process, or as Dask actors on the workers (issue 25).

A distributed fit (:mod:`drokit.reformulations.distributed_fit`) talks to its partitions
(:class:`drokit.reformulations.partition_fit.PartitionFit`) through one
call, ``parts.call(name, *args) -> [result of partition 1, ...]``: the method ``name`` run on every partition with the
same small arguments (``theta``, ``tau``, ``mu``, tokens), its small results returned in partition order.

* :class:`LocalParts`: the partitions are objects of this process (the local scheduler computed them; tests);
* :class:`ActorParts`: each partition is a ``dask.distributed`` actor on the worker that built it, so its data, working
  rows and per-sample state stay there; a call sends the arguments to every actor at once and gathers the results.
  A worker lost mid-fit loses its partition: the call raises :class:`~drokit.exceptions.SolverError` naming it (the fit
  cannot resume without the partition's working rows, and never returns a sum with a partition missing).
"""

from __future__ import annotations

from typing import List, Sequence

from .exceptions import SolverError


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
            return [p.result() for p in pending]
        except Exception as exc:         # a lost worker surfaces as a comm, actor or cancelled error, by version
            raise SolverError(f"a Dask worker holding a partition of the fit failed or was lost during "
                              f"{name!r} ({type(exc).__name__}: {exc}); a distributed fit does not resume without "
                              f"the partition's working rows: fit again (the data are read again)") from exc

    def keep(self, index: Sequence[int]) -> "ActorParts":
        return ActorParts([self.actors[i] for i in index])


__all__ = ["LocalParts", "ActorParts"]
