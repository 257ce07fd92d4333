"""The statistics of the reproductions' tables: one-sided paired t-tests over the splits, standard errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05                      # significance level of the paired tests (both papers)
P_TOL = 1e-12                     # differences below this count as zero in :func:`one_sided_p`


def one_sided_p(a: np.ndarray, b: np.ndarray) -> float:
    """p-value of the one-sided paired t-test "mean(a - b) < 0" (a better than b); 1.0 when undefined
    (fewer than 2 pairs, or all differences zero); 0.0 / 1.0 for constant nonzero differences (to 1e-12)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if d.size < 2 or np.all(np.abs(d) <= P_TOL):
        return 1.0
    if np.ptp(d) <= P_TOL:                       # constant difference (up to rounding): t = +-infinity
        return 0.0 if d.mean() < 0 else 1.0
    return float(stats.ttest_rel(a, b, alternative="less").pvalue)


def standard_errors(matrix: pd.DataFrame) -> pd.Series:
    """Standard error of each column's mean over the rows (splits): std (ddof 1) / sqrt(rows); NaN with
    fewer than 2 rows."""
    if len(matrix) > 1:
        return matrix.std(ddof=1) / np.sqrt(len(matrix))
    return matrix.std() * np.nan
