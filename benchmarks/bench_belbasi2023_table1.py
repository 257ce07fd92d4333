"""belbasi2023 Table 1: cutting plane vs monolithic (vs the exact box LP), next to the paper.

Setup (note ../shared/spec/belbasi2023-selvi2022-mixed-features.md, section A8.1):
  * synthetic instances, no numerical features, K in {5, 10, 15} binary categorical features (0/1
    coded, reference level 0), N in {100, 500, 1000};
  * ground metric (kappa_z, kappa_y, p) = (1, sqrt(K), 1): unit mismatch cost per feature, p = 1 (the
    cost is the mismatch count), label cost sqrt(K) 1[y != y'] (classification) or sqrt(K) |y - y'|
    (regression); the paper prints "sqrt(m)" with m undefined -- we read m = K (stated assumption);
  * radius eps = 1e-2;
  * the paper's 6 losses: LR = logistic, SVM = hinge, SSVM = smooth_hinge, RR = huber (delta = 0.05),
    QR = pinball (tau = 0.5), SVR = epsilon_insensitive (tau = 1e-2).  "absolute" can be added (it is
    not in the paper; no published numbers).

Assumptions (the paper's generator is only "see GitHub"):
  * z^n uniform on {0,1}^K; (beta_0, beta_z) i.i.d. N(0,1), normalized to unit l2 norm (selvi2022
    Algorithm 3); classification: y^n = +1 with probability 1 / (1 + exp(-(beta_0 + beta_z^T z^n))),
    else -1; regression: y^n = beta_0 + beta_z^T z^n + 0.1 * N(0,1).  The classification and the
    regression losses of one (K, N, seed) cell share z and beta.
  * one instance per seed (the paper: 100 instances per cell, mean +- std); we print mean +- std over
    --seeds instances.
  * timed: compile + solve as the user sees it (wall clock), *minus* drokit's independent certificate
    (the exact worst-case risk of the returned model, FitResult.evaluation_time), which is a check the
    paper does not perform.  The certificate time of the cutting plane is printed separately ("cert").
    A warm-up solve runs first so that imports and first-call costs are not timed.
  * solver: Clarabel (drokit's default) in one process on whatever cores the machine has, against the
    paper's MOSEK 10 single-threaded on a 2.66 GHz Xeon: compare the *ratios*, not the seconds.
  * the monolithic program enumerates all N * 2^K configurations (times 2 for the label flips of the
    classification losses).  A per-solve timeout is not possible in process, so it is skipped by size:
    when N * 2^K > --max-mono-rows (default 2e6; K = 15 and N >= 100 is always skipped), printed as
    "skip". The paper's own monolithic runs hit a 1 h / 96 GB limit there ("NaN" in the paper).
  * "box" is drokit's exact polynomial LP for piecewise-affine losses with p = 1 (hinge, pinball,
    epsilon_insensitive, absolute); "n/a" for the others.
  * agreement: |cp - mono| / max(1, |mono|) and |box - cp| / max(1, |cp|) of the optimal values (the
    cutting plane's value is its certified upper bound); max over the seeds.  Both should be ~1e-6.
  * solves that return an inaccurate optimum are accepted (on_inaccurate="warn") and flagged in the
    status column; failures are printed as "err" with the message after the row.

Run: python benchmarks/bench_belbasi2023_table1.py [--K 5 10 15] [--N 100 500 1000]
         [--losses logistic hinge ...] [--seeds 3] [--radius 0.01] [--max-mono-rows 2e6]
Quick: python benchmarks/bench_belbasi2023_table1.py --K 5 --N 100        (well under a minute)
--verbose prints one line per solve as it finishes (useful for the long monolithic solves).
The default full run is long -- several hours, dominated by the monolithic logistic and smooth-hinge
programs at K = 10: one logistic monolithic solve at N = 100, K = 10 (204,800 configuration rows, 1.2
million program rows) took 300 s (Clarabel: optimal_inaccurate) against 0.08 s for the cutting plane, and
the N = 500 / 1000 programs are 5x / 10x larger (several GB of memory).  Lower --max-mono-rows (e.g. 2e5)
or --seeds for a shorter run.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import drokit as dk

# name -> (paper label, loss factory); the paper's parameters (note A8.1)
LOSSES = {
    "logistic": ("LR", lambda: dk.losses.Logistic()),
    "hinge": ("SVM", lambda: dk.losses.Hinge()),
    "smooth_hinge": ("SSVM", lambda: dk.losses.SmoothHinge()),
    "huber": ("RR", lambda: dk.losses.Huber(delta=0.05)),
    "pinball": ("QR", lambda: dk.losses.Pinball(tau=0.5)),
    "epsilon_insensitive": ("SVR", lambda: dk.losses.EpsilonInsensitive(tau=1e-2)),
    "absolute": ("-", lambda: dk.losses.Absolute()),
}
PAPER_LOSSES = ["logistic", "hinge", "smooth_hinge", "huber", "pinball", "epsilon_insensitive"]
CLASSIFICATION = {"logistic", "hinge", "smooth_hinge"}
BOX_LOSSES = {"hinge", "pinball", "epsilon_insensitive", "absolute"}

# belbasi2023 Table 1 [verbatim], MOSEK 10, one thread: label -> {(N, K): (mean, std)}; None = "NaN"
# (no instance solved within 1 h / the memory limit)
_NK = [(100, 5), (100, 10), (100, 15), (500, 5), (500, 10), (500, 15), (1000, 5), (1000, 10), (1000, 15)]


def _row(*cells):
    return {nk: c for nk, c in zip(_NK, cells)}


PUBLISHED = {
    "LR-cut": _row((0.03, 0.02), (0.05, 0.03), (0.09, 0.05), (0.14, 0.06), (0.28, 0.16), (0.33, 0.22),
                   (0.33, 0.15), (0.46, 0.29), (0.79, 0.49)),
    "LR-mono": _row((0.72, 0.07), (52.37, 6.24), None, (4.12, 0.26), (403.09, 36.52), None,
                    (9.06, 0.77), (878.53, 88.65), None),
    "SVM-cut": _row((0.01, 0.00), (0.01, 0.00), (0.01, 0.01), (0.02, 0.01), (0.03, 0.02), (0.05, 0.04),
                    (0.04, 0.02), (0.06, 0.04), (0.11, 0.07)),
    "SVM-mono": _row((0.03, 0.00), (2.18, 0.19), (121.12, 13.51), (0.18, 0.01), (18.22, 7.23), None,
                     (0.40, 0.03), (39.33, 11.43), None),
    "SSVM-cut": _row((0.02, 0.01), (0.04, 0.02), (0.05, 0.02), (0.10, 0.05), (0.16, 0.09), (0.20, 0.13),
                     (0.20, 0.10), (0.25, 0.13), (0.54, 0.36)),
    "SSVM-mono": _row((0.43, 0.03), (35.79, 4.12), (2285.08, 300.93), (2.43, 0.17), (234.56, 41.39), None,
                      (5.02, 0.56), (475.32, 107.11), None),
    "RR-cut": _row((0.03, 0.01), (0.06, 0.01), (0.09, 0.02), (0.17, 0.04), (0.29, 0.04), (0.38, 0.04),
                   (0.31, 0.09), (0.63, 0.08), (0.80, 0.17)),
    "RR-mono": _row((0.25, 0.02), (19.32, 1.46), None, (1.37, 0.08), (124.39, 10.47), None,
                    (3.03, 0.15), (287.97, 36.43), None),
    "QR-cut": _row((0.01, 0.00), (0.01, 0.00), (0.02, 0.00), (0.03, 0.01), (0.06, 0.02), (0.09, 0.00),
                   (0.05, 0.01), (0.14, 0.03), (0.20, 0.01)),
    "QR-mono": _row((0.03, 0.00), (2.05, 0.31), (194.16, 56.89), (0.16, 0.01), (13.08, 2.60), None,
                    (0.37, 0.03), (36.20, 10.65), None),
    "SVR-cut": _row((0.01, 0.00), (0.02, 0.00), (0.03, 0.00), (0.03, 0.01), (0.07, 0.02), (0.10, 0.01),
                    (0.06, 0.01), (0.15, 0.03), (0.22, 0.01)),
    "SVR-mono": _row((0.04, 0.00), (2.67, 0.45), (204.66, 54.99), (0.18, 0.01), (15.28, 2.57), None,
                     (0.43, 0.04), (40.09, 8.03), None),
}


def instance(K: int, N: int, seed: int):
    """Binary z uniform on {0,1}^K; labels from a unit-norm linear model (see the module docstring)."""
    rng = np.random.default_rng([seed, K, N])
    beta = rng.normal(size=K + 1)
    beta /= np.linalg.norm(beta)
    Z = rng.integers(0, 2, size=(N, K))
    f = beta[0] + Z @ beta[1:]
    y_cls = np.where(rng.random(N) < 1 / (1 + np.exp(-f)), 1.0, -1.0)
    y_reg = f + 0.1 * rng.normal(size=N)
    return Z, y_cls, y_reg


def solve(loss_name, Z, y, K, radius, method, max_configurations, verbose=False):
    """(objective, algorithm seconds, certificate seconds, rounds, status) of one compile + solve."""
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(weights=None, p=1),
                             label=dk.LabelCost(kappa=float(np.sqrt(K))))
    prob = dk.Problem(LOSSES[loss_name][1](), dk.Wasserstein(metric, radius))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = prob.compile(Z, y, method=method, categorical_features=list(range(K)),
                           categories=[[0, 1]] * K,
                           max_configurations=max_configurations).solve(on_inaccurate="warn")
    wall = time.perf_counter() - t0
    if verbose:
        print(f"      {loss_name} N={len(y)} K={K} {method}: {wall - res.evaluation_time:.3f} s "
              f"(+ certificate {res.evaluation_time:.3f} s), objective {res.objective:.9f}, "
              f"{res.status}, {len(res.history)} rounds, {res.n_configuration_rows:,} of {res.n_enumeration_rows:,} configuration rows in the program, "
              f"{res.n_constraints:,} program rows", flush=True)
    return res.objective, wall - res.evaluation_time, res.evaluation_time, len(res.history), res.status


def fmt_time(values):
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f}±{np.std(values):.3f}"


def fmt_paper(cell):
    return "NaN" if cell is None else f"{cell[0]:.2f}±{cell[1]:.2f}"


def published(label, kind, N, K):
    table = PUBLISHED.get(f"{label}-{kind}", {})
    return fmt_paper(table[(N, K)]) if (N, K) in table else "-"


def run_cell(loss, cells, N, K, args):
    """Solve every instance of one (N, K, loss) cell with each method; print one table row."""
    mono_rows = N * 2 ** K
    do_mono = mono_rows <= args.max_mono_rows
    max_conf = 2 * mono_rows  # configuration rows incl. label flips: drokit's size limit
    methods = ["cutting_plane"] + (["monolithic"] if do_mono else []) + (["box"] if loss in BOX_LOSSES else [])
    times = {m: [] for m in methods}
    t_cert, rounds, agree_m, agree_b, statuses, errors = [], [], [], [], set(), []
    for Z, y_cls, y_reg in cells:
        y = y_cls if loss in CLASSIFICATION else y_reg
        obj = {}
        for m in methods:
            try:
                obj[m], t, tc, r, st = solve(loss, Z, y, K, args.radius, m, max_conf, args.verbose)
            except (dk.DrokitError, MemoryError) as exc:
                errors.append(f"{m}: {type(exc).__name__}: {exc}")
                continue
            times[m].append(t)
            statuses.add(f"{m}:{st}")
            if m == "cutting_plane":
                t_cert.append(tc), rounds.append(r)
        if "cutting_plane" in obj and "monolithic" in obj:
            agree_m.append(abs(obj["cutting_plane"] - obj["monolithic"]) / max(1.0, abs(obj["monolithic"])))
        if "cutting_plane" in obj and "box" in obj:
            agree_b.append(abs(obj["box"] - obj["cutting_plane"]) / max(1.0, abs(obj["cutting_plane"])))

    def col(m):
        if m not in times:
            return "skip (size)" if m == "monolithic" else "n/a"
        done = len(times[m])
        if done == 0:
            return f"err {len(cells)}/{len(cells)}"
        return fmt_time(times[m]) + ("*" if done < len(cells) else "")

    label = LOSSES[loss][0]
    bad = sorted(s for s in statuses if not s.endswith(":optimal"))
    print(f"{N:>5} {K:>3} {loss + ' (' + label + ')':<25} {col('cutting_plane'):>13} "
          f"{(np.mean(rounds) if rounds else float('nan')):>6.1f} "
          f"{(f'{np.mean(t_cert):.3f}' if t_cert else '-'):>7} {col('monolithic'):>15} {col('box'):>13} "
          f"{(f'{max(agree_m):.1e}' if agree_m else '-'):>9} {(f'{max(agree_b):.1e}' if agree_b else '-'):>9} "
          f"{published(label, 'cut', N, K):>11} {published(label, 'mono', N, K):>14}  "
          f"{'ok' if not bad else ','.join(bad)}", flush=True)
    for e in errors:
        print(f"      ! {e}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, nargs="+", default=[5, 10, 15], help="numbers of binary features")
    ap.add_argument("--N", type=int, nargs="+", default=[100, 500, 1000], help="sample sizes")
    ap.add_argument("--losses", nargs="+", default=PAPER_LOSSES, choices=list(LOSSES))
    ap.add_argument("--seeds", type=int, default=3, help="instances per cell (seeds 0..n-1; paper: 100)")
    ap.add_argument("--radius", type=float, default=1e-2, help="Wasserstein radius (paper: 1e-2)")
    ap.add_argument("--max-mono-rows", type=float, default=2e6,
                    help="skip the monolithic program when N * 2^K exceeds this (default 2e6)")
    ap.add_argument("--verbose", action="store_true", help="one line per solve as it finishes")
    args = ap.parse_args()

    # warm-up: imports, first solver call, first oracle call (not timed)
    Zw, yw, _ = instance(3, 20, 12345)
    for m in ("cutting_plane", "monolithic", "box"):
        solve("hinge", Zw, yw, 3, args.radius, m, 1_000_000)

    print(f"belbasi2023 Table 1 setup: binary features, (kappa_z, kappa_y, p) = (1, sqrt(K), 1), "
          f"radius {args.radius:g}, {args.seeds} instance(s) per cell, Clarabel; seconds = compile + "
          f"solve (mean±std), certificate excluded; monolithic skipped when N*2^K > {args.max_mono_rows:g}")
    head = (f"{'N':>5} {'K':>3} {'loss':<25} {'cut s':>13} {'rounds':>6} {'cert s':>7} {'mono s':>15} "
            f"{'box s':>13} {'|cp-mono|':>9} {'|box-cp|':>9} {'paper cut':>11} {'paper mono':>14}  status")
    print(head)
    print("-" * len(head))
    for N in args.N:
        for K in args.K:
            cells = [instance(K, N, s) for s in range(args.seeds)]
            for loss in args.losses:
                run_cell(loss, cells, N, K, args)


if __name__ == "__main__":
    main()
