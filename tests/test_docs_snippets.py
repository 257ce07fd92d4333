"""Every ```python block of the documentation runs.

The pages are README.md and docs/**/*.md.  A page's python blocks run in order in one shared namespace (a
later block may use what an earlier one defined), with the repository root as working directory and
matplotlib on the Agg backend.  Blocks in other languages (```bash, ```text, bare ```) are not run.  There is
no skip marker: a snippet that cannot run belongs in a ```text block.

A second test checks that every page under docs/ is reachable from the navigation of mkdocs.yml (and that
the navigation names no missing page), so a page cannot be orphaned.
"""

from __future__ import annotations

import os
import pathlib
import re
import textwrap
from typing import Dict, List, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: info strings whose blocks are executed (the first word after the fence)
PYTHON_LANGUAGES = {"python", "py", "python3"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def markdown_pages() -> List[pathlib.Path]:
    """README.md and every Markdown page under docs/, sorted."""
    pages = [ROOT / "README.md"] + sorted(DOCS.rglob("*.md"))
    return [p for p in pages if p.is_file()]


def code_blocks(text: str) -> List[Tuple[str, int, str]]:
    """``(language, first code line (1-based), code)`` of every fenced block, in order.

    A fence may be indented (a block inside a list item): the code is dedented by the fence's indentation.
    A block closes at a fence of the same character at least as long, per CommonMark.
    """
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        info = m.group("info").strip()
        language = re.split(r"[\s{]", info, maxsplit=1)[0].lower() if info else ""
        start = i + 1
        j = start
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if (close is not None and close.group("fence")[0] == fence[0]
                    and len(close.group("fence")) >= len(fence) and not close.group("info").strip()):
                break
            j += 1
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[start:j]]
        blocks.append((language, start + 1, textwrap.dedent("\n".join(body))))
        i = j + 1
    return blocks


def python_blocks(page: pathlib.Path) -> List[Tuple[int, str]]:
    return [(line, code) for language, line, code in code_blocks(page.read_text(encoding="utf-8"))
            if language in PYTHON_LANGUAGES]


PAGES_WITH_CODE = [p for p in markdown_pages() if python_blocks(p)]


def _page_id(page: pathlib.Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_the_collector_finds_the_pages():
    names = {_page_id(p) for p in PAGES_WITH_CODE}
    assert "README.md" in names and "docs/index.md" in names
    assert any(n.startswith("docs/tutorials/") for n in names)
    # the collector sees blocks inside list items and ignores other languages
    text = "x\n\n```bash\nexit 1\n```\n\n- item\n\n    ```python\n    a = 1\n    ```\n\n```text\nb\n```\n"
    assert [(lang, code) for lang, _, code in code_blocks(text)] == [("bash", "exit 1"), ("python", "a = 1"),
                                                                     ("text", "b")]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=_page_id)
def test_page_snippets_run(page, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    try:
        import matplotlib
        matplotlib.use("Agg", force=True)
    except ImportError:  # pragma: no cover - matplotlib is in the test extra
        matplotlib = None
    namespace: Dict[str, object] = {"__name__": "__docs__", "__file__": str(page)}
    try:
        for line, code in python_blocks(page):
            # pad with blank lines so that a traceback names the page's own line numbers
            program = compile("\n" * (line - 1) + code, str(page.relative_to(ROOT)), "exec")
            exec(program, namespace)
    finally:
        if matplotlib is not None:
            import matplotlib.pyplot as plt
            plt.close("all")


# ------------------------------------------------------------------------------------------ navigation
def _nav_pages(node) -> List[str]:
    """The page paths named anywhere in a mkdocs ``nav`` tree (external links left out)."""
    if isinstance(node, str):
        return [] if re.match(r"^[a-z]+://", node) else [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    return []


def _load_mkdocs_config() -> dict:
    yaml = pytest.importorskip("yaml")

    class Loader(yaml.SafeLoader):
        """SafeLoader that reads unknown tags (material's ``!!python/name:...``, ``!ENV``) as plain values."""

    def ignore_tag(loader, suffix, node):
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_mapping(node)

    Loader.add_multi_constructor("!", ignore_tag)
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", ignore_tag)
    with open(ROOT / "mkdocs.yml", encoding="utf-8") as fh:
        return yaml.load(fh, Loader=Loader)


def test_every_docs_page_is_in_the_navigation():
    config = _load_mkdocs_config()
    docs_dir = ROOT / config.get("docs_dir", "docs")
    nav = set(_nav_pages(config.get("nav", [])))
    pages = {p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*.md")}
    missing = sorted(pages - nav)
    assert not missing, f"pages under {docs_dir.name}/ missing from the mkdocs.yml nav (orphaned): {missing}"
    dangling = sorted(nav - pages)
    assert not dangling, f"mkdocs.yml nav names pages that do not exist: {dangling}"
