"""Datasets shipped with (or by packages drokit depends on).

* :func:`load` -- 16 UCI classification datasets with categorical features (the benchmarks of
  Selvi et al. 2022 and Sun et al. 2025), shipped in ``drokit/datasets/data/uci``; see
  :mod:`drokit.datasets.uci` for the lookup order and the ``"paper"`` / ``"raw"`` preprocessing.
* :func:`load_german_credit` -- German credit with UCI's attribute codes, from drokit's own copy (the one
  ``load("german-credit")`` reads, which lower-cases the codes).
"""

from .german import load_german_credit
from .uci import dataset_info, list_datasets, load

__all__ = ["dataset_info", "list_datasets", "load", "load_german_credit"]
