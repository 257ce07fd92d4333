"""Statlog (German Credit Data) with the UCI attribute codes, from drokit's packaged copy.

1,000 applicants, 7 numerical and 13 categorical attributes (UCI codes ``A11`` ... ``A202``, explained in
UCI's ``german.doc``), class 1 = good (700), 2 = bad (300).  Data: UCI Machine Learning Repository, CC BY 4.0
(Professor Dr. Hans Hofmann, Universitaet Hamburg).  The file is the one :func:`drokit.datasets.load` reads
(``load("german-credit")``, level codes in lower case); this loader gives the frame of the original
``german.data`` file: the codes as UCI writes them, integer numerical columns and ``y`` named ``bad_credit``.
It needs no other package and no network.
"""

from __future__ import annotations

from typing import Tuple

import pandas as pd

from ..exceptions import DataError

COLUMNS = ["checking_account_status", "duration_months", "credit_history", "purpose", "credit_amount",
           "savings_account", "employment_since", "installment_rate_pct", "personal_status_sex",
           "other_debtors", "residence_since", "property", "age_years", "other_installment_plans",
           "housing", "existing_credits", "job", "people_liable", "telephone", "foreign_worker"]
NUMERICAL = ["duration_months", "credit_amount", "installment_rate_pct", "residence_since", "age_years",
             "existing_credits", "people_liable"]
CATEGORICAL = [c for c in COLUMNS if c not in NUMERICAL]


def load_german_credit(as_frame: bool = True) -> Tuple[pd.DataFrame, pd.Series]:
    """Load German credit as ``(X, y)``.

    ``X`` is a DataFrame with 7 numerical (int) and 13 categorical (pandas ``category`` dtype) columns;
    ``y`` is 1 for a bad credit risk (UCI class 2) and 0 for a good one (class 1).
    """
    from .uci import load
    X, target = load("german-credit", preprocessing="paper")
    if list(X.columns) != COLUMNS or X.shape != (1000, 20):
        raise DataError(f"the packaged German credit file has columns {list(X.columns)} and shape {X.shape}, "
                        f"expected the 20 UCI attributes of 1,000 applicants")
    X = X.copy()
    for c in NUMERICAL:
        X[c] = X[c].astype("int64")
    for c in CATEGORICAL:
        X[c] = X[c].astype("string").str.upper().astype("category")
    y = target.astype(int).rename("bad_credit")       # the paper's positive class is UCI class 2 (bad)
    return X, y
