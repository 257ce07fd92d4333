"""MOT-DRO training through the estimators (issue 23; ``spec/mot-dro-training.md``): ``DROClassifier`` /
``DRORegressor(ambiguity=dk.OTMoment(..., radius=rho, exponent=1))`` equal the independent full-enumeration training
program of ``tests/reference/mot_dro.py`` with every row at once and through the cutting plane; the returned model's
objective is its exact worst-case risk (the finite-support primal at the fitted model); the limits (weights fixed =
the Wasserstein fit of radius rho / theta1), sample weights as repeated rows, and the errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import drokit as dk

pytest.importorskip("cvxpy")

from reference import brute_force as bf  # noqa: E402
from reference.mot_dro import mot_training_value, worst_case_primal  # noqa: E402

LEVELS = [3, 2]
DELTA = np.array([0.7, 1.3])
GAMMA = np.array([1.2])
LOSSES = {"logistic": dk.losses.Logistic(), "hinge": dk.losses.Hinge(), "smooth_hinge": dk.losses.SmoothHinge(),
          "huber": dk.losses.Huber(delta=0.8), "pinball": dk.losses.Pinball(tau=0.3)}
PARAMS = {"huber": 0.8, "pinball": 0.3}


def _metric(kappa, gamma=GAMMA):
    return dk.GroundMetric(numerical=dk.NormCost(p=1, weights=gamma), categorical=dk.MismatchCost(weights=DELTA),
                           label=dk.LabelCost(kappa=kappa))


def _frame(X_num, Z):
    return pd.DataFrame({"x": X_num[:, 0], "c": pd.Categorical(Z[:, 0], categories=range(LEVELS[0])),
                         "d": pd.Categorical(Z[:, 1], categories=range(LEVELS[1]))})


def _fit(loss, seed, rho, theta1, theta2, divergence, *, max_configurations=1_000_000, n=7):
    task = "classification" if loss in bf.CLASSIFICATION_LOSSES else "regression"
    kappa = 1.5 if task == "classification" else 2.0
    X_num, Z, y = bf.random_instance(seed, n, 1, LEVELS, task)
    amb = dk.OTMoment(_metric(kappa), theta1=theta1, theta2=theta2, divergence=divergence, radius=rho, exponent=1)
    Estimator = dk.DROClassifier if task == "classification" else dk.DRORegressor
    model = Estimator(loss=LOSSES[loss], ambiguity=amb, max_configurations=max_configurations).fit(_frame(X_num, Z), y)
    ref = mot_training_value(X_num, Z, LEVELS, y, task=task, loss=loss, loss_param=PARAMS.get(loss), rho=rho,
                             theta1=theta1, theta2=theta2, divergence=divergence, gamma=GAMMA, delta=DELTA,
                             kappa=kappa)
    return model, ref


SETTINGS = [(0.3, 1.0, 1.0), (0.1, 0.5, 2.0), (0.3, np.inf, 0.5), (0.2, 1.0, np.inf)]


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize("loss", list(LOSSES))
def test_fits_equal_the_reference_with_every_row_and_by_the_cutting_plane(loss, divergence):
    for k, (rho, theta1, theta2) in enumerate(SETTINGS):
        for max_configurations in (1_000_000, 1):          # every row in one program; the nominal rows first
            model, ref = _fit(loss, 60 + k, rho, theta1, theta2, divergence, max_configurations=max_configurations)
            res = model.result_
            assert res.status == "optimal" and res.method == "mot"
            assert res.objective == pytest.approx(ref["value"], rel=1e-6, abs=1e-7), (rho, theta1, theta2)
            assert res.lower_bound <= res.objective == res.upper_bound
            assert res.upper_bound - res.lower_bound <= 1e-6 * max(abs(res.upper_bound), 1e-2)


def test_the_objective_is_the_fitted_models_exact_worst_case():
    """Categorical data (every move enumerable): the finite-support primal at the returned model equals the
    objective (an upper bound computed by drokit's oracle, checked by the reference's primal)."""
    _, Z, y = bf.random_instance(8, 9, 0, LEVELS, "classification")
    X = _frame(np.zeros((len(y), 1)), Z)[["c", "d"]]
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=DELTA), label=dk.LabelCost(kappa=1.5))
    for divergence in ("kl", "chi2"):
        model = dk.DROClassifier(ambiguity=dk.OTMoment(metric, theta1=1.0, theta2=0.5, divergence=divergence,
                                                       radius=0.2)).fit(X, y)
        b0, bz = float(model.result_.intercept), model.result_.coef
        sc, losses = bf.scenario_losses((b0, np.zeros(0), bz), np.zeros((len(y), 0)), Z, LEVELS, y,
                                        task="classification", loss="logistic", delta=DELTA, kappa=1.5)
        order = np.argsort(sc["idx"], kind="stable")
        L, C = losses[order].reshape(len(y), -1), sc["cost"][order].reshape(len(y), -1)
        primal = worst_case_primal(L, C, np.full(len(y), 1 / len(y)), 0.2, 1.0, 0.5, divergence)
        assert model.result_.objective == pytest.approx(primal, rel=1e-6)


def test_weights_fixed_is_the_wasserstein_fit():
    """theta2 = inf: the Wasserstein model of cost d and radius rho / theta1, through the public API."""
    X_num, Z, y = bf.random_instance(5, 40, 1, LEVELS, "classification")
    X = _frame(X_num, Z)
    mot = dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), theta1=2.0, theta2=np.inf, radius=0.3,
                                                 exponent=1)).fit(X, y)
    ball = dk.DROClassifier(ambiguity=dk.Wasserstein(_metric(1.5), radius=0.15)).fit(X, y)
    assert mot.result_.objective == pytest.approx(ball.result_.objective, rel=1e-6)
    np.testing.assert_allclose(mot.predict_proba(X), ball.predict_proba(X), atol=1e-3)


def test_reweighting_adds_to_the_moves_and_the_risk_grows_with_the_radius():
    X_num, Z, y = bf.random_instance(6, 40, 1, LEVELS, "classification")
    X = _frame(X_num, Z)

    def value(theta1, theta2, rho):
        amb = dk.OTMoment(_metric(1.5), theta1=theta1, theta2=theta2, radius=rho, exponent=1)
        return dk.DROClassifier(ambiguity=amb).fit(X, y).result_.objective
    joint, moves, weights = value(1.0, 1.0, 0.2), value(1.0, np.inf, 0.2), value(np.inf, 1.0, 0.2)
    assert joint >= max(moves, weights) - 1e-7
    assert value(1.0, 1.0, 0.05) < joint < value(1.0, 1.0, 0.5)


def test_sample_weight_equals_repeated_rows():
    X_num, Z, y = bf.random_instance(7, 12, 1, LEVELS, "classification")
    X = _frame(X_num, Z)
    w = np.arange(1, 13) % 3 + 1
    amb = dk.OTMoment(_metric(1.5), theta1=1.0, theta2=1.0, divergence="chi2", radius=0.2, exponent=1)
    weighted = dk.DROClassifier(ambiguity=amb).fit(X, y, sample_weight=w)
    repeated = dk.DROClassifier(ambiguity=amb).fit(X.loc[X.index.repeat(w)].reset_index(drop=True), np.repeat(y, w))
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, rel=1e-6)


def test_errors_are_named():
    X_num, Z, y = bf.random_instance(5, 30, 1, LEVELS, "classification")
    X = _frame(X_num, Z)
    with pytest.raises(dk.ParameterError, match="needs a radius to be fitted"):
        dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), exponent=1)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="pass OTMoment\\(..., exponent=1\\)"):
        dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), radius=0.1)).fit(X, y)
    # numerical features immutable: the exponent does not matter
    immutable = dk.OTMoment(_metric(1.5, gamma=np.array([np.inf])), radius=0.1)
    assert dk.DROClassifier(ambiguity=immutable).fit(X, y).result_.status == "optimal"
    with pytest.raises(dk.ParameterError, match="exponent must be 1"):
        dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), radius=0.1, exponent=3)).fit(X, y)
    with pytest.raises(dk.ParameterError, match="OTMoment radius must be finite and >= 0"):
        dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), radius=-1.0, exponent=1)).fit(X, y)
    amb = dk.OTMoment(_metric(1.5), radius=0.1, exponent=1)
    with pytest.raises(dk.ParameterError, match="method='monolithic' fits a Wasserstein ball; this problem's ambiguity "
                                                "set is an OT-with-moment set"):
        dk.DROClassifier(ambiguity=amb, method="monolithic").fit(X, y)
    with pytest.raises(dk.ParameterError, match="method='mot' fits an OT-with-moment set"):
        dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.1), method="mot").fit(X, y)
    model = dk.DROClassifier(ambiguity=amb).fit(X, y)
    with pytest.raises(dk.ParameterError, match="squared cost"):
        dk.stability(model, X, y, risk=1.0, ambiguity=amb)
    three = np.asarray(y).copy()
    three[:3] = 2
    with pytest.raises(dk.DataError, match="OTMoment"):
        dk.DROClassifier(ambiguity=amb).fit(X, three)


def test_the_kl_ball_is_the_familiar_closed_form():
    """OTMoment.divergence_ball("kl", delta): at the fitted model, the objective equals
    min_h h delta + h log mean exp(loss_n / h) over the nominal losses (computed here by a scalar search)."""
    from scipy.optimize import minimize_scalar
    X_num, Z, y = bf.random_instance(4, 30, 1, LEVELS, "classification")
    X = _frame(X_num, Z)
    for delta in (0.05, 0.4):
        model = dk.DROClassifier(ambiguity=dk.OTMoment.divergence_ball("kl", delta)).fit(X, y)
        losses = np.logaddexp(0.0, -np.where(y == 1, 1.0, -1.0) * model.decision_function(X))
        closed = minimize_scalar(lambda h: h * delta + h * np.log(np.mean(np.exp(losses / h))), bounds=(1e-4, 1e4),
                                 method="bounded", options={"xatol": 1e-12}).fun
        assert model.result_.objective == pytest.approx(closed, rel=1e-6)
    chi2 = dk.DROClassifier(ambiguity=dk.OTMoment.divergence_ball("chi2", 0.4)).fit(X, y)
    assert chi2.result_.status == "optimal" and chi2.result_.iterations == 1     # no move: one program


@pytest.mark.parametrize("search", ["slope_cuts", "none"])
def test_progress_lines_and_the_solver_record(search):
    """verbose=2 logs each round (MOT phase 1's solves and the slope-cut masters by default, the masters over
    configuration rows with ``search="none"``); result_.attempts records every master solve."""
    import contextlib
    import io
    X_num, Z, y = bf.random_instance(5, 60, 1, LEVELS, "classification")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        model = dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), radius=0.1, exponent=1), verbose=2,
                                 max_configurations=1, method_options={"search": search}).fit(_frame(X_num, Z), y)
    lines = ("mot phase 1 solve", "mot slope cuts   1:") if search == "slope_cuts" else ("mot round 1:",)
    assert all(line in err.getvalue() for line in lines)
    assert len(model.result_.attempts) >= model.result_.iterations >= 2
    assert ("mot_slope_cuts" in model.result_.auxiliary) == (search == "slope_cuts")



@pytest.mark.parametrize("divergence", ["kl", "chi2"])
@pytest.mark.parametrize("theta1, theta2", [(1.0, 1.0), (0.5, 2.0), (np.inf, 1.0), (1.0, np.inf)])
def test_worst_case_distribution_attains_the_fits_objective(divergence, theta1, theta2):
    """dk.worst_case of a MOT-DRO model on its training data: the value is the fit's objective, the atoms are a
    distribution (masses p_n w_n, total 1) whose expected loss equals the value and which spends exactly the budget
    (theta1 sum mass cost + theta2 sum p phi(w)) when the multiplier is positive (spec §3: the kink split)."""
    from drokit.evaluation.mot_worst_case_distribution import divergence_value
    _, Z, y = bf.random_instance(12, 25, 0, LEVELS, "classification")
    X = _frame(np.zeros((len(y), 1)), Z)[["c", "d"]]
    metric = dk.GroundMetric(categorical=dk.MismatchCost(weights=DELTA), label=dk.LabelCost(kappa=1.5))
    amb = dk.OTMoment(metric, theta1=theta1, theta2=theta2, divergence=divergence, radius=0.2)
    model = dk.DROClassifier(ambiguity=amb).fit(X, y)
    wc = dk.worst_case(model, X, y)
    assert wc.value == pytest.approx(model.result_.objective, rel=1e-7)
    atoms = wc.atoms
    assert atoms["mass"].sum() == pytest.approx(1.0, abs=1e-9)
    assert atoms["mass"] @ atoms["loss"] == pytest.approx(wc.value, rel=1e-6)
    assert wc.lower_bound == pytest.approx(wc.value, rel=1e-6) and wc.attained
    # the weight of each sample (its atoms' mass over p_n = 1/N) and the budget spent
    w = atoms.groupby("sample")["mass"].sum().reindex(range(len(y)), fill_value=0.0).to_numpy() * len(y)
    spent = (theta1 * float(atoms["mass"] @ atoms["cost"]) if np.isfinite(theta1) else 0.0) + \
        (theta2 * float(np.mean(divergence_value(w, divergence))) if np.isfinite(theta2) else 0.0)
    assert spent == pytest.approx(0.2, abs=1e-6) and wc.budget_used == pytest.approx(spent, abs=1e-9)
    if np.isinf(theta1):
        assert not atoms["flipped"].any() and (atoms["n_changed"] == 0).all()      # reweighting only
    if np.isinf(theta2):
        assert np.allclose(w, 1.0)                                                  # moves only


def test_worst_case_on_other_data_and_the_squared_cost_with_numerical_moves():
    X_num, Z, y = bf.random_instance(13, 40, 1, LEVELS, "classification")
    X = _frame(X_num, Z)
    model = dk.DROClassifier(ambiguity=dk.OTMoment(_metric(1.5), radius=0.1, exponent=1)).fit(X.iloc[:30], y[:30])
    test = dk.worst_case(model, X.iloc[30:], y[30:])
    assert test.nominal_risk <= test.value and test.atoms["mass"].sum() == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(dk.ParameterError, match="exponent=1"):
        dk.worst_case(model, X, y, ambiguity=dk.OTMoment(_metric(1.5), radius=0.1))
