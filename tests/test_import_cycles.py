"""No import cycles among the modules of engine/ and spectui/ (issue #41).

The graph is read from the source with ``ast`` (nothing of the project is imported, so
the test takes well under a second): an edge for every ``import`` and ``from ... import``
anywhere in a module, inside functions and under ``if TYPE_CHECKING:`` too. A function's
import is a cycle deferred to run time, not removed; a type-only import cycle is still two
modules that each need the other to be read, and either kind can turn into an import-time
cycle by moving one line (grimp, behind lint-imports, counts both too). ``from pkg import
name`` is an edge to the submodule ``pkg.name`` when there is one, else to ``pkg``;
relative imports are resolved; the implicit import of a module's parent packages is not
counted (every module would then be in a cycle with its package's ``__init__`` that
imports it). Imports by string (``importlib``) are not seen.

lint-imports (pyproject.toml) checks the layers between packages; this checks every pair
of modules, inside packages too.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "spectui")

# (importer, imported) -> where: "path:line" of the first such import in the importer.
Edges = dict[tuple[str, str], str]


def modules_of(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root`` by dotted name (a package by its own)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of ``modules`` (None: an outside one)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names an import node reads, relative ones made absolute: for ``from m
    import a``, ``m.a`` first (a submodule if there is one) then ``m``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [name for alias in node.names for name in (f"{source}.{alias.name}", source)]


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> Edges:
    """The edges between the modules of ``packages`` (module docstring)."""
    modules = modules_of(root, packages)
    edges: Edges = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        for node in sorted(imports, key=lambda n: n.lineno):  # the first line is named
            names = _imported(node, module, is_package)
            if isinstance(node, ast.ImportFrom):  # m.a when it is a module, else m
                pairs = zip(names[::2], names[1::2], strict=True)
                names = [full if full in modules else source for full, source in pairs]
            for name in names:
                target = _known(name, modules)
                if target is not None and target != module:
                    where = f"{path.relative_to(root).as_posix()}:{node.lineno}"
                    edges.setdefault((module, target), where)
    return edges


def cycles(edges: Edges) -> list[list[str]]:
    """The graph's strongly connected components of two modules or more, each sorted,
    in order of their first module (Tarjan's algorithm, without recursion)."""
    after: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        after.setdefault(a, []).append(b)
        after.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in after:
        if start in index:
            continue
        work = [(start, iter(after[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, rest = work[-1]
            for nxt in rest:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(after[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def path_around(component: list[str], edges: Edges) -> list[str]:
    """A shortest path from the component's first module back to it, within the component
    (the first module at both ends)."""
    inside = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for a, b in sorted(edges):
            if a != node or b not in inside:
                continue
            if b == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if b not in came_from:
                came_from[b] = node
                queue.append(b)
    raise AssertionError(f"{component} is not strongly connected")


def report(edges: Edges) -> str:
    """Each cycle's modules and one path around it, an import (file:line) a line."""
    lines = []
    for component in cycles(edges):
        lines.append(f"cycle of {len(component)} modules: {', '.join(component)}")
        path = path_around(component, edges)
        for a, b in itertools.pairwise(path):
            lines.append(f"  {a} imports {b} ({edges[a, b]})")
    return "\n".join(lines)


def test_the_engine_and_the_app_have_no_import_cycle():
    edges = import_graph(ROOT)
    assert len(edges) > 500  # the graph was read (787 edges on 8 December 2026)
    # A function's import is read: sim runs the compiled loop only when asked.
    assert ("engine.serve.sim", "engine.serve.compiled") in edges
    found = report(edges)
    if found:
        pytest.fail(f"import cycles (imports in functions and for typing count):\n{found}", False)


# ------------------------------------------------------------- the checker itself


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_cycle_through_a_function_and_a_type_only_import_is_named_with_its_lines(tmp_path):
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg import low\n",
            # pkg.mid twice: the first line is named.
            "pkg/low.py": "def f():\n    from pkg.mid import g\n    return g\nimport pkg.mid\n",
            "pkg/mid.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .top import T\n"
            ),
            "pkg/top.py": "import numpy\nfrom . import low\n",
            "pkg/side.py": "from pkg.low import f\n",
        },
    )
    assert report(import_graph(root, ("pkg",))) == (
        "cycle of 3 modules: pkg.low, pkg.mid, pkg.top\n"
        "  pkg.low imports pkg.mid (pkg/low.py:2)\n"
        "  pkg.mid imports pkg.top (pkg/mid.py:3)\n"
        "  pkg.top imports pkg.low (pkg/top.py:2)"
    )


def test_two_cycles_are_each_named_and_a_parent_package_is_not_an_import(tmp_path):
    root = _tree(
        tmp_path,
        {
            # The package imports its submodule; the submodule's `from a import VALUE` is
            # the package's (no submodule a.VALUE): a cycle of a and a.b.
            "a/__init__.py": "VALUE = 1\nfrom a.b import X\n",
            "a/b.py": "from a import VALUE\nX = VALUE\n",
            # c.d imports c.e's name, c.e imports c.d: importing c.d alone (its parent
            # package c) is not an edge to c.
            "c/__init__.py": "",
            "c/d.py": "from ..c.e import Y\n",
            "c/e.py": "import c.d\nY = 2\n",
            "f/__init__.py": "",
            "f/g.py": "import c.d\nfrom a import b\n",
        },
    )
    edges = import_graph(root, ("a", "c", "f"))
    assert edges[("f.g", "a.b")] == "f/g.py:2" and ("f.g", "a") not in edges
    assert report(edges) == (
        "cycle of 2 modules: a, a.b\n"
        "  a imports a.b (a/__init__.py:2)\n"
        "  a.b imports a (a/b.py:1)\n"
        "cycle of 2 modules: c.d, c.e\n"
        "  c.d imports c.e (c/d.py:1)\n"
        "  c.e imports c.d (c/e.py:1)"
    )


def test_a_chain_without_a_way_back_is_no_cycle(tmp_path):
    root = _tree(
        tmp_path,
        {
            "p/__init__.py": "from p import a, b\n",
            "p/a.py": "from p.b import x\n",
            "p/b.py": "import os\nx = 1\n",
        },
    )
    edges = import_graph(root, ("p",))
    assert sorted(edges) == [("p", "p.a"), ("p", "p.b"), ("p.a", "p.b")]
    assert report(edges) == ""
