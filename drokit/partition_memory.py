"""What a worker keeps of a distributed fit's partitions between calls (issue 25): cold state always, derived objects
within a budget.

A distributed fit (:mod:`drokit.reformulations.distributed_fit`) holds every partition of a worker at once
(:class:`drokit.reformulations.partition_fit.PartitionFit`), and between two calls a partition needs only its *cold*
state: the bound samples (numerical columns, categorical codes in the smallest integer type), its working rows in a
compact form, and per-sample numbers (maxima, epigraph levels).  Everything else is *derived*, rebuilt from the cold
state in one pass: the codes widened to ``int64``, the separation oracle's tables, the masters' term designs and
per-term arrays, the certificate's row design.  Measured at 1,000,000 rows (synthetic 10 + 10, 8 partitions) the
derived objects were 70-80 % of a worker's peak (about 1.4 kB a row against 0.3 kB cold).

:class:`DerivedStore` keeps the derived objects of as many partitions of this process as fit in a byte budget
(:func:`derived_budget`), and releases the others' (they are rebuilt at their next call): a worker's memory is then
about ``cold bytes x rows + budget + one partition's derived objects and temporaries``: the derived part bounded by
the partition size and the budget rather than by all the rows a worker holds.  The fit calls every partition in
turn, so the store evicts
the *most* recently used other partition (a cyclic access defeats least-recently-used eviction: each partition would
be evicted just before its turn): with room for ``k`` of ``n`` partitions, ``k - 1`` keep theirs across rounds.
Releasing changes no result beyond the order of floating-point sums inside a rebuilt Gram cache.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Optional

import numpy as np

#: the ``dask.config`` key of the derived-object budget: bytes (an int) or a string such as ``"300MB"``; unset, a
#: worker with a memory limit fills it to :data:`TARGET_FRACTION`, and a process without one keeps everything
CONFIG_KEY = "drokit.partition-derived-memory"
#: on a worker with a memory limit, the derived objects may fill the process up to this share of the limit: the budget
#: is ``TARGET_FRACTION * limit - (resident memory - derived bytes held)``, what the cold state, the process and the
#: user's data leave (below ``distributed.worker.memory.spill``, 0.7, and ``pause``, 0.8, by default: a paused worker
#: stops the fit)
TARGET_FRACTION = 0.6


def derived_budget() -> Optional[int]:
    """The byte budget of this process's partitions' derived objects (module docstring), ``None`` for no limit."""
    try:
        import dask
        value = dask.config.get(CONFIG_KEY, default=None)
    except ImportError:                                  # pragma: no cover - dask is needed to have partitions
        value = None
    if value is not None:
        if isinstance(value, str):
            from dask.utils import parse_bytes
            value = parse_bytes(value)
        return max(int(value), 0)
    try:
        from distributed import get_worker
        limit = get_worker().memory_manager.memory_limit
    except Exception:                                   # not on a worker (the local scheduler, tests)
        return None
    if not limit:
        return None
    import psutil
    others = psutil.Process().memory_info().rss - DERIVED.held()
    return max(int(TARGET_FRACTION * limit - others), 0)


def footprint(obj, seen: Optional[set] = None, depth: int = 0) -> int:
    """Bytes of the numpy buffers reachable from ``obj`` through attributes, dicts, lists, tuples and scipy sparse
    matrices, each buffer counted once (``seen``: ids already counted, shared across calls to leave out what another
    object holds)."""
    seen = set() if seen is None else seen
    if obj is None or depth > 8 or id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base is not obj:
            if id(base) in seen:
                return 0
            seen.add(id(base))
        return int(base.nbytes)
    if isinstance(obj, dict):
        return sum(footprint(v, seen, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(footprint(v, seen, depth + 1) for v in obj)
    if isinstance(obj, (str, bytes, int, float, bool, type)) or callable(obj) and not hasattr(obj, "__dict__"):
        return 0
    fields = getattr(obj, "__dict__", None)
    if fields is None:
        slots = getattr(type(obj), "__slots__", ())
        return sum(footprint(getattr(obj, s, None), seen, depth + 1) for s in slots)
    return sum(footprint(v, seen, depth + 1) for v in fields.values())


class DerivedStore:
    """The derived objects' budget of this process (module docstring).  An owner (a partition) calls
    :meth:`charge` after building derived objects, with their size; the store then asks other owners to
    ``release_derived()`` until the total is within the budget (the caller's own are never released by its charge)."""

    def __init__(self):
        self._owners: "OrderedDict[int, tuple]" = OrderedDict()     # id -> (weakref, bytes), least recent first
        self._lock = threading.Lock()

    def charge(self, owner, nbytes: int) -> None:
        """``owner`` holds ``nbytes`` of derived objects and was just used."""
        with self._lock:
            self._owners.pop(id(owner), None)
            self._owners[id(owner)] = (weakref.ref(owner), int(nbytes))
        budget = derived_budget()
        if budget is None:
            return
        with self._lock:
            total = sum(b for _, b in self._owners.values())
            for key in reversed(list(self._owners)):          # the most recently used others first
                if total <= budget:
                    break
                if key == id(owner):
                    continue
                ref, held = self._owners.pop(key)
                other = ref()
                if other is not None:
                    other.release_derived()
                total -= held

    def forget(self, owner) -> None:
        """``owner`` holds nothing derived any more."""
        with self._lock:
            self._owners.pop(id(owner), None)

    def held(self) -> int:
        """Bytes of derived objects held by this process's partitions."""
        with self._lock:
            return sum(b for _, b in self._owners.values())


#: the store of this process (a worker's partitions share it)
DERIVED = DerivedStore()


def smallest_code_type(largest: int) -> np.dtype:
    """The smallest signed integer type holding the codes ``0..largest`` (the compact form of categorical codes)."""
    for dtype in (np.int8, np.int16, np.int32):
        if largest <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


__all__ = ["DerivedStore", "DERIVED", "derived_budget", "footprint", "smallest_code_type", "CONFIG_KEY",
           "TARGET_FRACTION"]
