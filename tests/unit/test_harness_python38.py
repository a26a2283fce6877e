"""The harness runs on Python 3.8+ (README, harness/__init__.py): inside reproduced images too, where a report's
Python may be bullseye's 3.9 (refenv.builder.baseimage.SUITE_PYTHON). The tools here run 3.10+, so nothing else
catches a construct that older Pythons refuse: this reads every harness module with the 3.8 grammar and finds
the runtime calls that 3.8 or 3.9 lack."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
SOURCES = sorted(HARNESS.rglob("*.py"))
# str methods of 3.9 (PEP 616); a zip with strict= is 3.10 (PEP 618).
NEWER_METHODS = {"removeprefix", "removesuffix"}


# Subscripted at run time, outside an annotation (PEP 585 generics are 3.9+; annotations stay strings here).
GENERIC_39 = {"dict", "list", "tuple", "set", "frozenset", "type"}


def newer_than_38(tree: ast.AST) -> list[str]:
    found = []
    abc = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
           and node.module == "collections.abc" for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) \
                        and sub.value.id in abc | GENERIC_39:
                    found.append(f"line {sub.lineno}: {sub.value.id}[...] evaluated at run time (3.9+)")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass") and len(node.args) == 2 \
                and isinstance(node.args[1], ast.BinOp) and isinstance(node.args[1].op, ast.BitOr):
            found.append(f"line {node.lineno}: {func.id} with an X | Y union (3.10+; use a tuple)")
        if isinstance(func, ast.Attribute) and func.attr in NEWER_METHODS:
            found.append(f"line {node.lineno}: .{func.attr}() (3.9+)")
        if isinstance(func, ast.Name) and func.id == "zip" and any(k.arg == "strict" for k in node.keywords):
            found.append(f"line {node.lineno}: zip(strict=) (3.10+)")
    return sorted(found, key=lambda f: int(f.split(":")[0].removeprefix("line ")))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(HARNESS)))
def test_each_harness_module_runs_on_python_38(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path), feature_version=(3, 8))  # a SyntaxError names 3.8's missing grammar
    assert newer_than_38(tree) == []


def test_the_check_finds_what_python_38_lacks() -> None:
    tree = ast.parse("from collections.abc import Callable\nisinstance(x, int | float)\n'a'.removeprefix('b')\n"
                     "zip(a, b, strict=True)\nCheck = Callable[[int], 'list[int]']\nx: list[int] = []\n")
    assert [f.split(":")[0] for f in newer_than_38(tree)] == ["line 2", "line 3", "line 4", "line 5"]
