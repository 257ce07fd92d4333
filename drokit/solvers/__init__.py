"""Conic back-ends: ``clarabel`` (default, always installed), ``mosek`` (only with a licence),
``scs`` and ``ecos`` (optional).  Adding a back-end = one module with a :class:`SolverBackend`
subclass plus one line in ``_BACKENDS``."""

from __future__ import annotations

import importlib
from typing import Dict, List, Optional

from ..exceptions import ParameterError
from .base import STATUSES, SolverBackend, SolverSolution

# name -> (module, class); modules are imported lazily so optional solvers cost nothing.
_BACKENDS: Dict[str, tuple] = {
    "clarabel": ("drokit.solvers.clarabel", "ClarabelBackend"),
    "mosek": ("drokit.solvers.mosek", "MosekBackend"),
    "scs": ("drokit.solvers.scs", "SCSBackend"),
    "ecos": ("drokit.solvers.ecos", "ECOSBackend"),
}
DEFAULT_SOLVER = "clarabel"


def solver_names() -> List[str]:
    return list(_BACKENDS)


def get_backend(name: Optional[str] = None) -> SolverBackend:
    """The back-end called ``name`` (case-insensitive); ``None`` gives the default (Clarabel)."""
    key = (name or DEFAULT_SOLVER).lower()
    if key not in _BACKENDS:
        raise ParameterError(f"unknown solver {name!r}; choose one of {solver_names()}")
    module, cls = _BACKENDS[key]
    return getattr(importlib.import_module(module), cls)()


def available_solvers() -> List[str]:
    """Back-ends that are installed and (for MOSEK) licensed on this machine."""
    out = []
    for key in _BACKENDS:
        try:
            if get_backend(key).available():
                out.append(key)
        except ImportError:
            continue
    return out


__all__ = ["SolverBackend", "SolverSolution", "STATUSES", "get_backend", "available_solvers",
           "solver_names", "DEFAULT_SOLVER"]
