"""Exceptions raised by drokit.

Input problems raise :class:`DataError` / :class:`ParameterError` (both ``ValueError`` subclasses, as
scikit-learn expects); solver trouble raises :class:`SolverError`, which carries the solver's status so
that a non-optimal answer is never mistaken for a solution.
"""

from __future__ import annotations


class DrokitError(Exception):
    """Base class of drokit's own errors."""


class ParameterError(DrokitError, ValueError):
    """A model argument (radius, weights, loss name, method, ...) is invalid."""


class DataError(DrokitError, ValueError):
    """The data (X, y) cannot be used: NaN, shapes, classes, unseen categories, ..."""


class ProblemTooLargeError(DrokitError, ValueError):
    """The requested compile path would build a program larger than the configured limit."""


class SolverError(DrokitError, RuntimeError):
    """A back-end failed or returned a status that is not an optimal solution.

    Attributes
    ----------
    status : str
        drokit's status name (e.g. ``"optimal_inaccurate"``, ``"infeasible"``, ``"solver_error"``).
    raw_status : str
        The back-end's own status string.
    solver : str
        The back-end name.
    solution : drokit.solvers.base.SolverSolution or None
        The :class:`~drokit.solvers.base.SolverSolution` when one exists (may be ``None``).
    result : drokit.FitResult or None
        The :class:`~drokit.FitResult` of the best model found and its certified bounds, when the fit
        got that far (a cutting plane stopped by its ``time_limit`` or its round limit); else ``None``.
    """

    def __init__(self, message: str, *, status: str = "solver_error", raw_status: str = "",
                 solver: str = "", solution=None, result=None):
        super().__init__(message)
        self.status = status
        self.raw_status = raw_status
        self.solver = solver
        self.solution = solution
        self.result = result


class FitInterrupted(KeyboardInterrupt):
    """A fit stopped by Ctrl-C (``SIGINT``): still a ``KeyboardInterrupt``, so scripts and loops stop as usual,
    with the best model found so far and its certified bounds in :attr:`result` (a :class:`~drokit.FitResult`,
    ``status="optimal_inaccurate"``, ``stop_reason="interrupted"``; ``None`` when no model was found).  An
    estimator interrupted in ``fit`` keeps that model (``result_``, ``coef_``, ...), so that the work done is
    not lost in a notebook."""

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


class PartitionLostError(SolverError):
    """A Dask worker holding a partition of a distributed fit was lost, closed or stayed paused: the fit cannot go on
    without the partition's working rows (:mod:`drokit.partitions`); a cross-validation on Dask stops at once instead
    of recording every later fit as failed."""


class SolverNotAvailableError(SolverError):
    """The back-end is not installed or not licensed."""
