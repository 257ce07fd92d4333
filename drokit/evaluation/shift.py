"""Perturbed copies of a test set under the calibrated shift model (sun2025 §5.2).

Each test point is perturbed independently, labels never (they are not passed):

* numerical column j: ``x~_j = x_j + Laplace(0, b_j)`` with ``b_j = 1 / gamma_j = -u_j / log(1 - rho_j)``
  (sun2025 (5)); an immutable column (``rho_j = 1``, ``gamma_j = inf``) does not move;
* categorical column l: keep the level with probability ``rho_l``, otherwise move to one of the other
  ``|C_l| - 1`` levels uniformly (sun2025 (6)).

Scenarios (the paper's "expected" shift and its seven "unexpected" ones, Appendix D; the details
are the reference code's ``main.jl``):

* ``"expected"``: the calibrated ``rho``;
* ``"rho_offset"`` with ``amount`` (paper: -0.2, -0.1, +0.1): ``rho~ = rho + amount``, clipped to
  ``[1/|C_l|, 0.9999]`` (categorical) or ``[0.0001, 0.9999]`` (numerical);
* ``"rho_jitter"`` with ``amount`` = radius (paper: 0.05, 0.1, 0.15, 0.2): ``rho~`` drawn once per
  feature, uniformly on ``[max(lo, rho - amount), min(0.9999, rho + amount)]`` with the same floors
  ``lo``; the draw is shared by all the sets of the call, as in the reference code.

``b`` is recomputed from ``rho~`` with the same half-widths ``u_j``.  Immutable features stay
immutable in every scenario: drokit reads ``rho = 1`` as a structural constraint, not a belief to
misspecify (the paper has none; its code would clip them to 0.9999).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Dict, Iterator, Tuple

import numpy as np

from ..exceptions import DataError, ParameterError
from ..metrics.calibration import Calibration, laplace_scale
from ..metrics.ground import GroundMetric
from ..schema import FeatureSchema, is_dataframe, unique_names
from .scores import positive_int

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None

SCENARIOS = ("expected", "rho_offset", "rho_jitter")

#: the paper's expected shift and its seven unexpected scenarios, as ``(scenario, amount)``
PAPER_SCENARIOS = (("expected", None), ("rho_offset", -0.2), ("rho_offset", -0.1), ("rho_offset", 0.1),
                   ("rho_jitter", 0.05), ("rho_jitter", 0.1), ("rho_jitter", 0.15), ("rho_jitter", 0.2))

RHO_CEILING = 0.9999           # upper clip of rho~ (reference code)
RHO_FLOOR_NUMERICAL = 0.0001   # lower clip of a numerical rho~ (reference code)

#: random numbers generated per chunk of sets (memory bound of the vectorized draws)
CHUNK_DRAWS = 2_000_000


class ShiftedSets:
    """``n_sets`` perturbed copies of a test set; iterate to get DataFrames (see :func:`simulate_shift`).

    Iterating again yields the same sets.  Set ``k`` depends only on the seed and ``k``, not on
    ``n_sets``.

    Attributes
    ----------
    scenario : str
        The scenario.
    amount : float or None
        The scenario's parameter.
    rho_numerical, rho_categorical : dict of str to float
        ``{column: rho~}`` used for the shift (after the scenario); a numerical rho is NaN when the
        model is a plain metric (no half-width to define it).
    laplace_scale : dict of str to float
        ``{column: b~}`` of the numerical columns (0 = immutable).
    """

    def __init__(self, X, n_sets: int, scenario: str, amount, rho_numerical: Dict[str, float],
                 laplace_scale_: Dict[str, float], rho_categorical: Dict[str, float],
                 schema: FeatureSchema, seeds):
        self.scenario = scenario
        self.amount = amount
        self.n_sets = n_sets
        self.rho_numerical = rho_numerical
        self.laplace_scale = laplace_scale_
        self.rho_categorical = rho_categorical
        self._X = X.copy()  # later edits of the caller's X do not change the sets
        self._schema = schema
        self._seeds = seeds  # SeedSequences of the numerical and categorical streams
        data = schema.transform(self._X)
        self._x = data.X                                   # (N, n)
        self._codes = data.Z                               # (N, m)
        self._b = np.array([laplace_scale_[c] for c in schema.numerical_names], dtype=float)
        self._rho = np.array([rho_categorical[c] for c in schema.categorical_names], dtype=float)
        self._levels = schema.levels.astype(np.int64)
        self._columns = [self._column_builder(j) for j in range(len(schema.feature_names))]

    def __getstate__(self) -> dict:
        """Pickled without the column builders (closures over this object's arrays), rebuilt on loading."""
        state = self.__dict__.copy()
        state.pop("_columns", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._columns = [self._column_builder(j) for j in range(len(self._schema.feature_names))]

    def __len__(self) -> int:
        return self.n_sets

    @property
    def source(self) -> "pd.DataFrame":
        """The unperturbed test set the sets are drawn from (a copy taken at construction)."""
        return self._X

    def __repr__(self) -> str:
        amount = "" if self.amount is None else f", amount={self.amount!r}"
        return (f"ShiftedSets(n_sets={self.n_sets}, scenario={self.scenario!r}{amount}, "
                f"rows={self._x.shape[0]})")

    def __iter__(self) -> Iterator["pd.DataFrame"]:
        for x, z in self._draws():
            for s in range(x.shape[0]):
                yield self._frame(x[s:s + 1], z[s:s + 1])

    def _blocks(self, size: int) -> Iterator["pd.DataFrame"]:
        """The sets ``size`` at a time (the last block may hold fewer), each block one DataFrame of its
        sets' rows one after another (index ``0 .. k N - 1``; a block of one set has ``X``'s index):
        what ``pd.concat(sets, ignore_index=True)`` gives, built from the draws without a frame per set."""
        xs, zs, held = [], [], 0
        for x, z in self._draws():
            while x.shape[0]:
                take = min(size - held, x.shape[0])
                xs.append(x[:take])
                zs.append(z[:take])
                x, z, held = x[take:], z[take:], held + take
                if held == size:
                    yield self._frame(np.concatenate(xs), np.concatenate(zs))
                    xs, zs, held = [], [], 0
        if held:
            yield self._frame(np.concatenate(xs), np.concatenate(zs))

    def _draws(self) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        """The draws of all the sets, chunk by chunk: values (k, N, n) and codes (k, N, m)."""
        num_rng = np.random.Generator(np.random.PCG64(self._seeds[0]))
        cat_rng = np.random.Generator(np.random.PCG64(self._seeds[1]))
        N, n = self._x.shape
        m = self._codes.shape[1]
        chunk = max(1, CHUNK_DRAWS // max(1, N * (2 * n + m)))
        for start in range(0, self.n_sets, chunk):
            k = min(chunk, self.n_sets - start)
            yield self._perturb_numerical(num_rng, k), self._perturb_categorical(cat_rng, k)

    # ------------------------------------------------------------------ draws
    def _perturb_numerical(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """``x + b * Laplace(0, 1)`` for ``k`` sets, shape (k, N, n).  Laplace = sign * Exp(1) from two
        uniforms per entry, so the stream advances by a fixed amount per set."""
        N, n = self._x.shape
        u = rng.random((k, N, n, 2))
        noise = -np.log1p(-u[..., 0]) * np.where(u[..., 1] < 0.5, -1.0, 1.0)
        return self._x[None] + noise * self._b

    def _perturb_categorical(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """Stay with probability ``rho``, else move uniformly to another level; codes (k, N, m).

        One uniform ``v`` per entry decides both: stay if ``v < rho``; otherwise ``(v - rho)/(1 - rho)``
        is uniform on [0, 1) and picks the offset ``1 .. |C| - 1`` added modulo ``|C|``."""
        N, m = self._codes.shape
        v = rng.random((k, N, m))
        rho, levels = self._rho, self._levels
        stay = v < rho
        t = (v - rho) / np.where(rho < 1, 1.0 - rho, 1.0)
        offset = 1 + np.minimum(np.floor(t * (levels - 1)), levels - 2).astype(np.int64)
        return np.where(stay, self._codes[None], (self._codes[None] + offset) % levels)

    # ----------------------------------------------------------------- frames
    def _column_builder(self, j: int):
        """A function (numerical block, codes, number of sets stacked) -> column ``j``, ``X``'s dtype."""
        schema, X = self._schema, self._X
        series = X.iloc[:, j]
        dtype = series.dtype
        if j in schema.numerical:
            k = schema.numerical.index(j)
            if self._b[k] == 0:  # immutable: the column itself, once per set
                values = series.to_numpy()
                return lambda x, z, sets: values if sets == 1 else np.tile(values, sets)
            if dtype.kind == "f" and not isinstance(dtype, np.dtype):  # pandas Float32/Float64
                return lambda x, z, sets: pd.array(x[:, k], dtype=dtype)
            keep = dtype if dtype.kind == "f" else np.dtype(float)  # noise makes integers real
            return lambda x, z, sets: x[:, k].astype(keep, copy=False)
        k = schema.categorical.index(j)
        levels = schema.categories[k]
        if isinstance(dtype, pd.CategoricalDtype):
            where = dtype.categories.get_indexer(levels)
            if (where < 0).any():
                missing = [levels[i] for i in np.flatnonzero(where < 0)][:5]
                raise DataError(f"simulate_shift: levels {missing} of column {schema.feature_names[j]!r} "
                                f"are not among the column's categories {list(dtype.categories)[:10]}")
            return lambda x, z, sets: pd.Categorical.from_codes(where[z[:, k]], dtype=dtype)
        values = np.empty(len(levels), dtype=object)
        values[:] = levels
        if isinstance(dtype, np.dtype) and dtype.kind == "O":
            return lambda x, z, sets: values[z[:, k]]
        if isinstance(dtype, np.dtype):  # bool, ...
            return lambda x, z, sets: values[z[:, k]].astype(dtype)
        return lambda x, z, sets: pd.array(values[z[:, k]], dtype=dtype)  # str, string, boolean, ...

    def _frame(self, x: np.ndarray, z: np.ndarray) -> "pd.DataFrame":
        """The DataFrame of ``k`` sets stacked, from values (k, N, n) and codes (k, N, m)."""
        X, (sets, N) = self._X, x.shape[:2]
        x, z = x.reshape(sets * N, x.shape[2]), z.reshape(sets * N, z.shape[2])  # -1 fails on 0 columns
        data = {i: build(x, z, sets) for i, build in enumerate(self._columns)}
        index = X.index if sets == 1 else pd.RangeIndex(sets * N)
        out = pd.DataFrame(data, index=index)  # copies: no set shares memory with X or another set
        out.columns = X.columns
        return out


def simulate_shift(X, model, n_sets: int, seed=None, scenario: str = "expected", amount=None, *,
                   categorical_features=None) -> ShiftedSets:
    """Perturbed copies of the test set ``X`` under the calibrated shift model (sun2025 §5.2).

    Parameters
    ----------
    X : pandas.DataFrame
        Test DataFrame (numerical and categorical columns, no labels).
    model : Calibration or GroundMetric
        The shift model, one of

        * a :class:`~drokit.metrics.Calibration` (:func:`drokit.metrics.calibrate` on the training
          data);
        * a :class:`~drokit.GroundMetric` from :meth:`GroundMetric.calibrated`: its calibration is
          used, i.e. the unrounded ``rho`` (rounding changes the ambiguity set, not the world);
        * any other ``GroundMetric`` (p = 1 reading of its weights): ``b_j = 1/gamma_j`` and
          ``rho_l = 1 / (1 + (|C_l| - 1) exp(-delta_l))``, the inverse of the calibration formulas.
          It has no half-widths, so the unexpected scenarios need a calibration when ``X`` has
          numerical columns.
    n_sets : int
        Number of perturbed copies (the paper: 5,000).
    seed : int or SeedSequence or Generator or None
        ``None``, an int, a ``SeedSequence`` or a ``numpy.random.Generator``.
    scenario : {"expected", "rho_offset", "rho_jitter"}
        ``"expected"``, ``"rho_offset"`` or ``"rho_jitter"`` (module docstring;
        :data:`PAPER_SCENARIOS` lists the paper's eight).
    amount : float or None
        The offset added to rho (``"rho_offset"``) or the jitter radius > 0 (``"rho_jitter"``);
        ``None`` for ``"expected"``.
    categorical_features : array_like or None
        Column roles for a plain ``GroundMetric`` (as in the estimators).

    Returns
    -------
    ShiftedSets
        Iterate over it for ``n_sets`` DataFrames with the index, columns and dtypes of ``X``
        (categorical columns keep their categories; integer numerical columns that move become
        float).  The draws are vectorized over sets, rows and columns.
    """
    if not is_dataframe(X):
        raise DataError(f"simulate_shift: X must be a pandas DataFrame, got {type(X).__name__}; wrap an "
                        f"array with pd.DataFrame(X, columns=...)")
    positive_int(n_sets, "n_sets", "simulate_shift")
    if scenario not in SCENARIOS:
        raise ParameterError(f"simulate_shift: scenario must be one of {SCENARIOS}, got {scenario!r}")
    amount = _checked_amount(scenario, amount)

    schema, rho_x, half_width, b, rho_z = _shift_model(X, model, categorical_features)
    rho_seed, num_seed, cat_seed = seed_sequence(seed).spawn(3)
    if scenario != "expected":
        if rho_x and half_width is None:
            raise ParameterError(
                f"simulate_shift: scenario {scenario!r} changes rho and recomputes b = -u/log(1 - rho), "
                f"which needs the half-widths u of the numerical columns; pass a Calibration "
                f"(dk.metrics.calibrate) or a GroundMetric.calibrated metric as model")
        rng = np.random.Generator(np.random.PCG64(rho_seed))
        levels = dict(zip(schema.categorical_names, schema.levels))
        rho_x = _scenario_rho(rho_x, {c: RHO_FLOOR_NUMERICAL for c in rho_x}, scenario, amount, rng)
        rho_z = _scenario_rho(rho_z, {c: 1.0 / levels[c] for c in rho_z}, scenario, amount, rng)
        b = {c: laplace_scale(r, half_width[c]) for c, r in rho_x.items()}
    return ShiftedSets(X, n_sets, scenario, amount, rho_x, b, rho_z, schema, (num_seed, cat_seed))


def _checked_amount(scenario: str, amount):
    if scenario == "expected":
        if amount is not None:
            raise ParameterError(f"simulate_shift: amount is for 'rho_offset' / 'rho_jitter', the "
                                 f"'expected' scenario takes none, got amount={amount!r}")
        return None
    if isinstance(amount, (bool, np.bool_)) or not isinstance(amount, Real) or not np.isfinite(amount):
        raise ParameterError(f"simulate_shift: scenario {scenario!r} needs a finite number amount, "
                             f"got amount={amount!r}")
    if scenario == "rho_jitter" and not amount > 0:
        raise ParameterError(f"simulate_shift: the 'rho_jitter' radius amount must be > 0, got {amount!r}")
    return float(amount)


def _scenario_rho(rho: Dict[str, float], floor: Dict[str, float], scenario: str, amount: float,
                  rng: np.random.Generator) -> Dict[str, float]:
    """``rho~`` of every feature under an unexpected scenario; immutable features (rho = 1) keep 1."""
    names = [c for c, r in rho.items() if r < 1]
    r = np.array([rho[c] for c in names], dtype=float)
    lo = np.array([floor[c] for c in names], dtype=float)
    if scenario == "rho_offset":
        new = np.clip(r + amount, lo, RHO_CEILING)
    else:  # rho_jitter: one uniform draw per feature
        new = rng.uniform(np.maximum(lo, r - amount), np.minimum(RHO_CEILING, r + amount))
    out = dict(rho)
    out.update({c: float(v) for c, v in zip(names, new)})
    return out


def seed_sequence(seed, where: str = "simulate_shift") -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` of a seed argument (None, an int >= 0, a SeedSequence or a
    Generator, from which 4 words are drawn); the shift simulator and the robustness report (``where``,
    the name in the error message) share it."""
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2**63, size=4).tolist())
    if isinstance(seed, np.random.SeedSequence):   # a copy: spawning from the caller's would change it, and
        # the same SeedSequence passed twice would then draw different sets
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)
    if seed is None or (isinstance(seed, Integral) and not isinstance(seed, (bool, np.bool_)) and seed >= 0):
        return np.random.SeedSequence(seed)
    raise ParameterError(f"{where}: seed must be None, an int >= 0, a SeedSequence or a numpy "
                         f"Generator, got {seed!r}")


def _shift_model(X, model, categorical_features):
    """``(schema, rho_x, half_width or None, b, rho_z)`` of the columns of ``X``."""
    cal = model.calibration if isinstance(model, GroundMetric) else model
    if isinstance(cal, Calibration):
        return _from_calibration(X, cal)
    if not isinstance(model, GroundMetric):
        raise ParameterError(f"simulate_shift: model must be a drokit Calibration or GroundMetric, got "
                             f"{type(model).__name__}")
    schema = FeatureSchema.infer(X, categorical_features=categorical_features)
    resolved = model.resolve(schema)
    resolved.require_mismatch("simulate_shift (the inverse of the mismatch-cost calibration)")
    num, cat = schema.numerical_names, schema.categorical_names
    free = [c for c, g in zip(num, resolved.gamma) if g == 0]
    if free:
        raise ParameterError(f"simulate_shift: numerical column(s) {free} have weight 0 (free): their "
                             f"Laplace shift b = 1/gamma is infinite")
    with np.errstate(divide="ignore", over="ignore"):
        b = np.where(np.isinf(resolved.gamma), 0.0, 1.0 / resolved.gamma)
        rho_z = 1.0 / (1.0 + (schema.levels - 1) * np.exp(-resolved.delta))
    # rho_x is only a placeholder here: 1 marks an immutable column, the rest is not known without u
    rho_x = {c: (1.0 if bj == 0 else np.nan) for c, bj in zip(num, b)}
    return (schema, rho_x, None, dict(zip(num, b.tolist())),
            {c: float(r) for c, r in zip(cat, rho_z)})


def _from_calibration(X, cal: Calibration):
    names = unique_names(X)
    known = list(cal.rho_numerical) + list(cal.rho_categorical)
    missing = [c for c in known if c not in names]
    extra = [c for c in names if c not in known]
    if missing or extra:
        raise DataError(f"simulate_shift: the columns of X do not match the calibration: missing "
                        f"{missing}, unknown {extra}")
    numerical = [names.index(c) for c in cal.rho_numerical]
    categorical = [names.index(c) for c in cal.rho_categorical]
    schema = FeatureSchema(feature_names=names, numerical=numerical, categorical=categorical,
                           categories=[list(cal.categories[c]) for c in cal.rho_categorical],
                           from_dataframe=True)
    return (schema, dict(cal.rho_numerical), dict(cal.half_width), cal.laplace_scale,
            dict(cal.rho_categorical))


__all__ = ["simulate_shift", "ShiftedSets", "SCENARIOS", "PAPER_SCENARIOS"]
