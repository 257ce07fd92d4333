"""drokit against the libraries a user would pick instead (issue 8, item 3): ``dro`` and ``skwdro``.

Run:  python benchmarks/vs_libraries.py [--quick] [--part a|b|all] [--timeout 300]
      python benchmarks/vs_libraries.py --part a --peers dro --repeat 3 --isolate-drokit --timeout 900
      (the peers: ``pip install -e ".[bench]"``, i.e. ``dro`` and ``skwdro``; prints markdown tables.
      ``--quick``: N = 1,000, d = 10 with dro and the matched skwdro, credit-approval at one radius, under a
      minute.  The second line: drokit against dro only, median of 3 fits, drokit also in a child process.)

What each library solves (read from the installed sources: dro 0.4.3, skwdro 1.1.1)
====================================================================================

drokit (``dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(metric, radius=eps))``)
    ``min_beta sup_{Q: W_c(Q, P_N) <= eps} E_Q[log(1 + exp(-y (beta_0 + beta^T x)))]`` with the additive
    ground cost ``c = ||Gamma (x - x')||_p + D(z, z') + kappa 1[y != y']`` (numerical norm, categorical
    mismatch cost, label cost).  Intercept free, no other regularization.  All-numerical data with
    ``kappa = inf``: ``method="closed_form"``, i.e. ``mean L(y f) + eps ||Gamma^-1 beta_x||_*`` as a conic
    program; mixed data: the exact cutting plane (DP oracle) or the other exact methods.  Clarabel.

dro (``dro.linear_model.wasserstein_dro.WassersteinDRO(input_dim, model_type="logistic",
fit_intercept=True, solver="CLARABEL")``, ``update({"eps": eps, "p": p, "kappa": kappa})``)
    Cost ``||Sigma^{1/2} (x - x')||_p + kappa 1[y != y']`` (``cost_matrix`` Sigma = I by default;
    classification: a flip costs kappa, not ``2 kappa``).  ``fit`` builds in cvxpy
    ``min mean(s) + eps lam  s.t.  lam >= ||Sigma^{-1/2} theta||_q,  s >= logistic(-y (X theta + b)),
    [s >= logistic(y (X theta + b)) - lam kappa  if kappa finite]`` (Shafieezadeh-Abadeh et al. 2019):
    the same W1 problem as drokit's closed form; the intercept is free and unpenalized.  The solver is an
    argument (default ``"CLARABEL"``, which we pass explicitly; the script records the solver cvxpy reports).
    Labels must be +-1.  On mixed data dro sees only numbers: categorical features enter as one-hot columns
    that the adversary may move continuously.
    Mapping: drokit ``NormCost(p)``, ``LabelCost(kappa)`` with the same ``eps`` (``Sigma = diag(gamma^2)``
    for ``p = 1`` would give drokit's weights; we rescale the columns instead, see part b).

skwdro (``skwdro.linear_models.LogisticRegression(rho, cost, solver, learning_rate, ...)``)
    ``solver="entropic_torch"`` (default): the entropic (Sinkhorn) relaxation of the WDRO dual,
    ``min_{theta, lam >= 0} lam rho^k + eps_s E_xi log E_{zeta ~ pi_0(xi)} exp((L(zeta) - lam c(xi, zeta)) /
    eps_s)``, with ``zeta`` sampled around each ``xi`` (Gaussian for the l2 norm, Laplace for l1, scale
    ``sigma = rho / 2``; ``eps_s = 1e-2 sigma_factor^k rho^(k-1)``: 5e-3 for k = 1), 10 samples per point,
    3,000 full-batch steps (200 + 2,800) of Prodigy (adaptive step) or, when ``learning_rate`` is given,
    AdamW; a stochastic approximation, so its model is not the exact minimizer.  ``rho`` is the Wasserstein
    radius (the dual's first term is ``lam rho^k``, k the cost's power).  The cost string is parsed as
    ``"t-<id>-<power>-<norm>[-kappa]"`` (``cost_decoder.py``: the 3rd field is the POWER, the 4th the
    norm, although the class docstring says the opposite):
      * ``"t-NC-1-2"``: ``||x - x'||_2`` (power 1), labels fixed (Dirac label sampler): exactly the W1 ball of
        drokit ``NormCost(p=2)``, ``LabelCost(kappa=inf)`` and of dro ``p=2, kappa="inf"``.  With the
        default optimizer (Prodigy) it diverges ("value cannot be converted to type float without
        overflow", probed below), so this script passes ``learning_rate=1e-2`` (AdamW).
      * ``"t-NC-1-1"``: ``||x - x'||_1``, labels fixed: drokit ``NormCost(p=1)`` on the encoded columns (part b).
      * the default ``"t-NLC-2-2"`` (kappa 1e8): ``((||x - x'||_2 + kappa |y - y'|) / (1 + kappa))^2`` with
        a W2 radius ``rho`` (dual term ``lam rho^2``) and Gaussian-sampled continuous labels.  The division
        by ``1 + kappa`` makes moving x nearly free (1e-16 per unit^2), so this is not the W1 (or W2) ball
        of the same radius; we run it as "skwdro default" to show what a user gets, and evaluate its model
        in the common W1 ball like every other model.
    ``solver="dedicated"``: an exact cvxpy model (one Python-level constraint pair per sample, cvxpy's
    default solver; the script records which) of the W1 problem with ``||.||_2`` and a hard-coded label
    cost ``kappa = 1000``; ``rho`` and ``cost`` are the only knobs.  A flip costs 1000 here, so the ball is
    (slightly) larger than the kappa = inf ball; it is evaluated in the kappa = inf ball below.
    Labels: any two labels (LabelEncoder, mapped to -1/+1).  Intercept: ``nn.Linear`` bias, unpenalized;
    ``l2_reg=0``.

Part a: all-numerical synthetic data, where the three models coincide (W1 ball, ``||.||_2``, labels fixed)
    ``x ~ N(0, I_d)``, ``P(y = 1 | x) = sigmoid(2 x^T u + 0.3)`` with a random unit vector ``u`` (fixed seed),
    N in {1k, 10k, 100k} x d in {10, 50} (nested samples), a held-out test set of 20,000 rows, radius
    ``eps = 0.05``.  Fit time only (the peers run in a child process, timed inside it).  Every model is
    evaluated by ONE evaluator, ``dk.worst_case`` on the training data in drokit's W1 ball (for a linear
    model on numerical data it is exactly ``mean loss + eps ||beta||_2``); "gap" is that value minus
    drokit's certified lower bound on the optimum (``result_.lower_bound``).

Part b: real mixed data (credit-approval, german-credit), where only drokit prices categorical changes
    exactly.  70/30 stratified split (seed 0).  drokit: ``dk.GroundMetric.calibrated(X_train,
    rho_numerical=0.8, rho_categorical=0.8)`` (sun2025: ``NormCost(p=1, gamma_j)`` + mismatch costs
    ``delta_l``).  The peers get the SAME weights on one-hot columns: centered numerical columns times
    ``gamma_j / s`` and one-hot columns times ``delta_l / (2 s)`` (so in ``||.||_1`` a single level change
    costs ``delta_l / s``), radius ``eps / s``, with ``s = median_j gamma_j std_j`` (about 10; it makes the
    numerical columns unit-variance and leaves the ball unchanged); dro with ``p=1, kappa="inf"``, skwdro
    with ``"t-NC-1-1"``.  What differs is only the relaxation: the one-hot columns may move continuously
    and without bound.  Radius: the same grid (theta in {0.999, 0.99, 0.96, 0.9, 0.8, 0.65, 0.5, 0.35},
    eps = -log theta, 0.001 .. 1.05) for every library, chosen by 3-fold stratified CV on the training set
    (mean validation log-loss), then refit on the whole training set; a second table shows every library
    at every radius of the grid (fitted on the whole training set), so the comparison at equal radii is
    there too.  Scores on the clean test set and averaged over
    shifted copies from ``dk.simulate_shift(X_test, metric, ...)`` (the calibrated shift model: the
    "expected" scenario and the "unexpected" ``rho_offset -0.2``), plus each model's exact worst-case
    log-loss in drokit's mixed ball around the test set (radius ``-log 0.9``, ``dk.worst_case``; peers'
    one-hot models are rewritten exactly in drokit's reference-level encoding).  Baseline: unpenalized
    logistic regression (sklearn, C = 1e6) on the same columns.

Limits: OMP/MKL/OpenBLAS and torch are limited to 1 thread (the machine has 2 shared cores; Clarabel is
single-threaded), for every library.  Each peer fit runs in a spawned child process (timed inside it, after
its imports), stopped after ``--timeout`` seconds (part b: a library's whole CV + grid job on one data set
gets 3x) or when its resident memory passes ``MEMORY_LIMIT_GB`` (8 GB; the child's address space is also
capped at twice that); a configuration whose time projected linearly from the previous N exceeds twice the
limit, or that failed at a smaller N, is reported as not run.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import multiprocessing as mp
import platform
import queue
import sys
import time
import traceback
import warnings

import numpy as np

SEED = 0
EPS_A = 0.05
N_TEST_A = 20_000
THETAS_B = (0.999, 0.99, 0.96, 0.9, 0.8, 0.65, 0.5, 0.35)
RHO_B = 0.8
THETA_EVAL_B = 0.9
SKWDRO_LR = 1e-2
#: shifted copies of each validation fold for the shift criterion (``dk.DROClassifierCV``'s ``n_shift_sets`` default)
CV_SHIFT_SETS = 20
#: a peer child using more resident memory than this is stopped ("memory limit"): skwdro's dedicated cvxpy
#: model grew to 23 GB at N = 10,000 and was OOM-killed before this guard existed (a shared machine)
MEMORY_LIMIT_GB = 8.0


# ============================================================================ peer fits (child process)
def _patch_cvxpy(record):
    """Record the solver cvxpy actually used, its solve time and iterations (dro and skwdro's dedicated
    solver do not expose them): appends ``(name, solve_time, num_iters)`` per solve."""
    import cvxpy as cp
    original = cp.Problem.solve

    def solve(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        try:
            st = self.solver_stats
            record.append((st.solver_name, st.solve_time, st.num_iters))
        except Exception:  # pragma: no cover
            record.append(("?", np.nan, None))
        return out

    cp.Problem.solve = solve


def _solver_info(solves):
    if not solves:
        return dict(solver="", solve_time=np.nan, iterations=None)
    name, t, it = solves[-1]
    return dict(solver=name, solve_time=t, iterations=it)


def fit_dro(X, y, eps, p, kappa, repeat=1):
    """dro's WassersteinDRO (logistic, intercept, Clarabel); y in {-1, +1}.  ``repeat``: median fit time."""
    from dro.linear_model.wasserstein_dro import WassersteinDRO
    solves, times = [], []
    _patch_cvxpy(solves)
    for _ in range(repeat):
        model = WassersteinDRO(input_dim=X.shape[1], model_type="logistic", fit_intercept=True,
                               solver="CLARABEL")
        model.update({"eps": float(eps), "p": p, "kappa": kappa})
        t0 = time.perf_counter()
        model.fit(X, y)
        times.append(time.perf_counter() - t0)
    return dict(coef=np.asarray(model.theta, float).ravel(), intercept=float(model.b),
                time=float(np.median(times)), reported=float(model.robust_obj), **_solver_info(solves))


def fit_drokit(X, y, eps, repeat=1, solver="auto", kappa=np.inf):
    """drokit's closed form (in a child process with ``--isolate-drokit``: the same conditions as the
    peers); ``solver="auto"`` fits it with the structured barrier solver, ``"clarabel"`` with the conic
    program."""
    import drokit as dk
    W = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(kappa=kappa)),
                       radius=eps)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        clf = dk.DROClassifier(loss="logistic", ambiguity=W, solver=solver).fit(X, y)
        times.append(time.perf_counter() - t0)
    r = clf.result_
    return dict(coef=clf.coef_.ravel(), intercept=float(clf.intercept_[0]), time=float(np.median(times)),
                reported=r.objective, solver=r.solver, solve_time=r.solve_time, iterations=r.iterations,
                method=r.method, lower_bound=r.lower_bound, upper_bound=r.upper_bound,
                compile_time=r.compile_time, evaluation_time=r.evaluation_time)


#: drokit's two ways of fitting part a's closed form: the default (the barrier solver) and the conic program
DROKIT_SOLVERS = ("auto", "clarabel")


def fit_skwdro(X, y, eps, **kwargs):
    """skwdro's LogisticRegression; y in {-1, +1}."""
    import torch
    torch.set_num_threads(1)
    from skwdro.linear_models import LogisticRegression as SkLR
    solves = []
    _patch_cvxpy(solves)
    model = SkLR(rho=float(eps), **kwargs)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    t = time.perf_counter() - t0
    reported = getattr(model, "robust_loss_", getattr(model, "result_", np.nan))
    intercept = 0.0 if model.intercept_ is None else float(np.ravel(model.intercept_)[0])
    return dict(coef=np.asarray(model.coef_, float).ravel(), intercept=intercept, time=t,
                reported=float(np.ravel(reported)[0]) if reported is not None else np.nan,
                lam=float(np.ravel(model.dual_var_)[0]), **_solver_info(solves))


def cv_peer(fit_name, fit_kwargs, X, y, folds, radii, shifted_folds=None):
    """Radius by K-fold CV (mean validation log-loss), then a refit on all rows (part b).  ``shifted_folds`` (one
    ``(F, y)`` per fold: the fold's validation rows under ``CV_SHIFT_SETS`` shifted copies, the peer's columns) also
    scores every fold's fits by their mean log-loss on those copies -- the shift criterion of ``dk.DROClassifierCV``
    on the same fits -- and returns that choice as ``best_shift``."""
    fit = globals()[fit_name]
    losses = np.zeros(len(radii))
    shift_losses = np.zeros(len(radii))
    t0 = time.perf_counter()
    for i, (tr, va) in enumerate(folds):
        for k, r in enumerate(radii):
            out = fit(X[tr], y[tr], r, **fit_kwargs)
            f = X[va] @ out["coef"] + out["intercept"]
            losses[k] += np.mean(np.logaddexp(0.0, -y[va] * f)) / len(folds)
            if shifted_folds is not None:
                F_s, y_s = shifted_folds[i]
                f_s = F_s @ out["coef"] + out["intercept"]
                shift_losses[k] += np.mean(np.logaddexp(0.0, -y_s * f_s)) / len(folds)
    best = int(np.argmin(losses)) if folds else 0
    best_shift = int(np.argmin(shift_losses)) if folds and shifted_folds is not None else best
    cv_time = time.perf_counter() - t0
    fits = [fit(X, y, r, **fit_kwargs) for r in radii]  # every radius on all rows (the sweep table)
    out = dict(fits[best])
    out.update(best=best, best_shift=best_shift, cv_losses=losses.tolist(), shift_losses=shift_losses.tolist(),
               total_time=cv_time + fits[best]["time"], fits=fits)
    return out


def _child(q, fn_name, kwargs):
    try:
        try:  # backstop: allocations beyond 2x the RSS limit fail inside the child (MemoryError)
            import resource
            cap = int(2 * MEMORY_LIMIT_GB * 2 ** 30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ImportError, ValueError, OSError):  # pragma: no cover
            pass
        fn = globals()[fn_name]
        # import the heavy libraries before the clock starts
        if fn_name == "fit_drokit":
            import drokit  # noqa: F401
        elif fn_name in ("fit_dro",) or kwargs.get("fit_name") == "fit_dro":
            import dro.linear_model.wasserstein_dro  # noqa: F401
        else:
            import skwdro.linear_models  # noqa: F401
        q.put(("started", None))
        q.put(("ok", fn(**kwargs)))
    except BaseException as exc:  # report, do not hang the parent
        q.put(("error", f"{type(exc).__name__}: {str(exc)[:160]}".replace("\n", " ")
               + ("" if os.environ.get("VSL_QUIET") else "\n" + traceback.format_exc())))


def _rss_gb(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return 0.0


def run_isolated(fn_name, timeout, **kwargs):
    """Run ``fn_name(**kwargs)`` in a spawned child; stop it (by its own handle) after ``timeout`` seconds
    counted from the end of its imports, or when its resident memory exceeds ``MEMORY_LIMIT_GB``.
    Returns ``{"status": "ok"|"timeout"|"memory"|"error", ...}``."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(q, fn_name, kwargs), daemon=True)
    proc.start()
    deadline = None
    try:
        while True:
            wait = 1.0 if deadline is None else max(0.1, min(1.0, deadline - time.monotonic()))
            try:
                kind, payload = q.get(timeout=wait)
            except queue.Empty:
                rss = _rss_gb(proc.pid)
                if rss > MEMORY_LIMIT_GB:
                    return {"status": "memory", "error": f"memory limit {MEMORY_LIMIT_GB:g} GB (RSS {rss:.1f} GB)"}
                if not proc.is_alive():
                    return {"status": "error", "error": f"child exited with code {proc.exitcode}"}
                if deadline is not None and time.monotonic() >= deadline:
                    return {"status": "timeout", "error": f"time limit {timeout:.0f} s"}
                continue
            if kind == "started":
                deadline = time.monotonic() + timeout
                continue
            if kind == "ok":
                payload["status"] = "ok"
                return payload
            print(f"    [{fn_name}] {payload}", file=sys.stderr)
            return {"status": "error", "error": payload.splitlines()[0]}
    finally:
        if proc.is_alive():
            proc.terminate()
        proc.join(10)


# ============================================================================ common evaluation
def shell_model(coef, intercept, classes):
    """An sklearn LogisticRegression carrying given parameters (what dk.worst_case reads)."""
    from sklearn.linear_model import LogisticRegression
    m = LogisticRegression()
    m.coef_ = np.asarray(coef, float).reshape(1, -1)
    m.intercept_ = np.array([float(intercept)])
    m.classes_ = np.asarray(classes)
    return m


def fmt_t(t):
    return "-" if t is None or not np.isfinite(t) else (f"{t:.2f}" if t < 100 else f"{t:.0f}")


def machine_note():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from importlib.metadata import version, PackageNotFoundError
    vers = []
    for pkg in ("drokit", "dro", "skwdro", "cvxpy", "clarabel", "torch", "numpy"):
        try:
            vers.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            vers.append(f"{pkg} (not installed)")
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}; " + ", ".join(vers)


# ============================================================================ part a
def synthetic(n, d, n_test, seed=SEED):
    from scipy.special import expit
    rng = np.random.default_rng([seed, d])
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    X = rng.standard_normal((n + n_test, d))
    y = np.where(rng.random(n + n_test) < expit(2.0 * X @ u + 0.3), 1.0, -1.0)
    return X[:n], y[:n], X[n:], y[n:]


def part_a(sizes, dims, timeout, peers, probe, repeat=1, isolate_drokit=False, kappa=np.inf):
    import drokit as dk
    from drokit.schema import FeatureSchema
    W = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(kappa=kappa)),
                       radius=EPS_A)
    rows, notes = [], []
    last = {}  # (library, d) -> (N, time) of the last finished run, for the projected-time skip
    for d in dims:
        X_all, y_all, X_te, y_te = synthetic(max(sizes), d, N_TEST_A)
        for N in sizes:
            X, y = X_all[:N], y_all[:N]
            schema = FeatureSchema.infer(X)

            def evaluate(coef, intercept):
                res = dk.worst_case(shell_model(coef, intercept, [-1.0, 1.0]), X, y, ambiguity=W,
                                    loss="logistic", schema=schema)
                acc = np.mean(np.where(X_te @ coef + intercept > 0, 1.0, -1.0) == y_te)
                return res.value, acc

            t_dk = lb = None
            for solver in DROKIT_SOLVERS:
                if isolate_drokit:  # in a child process, like the peers
                    out = run_isolated("fit_drokit", timeout, X=X, y=y, eps=EPS_A, repeat=repeat, solver=solver,
                                       kappa=kappa)
                    if out["status"] != "ok":
                        raise RuntimeError(f"drokit ({solver}) failed at N={N}, d={d}: {out['error']}")
                else:
                    out = fit_drokit(X, y, EPS_A, repeat=repeat, solver=solver, kappa=kappa)
                wc, acc = evaluate(out["coef"], out["intercept"])
                if t_dk is None:                  # the default fit is the reference of every ratio and gap
                    t_dk, lb = out["time"], out["lower_bound"]
                rows.append(dict(N=N, d=d, lib=f"drokit ({out['method']}, {out['solver']})", time=out["time"],
                                 ratio=out["time"] / t_dk, wc=wc, gap=wc - lb, acc=acc, reported=out["reported"],
                                 solve_time=out["solve_time"], iterations=out["iterations"],
                                 note=f"({out['solver']}) certified {out['lower_bound']:.10f} <= opt <= "
                                      f"{out['upper_bound']:.10f}; compile {out['compile_time']:.2f} s, solve "
                                      f"{out['solve_time']:.2f} s, certificate {out['evaluation_time']:.2f} s"))
                print(f"  a: N={N:,} d={d} drokit {out['solver']} {out['time']:.2f}s wc {wc:.8f} "
                      f"lb {out['lower_bound']:.8f}", file=sys.stderr, flush=True)
            for name, fn, kwargs in peers:
                key = (name, d)
                if key in last and last[key][0] is None:
                    rows.append(dict(N=N, d=d, lib=name, status=f"not run ({last[key][1]} at a smaller N)"))
                    continue
                if key in last:
                    projected = last[key][1] * N / last[key][0]
                    if projected > 2 * timeout:
                        rows.append(dict(N=N, d=d, lib=name, status=f"not run (projected {projected:.0f} s "
                                                                    f"from N={last[key][0]:,}; limit {timeout:.0f} s)"))
                        continue
                extra = dict(repeat=repeat) if fn == "fit_dro" else {}
                out = run_isolated(fn, timeout, X=X, y=y, eps=EPS_A, **kwargs, **extra)
                if out["status"] != "ok":
                    last[key] = (None, {"timeout": "time limit", "memory": "memory limit"}.get(out["status"],
                                                                                             "failed"))
                    rows.append(dict(N=N, d=d, lib=name, status=out["error"] if out["status"] in
                                     ("timeout", "memory") else "failed: " + out["error"]))
                    print(f"  a: N={N:,} d={d} {name}: {out['status']} {out.get('error', '')}", file=sys.stderr,
                          flush=True)
                    continue
                last[key] = (N, out["time"])
                if not np.all(np.isfinite(out["coef"])):
                    rows.append(dict(N=N, d=d, lib=name, time=out["time"], ratio=out["time"] / t_dk,
                                     status="returned non-finite coefficients"))
                    continue
                wc_p, acc_p = evaluate(out["coef"], out["intercept"])
                rows.append(dict(N=N, d=d, lib=name + (f" ({out['solver']})" if out.get("solver") else ""),
                                 time=out["time"], ratio=out["time"] / t_dk, wc=wc_p, gap=wc_p - lb, acc=acc_p,
                                 reported=out["reported"], solve_time=out.get("solve_time"),
                                 iterations=out.get("iterations")))
                print(f"  a: N={N:,} d={d} {name} {out['time']:.2f}s wc {wc_p:.6f}", file=sys.stderr, flush=True)
    if probe:
        X, y, _, _ = synthetic(1000, 10, 10)
        out = run_isolated("fit_skwdro", timeout, X=X, y=y, eps=EPS_A, cost="t-NC-1-2")
        notes.append("skwdro with the matched cost `t-NC-1-2` and its default optimizer (Prodigy), N = 1,000, "
                     "d = 10: " + (f"ran ({out['time']:.1f} s, coefficient norm "
                                   f"{np.linalg.norm(out['coef']):.3g})" if out["status"] == "ok"
                                   else f"{out['status']}: {out['error']}"))
    return rows, notes


def print_part_a(rows, notes, kappa=np.inf):
    labels = "labels fixed" if np.isinf(kappa) else f"a label flip costs kappa = {kappa:g}"
    print(f"\nPart a: all-numerical Wasserstein logistic regression (W1 ball, ||.||_2 cost, {labels}, "
          f"eps = {EPS_A}); worst-case objective = dk.worst_case of each returned model on the training data; "
          f"gap = that minus drokit's certified lower bound; test accuracy on {N_TEST_A:,} held-out rows.\n")
    print("| N | d | library (solver) | fit s | x drokit | solver s (iterations) | worst-case objective | gap to "
          "certified optimum (relative) | test acc | library's own objective |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "status" in r and "wc" not in r:
            t = fmt_t(r.get("time"))
            ratio = f"{r['ratio']:.1f}x" if "ratio" in r else "-"
            print(f"| {r['N']:,} | {r['d']} | {r['lib']} | {t} | {ratio} | - | {r['status']} | - | - | - |")
            continue
        ratio = "1" if r["ratio"] == 1.0 else f"{r['ratio']:.1f}x"
        st = r.get("solve_time")
        solver = "-" if st is None or not np.isfinite(st) else f"{fmt_t(st)} ({r.get('iterations')})"
        print(f"| {r['N']:,} | {r['d']} | {r['lib']} | {fmt_t(r['time'])} | {ratio} | {solver} | {r['wc']:.6f} | "
              f"{r['gap']:.1e} ({r['gap'] / (r['wc'] - r['gap']):.1e}) | {r['acc']:.4f} | "
              f"{r['reported']:.6g} |")
    for r in rows:
        if r.get("note"):
            print(f"- N = {r['N']:,}, d = {r['d']}: drokit {r['note']}")
    for n in notes:
        print(f"- {n}")


# ============================================================================ part b
class PeerEncoding:
    """Centered numerical columns times gamma_j / s and one-hot columns times delta_l / (2 s): the l1 cost
    of these columns is drokit's metric divided by s (a level change costs delta_l / s), radius eps / s."""

    def __init__(self, schema, metric, X_train):
        self.schema = schema
        data = schema.transform(X_train)
        num_w = metric.numerical.weights
        cat_w = metric.categorical.weights
        self.gamma = np.array([num_w[c] for c in schema.numerical_names], float)
        self.delta = np.array([cat_w[c] for c in schema.categorical_names], float)
        self.mean = data.X.mean(axis=0)
        self.s = float(np.median(self.gamma * data.X.std(axis=0, ddof=1)))
        self.levels = np.asarray(schema.levels, int)

    def transform(self, X):
        data = self.schema.transform(X)
        blocks = [(data.X - self.mean) * (self.gamma / self.s)]
        n = data.X.shape[0]
        for l, a in enumerate(self.levels):
            M = np.zeros((n, a))
            M[np.arange(n), data.Z[:, l]] = self.delta[l] / (2 * self.s)
            blocks.append(M)
        return np.hstack(blocks)

    def to_drokit(self, w, b):
        """The same affine score in drokit's encoding [numerical, reference-level dummies] (exact)."""
        n = len(self.gamma)
        coef_num = w[:n] * self.gamma / self.s
        intercept = b - float(coef_num @ self.mean)
        parts, k = [coef_num], n
        for l, a in enumerate(self.levels):
            c = self.delta[l] / (2 * self.s)
            wl = w[k:k + a]
            parts.append(c * (wl[1:] - wl[0]))
            intercept += c * wl[0]
            k += a
        return np.concatenate(parts), intercept


def check_encoding(enc, schema, X, w, b):
    """The peer's score on its columns equals the rewritten score in drokit's encoding."""
    coef, intercept = enc.to_drokit(w, b)
    f_drokit = np.asarray(schema.design(schema.transform(X)) @ coef).ravel() + intercept
    f_peer = enc.transform(X) @ w + b
    assert np.allclose(f_drokit, f_peer, rtol=1e-9, atol=1e-9 * (1 + np.abs(f_peer).max())), \
        float(np.abs(f_drokit - f_peer).max())


def scores(y01, p):
    from drokit.evaluation import accuracy, adaptive_calibration_error, log_loss
    return dict(acc=accuracy(y01, p), ll=log_loss(y01, p), brier=float(np.mean((p - y01) ** 2)),
                ace=adaptive_calibration_error(y01, p))


def part_b(datasets, timeout, n_sets, quick):
    import pandas as pd
    from scipy.special import expit
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, train_test_split
    import drokit as dk

    thetas = (0.9,) if quick else THETAS_B
    radii = [float(-np.log(t)) for t in thetas]
    eps_eval = dk.radius_from_theta(THETA_EVAL_B)
    scenarios = [("expected", None), ("rho_offset", -0.2)]
    rows, sweep, notes = [], [], []
    for name in datasets:
        X, y = dk.datasets.load(name)
        y = np.asarray(y).astype(int)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=SEED)
        metric = dk.GroundMetric.calibrated(X_tr, rho_numerical=RHO_B, rho_categorical=RHO_B)
        folds = list(StratifiedKFold(3, shuffle=True, random_state=SEED).split(X_tr, y_tr)) \
            if len(radii) > 1 else []
        # per library: the model at every radius of the grid (fitted on all training rows), the CV choice
        libs = {}  # name -> dict(fits=[(proba, (coef, intercept), fit_s)], best=k, cv_total=s)

        # drokit: CV over the grid, then every radius on all rows
        t0 = time.perf_counter()
        cv = np.zeros(len(radii))
        for tr, va in folds:
            for k, r in enumerate(radii):
                m = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=r), handle_unknown="ignore")
                m.fit(X_tr.iloc[tr], y_tr[tr])
                p = np.clip(m.predict_proba(X_tr.iloc[va])[:, 1], 1e-15, 1 - 1e-15)
                cv[k] += -np.mean(y_tr[va] * np.log(p) + (1 - y_tr[va]) * np.log(1 - p)) / len(folds)
        best = int(np.argmin(cv)) if folds else 0
        cv_time = time.perf_counter() - t0
        fits = []
        for r in radii:
            t1 = time.perf_counter()
            clf = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=r), handle_unknown="ignore")
            clf.fit(X_tr, y_tr)
            fits.append((lambda D, c=clf: c.predict_proba(D)[:, 1], (clf.coef_.ravel(), clf.intercept_[0]),
                         time.perf_counter() - t1))
        schema = clf.schema_
        libs["drokit (mismatch cost)"] = dict(fits=fits, best=best, cv_total=cv_time + fits[best][2])
        print(f"  b: {name} drokit eps {radii[best]:.3f} fit {fits[best][2]:.2f}s", file=sys.stderr, flush=True)
        if folds:
            # the CV estimator with the shift criterion: every fold's validation rows under CV_SHIFT_SETS copies of
            # the calibrated shift (the test sets' shift model: see the caveat in RESULTS.md), mean log-loss
            t1 = time.perf_counter()
            est = dk.DROClassifierCV(ambiguity=dk.Wasserstein(metric), radii=radii, criterion="shift",
                                     shift_model=metric, n_shift_sets=CV_SHIFT_SETS, random_state=SEED,
                                     cv=StratifiedKFold(3, shuffle=True, random_state=SEED),
                                     handle_unknown="ignore").fit(X_tr, y_tr)
            cv_est_time = time.perf_counter() - t1
            k_est = int(np.argmin(np.abs(np.asarray(radii) - est.radius_)))
            est_fits = [None] * len(radii)
            est_fits[k_est] = (lambda D, c=est: c.predict_proba(D)[:, 1], (est.coef_.ravel(), est.intercept_[0]),
                               fits[k_est][2])
            libs["drokit DROClassifierCV (shift criterion)"] = dict(fits=est_fits, best=k_est, cv_total=cv_est_time,
                                                                     no_sweep=True)
            print(f"  b: {name} drokit CV shift eps {est.radius_:.3f} ({cv_est_time:.1f}s)", file=sys.stderr,
                  flush=True)

        enc = PeerEncoding(schema, metric, X_tr)
        F_tr = enc.transform(X_tr)
        ypm = np.where(y_tr == 1, 1.0, -1.0)
        peer_radii = [r / enc.s for r in radii]

        # unpenalized logistic regression on the same columns (reference)
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lr = LogisticRegression(C=1e6, max_iter=20000).fit(F_tr, y_tr)
        t_lr = time.perf_counter() - t1
        check_encoding(enc, schema, X_te, lr.coef_.ravel(), lr.intercept_[0])
        libs["logistic regression (ERM)"] = dict(
            fits=[(lambda D, w=lr.coef_.ravel(), b=lr.intercept_[0]: expit(enc.transform(D) @ w + b),
                   enc.to_drokit(lr.coef_.ravel(), lr.intercept_[0]), t_lr)], best=0, cv_total=t_lr, erm=True)

        # the peers' shift criterion: the same shifted copies of each validation fold, in their columns
        shifted_folds = []
        for tr, va in folds:
            copies = dk.simulate_shift(X_tr.iloc[va], metric, CV_SHIFT_SETS, seed=SEED, scenario="expected")
            shifted_folds.append((np.vstack([enc.transform(c) for c in copies]), np.tile(ypm[va], CV_SHIFT_SETS)))
        peers = [("dro (one-hot, l1)", "fit_dro", dict(p=1, kappa="inf")),
                 ("skwdro (one-hot, l1, entropic)", "fit_skwdro",
                  dict(cost="t-NC-1-1", learning_rate=SKWDRO_LR))]
        for pname, fn, kw in peers:
            # the whole job (CV: 3 x grid fits, then one fit per radius on all rows) gets 3x the per-fit limit
            out = run_isolated("cv_peer", 3 * timeout, fit_name=fn, fit_kwargs=kw, X=F_tr, y=ypm,
                               folds=folds, radii=peer_radii, shifted_folds=shifted_folds or None)
            if out["status"] != "ok":
                rows.append(dict(data=name, model=pname, status=out["error"]))
                print(f"  b: {name} {pname}: {out['error']}", file=sys.stderr, flush=True)
                continue
            fits = []
            for f in out["fits"]:
                w, b = f["coef"], f["intercept"]
                if not np.all(np.isfinite(w)):
                    fits.append(None)
                    continue
                check_encoding(enc, schema, X_te, w, b)
                fits.append((lambda D, w=w, b=b: expit(enc.transform(D) @ w + b), enc.to_drokit(w, b), f["time"]))
            libs[pname] = dict(fits=fits, best=out["best"], cv_total=out["total_time"])
            if folds:     # the same fits, the radius chosen by the shift criterion
                libs[f"{pname}, shift criterion"] = dict(fits=fits, best=out["best_shift"], cv_total=out["total_time"],
                                                         no_sweep=True)
            print(f"  b: {name} {pname} eps {radii[out['best']]:.3f} fit {out['time']:.2f}s", file=sys.stderr,
                  flush=True)

        # scores: clean test set, shifted sets (mean over sets), exact worst-case log-loss in drokit's ball
        shifted = {}
        for sc, amount in scenarios:
            sets = dk.simulate_shift(X_te, metric, n_sets=n_sets, seed=SEED, scenario=sc, amount=amount)
            shifted[(sc, amount)] = pd.concat(list(sets), ignore_index=True)
        n_te = len(X_te)
        W_eval = dk.Wasserstein(metric, radius=eps_eval)

        def evaluate(proba, coef, b):
            row = dict(clean=scores(y_te, proba(X_te)))
            for key, big in shifted.items():
                p_all = proba(big)
                per = [scores(y_te, p_all[k * n_te:(k + 1) * n_te]) for k in range(n_sets)]
                row[key] = {m: float(np.mean([s_[m] for s_ in per])) for m in per[0]}
                row[key]["ll_worst"] = float(np.max([s_["ll"] for s_ in per]))   # the worst set's log-loss
            row["wc"] = dk.worst_case(shell_model(coef, b, [0, 1]), X_te, y_te, ambiguity=W_eval,
                                      loss="logistic", schema=schema).value
            return row

        for lname, lib in libs.items():
            k = lib["best"]
            if lib.get("no_sweep"):      # scored at its choice only (the sweep has its fits already)
                evals = [evaluate(lib["fits"][k][0], *lib["fits"][k][1]) if j == k and lib["fits"][k] is not None
                         else None for j in range(len(lib["fits"]))]
            else:
                evals = [None if f is None else evaluate(f[0], *f[1]) for f in lib["fits"]]
            if evals[k] is None:
                rows.append(dict(data=name, model=lname, status="non-finite coefficients"))
            else:
                row = dict(data=name, model=lname, eps=0.0 if lib.get("erm") else radii[k],
                           fit=lib["fits"][k][2], total=lib["cv_total"])
                row.update(evals[k])
                rows.append(row)
            if not lib.get("erm") and not lib.get("no_sweep"):
                sweep.append(dict(data=name, model=lname, evals=evals, best=k))
        if not quick and name == datasets[0]:  # does skwdro's default optimizer work on this cost?
            k = libs.get("skwdro (one-hot, l1, entropic)", {}).get("best", len(radii) - 1)
            out = run_isolated("fit_skwdro", timeout, X=F_tr, y=ypm, eps=peer_radii[k], cost="t-NC-1-1")
            ok = out["status"] == "ok" and np.all(np.isfinite(out["coef"]))
            notes.append(f"skwdro `t-NC-1-1` with its default optimizer (Prodigy) on {name} at eps = "
                         f"{radii[k]:.3f}: " + (f"ran ({out['time']:.1f} s, test log-loss "
                                                f"{scores(y_te, expit(enc.transform(X_te) @ out['coef'] + out['intercept']))['ll']:.3f})"
                                                if ok else f"{out['status']}: {out.get('error', 'non-finite coefficients')}"))
    return dict(rows=rows, sweep=sweep, scenarios=scenarios, eps_eval=eps_eval, n_sets=n_sets, radii=radii,
                notes=notes)


def print_part_b(rows, sweep, scenarios, eps_eval, n_sets, radii, notes):
    print(f"\nPart b: mixed data, radius chosen by 3-fold CV per library on the same grid (eps = -log theta, "
          f"theta in {THETAS_B if len(radii) > 1 else (0.9,)}; peers at eps / s on their rescaled "
          f"one-hot columns); scores on the clean test set and averaged over {n_sets} shifted test sets per "
          f"scenario (dk.simulate_shift with the calibrated metric, rho = {RHO_B}); WC = exact worst-case log-loss "
          f"in drokit's mixed ball around the test set (eps = {eps_eval:.4f}).\n")
    head = ["data", "model", "eps (CV)", "fit s (CV total s)", "clean acc / log-loss / Brier / ACE"]
    head += [f"{sc}{'' if a is None else ' ' + format(a, '+g')}: acc / log-loss / Brier / ACE" for sc, a in scenarios]
    head += [f"{scenarios[0][0]}: worst set's log-loss", "WC log-loss"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))

    def four(s_):
        return f"{s_['acc']:.3f} / {s_['ll']:.3f} / {s_['brier']:.3f} / {s_['ace']:.3f}"

    for r in rows:
        if "status" in r:
            print(f"| {r['data']} | {r['model']} | - | {r['status']} |" + " - |" * (len(head) - 4))
            continue
        cells = [r["data"], r["model"], f"{r['eps']:.3f}", f"{fmt_t(r['fit'])} ({fmt_t(r['total'])})",
                 four(r["clean"])] + [four(r[k]) for k in scenarios] + [f"{r[scenarios[0]]['ll_worst']:.3f}",
                                                                        f"{r['wc']:.4f}"]
        print("| " + " | ".join(cells) + " |")
    for n in notes:
        print(f"- {n}")
    if len(radii) < 2:
        return
    key = scenarios[0]
    print(f"\nPart b, the same radius grid for every library (each model fitted on all training rows): test "
          f"log-loss clean / mean over the {key[0]}-shift sets / WC (exact, drokit's ball, eps = {eps_eval:.4f}); "
          f"* = the CV choice.\n")
    print("| data | model | " + " | ".join(f"eps {r:.3f}" for r in radii) + " |")
    print("|---|---|" + "---|" * len(radii))
    for sw in sweep:
        cells = []
        for k, e in enumerate(sw["evals"]):
            star = "*" if k == sw["best"] else ""
            cells.append("-" if e is None else f"{star}{e['clean']['ll']:.3f} / {e[key]['ll']:.3f} / {e['wc']:.3f}")
        print(f"| {sw['data']} | {sw['model']} | " + " | ".join(cells) + " |")


# ============================================================================ main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1,000, d = 10; credit-approval at one radius")
    ap.add_argument("--part", choices=("a", "b", "all"), default="all")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per peer fit (part b: a library's "
                    "CV plus refit on one data set, 19 fits, gets 3x this)")
    ap.add_argument("--n-sets", type=int, default=None, help="shifted test sets per scenario (500; quick 50)")
    ap.add_argument("--peers", default=None, help="part a: comma-separated subset of "
                    "dro,skwdro-w1,skwdro-default,skwdro-dedicated (default: all; quick: dro,skwdro-w1)")
    ap.add_argument("--repeat", type=int, default=1, help="part a: median of this many fits for drokit and dro")
    ap.add_argument("--isolate-drokit", action="store_true", help="part a: time drokit in a child process too")
    ap.add_argument("--kappa", type=float, default=np.inf,
                    help="part a: label-flip cost (default inf: labels fixed); finite only with --peers dro")
    args = ap.parse_args()
    t_start = time.perf_counter()
    print(f"Machine: {machine_note()}")
    if args.part in ("a", "all"):
        all_peers = {"dro": ("dro", "fit_dro", dict(p=2, kappa="inf" if np.isinf(args.kappa) else args.kappa)),
                     "skwdro-w1": ("skwdro W1 entropic (t-NC-1-2, AdamW 1e-2)", "fit_skwdro",
                                   dict(cost="t-NC-1-2", learning_rate=SKWDRO_LR)),
                     "skwdro-default": ("skwdro default (t-NLC-2-2, Prodigy)", "fit_skwdro", dict()),
                     "skwdro-dedicated": ("skwdro dedicated (exact, kappa 1000)", "fit_skwdro",
                                          dict(solver="dedicated"))}
        chosen = args.peers.split(",") if args.peers else (["dro", "skwdro-w1"] if args.quick else list(all_peers))
        peers = [all_peers[k] for k in chosen]
        if np.isfinite(args.kappa) and chosen != ["dro"]:
            ap.error("--kappa (finite) compares drokit with dro only: pass --peers dro")
        sizes, dims = ([1000], [10]) if args.quick else ([1_000, 10_000, 100_000], [10, 50])
        rows, notes = part_a(sizes, dims, args.timeout, peers, probe=not args.quick and "skwdro-w1" in chosen,
                             repeat=args.repeat, isolate_drokit=args.isolate_drokit, kappa=args.kappa)
        print_part_a(rows, notes, args.kappa)
    if args.part in ("b", "all"):
        n_sets = args.n_sets or (50 if args.quick else 500)
        datasets = ["credit-approval"] if args.quick else ["credit-approval", "german-credit"]
        print_part_b(**part_b(datasets, args.timeout, n_sets, args.quick))
    print(f"\nTotal {time.perf_counter() - t_start:.0f} s.")


if __name__ == "__main__":
    main()
