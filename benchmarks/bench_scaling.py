"""Scaling of drokit's default fit against plain logistic regression, on synthetic mixed tables (issue 19).

What is measured
----------------
drokit: the DEFAULT fit, ``dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=r)).fit(X, y)``
with ``metric = dk.GroundMetric(label=dk.LabelCost(kappa))`` and every other setting at its default
(``method="auto"``, ``solver="auto"``, ``on_inaccurate="raise"``): an uncertified fit raises, and is
reported as a failure with its message, never as a timing row.  Each fit runs in its own child process
(multiprocessing, 'spawn') with a timeout: the child builds the data from the seed, warms up with a
fit of 200 synthetic rows at the same kappa and radius (imports, lazy back-end loading; not timed), then
times ``fit`` with ``time.perf_counter``; ``--timeout`` bounds the timed fit(s) of a row, a fit still
running then is killed and reported as ``timeout``.  Peak memory is the child's peak resident set (``getrusage(RUSAGE_SELF)``
``ru_maxrss``; for a fit killed at the timeout, ``VmHWM`` of ``/proc/<pid>/status`` just before the
kill), so it includes the interpreter, drokit's imports and the data (the "base MB" column of the CSV
is the same peak before the timed fit).

The floor: plain (unregularized) logistic regression, mean log-loss, by scipy's L-BFGS-B (gtol 1e-8,
maxiter 5000) on the same one-hot design drokit builds (``FeatureSchema.design``, dense, with an
intercept column), under ``threadpoolctl.threadpool_limits(1)`` (one BLAS thread, as drokit runs its
solves), best of ``--floor-repeat`` runs, measured in the parent process of the same run, never while a
drokit child is running.

Cases (all synthetic, deterministic from ``--seed`` (or each of ``--seeds``); no downloads)
------------------------------------------------------------------
``synthetic``  10 standard-normal numerical + 10 categorical features with 3-8 levels (mildly uneven
               level frequencies, Dirichlet(2)), labels Bernoulli(expit(linear score)) (a linear model
               with logistic noise); N from ``--sizes`` (default 1k, 10k, 100k; ``--million`` adds 1M).
``census``     a census-like table (the shape of UCI Adult): 32,561 rows, 6 numerical features (age,
               fnlwgt, education-num, capital gain/loss with ~92 %/95 % zeros, hours per week; skewed,
               then standardized) and 8 categorical features with 9, 16, 7, 15, 6, 5, 2 and 42 levels whose
               frequencies follow Zipf-like laws (the 42-level "country" has ~89 % of its rows in one level),
               ~25 % positives from a noisy linear model.
``highcard``   5,000 rows: one 300-level categorical feature (Zipf 0.8 frequencies, every level present),
               a 5-level and a 2-level one, and 3 numerical features.

Each case at every kappa of ``--kappas`` (default inf, 1: labels fixed / labels may flip at cost 1) and
radius of ``--radii`` (default 0.01, 0.1).  Every categorical level appears at least once.

Columns
-------
drokit s (wall time of ``fit``), relative gap (``result_.relative_gap``), method (``result_.method``),
lower-bound source and seconds (``result_.auxiliary["lower_bound"]``: the certificate's cost),
evaluation seconds (``result_.evaluation_time``: the exact upper bound), peak MB, floor s, ratio
drokit / floor, and the growth exponents ``log(t2/t1) / log(N2/N1)`` of drokit and of the floor
between consecutive N of a (case, kappa, radius).  The CSV (``--out``) also has where the time goes:
compile, phase 1 (solve time less the masters' and oracle's), the masters (count, seconds, Clarabel
iterations, statuses), the oracle, the final working set, and the floor's L-BFGS iterations.  Its
first lines (``#``) record the git commit, date, machine and the exact command.

Run:  python benchmarks/bench_scaling.py [--quick] [--cases synthetic census highcard]
          [--sizes 1000 10000 100000] [--million] [--kappas inf 1] [--radii 0.01 0.1]
          [--timeout 900] [--repeat 1] [--floor-repeat 5] [--seed 19 | --seeds 19 20 21] [--out FILE.csv]
          [--markdown]
          [--quiet]
      python benchmarks/bench_scaling.py --render FILE.csv [--markdown]   (table of a saved run)
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import multiprocessing as mp
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np
import pandas as pd

CASES = ("synthetic", "census", "highcard")
DEFAULT_SIZES = (1_000, 10_000, 100_000)
MILLION = 1_000_000
CENSUS_N = 32_561
HIGHCARD_N = 5_000
QUICK = {"sizes": (500, 2_000), "census": 1_000, "highcard": 400}
STARTUP_S = 300.0       # limit on a child's start-up, data and warm-up fit (not timed)
WARMUP_N = 200          # rows of the untimed warm-up fit (synthetic case) in each child

SYN_LEVELS = (3, 4, 5, 6, 7, 8, 3, 5, 6, 8)
CENSUS_LEVELS = {"workclass": (9, 1.6), "education": (16, 0.9), "marital": (7, 1.2), "occupation": (15, 0.5),
                 "relationship": (6, 0.9), "race": (5, 2.2), "sex": (2, 1.0), "country": (42, 2.6)}


# ------------------------------------------------------------------------------------------- data
def _levels(rng, n: int, probs: np.ndarray, prefix: str) -> pd.Categorical:
    """``n`` draws of ``len(probs)`` levels, every level at least once (at random positions)."""
    k = len(probs)
    codes = rng.choice(k, size=n, p=probs / probs.sum())
    if n >= k:
        codes[rng.permutation(n)[:k]] = np.arange(k)
    names = [f"{prefix}{i}" for i in range(k)]
    return pd.Categorical.from_codes(codes, categories=names)


def _zipf(k: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, k + 1) ** s
    return p / p.sum()


def _labels(rng, score: np.ndarray) -> np.ndarray:
    """Labels of a noisy linear model: ``1[score + logistic noise > 0]``."""
    return (score + rng.logistic(size=score.size) > 0).astype(int)


def make_synthetic(n: int, seed: int):
    return synthetic_rows(n, seed, np.random.default_rng([seed, 1, n]))


def synthetic_rows(n: int, seed: int, rng):
    """``(X, labels)``: ``n`` rows of the synthetic 10 + 10 table drawn by ``rng``, from the model of ``seed`` (drawn
    from ``[seed, 1, 0]``: the same model at every N and for every partition of ``bench_dask_fit.py``)."""
    model = np.random.default_rng([seed, 1, 0])        # the same model at every N
    probs = [model.dirichlet(2.0 * np.ones(k)) for k in SYN_LEVELS]
    effects = [model.normal(0, 0.6, k) for k in SYN_LEVELS]
    beta = model.normal(0, 0.5, 10)
    num = rng.standard_normal((n, 10))
    cols = {f"x{j + 1}": num[:, j] for j in range(10)}
    score = num @ beta - 0.2
    for j, (p, e) in enumerate(zip(probs, effects)):
        c = _levels(rng, n, p, "L")
        cols[f"c{j + 1}"] = c
        score += e[c.codes]
    return pd.DataFrame(cols), _labels(rng, score)


def make_census(n: int, seed: int):
    model = np.random.default_rng([seed, 2, 0])
    effects = {name: model.normal(0, 0.6, k) for name, (k, _) in CENSUS_LEVELS.items()}
    beta = np.array([0.6, 0.05, 0.8, 0.5, 0.25, 0.4])
    rng = np.random.default_rng([seed, 2, n])
    raw = np.column_stack([
        np.clip(17 + rng.gamma(2.5, 8.0, n), 17, 90),                                    # age
        rng.lognormal(12.0, 0.5, n),                                                      # fnlwgt
        np.clip(rng.binomial(16, 0.62, n), 1, 16),                                        # education-num
        np.where(rng.random(n) < 0.92, 0.0, rng.lognormal(8.0, 1.0, n)),                 # capital gain
        np.where(rng.random(n) < 0.95, 0.0, rng.normal(1900, 300, n)),                   # capital loss
        np.clip(np.round(rng.normal(40, 12, n)), 1, 99)])                                 # hours per week
    num = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    names = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
    cols = {name: num[:, j] for j, name in enumerate(names)}
    score = num @ beta - 1.4
    for name, (k, s) in CENSUS_LEVELS.items():
        c = _levels(rng, n, _zipf(k, s), name[:3])
        cols[name] = c
        score += effects[name][c.codes]
    return pd.DataFrame(cols), _labels(rng, score)


def make_highcard(n: int, seed: int):
    model = np.random.default_rng([seed, 3, 0])
    e300, e5, e2 = model.normal(0, 0.8, 300), model.normal(0, 0.6, 5), model.normal(0, 0.6, 2)
    beta = model.normal(0, 0.5, 3)
    rng = np.random.default_rng([seed, 3, n])
    num = rng.standard_normal((n, 3))
    cols = {f"x{j + 1}": num[:, j] for j in range(3)}
    c300 = _levels(rng, n, _zipf(300, 0.8), "k")
    c5 = _levels(rng, n, model.dirichlet(2.0 * np.ones(5)), "m")
    c2 = _levels(rng, n, np.array([0.6, 0.4]), "b")
    cols.update(c300=c300, c5=c5, c2=c2)
    score = num @ beta + e300[c300.codes] + e5[c5.codes] + e2[c2.codes]
    return pd.DataFrame(cols), _labels(rng, score - score.mean())


MAKERS = {"synthetic": make_synthetic, "census": make_census, "highcard": make_highcard}


# ------------------------------------------------------------------------------------------- drokit fit (child)
def _maxrss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0    # Linux: kB


def _estimator(kappa: float, radius: float):
    import drokit as dk
    metric = dk.GroundMetric(label=dk.LabelCost(kappa))
    return dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=radius))


def _summary(res, seconds: float) -> dict:
    """The numbers of one fit's ``result_`` (see the module docstring)."""
    lb = res.auxiliary.get("lower_bound", {}) or {}
    hist = list(res.history or [])
    masters = float(sum(r.master_time for r in hist))
    oracle = float(sum(r.oracle_time for r in hist))
    barrier = float((res.auxiliary.get("barrier_master") or {}).get("seconds", 0.0))
    statuses = {}
    for r in hist:
        statuses[r.master_status] = statuses.get(r.master_status, 0) + 1
    return {
        "drokit_s": seconds, "relative_gap": res.relative_gap, "status": res.status, "method": res.method,
        "lb_source": lb.get("source"), "lb_s": lb.get("seconds"), "eval_s": res.evaluation_time,
        "compile_s": res.compile_time, "solve_s": res.solve_time,
        # phase 1 (and, when the conic masters ran, the structured barrier master's attempt before them); the
        # certificate's lower bound (its polish included) runs inside the solve time: not counted twice
        "phase1_s": float((res.auxiliary.get("phase_one") or {}).get("seconds", np.nan))
        if not hist else (res.solve_time - masters - oracle - barrier - float(lb.get("seconds") or 0.0)),
        "barrier_s": barrier, "certified_by": res.solver,
        "masters": len(hist), "masters_s": masters, "oracle_s": oracle,
        "master_iterations": int(sum(r.master_iterations for r in hist)),
        "master_statuses": " ".join(f"{k}x{v}" for k, v in statuses.items()),
        "working_rows": hist[-1].working_rows if hist else res.n_configuration_rows,
        "objective": res.objective,
    }


def _child(conn, case: str, n: int, seed: int, kappa: float, radius: float, repeat: int) -> None:
    """One drokit measurement in a fresh process; sends a dict (``ok`` or ``error``) through ``conn``."""
    import warnings
    _use_snapshot()
    out = {"pid": os.getpid()}
    try:
        X, y = MAKERS[case](n, seed)
        try:  # warm-up (not timed): imports and lazily loaded back-ends
            Xw, yw = make_synthetic(WARMUP_N, seed + 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _estimator(kappa, radius).fit(Xw, yw)
        except Exception:
            pass
        out["base_mb"] = _maxrss_mb()
        conn.send({"started": True})   # the parent's timeout runs from here
        best = None
        for _ in range(repeat):
            clf = _estimator(kappa, radius)
            t0 = time.perf_counter()
            try:
                clf.fit(X, y)
            except Exception as exc:   # uncertified (SolverError) or anything else: a failure row
                out.update(error=f"{type(exc).__name__}: {exc}", failed_after_s=time.perf_counter() - t0,
                           peak_mb=_maxrss_mb())
                conn.send(out)
                return
            t = time.perf_counter() - t0
            if best is None or t < best["drokit_s"]:
                best = _summary(clf.result_, t)
        out.update(best, peak_mb=_maxrss_mb())
    except Exception as exc:
        out.update(error=f"{type(exc).__name__}: {exc}", peak_mb=_maxrss_mb())
    conn.send(out)


def _vm_hwm_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def run_in_child(target, args: tuple, timeout: float, seconds_key: str = "drokit_s") -> dict:
    """Run ``target(conn, *args)`` in a spawned process and return the dict it sends.  The child first sends
    ``{"started": True, ...}`` when its untimed start-up (imports, data, warm-up) is done; ``timeout`` bounds
    what follows (``STARTUP_S`` the start-up).  A child still running then is killed and reported as ``timeout``
    (its peak memory from ``VmHWM``), as is an answer whose ``seconds_key`` exceeds ``timeout``; the extra
    items of the "started" message are kept in every failure row."""
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(send,) + tuple(args), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    out, limit, info = None, timeout + STARTUP_S, {}   # the start-up, data and warm-up (not timed) first
    while recv.poll(limit):
        try:
            msg = recv.recv()
        except EOFError:
            break
        if msg.get("started"):
            t0, limit = time.perf_counter(), timeout   # the timed fit(s) begin
            info = {k: v for k, v in msg.items() if k != "started"}
            continue
        out = msg
        proc.join(30)
        break
    if out is None and proc.is_alive():
        hwm = _vm_hwm_mb(proc.pid)
        proc.kill()
        proc.join()
        return {**info, "error": f"timeout: no answer {time.perf_counter() - t0:.0f} s after the fit started "
                                 f"(limit {timeout:.0f} s); killed", "timeout": True, "peak_mb": hwm}
    if out is None:
        proc.join()
        return {**info, "error": f"child died (exit code {proc.exitcode}) without an answer"}
    if "error" not in out and out[seconds_key] > timeout:
        return {**out, "error": f"timeout: the fit took {out[seconds_key]:.0f} s > {timeout:.0f} s", "timeout": True}
    return out


def run_drokit(case, n, seed, kappa, radius, repeat, timeout) -> dict:
    """Run :func:`_child` with a timeout; a timed-out child is killed and reported as ``timeout``."""
    return run_in_child(_child, (case, n, seed, kappa, radius, repeat), timeout)


# ------------------------------------------------------------------------------------------- the floor (parent)
def floor_time(X, y, repeats: int) -> tuple:
    """``(best seconds, L-BFGS iterations, converged)`` of plain logistic regression on drokit's one-hot
    design of ``X`` (intercept column added), one BLAS thread."""
    from scipy.optimize import minimize
    from scipy.special import expit
    from threadpoolctl import threadpool_limits
    from drokit.schema import FeatureSchema
    schema = FeatureSchema.infer(X)
    design = schema.design(schema.transform(X))
    design = design.toarray() if hasattr(design, "toarray") else np.asarray(design, dtype=float)
    s = 2.0 * np.asarray(y, dtype=float) - 1.0
    A = np.column_stack([np.ones(len(s)), design]) * s[:, None]
    del design

    def f(w):
        m = A @ w
        return np.mean(np.logaddexp(0, -m)), -(A.T @ expit(-m)) / len(s)

    best, info = math.inf, None
    with threadpool_limits(limits=1):
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = minimize(f, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-8, "maxiter": 5000})
            t = time.perf_counter() - t0
            if t < best:
                best, info = t, (int(r.nit), bool(r.success))
    return best, info[0], info[1], A.shape[1]


# ------------------------------------------------------------------------------------------- output
FIELDS = ["case", "seed", "N", "kappa", "radius", "d", "drokit_s", "relative_gap", "status", "method", "lb_source",
          "lb_s", "eval_s", "peak_mb", "base_mb", "floor_s", "ratio", "exp_drokit", "exp_floor", "compile_s",
          "solve_s", "phase1_s", "barrier_s", "certified_by", "masters", "masters_s", "master_iterations",
          "master_statuses", "oracle_s", "working_rows", "objective", "floor_nit", "floor_converged", "error"]
TABLE = [("case", "case"), ("seed", "seed"), ("N", "N"), ("kappa", "kappa"), ("radius", "radius"),
         ("drokit s", "drokit_s"),
         ("rel. gap", "relative_gap"), ("certified by", "certified_by"), ("lower bound", "lb_source"),
         ("LB s", "lb_s"), ("eval s", "eval_s"), ("phase 1 s", "phase1_s"), ("barrier s", "barrier_s"),
         ("masters (n) s", "masters_s"),
         ("peak MB", "peak_mb"), ("floor s", "floor_s"), ("ratio", "ratio"), ("exp. drokit", "exp_drokit"),
         ("exp. floor", "exp_floor")]


def _num(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _cell(row: dict, key: str) -> str:
    v = row.get(key)
    if row.get("error") and key in ("drokit_s", "relative_gap", "method", "lb_source", "lb_s", "eval_s",
                                    "phase1_s", "barrier_s", "certified_by", "masters_s", "ratio", "exp_drokit"):
        if key == "drokit_s":
            return "timeout" if str(row["error"]).startswith("timeout") else "failed"
        return "-"
    x = _num(v)
    if key in ("N",):
        return f"{int(x):,}"
    if key == "kappa":
        return "inf" if x is not None and math.isinf(x) else f"{x:g}"
    if key == "masters_s":
        return "-" if x is None else f"({int(float(row.get('masters') or 0))}) {x:.2f}"
    if key == "relative_gap":
        return "-" if x is None else f"{x:.1e}"
    if key in ("ratio",):
        return "-" if x is None else f"{x:.0f}x"
    if key in ("exp_drokit", "exp_floor"):
        return "-" if x is None else f"{x:.2f}"
    if key == "floor_s":
        return "-" if x is None else f"{x:.4f}" if x < 0.1 else f"{x:.3f}"
    if key == "peak_mb":
        return "-" if x is None else f"{x:.0f}"
    if key in ("drokit_s", "lb_s", "eval_s", "phase1_s", "barrier_s"):
        return "-" if x is None else f"{x:.3f}" if x < 1 else f"{x:.2f}"
    if key == "radius":
        return f"{x:g}"
    return "-" if v in (None, "") else str(v)


def render(rows, markdown: bool) -> str:
    heads = [h for h, _ in TABLE]
    cells = [[_cell(r, k) for _, k in TABLE] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
    else:
        widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(heads)]
        lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(cs, widths)) for cs in cells]
    fails = [r for r in rows if r.get("error")]
    if fails:
        lines.append("")
        lines += [f"{'- ' if markdown else ''}{r['case']} seed={_cell(r, 'seed')} N={int(float(r['N'])):,} "
                  f"kappa={_cell(r, 'kappa')} "
                  f"radius={_cell(r, 'radius')}: {r['error']}" for r in fails]
    return "\n".join(lines)


BREAKDOWN = [("compile", "compile_s"), ("phase 1", "phase1_s"), ("barrier master", "barrier_s"),
             ("masters", "masters_s"),
             ("oracle", "oracle_s"), ("lower bound", "lb_s"), ("evaluation", "eval_s")]


def breakdown(rows, markdown: bool) -> str:
    """Where each certified fit's time goes: seconds (share of the fit) of compile, phase 1, the masters,
    the oracle, the certificate's lower bound, the exact evaluation, and the rest (encoding, checks)."""
    heads = ["case", "seed", "N", "kappa", "radius", "drokit s"] + [h for h, _ in BREAKDOWN] + \
            ["other", "masters: n / IPM iterations / statuses", "final rows"]
    lines = []
    for r in rows:
        total = _num(r.get("drokit_s"))
        if r.get("error") or not total:
            continue
        parts = [_num(r.get(k)) or 0.0 for _, k in BREAKDOWN]
        cells = [r["case"], _cell(r, "seed"), _cell(r, "N"), _cell(r, "kappa"), _cell(r, "radius"), f"{total:.2f}"]
        cells += [f"{p:.2f} ({100 * p / total:.0f} %)" for p in parts + [total - sum(parts)]]
        cells += [f"{int(float(r.get('masters') or 0))} / {r.get('master_iterations', '')} / "
                  f"{r.get('master_statuses', '')}", f"{int(float(r.get('working_rows') or 0)):,}"]
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
        return "\n".join(out + ["| " + " | ".join(c) + " |" for c in lines])
    return "\n".join(["\t".join(heads)] + ["\t".join(c) for c in lines])


def growth(rows) -> None:
    """Fill ``exp_drokit`` / ``exp_floor``: ``log(t2/t1) / log(N2/N1)`` against the previous N of the same
    (case, seed, kappa, radius)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["case"], str(r.get("seed", "")), str(r["kappa"]), str(r["radius"])), []).append(r)
    for group in groups.values():
        group.sort(key=lambda r: float(r["N"]))
        for a, b in zip(group, group[1:]):
            ratio_n = math.log(float(b["N"]) / float(a["N"]))
            if ratio_n <= 0:
                continue
            for key, col in (("drokit_s", "exp_drokit"), ("floor_s", "exp_floor")):
                ta, tb = _num(a.get(key)), _num(b.get(key))
                failed = key == "drokit_s" and (a.get("error") or b.get("error"))
                b[col] = math.log(tb / ta) / ratio_n if ta and tb and not failed else None


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT_ENV = "DROKIT_BENCH_SNAPSHOT"


def _use_snapshot() -> None:
    """Import drokit from the snapshot of :func:`snapshot_drokit` (children inherit the variable)."""
    src = os.environ.get(SNAPSHOT_ENV)
    if src and src not in sys.path:
        sys.path.insert(0, src)


def snapshot_drokit(commit: str) -> str:
    """Extract ``drokit/`` at ``commit`` (``git archive``) into a temporary folder and import drokit from
    there, here and in every child: commits landing in the work tree during a long run do not change the
    code measured."""
    import tarfile
    import tempfile
    import atexit
    import shutil
    dest = tempfile.mkdtemp(prefix="bench_scaling_drokit_")
    atexit.register(shutil.rmtree, dest, True)
    tar = subprocess.run(["git", "archive", "--format=tar", commit, "drokit"], cwd=REPO, capture_output=True,
                         check=True).stdout
    import io
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        tf.extractall(dest, filter="data")
    os.environ[SNAPSHOT_ENV] = dest
    _use_snapshot()
    return dest


def git_commit() -> tuple:
    """``(HEAD, whether drokit/ has uncommitted changes)``, or ``(None, False)`` outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "drokit"],
                               cwd=REPO, capture_output=True, text=True).stdout.strip()
        return commit, bool(dirty)
    except (OSError, subprocess.CalledProcessError):
        return None, False


def header_lines(argv, commit, dirty, snapshot) -> list:
    if commit is None:
        commit = "unknown"
    elif snapshot:
        commit += f" (drokit imported from a snapshot of this commit{'; uncommitted changes to drokit/ not measured' if dirty else ''})"
    elif dirty:
        commit += " (drokit/ modified in the work tree)"
    import drokit
    import numpy, scipy
    try:
        import clarabel
        clv = getattr(clarabel, "__version__", "?")
    except ImportError:
        clv = "-"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return [f"commit: {commit}",
            f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
            f"machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, {mem:.0f} GiB, "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start",
            f"python {platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}, "
            f"clarabel {clv}",
            f"drokit imported from {os.path.dirname(drokit.__file__)}",
            "command: " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.executable)] + argv)]


def write_csv(path: str, header: list, rows, fields=None) -> None:
    """The rows (columns ``fields``, default this benchmark's) after ``#`` header lines, written atomically."""
    fields = FIELDS if fields is None else fields
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as fh:
        for line in header:
            fh.write(f"# {line}\n")
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    os.replace(tmp, path)


def read_csv(path: str):
    header, body = [], []
    with open(path) as fh:
        for line in fh:
            (header if line.startswith("# ") else body).append(line[2:].rstrip("\n") if line.startswith("# ")
                                                               else line)
    return header, list(csv.DictReader(body))


# ------------------------------------------------------------------------------------------- main
def add_common_arguments(ap: argparse.ArgumentParser, row: str) -> None:
    """The options every benchmark script of this family shares (``row``: what the CSV is rewritten after)."""
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--out", default=None, help=f"CSV file, rewritten after every {row}")
    ap.add_argument("--markdown", action="store_true", help="print the tables as markdown (benchmarks/RESULTS.md)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="import drokit from the work tree (default: from a snapshot of drokit/ at HEAD, so "
                         "that commits landing during the run do not change what is measured)")
    ap.add_argument("--render", metavar="CSV", default=None, help="print the tables of a saved CSV and exit")


def main(argv=None):
    argv = sys.argv if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: synthetic N {QUICK['sizes']}, census {QUICK['census']} rows, highcard "
                         f"{QUICK['highcard']} rows")
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    ap.add_argument("--seeds", nargs="+", type=int, default=None,
                    help="several seeds in one run, every case and size at each (default: --seed alone); a "
                         "generator's other seeds show fits one seed hides")
    ap.add_argument("--sizes", nargs="+", type=int, default=None,
                    help=f"N of the synthetic case (default {' '.join(map(str, DEFAULT_SIZES))})")
    ap.add_argument("--million", action="store_true", help="add N = 1,000,000 to the synthetic case")
    ap.add_argument("--census-n", type=int, default=None, help=f"rows of the census case (default {CENSUS_N})")
    ap.add_argument("--highcard-n", type=int, default=None, help=f"rows of the highcard case (default {HIGHCARD_N})")
    ap.add_argument("--kappas", nargs="+", type=float, default=[math.inf, 1.0])
    ap.add_argument("--radii", nargs="+", type=float, default=[0.01, 0.1])
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per row's timed drokit fit(s) (default 900)")
    ap.add_argument("--repeat", type=int, default=1, help="drokit fits per row, fastest reported (default 1)")
    ap.add_argument("--floor-repeat", type=int, default=5, help="floor fits per design, fastest (default 5)")
    add_common_arguments(ap, "row")
    args = ap.parse_args(argv[1:])

    if args.render:
        header, rows = read_csv(args.render)
        print("\n".join(header) + "\n")
        print(render(rows, args.markdown))
        print("\nWhere the time goes (seconds, share of the fit):\n")
        print(breakdown(rows, args.markdown))
        return 0

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    sizes = list(args.sizes or (QUICK["sizes"] if args.quick else DEFAULT_SIZES))
    if args.million and MILLION not in sizes:
        sizes.append(MILLION)
    fixed = {"census": args.census_n or (QUICK["census"] if args.quick else CENSUS_N),
             "highcard": args.highcard_n or (QUICK["highcard"] if args.quick else HIGHCARD_N)}
    seeds = list(args.seeds or [args.seed])
    plan = [(case, n, seed) for seed in seeds for case in args.cases
            for n in (sorted(sizes) if case == "synthetic" else [fixed[case]])]
    commit, dirty = git_commit()
    snapshot = commit is not None and not args.no_snapshot
    if snapshot:
        snapshot_drokit(commit)
    header = header_lines(argv, commit, dirty, snapshot)
    for line in header:
        log(line)
    rows = []
    for case, n, seed in plan:
        X, y = MAKERS[case](n, seed)
        fl, nit, conv, d = floor_time(X, y, args.floor_repeat)
        del X, y
        log(f"[{case} seed {seed} N={n:,}] floor {fl:.4f} s "
            f"({nit} L-BFGS iterations{'' if conv else ', NOT converged'}), "
            f"d = {d - 1} design columns + intercept")
        for kappa in args.kappas:
            for radius in args.radii:
                t0 = time.perf_counter()
                out = run_drokit(case, n, seed, kappa, radius, args.repeat, args.timeout)
                row = {"case": case, "seed": seed, "N": n, "kappa": kappa, "radius": radius, "d": d - 1, "floor_s": fl,
                       "floor_nit": nit, "floor_converged": conv, **out}
                if not out.get("error"):
                    row["ratio"] = row["drokit_s"] / fl
                    log(f"[{case} seed {seed} N={n:,} kappa={kappa:g} radius={radius:g}] {row['drokit_s']:.2f} s "
                        f"({row['ratio']:.0f}x floor), gap {row['relative_gap']:.1e}, {row['method']}, "
                        f"phase 1 {row['phase1_s']:.2f} s, {row['masters']} masters {row['masters_s']:.2f} s "
                        f"({row['master_statuses']}), oracle {row['oracle_s']:.2f} s, lower bound "
                        f"{row['lb_source']} {_num(row['lb_s']) or 0:.2f} s, eval {row['eval_s']:.2f} s, "
                        f"peak {row['peak_mb']:.0f} MB")
                else:
                    log(f"[{case} seed {seed} N={n:,} kappa={kappa:g} radius={radius:g}] FAILED after "
                        f"{time.perf_counter() - t0:.0f} s wall: {out['error']}")
                rows.append(row)
                growth(rows)
                if args.out:
                    write_csv(args.out, header, rows)
    growth(rows)
    if args.out:
        write_csv(args.out, header, rows)
    print("\n".join(header) + "\n")
    print(render(rows, args.markdown))
    print("\nWhere the time goes (seconds, share of the fit):\n")
    print(breakdown(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
