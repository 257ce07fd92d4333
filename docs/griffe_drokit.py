"""Griffe extension that renders the Sphinx roles of drokit's docstrings for mkdocstrings.

Loaded by mkdocstrings-python through ``extensions: [docs/griffe_drokit.py:DrokitDocstrings]`` in
``mkdocs.yml`` (a path relative to ``mkdocs.yml``).  drokit's docstrings are numpydoc (``name : type``
items with an indented description, fenced code blocks), which the numpy parser of mkdocstrings reads
as they are; the one numpydoc feature it does not render is a Sphinx role, used by drokit (as by
scikit-learn and scipy) to cross-reference an object.  Once griffe has loaded the ``drokit`` package
(``on_package``), the extension rewrites the raw text of every docstring *before* it is parsed; the
source files are untouched.

**Sphinx roles.**  ``:class:`~x.Y```, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``, ``:mod:``,
``:exc:``, ``:obj:`` (and ``:py:...`` variants) become inline code.  When the target resolves in the
loaded package (a member of the documented object or of one of its parents, an import, an absolute
path, or a unique ``.suffix`` for Sphinx's ``~.module.Name`` form) the code is wrapped in an
*optional* autorefs cross-reference (``<autoref identifier=... optional>``, the form mkdocstrings
itself emits for annotations): it links when the target is rendered somewhere in the site and stays
plain code, without a warning, when it is not.  ``~`` keeps only the last component of the name as
the displayed text, as in Sphinx.

Lines inside fenced code blocks are never touched.  tests/test_griffe_roles.py tests the rewrite and
checks that no drokit docstring uses a reST literal block (``Example::``), which mkdocstrings would
not render.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

__all__ = ["DrokitDocstrings", "rewrite_docstring", "rewrite_roles"]

#: a fence line of a fenced code block: its indentation, the fence, the info string
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_ROLE = re.compile(r":(?:py:)?(?P<role>class|func|meth|attr|data|mod|exc|obj|const|type):`(?P<target>[^`]+)`")

# -- 1. the rewrite ----------------------------------------------------------------------------------

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
            # a block closes at a fence of the same character, at least as long, without info string
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) and not m.group(3).strip():
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
    """The rewrite of one docstring; ``resolve(target, role)`` gives an autorefs identifier or None."""
    return "\n".join(rewrite_roles(text.split("\n"), resolve))


# -- 2. resolving role targets -------------------------------------------------------------------

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


# -- 3. the extension ----------------------------------------------------------------------------

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
