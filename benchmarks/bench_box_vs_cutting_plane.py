"""Box LP vs cutting plane: what ``auto`` should take for piecewise-affine losses with ``p = 1``.

Run:  python benchmarks/bench_box_vs_cutting_plane.py

``method="box"`` against ``method="cutting_plane"``, hinge loss, unit weights, ``kappa = inf``, radius 0.1, drokit's
defaults otherwise (an uncertified fit raises), on the sun2025 datasets shipped with drokit; one fit each after an
untimed warm-up of both methods, seconds of ``fit`` with its certificate.  Prints a markdown table with what ``auto``
picks, both times, their ratio, the objectives' relative difference and the lower bound's source (``lagrangian``: an
explicit dual point; ``method``: the solver's dual objective).  Results: benchmarks/RESULTS.md, "Box LP vs cutting
plane".
"""

import time

import drokit as dk
from drokit.methods import box_auto_rows

NAMES = ["hepatitis", "spect", "breast-cancer", "voting", "tic-tac-toe", "audiology", "cylinder-bands",
         "credit-approval", "car", "nursery"]


def main() -> None:
    print("| dataset | N | box rows | auto picks | cutting plane s | box s | box / cutting plane | objectives rel. diff "
          "| lower bound (cp / box) |")
    print("|---|---|---|---|---|---|---|---|---|")
    X0, y0 = dk.datasets.load("hepatitis", standardize=True)
    for method in ("cutting_plane", "box"):
        dk.DROClassifier(loss="hinge", ambiguity=dk.Wasserstein(dk.GroundMetric(), radius=0.1),
                         method=method).fit(X0, y0.to_numpy())
    for name in NAMES:
        X, y = dk.datasets.load(name, standardize=True)
        y = y.to_numpy()
        amb = dk.Wasserstein(dk.GroundMetric(), radius=0.1)
        rows = box_auto_rows(dk.Problem("hinge", amb).bind(X, y))
        res = {}
        for method in ("cutting_plane", "box"):
            t0 = time.perf_counter()
            clf = dk.DROClassifier(loss="hinge", ambiguity=amb, method=method).fit(X, y)
            res[method] = (time.perf_counter() - t0, clf.result_)
        auto = dk.DROClassifier(loss="hinge", ambiguity=amb).fit(X, y).result_.method
        (tc, rc), (tb, rb) = res["cutting_plane"], res["box"]
        diff = abs(rc.objective - rb.objective) / max(abs(rb.objective), 1e-2)
        source = "/".join(r.auxiliary.get("lower_bound", {}).get("source", "?") for r in (rc, rb))
        print(f"| {name} | {len(y):,} | {rows:,} | {auto} | {tc:.2f} | {tb:.2f} | {tb / tc:.2f}x | {diff:.1e} | "
              f"{source} |", flush=True)


if __name__ == "__main__":
    main()
