"""Which radius-selection criterion protects under shift: DROClassifierCV's criteria against plain and lasso logistic
regression on sun2025's data sets (issue 24).

On each of sun2025's 13 data sets (the reproduction's split: seed 2025, 80/20 stratified, numerical columns
z-scored; rho mean 0.7 and the calibrated metric with integer weights, ``benchmarks/bench_sun2025_table1.py``), logistic
models fitted on the training rows:

* ``LR``: plain logistic regression (drokit at radius 0, certified);
* ``lasso``: scikit-learn's ``LogisticRegressionCV(l1_ratios=[1], solver="saga", Cs=10, cv=3, scoring="neg_log_loss")``
  on a one-hot design (the regularization chosen on clean log-loss, as a practitioner would);
* ``DRO clean`` / ``DRO shift`` / ``DRO worst_case``: ``dk.DROClassifierCV(ambiguity=dk.Wasserstein(metric),
  radii=--n-radii, cv=3, criterion=...)`` with drokit's defaults (every fit certified); the shift criterion scores
  ``--cv-sets`` shifted copies of each validation fold under the calibrated shift model (mean log-loss), the
  worst-case criterion the exact worst-case validation log-loss at the rule-of-thumb radius.

Each is scored on the held-out test rows: clean log-loss and the mean / worst log-loss over ``--n-sets`` perturbed
copies of the test rows from the calibrated shift model (sun2025 §5.2, scenario "expected", ``dk.robustness_report``),
and the mean ACE over them.  The goal of issue 24: the shift-selected DRO model beats LR and lasso on mean shifted
log-loss on at least 10 of 13 data sets.  The header records commit, date, machine and command.

    python benchmarks/bench_radius_selection.py [--datasets ...] [--n-sets 200] [--n-radii 8] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import drokit as dk  # noqa: E402
from benchmarks.bench_sun2025_table1 import PUBLISHED, calibrated_metric, draw_rho, load_split  # noqa: E402

RHO_MEAN = 0.7
SEED = 2025
CRITERIA = ("clean", "shift", "worst_case")


def lasso(X: pd.DataFrame):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    categorical = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype) or X[c].dtype == object]
    design = ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), categorical)],
                               remainder="passthrough")
    return make_pipeline(design, LogisticRegressionCV(Cs=10, cv=3, l1_ratios=[1.0], solver="saga", max_iter=5000,
                                                      scoring="neg_log_loss"))


def models(metric, X, args):
    out = {"LR": dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.0)), "lasso": lasso(X)}
    for criterion in CRITERIA:
        out[f"DRO {criterion}"] = dk.DROClassifierCV(ambiguity=dk.Wasserstein(metric), radii=args.n_radii, cv=3,
                                                     criterion=criterion, n_shift_sets=args.cv_sets,
                                                     n_jobs=args.n_jobs)
    return out


def run(name: str, args):
    split = load_split(name, SEED)
    rho = draw_rho(split.X_train, name, RHO_MEAN, SEED)
    metric, _ = calibrated_metric(split.X_train, rho, 0, on_zero="ignore")
    fitted, seconds, failed, radius = {}, {}, {}, {}
    for label, model in models(metric, split.X_train, args).items():
        t = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted[label] = model.fit(split.X_train, split.y_train)
            radius[label] = getattr(model, "radius_", np.nan)
        except Exception as exc:  # noqa: BLE001 -- a failed or uncertified fit is a failure row, never a score
            failed[label] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
        seconds[label] = time.perf_counter() - t
    report = dk.robustness_report(fitted, split.X_test, split.y_test, shift_model=metric, n_sets=args.n_sets,
                                  seed=np.random.SeedSequence([SEED, 1]), metrics=("log_loss", "ace"))
    summary = report.summary(("mean", "worst")).reset_index()
    rows = []
    for label, model in fitted.items():
        proba = model.predict_proba(split.X_test)
        from sklearn.metrics import log_loss
        clean = log_loss(split.y_test, proba, labels=model.classes_)
        row = {"data": name, "model": label, "radius": radius[label], "fit s": seconds[label], "clean": clean}
        hit = summary[summary.apply(lambda r: label in r.values.tolist(), axis=1)]
        for column in hit.columns:
            text = str(column).lower()
            if "log" in text and "mean" in text:
                row["shift mean"] = float(hit[column].iloc[0])
            elif "log" in text and "worst" in text:
                row["shift worst"] = float(hit[column].iloc[0])
            elif "ace" in text and "mean" in text:
                row["ACE mean"] = float(hit[column].iloc[0])
        rows.append(row)
    for label, why in failed.items():
        rows.append({"data": name, "model": label, "fit s": seconds[label], "failed": why})
    return rows


def verdict(frame: pd.DataFrame) -> str:
    lines = []
    for criterion in CRITERIA:
        label = f"DRO {criterion}"
        wins = {"LR": 0, "lasso": 0}
        sets = 0
        for _, part in frame.groupby("data"):
            by = part.set_index("model")
            if label not in by.index or not np.isfinite(by.loc[label].get("shift mean", np.nan)):
                continue
            sets += 1
            for other in wins:
                if other in by.index and by.loc[label, "shift mean"] < by.loc[other].get("shift mean", np.inf):
                    wins[other] += 1
        lines.append(f"- {label}: lower mean shifted log-loss than LR on {wins['LR']} of {sets} data sets, than "
                     f"lasso on {wins['lasso']} of {sets}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(PUBLISHED))
    ap.add_argument("--n-sets", type=int, default=200)
    ap.add_argument("--cv-sets", type=int, default=20)
    ap.add_argument("--n-radii", type=int, default=8)
    ap.add_argument("--n-jobs", type=int, default=1)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    print(f"# commit {commit}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"# command: python {shlex.join(sys.argv)}\n")
    rows = []
    for name in args.datasets:
        t = time.perf_counter()
        rows += run(name, args)
        print(f"# {name} done in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    frame = pd.DataFrame(rows)
    columns = ["data", "model", "radius", "fit s", "clean", "shift mean", "shift worst", "ACE mean", "failed"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        cells = [row.get(c, "") for c in columns]
        print("| " + " | ".join(("" if np.isnan(c) else f"{c:.4g}") if isinstance(c, float) else str(c)
                                for c in cells) + " |")
    print()
    print(verdict(frame))


if __name__ == "__main__":
    main()
