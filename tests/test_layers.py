"""The house's layers, read from the code's imports (issue 22): a module may import its own layer and the layers
below it, no module imports another module's ``_private`` name, and no modules import each other in a circle.

Every import counts, at module level and inside functions (an import inside a function hides a dependency; it
does not remove it).  The layers, bottom to top, are the architecture the README describes:

0. ``base``: exceptions, gaps, params, run control
1. ``conic IR``: the program, its builder (the losses and costs write their conic forms with it), its export
2. ``declarations``: the feature schema and data validation, metrics, losses, ambiguity sets, datasets
3. ``bound data``: the instance (a problem bound to data)
4. ``rows and oracles``: configuration rows, their encoded design, separation oracles
5. ``solvers``: the conic back-ends and drokit's own structured solvers
6. ``certificates``: a fixed model's exact worst-case value and support, the Lagrangian bound of a dual point, the
   fitted model's certified lower bound
7. ``reformulations``: the DRO programs and drokit's own algorithms that solve them (closed form, monolithic, graph,
   box, the cutting plane and its stages, intersections)
8. ``methods``: the registered methods, their refusals and ``auto`` rules, the compile step
9. ``estimators``: Problem, the estimators, results, the binding of fitted models to data
10. ``evaluation``: the worst-case distribution of a fitted model, stability, shift, scores; model selection

What the code breaks is listed in ``tests/data/layer_violations.json`` (empty since the multinomial certificate moved
to ``certificates/``; keep it so).  The test fails on any violation not in that list (a new upward import, a
new circle, a new private import) and on any entry of the list that no longer occurs (delete it: the list only
shrinks)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "drokit"
ALLOWED = Path(__file__).resolve().parent / "data" / "layer_violations.json"

#: module-name prefix -> layer (the longest matching prefix wins)
LAYERS: Dict[str, int] = {
    "drokit.exceptions": 0, "drokit.gaps": 0, "drokit.params": 0, "drokit.run_control": 0,
    "drokit.conic": 1,
    "drokit.schema": 2, "drokit.validation": 2, "drokit.models.validation": 2, "drokit.metrics": 2, "drokit.losses": 2,
    "drokit.ambiguity": 2, "drokit.datasets": 2, "drokit.dask_inputs": 2, "drokit.partitions": 2, "drokit.partition_memory": 2,
    "drokit.instance": 3, "drokit.models.instance": 3,
    "drokit.oracles": 4,
    "drokit.solvers": 5,
    "drokit.certificates": 6,
    "drokit.reformulations": 7,
    "drokit.methods": 8,
    "drokit.models": 9,
    "drokit.evaluation": 10, "drokit.model_selection": 10,
    "drokit": 11,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES: Dict[str, Path] = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> int:
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        prefix = ".".join(parts[:k])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise KeyError(module)


def _resolve(importer: str, is_package: bool, level: int, target: str) -> str:
    """The absolute module of ``from <level dots><target> import ...`` written in ``importer``."""
    if not level:
        return target
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports(module: str) -> Iterator[Tuple[str, str, int]]:
    """``(imported module, imported name or "", line)`` for every import of ``module`` inside drokit (a name that is
    itself a submodule counts as that module)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "drokit":
                    yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module or "")
            if target.split(".")[0] != "drokit":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield sub, "", node.lineno
                else:
                    yield target, alias.name, node.lineno


def _known(module: str) -> str:
    """The module itself, or its nearest enclosing package that is a module of drokit."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in MODULES:
            return ".".join(parts[:k])
    return module


def graph() -> Dict[str, Set[str]]:
    return {m: {_known(t) for t, _, _ in imports(m) if _known(t) != m} for m in MODULES}


def upward_imports() -> Set[str]:
    out = set()
    for m in MODULES:
        for t, _, _ in imports(m):
            t = _known(t)
            if t != m and layer(t) > layer(m):
                out.add(f"{m} -> {t}")
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def module_aliases(module: str) -> Dict[str, str]:
    """The local names that ``module`` binds to other drokit modules (``from . import scores as s``,
    ``import drokit.evaluation.scores as s``), each with its module."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    out[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module or "")
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    out[alias.asname or alias.name] = f"{target}.{alias.name}"
    return out


def private_attribute_uses(module: str) -> Set[str]:
    """``module -> other._name`` for every private name read through an imported module (``scores._batch(...)``)."""
    aliases = module_aliases(module)
    if not aliases:
        return set()
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    return {f"{module} -> {aliases[node.value.id]}.{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
            and _private(node.attr) and aliases[node.value.id] != module}


def private_imports() -> Set[str]:
    """Private names of another module, imported (``from .hull import _name``) or read through the module."""
    imported = {f"{m} -> {t}.{name}" for m in MODULES for t, name, _ in imports(m)
                if _private(name) and _known(t) != m}
    return imported.union(*(private_attribute_uses(m) for m in MODULES))


def circles() -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    g = graph()
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(g):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def circle_imports() -> Set[str]:
    """The imports ``a -> b`` inside a circle (``a`` and ``b`` in the same strongly connected component): a new one
    is a new circle or a circle grown; breaking one removes some."""
    g = graph()
    return {f"{a} -> {b}" for comp in circles() for a in comp for b in g[a] if b in comp}


def current() -> Dict[str, List[str]]:
    return {"upward": sorted(upward_imports()), "private": sorted(private_imports()),
            "circles": sorted(circle_imports())}


def allowed() -> Dict[str, List[str]]:
    return json.loads(ALLOWED.read_text())


def test_every_module_has_a_layer():
    assert all(isinstance(layer(m), int) for m in MODULES)


def test_the_import_reader_sees_imports_inside_functions_and_relative_ones():
    inside = {(t, name) for t, name, _ in imports("drokit.models.certification")}
    assert ("drokit.certificates.lower_bound", "certified_lower_bound") in inside   # inside a method
    relative = {(t, name) for t, name, _ in imports("drokit.reformulations.phase_one")}
    assert ("drokit.instance", "DROInstance") in relative                    # relative, module level


def test_an_upward_a_private_and_a_circular_import_are_caught(tmp_path, monkeypatch):
    """A probe module in the oracles' layer that imports up (evaluation), takes a private name and closes a circle
    with a module that imports it back: each rule sees its violation."""
    probe, back = tmp_path / "probe.py", tmp_path / "back.py"
    probe.write_text("from ..evaluation.worst_case_distribution import worst_case\n"
                     "def f():\n    from .hull import _private_name\n    from . import back\n"
                     "from . import dp as dynamic\nvalue = dynamic._read_privately\n")
    back.write_text("from . import probe\n")
    monkeypatch.setitem(MODULES, "drokit.oracles.probe", probe)
    monkeypatch.setitem(MODULES, "drokit.oracles.back", back)
    assert "drokit.oracles.probe -> drokit.evaluation.worst_case_distribution" in upward_imports()
    assert "drokit.oracles.probe -> drokit.oracles.hull._private_name" in private_imports()
    assert "drokit.oracles.probe -> drokit.oracles.dp._read_privately" in private_imports()
    assert ["drokit.oracles.back", "drokit.oracles.probe"] in circles()


@pytest.mark.parametrize("kind", ["upward", "private", "circles"])
def test_no_new_layer_violations_and_the_list_only_shrinks(kind):
    now, ok = set(current()[kind]), set(allowed()[kind])
    new = sorted(now - ok)
    gone = sorted(ok - now)
    assert not new, (f"{len(new)} new {kind} violation(s) of the layers (tests/test_layers.py docstring); import "
                     f"downward, or move the shared code down a layer:\n  " + "\n  ".join(new))
    assert not gone, (f"{len(gone)} {kind} entr(ies) of tests/data/layer_violations.json no longer occur: delete "
                      f"them (the list only shrinks):\n  " + "\n  ".join(gone))


if __name__ == "__main__":     # python tests/test_layers.py > tests/data/layer_violations.json (after a redesign step)
    print(json.dumps(current(), indent=1))
