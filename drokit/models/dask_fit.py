"""``DROClassifier.fit`` / ``DRORegressor.fit`` on Dask collections (issue 25).

The data stay in their partitions: each partition binds its rows once with the fit's schema, metric and labels
(:class:`~drokit.reformulations.partition_fit.PartitionFit`, a ``dask.distributed`` actor on the worker that read the
partition, or an object of this process under the local scheduler), and the fit
(:mod:`drokit.reformulations.distributed_fit`) ships ``theta = (beta_0, beta, lambda)`` to the partitions and brings
back sums: the default fit's phase 1 and barrier master, with the same Lagrangian certificate.  Only the warm start's
subsample (``N / 10`` rows, from :data:`~drokit.reformulations.warm_start.SUBSAMPLE_FROM` samples on, at most
:data:`MAX_SUBSAMPLE`) comes to this process.

Steps: the schema from the frame's metadata (categorical columns need known categories: ``ddf.categorize()``); the
classes from one pass over ``y``; the partitions bound and their weights summed (samples of weight 0 dropped, empty
partitions left out); probabilities ``p_n = w_n / W`` with ``W`` the total weight; the warm start; phase 1; the
barrier master when phase 1 did not certify.  What the distributed fit does not cover raises a
:class:`~drokit.exceptions.ParameterError` up front (another ambiguity set, penalties, adversarial losses, matrix
costs, fitted scales, multinomial models, ``method`` other than ``"auto"`` / ``"cutting_plane"``).  Where the
distributed stages do not certify, a fit of at most :data:`GATHER_MAX` samples is finished in memory (the in-memory
fit's later stages: level-max columns, kink search, conic masters); a larger one follows ``on_inaccurate`` as in memory.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Optional

import numpy as np

from ..ambiguity.wasserstein import Wasserstein
from ..dask_inputs import current_client, partition_triples
from ..exceptions import DataError, ParameterError, SolverError
from ..gaps import relative_gap
from ..losses.base import CLASSIFICATION
from ..params import component
from ..reformulations.distributed_fit import (GlobalView, distributed_barrier_master, distributed_constant_model,
                                              distributed_critical_radius, distributed_phase_one)
from ..reformulations.partition_fit import PartitionFit
from ..partitions import ActorParts, LocalParts
from ..reformulations.phase_one import phase_one_applies
from ..reformulations.structured_master import UNCONVERGED_MU_FACTOR
from ..reformulations.warm_start import SUBSAMPLE_FROM, SUBSAMPLE_RATIO, WARM_TAU, warm_phase_one
from ..oracles.registry import make_oracle
from ..schema import FeatureSchema
from .certification import CERTIFIED_GAP, mark_inaccurate
from .result import FitResult

#: the warm start's subsample is at most this many rows (it is gathered into this process)
MAX_SUBSAMPLE = 200_000
#: seed of the warm start's subsample: fits are deterministic for a given partitioning
SUBSAMPLE_SEED = 0
#: a distributed fit of at most this many samples that its distributed stages do not certify is finished in memory
#: (the partitions' bound rows joined in this process: about 0.3 kB a sample, 30 MB): the level-max columns, the kink
#: search and the conic masters that certify such fits in memory are not distributed
GATHER_MAX = 100_000


def bind_partition(problem, schema: FeatureSchema, classes, handle_unknown: str, X, y, sample_weight):
    """One partition's :class:`~drokit.instance.DROInstance` (its fitting view), bound with the fit's schema and
    classes."""
    inst = problem.bind(X, y, schema=schema, handle_unknown=handle_unknown, classes=classes,
                        sample_weight=sample_weight)
    return inst.fitting_view()


def _meta(X, categorical_features, categories):
    """An empty pandas / numpy object with ``X``'s columns and dtypes (Dask's metadata; a Dask array's has no columns:
    an empty block of its width).  Categorical columns of an array need their levels given (``categories=``): they are
    not in its metadata."""
    if hasattr(X, "chunks") and not hasattr(X, "columns"):
        if X.ndim != 2 or np.isnan(X.shape[1]):
            raise DataError(f"X must be a 2-dimensional Dask array of known width, got shape {X.shape}")
        if categorical_features is not None and (categories is None or categories == "auto"):
            raise ParameterError("a Dask array X with categorical_features needs categories=[levels of each] (they "
                                 "are not in the array's metadata), or pass a Dask DataFrame with categorical dtypes")
        return np.empty((0, int(X.shape[1])), dtype=X.dtype)
    meta = getattr(X, "_meta", None)
    if meta is None:
        raise DataError("X: a Dask collection without metadata")
    return meta


def _classes(y) -> np.ndarray:
    """The sorted distinct labels of a Dask ``y``: each partition's own, joined here (one pass, no shuffle)."""
    import dask
    blocks = list(np.ravel(y.to_delayed()))
    found = dask.compute(*[dask.delayed(lambda b: np.unique(np.asarray(b)))(b) for b in blocks])
    return np.unique(np.concatenate([np.asarray(f) for f in found])) if found else np.zeros(0)


def check_distributable(estimator, problem) -> None:
    """What the distributed fit covers (module docstring); a :class:`ParameterError` naming the rest."""
    name = type(estimator).__name__
    ambiguity = component(problem, "ambiguity")
    if not isinstance(ambiguity, Wasserstein) or ambiguity.center is not None:
        raise ParameterError(f"{name}.fit on Dask collections fits a Wasserstein ball around the training data; got "
                             f"{type(ambiguity).__name__}: fit on an in-memory sample (pandas / numpy)")
    metric = component(ambiguity, "metric")
    if getattr(component(metric, "numerical"), "scale", None) is not None:
        raise ParameterError(f"{name}.fit on Dask collections: a NormCost with scale=... is fitted on the data; pass "
                             f"fixed weights (e.g. 1 / the columns' standard deviations, one dask pass) instead")
    if problem.validated_penalty("l1_penalty") or problem.validated_penalty("l2_penalty"):
        raise ParameterError(f"{name}.fit on Dask collections: l1_penalty / l2_penalty are not distributed yet")
    if estimator.method not in ("auto", "cutting_plane"):
        raise ParameterError(f"{name}.fit on Dask collections runs the cutting plane's own solvers; method="
                             f"{estimator.method!r} needs the data in memory")


def _parts(binder, triples, client, folds=None):
    """The partitions as actors of ``client`` (their data computed and bound on the workers), else in this
    process.  ``folds``: one ``dask.delayed`` array of fold numbers per partition (cross-validation), or ``None``."""
    import dask
    folds = [None] * len(triples) if folds is None else list(folds)
    if client is None:
        return LocalParts([PartitionFit(binder, *dask.compute(x, y, w), folds=dask.compute(f)[0])
                           for (x, y, w), f in zip(triples, folds)])
    flat = client.compute([item for triple, f in zip(triples, folds) for item in (*triple, f) if item is not None])
    k = 0
    futures = []
    for (x, y, w), f in zip(triples, folds):
        fx, fy = flat[k], flat[k + 1]
        k += 2
        fw = ff = None
        if w is not None:
            fw = flat[k]
            k += 1
        if f is not None:
            ff = flat[k]
            k += 1
        futures.append(client.submit(PartitionFit, binder, fx, fy, fw, ff, actor=True, pure=False))
    try:
        return ActorParts([f.result() for f in futures])
    except (DataError, ParameterError):          # the partition's data (binding), as in memory
        raise
    except Exception as exc:                     # a worker lost while binding, or an error of its own
        raise SolverError(f"binding the partitions on the Dask workers failed ({type(exc).__name__}: {exc})") from exc


def _joined(pieces) -> "DROInstance":
    """Partitions' instances (or samples of them) joined into one, the probabilities renormalized to sum to 1."""
    first = pieces[0]
    data = dataclasses.replace(first.data, X=np.vstack([p.data.X for p in pieces]),
                               Z=np.vstack([p.data.Z for p in pieces]))
    p = np.concatenate([p.p for p in pieces])
    return dataclasses.replace(first, data=data, y=np.concatenate([np.asarray(q.y) for q in pieces]),
                               sample_weight=p / p.sum())


def _subsample(parts, n_samples: int):
    """The warm start's subsample (about ``N / SUBSAMPLE_RATIO`` rows, at most :data:`MAX_SUBSAMPLE`) joined into one
    instance; also the template instance of the fit (schema, metric, loss)."""
    size = min(max(n_samples // SUBSAMPLE_RATIO, 1), MAX_SUBSAMPLE)
    return _joined(parts.call("sample_rows", size / n_samples, SUBSAMPLE_SEED))


def _finished_in_memory(parts, estimator, outcome, template, deadline: float, log) -> FitResult:
    """An uncertified distributed fit of at most :data:`GATHER_MAX` samples finished as in memory: the partitions'
    instances joined here and solved by the method ``auto`` picks, the cutting plane started from the distributed
    fit's best point (its later stages, the level-max columns and the conic masters, are not distributed)."""
    from ..methods import compile_instance
    from .compiled import CompiledProblem
    inst = _joined(parts.call("bound_instance"))
    compiled = CompiledProblem(inst, compile_instance(inst, estimator.method, int(estimator.max_configurations)), 0.0)
    options = dict(estimator.method_options or {})
    if compiled.method == "cutting_plane" and "start" not in options:
        offset = [outcome.intercept] if template.fit_intercept else []
        options["start"] = np.r_[offset, outcome.coef, outcome.lam]
    if log is not None:
        log(f"distributed fit not certified ({outcome.reason}); its {inst.n_samples:,} samples are finished in memory")
    left = None if not np.isfinite(deadline) else max(deadline - time.perf_counter(), 1e-3)
    result = compiled.solve(solver=estimator.solver, solver_options=estimator.solver_options,
                            on_inaccurate=estimator.on_inaccurate, verbose=estimator.verbose,
                            method_options=options or None, time_limit=left)
    result.auxiliary.update({"n_samples": inst.n_samples, "partitions": len(parts), "stage": "in memory",
                             "distributed": {"reason": outcome.reason, "upper_bound": outcome.upper_bound,
                                             "lower_bound": outcome.lower_bound}})
    result.method_reason = (f"{result.method_reason}; finished in memory after the distributed stages "
                            f"({outcome.reason})")
    return result


def fit_dask(estimator, X, y, sample_weight=None, client=None) -> FitResult:
    """The certified fit of ``estimator`` on Dask collections (module docstring); returns its :class:`FitResult`."""
    t0 = time.perf_counter()
    estimator._validate_params()
    problem = estimator._problem()
    check_distributable(estimator, problem)
    parts, schema, classes = bound_parts(estimator, problem, X, y, sample_weight, client)
    try:
        return fit_bound_parts(estimator, parts, schema, classes, t0)
    finally:
        close_parts(parts)


def bound_parts(estimator, problem, X, y, sample_weight=None, client=None, folds=None):
    """``(parts, schema, classes)``: the partitions of ``X, y, sample_weight`` bound with ``problem`` (on the workers of
    ``client``, else of the current client, else in this process), the schema from ``X``'s metadata, the classes from
    one pass over ``y`` (classification: exactly two).  ``folds``: one ``dask.delayed`` array of fold numbers per
    partition, for :meth:`PartitionFit.select` (:mod:`drokit.model_selection.dask_cv`)."""
    triples = partition_triples(X, y, sample_weight)
    schema = FeatureSchema.infer(_meta(X, estimator.categorical_features, estimator.categories),
                                 estimator.categorical_features, estimator.categories)
    classes = None
    if problem.resolved_task() == CLASSIFICATION:
        classes = _classes(y)
        if classes.size != 2:
            raise DataError(f"y has {classes.size} class(es) {list(classes)[:5]}; a fit on Dask collections needs "
                            f"two (one class has no decision boundary; the multinomial model is in-memory only)")
    binder = functools.partial(bind_partition, problem, schema, classes, estimator.handle_unknown)
    return _parts(binder, triples, current_client(client), folds), schema, classes


def close_parts(parts) -> None:
    """The partitions' memory freed (the fits are over): each actor collects on its worker; partitions held in this
    process are collected once, not once each."""
    local = isinstance(parts, LocalParts)
    try:
        parts.call("close", collect=not local)
    except Exception:          # a lost worker: its memory is gone with it
        pass
    if local:
        import gc
        gc.collect()


def fit_bound_parts(estimator, parts, schema, classes, t0: float):
    """:func:`fit_dask` once the partitions are bound (and :meth:`PartitionFit.select`-ed); the result's ``auxiliary["partition_memory"]``: the partitions'
    cold state at the end (bytes, bytes a sample) and how often their derived objects were released (rebuilt at the
    next call: :mod:`drokit.partition_memory`)."""
    result, schema, classes = _fit_partitions(estimator, parts, schema, classes, t0)
    try:
        reports = [r for r in parts.call("memory_report") if r is not None]
    except Exception:          # a lost worker after the fit: the fit stands, the report is left out
        reports = []
    if reports:
        samples, cold = sum(r[0] for r in reports), sum(r[1] for r in reports)
        result.auxiliary["partition_memory"] = {"cold_bytes": int(cold),
                                                "cold_bytes_per_sample": cold / max(samples, 1),
                                                "releases": int(sum(r[2] for r in reports))}
    return result, schema, classes


def _globalized(parts):
    """``(parts of positive weight, their samples)``, probabilities ``p_n = w_n / W`` over those partitions."""
    summaries = parts.call("summary")
    used = [i for i, (rows, weight, _) in enumerate(summaries) if rows > 0 and weight > 0]
    total = float(sum(summaries[i][1] for i in used))
    if not used or not total > 0:
        raise DataError("X has no rows of positive weight")
    parts = parts.keep(used)
    return parts, int(sum(parts.call("globalize", total)))


def critical_radius_of_parts(parts) -> float:
    """The critical radius of the partitions' selected samples (:meth:`PartitionFit.select`; beyond it every fit is the
    constant model: :func:`~drokit.reformulations.distributed_fit.distributed_critical_radius`), ``inf`` where that
    construction does not apply."""
    used, n_samples = _globalized(parts)
    template = _joined(used.call("sample_rows", 1.0 / n_samples, SUBSAMPLE_SEED))
    return distributed_critical_radius(used, template)


def _fit_partitions(estimator, parts, schema, classes, t0: float):
    parts, n_samples = _globalized(parts)
    template = _subsample(parts, n_samples)
    if not phase_one_applies(template) or template.metric.linear_map is not None:
        raise ParameterError(f"{type(estimator).__name__}.fit on Dask collections: the loss {template.loss.name!r} "
                             f"with this metric is fitted by the conic masters (an adversarial loss, a loss without a "
                             f"finite Lipschitz constant, a norm other than l_p or a matrix cost): in-memory only")
    log = print if estimator.verbose else None
    compile_time = time.perf_counter() - t0
    t1 = time.perf_counter()
    view = GlobalView(template.radius, n_samples)
    gap_tol = CERTIFIED_GAP
    constant = distributed_constant_model(parts, template, view, gap_tol, log)      # beyond the critical radius
    if constant is not None:
        return (_result(template, constant, n_samples, len(parts), compile_time, time.perf_counter() - t1), schema,
                classes)
    start, tau0 = None, 1e-1
    if n_samples >= SUBSAMPLE_FROM:
        warm = warm_phase_one(template, make_oracle(template, "auto"), tau_min=WARM_TAU, log=log)
        if np.isfinite(warm.upper_bound):
            offset = 1 if template.fit_intercept else 0
            start, tau0 = np.r_[[warm.intercept] if offset else [], warm.coef, warm.lam], WARM_TAU
    deadline = t0 + float(estimator.time_limit) if estimator.time_limit is not None else np.inf
    first = distributed_phase_one(parts, template, view, start=start, tau0=tau0, certify_tol=gap_tol, log=log,
                                  deadline=deadline)
    outcome = first
    if not first.certified and time.perf_counter() <= deadline:
        converged = not first.reason
        mu = first.tau / n_samples * (1.0 if converged else UNCONVERGED_MU_FACTOR)
        outcome = distributed_barrier_master(parts, template, view, first, mu=mu, tol=gap_tol, from_bundle=converged,
                                             log=log, deadline=deadline)
        if first.upper_bound < outcome.upper_bound:          # keep the better point (both are exact values)
            outcome = dataclasses.replace(outcome, intercept=first.intercept, coef=first.coef, lam=first.lam,
                                          upper_bound=first.upper_bound)
        if first.lower_bound > outcome.lower_bound:
            outcome = dataclasses.replace(outcome, lower_bound=first.lower_bound)
        outcome = dataclasses.replace(
            outcome, certified=outcome.upper_bound - outcome.lower_bound <= gap_tol * max(abs(outcome.upper_bound), 1e-2),
            newton_steps=first.newton_steps + outcome.newton_steps, oracle_calls=first.oracle_calls + outcome.oracle_calls)
    if not outcome.certified and n_samples <= GATHER_MAX and outcome.reason != "time limit reached":
        return _finished_in_memory(parts, estimator, outcome, template, deadline, log), schema, classes
    result = _result(template, outcome, n_samples, len(parts), compile_time, time.perf_counter() - t1)
    if not outcome.certified and outcome.reason == "time limit reached":
        result.stop_reason = f"time limit of {estimator.time_limit:g} s reached"
    if not outcome.certified:
        mark_inaccurate(result, f"the distributed fit was not certified ({outcome.reason}): the optimum is in "
                                f"[{outcome.lower_bound:.9g}, {outcome.upper_bound:.9g}]", estimator.on_inaccurate)
    return result, schema, classes


def _result(template, outcome, n_samples: int, n_parts: int, compile_time: float, solve_time: float) -> FitResult:
    solver = {"phase 1": "phase_one", "constant model": "constant_model"}.get(outcome.stage, "barrier_master")
    return FitResult(
        objective=float(outcome.upper_bound), status="optimal", method="cutting_plane",
        method_reason=f"distributed over {n_parts} partitions: phase 1 and the barrier master by partition sums "
                      f"(issue 25)",
        solver=solver, raw_status="certified" if outcome.certified else "not_certified",
        lower_bound=float(outcome.lower_bound), upper_bound=float(outcome.upper_bound),
        intercept=float(outcome.intercept), coef=np.asarray(outcome.coef, dtype=float), lambda_=float(outcome.lam),
        s=np.zeros(0), compile_time=compile_time, solve_time=solve_time, evaluation_time=0.0,
        iterations=int(outcome.newton_steps), n_variables=template.schema.n_encoded + 2, n_constraints=0,
        cones={}, n_configuration_rows=int(outcome.working_rows), n_enumeration_rows=0,
        history=list(outcome.history),
        auxiliary={"n_samples": n_samples, "partitions": n_parts, "oracle_calls": outcome.oracle_calls,
                   "stage": outcome.stage, "relative_gap": relative_gap(outcome.lower_bound, outcome.upper_bound)})


__all__ = ["fit_dask", "bound_parts", "fit_bound_parts", "close_parts", "critical_radius_of_parts", "bind_partition", "check_distributable",
           "MAX_SUBSAMPLE"]
