"""dk.worst_case: worst-case risk AND a worst-case distribution of a fitted model.

Checked against the independent reference (tests/reference/brute_force.py): the primal transport LP
(categorical data) and the dual LP ``worst_case_risk`` (mixed data).  Every returned distribution is
re-evaluated from its atoms with the reference's own loss, design and ground cost: it must be feasible
(masses >= 0, 1/N per sample, transport budget <= eps) and ATTAIN the reported value (or approach it,
``attained=False``, in the numerical limiting case), with at most N + 1 atoms.
"""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import drokit as dk
import drokit.evaluation.worst_case_distribution as wcd
from drokit.schema import FeatureSchema
from tests.reference.brute_force import (categorical_distance, design_matrix, loss_value,
                                         random_instance, worst_case_primal_lp, worst_case_risk)

LEVELS = [2, 3, 2]
DELTA = np.array([1.0, 0.5, 2.0])
LOSSES = {  # name -> (drokit loss, reference loss_param, task)
    "logistic": ("logistic", None, "classification"),
    "hinge": ("hinge", None, "classification"),
    "smooth_hinge": ("smooth_hinge", None, "classification"),
    "huber": (dk.losses.Huber(delta=1.0), 1.0, "regression"),
    "pinball": (dk.losses.Pinball(tau=0.3), 0.3, "regression"),
}


# ---------------------------------------------------------------------------------------- helpers
def _data(seed, N, n, task, levels=LEVELS):
    Xn, Z, y = random_instance(seed, N, n, levels, task)
    X = np.column_stack([Xn, Z]).astype(float)
    cat = list(range(n, n + len(levels)))
    schema = FeatureSchema.infer(X, cat, [list(range(a)) for a in levels])
    return Xn, Z, y, X, schema


def _model(b0, coef):
    """Any object with coef_ / intercept_ (fitted on drokit's design) is accepted with schema=."""
    return types.SimpleNamespace(coef_=np.asarray(coef, float), intercept_=float(b0))


def _ball(radius, *, kappa=np.inf, norm_p=1, cat_p=1.0, delta=DELTA):
    metric = dk.GroundMetric(numerical=dk.NormCost(p=norm_p),
                             categorical=dk.MismatchCost(weights=list(delta), p=cat_p),
                             label=dk.LabelCost(kappa))
    return dk.Wasserstein(metric, radius=radius)


def check_distribution(res, Xn, Z, y, b0, coef, *, loss, loss_param, task, kappa, radius, levels=LEVELS,
                       delta=DELTA, cat_p=1.0):
    """Feasible, at most N + 1 atoms, and the atoms' own (reference) losses attain the value."""
    N, n = Xn.shape
    atoms = res.atoms
    mass = atoms["mass"].to_numpy()
    sample = atoms["sample"].to_numpy()
    assert np.all(mass >= 0)
    per = np.bincount(sample, weights=mass, minlength=N)
    np.testing.assert_allclose(per, 1.0 / N, atol=1e-12)
    assert len(atoms) <= N + 1
    assert res.budget_used <= radius + 1e-9
    # re-evaluate every atom independently: features, labels, loss and transport cost
    Xa, ya, w = res.distribution_matrix()
    np.testing.assert_array_equal(w, mass)
    np.testing.assert_array_equal(Xa[:, :n], Xn[sample])  # numerical features never move in an atom
    Za = Xa[:, n:].astype(int)
    f = design_matrix(Xa[:, :n], Za, levels) @ np.concatenate(([b0], coef))
    e = ya * f if task == "classification" else f - ya
    np.testing.assert_allclose(atoms["loss"], loss_value(loss, e, loss_param), rtol=1e-12, atol=1e-12)
    flip = ya != y[sample]
    assert task == "classification" or not flip.any()
    np.testing.assert_array_equal(atoms["flipped"].to_numpy(), flip)
    cost = np.array([categorical_distance(Za[i], Z[sample[i]], delta, cat_p) for i in range(len(atoms))])
    cost = cost + np.where(flip, kappa if np.isfinite(kappa) else 0.0, 0.0)
    np.testing.assert_allclose(atoms["cost"], cost, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.budget_used, mass @ cost, rtol=1e-12, atol=1e-14)
    expected = float(mass @ atoms["loss"].to_numpy())
    if res.attained:
        assert expected == pytest.approx(res.value, rel=1e-7, abs=1e-9)
        if res.lam > res.lam_min + 1e-9 and res.lam > 1e-9:  # complementary slackness: the budget binds
            assert res.budget_used == pytest.approx(radius, rel=1e-9, abs=1e-12)
    else:
        assert res.limit.budget == pytest.approx(radius - res.budget_used, rel=1e-9, abs=1e-12)
        assert expected + res.lam_min * res.limit.budget == pytest.approx(res.value, rel=1e-7, abs=1e-9)
    assert res.gap == pytest.approx(0.0, abs=1e-8)


# ------------------------------------------------------------------ (a)-(d): the reference LPs
@pytest.mark.parametrize("name", list(LOSSES))
def test_categorical_distribution_attains_primal_transport_lp(name):
    """(a) feasible + attains, (b) = the reference primal transport LP, (c) <= N + 1 atoms, (d) both
    methods agree; categorical data only (the primal LP is finite), label flips where they exist."""
    loss, param, task = LOSSES[name]
    kappas = (np.inf, 0.7) if task == "classification" else (np.inf,)
    N = 7
    Xn, Z, y, X, schema = _data(4, N, 0, task)
    rng = np.random.default_rng(0)
    for kappa in kappas:
        for radius in (0.05, 0.4, 2.5):
            b0, coef = rng.normal(), rng.normal(size=schema.n_encoded)
            results = [dk.worst_case(_model(b0, coef), X, y, _ball(radius, kappa=kappa), schema=schema,
                                     loss=loss, method=m) for m in ("enumeration", "oracle")]
            ref, pi = worst_case_primal_lp((b0, np.zeros(0), coef), Z, LEVELS, y, task=task, loss=name,
                                           loss_param=param, radius=radius, delta=DELTA, kappa=kappa)
            for res in results:
                assert res.attained and res.limit is None  # no numerical features: always attained
                assert res.value == pytest.approx(ref, rel=1e-7, abs=1e-9)
                check_distribution(res, Xn, Z, y, b0, coef, loss=name, loss_param=param, task=task,
                                   kappa=kappa, radius=radius)
            assert results[0].value == pytest.approx(results[1].value, rel=1e-10, abs=1e-12)
            assert results[0].lam == pytest.approx(results[1].lam, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("norm_p,cat_p", [(1, 1.0), (2, 2.0)])
def test_mixed_data_equals_reference_dual_lp(name, norm_p, cat_p):
    """(b) with numerical features: = the reference dual LP ``worst_case_risk``; (a), (c), (d)."""
    loss, param, task = LOSSES[name]
    kappa = 0.9 if task == "classification" else np.inf
    N = 8
    Xn, Z, y, X, schema = _data(11, N, 2, task)
    rng = np.random.default_rng(1)
    for radius in (0.1, 1.5):
        for scale in (0.2, 1.0):
            b0, coef = rng.normal(), rng.normal(size=schema.n_encoded)
            coef[:2] *= scale
            ball = _ball(radius, kappa=kappa, norm_p=norm_p, cat_p=cat_p)
            ref = worst_case_risk((b0, coef[:2], coef[2:]), Xn, Z, LEVELS, y, task=task, loss=name,
                                  loss_param=param, radius=radius, norm_p=norm_p, delta=DELTA,
                                  cat_p=cat_p, kappa=kappa)
            values = []
            for method in ("enumeration", "oracle"):
                res = dk.worst_case(_model(b0, coef), X, y, ball, schema=schema, loss=loss, method=method)
                assert res.value == pytest.approx(ref, rel=1e-7, abs=1e-9)
                check_distribution(res, Xn, Z, y, b0, coef, loss=name, loss_param=param, task=task,
                                   kappa=kappa, radius=radius, cat_p=cat_p)
                values.append(res.value)
            assert values[0] == pytest.approx(values[1], rel=1e-10, abs=1e-12)


def test_ties_split_one_sample_and_bind_the_budget():
    """(c) identical samples tie at lam*: exactly one sample's mass is split, N + 1 atoms, budget = eps."""
    N = 6
    X = np.tile([[0.0, 1.0, 0.0]], (N, 1))
    y = np.ones(N)
    schema = FeatureSchema.infer(X, [0, 1, 2], [[0, 1], [0, 1], [0, 1]])
    coef = np.array([-0.8, -0.3, 0.5])
    radius = 0.37  # not a multiple of 1/N: the budget binds inside one sample
    for method in ("enumeration", "oracle"):
        res = dk.worst_case(_model(0.2, coef), X, y, _ball(radius, delta=[1.0, 1.0, 1.0]),
                            schema=schema, loss="hinge", method=method)
        assert res.n_atoms == N + 1
        assert res.budget_used == pytest.approx(radius, abs=1e-12)
        assert (res.atoms.groupby("sample").size() == 2).sum() == 1
        Z = X.astype(int)
        check_distribution(res, np.zeros((N, 0)), Z, y, 0.2, coef, loss="hinge", loss_param=None,
                           task="classification", kappa=np.inf, radius=radius, levels=[2, 2, 2],
                           delta=np.ones(3))


def test_budget_not_binding_at_lam_zero():
    """lam* = 0: every sample moves to its worst configuration and the budget need not bind."""
    Xn, Z, y, X, schema = _data(3, 7, 0, "classification")
    rng = np.random.default_rng(5)
    b0, coef = rng.normal(), rng.normal(size=schema.n_encoded)
    res = dk.worst_case(_model(b0, coef), X, y, _ball(50.0), schema=schema, loss="hinge")
    assert res.lam == 0.0 and res.attained
    assert res.budget_used < 50.0
    ref, _ = worst_case_primal_lp((b0, coef), Z, LEVELS, y, loss="hinge", radius=50.0, delta=DELTA)
    assert res.value == pytest.approx(ref, rel=1e-9)
    check_distribution(res, Xn, Z, y, b0, coef, loss="hinge", loss_param=None, task="classification",
                       kappa=np.inf, radius=50.0)


# ------------------------------------------------------------------- fitted drokit estimators
def test_fitted_classifier_on_dataframe_user_labels():
    """At the fitted optimum WC(beta*) = the optimal value; atoms carry the user's labels and levels,
    distribution_matrix() is accepted by predict; the model's own ball is the default."""
    Xn, Z, y, _, _ = _data(5, 9, 2, "classification")  # (seed 4: optimum beta = 0, Clarabel AlmostSolved)
    X = pd.DataFrame({"age": Xn[:, 0], "income": Xn[:, 1],
                      "sex": pd.Categorical(np.array(["f", "m"])[Z[:, 0]]),
                      "job": np.array(["clerk", "manager", "none"])[Z[:, 1]],
                      "own": np.array([False, True])[Z[:, 2]]})
    labels = np.where(y > 0, "good", "bad")
    ball = dk.Wasserstein(dk.GroundMetric(categorical=dk.MismatchCost({"job": 0.5, "own": 2.0}),
                                          label=dk.LabelCost(0.7)), radius=0.3)
    clf = dk.DROClassifier("logistic", ball, method="monolithic").fit(X, labels)
    res = dk.worst_case(clf, X, labels)
    assert res.value == pytest.approx(clf.result_.objective, rel=1e-6)
    assert res.method == "enumeration"
    assert set(res.atoms["label"]) <= {"good", "bad"}
    assert set(res.atoms["job"]) <= {"clerk", "manager", "none"}
    assert set(res.atoms["sex"]) <= {"f", "m"}
    flipped = res.atoms[res.atoms["flipped"]]
    assert (flipped["label"].to_numpy() != labels[flipped["sample"].to_numpy()]).all()
    Xa, ya, mass = res.distribution_matrix()
    assert list(Xa.columns) == list(X.columns) and len(Xa) == res.n_atoms
    proba = clf.predict_proba(Xa)[:, 1]
    margin = np.where(ya == "good", 1.0, -1.0) * np.log(proba / (1 - proba))
    assert mass @ np.logaddexp(0, -margin) == pytest.approx(res.value, rel=1e-7)
    # another ball, and a subset with a single class (labels are mapped with the model's classes_)
    other = dk.worst_case(clf, X, labels, dk.Wasserstein(ball.metric, radius=0.05))
    assert other.nominal_risk == pytest.approx(res.nominal_risk) and other.value < res.value
    single = dk.worst_case(clf, X[labels == "good"], labels[labels == "good"])
    assert set(single.atoms["label"]) <= {"good", "bad"}
    assert "worst-case risk" in res.summary() and "WorstCaseResult(" in repr(res)


@pytest.mark.parametrize("labels", [("bad", "good"), (3, 7), (False, True)])
def test_one_class_evaluation_data_is_encoded_with_the_models_classes(labels):
    """Evaluation data holding ONE of the model's labels: each label keeps the +-1 it had at fit (the
    model's classes_, not the evaluation data's own classes), through dk.worst_case and through
    Problem.bind(classes=...) + dk.worst_case_value; unseen labels and bad classes raise naming them."""
    Xn, Z, y, X, _ = _data(5, 9, 2, "classification")
    y_user = np.where(y > 0, labels[1], labels[0])
    ball = _ball(0.2, kappa=0.8)
    clf = dk.DROClassifier("logistic", ball, categorical_features=[2, 3, 4], method="monolithic").fit(X, y_user)
    assert list(clf.classes_) == list(labels)
    for label, sign in zip(labels, (-1.0, 1.0)):
        sel = y_user == label
        f = clf.decision_function(X[sel])
        nominal = np.mean(np.logaddexp(0.0, -sign * f))
        res = dk.worst_case(clf, X[sel], y_user[sel])
        assert res.nominal_risk == pytest.approx(nominal, rel=1e-12)
        assert set(res.atoms.loc[~res.atoms["flipped"], "label"]) == {label}
        inst = clf._problem().bind(X[sel], y_user[sel], schema=clf.schema_, classes=clf.classes_)
        np.testing.assert_array_equal(inst.y, sign)
        assert dk.worst_case_value(inst, clf.intercept_[0], clf.coef_.ravel()).value == \
            pytest.approx(res.value, rel=1e-7)
    unseen = np.array(["ugly"] * 3, dtype=object)
    with pytest.raises(dk.DataError, match=r"y has label\(s\) \['ugly'\].*classes_"):
        dk.worst_case(clf, X[:3], unseen)
    problem = clf._problem()
    for bad in ([labels[1]], [labels[0], labels[1], "other"], [labels[1], labels[1]]):
        with pytest.raises(dk.ParameterError, match="classes must hold two distinct labels"):
            problem.bind(X, y_user, schema=clf.schema_, classes=bad)


def test_fitted_regressor_huber_and_unknown_levels():
    Xn, Z, y, X, _ = _data(6, 10, 1, "regression")
    ball = _ball(0.4, delta=[1.0, 0.5, 2.0])
    reg = dk.DRORegressor("huber", ball, categorical_features=[1, 2, 3]).fit(X, y)
    res = dk.worst_case(reg, X, y, method="oracle")
    assert res.value == pytest.approx(reg.result_.objective, rel=1e-6)
    check_distribution(res, Xn, Z, y, reg.intercept_, reg.coef_, loss="huber", loss_param=1.0,
                       task="regression", kappa=np.inf, radius=0.4)
    X_new = X.copy()
    X_new[0, 2] = 7.0  # a level unseen at fit
    with pytest.raises(dk.DataError, match="not seen at fit"):
        dk.worst_case(reg, X_new, y)
    reg.set_params(handle_unknown="ignore")
    assert np.isfinite(dk.worst_case(reg, X_new, y).value)


def test_sklearn_logistic_regression_with_explicit_schema():
    from sklearn.linear_model import LogisticRegression
    Xn, Z, y, X, schema = _data(7, 12, 1, "classification")
    design = schema.design(schema.transform(X)).toarray()
    lr = LogisticRegression(C=10.0).fit(design, y)
    res = dk.worst_case(lr, X, y, _ball(0.3), schema=schema)
    same = dk.worst_case(_model(lr.intercept_[0], lr.coef_.ravel()), X, y, _ball(0.3), schema=schema,
                         loss="logistic")
    assert res.value == pytest.approx(same.value, rel=1e-12)
    with pytest.raises(TypeError, match="schema="):
        dk.worst_case(lr, X, y, _ball(0.3))


# --------------------------------------------------------------- (e) radius 0, (f) label flips
@pytest.mark.parametrize("method", ["enumeration", "oracle"])
def test_radius_zero_is_the_empirical_distribution(method):
    Xn, Z, y, X, schema = _data(2, 8, 2, "classification")
    rng = np.random.default_rng(3)
    b0, coef = rng.normal(), rng.normal(size=schema.n_encoded)
    res = dk.worst_case(_model(b0, coef), X, y, _ball(0.0, kappa=0.5), schema=schema, loss="logistic",
                        method=method)
    assert res.n_atoms == 8 and res.attained
    np.testing.assert_array_equal(res.atoms["sample"], np.arange(8))
    np.testing.assert_allclose(res.atoms["mass"], 1 / 8)
    assert (res.atoms["cost"] == 0).all() and (res.atoms["n_changed"] == 0).all()
    nominal = loss_value("logistic", y * (design_matrix(Xn, Z, LEVELS) @ np.r_[b0, coef]))
    assert res.value == pytest.approx(nominal.mean(), rel=1e-12) == res.nominal_risk
    assert res.budget_used == 0.0


def test_cheap_label_flips_appear_as_atoms():
    """(f) finite kappa below the categorical costs: the worst case flips labels."""
    Xn, Z, y, X, schema = _data(9, 9, 0, "classification")
    rng = np.random.default_rng(2)
    b0, coef = rng.normal(), rng.normal(size=schema.n_encoded)
    for method in ("enumeration", "oracle"):
        res = dk.worst_case(_model(b0, coef), X, y, _ball(0.2, kappa=0.1, delta=[5.0, 5.0, 5.0]),
                            schema=schema, loss="logistic", method=method)
        flips = res.atoms[res.atoms["flipped"]]
        assert len(flips) > 0 and (flips["changed"] == "<label>").any()
        check_distribution(res, Xn, Z, y, b0, coef, loss="logistic", loss_param=None,
                           task="classification", kappa=0.1, radius=0.2, delta=np.full(3, 5.0))
    # with infinite kappa nothing flips
    res = dk.worst_case(_model(b0, coef), X, y, _ball(0.2), schema=schema, loss="logistic")
    assert not res.atoms["flipped"].any()


# ------------------------------------------------------------------- (g) the limiting case
@pytest.mark.parametrize("norm_p", [1, 2])
def test_numerical_limit_is_flagged_and_approached(norm_p):
    """(g) lam* = lam_min > 0 with budget left: attained=False, the limiting direction is described,
    and moving a vanishing mass along it does approach the reported value."""
    Xn, Z, y, X, schema = _data(5, 7, 2, "classification")
    b0 = 0.1
    coef = np.r_[2.0, -1.0, 0.05 * np.ones(schema.n_encoded - 2)]  # categorical moves gain little
    radius = 0.3
    for method in ("enumeration", "oracle"):
        res = dk.worst_case(_model(b0, coef), X, y, _ball(radius, norm_p=norm_p), schema=schema,
                            loss="logistic", method=method)
        assert not res.attained and res.lam == pytest.approx(res.lam_min)
        lim = res.limit
        assert lim.kind == "numerical" and lim.rate == pytest.approx(res.lam_min)
        assert lim.features == (["x0"] if norm_p == 1 else ["x0", "x1"])
        assert "not attained" in str(lim) and "limit" in res.summary()
        ref = worst_case_risk((b0, coef[:2], coef[2:]), Xn, Z, LEVELS, y, task="classification",
                              loss="logistic", radius=radius, norm_p=norm_p, delta=DELTA)
        assert res.value == pytest.approx(ref, rel=1e-7)
        check_distribution(res, Xn, Z, y, b0, coef, loss="logistic", loss_param=None,
                           task="classification", kappa=np.inf, radius=radius)
        # the direction costs 1 per unit and raises the loss at rate lam_min
        assert np.linalg.norm(lim.direction, ord=norm_p) == pytest.approx(1.0)
        t = 1e7
        atoms = res.atoms
        i = int(np.flatnonzero(atoms["sample"].to_numpy() == lim.sample)[0])
        m = lim.budget / t
        Xa, ya, mass = res.distribution_matrix()
        moved = Xa[i].copy()
        moved[:2] += t * lim.direction
        f = design_matrix(moved[None, :2], moved[None, 2:].astype(int), LEVELS) @ np.r_[b0, coef]
        approx = res.expected_loss + m * (loss_value("logistic", ya[i] * f)[0] - atoms["loss"][i])
        assert approx == pytest.approx(res.value, rel=1e-5)


def test_regression_label_limit():
    """Regression with a finite label cost below the numerical floor: the label escapes (kind='label')."""
    Xn, Z, y, X, schema = _data(6, 8, 1, "regression")
    coef = np.r_[0.01, 0.02 * np.ones(schema.n_encoded - 1)]
    res = dk.worst_case(_model(0.0, coef), X, y, _ball(0.5, kappa=0.5), schema=schema,
                        loss=dk.losses.Huber(1.0), method="oracle")
    assert not res.attained and res.limit.kind == "label"
    assert res.lam_min == pytest.approx(1.0 / 0.5)
    assert abs(res.limit.label_direction) == pytest.approx(1 / 0.5)
    ref = worst_case_risk((0.0, coef[:1], coef[1:]), Xn, Z, LEVELS, y, task="regression", loss="huber",
                          loss_param=1.0, radius=0.5, delta=DELTA, kappa=0.5)
    assert res.value == pytest.approx(ref, rel=1e-7)


# ------------------------------------------------------------------------------ scale, auto
def test_oracle_is_vectorized_and_auto_switches(monkeypatch):
    rng = np.random.default_rng(0)
    N, m = 3000, 8
    Z = rng.integers(0, 3, size=(N, m))
    Xn = rng.normal(size=(N, 2))
    X = np.column_stack([Xn, Z]).astype(float)
    y = np.where(rng.random(N) < 0.5, -1.0, 1.0)
    schema = FeatureSchema.infer(X, list(range(2, 2 + m)), [[0, 1, 2]] * m)
    coef = rng.normal(size=schema.n_encoded) * 0.5
    coef[:2] = 0.05
    ball = dk.Wasserstein(dk.GroundMetric(label=dk.LabelCost(2.0)), radius=0.5)
    res = dk.worst_case(_model(0.1, coef), X, y, ball, schema=schema, loss="logistic")
    assert res.method == "oracle" and res.time < 5.0  # 3000 * 3^8 * 2 rows: too many to enumerate
    assert res.n_atoms <= N + 1 and res.attained and res.gap == pytest.approx(0, abs=1e-8)
    assert res.budget_used == pytest.approx(0.5, rel=1e-9)
    import drokit.certificates.support as support
    monkeypatch.setattr(support, "AUTO_ENUMERATION_ROWS", 0)   # read where the rows are chosen
    Xn2, Z2, y2, X2, schema2 = _data(1, 6, 1, "classification")
    small = dk.worst_case(_model(0.0, np.ones(schema2.n_encoded)), X2, y2, _ball(0.2), schema=schema2,
                          loss="hinge")
    assert small.method == "oracle"


# --------------------------------------------------------------------------- (h) bad input
def test_bad_input_names_the_argument():
    Xn, Z, y, X, schema = _data(4, 9, 2, "classification")
    clf = dk.DROClassifier("hinge", _ball(0.1), categorical_features=[2, 3, 4])
    with pytest.raises(NotFittedError, match="model"):
        dk.worst_case(clf, X, y)
    clf.fit(X, y)
    with pytest.raises(dk.DataError, match="X has 4 features, but DROClassifier is expecting 5"):
        dk.worst_case(clf, X[:, :4], y)
    with pytest.raises(dk.DataError, match="X and y have different lengths"):
        dk.worst_case(clf, X, y[:-1])
    Xnan = X.copy()
    Xnan[2, 0] = np.nan
    with pytest.raises(dk.DataError, match="X column 'x0' has 1 NaN"):
        dk.worst_case(clf, Xnan, y)
    ynan = y.copy()
    ynan[3] = np.nan
    with pytest.raises(dk.DataError, match="y has 1 NaN"):
        dk.worst_case(clf, X, ynan)
    with pytest.raises(dk.DataError, match="y has label"):
        dk.worst_case(clf, X, np.where(y > 0, 1.0, 5.0))
    with pytest.raises(dk.ParameterError, match="radius"):
        dk.worst_case(clf, X, y, dk.Wasserstein(radius=-0.1))
    with pytest.raises(dk.ParameterError, match="ambiguity"):
        dk.worst_case(clf, X, y, ambiguity="big")
    with pytest.raises(dk.ParameterError, match="method"):
        dk.worst_case(clf, X, y, method="lp")
    with pytest.raises(ValueError, match="1D array"):
        dk.worst_case(clf, X[:, 0], y)
    with pytest.raises(TypeError, match="model must be"):
        dk.worst_case("clf", X, y)
    with pytest.raises(TypeError, match="loss="):
        dk.worst_case(_model(0.0, np.zeros(schema.n_encoded)), X, y, _ball(0.1), schema=schema)
    with pytest.raises(dk.DataError, match="coef_ has 3 entries"):
        dk.worst_case(_model(0.0, np.zeros(3)), X, y, _ball(0.1), schema=schema, loss="hinge")
    with pytest.raises(dk.ParameterError, match="ambiguity is required"):
        dk.worst_case(_model(0.0, np.zeros(schema.n_encoded)), X, y, schema=schema, loss="hinge")


def test_free_numerical_feature_makes_the_risk_unbounded():
    Xn, Z, y, X, schema = _data(4, 6, 2, "classification")
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=[0.0, 1.0]))
    coef = np.r_[0.5, 0.0, np.zeros(schema.n_encoded - 2)]
    res = dk.worst_case(_model(0.0, coef), X, y, dk.Wasserstein(metric, 0.1), schema=schema,
                        loss="logistic")
    assert res.value == np.inf and not res.attained and res.n_atoms == 0
    assert res.limit.kind == "unbounded" and res.limit.features == ["x0"] and "unbounded" in str(res.limit)


def test_generic_model_reports_the_users_labels():
    Xn, Z, y, X, schema = _data(8, 7, 0, "classification")
    labels = np.where(y > 0, "yes", "no")
    rng = np.random.default_rng(4)
    b0, coef = rng.normal(), rng.normal(size=schema.n_encoded)
    res = dk.worst_case(_model(b0, coef), X, labels, _ball(0.5, kappa=0.2), schema=schema, loss="hinge")
    same = dk.worst_case(_model(b0, coef), X, y, _ball(0.5, kappa=0.2), schema=schema, loss="hinge")
    assert res.value == same.value and set(res.atoms["label"]) <= {"yes", "no"}
    np.testing.assert_array_equal(res.atoms["label"] == "yes", same.atoms["label"] > 0)
