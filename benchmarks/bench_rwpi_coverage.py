"""Coverage of the RWPI radius (issue 24, item 3; spec/rwpi-radius.md §7): the long version of tests/test_rwpi.py.

For many independent samples of a model with a KNOWN ``beta*``, the exact profile ``R_N(beta*)`` of each sample (the
independent reference tests/reference/rwpi_profile.py) is compared with the RWPI radius of the same sample; the
fraction of samples with ``R_N(beta*) <= radius`` estimates the coverage the law promises (``alpha``).  The radius is
computed twice: with the plug-in ERM ``beta_hat`` (what ``dk.DROClassifierCV(criterion="rwpi")`` does) and at the true
``beta*`` (the law alone, without the plug-in error).  Three experiments:

* ``finite``: the reference's mixed model (x immutable, two categorical features, label flips at cost 1), ``R_N`` by
  the transport LP over every configuration;
* ``numerical``: one numerical feature, ``beta* = (0.3, 1.0)``, labels fixed, cost ``|x - x'|``, ``R_N`` by the
  transport LP over a grid of 301 steps per sample (an upper bound; steps to 12, geometric down to 1e-3; N = 100, 300);
* ``no_signal``: two numerical features, ``y`` independent of ``x``, no intercept, ``beta* = 0``, l2 cost, labels fixed:
  ``R_N(0) = ||E_N[y x]||_2`` in closed form (note §5).

Each line: experiment, N, samples, coverage at alpha = 0.5 / 0.8 / 0.9 / 0.95 (plug-in, then at beta*), and the
binomial standard deviation at 0.9.  Single process (about 25 minutes on one core with the defaults).

    python benchmarks/bench_rwpi_coverage.py [--samples 200] [--draws 400] [--experiments finite numerical no_signal]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import drokit as dk  # noqa: E402
from drokit.model_selection.rwpi import rwpi_radius  # noqa: E402
from reference.rwpi_profile import BETA_STAR, numerical_profile, one_feature_profile, profile, sample  # noqa: E402

ALPHAS = np.array([0.5, 0.8, 0.9, 0.95])
STEPS = np.r_[-np.geomspace(12, 1e-3, 150), 0.0, np.geomspace(1e-3, 12, 150)]
FINITE = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=np.inf), label=dk.LabelCost(kappa=1.0))
ONE = dk.GroundMetric(numerical=dk.NormCost(p=1))
L2 = dk.GroundMetric(numerical=dk.NormCost(p=2))


def finite(rng, N):
    X, y = sample(rng, N)
    return X, y, profile(X, y), dict(metric=FINITE), BETA_STAR


def numerical(rng, N):
    beta = np.array([0.3, 1.0])
    x = rng.normal(size=N)
    y = np.where(rng.random(N) < expit(beta[0] + beta[1] * x), 1, -1)
    return x[:, None], y, one_feature_profile(x, y, beta, STEPS), dict(metric=ONE), beta


def no_signal(rng, N):
    X, y = rng.normal(size=(N, 2)), rng.choice([-1, 1], N)
    return X, y, numerical_profile(X, y, p=2), dict(metric=L2, fit_intercept=False), np.zeros(2)


EXPERIMENTS = {"finite": (finite, (100, 400)), "numerical": (numerical, (100, 300)),
               "no_signal": (no_signal, (200, 800))}


def coverage(make, N, samples, draws, seed):
    rng = np.random.default_rng(seed)
    hits = np.zeros((2, ALPHAS.size))
    for run in range(samples):
        X, y, exact, options, beta_star = make(rng, N)
        for row, beta in enumerate((None, beta_star)):
            _, result = rwpi_radius("logistic", X, y, n_draws=draws, seed=run, beta=beta, **options)
            hits[row] += exact <= np.quantile(result.draws, ALPHAS, method="inverted_cdf") / math.sqrt(N)
    return hits / samples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS), choices=list(EXPERIMENTS))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"| experiment | N | samples | plug-in beta_hat: 0.5 / 0.8 / 0.9 / 0.95 | at beta*: 0.5 / 0.8 / 0.9 / 0.95 | "
          f"sd at 0.9 | time |")
    print("|---|---|---|---|---|---|---|")
    for name in args.experiments:
        make, sizes = EXPERIMENTS[name]
        for N in sizes:
            t0 = time.perf_counter()
            cov = coverage(make, N, args.samples, args.draws, seed=N)
            fmt = lambda row: " / ".join(f"{c:.3f}" for c in row)  # noqa: E731
            print(f"| {name} | {N} | {args.samples} | {fmt(cov[0])} | {fmt(cov[1])} | "
                  f"{math.sqrt(0.09 / args.samples):.3f} | {time.perf_counter() - t0:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
