"""Whether a committed reproduction report is current (issue 26): its run's commit against the code its numbers
depend on.

Every run writes ``<out>/provenance.json`` (:func:`write_provenance`): the commit it ran at (and whether the working
tree had uncommitted changes), the date, the machine, the command, the wall time, and the source files of ``drokit``,
``reproductions`` and ``benchmarks`` that the run had loaded (``sys.modules`` at its end: the code its numbers depend
on, the report-writing code aside).  A report is **stale** when

* it has no provenance (generated before runs recorded one), or its run's tree was dirty, or
* a commit after its own changed one of its source files (``git log <commit>..HEAD -- <files>``),

and then its README carries a banner saying so (between :data:`BANNER_START` and :data:`BANNER_END`, under the
title), which ``python -m reproductions.freshness --mark`` writes and removes.  ``tests/test_reproduction_freshness.py``
fails when a README's banner disagrees with its status: a stale report can be committed, but never look current.
Where git or the report's commit is not available (a shallow clone, an export) the status is unknown and nothing is
claimed.

    python -m reproductions.freshness [--mark]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional, Sequence

#: the repository root
ROOT = Path(__file__).resolve().parents[1]
#: the committed reports, by folder name (a paper, or a variant of its protocol such as belbasi2023-normalized)
REPORTS = {folder.name: folder for folder in sorted((ROOT / "docs" / "results").iterdir())
           if (folder / "README.md").is_file()}
#: folders whose loaded modules a run records as its dependencies
SOURCE_FOLDERS = ("drokit", "reproductions", "benchmarks")
#: modules that only write reports or parse options: their changes change no number
RENDERING = ("report.py", "tables.py", "published.py", "options.py", "freshness.py", "__main__.py")
PROVENANCE = "provenance.json"
BANNER_START = "<!-- freshness:start (python -m reproductions.freshness --mark) -->"
BANNER_END = "<!-- freshness:end -->"


def _git(*args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def current_commit() -> tuple:
    """``(commit hash or "", whether the source folders have uncommitted changes to tracked files)`` -- the run's own
    outputs (the committed reports it rewrites) do not count."""
    commit = _git("rev-parse", "HEAD") or ""
    status = _git("status", "--porcelain", "--untracked-files=no", "--", *SOURCE_FOLDERS)
    return commit, bool(status)


def loaded_sources() -> List[str]:
    """The repository's source files loaded in this process (relative paths, sorted), rendering modules aside."""
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            relative = Path(path).resolve().relative_to(ROOT)
        except ValueError:
            continue
        if relative.parts and relative.parts[0] in SOURCE_FOLDERS and relative.name not in RENDERING:
            found.add(relative.as_posix())
    return sorted(found)


def write_provenance(out: Path, command: str, seconds: float) -> dict:
    """``<out>/provenance.json`` of the run that just ended (module docstring); returns it."""
    commit, dirty = current_commit()
    record = {"commit": commit, "dirty": dirty, "generated": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
              "machine": f"{platform.platform()}, {platform.processor() or platform.machine()}",
              "command": command, "seconds": round(float(seconds), 1), "depends_on": loaded_sources()}
    Path(out, PROVENANCE).write_text(json.dumps(record, indent=1) + "\n")
    return record


@dataclass
class Freshness:
    """A report's status: ``stale`` (True / False; ``None``: unknown here), why, and the commits that changed its
    sources since its run (the first is named in the banner)."""

    folder: Path
    stale: Optional[bool]
    reason: str
    commit: str = ""
    changes: List[str] = field(default_factory=list)

    def banner(self) -> str:
        """The README's banner for a stale report ("" otherwise)."""
        if not self.stale:
            return ""
        return (f"> **Stale.** {self.reason}: the numbers below may differ from a rerun at the current code.  "
                f"Regenerate with the command below (from a clean checkout), then "
                f"`python -m reproductions.freshness --mark`.")


def status(folder: Path) -> Freshness:
    """The :class:`Freshness` of the report in ``folder`` (module docstring)."""
    path = Path(folder, PROVENANCE)
    if not path.is_file():
        return Freshness(folder, True, "This report has no provenance record (it was generated before runs recorded "
                                       "their commit)")
    record = json.loads(path.read_text())
    commit = record.get("commit", "")
    if not commit:
        return Freshness(folder, True, "Its run did not know its commit (not a git checkout)")
    short = commit[:10]
    if record.get("dirty"):
        return Freshness(folder, True, f"Generated at commit `{short}` with uncommitted changes", commit)
    if _git("cat-file", "-e", f"{commit}^{{commit}}") is None:
        return Freshness(folder, None, f"commit {short} is not in this checkout's history (or git is missing)", commit)
    sources = list(record.get("depends_on", []))          # a file since moved or deleted counts as changed
    log = _git("log", "--reverse", "--format=%h %cs %s", f"{commit}..HEAD", "--", *sources) if sources else ""
    if log is None:
        return Freshness(folder, None, "git log failed", commit)
    changes = [line for line in log.splitlines() if line.strip()]
    if not changes:
        return Freshness(folder, False, f"current: no commit after `{short}` changed its {len(sources)} source files",
                         commit)
    first = changes[0].split(" ", 2)
    return Freshness(folder, True, f"Generated at commit `{short}`; {first[0]} ({first[1]}) and later commits changed "
                                   f"code its numbers depend on", commit, changes)


def banner_of(readme_text: str) -> str:
    """The banner between the markers of a README ("" without one)."""
    if BANNER_START not in readme_text or BANNER_END not in readme_text:
        return ""
    return readme_text[readme_text.index(BANNER_START) + len(BANNER_START):readme_text.index(BANNER_END)].strip()


def mark(folder: Path, state: Optional[Freshness] = None) -> Freshness:
    """Write (stale) or remove (current) the banner of ``folder``'s README; an unknown status changes nothing."""
    state = status(folder) if state is None else state
    readme = Path(folder, "README.md")
    if state.stale is None or not readme.is_file():
        return state
    text = readme.read_text()
    if BANNER_START in text and BANNER_END in text:
        text = text[:text.index(BANNER_START)] + text[text.index(BANNER_END) + len(BANNER_END):].lstrip("\n")
    if state.stale:
        title, _, rest = text.partition("\n")
        text = f"{title}\n\n{BANNER_START}\n{state.banner()}\n{BANNER_END}\n{rest}"
    readme.write_text(text)
    return state


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reproductions.freshness", description=__doc__.split("\n")[0])
    ap.add_argument("--mark", action="store_true", help="write / remove the README banners to match")
    args = ap.parse_args(argv)
    for name, folder in REPORTS.items():
        state = mark(folder) if args.mark else status(folder)
        label = {True: "stale", False: "current", None: "unknown"}[state.stale]
        print(f"{name:12s} {label:8s} {state.reason}" + (f" ({len(state.changes)} commits)" if state.changes else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["status", "mark", "write_provenance", "loaded_sources", "Freshness", "REPORTS", "banner_of"]
