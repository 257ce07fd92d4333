"""Resumable reproduction runs (issue 26: reproductions/checkpoint.py).

* an interrupted run's finished units are saved; ``--resume`` with the same protocol takes them without running
  them again and runs the rest; the results are the same objects' values;
* a different protocol (any result-changing option) or no ``--resume`` runs everything again; options that only
  say where and how to run (jobs, backend, output folder, verbosity, command) do not count as a different protocol;
* a unit is saved whole or not at all (an interrupted unit leaves nothing); ``clear`` leaves no partial folder;
* through ``reproductions.report.execute`` (the papers' entry point): the report is written and the partial folder
  removed.
"""

import dataclasses
from pathlib import Path
from typing import Tuple

import pytest

from reproductions.checkpoint import FOLDER, Checkpoints, protocol_of


@dataclasses.dataclass
class _Cfg:
    out: Path
    datasets: Tuple[str, ...] = ("a", "b", "c")
    splits: int = 5
    n_jobs: int = 2
    backend: str = "loky"
    quiet: bool = True
    command: str = "python -m x"


class _Stop(Exception):
    pass


def _work(calls, stop_at=None):
    def work(unit):
        if unit == stop_at:
            raise _Stop(unit)
        calls.append(unit)
        return {"unit": unit, "value": len(unit) * 10}
    return work


def test_resume_takes_the_finished_units(tmp_path):
    cfg = _Cfg(tmp_path)
    calls = []
    with pytest.raises(_Stop):
        Checkpoints(cfg, resume=False).run_all(cfg.datasets, _work(calls, stop_at="c"))
    assert calls == ["a", "b"] and not (tmp_path / FOLDER / "c.pkl").exists()
    again = []
    runs = Checkpoints(dataclasses.replace(cfg, n_jobs=8, backend="dask", command="other"), resume=True) \
        .run_all(cfg.datasets, _work(again))
    assert again == ["c"]
    assert runs == [{"unit": u, "value": len(u) * 10} for u in cfg.datasets]


def test_other_protocol_or_no_resume_runs_everything(tmp_path):
    cfg = _Cfg(tmp_path)
    Checkpoints(cfg, resume=False).run_all(cfg.datasets, _work([]))
    calls = []
    Checkpoints(dataclasses.replace(cfg, splits=100), resume=True).run_all(cfg.datasets, _work(calls))
    assert calls == list(cfg.datasets)
    calls = []
    Checkpoints(dataclasses.replace(cfg, splits=100), resume=False).run_all(cfg.datasets, _work(calls))
    assert calls == list(cfg.datasets)
    saved = Checkpoints(cfg, resume=True)
    assert not saved.resume                      # the folder now holds splits=100's units
    saved.clear()
    assert not (tmp_path / FOLDER).exists()


def test_protocol_leaves_out_run_only_options(tmp_path):
    a = protocol_of(_Cfg(tmp_path))
    assert a == protocol_of(_Cfg(tmp_path / "elsewhere", n_jobs=1, backend="dask", quiet=False, command="x"))
    assert a != protocol_of(_Cfg(tmp_path, datasets=("a",)))


def test_execute_clears_the_partial_results(tmp_path):
    from reproductions.report import execute
    from reproductions.runtime import Progress
    cfg = _Cfg(tmp_path)
    cfg.scheduler, cfg.generated, cfg.load_average, cfg.commit, cfg.environment = None, "", "", "", ""
    seen = {}

    def write_report(runs, cfg_, seconds):
        seen["runs"] = runs
        seen["partial"] = (tmp_path / FOLDER).is_dir()
        readme = tmp_path / "README.md"
        readme.write_text("# report\n")
        return readme

    result = execute(cfg, Progress(True, "t"), lambda saved: saved.run_all(cfg.datasets, _work([])), write_report)
    assert seen["partial"] and [r["unit"] for r in seen["runs"]] == ["a", "b", "c"]
    assert not (tmp_path / FOLDER).exists() and (tmp_path / "provenance.json").is_file()
    assert result.readme == tmp_path / "README.md"


def test_a_unit_that_does_not_pickle_is_run_not_saved(tmp_path):
    cfg = _Cfg(tmp_path, datasets=("a",))
    logged = []
    result = Checkpoints(cfg, resume=False, log=logged.append).run("a", lambda: (lambda: 1))
    assert callable(result) and not (tmp_path / FOLDER / "a.pkl").exists()
    assert logged and "not saved" in logged[0]
