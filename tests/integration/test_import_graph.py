"""Ember's modules import each other without cycles at module level (issue 11).

An edge ``a -> b`` is an import that runs when ``a`` is imported: a statement at module level
(also inside ``if``/``try``/``with`` and class bodies, but not under ``if TYPE_CHECKING``),
naming ``b`` itself (``from ember.ops import _casts`` is an edge to ``ember.ops._casts``;
``from ember.ops import add`` one to ``ember.ops``). Imports inside functions run on first
use and are left out: they are how a lower module reaches a higher one lazily.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2] / "packages"


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    mods = {}
    for src in sorted(ROOT.glob("*/src")):
        for path in src.rglob("*.py"):
            parts = list(path.relative_to(src).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = (path, is_pkg)
    return mods


def _module_level_imports(path: pathlib.Path, module: str, is_pkg: bool, mods) -> set[str]:
    base = module.split(".") if is_pkg else module.split(".")[:-1]

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    found: set[str] = set()

    def visit(body) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.ImportFrom):
                target = (".".join(base[:len(base) - node.level + 1] + [node.module or ""])
                          .rstrip(".") if node.level else node.module)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    hit = sub if sub in mods else resolve(target)
                    if hit:
                        found.add(hit)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    hit = resolve(alias.name)
                    if hit:
                        found.add(hit)
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, field, ()) or ())

    visit(ast.parse(path.read_text(), str(path)).body)
    found.discard(module)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_module_level_import_cycle():
    mods = _modules()
    assert "ember._tensor" in mods and "ember.nn" in mods
    graph = {m: _module_level_imports(p, m, pkg, mods) for m, (p, pkg) in mods.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
