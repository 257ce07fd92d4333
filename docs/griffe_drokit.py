"""Griffe extension that adapts drokit's docstrings to the numpy parser of mkdocstrings.

Loaded by mkdocstrings-python through ``extensions: [docs/griffe_drokit.py:DrokitDocstrings]`` in
``mkdocs.yml`` (a path relative to ``mkdocs.yml``).  Once griffe has loaded the ``drokit`` package
(``on_package``), the extension rewrites the raw text of every docstring *before* it is parsed; the
source files are untouched.  Three rewrites, in this order:

1. **reST literal blocks and math.**  A paragraph ending in ``::`` followed by an indented block
   becomes the paragraph (``Example::`` -> ``Example:``; a lone ``::`` disappears, as in reST) and a
   fenced code block (``python`` when the block parses as Python, else ``text``).  A
   ``.. math::`` directive becomes a fenced ``latex`` block.

2. **Prose in the "type" slot.**  drokit writes items as ``name : description`` where numpydoc
   expects ``name : type`` and an indented description.  In ``Parameters``, ``Other Parameters``,
   ``Attributes``, ``Returns`` and ``Yields`` sections an item header ``names : text`` whose
   ``text`` is not a type expression (see `looks_like_type`) is split: ``text`` becomes the first
   line of the item's description, and the type column falls back to the annotation of the
   signature (griffe's own fallback).  In ``Raises`` / ``Warns`` sections ``Error : text`` becomes
   ``Error`` and the description ``text``.  In ``Returns`` / ``Yields`` an unnamed prose paragraph
   written at column 0 (several lines, which numpydoc would read as several return values) becomes
   one description of the return value.

3. **Sphinx roles.**  ``:class:`~x.Y```, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``, ``:mod:``,
   ``:exc:``, ``:obj:`` (and ``:py:...`` variants) become inline code.  When the target resolves
   in the loaded package (a member of the documented object or of one of its parents, an import,
   an absolute path, or a unique ``.suffix`` for Sphinx's ``~.module.Name`` form) the code is
   wrapped in an *optional* autorefs cross-reference (``<autoref identifier=... optional>``, the
   form mkdocstrings itself emits for annotations): it links when the target is rendered
   somewhere in the site and stays plain code, without a warning, when it is not.  ``~`` keeps
   only the last component of the name as the displayed text, as in Sphinx.

Lines inside fenced code blocks are never touched.
"""

from __future__ import annotations

import ast
import re
from textwrap import dedent
from typing import Any, Iterator

import griffe

__all__ = ["DrokitDocstrings", "looks_like_type", "rewrite_docstring"]

#: numpy sections whose items are ``name : type`` headers with an indented description
ITEM_SECTIONS = {"parameters", "other parameters", "attributes", "returns", "yields", "receives"}
#: sections whose items are parameters of the signature
PARAMETER_SECTIONS = {"parameters", "other parameters"}
#: sections where an unnamed item is a return value (``type`` or prose)
RETURN_SECTIONS = {"returns", "yields", "receives"}
#: numpy sections whose items are an exception / warning type with an indented description
EXCEPTION_SECTIONS = {"raises", "warns"}

_DASH_LINE = re.compile(r"^\s*-{3,}\s*$")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_NAME = r"\*{0,2}[A-Za-z_][A-Za-z0-9_]*"
#: ``names : rest`` (numpydoc allows ``a, b : type``); rest may be empty
_ITEM_HEADER = re.compile(rf"^(?P<names>{_NAME}(?:\s*,\s*{_NAME})*)\s+:(?:\s+(?P<rest>.*))?$")
#: ``ErrorType : description`` (also ``A / B : ...``) in a Raises / Warns section
_EXCEPTION_HEADER = re.compile(r"^(?P<names>[A-Za-z_][\w.]*(?:\s*(?:,|/|\bor\b)\s*[A-Za-z_][\w.]*)*)\s+:\s+(?P<rest>.*)$")
_ROLE = re.compile(r":(?:py:)?(?P<role>class|func|meth|attr|data|mod|exc|obj|const|type):`(?P<target>[^`]+)`")
_LIST_ITEM = re.compile(r"^\s*(?:[*+-]|\d+[.)])\s+")
_MATH = re.compile(r"^\s*\.\.\s+math::\s*(?P<first>.*)$")

# -- 1. is it a type? ----------------------------------------------------------------------------

#: longest text read as a type (drokit's prose descriptions are longer)
MAX_TYPE_LENGTH = 60
_INFORMAL_TYPE = re.compile(
    r"^(?:array[-_]like|[A-Za-z_][\w.]*)"            # int, np.ndarray, array-like
    r"(?:\s+of(?:\s+shape)?(?:\s+[A-Za-z_][\w.]*)?)?$"  # list of str, array-like of shape (n,)
)


def _is_type_node(node: ast.AST) -> bool:
    if isinstance(node, ast.Name | ast.Attribute):
        return all(isinstance(n, ast.Name | ast.Attribute | ast.Load) for n in ast.walk(node))
    if isinstance(node, ast.Subscript):  # dict[str, float], Literal["a", "b"]
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return _is_type_node(node.value) and all(
            isinstance(n, ast.Constant) or _is_type_node(n) or
            (isinstance(n, ast.List) and all(_is_type_node(e) for e in n.elts)) for n in inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # int | None
        return _is_type_node(node.left) and _is_type_node(node.right)
    if isinstance(node, ast.Tuple):  # "int, float"
        return bool(node.elts) and all(_is_type_node(e) for e in node.elts)
    if isinstance(node, ast.Constant):
        return node.value is None
    return False


def looks_like_type(text: str) -> bool:
    """Whether the text after ``name :`` is a type expression rather than a description.

    A type is at most `MAX_TYPE_LENGTH` characters, has no backtick and no Sphinx role, does not end
    in sentence punctuation, and (once numpydoc's ``, optional`` / ``, default ...`` suffixes are
    removed) is a ``{choice, ...}`` set, a Python type expression (``int``, ``np.ndarray``,
    ``dict[str, float]``, ``NormCost | None``) or an informal numpydoc type: parts separated by
    ``or`` / ``,`` / ``|``, each a (dotted) name or ``array-like``, optionally followed by
    ``of [shape] (...)`` or ``of name`` (``int or None``, ``array-like of shape (n, m)``,
    ``list of str``).  Anything else (``the back-end name.``, ``(n,) objective vector.``,
    ``DataFrame, one row per atom``) is a description.
    """
    text = text.strip()
    if not text:
        return True
    if len(text) > MAX_TYPE_LENGTH or "`" in text or text[-1] in ".:;!?":
        return False
    if text.startswith("{") and text.endswith("}"):
        return True
    text = re.sub(r",\s*optional$", "", text)
    text = re.sub(r",\s*default(?: |: |=).*$", "", text).strip()
    try:
        if _is_type_node(ast.parse(text, mode="eval").body):
            return True
    except SyntaxError:
        pass
    informal = text
    while True:  # drop (shape, groups) and [subscripts], innermost first
        stripped = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", informal)
        if stripped == informal:
            break
        informal = stripped
    if re.search(r"[()\[\]{}'\"<>=]", informal):
        return False
    parts = [p.strip() for p in re.split(r"\s+or\s+|,|\|", informal)]
    return all(p and _INFORMAL_TYPE.match(p) for p in parts)


# -- 2. the rewrites ---------------------------------------------------------------------------------

def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _fence_language(code: str) -> str:
    try:
        ast.parse(code)
    except SyntaxError:
        return "text"
    return "python"


def _fenced(code_lines: list[str], indent: int, language: str) -> list[str]:
    pad = " " * indent
    body = dedent("\n".join(code_lines)).strip("\n").split("\n")
    return [f"{pad}```{language}", *[(pad + line) if line.strip() else "" for line in body], f"{pad}```"]


def _block_after(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """The indented block (indent > ``base``) from ``start``, without trailing blank lines; its end."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent_of(lines[end]) > base):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end], end


def convert_literal_blocks(lines: list[str]) -> list[str]:
    """reST ``::`` literal blocks and ``.. math::`` directives -> fenced code blocks."""
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence):
                fence = None
            i += 1
            continue
        if m:
            fence = m.group(2)
            out.append(line)
            i += 1
            continue

        base = _indent_of(line)
        math = _MATH.match(line)
        if math:
            block, end = _block_after(lines, i + 1, base)
            content = ([" " * (base + 4) + math.group("first")] if math.group("first") else []) + block
            out.extend(_fenced(content, base, "latex"))
            i = end
            continue

        stripped = line.rstrip()
        if stripped.endswith("::") and not stripped.lstrip().startswith(".. "):
            # the paragraph's text column: a list item's text starts after its marker
            item = _LIST_ITEM.match(line)
            column = item.end() if item else base
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j > i + 1 and j < len(lines) and _indent_of(lines[j]) > column:
                block, end = _block_after(lines, j, column)
                text = stripped[:-2].rstrip()
                if text.strip():
                    out.append(text if stripped[:-2] != text else text + ":")
                    out.append("")
                # Python-Markdown continues a list item with 4 spaces
                fence_indent = base + 4 if item else base
                out.extend(_fenced(block, fence_indent, _fence_language(dedent("\n".join(block)))))
                i = end
                continue
        out.append(line)
        i += 1
    return out


def _section_bounds(lines: list[str]) -> Iterator[tuple[str, int, int]]:
    """``(title, first body line, end)`` of every numpy section (outside code fences)."""
    headers = []
    fence: str | None = None
    for i, line in enumerate(lines[:-1]):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(2)[0] == fence[0]:
                fence = None
            continue
        if m:
            fence = m.group(2)
            continue
        if line.strip() and not line.startswith(" ") and not _DASH_LINE.match(line) \
                and _DASH_LINE.match(lines[i + 1]):
            headers.append((line.strip().lower(), i))
    for k, (title, i) in enumerate(headers):
        end = headers[k + 1][1] if k + 1 < len(headers) else len(lines)
        yield title, i + 2, end


def _items(body: list[str]) -> list[list[str]]:
    """Split a section body into items: a header at column 0 and its indented/blank continuation."""
    items: list[list[str]] = []
    for line in body:
        if line.strip() and not line.startswith(" ") or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return items


def _split_item(item: list[str], keep_colon: bool, one_per_name: bool = False) -> list[str]:
    """``names : prose`` + continuation -> ``names[ :]`` + ``    prose`` + continuation.

    With ``one_per_name`` an item documenting several parameters (``a, b : text``) is repeated for
    each name: griffe would give every name of a shared item the default and the signature type of
    the first one.
    """
    m = _ITEM_HEADER.match(item[0].rstrip())
    if m is None:
        return item
    rest = (m.group("rest") or "").strip()
    names = [n.strip() for n in m.group("names").split(",")]
    n_blank = 0  # blank lines between this item and the next one stay after the last copy
    while n_blank < len(item) - 1 and not item[len(item) - 1 - n_blank].strip():
        n_blank += 1
    body = item[1:len(item) - n_blank]
    if looks_like_type(rest):
        if not (one_per_name and len(names) > 1):
            return item
        heads = [f"{name} : {rest}" if rest else name for name in names]
    else:
        heads = names if one_per_name else [", ".join(names) + (" :" if keep_colon else "")]
        body = ["    " + rest, *body]
    out: list[str] = []
    for head in heads:
        out.extend([head, *body])
    return out + [""] * n_blank


def rewrite_item_sections(lines: list[str]) -> list[str]:
    """Move prose out of the type slot of item sections (see the module docstring)."""
    sections = [(t, s, e) for t, s, e in _section_bounds(lines) if t in ITEM_SECTIONS | EXCEPTION_SECTIONS]
    for title, start, end in reversed(sections):
        body = lines[start:end]
        # trailing blank lines belong to no item
        n_trailing = len(body) - len("\n".join(body).rstrip("\n").split("\n")) if any(body) else len(body)
        core, trailing = body[:len(body) - n_trailing], body[len(body) - n_trailing:]
        new: list[str] = []
        items = _items(core)
        k = 0
        while k < len(items):
            item = items[k]
            header = item[0].strip()
            if not header:  # leading blank lines
                new.extend(item)
            elif title in EXCEPTION_SECTIONS:
                m = _EXCEPTION_HEADER.match(header)
                new.extend([m.group("names"), "    " + m.group("rest"), *item[1:]] if m else item)
            elif title in RETURN_SECTIONS and _ITEM_HEADER.match(header) is None \
                    and not looks_like_type(header):
                # an unnamed prose description: it and the unnamed prose lines after it are one item
                prose = list(item)
                k += 1
                while k < len(items) and _ITEM_HEADER.match(items[k][0].strip()) is None:
                    prose.extend(items[k])
                    k += 1
                while prose and not prose[-1].strip():
                    prose.pop()
                    trailing.insert(0, "")
                new.append(":")
                new.extend(("    " + line.strip() if not line.startswith(" ") else line) if line.strip() else ""
                           for line in prose)
                continue
            else:
                new.extend(_split_item(item, keep_colon=title in RETURN_SECTIONS,
                                       one_per_name=title in PARAMETER_SECTIONS))
            k += 1
        lines[start:end] = new + trailing
    return lines


def rewrite_roles(lines: list[str], resolve) -> list[str]:
    """Sphinx roles -> (optionally cross-referenced) inline code, outside code fences."""
    out = []
    fence: str | None = None

    def replace(m: re.Match) -> str:
        target = m.group("target").strip()
        if "<" in target and target.endswith(">"):  # :class:`title <target>`
            title, target = target[:-1].split("<", 1)
            title, target = title.strip(), target.strip()
        else:
            title = None
        shorten = target.startswith("~")
        target = target.lstrip("~")
        shown = title or (target.lstrip(".").rsplit(".", 1)[-1] if shorten else target.lstrip("."))
        code = f"`{shown}`"
        identifier = resolve(target, m.group("role"))
        if identifier is None:
            return code
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    for line in lines:
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(2)[0] == fence[0]:
                fence = None
            out.append(line)
            continue
        if m:
            fence = m.group(2)
            out.append(line)
            continue
        out.append(_ROLE.sub(replace, line))
    return out


def rewrite_docstring(text: str, resolve=lambda target, role: None) -> str:
    """The three rewrites on one docstring; ``resolve(target, role)`` gives an autorefs identifier or None."""
    lines = convert_literal_blocks(text.split("\n"))
    lines = rewrite_item_sections(lines)
    lines = rewrite_roles(lines, resolve)
    return "\n".join(lines)


# -- 3. resolving role targets -------------------------------------------------------------------

class _Resolver:
    """Resolve a Sphinx role target seen in ``obj``'s docstring to a path of the loaded package."""

    def __init__(self, pkg: griffe.Module, collection: griffe.ModulesCollection):
        self.pkg = pkg
        self.collection = collection
        self._paths: list[str] | None = None

    def _lookup(self, path: str):
        try:
            return self.collection.get_member(path)
        except Exception:  # noqa: BLE001 - KeyError, alias resolution errors
            return None

    def _canonical(self, path: str) -> str | None:
        obj = self._lookup(path)
        if obj is None:
            return None
        try:
            return obj.final_target.path if obj.is_alias else obj.path
        except Exception:  # noqa: BLE001 - unresolvable alias (e.g. to an external package)
            return obj.target_path if obj.is_alias else None

    def all_paths(self) -> list[str]:
        if self._paths is None:
            paths: list[str] = []

            def walk(o):
                paths.append(o.path)
                for member in o.members.values():
                    if not member.is_alias:
                        walk(member)
            walk(self.pkg)
            self._paths = paths
        return self._paths

    def __call__(self, obj: griffe.Object, target: str, role: str = "obj") -> str | None:
        path = self._find(obj, target)
        if path is None or role in ("mod", "obj"):
            return path
        found = self._lookup(path)
        if found is not None and found.is_module:
            # ``drokit.stability`` is both a function and a sub-module: for a non-``:mod:`` role
            # prefer the sub-module's member of the same name
            return self._canonical(f"{path}.{path.rsplit('.', 1)[-1]}")
        return path

    def _find(self, obj: griffe.Object, target: str) -> str | None:
        if target.startswith("."):  # Sphinx: relative to the current module, else any unique suffix
            name = target.lstrip(".")
            module = obj if obj.is_module else obj.module
            while module is not None:
                found = self._canonical(f"{module.path}.{name}")
                if found:
                    return found
                module = module.parent
            matches = [p for p in self.all_paths() if p.endswith("." + name)]
            return matches[0] if len(matches) == 1 else None
        found = self._canonical(target)  # absolute path
        if found:
            return found
        head, _, rest = target.partition(".")
        try:  # a member or import of the object or of one of its parents
            base = obj.resolve(head)
        except Exception:  # noqa: BLE001 - NameResolutionError
            return None
        return self._canonical(f"{base}.{rest}" if rest else base)


# -- 4. the extension ----------------------------------------------------------------------------

class DrokitDocstrings(griffe.Extension):
    """Rewrite the docstrings of ``packages`` (default: drokit) before mkdocstrings parses them."""

    def __init__(self, packages: list[str] | None = None) -> None:
        super().__init__()
        self.packages = set(packages or ["drokit"])

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name not in self.packages:
            return
        resolver = _Resolver(pkg, loader.modules_collection)
        seen: set[int] = set()

        def walk(obj: griffe.Object) -> None:
            if id(obj) in seen:
                return
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = rewrite_docstring(
                    obj.docstring.value, lambda target, role, obj=obj: resolver(obj, target, role))
            for member in obj.members.values():
                if not member.is_alias:
                    walk(member)

        walk(pkg)
