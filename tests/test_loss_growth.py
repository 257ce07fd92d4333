"""Losses that grow faster than linearly (issue 20, item 8).

The type-1 Wasserstein worst case of a loss without a finite Lipschitz constant is +inf for every model with
a nonzero coefficient on a numerical feature that can move (the adversary moves it far enough), and for every
regression model whose label can move (finite kappa).  drokit decides Lipschitz-ness symbolically (sympy limits
of L' at +-oo, never a grid estimate) and refuses such a loss at fit time with a clear error when the problem
has such moves; without them (only categorical moves and label flips, which are bounded, or radius 0) the
worst case is finite and the fit must match an independent enumeration.  A hand-written loss that declares
an infinite Lipschitz constant, or none, is treated the same way.
"""

import warnings

import numpy as np
import pytest

import drokit as dk
from drokit.conic import Affine
from drokit.losses import Loss, from_sympy
from tests.factories import two_plus_two_frame
from tests.reference import brute_force as bf

sp = pytest.importorskip("sympy")
cp = pytest.importorskip("cvxpy")
e = sp.Symbol("e")
SQUARED_HINGE = sp.Max(0, 1 - e) ** 2


class HandSquaredHinge(Loss):
    """``max(0, 1 - e)^2`` written by hand, declaring an infinite Lipschitz constant."""

    name = "hand_squared_hinge"
    task = "classification"
    decreasing = True
    cone_class = "SOCP"

    def value(self, e):
        return np.maximum(0.0, 1.0 - np.asarray(e, dtype=float)) ** 2

    def derivative(self, e):
        return -2.0 * np.maximum(0.0, 1.0 - np.asarray(e, dtype=float))

    def second_derivative(self, e):
        return 2.0 * (np.asarray(e, dtype=float) < 1).astype(float)

    @property
    def lipschitz(self):
        return np.inf

    def epigraph(self, pb, u, t):
        # r >= 1 - u, r >= 0, r^2 <= t  as  ||(2 r, t - 1)|| <= t + 1
        r = pb.aux("sqh_r", u.size)
        pb.add_nonneg(Affine.vstack([r - (1.0 - u), r]))
        pb.add_soc(t + 1.0, [r * 2.0, t - 1.0])


class SilentSquaredHinge(HandSquaredHinge):
    """The same loss without a ``lipschitz`` member: the protocol's default (none declared)."""

    name = "silent_squared_hinge"
    lipschitz = Loss.lipschitz


def _categorical_frame(n=30, seed=4):
    """two_plus_two_frame's columns with labels that no feature separates (random, tilted by a and c)."""
    X, _ = two_plus_two_frame(n, seed)
    rng = np.random.default_rng(seed)
    score = 0.8 * X["a"] + (X["c"] == "q") - 0.5
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-score)), 1.0, -1.0)
    return X, y


def _enumeration_value(X, y, radius, numerical=("a", "b")):
    """The DRO optimum with the squared hinge by explicit enumeration of every categorical configuration and
    label (tests/reference/brute_force.py's scenarios; numerical features fixed, as they cannot move)."""
    Xn = X[list(numerical)].to_numpy(float) if numerical else np.zeros((len(X), 0))
    Z = np.column_stack([X[c].cat.codes.to_numpy() for c in ("c", "d")])
    levels = [3, 2]
    yy = np.where(np.asarray(y) > 0, 1.0, -1.0)
    sc = bf._scenarios(Xn, Z, levels, yy, "classification", np.ones(2), 1.0, np.inf)
    A = np.asarray(sc["A"])
    beta = cp.Variable(A.shape[1])
    margin = cp.multiply(np.asarray(sc["sigma"]), A @ beta) + np.asarray(sc["off"])
    loss = cp.square(cp.pos(1 - margin))
    N = yy.size
    if radius == 0:
        nominal = np.asarray(sc["cost"]) == 0
        prob = cp.Problem(cp.Minimize(cp.sum(loss[np.flatnonzero(nominal)]) / N))
    else:
        lam, s = cp.Variable(nonneg=True), cp.Variable(N)
        prob = cp.Problem(cp.Minimize(lam * radius + cp.sum(s) / N),
                          [loss - lam * np.asarray(sc["cost"]) <= s[np.asarray(sc["idx"])]])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return float(prob.value)


# ------------------------------------------------------------------------------ the symbolic decision
def test_squared_hinge_is_decided_not_lipschitz_by_sympy_limits():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # no grid estimate, no "bounded numerically" warning
        loss = from_sympy(SQUARED_HINGE, e)
    assert loss.lipschitz == np.inf
    assert loss.asymptotic_slopes == (-np.inf, 0.0) == loss.slope_domain()
    assert loss.lipschitz_how.startswith("symbolic") and "grid" not in loss.lipschitz_how


@pytest.mark.parametrize("expr, slopes", [
    (sp.Max(0, 1 - e) ** 2, (-np.inf, 0.0)),
    (sp.Piecewise((e ** 2 / 2, sp.Abs(e) <= 1), (sp.Abs(e) - sp.Rational(1, 2), True)), (-1.0, 1.0)),
    (sp.Piecewise((0, e >= 1), ((1 - e) ** 2, True)), (-np.inf, 0.0)),
    (sp.Max(0, sp.Abs(e) - 1) ** 2, (-np.inf, np.inf)),
    (sp.exp(-e), (-np.inf, 0.0)),
    (e ** 2, (-np.inf, np.inf)),
    (e * sp.atan(e), (-np.pi / 2, np.pi / 2)),
    (sp.log(1 + sp.exp(-e)), (-1.0, 0.0)),
])
def test_asymptotic_slopes_are_derived_symbolically(expr, slopes):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        loss = from_sympy(expr, e, task="regression")
    assert loss.asymptotic_slopes == pytest.approx(slopes)
    assert loss.lipschitz == pytest.approx(max(abs(s) for s in slopes))
    assert "grid" not in loss.lipschitz_how


def test_undecided_lipschitz_needs_an_explicit_declaration(monkeypatch):
    """When sympy cannot take the limits, no grid estimate is accepted: the loss has no certified constant
    (refused with mutable numerical features) unless ``lipschitz=`` declares one, which is then checked
    against the grid's lower bound on sup |L'| (a grid can refute a declaration, never certify one)."""
    import drokit.losses.symbolic_analysis as analysis

    def undecided(d1, e, direction):
        raise analysis.UndecidedLimit("sympy could not take the limit (test)")

    monkeypatch.setattr(analysis, "asymptotic_slope", undecided)
    expr = sp.log(1 + sp.exp(-e))
    loss = from_sympy(expr, e)
    assert loss.lipschitz == np.inf and "undecided" in loss.lipschitz_how
    X, y = two_plus_two_frame(30, 3)
    with pytest.raises(dk.ParameterError, match="lipschitz="):
        dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    declared = from_sympy(expr, e, lipschitz=1.0)
    assert declared.lipschitz == 1.0 and "declared" in declared.lipschitz_how
    ref = dk.DROClassifier(loss="logistic", ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    ours = dk.DROClassifier(loss=declared, ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    assert ours.result_.objective == pytest.approx(ref.result_.objective, rel=1e-7)
    with pytest.raises(dk.ParameterError, match="below"):
        from_sympy(expr, e, lipschitz=0.5)       # max |L'| on the grid is ~1 > 0.5


def test_a_declared_lipschitz_constant_must_agree_with_the_derived_one():
    with pytest.raises(dk.ParameterError, match="grows faster than linearly"):
        from_sympy(SQUARED_HINGE, e, lipschitz=20002.0)
    with pytest.raises(dk.ParameterError, match="derived"):
        from_sympy(sp.log(1 + sp.exp(-e)), e, lipschitz=2.0)
    assert from_sympy(sp.log(1 + sp.exp(-e)), e, lipschitz=1.0).lipschitz == 1.0


# ------------------------------------------------------------------------------ refused at fit
@pytest.mark.parametrize("method", ["auto", "monolithic", "cutting_plane", "graph"])
def test_squared_hinge_is_refused_with_mutable_numerical_features(method):
    X, y = two_plus_two_frame(30, 3)
    clf = dk.DROClassifier(loss=from_sympy(SQUARED_HINGE, e), ambiguity=dk.Wasserstein(radius=0.1), method=method)
    with pytest.raises(dk.ParameterError) as info:
        clf.fit(X, y)
    msg = str(info.value)
    assert "Max(0, 1 - e)**2" in msg                              # names the loss
    assert "faster than linearly" in msg and "-oo" in msg          # why: an infinite asymptotic slope
    assert "'a'" in msg and "'b'" in msg                           # which features
    assert "immutable" in msg and "Lipschitz loss" in msg          # what to do


def test_squared_hinge_is_refused_on_numerical_data_by_the_closed_form():
    X, y = two_plus_two_frame(30, 3)
    with pytest.raises(dk.ParameterError, match="faster than linearly"):
        dk.DROClassifier(loss=from_sympy(SQUARED_HINGE, e), ambiguity=dk.Wasserstein(radius=0.1)).fit(X[["a", "b"]], y)


@pytest.mark.parametrize("loss", [HandSquaredHinge(), SilentSquaredHinge()], ids=lambda l: l.name)
def test_a_hand_written_loss_without_a_finite_lipschitz_constant_is_refused(loss):
    X, y = two_plus_two_frame(30, 3)
    with pytest.raises(dk.ParameterError) as info:
        dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(radius=0.1)).fit(X, y)
    msg = str(info.value)
    assert loss.name in msg and "'a'" in msg and "immutable" in msg
    assert ("does not declare" in msg) == (type(loss) is SilentSquaredHinge)


def test_regression_with_a_movable_label_is_refused():
    X, _ = two_plus_two_frame(30, 3)
    yr = np.random.default_rng(0).normal(size=30)
    metric = dk.GroundMetric(numerical=dk.NormCost(weights=np.inf), label=dk.LabelCost(kappa=2.0))
    with pytest.raises(dk.ParameterError, match="kappa"):
        dk.DRORegressor(loss=from_sympy(e ** 2, e, task="regression"),
                        ambiguity=dk.Wasserstein(metric, radius=0.1)).fit(X, yr)


# ------------------------------------------------------------------------------ finite worst case: fits
def test_squared_max_affine_losses_get_an_exact_second_order_cone_epigraph():
    from drokit.conic import ProgramBuilder
    from drokit.solvers import get_backend
    grid = np.linspace(-4, 4, 41)
    for expr in (SQUARED_HINGE, 3 * sp.Max(0, e - 1, -e - 1) ** 2, sp.Max(0, e) ** 2):
        loss = from_sympy(expr, e, task="regression")
        assert loss.form == "squared_pieces" and loss.cone_class == "SOCP"
        pb = ProgramBuilder()
        t = pb.var("t", grid.size)
        loss.epigraph(pb, pb.constant(grid), t)
        pb.minimize(t.sum())
        program = pb.build()
        sol = get_backend("clarabel").solve(program)
        np.testing.assert_allclose(program.value("t", sol.x), loss.value(grid), atol=1e-6)
    from drokit.losses.symbolic_forms import squared_pieces_form
    assert squared_pieces_form(sp.Max(1 - e, e - 3) ** 2, e) is None          # the max goes negative: not convex


@pytest.mark.parametrize("method", ["monolithic", "cutting_plane", "graph"])
@pytest.mark.parametrize("loss", ["sympy", "sympy_outer", "hand", "silent"])
def test_squared_hinge_fits_when_no_numerical_feature_can_move(method, loss):
    X, y = _categorical_frame()
    loss = {"sympy": from_sympy(SQUARED_HINGE, e), "sympy_outer": from_sympy(SQUARED_HINGE, e, conic="outer"),
            "hand": HandSquaredHinge(), "silent": SilentSquaredHinge()}[loss]
    metric = dk.GroundMetric(numerical=dk.NormCost(weights=np.inf))          # a, b immutable
    fit = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius=0.2), method=method).fit(X, y)
    r = fit.result_
    assert r.status == "optimal" and r.relative_gap <= 1e-6
    assert r.objective == pytest.approx(_enumeration_value(X, y, 0.2), rel=2e-6)


def test_squared_hinge_fits_on_categorical_data_only():
    X, y = _categorical_frame()
    X = X[["c", "d"]]
    fit = dk.DROClassifier(loss=from_sympy(SQUARED_HINGE, e), ambiguity=dk.Wasserstein(radius=0.2)).fit(X, y)
    assert fit.result_.relative_gap <= 1e-6
    assert fit.result_.objective == pytest.approx(_enumeration_value(X, y, 0.2, numerical=()), rel=2e-6)
    wc = dk.worst_case(fit, X, y)
    assert wc.value == pytest.approx(fit.result_.objective, rel=2e-6)


def test_squared_hinge_at_radius_zero_is_erm_with_numerical_features():
    X, y = _categorical_frame()
    fit = dk.DROClassifier(loss=from_sympy(SQUARED_HINGE, e), ambiguity=dk.Wasserstein(radius=0.0)).fit(X, y)
    assert fit.result_.method == "erm" and fit.result_.relative_gap <= 1e-6
    assert fit.result_.objective == pytest.approx(_enumeration_value(X, y, 0.0), rel=2e-6)


def test_the_worst_case_of_a_fixed_model_is_infinite_when_a_numerical_move_pays():
    """``dk.worst_case`` of a model with a nonzero numerical coefficient under a non-Lipschitz loss: +inf
    (the adversary moves that feature without bound), and finite once the feature is immutable."""
    X, y = _categorical_frame()
    fit = dk.DROClassifier(loss=from_sympy(SQUARED_HINGE, e), ambiguity=dk.Wasserstein(radius=0.0)).fit(X, y)
    assert np.any(fit.coef_[0, :2] != 0)
    assert dk.worst_case(fit, X, y, dk.Wasserstein(radius=0.1)).value == np.inf
    frozen = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(weights=np.inf)), radius=0.1)
    assert np.isfinite(dk.worst_case(fit, X, y, frozen).value)


def test_regression_non_lipschitz_loss_with_fixed_labels_on_categorical_data():
    X, _ = _categorical_frame()
    X = X[["c", "d"]]
    rng = np.random.default_rng(1)
    yr = (X["c"] == "q") * 1.0 - (X["d"] == "v") * 0.5 + rng.normal(size=len(X)) * 0.3
    fit = dk.DRORegressor(loss=from_sympy(e ** 2, e, task="regression"), ambiguity=dk.Wasserstein(radius=0.1)).fit(X, yr)
    assert fit.result_.relative_gap <= 1e-6
    # reference: min lam eps + mean max_z ((f(z) - y)^2 - lam D(z, z_n)) by enumeration
    Z = np.column_stack([X[c].cat.codes.to_numpy() for c in ("c", "d")])
    configs = bf.all_configurations([3, 2])
    onehots = bf.encode(configs, [3, 2])
    beta, lam, s = cp.Variable(1 + onehots.shape[1]), cp.Variable(nonneg=True), cp.Variable(len(X))
    cons = []
    for i in range(len(X)):
        D = np.array([bf.categorical_distance(z, Z[i], np.ones(2), 1.0) for z in configs])
        A = np.column_stack([np.ones(len(configs)), onehots])
        cons.append(cp.square(A @ beta - yr.iloc[i]) - lam * D <= s[i])
    prob = cp.Problem(cp.Minimize(lam * 0.1 + cp.sum(s) / len(X)), cons)
    prob.solve(solver=cp.CLARABEL)
    assert fit.result_.objective == pytest.approx(prob.value, rel=2e-6)
