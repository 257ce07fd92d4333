"""Invariances, monotonicity and limits of the optimal value (spec part D2, items 10-11).

Everything goes through the public API, ``dk.Problem(...).compile(X, y, method="monolithic",
categorical_features=..., categories=...).solve()``, on tiny random mixed instances: N = 12 samples,
2 numerical features and categorical features with levels (3, 2), so each monolithic program has at
most 12 * 6 * 2 = 144 configuration rows and solves in milliseconds.

These are properties of the *unregularized* DRO model (no penalty on beta), for which the spec
proves them:

(a) the reference level of a categorical feature does not change the optimal value;
(b) permuting samples, or permuting columns (with the weights permuted accordingly), does not either;
(c) homogeneity: metric * c and radius * c give the same value, and lambda* / c;
(d) the value is non-decreasing in the radius and non-increasing in every cost (numerical weights,
    categorical weights, kappa);
(e) kappa = inf is the limit of large finite kappa;
(f) the exponent p of MismatchCost is irrelevant with a single categorical feature;
(g) an immutable categorical feature (weight inf) can only lower the value, and is the limit of a
    very large weight.

Values are compared at 1e-6 relative (interior-point accuracy).  The multiplier lambda* is compared
at 1e-4 relative: it is a primal variable along which the objective can be flat, so the solver pins it
down less tightly than the value (observed errors ~2e-5 relative for the logistic loss).
Comparisons against the independent brute-force model are in test_against_reference.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import drokit as dk

RTOL = 1e-6
LAMBDA_RTOL = 1e-4
LEVELS = (3, 2)
N = 12

#: loss name -> task; logistic (exponential cone), hinge (LP), huber (SOC), pinball (LP regression)
LOSSES = {"logistic": "classification", "hinge": "classification", "huber": "regression",
          "pinball": "regression"}
#: finite label cost per task, used next to kappa = inf
FINITE_KAPPA = {"classification": 1.0, "regression": 1.5}


def close(a, b, rtol=RTOL):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def assert_close(a, b, rtol=RTOL):
    assert close(a, b, rtol), (a, b, abs(a - b))


def assert_leq(a, b, rtol=RTOL):
    """``a <= b`` up to the solver tolerance."""
    assert a <= b + rtol * max(1.0, abs(a), abs(b)), (a, b, a - b)


# ---------------------------------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------------------------------
def make_instance(seed: int, task: str, levels=LEVELS, n_num: int = 2):
    """Columns ``[x0, x1, z0, z1]`` (numerical first, then integer codes as floats), labels ``y``.

    For classification every level of every categorical feature holds both labels, so even when a
    categorical feature is immutable (its coefficients unpenalized) no level separates the data and
    the optimum is attained.
    """
    rng = np.random.default_rng(seed)
    Xn = rng.normal(size=(N, n_num))
    # every level appears at least twice
    Z = np.column_stack([rng.permutation(np.resize(np.arange(a), N)) for a in levels]).astype(int)
    f = Xn @ rng.normal(size=n_num) + sum(rng.normal(size=a)[Z[:, k]] for k, a in enumerate(levels))
    if task == "classification":
        y = np.where(f + 0.5 * rng.normal(size=N) > 0, 1.0, -1.0)
        for k, a in enumerate(levels):
            for level in range(a):
                rows = np.flatnonzero(Z[:, k] == level)
                if np.all(y[rows] == y[rows[0]]):
                    y[rows[0]] = -y[rows[0]]
        assert len(np.unique(y)) == 2
    else:
        y = f + 0.3 * rng.normal(size=N)
    X = np.column_stack([Xn, Z.astype(float)])
    return X, y


def metric(gamma=(1.0, 2.0), delta=(0.5, 1.0), kappa=np.inf, norm_p=1, cat_p=1):
    return dk.GroundMetric(
        numerical=dk.NormCost(p=norm_p, weights=None if gamma is None else np.asarray(gamma, float)),
        categorical=dk.MismatchCost(weights=None if delta is None else np.asarray(delta, float),
                                    p=cat_p),
        label=dk.LabelCost(kappa=kappa))


def solve(X, y, loss, ground, radius=0.2, categorical_features=None, categories=None,
          levels=LEVELS) -> dk.FitResult:
    n_num = X.shape[1] - len(levels)
    if categorical_features is None:
        categorical_features = list(range(n_num, X.shape[1]))
    if categories is None:
        categories = [list(range(a)) for a in levels]
    problem = dk.Problem(loss=loss, ambiguity=dk.Wasserstein(ground, radius=radius))
    res = problem.compile(X, y, method="monolithic", categorical_features=categorical_features,
                          categories=categories).solve()
    assert res.status == "optimal", res.status
    return res


def value(*args, **kwargs) -> float:
    return solve(*args, **kwargs).objective


def cases():
    """(loss, kappa) pairs: every loss with kappa = inf and with a finite label cost."""
    out = []
    for i, (loss, task) in enumerate(LOSSES.items()):
        for finite in (False, True):
            kappa = FINITE_KAPPA[task] if finite else np.inf
            out.append(pytest.param(loss, kappa, 10 * i + int(finite),
                                    id=f"{loss}-{'kfin' if finite else 'kinf'}"))
    return out


# ---------------------------------------------------------------------------------------------------
# sanity: the instances exercise the robust part of the model
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_instances_are_not_trivial(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    res = solve(X, y, loss, metric(kappa=kappa))
    assert res.lambda_ > 1e-3            # the Wasserstein budget is active
    assert np.max(np.abs(res.coef)) > 1e-3  # the model is not the constant one
    # radius 0 is ERM, which does not depend on the metric
    assert value(X, y, loss, metric(), radius=0.0) < res.objective - 1e-4


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_zero_radius_erm_does_not_depend_on_kappa(loss):
    X, y = make_instance(1, "classification")
    erm = value(X, y, loss, metric(kappa=np.inf), radius=0.0)
    assert_close(value(X, y, loss, metric(kappa=1.0), radius=0.0), erm)


# ---------------------------------------------------------------------------------------------------
# (a) reference level
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_reference_level_does_not_change_value(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    ground = metric(kappa=kappa, delta=(0.7, 1.2))
    base = value(X, y, loss, ground)
    for categories in ([[2, 0, 1], [0, 1]], [[0, 1, 2], [1, 0]], [[1, 2, 0], [1, 0]]):
        assert_close(value(X, y, loss, ground, categories=categories), base)


def test_reference_level_through_estimator_and_dataframe():
    """Same property through DROClassifier with string levels and explicit ``categories``."""
    X, y = make_instance(3, "classification")
    df = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1],
                       "z0": np.array(["a", "b", "c"])[X[:, 2].astype(int)],
                       "z1": np.array(["no", "yes"])[X[:, 3].astype(int)]})
    amb = dk.Wasserstein(metric(), radius=0.2)
    objs = []
    for cats in ([["a", "b", "c"], ["no", "yes"]], [["c", "a", "b"], ["yes", "no"]]):
        clf = dk.DROClassifier(ambiguity=amb, categories=cats, method="monolithic").fit(df, y)
        assert clf.get_feature_names_out()[2] == f"z0={cats[0][1]}"  # first level is the reference
        objs.append(clf.result_.objective)
    assert_close(objs[0], objs[1])


# ---------------------------------------------------------------------------------------------------
# (b) permutations of samples and of columns
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_sample_permutation_does_not_change_value(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    ground = metric(kappa=kappa, norm_p=2, cat_p=2)
    base = value(X, y, loss, ground)
    perm = np.random.default_rng(seed + 1).permutation(N)
    assert_close(value(X[perm], y[perm], loss, ground), base)


@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_column_permutation_with_permuted_weights_does_not_change_value(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    gamma, delta = np.array([0.6, 1.7]), np.array([0.8, 1.3])
    levels = list(LEVELS)
    base = value(X, y, loss, metric(gamma=gamma, delta=delta, kappa=kappa, norm_p=2))
    # new column order: z1, x1, z0, x0 -> numerical order (x1, x0), categorical order (z1, z0)
    cols = [3, 1, 2, 0]
    is_cat = [c >= 2 for c in cols]
    new_gamma = [gamma[c] for c in cols if c < 2]
    new_delta = [delta[c - 2] for c in cols if c >= 2]
    new_levels = [levels[c - 2] for c in cols if c >= 2]
    permuted = value(X[:, cols], y, loss,
                     metric(gamma=new_gamma, delta=new_delta, kappa=kappa, norm_p=2),
                     categorical_features=is_cat, levels=new_levels)
    assert_close(permuted, base)


@pytest.mark.parametrize("loss", ["logistic", "huber"])
def test_dataframe_column_order_with_named_weights_does_not_change_value(loss):
    """Weights given as ``{column: weight}`` follow their columns whatever the column order."""
    X, y = make_instance(5, LOSSES[loss])
    df = pd.DataFrame(X, columns=["x0", "x1", "z0", "z1"])
    ground = dk.GroundMetric(dk.NormCost(p=1, weights={"x1": 2.5, "x0": 0.4}),
                             dk.MismatchCost(weights={"z1": 0.3, "z0": 1.1}), dk.LabelCost())
    problem = dk.Problem(loss=loss, ambiguity=dk.Wasserstein(ground, radius=0.3))
    vals = []
    for order in (["x0", "x1", "z0", "z1"], ["z1", "x1", "x0", "z0"]):
        sub = df[order]
        cats = {"z0": [0.0, 1.0, 2.0], "z1": [0.0, 1.0]}
        res = problem.compile(sub, y, method="monolithic", categorical_features=["z0", "z1"],
                              categories=[cats[c] for c in order if c in cats]).solve()
        vals.append(res.objective)
    assert_close(vals[0], vals[1])
    # and swapping the weights between the columns does change it (the names are really used)
    swapped = dk.GroundMetric(dk.NormCost(p=1, weights={"x0": 2.5, "x1": 0.4}),
                              dk.MismatchCost(weights={"z0": 0.3, "z1": 1.1}), dk.LabelCost())
    other = dk.Problem(loss=loss, ambiguity=dk.Wasserstein(swapped, radius=0.3)).compile(
        df, y, method="monolithic", categorical_features=["z0", "z1"],
        categories=[[0.0, 1.0, 2.0], [0.0, 1.0]]).solve().objective
    assert not close(other, vals[0], 1e-4)


# ---------------------------------------------------------------------------------------------------
# (c) homogeneity
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("c", [0.25, 4.0])
@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_homogeneity_of_metric_and_radius(loss, kappa, seed, c):
    X, y = make_instance(seed, LOSSES[loss])
    norm_p, cat_p = (1, 1) if seed % 2 == 0 else (2, 2)  # also D = (sum delta^p 1[.])^(1/p), p != 1
    ground = metric(gamma=(0.8, 1.5), delta=(0.6, 1.1), kappa=kappa, norm_p=norm_p, cat_p=cat_p)
    radius = 0.15
    base = solve(X, y, loss, ground, radius=radius)
    scaled = solve(X, y, loss, ground.scaled(c), radius=radius * c)
    assert_close(scaled.objective, base.objective)
    assert_close(scaled.lambda_ * c, base.lambda_, LAMBDA_RTOL)


def test_homogeneity_with_default_and_named_weights():
    """``scaled`` also scales ``None`` (unit), scalar and ``{name: w}`` weights -- including the
    columns a dict does not name (they weigh 1 before scaling, ``c`` after)."""
    X, y = make_instance(7, "classification")
    df = pd.DataFrame(X, columns=["x0", "x1", "z0", "z1"])
    kw = dict(method="monolithic", categorical_features=["z0", "z1"])
    for ground in (dk.GroundMetric(),
                   dk.GroundMetric(dk.NormCost(weights=2.0), dk.MismatchCost(weights=0.7)),
                   dk.GroundMetric(dk.NormCost(weights={"x1": 3.0}), dk.MismatchCost(weights={"z0": 0.5}),
                                   dk.LabelCost(kappa=2.0)),
                   dk.GroundMetric(dk.NormCost(weights={"x1": 3.0})).scaled(0.5)):
        base = dk.Problem("logistic", dk.Wasserstein(ground, 0.1)).compile(df, y, **kw).solve()
        scaled = dk.Problem("logistic", dk.Wasserstein(ground.scaled(3.0), 0.3)).compile(
            df, y, **kw).solve()
        assert_close(scaled.objective, base.objective)
        assert_close(scaled.lambda_ * 3.0, base.lambda_, LAMBDA_RTOL)


@pytest.mark.parametrize("factor", [0, -1.0, np.inf, np.nan, "two"])
def test_scaled_rejects_a_bad_factor(factor):
    with pytest.raises(dk.ParameterError, match="factor"):
        dk.GroundMetric().scaled(factor)


# ---------------------------------------------------------------------------------------------------
# (d) monotonicity
# ---------------------------------------------------------------------------------------------------
def assert_non_decreasing(values):
    for a, b in zip(values, values[1:]):
        assert_leq(a, b)


@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_value_non_decreasing_in_radius(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    ground = metric(kappa=kappa)
    # radius 0 (ERM) only with kappa = inf: see test_zero_radius_erm_does_not_depend_on_kappa
    radii = (0.0, 0.02, 0.1, 0.3, 0.8, 2.0) if np.isinf(kappa) else (1e-3, 0.02, 0.1, 0.3, 0.8, 2.0)
    vals = [value(X, y, loss, ground, radius=r) for r in radii]
    assert_non_decreasing(vals)
    assert vals[-1] > vals[0] + 1e-3


@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_value_non_increasing_in_each_cost(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    factors = (0.25, 1.0, 4.0)
    gamma, delta = np.array([1.0, 2.0]), np.array([0.5, 1.0])
    # each numerical weight, each categorical weight on its own, then kappa
    for j in range(2):
        vals = [value(X, y, loss, metric(gamma=gamma * np.where(np.arange(2) == j, f, 1.0),
                                         delta=delta, kappa=kappa)) for f in factors]
        assert_non_decreasing(vals[::-1])
    for j in range(2):
        vals = [value(X, y, loss, metric(gamma=gamma, delta=delta * np.where(np.arange(2) == j, f, 1.0),
                                         kappa=kappa)) for f in factors]
        assert_non_decreasing(vals[::-1])
    kappas = (0.25, 1.0, 4.0, np.inf)
    vals = [value(X, y, loss, metric(gamma=gamma, delta=delta, kappa=k)) for k in kappas]
    assert_non_decreasing(vals[::-1])


# ---------------------------------------------------------------------------------------------------
# (e) kappa -> inf
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", list(LOSSES))
def test_infinite_kappa_is_the_limit_of_large_kappa(loss):
    X, y = make_instance(20 + len(loss), LOSSES[loss])
    v_inf = value(X, y, loss, metric(kappa=np.inf))
    v_big = value(X, y, loss, metric(kappa=1e6))
    assert_leq(v_inf, v_big)
    assert_close(v_big, v_inf)


# ---------------------------------------------------------------------------------------------------
# (f) MismatchCost p with one categorical feature
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_mismatch_exponent_irrelevant_with_one_categorical_feature(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss], levels=(3,))
    vals = [value(X, y, loss, metric(delta=(0.7,), kappa=kappa, cat_p=p), levels=(3,))
            for p in (0.5, 1.0, 2.0, 3.0)]
    for v in vals[1:]:
        assert_close(v, vals[0])


def test_mismatch_exponent_matters_with_two_categorical_features():
    """Control for (f): with two features a double change costs delta * 2^(1/p), so p matters."""
    X, y = make_instance(1, "classification")
    vals = [value(X, y, "logistic", metric(gamma=(10.0, 10.0), delta=(1.0, 1.0), cat_p=p), radius=0.1)
            for p in (0.5, 3.0)]
    assert not close(vals[0], vals[1], 1e-4)


# ---------------------------------------------------------------------------------------------------
# (g) immutable categorical feature
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss,kappa,seed", cases())
def test_immutable_categorical_feature(loss, kappa, seed):
    X, y = make_instance(seed, LOSSES[loss])
    v_imm = value(X, y, loss, metric(delta=(np.inf, 1.0), kappa=kappa))
    finite = [value(X, y, loss, metric(delta=(d, 1.0), kappa=kappa)) for d in (0.3, 3.0, 1e6)]
    for v in finite:
        assert_leq(v_imm, v)          # forbidding changes can only shrink the ball
    assert_non_decreasing(finite[::-1])  # ... and the finite weights approach it from above
    assert_close(finite[-1], v_imm)    # a prohibitive weight is the immutable model
