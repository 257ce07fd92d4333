"""Speed of the OT-with-moment stability criterion (blanchet2024; issue 5's goals), one run.

Parts:
  1. Synthetic logistic model (N = 10,000, d = 50, standard normal features, scikit-learn
     LogisticRegression), theta1 = theta2 = 0.4 (``OTMoment.from_budget_split(5, 0.5)``): wall time of
     ``dk.stability`` (goal < 1 s), ``dk.feature_stability`` over all 50 features (goal < 30 s) and
     ``dk.stability_curve`` over 20 thresholds (goal < 10 s); KL and chi2, logistic loss (r = nominal + 0.2)
     and 0/1 loss (r = 0.4).  Median of ``--repeats`` runs.  Certificates: primal - dual gap and
     |E_Q*[W l] - r|; the KL 0/1 value is also checked against an independent numpy/scipy 1-D maximization.
  2a. Hinge loss (LinearSVC), N in {1,000, 10,000}, d = 50, KL and chi2, r = nominal + 0.5: drokit's 1-D dual
     (``method="dual"``) vs drokit's conic cross-check (``method="conic"``: corrected Theorems 2-3, drokit's
     conic layer, Clarabel) vs a hand-written cvxpy model of the corrected Theorem 2 / 3 (spec §3.1) solved by
     Clarabel through cvxpy (time includes building the expressions and cvxpy's compilation).
  2b. The logistic model of part 1 (KL, r = nominal + 0.2): drokit's dual vs the paper's Algorithm 1 (spec
     §3.3) in numpy: Adam (lr 1e-3) ascent in h from h = 1, each outer step preceded by T_in Adam (lr 1e-3)
     steps on the samples (warm-started), stopped when h is within 1e-3 relative of drokit's h* or after
     ``--alg1-max-steps`` outer steps.  The value uses the mean (spec §3.3 note), not the paper's sum.
  3. German credit (mixed data, 1,000 rows): a DROClassifier, metric NormCost(p=2, weights 1/std) +
     MismatchCost(1.0), ``feature_stability`` with the 0/1 loss, r = 0.4, theta1 = 1, theta2 = 0.25 (paper
     §4.2): time over all 20 features and the 5 most fragile.

Run:  python benchmarks/bench_stability.py [--quick] [--markdown] [--profile]
(writes nothing; paste the output into RESULTS.md)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
import warnings

import cvxpy as cp
import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, logsumexp
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

import drokit as dk
from drokit.datasets.german import NUMERICAL
from drokit.solvers import get_backend as dk_get_backend

THETA = 0.4                     # from_budget_split(5, 0.5)
GOALS = {"stability": 1.0, "feature_stability": 30.0, "stability_curve": 10.0}


# ---------------------------------------------------------------------------------------------- output
def table(title, header, rows, markdown):
    print()
    print(f"### {title}" if markdown else f"== {title}")
    if markdown:
        print()
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
        return
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for k, r in enumerate(cells):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def timed(fn, repeats):
    """(median wall seconds, all times, last result) of ``repeats`` calls of ``fn``."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# ---------------------------------------------------------------------------------------------- data
def synthetic(N, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = (rng.random(N) < expit(3.0 * X @ w)).astype(int)
    return X, y


def labels_pm(model, y):
    return np.where(np.asarray(y) == model.classes_[1], 1.0, -1.0)


# ---------------------------------------------------------------------------------------------- part 1
def zero_one_kl_reference(model, X, y, r, theta1, theta2):
    """Independent KL 0/1 value: d*_i = (y f)_+^2 / ||w||^2, R = sup_h h r - theta2 log mean exp((h - theta1
    d*)_+ / theta2) (spec §3.2), by bounded Brent on the concave 1-D dual."""
    w = model.coef_.ravel()
    ypm = labels_pm(model, y)
    dstar = np.maximum(ypm * (X @ w + model.intercept_[0]), 0.0) ** 2 / (w @ w)

    def neg(h):
        return -(h * r - theta2 * (logsumexp(np.maximum(h - theta1 * dstar, 0.0) / theta2) - np.log(dstar.size)))
    # the slope r - E_Q[W l] is < 0 once h is large; bracket generously
    res = minimize_scalar(neg, bounds=(0.0, 50.0), method="bounded", options={"xatol": 1e-12})
    return -res.fun


def part1(args, X, y, model):
    amb_kl = dk.OTMoment.from_budget_split(5, 0.5)
    m = dk.stability(model, X, y, risk=0.0, ambiguity=amb_kl).nominal_risk
    err = dk.stability(model, X, y, risk=0.0, ambiguity=amb_kl, loss="zero_one").nominal_risk
    configs = [("kl", "logistic", None, m + 0.2, np.linspace(m, m + 0.5, 21)[1:]),
               ("kl", "zero_one", "zero_one", 0.4, np.linspace(err, err + 0.4, 21)[1:]),
               ("chi2", "logistic", None, m + 0.2, np.linspace(m, m + 0.5, 21)[1:]),
               ("chi2", "zero_one", "zero_one", 0.4, np.linspace(err, err + 0.4, 21)[1:])]
    rows, goal_rows, checks = [], [], []
    for div, lname, loss, r, grid in configs:
        amb = dk.OTMoment.from_budget_split(5, 0.5, divergence=div)
        t_s, _, res = timed(lambda: dk.stability(model, X, y, risk=r, ambiguity=amb, loss=loss), args.repeats)
        t_f, _, fs = timed(lambda: dk.feature_stability(model, X, y, risk=r, ambiguity=amb, loss=loss),
                           args.repeats)
        t_c, _, cv = timed(lambda: dk.stability_curve(model, X, y, risks=grid, ambiguity=amb, loss=loss),
                           args.repeats)
        top = fs.table.iloc[0]
        ok_feat = bool(np.all(fs.table["value"].to_numpy() >= fs.full.value - 1e-12))
        vals = cv.values
        mono = bool(np.all(np.diff(vals) >= -1e-12))
        rows.append([div, lname, f"{r:.4f}", f"{res.value:.8g}", f"{res.h:.6g}", res.iterations,
                     f"{res.gap:.1e}", f"{abs(res.attained_risk - r):.1e}",
                     f"{t_s:.3f}", f"{t_f:.2f}", f"{t_c:.2f}",
                     f"{top['feature']} ({top['value']:.4g})", "yes" if ok_feat else "NO",
                     f"{sum(x.iterations for x in cv.results)}", "yes" if mono else "NO"])
        for name, t in (("stability", t_s), ("feature_stability", t_f), ("stability_curve", t_c)):
            goal_rows.append([f"{div} / {lname}", name, f"{t:.3f}", f"< {GOALS[name]:g}",
                              "met" if t < GOALS[name] else "MISSED"])
        if lname == "zero_one" and div == "kl":
            ref = zero_one_kl_reference(model, X, y, r, THETA, THETA)
            checks.append(f"KL 0/1 value vs independent 1-D maximization: drokit {res.value:.10g}, "
                          f"reference {ref:.10g} (rel diff {rel(res.value, ref):.1e})")
    return m, err, rows, goal_rows, checks


# ---------------------------------------------------------------------------------------------- part 2a
def cvxpy_theorem(u, wsq, r, theta1, theta2, divergence, form="scaled", retries=True):
    """Hand-written corrected Theorem 2 (KL) / Theorem 3 (chi2) for the hinge loss max(u_i + t, 0) with
    u_i = 1 - y_i f(x_i): pieces (a_1 = -y w, b_1 = 1 - y b0) and (a_2 = 0, b_2 = 0), ||a_1||^2 = ||w||^2.

    ``form="scaled"``: one epigraph variable s >= h^2 shared by the n rows, and (theta2/n) sum eta_i^2 written
    as theta2 ||eta / sqrt(n)||^2.  ``form="naive"``: q cp.square(h) in every row and
    theta2 / n * cp.sum_squares(eta) -- the literal transcription, which Clarabel's defaults do not solve at
    larger N (see RESULTS.md).  Returns (R, h, wall seconds including expression building, cvxpy's
    compilation and every attempt, cvxpy compile seconds, solver seconds, attempts [(settings, status)])."""
    t0 = time.perf_counter()
    n = u.size
    q = wsq / (4.0 * theta1)
    h = cp.Variable(nonneg=True)
    t = cp.Variable()
    eta = cp.Variable(n, nonneg=True)
    cons = []
    if form == "scaled":
        s = cp.Variable()
        cons.append(cp.square(h) <= s)
        hsq = s
    else:
        hsq = cp.square(h)
    if divergence == "kl":
        p = cp.Variable(n)
        cons += [cp.constraints.ExpCone(p - t, np.full(n, theta2), eta),  # theta2 exp((p_i - t)/theta2) <= eta_i
                 q * hsq + h * u <= p,                                   # piece 1 (h b_k, not b_k)
                 p >= 0,                                                 # piece 2
                 cp.sum(eta) / n <= theta2]
        obj = -h * r + t
    else:
        alpha = cp.Variable()
        cons += [q * hsq + h * u + alpha + 2 * theta2 <= 2 * theta2 * eta,   # piece 1
                 alpha + 2 * theta2 <= 2 * theta2 * eta]                     # piece 2
        if form == "scaled":
            cons.append(theta2 * cp.sum_squares(eta / np.sqrt(n)) <= t)
        else:
            cons.append(theta2 / n * cp.sum_squares(eta) <= t)
        obj = -h * r - alpha - theta2 + t
    prob = cp.Problem(cp.Minimize(obj), cons)
    # Clarabel's defaults first; on a non-optimal end, the same retry settings drokit's conic layer uses
    # (drokit.solvers.clarabel RETRY_SETTINGS), re-solving the already compiled problem.  All attempts count.
    attempts, compile_time, solve_time = [], 0.0, 0.0
    retry = tuple(dk_get_backend("clarabel").RETRY_SETTINGS) if retries else ()
    for extra in ({},) + retry:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prob.solve(solver=cp.CLARABEL, **extra)
            status = prob.status
        except cp.error.SolverError:
            status = "solver_error"
        compile_time = compile_time or (prob.compilation_time or 0.0)
        stats = prob.solver_stats
        solve_time += (stats.solve_time or 0.0) if stats is not None and status != "solver_error" else 0.0
        attempts.append(("defaults" if not extra else ", ".join(f"{k}={v}" for k, v in extra.items()), status))
        if status == cp.OPTIMAL:
            break
    wall = time.perf_counter() - t0
    if status != cp.OPTIMAL:
        return np.nan, np.nan, wall, compile_time, solve_time, attempts
    return -prob.value, float(h.value), wall, compile_time, solve_time, attempts


def part2a(args):
    sizes = (500, 2000) if args.quick else (1000, 10000)
    rows = []
    for N in sizes:
        X, y = synthetic(N, 50, seed=1)
        svm = LinearSVC(dual=False).fit(X, y)
        w = svm.coef_.ravel()
        u = 1.0 - labels_pm(svm, y) * (X @ w + svm.intercept_[0])
        for div in ("kl", "chi2"):
            amb = dk.OTMoment.from_budget_split(5, 0.5, divergence=div)
            m = dk.stability(svm, X, y, risk=0.0, ambiguity=amb).nominal_risk
            r = m + 0.5
            t_d, _, dual = timed(lambda: dk.stability(svm, X, y, risk=r, ambiguity=amb), args.repeats)
            t_c, _, con = timed(lambda: dk.stability(svm, X, y, risk=r, ambiguity=amb, method="conic"),
                                args.repeats)
            t_x, _, cvx = timed(lambda: cvxpy_theorem(u, w @ w, r, THETA, THETA, div), args.repeats)
            R_x, h_x, _, comp_x, solve_x, attempts = cvx
            naive = cvxpy_theorem(u, w @ w, r, THETA, THETA, div, form="naive", retries=False)
            naive_s = f"{naive[5][0][1]} ({naive[2]:.2f} s)" + (
                f", rel {rel(naive[0], dual.value):.1e}" if np.isfinite(naive[0]) else "")
            tries = "; ".join(f"{a}: {st}" for a, st in attempts)
            cvx_cmp = (f"{abs(R_x - dual.value):.1e} / {rel(R_x, dual.value):.1e}" if np.isfinite(R_x)
                       else "failed")
            rows.append([N, div, f"{r:.4f}", f"{dual.value:.10g}", f"{t_d:.4f}", f"{t_c:.3f}",
                         f"{t_x:.3f} ({comp_x:.2f} + {solve_x:.2f})", f"{t_c / t_d:.0f}x", f"{t_x / t_d:.0f}x",
                         f"{abs(con.value - dual.value):.1e} / {rel(con.value, dual.value):.1e}", cvx_cmp,
                         f"{dual.h:.6g} / {con.h:.6g} / {h_x:.6g}", tries, naive_s])
    return rows


# ---------------------------------------------------------------------------------------------- part 2b
def algorithm1(X, ypm, beta, b0, r, theta1, theta2, h_star, R_star, T_in, max_steps, lr=1e-3):
    """blanchet2024 Algorithm 1 (KL) for a logistic linear model, in numpy: Adam ascent on the samples
    (T_in steps per outer step, warm-started from the previous outer step, one Adam state throughout) and
    Adam ascent on h (h0 = 1).  Stops when |h - h*| <= 1e-3 h* or after max_steps outer steps."""
    b1, b2, eps = 0.9, 0.999, 1e-8
    Z = X.copy()
    mz, vz = np.zeros_like(Z), np.zeros_like(Z)
    g = np.empty_like(Z)
    h, mh, vh = 1.0, 0.0, 0.0
    kz = 0
    first_value_hit = None
    t0 = time.perf_counter()
    G = np.nan
    for step in range(1, max_steps + 1):
        for _ in range(T_in):            # inner: z <- z + Adam(grad_z [h l(z) - theta1 ||z - x||^2])
            s = expit(-ypm * (Z @ beta + b0))
            np.subtract(Z, X, out=g)
            g *= -2.0 * theta1
            g += np.multiply.outer(-h * ypm * s, beta)
            kz += 1
            mz *= b1
            mz += (1 - b1) * g
            vz *= b2
            g *= g
            vz += (1 - b2) * g
            Z += lr * (mz / (1 - b1 ** kz)) / (np.sqrt(vz / (1 - b2 ** kz)) + eps)
        loss = np.logaddexp(0.0, -ypm * (Z @ beta + b0))
        L = h * loss - theta1 * np.sum((Z - X) ** 2, axis=1)
        lse = logsumexp(L / theta2)
        G = h * r - theta2 * (lse - np.log(L.size))      # mean form (spec §3.3 note)
        wts = np.exp(L / theta2 - lse) * L.size
        grad_h = r - np.mean(wts * loss)
        mh = b1 * mh + (1 - b1) * grad_h
        vh = b2 * vh + (1 - b2) * grad_h ** 2
        h = max(h + lr * (mh / (1 - b1 ** step)) / (np.sqrt(vh / (1 - b2 ** step)) + eps), 0.0)
        if first_value_hit is None and abs(G - R_star) <= 1e-3 * abs(R_star):
            first_value_hit = (step, time.perf_counter() - t0)
        if abs(h - h_star) <= 1e-3 * h_star:
            break
    return dict(steps=step, time=time.perf_counter() - t0, h=h, value=G, value_sum_form=G - theta2 * np.log(L.size),
                first_value_hit=first_value_hit, converged=abs(h - h_star) <= 1e-3 * h_star)


def part2b(args, X, y, model, m):
    r = m + 0.2
    amb = dk.OTMoment.from_budget_split(5, 0.5)
    t_d, _, dual = timed(lambda: dk.stability(model, X, y, risk=r, ambiguity=amb), args.repeats)
    ypm = labels_pm(model, y)
    alg = algorithm1(X, ypm, model.coef_.ravel(), model.intercept_[0], r, THETA, THETA, dual.h, dual.value,
                     args.alg1_inner, args.alg1_max_steps)
    hit = alg["first_value_hit"]
    rows = [["drokit dual (`dk.stability`)", f"{t_d:.3f}", dual.iterations, f"{dual.h:.8g}", f"{dual.value:.10g}",
             "-", "-", "1"],
            [f"Algorithm 1 (Adam lr 1e-3, T_in = {args.alg1_inner})", f"{alg['time']:.1f}",
             f"{alg['steps']}{'' if alg['converged'] else ' (cap)'}", f"{alg['h']:.8g}", f"{alg['value']:.10g}",
             f"{abs(alg['value'] - dual.value):.1e} / {rel(alg['value'], dual.value):.1e}",
             "-" if hit is None else f"step {hit[0]}, {hit[1]:.1f} s", f"{alg['time'] / t_d:.0f}x"]]
    note = (f"value with the paper's log-sum (not log-mean) at the same point: {alg['value_sum_form']:.6g} "
            f"(off by theta2 log N = {THETA * np.log(X.shape[0]):.4f}); time per outer step "
            f"{alg['time'] / alg['steps'] * 1e3:.1f} ms")
    return r, rows, note


# ---------------------------------------------------------------------------------------------- part 3
def part3(args):
    X, y = dk.datasets.load_german_credit()
    std = X[NUMERICAL].std()
    weights = {c: 1.0 / float(std[c]) for c in NUMERICAL}
    fit_metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=weights), categorical=dk.MismatchCost(),
                                 label=dk.LabelCost(kappa=np.inf))
    t0 = time.perf_counter()
    clf = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(fit_metric, radius=0.05)).fit(X, y)
    t_fit = time.perf_counter() - t0
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=weights), categorical=dk.MismatchCost(weights=1.0))
    amb = dk.OTMoment(metric=metric, theta1=1.0, theta2=0.25)
    t_f, _, fs = timed(lambda: dk.feature_stability(clf, X, y, risk=0.4, ambiguity=amb, loss="zero_one"),
                       args.repeats)
    tab = fs.table
    rows = [[i + 1, row.feature, row.kind, f"{row.value:.6g}", f"{row.h:.4g}", f"{row.corruption:.4f}",
             f"{row.reweighting:.4f}"] for i, row in enumerate(tab.head(5).itertuples())]
    vals = tab["value"].to_numpy()
    tied = int(np.sum(np.isclose(vals, vals[-1], rtol=1e-9)))
    err = fs.full.nominal_risk
    info = (f"DROClassifier fit (Wasserstein, l1 metric weights 1/std, radius 0.05, {clf.result_.method}): "
            f"{t_fit:.2f} s; training error {err:.3f}; feature_stability over 20 features (+ the full "
            f"criterion): {t_f:.3f} s (median of {args.repeats}); full R = {fs.full.value:.6g} "
            f"(h = {fs.full.h:.4g}); {tied} of 20 features share the largest R_j = {vals[-1]:.6g}; statuses "
            f"{sorted(set(tab['status']))}")
    return rows, info, t_f


# ---------------------------------------------------------------------------------------------- profile
def profile(X, y, model, r, top=12):
    amb = dk.OTMoment.from_budget_split(5, 0.5)
    pr = cProfile.Profile()
    pr.enable()
    dk.stability(model, X, y, risk=r, ambiguity=amb)
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="smaller instances (a smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats (median reported; default 3)")
    ap.add_argument("--alg1-inner", type=int, default=5, help="Algorithm 1 inner Adam steps T_in (default 5)")
    ap.add_argument("--alg1-max-steps", type=int, default=None,
                    help="Algorithm 1 outer-step cap (default 5000; 1000 with --quick)")
    ap.add_argument("--profile", action="store_true", help="cProfile one dk.stability call (part 1, KL logistic)")
    args = ap.parse_args()
    if args.alg1_max_steps is None:
        args.alg1_max_steps = 1000 if args.quick else 5000
    warnings.filterwarnings("ignore", category=FutureWarning)
    N, d = (2000, 50) if args.quick else (10000, 50)
    t_all = time.perf_counter()
    import clarabel
    print(f"drokit stability benchmark: numpy {np.__version__}, cvxpy {cp.__version__}, clarabel "
          f"{clarabel.__version__}; theta1 = theta2 = {THETA} unless stated; median of {args.repeats} runs "
          f"unless stated")

    X, y = synthetic(N, d, seed=0)
    model = LogisticRegression().fit(X, y)
    m, err, rows, goal_rows, checks = part1(args, X, y, model)
    table(f"1. Logistic model, N = {N:,}, d = {d}: logistic risk {m:.4f}, error rate {err:.4f}",
          ["div", "loss", "r", "R", "h*", "iters", "gap", "abs(E[Wl]-r)", "stability s", "feature_stab. s (50)",
           "curve s (20 r)", "most fragile (R_j)", "R_j >= R", "curve iters", "curve monotone"], rows,
          args.markdown)
    table("1. Goals (issue 5)", ["case", "call", "seconds", "goal", "status"], goal_rows, args.markdown)
    for c in checks:
        print(("- " if args.markdown else "  ") + c)

    rows = part2a(args)
    table("2a. Hinge (LinearSVC), d = 50, r = nominal + 0.5: dual vs conic vs hand-written cvxpy",
          ["N", "div", "r", "R (dual)", "dual s", "conic s", "cvxpy s (compile + solve)", "conic / dual",
           "cvxpy / dual", "conic vs dual abs / rel", "cvxpy vs dual abs / rel", "h*: dual / conic / cvxpy",
           "cvxpy Clarabel attempts (last run)", "naive cvxpy form, Clarabel defaults"],
          rows, args.markdown)

    r, rows, note = part2b(args, X, y, model, m)
    table(f"2b. Logistic, N = {N:,}, d = {d}, KL, r = {r:.4f}: dual vs the paper's Algorithm 1 (one run)",
          ["method", "seconds", "iterations / outer steps", "h", "value", "value gap abs / rel",
           "value within 1e-3 rel first at", "time / dual"], rows, args.markdown)
    print(("- " if args.markdown else "  ") + note)

    rows, info, _ = part3(args)
    table("3. German credit, 0/1 loss, r = 0.4, theta1 = 1, theta2 = 0.25: the 5 most fragile features",
          ["rank", "feature", "kind", "R_j", "h*", "corruption", "reweighting"], rows, args.markdown)
    print(("- " if args.markdown else "  ") + info)

    if args.profile:
        print()
        print("cProfile of one dk.stability call (part 1, KL, logistic), top by own time:")
        print("```" if args.markdown else "")
        print(profile(X, y, model, m + 0.2).strip())
        print("```" if args.markdown else "")
    print()
    print(f"total wall time {time.perf_counter() - t_all:.1f} s")


if __name__ == "__main__":
    main()
