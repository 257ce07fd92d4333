"""Dask collections as inputs (issue 25): predictions and the exact worst-case risk, partition by partition.

Independent checks: every Dask result equals the in-memory result of the same data (predictions exactly, the
worst-case risk to 1e-9 -- both are the same one-dimensional minimization, the Dask one over partition sums); the
distributed certificate brackets the in-memory value (lower <= WC <= upper); unequal and empty partitions and sample
weights; a ``dask.distributed`` client (in-process cluster) gives the same numbers; bad inputs raise clear errors.
"""

import numpy as np
import pandas as pd
import pytest

import drokit as dk
from drokit.exceptions import DataError, ParameterError

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")


def _mixed(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n),
                      "color": pd.Categorical(rng.choice(["red", "green", "blue"], size=n)),
                      "size": pd.Categorical(rng.choice(["s", "m", "l", "xl"], size=n))})
    score = X["x1"] - 0.5 * X["x2"] + (X["color"] == "red") - (X["size"] == "s") + rng.normal(scale=0.8, size=n)
    return X, pd.Series((score > 0).astype(int), name="y")


def _dask(X, y, npartitions=4, w=None):
    df = X.copy()
    df["y"] = y.values
    if w is not None:
        df["w"] = w
    d = dd.from_pandas(df, npartitions=npartitions)
    return d.drop(columns=[c for c in ("y", "w") if c in df]), d["y"], (d["w"] if w is not None else None)


@pytest.fixture(scope="module")
def fitted():
    X, y = _mixed()
    metric = dk.GroundMetric(numerical=dk.NormCost(p=1, weights=2.0), categorical=dk.MismatchCost(weights=1.0))
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(metric, radius=0.1)).fit(X, y)
    return clf, X, y


def test_predictions_equal_in_memory(fitted):
    clf, X, y = fitted
    Xd, _, _ = _dask(X, y, npartitions=3)
    for method in ("decision_function", "predict", "predict_proba", "predict_log_proba"):
        lazy = getattr(clf, method)(Xd)
        assert isinstance(lazy, da.Array), method
        np.testing.assert_array_equal(lazy.compute(), getattr(clf, method)(X))


def test_predictions_on_dask_arrays_and_regressor():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=150)
    reg = dk.DRORegressor(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    Xa = da.from_array(X, chunks=(40, 2))                      # column chunks are joined: whole rows per block
    np.testing.assert_allclose(reg.predict(Xa).compute(), reg.predict(X), rtol=0, atol=1e-12)


def test_multinomial_predict_proba():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"x": rng.normal(size=120), "c": pd.Categorical(rng.choice(list("abc"), size=120))})
    y = pd.Series(rng.choice(["u", "v", "w"], size=120))
    clf = dk.DROClassifier(ambiguity=dk.Wasserstein(radius=0.05)).fit(X, y)
    Xd, _, _ = _dask(X, y, npartitions=3)
    np.testing.assert_allclose(clf.predict_proba(Xd).compute(), clf.predict_proba(X), atol=1e-14)
    assert (clf.predict(Xd).compute() == clf.predict(X)).all()


@pytest.mark.parametrize("loss,kappa", [("logistic", np.inf), ("logistic", 1.0), ("hinge", np.inf),
                                        ("smooth_hinge", 0.5)])
def test_worst_case_equals_in_memory(loss, kappa):
    X, y = _mixed(seed=3)
    metric = dk.GroundMetric(numerical=dk.NormCost(p=2, weights=1.5), categorical=dk.MismatchCost(weights=0.7),
                             label=dk.LabelCost(kappa))
    clf = dk.DROClassifier(loss=loss, ambiguity=dk.Wasserstein(metric, radius=0.2)).fit(X, y)
    exact = dk.worst_case(clf, X, y)
    Xd, yd, _ = _dask(X, y, npartitions=5)
    result = dk.worst_case(clf, Xd, yd)
    assert result.value == pytest.approx(exact.value, rel=1e-9, abs=1e-12)
    # the certificate brackets the in-memory value, and closes
    assert result.lower_bound <= exact.value + 1e-10 <= result.value + 2e-10
    assert result.gap <= 1e-8 * max(1.0, abs(result.value))
    assert result.lam == pytest.approx(exact.lam, rel=1e-6, abs=1e-9) or result.gap <= 1e-9
    assert result.n_samples == len(X) and result.n_partitions == 5


def test_weights_unequal_and_empty_partitions_and_other_radius(fitted):
    clf, X, y = fitted
    w = np.random.default_rng(4).integers(0, 4, size=len(X)).astype(float)
    Xd, yd, wd = _dask(X, y, npartitions=6, w=w)
    keep = (Xd["x1"] > -0.3) | (yd > 0)                         # uneven partitions
    exact = dk.worst_case(clf, X[keep.compute().values], y[keep.compute().values],
                          sample_weight=w[keep.compute().values])
    result = dk.worst_case(clf, Xd[keep], yd[keep], sample_weight=wd[keep])
    assert result.value == pytest.approx(exact.value, rel=1e-9)
    # an empty partition: the first one filtered out entirely
    first = Xd.partitions[0].index.compute()
    empty = Xd.map_partitions(lambda part: pd.Series(~part.index.isin(first), index=part.index), meta=(None, bool))
    exact = dk.worst_case(clf, X.drop(index=first), y.drop(index=first))
    result = dk.worst_case(clf, Xd[empty], yd[empty])
    assert result.value == pytest.approx(exact.value, rel=1e-9)
    # another ball than the fitted one
    ball = dk.Wasserstein(dk.GroundMetric(numerical=dk.NormCost(p=np.inf, weights=1.0)), radius=0.3)
    assert dk.worst_case(clf, Xd, yd, ambiguity=ball).value == \
        pytest.approx(dk.worst_case(clf, X, y, ambiguity=ball).value, rel=1e-9)


def test_radius_zero_is_the_nominal_risk(fitted):
    clf, X, y = fitted
    Xd, yd, _ = _dask(X, y)
    ball = dk.Wasserstein(clf.ambiguity_.metric, radius=0.0)
    result = dk.worst_case(clf, Xd, yd, ambiguity=ball)
    assert result.value == pytest.approx(dk.worst_case(clf, X, y, ambiguity=ball).value, rel=1e-12)
    assert result.value == pytest.approx(result.nominal_risk, rel=1e-12)


def test_distributed_client_in_process(fitted):
    distributed = pytest.importorskip("distributed")
    clf, X, y = fitted
    Xd, yd, _ = _dask(X, y, npartitions=3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        on_cluster = dk.worst_case(clf, Xd, yd, client=client)
        current = dk.worst_case(clf, Xd, yd)                      # the current client
        proba = clf.predict_proba(Xd).compute()
    exact = dk.worst_case(clf, X, y)
    assert on_cluster.value == pytest.approx(exact.value, rel=1e-9)
    assert current.value == on_cluster.value
    np.testing.assert_array_equal(proba, clf.predict_proba(X))


def test_bad_inputs_raise_clear_errors(fitted):
    clf, X, y = fitted
    Xd, yd, _ = _dask(X, y, npartitions=4)
    unknown = Xd.assign(color=Xd["color"].astype(str).astype("category").cat.as_unknown())
    with pytest.raises(DataError, match="categorize"):
        clf.predict(unknown)
    with pytest.raises(DataError, match="categorize"):
        dk.worst_case(clf, unknown, yd)
    _, other_y, _ = _dask(X, y, npartitions=3)
    with pytest.raises(DataError, match="partitions"):
        dk.worst_case(clf, Xd, other_y)
    with pytest.raises(ParameterError, match="Dask"):     # fits on Dask: tests/test_dask_fit.py; penalties in memory
        dk.DROClassifier(l2_penalty=0.1).fit(Xd, yd)
    with pytest.raises(ParameterError, match="enumeration"):
        dk.worst_case(clf, Xd, yd, method="enumeration")
    with pytest.raises(ParameterError, match="client"):
        dk.worst_case(clf, X, y, client=object())
