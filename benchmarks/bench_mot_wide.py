"""MOT-DRO fits on the sets where the plain cutting plane was not certified (issue 23): sun2025's audiology (62
categorical features) and nursery (12,960 rows), with ``benchmarks/bench_mot_shift.py``'s split, rho draw and
calibrated integer-weight metric, KL, ``theta1 = theta2 = 1``, ``exponent=1``, drokit's defaults.  Prints, per fit, the
seconds, the status, the objective and lower bound, the bound's source and the searches' rounds.

    python benchmarks/bench_mot_wide.py [--cases audiology:0.01 audiology:0.05 ...] [--search auto|slope_cuts|...]
                                        [--time-limit 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import drokit as dk  # noqa: E402
from benchmarks.bench_mot_shift import RHO_MEAN, SEED, calibrated_metric, draw_rho, load_split  # noqa: E402

CASES = ("audiology:0.01", "audiology:0.05", "audiology:0.2", "nursery:0.01", "nursery:0.05")


def fit(name: str, radius: float, search: str, time_limit: float):
    split = load_split(name, SEED)
    rho = draw_rho(split.X_train, name, RHO_MEAN, SEED)
    metric, _ = calibrated_metric(split.X_train, rho, 0, on_zero="ignore")
    options = None if search == "auto" else {"search": search}
    model = dk.DROClassifier(ambiguity=dk.OTMoment(metric, theta1=1.0, theta2=1.0, divergence="kl", radius=radius,
                                                   exponent=1), method_options=options, time_limit=time_limit)
    t0 = time.perf_counter()
    try:
        result = model.fit(split.X_train, split.y_train).result_
        status = result.status
    except dk.SolverError as exc:
        result, status = exc.result, f"not certified ({str(exc).split(';')[0][:90]})"
    seconds = time.perf_counter() - t0
    aux = result.auxiliary if result is not None else {}
    phase = aux.get("mot_phase_one", {})
    slope = aux.get("mot_slope_cuts", {})
    return (f"| {name} | {radius:g} | {seconds:.1f} | {status} | {result.objective:.9g} | {result.lower_bound:.9g} | "
            f"{aux.get('lower_bound', {}).get('source')} | {phase.get('rounds', '-')} | {slope.get('rounds', '-')} | "
            f"{sum(1 for h in result.history if 'stage' not in h)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES))
    ap.add_argument("--search", default="auto")
    ap.add_argument("--time-limit", type=float, default=600.0)
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits
    print("| data | radius | fit s | status | objective | lower bound | source | phase 1 solves | slope-cut masters "
          "| row masters |")
    print("|" + "---|" * 10)
    with threadpool_limits(1):
        for case in args.cases:
            name, radius = case.split(":")
            print(fit(name, float(radius), args.search, args.time_limit), flush=True)


if __name__ == "__main__":
    main()
