"""The layout holds: the harness runs alone, each package's rooms import only downwards, and nothing loops.

Read from the code's own import statements (ast), so a new module is checked the day it lands. An import
inside a function counts as much as one at the top (a lazy import is still a dependency, and a loop through
one is still a loop); only `if TYPE_CHECKING:` blocks, which never run, are left out.
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
# reports read only the model; the run drives them all; reproduce, publish and fleet are jobs over a run, and
# the assistant's answers (the MCP server) read all of them; the program (cli) and its task collection (tasks)
# run over them all, and the command reference (reference) reads their parsers. A torch release as the tables
# know it (releases) and as an index lists it (refresh) stand on the foundations alone.
FLOORS = {
    "refenv": 0, "refenv.errors": 0, "refenv.paths": 0,
    "refenv.model": 1, "refenv.readiness": 1, "refenv.ship": 1, "refenv.releases": 1, "refenv.refresh": 1,
    "refenv.builder": 2, "refenv.report": 2,
    "refenv.engines": 3,
    "refenv.run": 4,
    "refenv.reproduce": 5, "refenv.publish": 5, "refenv.fleet": 5, "refenv.assistant": 5, "refenv.check": 5,
    "refenv.cli": 6, "refenv.program": 6, "refenv.tasks": 6, "refenv.reference": 6,
}
# The harness's rooms from the ground up. The foundations (its version, the input discipline, its data files,
# the facts' shape, CUDA_VISIBLE_DEVICES as the driver parses it) and the knowledge (the schema, the
# compatibility tables, the failure catalogue, the GPU table) never import upward; the document writer stands on
# them. Then what gathers and measures (gather, probe, memory) and the pure judgement (classify); the stack beside
# torch and the reader of pasted reports, each over the judgement; the diagnosis library over both; the answer
# surfaces over the diagnosis; the commands over all of them; the two doors (`python -m harness`, the zipapp).
HARNESS_FLOORS = {
    "harness": 0, "harness.inputs": 0, "harness.datafiles": 0, "harness.facts": 0, "harness.cvd": 0,
    "harness.schema": 1, "harness.compat": 1,
    "harness.catalogue": 2, "harness.gpus": 2, "harness.document": 2,
    "harness.gather": 3, "harness.classify": 3, "harness.probe": 3, "harness.memory": 3,
    "harness.stack": 4, "harness.intake": 4,
    "harness.diagnosis": 5,
    "harness.answer": 6,
    "harness.commands": 7,
    "harness.__main__": 8, "harness.launcher": 9,
}
KNOWLEDGE = ("harness.schema", "harness.compat", "harness.catalogue", "harness.facts")
# Inside an image the matrix runs `cell` and `measure`: the live diagnosis, the probes, the memory verification
# and the stack. None of it may reach what only the host or a browser runs: the reader of pasted reports, the
# answer surfaces (the issue comment, the bot's GitHub client, the paste page's entry), the bot command.
IN_IMAGE = ("harness.commands.cell", "harness.commands.measure", "harness.commands.stack", "harness.diagnosis.live",
            "harness.gather", "harness.classify", "harness.probe", "harness.memory", "harness.stack")
HOST_ONLY = ("harness.intake", "harness.answer", "harness.diagnosis.report", "harness.commands.bot")


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
    """The room a module stands in: its package's first level ('refenv.run', 'harness.stack', 'harness')."""
    return ".".join(module.split(".")[:2])


def _within(module: str, places: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in places)


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


def test_every_harness_room_has_a_floor() -> None:
    rooms = {room(m) for m in MODULES if m.startswith("harness")}
    assert rooms <= set(HARNESS_FLOORS), f"new rooms need a floor in HARNESS_FLOORS: {sorted(rooms - set(HARNESS_FLOORS))}"


def test_the_harness_imports_only_downwards() -> None:
    """The knowledge floors (schema, compat, catalogue, facts) and every room above them import no room above
    their own, lazily or not."""
    upward = sorted(f"{m} -> {t}" for m in MODULES if m.startswith("harness") for t in imports(m)
                    if t.startswith("harness") and HARNESS_FLOORS[room(t)] > HARNESS_FLOORS[room(m)])
    assert not upward
    assert max(HARNESS_FLOORS[k] for k in KNOWLEDGE) < HARNESS_FLOORS["harness.gather"]


def _reach(start: str) -> set[str]:
    """Every project module `start` imports, directly or through others, lazily or not."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        for nxt in imports(pending.pop()):
            if nxt not in seen:
                seen.add(nxt)
                pending.append(nxt)
    return seen


def test_what_runs_in_an_image_never_reaches_the_host_side() -> None:
    """A cell, a measurement and the stack inventory import nothing of the report reader or the answer surfaces:
    they stay out of the image's run, and a change to them never changes what a cell does."""
    image = [m for m in MODULES if _within(m, IN_IMAGE)]
    assert "harness.commands.cell" in image and "harness.diagnosis.live" in image
    reached = sorted(f"{m} -> {t}" for m in image for t in _reach(m) if _within(t, HOST_ONLY))
    assert not reached


def test_no_import_loop() -> None:
    """No module imports itself through others, counting the imports made inside functions."""
    graph = {m: imports(m) for m in MODULES}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_loop_between_rooms() -> None:
    """No room imports itself through other rooms (a room's modules may import each other)."""
    graph: dict[str, set[str]] = {}
    for m in MODULES:
        graph.setdefault(room(m), set()).update(room(t) for t in imports(m) if room(t) != room(m))
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_loop_finders_count_an_import_inside_a_function() -> None:
    """The import a function makes is read (the builders' lock once imported the environment module so)."""
    tree = ast.parse("def f() -> None:\n    from refenv.builder.environment import uv_binary\n")
    found = [n for n in _statements(tree, top_level_only=False) if isinstance(n, ast.ImportFrom)]
    assert [n.module for n in found] == ["refenv.builder.environment"]
    assert not list(_statements(tree, top_level_only=True))


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


def test_every_command_is_the_module_of_its_name() -> None:
    """harness/commands/ holds the commands and nothing else, each module registering the command of its name."""
    import argparse

    from harness.__main__ import build_parser
    from harness.commands import COMMANDS

    modules = {m.rsplit(".", 1)[1] for m in MODULES if m.startswith("harness.commands.")}
    assert modules == set(COMMANDS)
    for name in COMMANDS:
        parser = build_parser(name)
        registered = [set(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert registered == [{name}], f"harness/commands/{name}.py registers {registered}"
