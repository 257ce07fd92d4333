"""The structured barrier solver of the closed-form logistic model (drokit/solvers/barrier.py).

Independent checks: the conic program solved by Clarabel (a different formulation: two exponential cones
per term), the exact worst-case evaluation of the returned model (HiGHS LP / DP oracle, independent of
both solvers), a closed form at large radii (beta = 0 and the intercept at the log-odds), and invariances
(feature scaling against the metric's weights, duplicated rows against sample weights).  The certificate
must be a real bound: it is checked against the value of other models, not against itself.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import drokit as dk
from drokit.evaluation.worst_case import certified_upper_bound
from drokit.exceptions import ParameterError, SolverError
from drokit.solvers import barrier
from drokit.solvers.barrier import ineligibility, solve_closed_form_logistic
from drokit.solvers.barrier_dual import CertifiedProblem


def logistic_data(n=200, d=5, seed=0, scale=1.0, kind="logit"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    f = X @ rng.normal(size=d) / scale
    if kind == "separable":
        y = np.where(f > 0, 1, -1)
    elif kind == "imbalanced":
        y = np.where(rng.random(n) < 0.08, 1, -1)
    else:
        y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-2.0 * f - 0.3)), 1, -1)
    y[:2] = [1, -1]
    return X, y


def compiled(X, y, *, p=2, kappa=np.inf, eps=0.05, weights=None, sample_weight=None, fit_intercept=True):
    metric = dk.GroundMetric(numerical=dk.NormCost(p=p, weights=weights), label=dk.LabelCost(kappa))
    return dk.Problem("logistic", dk.Wasserstein(metric, eps), fit_intercept=fit_intercept).compile(
        X, y, sample_weight=sample_weight)


CASES = [  # (p, kappa, eps, weights?, sample weights?, intercept?, data kind, feature scale)
    (2, np.inf, 0.05, False, False, True, "logit", 1.0),
    (1, np.inf, 0.05, True, False, True, "logit", 1.0),
    (np.inf, np.inf, 0.02, False, True, True, "logit", 1.0),
    (2, 1.0, 0.05, True, False, True, "logit", 1.0),
    (1, 0.5, 0.1, False, True, False, "logit", 1.0),
    (np.inf, 2.0, 0.02, True, True, True, "logit", 1.0),
    (2, 0.3, 0.5, False, False, True, "logit", 1.0),
    (2, np.inf, 1e-3, False, False, True, "separable", 1.0),
    (1, 1.0, 0.01, True, False, True, "separable", 100.0),
    (2, 0.1, 1e-3, False, False, True, "imbalanced", 100.0),
    (np.inf, 10.0, 0.3, False, False, True, "imbalanced", 0.01),
]


@pytest.mark.parametrize("p, kappa, eps, weighted_metric, weighted_samples, intercept, kind, scale", CASES)
def test_barrier_matches_the_conic_program_and_certifies(p, kappa, eps, weighted_metric, weighted_samples,
                                                         intercept, kind, scale):
    X, y = logistic_data(kind=kind, scale=scale, seed=len(kind) + int(10 * eps))
    rng = np.random.default_rng(7)
    cp = compiled(X, y, p=p, kappa=kappa, eps=eps * (scale if kind != "logit" else 1.0),
                  weights=rng.uniform(0.3, 3.0, X.shape[1]) if weighted_metric else None,
                  sample_weight=rng.random(X.shape[0]) + 0.1 if weighted_samples else None,
                  fit_intercept=intercept)
    conic = cp.solve(solver="clarabel", on_inaccurate="warn")
    out = cp.solve(solver="barrier")
    assert out.solver == "barrier" and out.status == "optimal"
    assert out.relative_gap <= 1e-6
    # the same optimum as the other formulation, both evaluated exactly and independently of either solver
    assert out.upper_bound == pytest.approx(conic.upper_bound, rel=1e-6, abs=1e-7)
    # the dual bound is a bound: below the exact worst-case risk of the conic solver's model (up to the
    # evaluation LP's 1e-9 tolerance) ...
    assert out.lower_bound <= conic.upper_bound + 1e-8
    # ... and the barrier's own value is that of a feasible point: at least the exact worst case of its model
    assert out.objective >= out.upper_bound - 1e-8


def test_dual_bound_is_below_the_risk_of_other_models():
    """Weak duality, checked against models the solver never saw."""
    X, y = logistic_data(n=150, d=4, seed=3)
    cp = compiled(X, y, p=1, kappa=1.0, eps=0.1)
    res = cp.solve(solver="barrier")
    rng = np.random.default_rng(0)
    for _ in range(20):
        coef = res.coef + rng.normal(scale=0.3, size=res.coef.size)
        value = certified_upper_bound(cp.evaluation_instance, res.intercept + rng.normal(scale=0.3), coef)
        assert res.lower_bound <= value + 1e-9
    assert res.upper_bound - res.lower_bound <= 1e-8 * max(1.0, res.upper_bound)


@pytest.mark.parametrize("kappa", [np.inf, 5.0])
def test_large_radius_closed_form_is_the_constant_model(kappa):
    """Above the threshold radius beta = 0 is optimal (for kappa = inf: when eps >= ||grad_beta||_*); the
    intercept is the log-odds of the class proportion and the value its binary entropy."""
    X, y = logistic_data(n=300, d=3, seed=5)
    share = np.mean(y > 0)
    res = compiled(X, y, p=2, kappa=kappa, eps=50.0).solve(solver="barrier")
    assert np.abs(res.coef).max() <= 1e-6
    if np.isinf(kappa):
        entropy = -(share * np.log(share) + (1 - share) * np.log(1 - share))
        assert res.intercept == pytest.approx(np.log(share / (1 - share)), abs=1e-5)
        assert res.objective == pytest.approx(entropy, abs=1e-8)
        assert res.lower_bound == pytest.approx(entropy, abs=1e-8)
    else:  # the adversary flips labels at cost 5 with budget 50: the ball holds the 50/50 mixture, value log 2
        assert res.objective == pytest.approx(np.log(2.0), abs=1e-8)


def test_metric_weights_and_feature_scale_are_interchangeable():
    """Scaling feature j by c and its weight gamma_j by 1/c leaves the problem unchanged (beta_j scales by
    1/c); the solver works in the scaled coordinates, so the values agree to the tolerance."""
    X, y = logistic_data(n=200, d=4, seed=9)
    c = np.array([1e-2, 1.0, 10.0, 300.0])
    a = compiled(X, y, p=2, kappa=1.0, eps=0.05).solve(solver="barrier")
    b = compiled(X * c, y, p=2, kappa=1.0, eps=0.05, weights=1.0 / c).solve(solver="barrier")
    assert b.objective == pytest.approx(a.objective, abs=1e-8)
    np.testing.assert_allclose(b.coef * c, a.coef, atol=1e-5)


def test_duplicated_rows_equal_sample_weights():
    X, y = logistic_data(n=80, d=3, seed=4)
    reps = np.random.default_rng(1).integers(1, 4, size=80)
    a = compiled(np.repeat(X, reps, axis=0), np.repeat(y, reps), p=1, kappa=2.0, eps=0.05).solve(solver="barrier")
    b = compiled(X, y, p=1, kappa=2.0, eps=0.05, sample_weight=reps.astype(float)).solve(solver="barrier")
    assert b.objective == pytest.approx(a.objective, abs=1e-8)
    np.testing.assert_allclose(b.coef, a.coef, atol=1e-5)


def test_every_sample_at_the_kink():
    """d >= N with a finite kappa: the optimum puts every margin at kappa lambda, where the barrier cannot
    resolve the flip multipliers (all equal eps / kappa); the polished multipliers still close the gap."""
    X, y = logistic_data(n=20, d=20, seed=2, scale=100.0, kind="imbalanced")
    cp = compiled(X, y, p=2, kappa=0.1, eps=3.5e-4)
    res = cp.solve(solver="barrier")
    assert res.relative_gap <= 1e-6
    conic = cp.solve(solver="clarabel", on_inaccurate="warn")
    assert res.upper_bound == pytest.approx(conic.upper_bound, abs=1e-7)


def test_zero_weight_feature_has_a_zero_coefficient():
    """gamma_j = 0: moving feature j is free, so beta_j = 0 (the conic program's zero row)."""
    X, y = logistic_data(n=120, d=3, seed=6)
    cp = compiled(X, y, p=2, eps=0.05, weights=[1.0, 0.0, 2.0])
    res = cp.solve(solver="barrier")
    assert res.coef[1] == 0.0
    assert res.upper_bound == pytest.approx(cp.solve(solver="clarabel").upper_bound, abs=1e-7)


# ------------------------------------------------------------------------------------------ selection
def test_auto_uses_the_barrier_and_does_not_build_the_conic_program():
    X, y = logistic_data()
    cp = compiled(X, y)
    res = cp.solve()
    assert res.solver == "barrier" and res.status == "optimal"
    assert not cp.compiled.is_built                 # the exponential-cone program was never assembled
    problem, _ = cp.to_cvxpy()                      # ... and is built on demand
    assert cp.compiled.is_built and problem.variables()


def test_estimator_default_is_barrier_and_predicts_like_clarabel():
    X, y = logistic_data(n=300, d=4, seed=1)
    W = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(1.0)), 0.05)
    fast = dk.DROClassifier("logistic", W).fit(X, y)
    conic = dk.DROClassifier("logistic", W, solver="clarabel").fit(X, y)
    assert fast.result_.solver == "barrier" and conic.result_.solver == "clarabel"
    np.testing.assert_allclose(fast.predict_proba(X), conic.predict_proba(X), atol=1e-5)


def test_auto_falls_back_to_clarabel_outside_the_barriers_scope():
    X, y = logistic_data(n=100, d=3)
    for problem in (dk.Problem("hinge", dk.Wasserstein(radius=0.05)),
                    dk.Problem("logistic", dk.Wasserstein(radius=0.05), l1_penalty=0.01),
                    dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=3)), 0.05))):
        assert problem.compile(X, y).solve().solver == "clarabel"
    # back-end options mean the user wants the back-end
    assert compiled(X, y).solve(solver_options={"tol_gap_rel": 1e-9}).solver == "clarabel"


@pytest.mark.parametrize("problem, reason", [
    (dk.Problem("hinge", dk.Wasserstein(radius=0.05)), "not the plain logistic loss"),
    (dk.Problem("logistic", dk.Wasserstein(radius=0.05), l2_penalty=0.1), "penalty"),
    (dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=1.5)), 0.05)), "p = 1.5"),
    (dk.Problem("logistic", dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights=[np.inf] * 3)), 0.05)),
     "no numerical feature can move"),
])
def test_barrier_refuses_what_it_does_not_solve_and_says_why(problem, reason):
    X, y = logistic_data(n=60, d=3)
    with pytest.raises(ParameterError, match=reason):
        problem.compile(X, y).solve(solver="barrier")


def test_barrier_refuses_mutable_categorical_data():
    import pandas as pd
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=40), "c": pd.Categorical(rng.choice(["a", "b", "c"], 40))})
    y = np.where(rng.random(40) < 0.5, 1, -1)
    cp = dk.Problem("logistic", dk.Wasserstein(radius=0.05)).compile(df, y)
    assert cp.method != "closed_form"
    with pytest.raises(ParameterError, match="closed_form"):
        cp.solve(solver="barrier")
    assert cp.solve().solver == "clarabel"


def test_unknown_barrier_option_is_named():
    X, y = logistic_data(n=60, d=3)
    with pytest.raises(ParameterError, match="tol_gap_rel"):
        compiled(X, y).solve(solver="barrier", solver_options={"tol_gap_rel": 1e-9})
    with pytest.raises(ParameterError, match="tol must be > 0"):
        compiled(X, y).solve(solver="barrier", solver_options={"tol": -1.0})


def test_get_backend_explains_that_barrier_is_not_conic():
    with pytest.raises(ParameterError, match="not a conic back-end"):
        dk.solvers.get_backend("barrier")
    assert dk.solvers.get_backend("auto").name == "clarabel"


# ------------------------------------------------------------------------------------------ failures
def test_uncertified_barrier_falls_back_under_auto_and_fails_when_required(monkeypatch):
    X, y = logistic_data(n=100, d=3)
    monkeypatch.setattr(barrier, "DEFAULT_MAX_ITER", 3)     # stop far from the optimum
    res = compiled(X, y).solve()
    assert res.solver == "clarabel" and res.status == "optimal"
    assert "barrier" in res.auxiliary["barrier_fallback"] and "Clarabel" in res.auxiliary["barrier_fallback"]
    with pytest.raises(SolverError, match="relative gap"):
        compiled(X, y).solve(solver="barrier")
    with pytest.warns(RuntimeWarning, match="relative gap"):
        res = compiled(X, y).solve(solver="barrier", on_inaccurate="warn")
    assert res.status == "optimal_inaccurate" and res.solver == "barrier"
    assert res.lower_bound < res.upper_bound                # the bracket still holds, only wide


def test_verbose_prints_one_line_per_outer_iteration(capsys):
    X, y = logistic_data(n=100, d=3)
    res = compiled(X, y).solve(solver="barrier", verbose=2)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("barrier")]
    assert len(lines) == res.auxiliary["barrier"]["outer_iterations"] >= 3
    compiled(X, y).solve(solver="barrier")
    assert capsys.readouterr().out == ""


def test_ineligibility_reasons(monkeypatch):
    X, y = logistic_data(n=60, d=3)
    assert ineligibility(compiled(X, y).instance) is None
    zero = dk.Problem("logistic", dk.Wasserstein(radius=0.0)).compile(X, y)
    assert ineligibility(zero.instance) is None                 # plain logistic regression
    monkeypatch.setattr(barrier, "MAX_DENSE_ENTRIES", 100)
    assert "dense design" in ineligibility(compiled(X, y).instance)


# ------------------------------------------------------------------------------- radius 0 (ERM)
@pytest.mark.parametrize("intercept, weighted", [(True, False), (False, False), (True, True)])
def test_erm_matches_the_conic_program(intercept, weighted):
    """Radius 0 is plain logistic regression over every column (numerical and categorical dummies):
    Newton's method, certified by the same dual bound with every column's condition repaired."""
    import pandas as pd
    rng = np.random.default_rng(21)
    df = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400) * 30,
                       "c": pd.Categorical(rng.choice(list("pqrs"), 400)),
                       "e": pd.Categorical(rng.choice(list("xy"), 400))})
    y = np.where(rng.random(400) < 1 / (1 + np.exp(-(df["a"] - df["b"] / 30 + (df["c"] == "p")))), 1, -1)
    cp = dk.Problem("logistic", dk.Wasserstein(radius=0.0), fit_intercept=intercept).compile(
        df, y, sample_weight=rng.random(400) + 0.1 if weighted else None)
    res = cp.solve()
    conic = cp.solve(solver="clarabel")
    assert cp.method == "erm" and res.solver == "barrier" and res.status == "optimal"
    assert res.relative_gap <= 1e-10 and res.lower_bound <= conic.upper_bound + 1e-12
    assert res.upper_bound <= conic.upper_bound + 1e-9
    np.testing.assert_allclose(res.coef, conic.coef, atol=1e-5)        # strictly convex: one optimum


def test_erm_on_separable_data_warns_like_the_conic_path():
    """No minimizer: the value and the bound 0 meet at the tolerance with large coefficients, and the fit
    warns, as with Clarabel."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    cp = dk.Problem("logistic", dk.Wasserstein(radius=0.0)).compile(X, y)
    with pytest.warns(RuntimeWarning, match="linearly separable"):
        res = cp.solve()
    assert res.solver == "barrier" and res.status == "optimal" and res.objective <= 1e-8
    assert np.all(np.sign(res.coef[0]) == 1) and abs(res.coef[0]) > 10


def test_direct_call_reports_size_and_history():
    X, y = logistic_data(n=100, d=3)
    out = solve_closed_form_logistic(compiled(X, y, p=np.inf, kappa=1.0).instance)   # dual norm l1
    assert out.status == "optimal" and out.relative_gap <= barrier.DEFAULT_TOL
    # |phi_j| <= r_j (2d rows), sum r <= lambda (1), t_n >= 0 and t_n >= u_n - kappa lambda (2N)
    assert out.size["logistic"] == 100 and out.size["NONNEG"] == 2 * 3 + 1 + 2 * 100
    gaps = [h["gap"] for h in out.history]
    assert gaps[-1] == min(gaps)


@pytest.mark.parametrize("seed", range(4))
def test_random_instances_agree_with_the_conic_program(seed):
    """15 random instances per seed over norms, label costs, radii (1e-4 to 5), feature scales (0.01 to 100),
    metric weights (sometimes an immutable feature) and sample weights, with and without intercept,
    separable / imbalanced / noise labels: the barrier's model is no worse than Clarabel's (both evaluated
    exactly), its bracket is closed to 1e-6, and its lower bound is below the exact risk of Clarabel's
    model."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(15):
        n, d = int(rng.choice([20, 60, 200])), int(rng.choice([1, 2, 5, 12]))
        scale = float(rng.choice([1e-2, 1.0, 1e2]))
        X = rng.normal(size=(n, d)) * scale
        f = X @ rng.normal(size=d) / scale
        kind = rng.choice(["logit", "separable", "imbalanced", "noise"])
        y = {"logit": np.where(rng.random(n) < 1 / (1 + np.exp(-2 * f)), 1, -1),
             "separable": np.where(f > 0, 1, -1), "imbalanced": np.where(rng.random(n) < 0.06, 1, -1),
             "noise": rng.choice([-1, 1], n)}[kind]
        y[:2] = [1, -1]
        weights = rng.uniform(0.2, 3, d) if rng.random() < 0.5 else None
        if weights is not None and d >= 2 and rng.random() < 0.4:
            weights[0] = np.inf                                   # an immutable feature: a free column
        cp = compiled(X, y, p=float(rng.choice([1, 2, np.inf])), kappa=float(rng.choice([np.inf, 0.1, 1.0, 10.0])),
                      eps=float(10 ** rng.uniform(-4, 0.7)) * (scale if rng.random() < 0.5 else 1.0),
                      weights=weights, sample_weight=rng.random(n) + 0.05 if rng.random() < 0.3 else None,
                      fit_intercept=bool(rng.random() < 0.8))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            conic = cp.solve(solver="clarabel", on_inaccurate="warn")
        res = cp.solve(solver="barrier")
        tol = 1e-8 * max(1.0, abs(conic.upper_bound))
        assert res.status == "optimal" and res.relative_gap <= 1e-6, (kind, res.relative_gap)
        assert res.upper_bound <= conic.upper_bound + 1e-7 * max(1.0, abs(conic.upper_bound))
        assert res.lower_bound <= conic.upper_bound + tol + 2e-9   # 2e-9: the evaluation LP's tolerance


@pytest.mark.parametrize("p, kappa, intercept, immutable", [(2, np.inf, True, False), (1, 1.0, True, False),
                                                            (np.inf, 0.3, False, False), (2, 2.0, True, False),
                                                            (2, np.inf, True, True), (1, 0.7, False, True)])
def test_dual_value_is_a_bound_at_any_multipliers(p, kappa, intercept, immutable):
    """Weak duality for every (a, pi) in [0, 1]: the repair of the free columns' conditions (intercept,
    immutable features) and the scaling into the budget are what make an arbitrary point dual feasible;
    without either this fails."""
    X, y = logistic_data(n=120, d=3, seed=8, kind="imbalanced")
    rng = np.random.default_rng(3)
    finite = 0
    for eps in (0.01, 0.3, 20.0):
        cp = compiled(X, y, p=p, kappa=kappa, eps=eps, fit_intercept=intercept,
                      weights=[np.inf, 1.0, 1.0] if immutable else None)
        res = cp.solve(solver="barrier")
        optimum = res.upper_bound
        scaled = CertifiedProblem.from_instance(cp.instance)
        trials = [(np.full(120, 0.5), np.zeros(120)), (np.full(120, 0.9), np.full(120, 0.2))]
        trials += [(rng.random(120), rng.random(120) * rng.random()) for _ in range(30)]
        for a, pi in trials:
            assert scaled.dual_value(a, pi if np.isfinite(kappa) else 0 * pi) <= optimum + 1e-9
        # near the optimum's slopes (perturbed by 1%) the repair must succeed, and the bound is close
        slopes = 1.0 / (1.0 + np.exp(y * (X @ res.coef + res.intercept)))
        for _ in range(10):
            a = np.clip(slopes * (1 + 0.01 * rng.normal(size=120)), 0.0, 1.0)
            value = scaled.dual_value(a, 0 * a)
            assert value <= optimum + 1e-9
            finite += np.isfinite(value)
    assert finite == 30


@pytest.mark.parametrize("p, kappa", [(2, np.inf), (1, 0.5), (np.inf, 3.0)])
def test_immutable_features_are_free_columns(p, kappa):
    """Immutable numerical features (gamma = inf) and immutable categorical features enter unconstrained,
    like the intercept; the dual's conditions on them are repaired (not only the intercept's)."""
    import pandas as pd
    rng = np.random.default_rng(11)
    n = 300
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n) * 5, "age": rng.normal(40, 10, n),
                       "region": pd.Categorical(rng.choice(["n", "s", "e"], n)),
                       "job": pd.Categorical(rng.choice(["x", "y"], n))})
    f = df["a"] - 0.2 * df["b"] + 0.05 * (df["age"] - 40) + (df["region"] == "n") - 0.5 * (df["job"] == "x")
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-f)), 1, -1)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=p, weights={"age": np.inf, "b": 0.5}),
                             categorical=dk.MismatchCost(weights={"region": np.inf, "job": np.inf}),
                             label=dk.LabelCost(kappa))
    cp = dk.Problem("logistic", dk.Wasserstein(metric, 0.05)).compile(df, y)
    assert cp.method == "closed_form" and ineligibility(cp.instance) is None
    res = cp.solve()
    conic = cp.solve(solver="clarabel")
    assert res.solver == "barrier" and res.status == "optimal" and res.relative_gap <= 1e-8
    assert res.upper_bound == pytest.approx(conic.upper_bound, abs=1e-7)
    assert res.lower_bound <= conic.upper_bound + 1e-9
    np.testing.assert_allclose(res.coef, conic.coef, atol=1e-4)
    assert abs(res.coef[2]) > 1e-3                  # the immutable age is fitted, not dropped


def test_samples_of_weight_zero():
    """p_n = 0 samples add nothing to the objective; their hinge epigraphs had nothing pulling them down
    (the centering diverged and the fit fell back to Clarabel): they are left out, and their epigraph
    values still reported."""
    X, y = logistic_data(n=200, d=3, seed=12)
    weights = np.random.default_rng(0).random(200)
    weights[:50] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compiled(X, y, kappa=0.5, sample_weight=weights).solve()
    assert res.solver == "barrier" and res.status == "optimal"
    kept = compiled(X[50:], y[50:], kappa=0.5, sample_weight=weights[50:]).solve(solver="barrier")
    assert res.upper_bound == pytest.approx(kept.upper_bound, abs=1e-8)
    assert res.s.shape == (200,) and np.all(np.isfinite(res.s))
    np.testing.assert_allclose(res.s[50:], kept.s, atol=1e-5)


def test_nearly_singular_newton_systems_do_not_blow_up_the_coefficients():
    """credit-approval's categorical columns are nearly collinear (A4 / A5 code almost the same split):
    without the ridge the Newton steps moved the coefficients by ~1e148 along the near-null space at
    radius 0, where the objective does not change, and dk.worst_case of that model failed."""
    X, y = dk.datasets.load("credit-approval", standardize=True)
    X, y = X.sample(200, random_state=0), y.sample(200, random_state=0)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), categorical=dk.MismatchCost(weights=None, p=1))
    erm = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.0)).fit(X, y)
    assert erm.result_.solver == "barrier" and erm.result_.status == "optimal"
    assert np.abs(erm.coef_).max() < 1e3           # partly separable levels still give large values (~76)
    conic = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.0), solver="clarabel").fit(X, y)
    assert erm.result_.objective <= conic.result_.objective + 1e-9
    assert np.isfinite(dk.worst_case(erm, X, y, ambiguity=dk.Wasserstein(metric, radius=0.1)).value)


@pytest.mark.parametrize("intercept, weighted, gamma", [(True, False, 0.01), (False, False, 0.05),
                                                        (True, True, 0.002)])
def test_lasso_logistic_regression_is_the_l1_closed_form(intercept, weighted, gamma):
    """Radius 0 with l1_penalty gamma (selvi2022's r-LR): gamma ||beta||_1 over every coefficient is the
    closed form with the l1 norm and eps = gamma, solved and certified by the same barrier."""
    import pandas as pd
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300),
                       "c": pd.Categorical(rng.choice(list("pqrs"), 300))})
    y = np.where(rng.random(300) < 1 / (1 + np.exp(-(2 * df["a"] + (df["c"] == "p")))), 1, -1)
    cp = dk.Problem("logistic", dk.Wasserstein(radius=0.0), l1_penalty=gamma, fit_intercept=intercept).compile(
        df, y, sample_weight=rng.random(300) + 0.1 if weighted else None)
    res = cp.solve()
    conic = cp.solve(solver="clarabel")
    assert cp.method == "erm" and res.solver == "barrier" and res.status == "optimal"
    assert res.upper_bound == pytest.approx(conic.upper_bound, abs=1e-8)
    assert res.lower_bound <= conic.upper_bound + 1e-9 and res.relative_gap <= 1e-8
    np.testing.assert_allclose(res.coef, conic.coef, atol=1e-4)
    assert np.isnan(res.lambda_)
    # the value is the penalized log-loss of the returned model, evaluated independently
    f = cp.instance.design() @ res.coef + res.intercept
    loss = np.logaddexp(0.0, -cp.instance.y * f)
    assert res.upper_bound == pytest.approx(cp.instance.p @ loss + gamma * np.abs(res.coef).sum(), abs=1e-12)


def test_a_barrier_bound_that_certifies_skips_the_lagrangian_search():
    """Closed-form logistic with label flips (kappa = 1): the barrier solver's own repaired dual bound certifies the
    fit, so no KKT program of the Lagrangian search runs (they were 0.09 s of a 0.15 s fit); the bound is the
    barrier's, within the certified gap, and never above the exact upper bound."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 10))
    y = np.where(X @ rng.normal(size=10) + rng.normal(size=1000) > 0, 1, 0)
    amb = dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(1.0)), radius=0.1)
    res = dk.DROClassifier(ambiguity=amb).fit(X, y).result_
    assert res.solver == "barrier" and res.status == "optimal"
    assert res.auxiliary["lower_bound"]["source"] == "barrier"
    assert not any(a["stage"] == "certificate" for a in res.attempts)
    assert res.lower_bound <= res.upper_bound and res.relative_gap <= 1e-6
    # the same fit through Clarabel (no barrier bound): the Lagrangian bound agrees to the certified gap
    conic = dk.DROClassifier(ambiguity=amb, solver="clarabel").fit(X, y).result_
    assert conic.objective == pytest.approx(res.objective, rel=1e-6)
