"""The reports of the reproductions: markdown helpers, the report files, the kept discussion block, the run
record (``run.json``) and ``--render-only``.

A report is ``<out>/README.md`` next to the published numbers with ``errors.csv`` / ``cv.csv`` / ``run.json``
(so that ``--render-only`` can rebuild it) and a hand-written discussion block kept across reruns.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from reproductions.checkpoint import Checkpoints
from reproductions.runtime import Progress, dask_session, environment, stamp


# ============================================================================ markdown
def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: Optional[str] = None) -> str:
    """A GitHub markdown table; ``align`` is one character per column, ``l`` or ``r`` (default: first
    column left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---" if a == "l" else "---:" for a in align]

    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "|".join(sep) + "|"] + [line(r) for r in rows])


def fmt_pct(value: Optional[float], digits: int = 2) -> str:
    """``12.34%``; ``–`` for a missing value."""
    return "–" if value is None or not np.isfinite(value) else f"{100 * value:.{digits}f}%"


def listed(values: Sequence[float]) -> str:
    """``0, 1e-05, 0.001``: a grid in the report."""
    return ", ".join(f"{v:g}" for v in values)


def preset_row(cfg, presets: Mapping[str, Mapping[str, object]], label: str, key: str,
               fmt: Callable[[object], str] = str) -> List[str]:
    """A row of a report's Sizes table: ``label``, this run's value of ``key``, the default's, ``--full``'s."""
    return [label, fmt(getattr(cfg, key)), fmt(presets["default"][key]), fmt(presets["full"][key])]


def grid_points(cfg) -> int:
    """The CV candidates of one (data set, split): over the models of ``cfg.GRIDS``, the product of their grids'
    lengths (1 for a model without hyper-parameters)."""
    return sum(int(np.prod([len(getattr(cfg, name)) for name in grids.values()])) for grids in cfg.GRIDS.values())


def paper_protocol(cfg, parse_args: Callable[[Sequence[str]], object], keep: Sequence[str] = ("datasets",)):
    """The configuration of the paper's protocol: ``--full`` read by the reproduction's own ``parse_args``, with
    this run's fields ``keep`` (what is reproduced -- data sets, losses, variants -- not how large the protocol is)."""
    return dataclasses.replace(parse_args(["--full"]), **{name: getattr(cfg, name) for name in keep})


def full_protocol_scale(cfg, full, fits: Optional[Callable[[object], float]] = None) -> float:
    """How many times this run's fits the paper's protocol makes: ``full`` is its configuration
    (:func:`paper_protocol`); ``fits(c)`` counts a configuration's fits (default: data sets x splits x folds x
    :func:`grid_points`)."""
    count = fits or (lambda c: len(c.datasets) * c.splits * c.folds * grid_points(c))
    return count(full) / max(count(cfg), 1)


def full_protocol_note(package: str, cfg, scale: float, seconds: float, more_rows: bool) -> str:
    """The sentence under a report's Sizes table: which preset the report comes from and, when not the paper's,
    what the paper's protocol would cost at this run's pace (``scale``: :func:`full_protocol_scale`; a lower bound
    when ``more_rows``: its fits see all rows) and how to run it on a Dask cluster, resumable."""
    if cfg.preset == "full":
        return "This report comes from the paper's protocol (`--full`)."
    hours = scale * seconds / 3600
    return (f"This report comes from the {cfg.preset} preset, not the paper's protocol: `--full` makes about "
            f"{scale:,.0f}x as many fits{' on all rows instead of the row cap' if more_rows else ''}, "
            f"{'at least ' if more_rows else 'about '}{hours:,.0f} h at this run's pace on its machine "
            f"({seconds / 60:.0f} min here). It runs on a Dask cluster and resumes after an interruption: "
            f"`python -m {package} --full --backend dask --scheduler ADDRESS --resume`.")


def section(title: str, *blocks: str) -> List[str]:
    """The lines of a report section: ``## title``, then each block, each followed by a blank line."""
    return [f"## {title}", ""] + [line for block in blocks for line in (block, "")]


def most_frequent(labels: Sequence[str], top: int = 3) -> str:
    """``a ×3; b ×1``: the ``top`` most frequent labels with their counts (``…`` when there are more)."""
    counts = Counter(labels)
    return "; ".join(f"{k} ×{v}" for k, v in counts.most_common(top)) + ("; …" if len(counts) > top else "")


# ============================================================================ report files
@dataclass
class RunResult:
    """What a reproduction's ``main`` produced: the report's path, the configuration, every run (one per
    data set, or per data set and variant) and the wall-clock seconds."""

    readme: Path
    config: object
    runs: List[object]
    seconds: float


def run_facts(package: str, cfg, seconds: float) -> str:
    """The report's opening paragraphs: when, how long, which preset, the exact command, the environment;
    ``package`` is the reproduction's (``"reproductions.selvi2022"``).

    ``cfg`` needs ``generated``, ``preset``, ``load_average``, ``command``, ``backend``, ``n_jobs``, ``seed``.
    """
    return f"""Generated by `python -m {package}` at commit `{getattr(cfg, "commit", "") or "unrecorded"}` on
{cfg.generated} UTC in {seconds / 60:.1f} min ({cfg.preset} preset; load average {cfg.load_average} at the end: the
2 cores were shared). Command:

```
{cfg.command}
```

Environment: {cfg.environment or environment() + " (of the rendering: the run did not record its own)"}; sweeps on
joblib backend `{cfg.backend}` with n_jobs = {cfg.n_jobs}. Seed {cfg.seed}."""


DISCUSSION_START = "<!-- discussion:start (hand-written; kept when the script rewrites this file) -->"
DISCUSSION_END = "<!-- discussion:end -->"


def kept_discussion(readme: Path) -> str:
    """The hand-written discussion block of an existing README (kept across runs), or a placeholder."""
    if readme.is_file():
        text = readme.read_text()
        if DISCUSSION_START in text and DISCUSSION_END in text:
            return text[text.index(DISCUSSION_START):text.index(DISCUSSION_END) + len(DISCUSSION_END)]
    return f"{DISCUSSION_START}\n_No discussion written for this run yet._\n{DISCUSSION_END}"


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """A result table as CSV (10 significant digits)."""
    frame.to_csv(path, index=False, float_format="%.10g")


def open_report(cfg, runs: Sequence[object], seconds: float, errors: Optional[pd.DataFrame],
                cv: Optional[pd.DataFrame], config_keys: Sequence[str], run_keys: Sequence[str]) -> Tuple[Path, str]:
    """Create ``cfg.out``; with results (``errors`` not None) write errors.csv, cv.csv and, unless the run
    only renders, run.json.  Returns the README's path and its kept discussion block."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if errors is not None:
        write_csv(errors, out / "errors.csv")
        write_csv(cv, out / "cv.csv")
        if not cfg.render_only:
            save_run_record(out, cfg, runs, seconds, config_keys, run_keys)
    readme = out / "README.md"
    return readme, kept_discussion(readme)


def finish_report(readme: Path, parts: List[str], notes: Sequence[str], files: Sequence[str], package: str) -> Path:
    """Append the warnings caught in this process and the Files section (``files`` plus run.json, which
    ``python -m <package> --render-only`` reads) to the report's ``parts`` and write the README."""
    if notes:
        parts += ["Warnings caught in this process (fits in worker processes record theirs in the sweeps):", ""]
        parts += [f"- {n}" for n in dict.fromkeys(notes)] + [""]
    parts += ["## Files", "", *files,
              "- `run.json`: the configuration, timings and notes of the run; `python -m "
              f"{package} --render-only --out <this folder>` rewrites this page from the "
              "three files (the discussion block is kept).", ""]
    readme.write_text("\n".join(parts))
    return readme


def save_run_record(out: Path, cfg, runs: Sequence[object], seconds: float, config_keys: Sequence[str],
                    run_keys: Sequence[str]) -> None:
    """``run.json``: what the report needs besides the CSVs (configuration, timings and notes per run)."""
    record = {"seconds": seconds, "config": {k: getattr(cfg, k) for k in config_keys},
              "runs": [{k: getattr(r, k) for k in run_keys} for r in runs]}
    (Path(out) / "run.json").write_text(json.dumps(record, indent=1, default=str))


def load_run(out: Path, config_cls) -> Tuple[dict, object, pd.DataFrame, pd.DataFrame]:
    """An earlier run in ``out``: ``(run.json record, its configuration as config_cls, errors.csv, cv.csv)``.

    Lists in the stored configuration become tuples; ``out`` and ``render_only=True`` are set; the test
    errors are snapped to multiples of 1 / n_test (the CSV keeps 10 significant digits).
    """
    out = Path(out)
    record = json.loads((out / "run.json").read_text())
    cfg = config_cls(**{**{k: (tuple(v) if isinstance(v, list) else v) for k, v in record["config"].items()},
                        "out": out, "render_only": True})
    errors = pd.read_csv(out / "errors.csv", dtype={"status": str, "fit_error": str}, keep_default_na=False,
                         na_values={"error": [""], "cv_error": [""], "fit_seconds": [""]})
    # a test error is (misclassified rows) / n_test: snap the CSV's 10 digits back to that fraction, so that
    # means and ties are the run's to the last bit (ties between models decide bold, marks and winners)
    errors["error"] = np.round(errors["error"] * errors["n_test"]) / errors["n_test"]
    cv = pd.read_csv(out / "cv.csv")
    return record, cfg, errors, cv


def execute(cfg, log: Progress, run_all: Callable[[Checkpoints], List[object]],
            write_report: Callable[[Sequence[object], object, float], Path]) -> RunResult:
    """Run ``run_all(checkpoints)`` (on one dask cluster with ``--backend dask``; each finished unit saved,
    ``--resume`` reuses them: :mod:`reproductions.checkpoint`), stamp ``cfg``, write the report."""
    start = time.perf_counter()
    checkpoints = Checkpoints(cfg, getattr(cfg, "resume", False), log)
    with dask_session(cfg):
        runs = run_all(checkpoints)
    seconds = time.perf_counter() - start
    stamp(cfg)
    readme = write_report(runs, cfg, seconds)
    record_provenance(cfg, seconds)
    checkpoints.clear()
    log(f"report written to {readme} ({seconds / 60:.1f} min)")
    return RunResult(readme=readme, config=cfg, runs=runs, seconds=seconds)


def record_provenance(cfg, seconds: float) -> None:
    """``<out>/provenance.json`` of this run and the README's freshness banner (:mod:`reproductions.freshness`)."""
    from reproductions.freshness import mark, write_provenance
    write_provenance(Path(cfg.out), cfg.command, seconds)
    mark(Path(cfg.out))


def render(out: Path, config_cls, make_run: Callable[[dict, pd.DataFrame, pd.DataFrame], object],
           write_report: Callable[[Sequence[object], object, float], Path]) -> RunResult:
    """``--render-only``: rebuild the report of an earlier run in ``out`` from its run.json, errors.csv and
    cv.csv (``make_run(item, errors, cv)`` rebuilds one run of run.json's ``runs``)."""
    record, cfg, errors, cv = load_run(out, config_cls)
    runs = [make_run(item, errors, cv) for item in record["runs"]]
    readme = write_report(runs, cfg, record["seconds"])
    from reproductions.freshness import mark
    mark(Path(out))                     # the rewritten README keeps its run's freshness banner
    return RunResult(readme=readme, config=cfg, runs=runs, seconds=record["seconds"])
