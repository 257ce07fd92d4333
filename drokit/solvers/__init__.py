"""Conic back-ends: ``clarabel`` (default, always installed), ``mosek`` (only with a licence),
``scs`` and ``ecos`` (optional); and ``barrier`` (:mod:`.barrier`), a structured solver of the
closed-form logistic model that ``solver="auto"`` picks for it.  Adding a back-end = one module with a
:class:`SolverBackend` subclass plus one line in ``_BACKENDS``."""

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
#: ``solver="auto"`` (the estimators' default): the structured barrier solver for the fits it handles,
#: Clarabel otherwise (:meth:`drokit.models.compiled.CompiledProblem.solve`)
AUTO = "auto"
#: solvers that work on a problem's structure instead of its conic program (:mod:`.barrier`: the
#: closed-form logistic model)
STRUCTURED_SOLVERS = ("barrier",)


def solver_names() -> List[str]:
    """The conic back-ends."""
    return list(_BACKENDS)


def solver_choices() -> List[str]:
    """Every accepted ``solver`` value: ``"auto"``, the conic back-ends and the structured solvers."""
    return [AUTO] + solver_names() + list(STRUCTURED_SOLVERS)


def get_backend(name: Optional[str] = None) -> SolverBackend:
    """The conic back-end called ``name`` (case-insensitive); ``None`` and ``"auto"`` give the default
    (Clarabel)."""
    key = (name or DEFAULT_SOLVER).lower()
    if key == AUTO:
        key = DEFAULT_SOLVER
    if key in STRUCTURED_SOLVERS:
        raise ParameterError(f"solver {name!r} is not a conic back-end: it fits the closed-form logistic "
                             f"model only (Problem(...).compile(...).solve(solver={name!r}) or an estimator); "
                             f"choose one of {list(_BACKENDS)} here")
    if key not in _BACKENDS:
        raise ParameterError(f"unknown solver {name!r}; choose one of {solver_choices()}")
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
           "solver_names", "solver_choices", "DEFAULT_SOLVER", "AUTO", "STRUCTURED_SOLVERS"]
