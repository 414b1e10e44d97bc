"""The layout's rules, checked on the source: no import circles in ``bot``, ``memory`` or ``config``;
``memory`` never imports ``bot``; only ``memory/adapters`` imports the drivers.

Every import counts, including those under ``TYPE_CHECKING`` and inside functions: a circle that
only type checking walks is still a circle a reader has to hold.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "memory", "config")
DRIVERS = ("asyncpg", "redis", "qdrant_client", "ollama")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules (of ``known``, or top-level names outside it) that ``path`` imports."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            found.add(source)
            # ``from memory import runtime``: the submodule, where it is one
            found.update(f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known)
    return {m if m in known else m.split(".")[0] for m in found} - {name}


def graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, name, known) for name, path in modules.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in edges:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _is_package_parent(importer: str, imported: str) -> bool:
    """``memory.recall.planner`` importing ``memory`` (its package) is not an edge worth a cycle."""
    return importer.startswith(imported + ".")


def test_no_import_cycles() -> None:
    edges = {
        name: {m for m in deps if not _is_package_parent(name, m)} for name, deps in graph().items()
    }
    assert _cycles(edges) == []


def test_memory_never_imports_bot() -> None:
    offenders = {
        name: sorted(m for m in deps if m == "bot" or m.startswith("bot."))
        for name, deps in graph().items()
        if name.startswith("memory")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("driver", DRIVERS)
def test_only_adapters_import_drivers(driver: str) -> None:
    importers = sorted(
        name
        for name, deps in graph().items()
        if driver in deps and not name.startswith("memory.adapters")
    )
    assert importers == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
