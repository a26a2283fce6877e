"""The layout holds: the harness runs alone, refenv's rooms import only downwards, and nothing loops.

Read from the code's own import statements (ast), so a new module is checked the day it lands.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# refenv's rooms from the ground up: a room may import its own floor and the floors below, never above.
# errors and paths are refenv's foundations; the model holds the data every stage reads; the build makes
# images through a narrow protocol; the engines run containers (and build through the builders); the
# reports read only the model; the run drives them all; reproduce, publish and fleet are jobs over a run; the
# program (cli) and its task collection (tasks) run over them all.
FLOORS = {
    "refenv": 0, "refenv.errors": 0, "refenv.paths": 0,
    "refenv.model": 1, "refenv.readiness": 1, "refenv.ship": 1,
    "refenv.builder": 2, "refenv.report": 2,
    "refenv.engines": 3,
    "refenv.run": 4,
    "refenv.reproduce": 5, "refenv.publish": 5, "refenv.fleet": 5,
    "refenv.cli": 6, "refenv.tasks": 6,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def in_package(path: Path) -> bool:
    """A module of a package: every folder from the top down to it has an __init__.py (refenv/web/answer.py is
    the paste page's own Python, package data, not a module of refenv)."""
    return all((folder / "__init__.py").is_file() for folder in path.parents if ROOT in folder.parents)


MODULES = {module_name(p): p for package in ("harness", "refenv") for p in (ROOT / package).rglob("*.py")
           if in_package(p)}


def _statements(tree: ast.Module, top_level_only: bool) -> Iterator[ast.stmt]:
    """Import statements, leaving out `if TYPE_CHECKING:` blocks (annotations only, never run)."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not top_level_only or isinstance(node, (ast.If, ast.Try)):
            pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def imports(module: str, top_level_only: bool = False) -> set[str]:
    """The project modules `module` imports (a `from P import m` of a submodule counts as m)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in _statements(tree, top_level_only):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES and m != module}


def room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "refenv" else parts[0]


def test_the_harness_never_imports_refenv() -> None:
    """The harness runs alone in any image (standard library only): an import of refenv would break it there."""
    offending = sorted(f"{m} -> {t}" for m in MODULES if m.startswith("harness")
                       for t in imports(m) if t.startswith("refenv"))
    assert not offending


def test_every_refenv_room_has_a_floor() -> None:
    rooms = {room(m) for m in MODULES if m.startswith("refenv")}
    assert rooms <= set(FLOORS), f"new rooms need a floor in FLOORS: {sorted(rooms - set(FLOORS))}"


def test_refenv_imports_only_downwards() -> None:
    """No room imports one on a higher floor, lazily or not (a lazy import is still a dependency)."""
    upward = sorted(f"{m} -> {t}" for m in MODULES if m.startswith("refenv") for t in imports(m)
                    if t.startswith("refenv") and FLOORS[room(t)] > FLOORS[room(m)])
    assert not upward


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import loop of the graph, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_no_import_loop() -> None:
    graph = {m: imports(m, top_level_only=True) for m in MODULES}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_loop_finder_finds_a_loop() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", ["refenv.model.rundoc"])
def test_reading_a_run_document_imports_only_the_model(module: str) -> None:
    """The reports, publish and `invoke compare` read cells.json without the builders, engines or jinja2."""
    code = (f"import sys, {module}; print('\\n'.join(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('refenv', 'jinja2', 'docker', 'yaml'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = done.stdout.split()
    assert loaded and all(m in ("refenv", "refenv.errors") or m.startswith("refenv.model") for m in loaded), loaded
