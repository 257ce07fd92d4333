"""The run options every reproduction has and its command line (``python -m reproductions.<paper>``)."""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

#: the committed reports: ``docs/results/<paper>`` of this checkout (each reproduction's default ``--out``)
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


@dataclass(kw_only=True)
class RunOptions:
    """The options every reproduction has (:func:`add_protocol_arguments`, :func:`add_run_arguments`) and
    the facts of a run; a paper's ``Config`` adds its grids and sets ``GRIDS``."""

    datasets: Tuple[str, ...]
    out: Path
    splits: int
    folds: int
    max_rows: int
    n_jobs: int = 2
    backend: str = "loky"
    scheduler: Optional[str] = None          # dask scheduler address (backend "dask")
    seed: int = 0
    preset: str = "default"
    quiet: bool = False
    verbose: bool = False
    command: str = ""
    render_only: bool = False
    resume: bool = False                     # reuse the saved units of an interrupted run (reproductions.checkpoint)
    generated: str = ""                      # UTC time of the run (set by main; kept by --render-only)
    load_average: str = ""                   # the machine's 1/5/15-minute load when the run ended
    commit: str = ""                         # the git commit of the run ("+dirty": uncommitted changes)
    environment: str = ""                    # versions, platform and cores of the run (set by stamp)
    #: model -> {grid parameter: the field holding its values} (``{}``: nothing to choose)
    GRIDS: ClassVar[Dict[str, Dict[str, str]]] = {}

    def grid(self, model: str) -> Dict[str, List[float]]:
        """The CV grid of ``model``: ``{parameter: values}`` (``{}`` when it has no hyper-parameter)."""
        return {param: list(getattr(self, name)) for param, name in self.GRIDS[model].items()}


def parser(package: str) -> argparse.ArgumentParser:
    """The argument parser of the reproduction ``package`` (``"reproductions.selvi2022"``): its usage line
    says ``python -m <package>``, its description is the first line of the package's docstring."""
    doc = importlib.import_module(package).__doc__ or ""
    return argparse.ArgumentParser(prog=f"python -m {package}", description=doc.split("\n", 1)[0])


def add_protocol_arguments(ap: argparse.ArgumentParser, *, datasets: Sequence[str], full_help: str,
                           datasets_help: str, max_rows_help: str) -> None:
    """The protocol options every reproduction has: preset, data sets, splits, folds, row cap."""
    ap.add_argument("--full", action="store_true", help=full_help)
    ap.add_argument("--datasets", nargs="+", default=list(datasets), choices=datasets, metavar="NAME",
                    help=datasets_help)
    ap.add_argument("--splits", type=int, default=None, help="random 80/20 train/test splits")
    ap.add_argument("--folds", type=int, default=None, help="CV folds on the training rows")
    ap.add_argument("--max-rows", type=int, default=None, help=max_rows_help)


def protocol_options(args: argparse.Namespace, presets: Mapping[str, Mapping[str, object]], package: str,
                     argv: Optional[Sequence[str]]) -> Tuple[Dict[str, object], Callable[[object, str], object]]:
    """The :class:`RunOptions` fields of the parsed command line of ``package``, and ``pick(value, key)``:
    ``value`` if the option was given, else the preset's (``--full``: ``presets["full"]``, otherwise
    ``presets["default"]``)."""
    name = "full" if args.full else "default"

    def pick(value, key):
        return presets[name][key] if value is None else value

    options = dict(datasets=tuple(dict.fromkeys(args.datasets)), out=args.out, splits=int(pick(args.splits, "splits")),
                   folds=int(pick(args.folds, "folds")), max_rows=int(pick(args.max_rows, "max_rows")),
                   n_jobs=args.n_jobs, backend=args.backend,
                   scheduler=args.scheduler, seed=args.seed, preset=name, quiet=args.quiet, verbose=args.verbose,
                   command=command_line(package, argv), render_only=args.render_only, resume=args.resume)
    return options, pick


def add_run_arguments(ap: argparse.ArgumentParser, *, seed: int, default_out: Path, out_help: str) -> None:
    """The options every reproduction has: parallelism, seed, output folder, --render-only, verbosity."""
    ap.add_argument("--n-jobs", type=int, default=2, help="parallel fits (joblib n_jobs)")
    ap.add_argument("--backend", default="loky", help="joblib backend of the sweeps: loky, dask, threading, ...")
    ap.add_argument("--scheduler", default=None,
                    help="with --backend dask: a scheduler address (tcp://host:8786; its scheduler and workers need "
                         "the repository root on PYTHONPATH to import reproductions); default: one LocalCluster "
                         "of --n-jobs single-threaded workers for the whole run")
    ap.add_argument("--seed", type=int, default=seed, help="seed of the subsamples, splits and folds")
    ap.add_argument("--out", type=Path, default=default_out, help=out_help)
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite <out>/README.md from the errors.csv, cv.csv and run.json of an earlier run "
                         "(no fits; the other options are taken from run.json)")
    ap.add_argument("--resume", action="store_true",
                    help="take the data sets an interrupted run of the same protocol finished (saved in "
                         "<out>/partial/) instead of running them again")
    ap.add_argument("--verbose", action="store_true", help="also the sweeps' per-fit progress lines")
    ap.add_argument("--quiet", action="store_true", help="no progress output")


def command_line(package: str, argv: Optional[Sequence[str]]) -> str:
    """``python -m <package> <the options given>`` (the report shows the exact command)."""
    given = list(sys.argv[1:] if argv is None else argv)
    return " ".join([f"python -m {package}"] + ([shlex.join(given)] if given else []))


def check_run_options(ap: argparse.ArgumentParser, cfg) -> None:
    """Reject option values the protocol cannot run (``ap.error`` exits with the usage line)."""
    if cfg.splits < 1 or cfg.folds < 2:
        ap.error("need --splits >= 1 and --folds >= 2")
    if cfg.scheduler and cfg.backend != "dask":
        ap.error("--scheduler needs --backend dask")
