"""The docs' griffe extension (docs/griffe_drokit.py) and the docstrings it relies on.

drokit's docstrings are numpydoc, which the numpy parser of mkdocstrings reads as they are, except for
Sphinx roles (``:class:`~drokit.Wasserstein```): the extension turns them into inline code, wrapped in an
optional autorefs cross-reference when the target resolves in the package.  The first tests check that
rewrite on small inputs and on the loaded package; they need griffe (the ``docs`` extra) and are skipped
without it.

The last tests need nothing but the standard library: no drokit docstring may use a reST literal block
(a line ending in ``::`` followed by an indented block) or a ``.. math::`` directive.  mkdocstrings renders
neither (the extension no longer converts them); a docstring shows code or a formula in a fenced block
(```` ```python ```` or ```` ```text ````), introduced by a sentence ending in a single ``:``.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import re
from typing import Iterator, List, Tuple

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXTENSION = ROOT / "docs" / "griffe_drokit.py"
PACKAGE = ROOT / "drokit"


@pytest.fixture(scope="module")
def shim():
    """docs/griffe_drokit.py imported by path (it is not a package module); skips without griffe."""
    pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("griffe_drokit", EXTENSION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resolver(known):
    """A ``resolve(target, role)`` that knows the targets of ``known`` (target -> identifier)."""
    calls = []

    def resolve(target, role):
        calls.append((target, role))
        return known.get(target)

    resolve.calls = calls
    return resolve


# ----------------------------------------------------------------------------- the role rewrite
def test_a_resolvable_role_becomes_an_optional_autoref_with_the_short_name(shim):
    resolve = _resolver({"drokit.Wasserstein": "drokit.ambiguity.wasserstein.Wasserstein"})
    out = shim.rewrite_docstring("A :class:`~drokit.Wasserstein` ball.", resolve)
    assert out == ('A <autoref identifier="drokit.ambiguity.wasserstein.Wasserstein" optional>'
                   '`Wasserstein`</autoref> ball.')
    assert resolve.calls == [("drokit.Wasserstein", "class")]


def test_an_unresolvable_role_becomes_plain_inline_code(shim):
    resolve = _resolver({})
    out = shim.rewrite_docstring("Calls :func:`nowhere.to_be_found` and :meth:`~nowhere.Thing.run`.", resolve)
    assert out == "Calls `nowhere.to_be_found` and `run`."
    assert "autoref" not in out
    # the default resolver resolves nothing
    assert shim.rewrite_docstring(":class:`drokit.Wasserstein`") == "`drokit.Wasserstein`"


@pytest.mark.parametrize("role, shown", [
    (":meth:`~drokit.GroundMetric.calibrated`", "`calibrated`"),   # ~: the last component
    (":meth:`drokit.GroundMetric.calibrated`", "`drokit.GroundMetric.calibrated`"),   # no ~: the full name
    (":class:`~.adversaries.Adversary`", "`Adversary`"),   # Sphinx's relative ~.module.Name form
    (":class:`.adversaries.Adversary`", "`adversaries.Adversary`"),
    (":py:func:`~drokit.metrics.calibrate`", "`calibrate`"),   # the :py: domain prefix
    (":class:`the ball <drokit.Wasserstein>`", "`the ball`"),   # an explicit title
])
def test_the_displayed_name(shim, role, shown):
    assert shim.rewrite_docstring(role) == shown


def test_the_resolver_gets_the_target_without_tilde_title_or_leading_dots_kept(shim):
    resolve = _resolver({".adversaries.Adversary": "drokit.evaluation.stability.adversaries.Adversary"})
    out = shim.rewrite_docstring("An :class:`~.adversaries.Adversary` (:class:`ball <drokit.Wasserstein>`).", resolve)
    assert out == ('An <autoref identifier="drokit.evaluation.stability.adversaries.Adversary" optional>'
                   '`Adversary`</autoref> (`ball`).')
    assert resolve.calls == [(".adversaries.Adversary", "class"), ("drokit.Wasserstein", "class")]


def test_fenced_code_blocks_are_left_untouched(shim):
    text = "\n".join([
        "Before :class:`~drokit.Wasserstein`:",
        "",
        "```python",
        "amb = dk.Wasserstein(radius=0.1)  # :class:`~drokit.Wasserstein` stays as written",
        "```",
        "",
        "    ````text",
        "    ```",
        "    :func:`drokit.worst_case` inside a longer fence, after a shorter fence line",
        "    ```python",
        "    :func:`drokit.worst_case` still inside: a fence with an info string closes nothing",
        "    ````",
        "",
        "After :func:`~drokit.worst_case`.",
    ])
    resolve = _resolver({"drokit.Wasserstein": "drokit.ambiguity.wasserstein.Wasserstein"})
    lines = shim.rewrite_roles(text.split("\n"), resolve)
    expected = text.split("\n")
    expected[0] = 'Before <autoref identifier="drokit.ambiguity.wasserstein.Wasserstein" optional>`Wasserstein`</autoref>:'
    expected[-1] = "After `worst_case`."
    assert lines == expected
    assert resolve.calls == [("drokit.Wasserstein", "class"), ("drokit.worst_case", "func")]


def test_text_without_roles_is_unchanged(shim):
    text = "Parameters\n----------\nradius : float\n    The radius ``eps`` (``:class:`` is no role here).\n"
    assert shim.rewrite_docstring(text) == text


def test_the_extension_on_the_package(shim):
    """Loaded by griffe as mkdocs loads it: roles become autorefs to the objects' canonical paths, the
    numpydoc items are left alone."""
    import griffe

    extensions = griffe.load_extensions(shim.DrokitDocstrings())
    pkg = griffe.load("drokit", search_paths=[str(ROOT)], extensions=extensions, docstring_parser="numpy")
    doc = pkg["models.estimators.DROClassifier"].docstring.value
    assert ('<autoref identifier="drokit.ambiguity.wasserstein.Wasserstein" optional>`Wasserstein`</autoref>'
            in doc)
    assert ":class:" not in doc and ":func:" not in doc
    assert "\nambiguity : Wasserstein or Intersection or OTMoment or AmbiguitySet or None\n" in doc
    # an unknown target stays plain code
    assert shim.rewrite_docstring(":class:`drokit.NoSuchThing`") == "`drokit.NoSuchThing`"


# ----------------------------------------------------------------- no reST literal block in drokit
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::")


def _docstrings(tree: ast.AST) -> Iterator[Tuple[int, str]]:
    """``(first line, raw text)`` of the module's, every class's and every function's docstring."""
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in nodes:
        body = getattr(node, "body", [])
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            yield body[0].lineno, body[0].value.value


def rest_blocks(source: str) -> List[Tuple[int, str]]:
    """``(line, text)`` of every docstring line of ``source`` that opens a reST literal block (ends in
    ``::``) or is a directive (``.. math::``), outside fenced code blocks."""
    found = []
    for first, text in _docstrings(ast.parse(source)):
        fence = None
        for k, line in enumerate(text.split("\n")):
            m = _FENCE.match(line)
            if fence is not None:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                    fence = None
                continue
            if m:
                fence = m.group(1)
                continue
            if line.rstrip().endswith("::") or _DIRECTIVE.match(line):
                found.append((first + k, line.strip()))
    return found


def test_the_scan_finds_literal_blocks_and_directives_but_not_fenced_code():
    source = '\n'.join([
        '"""Module.',
        '',
        'Standard form::',
        '',
        '    minimize c^T x',
        '"""',
        '',
        'def f():',
        '    """Doc.',
        '',
        '    ```text',
        '    a literal :: inside a fence::',
        '    ```',
        '',
        '    .. math:: x^2',
        '    """',
        '',
        'class C:',
        '    """Example:',
        '',
        '    ```python',
        '    C()',
        '    ```',
        '    """',
    ])
    assert rest_blocks(source) == [(3, "Standard form::"), (15, ".. math:: x^2")]


def test_no_drokit_docstring_uses_a_rest_literal_block():
    """mkdocstrings renders ``Example::`` + an indented block as text: use a fenced code block."""
    offenders = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    for path in files:
        for line, text in rest_blocks(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {text}")
    assert not offenders, ("reST literal blocks / directives in docstrings (write a fenced ```python or ```text "
                           "block after a sentence ending in ':'):\n" + "\n".join(offenders))
