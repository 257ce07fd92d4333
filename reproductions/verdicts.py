"""Verdicts from statistics (issue 26): paired differences with confidence intervals, Holm's correction, the
Wilcoxon signed-rank test over data sets, and one sentence per claim.

A paper's claim here is a comparison "model A has a lower test error than model B" over its data sets.  For data set
``j`` the reproduction has paired per-split errors, and the paper a published mean error of each model:

* per data set: the mean difference ``d_j = mean_s (A_s - B_s)`` over the splits ``s``, its ``1 - ALPHA`` confidence
  interval ``d_j +- t_{n-1} sd / sqrt(n)`` and the effect size ``d_j / sd`` (Cohen's ``d_z``), the one-sided paired
  t-test of "A better", Holm-adjusted over the data sets of the claim (:func:`holm`), and the *detectable* difference
  ``(t_{1-ALPHA,n-1} + t_{0.8,n-1}) sd / sqrt(n)``: the true difference a one-sided test at level ``ALPHA`` finds with
  probability 0.8 (:class:`PairedDifference`);
* over data sets: the one-sided Wilcoxon signed-rank test of the ``d_j`` (``scipy.stats.wilcoxon``, zero differences
  split between the signs), the mean of the ``d_j`` with its t-interval over data sets (:class:`ClaimTest`); the
  Wilcoxon p-values of a table's claims Holm-adjusted over the table (:func:`family`).

The verdict, decided before looking at the numbers (:meth:`ClaimTest.verdict`):

* **reproduced**: the Wilcoxon test finds A better (p < ALPHA);
* **contradicted**: it finds B better (the test in the other direction, p < ALPHA);
* **not reproduced**: neither, although the paper's differences are detectable at this size (on at least half of the
  data sets the published ``|A - B|`` is at least our detectable difference);
* **not testable at this size**: neither, and the paper's differences are below what this run can detect on most data
  sets (more splits are needed: the paper's protocol has 100).

Where the paper publishes no per-data-set differences (sun2025: box plots only) detectability cannot be judged, and
a claim neither direction supports is *not reproduced*.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence

import numpy as np
from scipy import stats

ALPHA = 0.05
#: power at which a difference counts as detectable
POWER = 0.8


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control): ``p_(i) -> max_{k <= i} min(1, (m - k + 1)
    p_(k))`` in increasing order of the raw p-values; NaN stays NaN and does not count in ``m``."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    running = 0.0
    for rank, index in enumerate(finite[np.argsort(p[finite], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[index]))
        out[index] = running
    return out


@dataclass
class PairedDifference:
    """``A - B`` over the paired splits of one data set (module docstring)."""

    mean: float
    low: float
    high: float
    effect: float            # Cohen's d_z = mean / sd (nan when sd = 0)
    p_better: float          # one-sided paired t-test of mean < 0 (A better)
    detectable: float        # the difference found with probability POWER at level ALPHA
    n: int

    @classmethod
    def of(cls, a: Sequence[float], b: Sequence[float]) -> "PairedDifference":
        d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
        n = d.size
        mean = float(d.mean()) if n else float("nan")
        if n < 2:
            return cls(mean, -np.inf, np.inf, float("nan"), float("nan"), np.inf, n)
        sd = float(d.std(ddof=1))
        se = sd / np.sqrt(n)
        half = float(stats.t.ppf(1 - ALPHA / 2, n - 1) * se)
        detectable = float((stats.t.ppf(1 - ALPHA, n - 1) + stats.t.ppf(POWER, n - 1)) * se)
        if sd <= 1e-15:                                   # every split the same difference
            p = 0.0 if mean < 0 else 1.0
            return cls(mean, mean, mean, float("nan"), p, 0.0, n)
        p = float(stats.t.cdf(mean / se, n - 1))
        return cls(mean, mean - half, mean + half, mean / sd, p, detectable, n)


@dataclass
class ClaimTest:
    """One claim "A has a lower error than B" over data sets: our paired differences, the paper's, the tests."""

    claim: str
    a: str
    b: str
    datasets: List[str]
    ours: List[PairedDifference]
    published: List[Optional[float]]          # the paper's mean(A) - mean(B) per data set (None: not published)
    holm_p: np.ndarray
    wilcoxon_better: float
    wilcoxon_worse: float
    mean: float
    mean_low: float
    mean_high: float

    @classmethod
    def of(cls, claim: str, a: str, b: str, errors: Dict[str, Dict[str, Sequence[float]]],
           published: Optional[Dict[str, Optional[float]]] = None) -> "ClaimTest":
        """``errors[data set][model]``: per-split errors in split order; ``published[data set]``: the paper's
        ``mean(A) - mean(B)``."""
        names = [n for n in errors if a in errors[n] and b in errors[n]]
        ours = [PairedDifference.of(errors[n][a], errors[n][b]) for n in names]
        pub = [None if published is None else published.get(n) for n in names]
        d = np.array([o.mean for o in ours])
        better, worse = wilcoxon_p(d)
        mean, low, high = _mean_interval(d)
        return cls(claim, a, b, names, ours, pub, holm([o.p_better for o in ours]), better, worse, mean, low, high)

    def detectable_share(self) -> float:
        """The share of data sets (with a published difference) where the paper's ``|A - B|`` is at least our
        detectable difference."""
        pairs = [(abs(p), o.detectable) for p, o in zip(self.published, self.ours) if p is not None]
        if not pairs:
            return float("nan")
        return float(np.mean([p >= det for p, det in pairs]))

    def verdict(self) -> str:
        if self.wilcoxon_better < ALPHA:
            return "reproduced"
        if self.wilcoxon_worse < ALPHA:
            return "contradicted"
        share = self.detectable_share()
        if not np.isfinite(share):           # no per-data-set effect published: the run is the paper's test itself
            return "not reproduced"
        return "not reproduced" if share >= 0.5 else "not testable at this size"

    def sentence(self) -> str:
        """The verdict with its evidence, in one sentence."""
        n = len(self.datasets)
        lower = sum(o.mean < 0 for o in self.ours)
        significant = int(np.sum(self.holm_p < ALPHA))
        share = self.detectable_share()
        detect = "" if not np.isfinite(share) else \
            f"; the paper's differences are detectable at this size on {round(share * n)} of {n}"
        return (f"**{self.verdict()}** -- {self.a} below {self.b} on {lower} of {n} data sets (significant after "
                f"Holm on {significant}); Wilcoxon over data sets p = {self.wilcoxon_better:.3g} (A better) / "
                f"{self.wilcoxon_worse:.3g} (B better); mean difference {100 * self.mean:+.2f} points "
                f"[{100 * self.mean_low:+.2f}, {100 * self.mean_high:+.2f}]{detect}.")


def wilcoxon_p(differences: Sequence[float]) -> tuple:
    """One-sided Wilcoxon signed-rank p-values over data sets: ``(differences < 0, differences > 0)``; zero
    differences split between the signs (``zero_method="zsplit"``); ``(1, 1)`` when every difference is 0 or there
    are none."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0 or np.all(d == 0):
        return 1.0, 1.0
    better = stats.wilcoxon(d, zero_method="zsplit", alternative="less").pvalue
    worse = stats.wilcoxon(d, zero_method="zsplit", alternative="greater").pvalue
    return float(better), float(worse)


def _mean_interval(d: np.ndarray) -> tuple:
    d = d[np.isfinite(d)]
    if d.size < 2:
        m = float(d.mean()) if d.size else float("nan")
        return m, -np.inf, np.inf
    half = float(stats.t.ppf(1 - ALPHA / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)


def family(tests: Sequence[ClaimTest]) -> List[ClaimTest]:
    """The claims of one table with their Wilcoxon p-values Holm-adjusted over the table (each direction its own
    family): a table of six claims does not get six chances at ``ALPHA``."""
    better = holm([t.wilcoxon_better for t in tests])
    worse = holm([t.wilcoxon_worse for t in tests])
    return [replace(t, wilcoxon_better=float(b), wilcoxon_worse=float(w)) for t, b, w in zip(tests, better, worse)]


def claims_table(tests: Sequence[ClaimTest]) -> List[List[str]]:
    """Rows ``claim | data sets | A lower | Holm-significant | Wilcoxon p | mean difference [CI] | verdict`` for
    :func:`reproductions.report.md_table`."""
    rows = []
    for t in tests:
        rows.append([t.claim, str(len(t.datasets)), f"{sum(o.mean < 0 for o in t.ours)}",
                     f"{int(np.sum(t.holm_p < ALPHA))}", f"{t.wilcoxon_better:.3g} / {t.wilcoxon_worse:.3g}",
                     f"{100 * t.mean:+.2f} [{100 * t.mean_low:+.2f}, {100 * t.mean_high:+.2f}]", t.verdict()])
    return rows


CLAIM_HEADERS = ["claim (A < B)", "data sets", "A lower", "significant (Holm)", "Wilcoxon p, Holm (A / B better)",
                 "mean A - B, points [95% CI]", "verdict"]


def per_dataset_rows(test: ClaimTest) -> List[List[str]]:
    """Per data set of one claim: ours ``A - B`` [CI], effect size, Holm p, detectable difference, the paper's."""
    rows = []
    for name, o, p, pub in zip(test.datasets, test.ours, test.holm_p, test.published):
        rows.append([name, f"{100 * o.mean:+.2f} [{100 * o.low:+.2f}, {100 * o.high:+.2f}]",
                     "–" if not np.isfinite(o.effect) else f"{o.effect:+.2f}", f"{p:.3g}",
                     f"{100 * o.detectable:.2f}", "–" if pub is None else f"{100 * pub:+.2f}"])
    return rows


DATASET_HEADERS = ["data set", "ours A - B, points [95% CI]", "effect d_z", "p (A better, Holm)",
                   "detectable, points", "paper A - B, points"]


def render(tests: Sequence[ClaimTest], quantity: str = "test error", pairs: str = "splits") -> str:
    """A report's verdict block: the rule, the claims' table, a sentence per claim, per-data-set tables folded.
    ``quantity``: what A and B are compared on (lower is better); ``pairs``: what a data set's paired values are."""
    from reproductions.report import md_table
    lines = [f"Each claim: A has a lower mean {quantity} than B.  Rule (decided before the numbers; "
             "`reproductions/verdicts.py`): *reproduced* when the one-sided Wilcoxon signed-rank test over data sets "
             f"finds A better at p < {ALPHA} (Holm over this table's claims), *contradicted* when it finds B better, "
             f"otherwise *not reproduced* when the paper's differences are detectable at this size (our detectable "
             f"difference, at power {POWER}, at most the paper's |A - B| on at least half of the data sets) and *not "
             "testable at this size* when they are not.  Per data set: paired differences over the "
             f"{pairs}, their 95% confidence intervals and one-sided paired t-tests Holm-adjusted over the data sets.",
             "",
             md_table(CLAIM_HEADERS, claims_table(tests), "lrrrrrl"), ""]
    lines += [f"- {t.claim}: {t.sentence()}" for t in tests]
    for t in tests:
        lines += ["", f"<details><summary>{t.claim}, per data set</summary>", "",
                  md_table(DATASET_HEADERS, per_dataset_rows(t), "lrrrrr"), "", "</details>"]
    return "\n".join(lines)


__all__ = ["render", "holm", "wilcoxon_p", "PairedDifference", "ClaimTest", "family", "claims_table", "per_dataset_rows", "ALPHA",
           "CLAIM_HEADERS", "DATASET_HEADERS"]
