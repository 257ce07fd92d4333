"""An Intersection ambiguity set through the estimators: the same static program as the reformulation module,
reported as an upper bound with a finite-support lower bound, never below the exact single-ball values'
minimum... and the errors (empty intersection, mismatched metrics, categorical or regression data,
unseen auxiliary labels)."""

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.reformulations.intersection import solve_intersection
from drokit.losses import Adversarial


def _data(seed=4, N=8, Na=9, n=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, n))
    y = np.where(X @ np.r_[1.0, -1.0][:n] + 0.8 * rng.normal(size=N) > 0, 1, 0)
    Xa = X[rng.integers(0, N, Na)] + 0.4 * rng.normal(size=(Na, n))
    ya = np.where(Xa @ np.r_[1.0, -1.0][:n] + 0.8 * rng.normal(size=Na) > 0, 1, 0)
    return X, y, Xa, ya


METRIC = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=2.0))


def test_estimator_solves_the_static_program_and_brackets_the_worst_case():
    X, y, Xa, ya = _data()
    W = dk.wasserstein_distance((X, y), (Xa, ya), METRIC)
    eps = eps_aux = 0.6 * W
    loss = Adversarial("logistic", norm=2, budget=0.1)
    amb = dk.Wasserstein(METRIC, radius=eps) & dk.Wasserstein(METRIC, radius=eps_aux, center=(Xa, ya))
    clf = dk.DROClassifier(loss=loss, ambiguity=amb).fit(X, y)
    res = clf.result_
    assert res.method == "intersection" and res.bound == "upper"
    direct = solve_intersection(X, np.where(y == 1, 1.0, -1.0), Xa, np.where(ya == 1, 1.0, -1.0), eps, eps_aux,
                                "logistic", p=1, kappa=2.0, attack=(2, 0.1))
    assert res.objective == pytest.approx(direct.value, rel=1e-6)
    assert res.lower_bound <= res.upper_bound + 1e-7
    assert res.auxiliary["wasserstein_distance"] == pytest.approx(W)
    assert "UPPER bound" in res.summary()
    # never more than either single ball's exact DR-ARO value (Cor. 9 and the symmetric bound)
    single = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(METRIC, radius=eps)).fit(X, y).result_.objective
    aux_only = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(METRIC, radius=eps_aux)).fit(Xa, ya)
    assert res.objective <= single + 1e-6
    assert res.objective <= aux_only.result_.objective + 1e-6
    assert clf.predict(X).shape == (len(y),)


def test_errors_are_named():
    X, y, Xa, ya = _data()
    W = dk.wasserstein_distance((X, y), (Xa, ya), METRIC)
    small = dk.Wasserstein(METRIC, radius=0.1 * W) & dk.Wasserstein(METRIC, radius=0.1 * W, center=(Xa, ya))
    with pytest.raises(dk.ParameterError, match="empty"):
        dk.DROClassifier(ambiguity=small).fit(X, y)
    other = dk.GroundMetric(numerical=dk.NormCost(p=2), label=dk.LabelCost(kappa=2.0))
    with pytest.raises(dk.ParameterError, match="share one ground metric"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(METRIC, 1.0) & dk.Wasserstein(other, 1.0, center=(Xa, ya))).fit(X, y)
    with pytest.raises(dk.ParameterError, match="training data"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(METRIC, 1.0) & dk.Wasserstein(METRIC, 1.0)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="only inside an"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(METRIC, 1.0, center=(Xa, ya))).fit(X, y)
    amb = dk.Wasserstein(METRIC, radius=2 * W) & dk.Wasserstein(METRIC, radius=2 * W, center=(Xa, ya))
    with pytest.raises(dk.ParameterError, match=r"method='cutting_plane' fits a Wasserstein ball; this problem's "
                                                r"ambiguity set is an Intersection of two Wasserstein balls: use "
                                                r"method='auto' or method='intersection'"):
        dk.DROClassifier(ambiguity=amb, method="cutting_plane").fit(X, y)
    with pytest.raises(dk.ParameterError, match="method='intersection' fits an Intersection of two Wasserstein balls"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(METRIC, 0.1), method="intersection").fit(X, y)
    with pytest.raises(dk.ParameterError, match="l1_penalty / l2_penalty are not supported with an Intersection"):
        dk.Problem(ambiguity=amb, l2_penalty=0.1).compile(X, y)
    with pytest.raises(dk.DataError):
        bad = dk.Wasserstein(METRIC, radius=2 * W) & dk.Wasserstein(METRIC, radius=2 * W, center=(Xa, ya + 5))
        dk.DROClassifier(ambiguity=bad).fit(X, y)
    Xc = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(np.where(X[:, 1] > 0, "u", "v"))})
    Xac = pd.DataFrame({"a": Xa[:, 0], "c": pd.Categorical(np.where(Xa[:, 1] > 0, "u", "v"))})
    with pytest.raises(dk.ParameterError, match="numerical features only"):
        amb_c = dk.Wasserstein(METRIC, radius=5.0) & dk.Wasserstein(METRIC, radius=5.0, center=(Xac, ya))
        dk.DROClassifier(ambiguity=amb_c).fit(Xc, y)
    with pytest.raises(dk.ParameterError, match="classification"):
        dk.DRORegressor(ambiguity=dk.Wasserstein(METRIC, 5.0) & dk.Wasserstein(METRIC, 5.0, center=(Xa, ya * 1.0))).fit(X, y * 1.0)
    with pytest.raises(dk.ParameterError, match="sample_weight"):
        dk.DROClassifier(ambiguity=amb).fit(X, y, sample_weight=np.arange(1, len(y) + 1))


def test_auxiliary_mixture_is_problem_67():
    """ARO + auxiliary data (thesis (67)) equals an independent cvxpy model of the weighted attacked risk;
    weight 0 ignores the auxiliary data."""
    cp = pytest.importorskip("cvxpy")
    X, y, Xa, ya = _data(seed=1, N=20, Na=25)
    w, alpha = 0.3, 0.1
    base = dk.DROClassifier(loss=Adversarial("logistic", norm=2, budget=alpha), ambiguity=dk.Wasserstein(radius=0))
    mix = dk.AuxiliaryMixture(base, Xa, ya, weight=w).fit(X, y)
    beta, b = cp.Variable(2), cp.Variable()
    pm, pma = np.where(y == 1, 1.0, -1.0), np.where(ya == 1, 1.0, -1.0)
    att = alpha * cp.norm(beta, 2)
    total = cp.sum(cp.logistic(-cp.multiply(pm, X @ beta + b) + att)) + \
        w * cp.sum(cp.logistic(-cp.multiply(pma, Xa @ beta + b) + att))
    prob = cp.Problem(cp.Minimize(total / (len(y) + w * len(ya))))
    prob.solve(solver="CLARABEL")
    assert mix.result_.objective == pytest.approx(prob.value, rel=1e-6)
    alone = dk.AuxiliaryMixture(base, Xa, ya, weight=0.0).fit(X, y).result_.objective
    assert alone == pytest.approx(base.fit(X, y).result_.objective, rel=1e-7)
    with pytest.raises(dk.ParameterError, match="weight"):
        dk.AuxiliaryMixture(base, Xa, ya, weight=-1).fit(X, y)


@pytest.mark.parametrize("kappa", [1.0, 2.5])
def test_cutting_plane_equals_the_full_static_program(kappa):
    """l1 transport: row generation with the exact box separation reaches the value of the program with all
    (i, j, l) rows, on instances with a non-trivial model (small radius around the training data)."""
    from drokit.reformulations.intersection_cuts import solve_intersection_cuts
    rng = np.random.default_rng(1)
    N, Na, n = 30, 40, 5
    X = rng.normal(size=(N, n))
    w = np.r_[2, -1, 0.5, 0, 0]
    y = np.where(X @ w + 0.8 * rng.normal(size=N) > 0, 1.0, -1.0)
    idx = rng.integers(0, N, Na)
    Xa, ya = X[idx] + 0.05 * rng.normal(size=(Na, n)), y[idx].copy()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1), label=dk.LabelCost(kappa=kappa))
    W = dk.wasserstein_distance((X, y), (Xa, ya), metric)
    eps, eps_aux = 0.05, W
    full = solve_intersection(X, y, Xa, ya, eps, eps_aux, "logistic", p=1, kappa=kappa, attack=(2, 0.05),
                              on_inaccurate="warn")
    cuts = solve_intersection_cuts(X, y, Xa, ya, eps, eps_aux, "logistic", p=1, kappa=kappa, attack=(2, 0.05))
    assert cuts.converged and cuts.lower_bound <= cuts.upper_bound + 1e-7  # masters solved to ~1e-8
    assert cuts.upper_bound == pytest.approx(full.value, rel=2e-6)
    assert np.linalg.norm(full.coef) > 0.5  # not the trivial model
    assert cuts.result.n_rows < 2 * N * Na / 2  # far fewer rows than the full program
    # the estimator uses it by default for p = 1, and agrees with the full program
    amb = dk.Wasserstein(metric, radius=eps) & dk.Wasserstein(metric, radius=eps_aux, center=(Xa, ya))
    loss = Adversarial("logistic", norm=2, budget=0.05)
    a = dk.DROClassifier(loss=loss, ambiguity=amb).fit(X, y).result_
    b = dk.DROClassifier(loss=loss, ambiguity=amb, on_inaccurate="warn",
                         method_options={"cutting_plane": False}).fit(X, y).result_
    assert a.auxiliary["cutting_plane"] and not b.auxiliary["cutting_plane"]
    assert a.objective == pytest.approx(b.objective, rel=2e-6)


def test_the_intersection_is_a_registered_method_of_its_own_bound_instance():
    """Two balls bind to an IntersectionInstance; ``auto`` tries only the rules of the methods that fit it (the
    intersection's), every other method refuses it by kind, and the compiled program is the static program."""
    from drokit.instance import IntersectionInstance
    from drokit.methods import choose_method, compile_instance, eligible_methods
    from drokit.models.intersection_problem import bind_intersection
    from drokit.reformulations.intersection import build_intersection_program
    X, y, Xa, ya = _data()
    W = dk.wasserstein_distance((X, y), (Xa, ya), METRIC)
    amb = dk.Wasserstein(METRIC, radius=0.6 * W) & dk.Wasserstein(METRIC, radius=0.7 * W, center=(Xa, ya))
    problem = dk.Problem(ambiguity=amb)
    bound = bind_intersection(problem, X, y)
    assert isinstance(bound, IntersectionInstance)
    assert bound.radius == pytest.approx(0.6 * W) and bound.radius_aux == pytest.approx(0.7 * W)
    assert bound.distance == pytest.approx(W)
    assert choose_method(bound, "auto") == ("intersection", "auto: an Intersection of two Wasserstein balls")
    why = eligible_methods(bound)
    assert why.pop("intersection") is None
    assert why and all(reason.endswith("use method='auto' or method='intersection'") for reason in why.values())
    compiled = compile_instance(bound, "auto")
    expected = build_intersection_program(X, np.where(y == 1, 1.0, -1.0), Xa, np.where(ya == 1, 1.0, -1.0),
                                          0.6 * W, 0.7 * W, "logistic", p=1, kappa=2.0)
    assert compiled.method == "intersection" and not compiled.is_built
    assert compiled.program.n_variables == expected.n_variables
    assert compiled.program.n_constraints == expected.n_constraints
    fitted = problem.compile(X, y).solve()
    assert "[auto: an Intersection of two Wasserstein balls]" in fitted.method_reason
