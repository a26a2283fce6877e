"""The harness runs inside every image refenv builds, the oldest on Debian bullseye's Python 3.9
(refenv.builder.baseimage.SUITE_PYTHON): nothing in it may need a newer interpreter at run time.

Annotations are never evaluated (`from __future__ import annotations`), but an `X | Y` union passed to
isinstance() is: on 3.9 it raises TypeError, and a cell whose document held a list could not be written.
"""

from __future__ import annotations

import ast
from pathlib import Path

from refenv.builder.baseimage import SUITE_PYTHON

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def runtime_unions(source: str) -> list[int]:
    """Lines where isinstance()/issubclass() is given an `X | Y` union (3.10+ at run time)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2
                and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) for n in ast.walk(node.args[1]))):
            lines.append(node.lineno)
    return lines


def test_the_oldest_base_image_python_is_what_this_test_guards() -> None:
    assert min(SUITE_PYTHON.values(), key=lambda v: tuple(map(int, v.split(".")))) == "3.9"


def test_the_check_finds_a_union_in_isinstance() -> None:
    assert runtime_unions("isinstance(x, int | float)\nisinstance(x, (int, float))\n") == [1]


def test_no_harness_module_passes_a_union_to_isinstance() -> None:
    found = {str(p.relative_to(HARNESS)): runtime_unions(p.read_text(encoding="utf-8"))
             for p in sorted(HARNESS.rglob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}
