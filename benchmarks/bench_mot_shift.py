"""Where reweighting helps: MOT-DRO and the KL ball next to the Wasserstein ball under two kinds of shift (issue 23).

On sun2025's mixed data sets (the reproduction's split, standardization, rho draw and calibrated metric with integer
weights: ``benchmarks/bench_sun2025_table1.py``, shared with ``reproductions/sun2025``), logistic models fitted with drokit's defaults:

* ``LR``: empirical risk (radius 0);
* ``W r``: the Wasserstein ball of the calibrated metric, radius ``r``;
* ``KL r``: the KL ball ``KL(Q || P_N) <= r`` (samples reweighted, not moved: ``dk.KLBall``);
* ``MOT r``: optimal transport with a moment constraint, ``theta1 = theta2 = 1``, KL, budget ``r``, the calibrated
  metric's moves priced by the norm itself (``dk.OTMoment(..., exponent=1)``): moves and reweighting together.

Each is scored on the held-out test rows under

1. **feature shift**: ``n_sets`` perturbed copies of the test set from the calibrated shift model (sun2025 §5.2,
   ``dk.robustness_report``, scenario "expected");
2. **subpopulation shift**: ``n_sets`` resamples of the test rows (with replacement, same size) with probabilities
   ``q_i ~ exp(tau a' z_i)``, ``z_i`` the standardized one-hot design, ``a`` a random unit direction per set and
   ``tau`` set so that ``KL(q || uniform) = 0.1``: the world tilts towards some subpopulation, samples keep their
   features.

Reported: mean and worst (over the sets) log-loss and the clean test log-loss.  The radii are a fixed grid (no
selection: issue 24 is about choosing them), so the table shows each set's curve.

    python benchmarks/bench_mot_shift.py [--datasets credit-approval hepatitis ...] [--n-sets 200] [--markdown]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import brentq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import drokit as dk  # noqa: E402
from benchmarks.bench_sun2025_table1 import calibrated_metric, draw_rho, load_split  # noqa: E402

DATASETS = ("credit-approval", "hepatitis", "german-credit", "cylinder-bands", "breast-cancer")
RADII = (0.01, 0.05, 0.2)
RHO_MEAN = 0.7
SEED = 2025
TILT_KL = 0.1


def models(metric):
    out = {"LR": dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.0))}
    for r in RADII:
        out[f"W {r:g}"] = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=r))
        out[f"KL {r:g}"] = dk.DROClassifier(ambiguity=dk.KLBall(radius=r))
        out[f"MOT {r:g}"] = dk.DROClassifier(ambiguity=dk.OTMoment(metric, theta1=1.0, theta2=1.0, divergence="kl",
                                                                    radius=r, exponent=1))
    return out


def tilted_counts(Z: np.ndarray, n_sets: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_sets, n)`` resample counts: probabilities ``exp(tau a' z_i)`` normalized, ``KL(q || uniform) =
    TILT_KL`` (``tau`` by Brent's method), ``a`` a random unit direction per set."""
    n = Z.shape[0]
    out = np.empty((n_sets, n), dtype=np.int64)
    for k in range(n_sets):
        a = rng.normal(size=Z.shape[1])
        s = Z @ (a / np.linalg.norm(a))

        def kl(tau):
            q = np.exp(tau * (s - s.max()))
            q /= q.sum()
            return float(np.sum(q * np.log(np.maximum(q * n, 1e-300)))) - TILT_KL
        tau = brentq(kl, 0.0, 50.0) if kl(50.0) > 0 else 50.0
        q = np.exp(tau * (s - s.max()))
        out[k] = rng.multinomial(n, q / q.sum())
    return out


def log_losses(model, X, y) -> np.ndarray:
    proba = model.predict_proba(X)[:, list(model.classes_).index(model.classes_[1])]
    positive = np.asarray(y) == model.classes_[1]
    p = np.clip(np.where(positive, proba, 1.0 - proba), 1e-15, 1.0)
    return -np.log(p)


def run(name: str, n_sets: int):
    split = load_split(name, SEED)
    rho = draw_rho(split.X_train, name, RHO_MEAN, SEED)
    metric, _ = calibrated_metric(split.X_train, rho, 0, on_zero="ignore")
    fitted, seconds, failed = {}, {}, {}
    for label, model in models(metric).items():
        t = time.perf_counter()
        try:
            fitted[label] = model.fit(split.X_train, split.y_train)
        except dk.SolverError as exc:                 # not certified: a failure, never a row
            failed[label] = str(exc).split(";")[0][:120]
        seconds[label] = time.perf_counter() - t
    report = dk.robustness_report(fitted, split.X_test, split.y_test, shift_model=metric, n_sets=n_sets,
                                  seed=np.random.SeedSequence([SEED, 1]), metrics=("log_loss",))
    feature = report.summary(("mean", "worst"))
    Z = pd.get_dummies(split.X_test, dtype=float).to_numpy()
    Z = (Z - Z.mean(0)) / np.where(Z.std(0) > 0, Z.std(0), 1.0)
    counts = tilted_counts(Z, n_sets, np.random.default_rng([SEED, 2]))
    rows = []
    for label, model in fitted.items():
        losses = log_losses(model, split.X_test, split.y_test)
        tilted = counts @ losses / counts.sum(axis=1)
        rows.append({"data": name, "model": label, "fit s": seconds[label], "clean": float(losses.mean()),
                     "feature mean": _pick(feature, label, "mean"), "feature worst": _pick(feature, label, "worst"),
                     "tilt mean": float(tilted.mean()), "tilt worst": float(tilted.max())})
    for label, why in failed.items():
        rows.append({"data": name, "model": label, "fit s": seconds[label], "failed": why})
    return rows


def _pick(summary: pd.DataFrame, model: str, stat: str) -> float:
    """The log-loss ``stat`` of ``model`` in a report summary (whatever its index layout)."""
    frame = summary.reset_index()
    hit = frame[frame.apply(lambda r: model in r.values.tolist(), axis=1)]
    cols = [c for c in frame.columns if stat in str(c).lower() and "log" in str(c).lower()] or \
        [c for c in frame.columns if str(c).lower() == stat]
    return float(hit[cols[0]].iloc[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--n-sets", type=int, default=200)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    print(f"# commit {commit}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"# command: python benchmarks/bench_mot_shift.py --datasets {' '.join(args.datasets)} "
          f"--n-sets {args.n_sets}\n")
    from threadpoolctl import threadpool_limits
    rows = []
    with threadpool_limits(1):
        for name in args.datasets:
            rows += run(name, args.n_sets)
            print(f"# {name} done", file=sys.stderr, flush=True)
    columns = ["data", "model", "fit s", "clean", "feature mean", "feature worst", "tilt mean", "tilt worst", "failed"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        cells = [row.get(c, "") for c in columns]
        print("| " + " | ".join(f"{c:.4f}" if isinstance(c, float) else str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
