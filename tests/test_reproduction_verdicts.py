"""The statistics of the reproductions' verdicts (issue 26: reproductions/verdicts.py), checked independently:

* Holm's adjustment against a hand-computed example (and NaN left out of the family);
* the paired difference against ``scipy.stats.ttest_rel`` (p-value and confidence interval); its detectable
  difference has power 0.8 under the noncentral t distribution (to 0.01 for 5, 20 and 100 splits);
* the Wilcoxon p-values against ``scipy.stats.wilcoxon``;
* the four verdicts on synthetic claims built to be each one: A clearly better (reproduced), B clearly better
  (contradicted), no difference where the paper's is large and detectable (not reproduced), no difference where the
  paper's is far below the noise (not testable); Holm over a family raises p-values, never lowers them;
* the committed selvi2022 and belbasi2023 reports carry a verdict section.
"""

import numpy as np
import pytest
from scipy import stats

from reproductions import freshness
from reproductions.verdicts import ALPHA, POWER, ClaimTest, PairedDifference, family, holm, wilcoxon_p


def test_holm_hand_computed():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.5]), [0.04, 0.09, 0.09, 0.5])
    out = holm([0.02, np.nan, 0.01])
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.02])
    assert holm([0.6, 0.7]).max() == 1.0


def test_paired_difference_against_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.2, 0.05, 12), rng.normal(0.22, 0.05, 12)
    diff = PairedDifference.of(a, b)
    ref = stats.ttest_rel(a, b, alternative="less")
    assert diff.p_better == pytest.approx(ref.pvalue, rel=1e-10)
    interval = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert (diff.low, diff.high) == pytest.approx((interval.low, interval.high), rel=1e-10)
    assert diff.mean == pytest.approx(np.mean(a - b)) and diff.n == 12
    assert diff.effect == pytest.approx(np.mean(a - b) / np.std(a - b, ddof=1))


@pytest.mark.parametrize("n", [5, 20, 100])
def test_detectable_difference_has_the_stated_power(n):
    d = np.random.default_rng(n).normal(size=n)
    diff = PairedDifference.of(d, np.zeros(n))
    se = d.std(ddof=1) / np.sqrt(n)
    critical = stats.t.ppf(1 - ALPHA, n - 1)
    power = 1 - stats.nct.cdf(critical, n - 1, diff.detectable / se)
    assert power == pytest.approx(POWER, abs=0.01)


def test_wilcoxon_against_scipy():
    d = np.array([-0.03, -0.01, 0.0, -0.02, 0.005, -0.04, -0.015, 0.01])
    better, worse = wilcoxon_p(d)
    assert better == pytest.approx(stats.wilcoxon(d, zero_method="zsplit", alternative="less").pvalue)
    assert worse == pytest.approx(stats.wilcoxon(d, zero_method="zsplit", alternative="greater").pvalue)
    assert wilcoxon_p(np.zeros(5)) == (1.0, 1.0)


def _claim(shift, noise, published_gap, sets=10, splits=5, seed=0):
    """A claim over ``sets`` data sets: A = B + shift + noise per split; the paper's A - B is ``published_gap``."""
    rng = np.random.default_rng(seed)
    errors = {}
    for j in range(sets):
        b = rng.uniform(0.1, 0.3, splits)
        errors[f"set{j}"] = {"A": b + shift + rng.normal(0, noise, splits), "B": b}
    return ClaimTest.of("A < B", "A", "B", errors, {f"set{j}": published_gap for j in range(sets)})


def test_verdicts_on_synthetic_claims():
    assert _claim(-0.03, 0.005, -0.03).verdict() == "reproduced"
    assert _claim(+0.03, 0.005, -0.03).verdict() == "contradicted"
    assert _claim(0.0, 0.005, -0.10).verdict() == "not reproduced"
    assert _claim(0.0, 0.05, -0.002).verdict() == "not testable at this size"
    one = _claim(-0.004, 0.01, -0.004, seed=3)
    adjusted = family([one, _claim(0.0, 0.01, 0.0, seed=4), _claim(0.0, 0.01, 0.0, seed=5)])[0]
    assert adjusted.wilcoxon_better >= one.wilcoxon_better
    assert "Wilcoxon over data sets" in one.sentence() and one.sentence().startswith(f"**{one.verdict()}**")


@pytest.mark.parametrize("paper", ["selvi2022", "belbasi2023"])
def test_committed_reports_have_verdicts(paper):
    text = (freshness.REPORTS[paper] / "README.md").read_text()
    assert "## Verdicts from statistics" in text
    assert any(v in text for v in ("| reproduced |", "| not testable at this size |", "| not reproduced |"))
