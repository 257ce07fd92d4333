"""Mixed numerical + categorical data: which columns are which, their levels, and the dummy coding.

A categorical feature with levels ``c_0, ..., c_{a-1}`` is coded by ``a - 1`` binary columns with the
first level as the reference (all zeros), as in belbasi2023 and sun2025; the model's optimal value does
not depend on which level is the reference (the hypothesis class is an affine reparametrization and the
mismatch cost ignores the coding; note D2 item 10a).

* pandas DataFrame: ``category``, ``object``, ``bool`` and string columns are categorical, numeric
  columns numerical (``categorical_features`` may override).  A ``category`` column's declared
  categories are all levels, observed or not.  An ``object`` / string column whose values are all
  numbers (``"3.2"``, ``"-0.15"``, ...: numbers stored as strings) raises unless ``categorical_features``
  is given: converted (``pd.to_numeric``) it is numerical, declared it stays categorical.
* numpy array: all columns numerical unless ``categorical_features`` (indices, names or a boolean
  mask) says otherwise; levels are the sorted distinct values.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, List, Sequence

import numpy as np
import scipy.sparse as sp

from .exceptions import DataError, ParameterError

try:  # pandas is a dependency, but keep the import local to where it matters
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


def is_dataframe(X) -> bool:
    """Whether ``X`` is a pandas DataFrame (False when pandas is not installed)."""
    return pd is not None and isinstance(X, pd.DataFrame)


def _is_categorical_dtype(series) -> bool:
    dtype = series.dtype
    return (isinstance(dtype, pd.CategoricalDtype) or dtype == object or dtype == bool
            or pd.api.types.is_string_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))


@dataclass
class MixedData:
    """Encoded data: numerical block ``X`` (N, n), categorical codes ``Z`` (N, m), level counts."""

    X: np.ndarray
    Z: np.ndarray
    levels: np.ndarray  # (m,) number of levels a_l of each categorical feature

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]


@dataclass
class FeatureSchema:
    """Column roles and categorical levels, learnt at fit and applied identically at predict."""

    feature_names: List[str]
    numerical: List[int]  # positions in the input columns
    categorical: List[int]
    categories: List[list] = field(default_factory=list)
    from_dataframe: bool = False
    #: per categorical feature: its column was a pandas *ordered* categorical (the categories' order
    #: is then a rank order, used by :class:`drokit.metrics.OrdinalCost`)
    ordered: List[bool] = field(default_factory=list)

    # ------------------------------------------------------------- properties
    @property
    def numerical_names(self) -> List[str]:
        return [self.feature_names[j] for j in self.numerical]

    @property
    def categorical_names(self) -> List[str]:
        return [self.feature_names[j] for j in self.categorical]

    def is_ordered(self, l: int) -> bool:
        """Whether categorical feature ``l`` came from a pandas ordered categorical column."""
        return bool(self.ordered[l]) if l < len(self.ordered) else False

    @property
    def levels(self) -> np.ndarray:
        return np.array([len(c) for c in self.categories], dtype=int)

    @property
    def n_numerical(self) -> int:
        return len(self.numerical)

    @property
    def n_categorical(self) -> int:
        return len(self.categorical)

    @property
    def n_dummies(self) -> int:
        return int(np.sum(np.maximum(self.levels - 1, 0)))

    @property
    def n_encoded(self) -> int:
        """Columns of the design matrix (without the intercept): numerical then dummies."""
        return self.n_numerical + self.n_dummies

    def level_scores(self, Z: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """``sum_l w_l(Z[:, l])`` per row, ``w_l(v)`` the coefficient of level ``v`` of feature ``l`` in ``coef``
        (the encoded columns: numerical first, then the dummies; 0 at the reference level): the categorical part
        of a linear score by one lookup per feature, without a design matrix."""
        coef = np.asarray(coef, dtype=float)
        out = np.zeros(Z.shape[0])
        starts = self.n_numerical + self.dummy_offsets()
        for l, a in enumerate(np.asarray(self.levels, dtype=int)):
            out += np.concatenate([[0.0], coef[starts[l]:starts[l] + a - 1]])[Z[:, l]]
        return out

    def dummy_offsets(self) -> np.ndarray:
        """Start of each categorical feature's dummy block inside the dummy columns."""
        return np.concatenate([[0], np.cumsum(np.maximum(self.levels - 1, 0))])[:-1].astype(int)

    def encoded_names(self) -> List[str]:
        names = list(self.numerical_names)
        for name, cats in zip(self.categorical_names, self.categories):
            names += [f"{name}={c}" for c in cats[1:]]
        return names

    # ---------------------------------------------------------------- fitting
    @classmethod
    def infer(cls, X, categorical_features=None, categories="auto") -> "FeatureSchema":
        """Learn column roles and levels from training data ``X``.

        Without ``categorical_features``, a DataFrame column of numbers stored as strings (or of numbers
        in an ``object`` column) raises a :class:`DataError` naming it and the two fixes, instead of
        becoming a categorical feature with one level per distinct value."""
        if is_dataframe(X):
            names = unique_names(X)
            if categorical_features is None:
                cat_mask = [_is_categorical_dtype(X.iloc[:, j]) for j in range(X.shape[1])]
                _refuse_numbers_as_text(X, names, cat_mask)
            else:
                cat_mask = _mask_from_spec(categorical_features, names, "categorical_features")
            columns = [X.iloc[:, j] for j in range(X.shape[1])]
            from_df = True
        else:
            arr = np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X
            if arr.ndim != 2:
                raise DataError(f"X must be 2-dimensional, got an array of shape {np.shape(X)}")
            names = [f"x{j}" for j in range(arr.shape[1])]
            cat_mask = (_mask_from_spec(categorical_features, names, "categorical_features")
                        if categorical_features is not None else [False] * arr.shape[1])
            columns = [arr[:, j] for j in range(arr.shape[1])]
            from_df = False
        numerical = [j for j, c in enumerate(cat_mask) if not c]
        categorical = [j for j, c in enumerate(cat_mask) if c]
        if categories == "auto" or categories is None:
            cats = [_levels_of(columns[j], names[j]) for j in categorical]
        else:
            if len(categories) != len(categorical):
                raise ParameterError(
                    f"categories has {len(categories)} entries but there are {len(categorical)} "
                    f"categorical features")
            cats = [list(c) for c in categories]
            for j, c in zip(categorical, cats):
                if len(c) == 0 or len(set(map(level_key, c))) != len(c):
                    raise ParameterError(
                        f"categories of feature {names[j]!r} must be a non-empty list of distinct levels")
        ordered = [bool(getattr(getattr(columns[j], "dtype", None), "ordered", False) or False)
                   for j in categorical]
        return cls(feature_names=names, numerical=numerical, categorical=categorical,
                   categories=cats, from_dataframe=from_df, ordered=ordered)

    # --------------------------------------------------------------- encoding
    def transform(self, X, handle_unknown: str = "error") -> MixedData:
        """Split ``X`` into the numerical block and categorical codes (level index per feature)."""
        if is_dataframe(X):
            names = unique_names(X)
            if self.from_dataframe:
                missing = [n for n in self.feature_names if n not in names]
                if missing:
                    raise DataError(f"X is missing the column(s) {missing} seen at fit")
                columns = [X.iloc[:, names.index(n)] for n in self.feature_names]
            else:
                if X.shape[1] != len(self.feature_names):
                    raise DataError(f"X has {X.shape[1]} columns, expected {len(self.feature_names)}")
                columns = [X.iloc[:, j] for j in range(X.shape[1])]
            columns = [c.to_numpy() if not isinstance(c.dtype, pd.CategoricalDtype)
                       else c.astype(object).to_numpy() for c in columns]
        else:
            arr = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
            if arr.ndim != 2:
                raise DataError(f"X must be 2-dimensional, got an array of shape {np.shape(X)}")
            if arr.shape[1] != len(self.feature_names):
                raise DataError(f"X has {arr.shape[1]} columns, expected {len(self.feature_names)}")
            columns = [arr[:, j] for j in range(arr.shape[1])]
        N = len(columns[0]) if columns else (X.shape[0] if hasattr(X, "shape") else 0)
        Xn = np.empty((N, self.n_numerical), dtype=float)
        for k, j in enumerate(self.numerical):
            try:
                Xn[:, k] = np.asarray(columns[j], dtype=float)
            except (TypeError, ValueError) as exc:
                raise DataError(
                    f"numerical column {self.feature_names[j]!r} holds values that are not numbers "
                    f"({exc}); declare it in categorical_features if it is categorical") from None
            bad = ~np.isfinite(Xn[:, k])
            if bad.any():
                raise DataError(
                    f"X column {self.feature_names[j]!r} has {int(bad.sum())} NaN/inf value(s) "
                    f"(first at row {int(np.argmax(bad))}); impute or drop them first")
        Z = np.empty((N, self.n_categorical), dtype=np.int64)
        for k, (j, cats) in enumerate(zip(self.categorical, self.categories)):
            Z[:, k] = _codes(columns[j], cats, self.feature_names[j], handle_unknown)
        return MixedData(X=Xn, Z=Z, levels=self.levels)

    def design(self, data: MixedData) -> sp.csr_matrix:
        """Sparse design matrix ``[X_num, dummies(Z)]`` (N, n_encoded); code -1 (unknown) -> all zeros."""
        return sp.hstack([sp.csr_matrix(data.X), self.dummies(data.Z)], format="csr")

    def dummies(self, Z: np.ndarray) -> sp.csr_matrix:
        """Reference-level dummy coding of a code matrix ``Z`` (K, m) -> (K, n_dummies)."""
        K = Z.shape[0]
        offsets = self.dummy_offsets()
        cols = offsets[None, :] + Z - 1  # code c > 0 -> column offset + c - 1
        active = Z > 0
        rows = np.broadcast_to(np.arange(K)[:, None], Z.shape)
        return sp.csr_matrix((np.ones(int(active.sum())), (rows[active], cols[active])),
                             shape=(K, self.n_dummies))


def _numbers_as_text(column) -> str:
    """``"strings"`` when every value of an object / string column is a string that parses as a number,
    ``"objects"`` when every value of an object column is a (non-boolean) number; ``""`` otherwise
    (category and bool columns, text, mixed values, no values)."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return ""
    values = column.to_numpy(dtype=object)
    values = values[~is_missing(values)]
    try:
        uniques = pd.unique(values)
    except TypeError:  # unhashable values: not numbers
        return ""
    if uniques.size == 0:
        return ""
    if all(isinstance(v, str) for v in uniques):
        parsed = pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce")
        return "strings" if bool(parsed.notna().all()) else ""
    if all(isinstance(v, (Real, np.number)) and not isinstance(v, (bool, np.bool_)) for v in uniques):
        return "objects"
    return ""


def _refuse_numbers_as_text(X, names: List[str], cat_mask: List[bool]) -> None:
    """A column whose dtype makes it categorical but whose values are all numbers (``"3.2"``,
    ``"-0.15"``, ... or numbers in an object column) would silently become a categorical feature with one
    level per distinct value: raise, naming it and the two fixes (convert it, or declare the
    categorical columns explicitly)."""
    found = [(j, kind) for j in range(len(names)) if cat_mask[j]
             for kind in [_numbers_as_text(X.iloc[:, j])] if kind]
    if not found:
        return
    j, kind = found[0]
    column = X.iloc[:, j]
    examples = [str(v) for v in pd.unique(column.dropna().to_numpy(dtype=object))[:3]]
    n_levels = int(column.nunique(dropna=True))
    how = "numbers stored as strings" if kind == "strings" else f"numbers in a column of dtype {column.dtype}"
    others = f" (and {[names[k] for k, _ in found[1:]]})" if len(found) > 1 else ""
    declared = [names[k] for k in range(len(names)) if cat_mask[k]]
    raise DataError(
        f"X column {names[j]!r}{others} holds {how} ({', '.join(examples)}, ...): as it is, it would become "
        f"a categorical feature with {n_levels} levels, one per distinct value. To make it numerical, "
        f"convert it: X[{names[j]!r}] = pd.to_numeric(X[{names[j]!r}]). To keep it categorical (e.g. zip "
        f"codes), list the categorical columns explicitly: categorical_features={declared}.")


def unique_names(X) -> List[str]:
    """The DataFrame's column names as strings; they must be unique (columns are matched by name)."""
    names = [str(c) for c in X.columns]
    duplicated = sorted(n for n, count in Counter(names).items() if count > 1)
    if duplicated:
        raise DataError(f"X has duplicate column names {duplicated[:10]}; columns are matched by name, "
                        f"so their names must be unique")
    return names


def level_key(v: Any):
    """A category level as a dictionary key: every NaN is the same key (``nan != nan``)."""
    return ("nan",) if (isinstance(v, float) and np.isnan(v)) else v


def is_missing(values: np.ndarray) -> np.ndarray:
    """Elementwise: ``None`` or NaN (pandas' ``isna`` when pandas is installed: also ``pd.NA`` and ``NaT``)."""
    if pd is not None:
        return np.asarray(pd.isna(values), dtype=bool)
    return np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in values])


def _levels_of(column, name: str) -> list:
    if pd is not None and isinstance(getattr(column, "dtype", None), pd.CategoricalDtype):
        values = column.to_numpy(dtype=object)
        missing = is_missing(values)
        if missing.any():
            raise DataError(f"categorical column {name!r} has {int(missing.sum())} missing value(s); "
                            f"encode them as a level of their own (e.g. 'missing') first")
        return list(column.cat.categories)
    values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
    missing = is_missing(values)
    if missing.any():
        raise DataError(f"categorical column {name!r} has {int(missing.sum())} missing value(s); "
                        f"encode them as a level of their own (e.g. 'missing') first")
    try:
        return sorted(set(values.tolist()))
    except TypeError:  # mixed types: order by string form, stable
        return sorted(set(values.tolist()), key=lambda v: (type(v).__name__, str(v)))


def _codes(values, categories: list, name: str, handle_unknown: str) -> np.ndarray:
    """The level index of every value in ``categories`` (int64, one per value).

    A value matches the level it equals (Python equality: ``1.0`` matches the level ``1``, ``True`` the
    level ``1``), else the level equal to its integer form (``"2"`` or ``"2.0"`` matches ``2``).  Missing
    values raise; unseen values raise (``handle_unknown="error"``) or get code 0, the reference level
    (``"ignore"``).  Vectorized: the values are factorized (hashing, O(N)) and only the distinct values
    are looked up, so the cost per value is a C loop, not a Python call.
    """
    values = np.asarray(values, dtype=object)
    missing = is_missing(values)
    if missing.any():
        raise DataError(f"categorical column {name!r} has {int(missing.sum())} missing value(s); "
                        f"encode them as a level of their own (e.g. 'missing') first")
    index = {level_key(c): i for i, c in enumerate(categories)}
    inverse, uniques = _factorize(values)
    # floats from numpy arrays (e.g. 1.0) must match integer levels (1) and vice versa
    lookup = np.fromiter((index.get(level_key(v), index.get(as_int(v), -1)) for v in uniques),
                         dtype=np.int64, count=len(uniques))
    codes = lookup[inverse]
    unknown = codes < 0
    if unknown.any():
        _check_kinds(uniques[lookup < 0], categories, name)
        if handle_unknown == "error":
            seen = sorted({str(v) for v in values[unknown]})[:5]
            raise DataError(
                f"categorical column {name!r} has level(s) {seen} not seen at fit and not in its "
                f"categories (known: {[str(c) for c in categories][:10]}); at predict time, "
                f"handle_unknown='ignore' encodes unseen levels as the reference level (all dummy "
                f"columns zero)")
        codes[unknown] = 0
    return codes


def _kind(value) -> str:
    """``"number"`` (booleans included), ``"text"`` or the type's name: what a level can be compared with."""
    if isinstance(value, (Real, np.number, np.bool_)):
        return "number"
    if isinstance(value, (str, bytes, np.str_)):
        return "text"
    return type(value).__name__


def _check_kinds(unknown: np.ndarray, categories: list, name: str) -> None:
    """Values of another kind than every level of the feature (a number among text levels, text among
    numeric levels) are not unseen levels but a wrong column: they raise whatever ``handle_unknown``
    says (``"ignore"`` is meant for new levels of the feature)."""
    kinds = {_kind(c) for c in categories}
    foreign = [v for v in unknown if _kind(v) not in kinds]
    if foreign:
        shown = [str(v) for v in foreign[:5]]
        what = " or ".join(sorted({"numbers" if _kind(v) == "number" else _kind(v) for v in foreign}))
        level_kinds = " and ".join(sorted("numbers" if k == "number" else k for k in kinds))
        raise DataError(
            f"categorical column {name!r} has value(s) {shown} ({what}) that are not among its levels "
            f"{[str(c) for c in categories][:10]} ({level_kinds}) and cannot be levels of it: the column "
            f"holds other data than at fit (handle_unknown='ignore' is for unseen levels of the feature, "
            f"not for values of another kind)")


def _factorize(values: np.ndarray):
    """``(inverse, uniques)`` with ``values == uniques[inverse]``: the distinct values of an object
    array (by hash and equality, as a dict would group them) and each value's position among them."""
    inverse, uniques = pd.factorize(values, use_na_sentinel=False)
    return np.asarray(inverse, dtype=np.int64), np.asarray(uniques, dtype=object)


def as_int(v):
    """``v`` as an int when it is an integral number or a string of one (``"2"``, ``2.0`` -> 2), else ``v``: the
    second lookup of a level (a float or string column whose levels were given as ints)."""
    try:
        f = float(v)
        return int(f) if f.is_integer() else v
    except (TypeError, ValueError):
        return v


def _mask_from_spec(spec, names: Sequence[str], what: str) -> List[bool]:
    """Boolean mask over columns from indices, names or a boolean mask."""
    spec = list(spec) if not isinstance(spec, np.ndarray) else spec.tolist()
    n = len(names)
    if len(spec) == n and all(isinstance(s, (bool, np.bool_)) for s in spec):
        return [bool(s) for s in spec]
    mask = [False] * n
    for s in spec:
        if isinstance(s, (bool, np.bool_)):
            raise ParameterError(f"{what} mixes booleans with indices/names")
        if isinstance(s, (int, np.integer)):
            if not -n <= int(s) < n:
                raise ParameterError(f"{what} index {s} is out of range for {n} columns")
            mask[int(s)] = True
        elif str(s) in names:
            mask[names.index(str(s))] = True
        else:
            raise ParameterError(f"{what} names unknown column {s!r}; columns are {list(names)[:20]}")
    return mask
