"""sun2025's claims tested with statistics (issue 26; :mod:`reproductions.verdicts`).

The claim (§5.2): the calibrated ("weighted") DRO model has a lower calibration error (ACE) and a higher AUC than
unit-weight DRO (Selvi et al.) and lasso LR under shift, on average over the perturbed test sets and in the worst
set.  Each (weight setting, baseline, statistic) is one claim "weighted < baseline" on a lower-is-better quantity:
ACE, or ``1 - AUC``.  Per data set the two models are scored on the *same* perturbed sets, so the per-set scores are
paired: the "mean" statistics pair them set by set (the rho means of a data set concatenated), the "worst" ones take
the worst set of each rho mean (one number per rho mean).  Over data sets: the Wilcoxon signed-rank test of the per-
data-set mean differences, Holm over the claims of a table.  The data sets are the replicates -- a data set's rho
means share its split, and the run has one split, as the paper: the training sample's noise is not in the per-data-set
intervals, which only reflect the perturbed sets.

The paper's "up to 36.19% ..." are maxima of undefined relative differences (spec sun2025 §6.6): they are not
compared with ours; only the direction of each claim is tested.
"""

from __future__ import annotations

from typing import List, Sequence

import numpy as np
import pandas as pd

from reproductions.sun2025.protocol import BASELINES
from reproductions.verdicts import ClaimTest, family, render

#: (statistic, aggregate) and their labels as lower-is-better quantities
STATISTICS = (("ace", "mean"), ("ace", "worst"), ("auc", "mean"), ("auc", "worst"))
#: what the claims compare and pair (reproductions.verdicts.render)
WORDS = ("score (ACE, or 1 - AUC)", "perturbed sets (the worst statistics: one value per rho mean)")
LABELS = {("ace", "mean"): "mean ACE", ("ace", "worst"): "worst ACE", ("auc", "mean"): "1 - mean AUC",
          ("auc", "worst"): "1 - worst AUC"}


def _lower_is_better(frame: pd.DataFrame, statistic: str) -> np.ndarray:
    values = frame[statistic].to_numpy(dtype=float)
    return values if statistic == "ace" else 1.0 - values


def _values(part: pd.DataFrame, statistic: str, aggregate: str) -> np.ndarray:
    """One model's paired values on one data set (module docstring), rows sorted by (rho mean, set)."""
    part = part.sort_values(["rho_mean", "set"])
    if aggregate == "mean":
        return _lower_is_better(part, statistic)
    return np.array([_lower_is_better(group, statistic).max() for _, group in part.groupby("rho_mean", sort=True)])


def claim_tests(per_set: pd.DataFrame, scenario: str = "expected", statistics: Sequence[tuple] = STATISTICS,
                adjust: bool = True) -> List[ClaimTest]:
    """Every weighted model against each baseline on ``statistics`` under ``scenario``, Holm over them (``adjust``;
    else the raw Wilcoxon p-values, for a larger family)."""
    part = per_set[per_set["scenario"] == scenario]
    weighted = [m for m in dict.fromkeys(part["model"]) if m not in BASELINES]
    tests = []
    for model in weighted:
        for baseline in BASELINES:
            for statistic, aggregate in statistics:
                errors = {}
                for name, rows in part.groupby("dataset", sort=False):
                    a, b = rows[rows["model"] == model], rows[rows["model"] == baseline]
                    if a.empty or b.empty or len(a) != len(b):
                        continue
                    errors[name] = {model: _values(a, statistic, aggregate), baseline: _values(b, statistic, aggregate)}
                label = LABELS[(statistic, aggregate)]
                tests.append(ClaimTest.of(f"{label}: {model} < {baseline}", model, baseline, errors))
    return family(tests) if adjust else tests


def verdict_section(per_set: pd.DataFrame) -> str:
    """The expected shift's claims (four statistics), then each unexpected scenario's (mean ACE and mean AUC)."""
    if per_set.empty:
        return "No data set was evaluated."
    blocks = ["One split per data set (the paper's protocol): the per-data-set intervals reflect the perturbed sets "
              "only; the data sets are the replicates of the Wilcoxon test.  The paper's \"up to\" percentages are "
              "maxima of undefined relative differences and are not compared; each claim's direction is tested.", "",
              "### Expected shift", "", render(claim_tests(per_set), *WORDS)]
    others = [s for s in dict.fromkeys(per_set["scenario"]) if s != "expected"]
    if others:
        tests = [t for s in others
                 for t in _renamed(claim_tests(per_set, s, (("ace", "mean"), ("auc", "mean")), adjust=False), s)]
        blocks += ["", "### Unexpected shifts (sun2025 Appendix D: misspecified rho)", "",
                   "Mean ACE and mean AUC per scenario; Holm over all rows of this table.", "",
                   render(family(tests), *WORDS)]
    return "\n".join(blocks)


def _renamed(tests: List[ClaimTest], scenario: str) -> List[ClaimTest]:
    from dataclasses import replace
    return [replace(t, claim=f"{scenario}, {t.claim}") for t in tests]


__all__ = ["claim_tests", "verdict_section", "STATISTICS"]
