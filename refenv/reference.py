"""The command-line reference, generated from the parsers themselves, so the page cannot say what the code does not.

Two sources: the harness's argparse parser (`python -m harness` and every command, each one's help as argparse
prints it) and the task collection `invoke` and `refenv` run (each task's name, docstring and every flag with
its help and default), plus the verdict table the commands answer in (harness/schema/verdicts.py). `invoke
docs` writes the page to docs/reference.md before `mkdocs build`; a unit test holds that the page in the tree
is the page the parsers give today.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.schema import TABLE
from refenv import paths

PAGE = Path("docs") / "reference.md"
WIDTH = 100  # argparse wraps its help to the terminal: the page is written at one width, whatever the terminal
HEAD = """\
# Command reference

Generated from the parsers (`python -m harness`'s argparse and the task collection of `invoke` and `refenv`)
by `invoke docs`; do not edit it by hand. A unit test fails when this page and the parsers disagree.
"""


def load_collection() -> Any:
    """The task collection `invoke` and `refenv` run: in refenv's checkout, the `ns` of its tasks.py (the
    package's collection plus `test` and `docs`), found as invoke finds it; installed, the package's own."""
    from invoke.collection import Collection
    from invoke.loader import FilesystemLoader

    checkout = paths.package_dir().parent
    if not (checkout / "tasks.py").is_file():
        from refenv.tasks import collection

        return collection()
    module, _ = FilesystemLoader(start=str(checkout)).load("tasks")
    return Collection.from_module(module)


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse's help formatter at `width` columns (it reads COLUMNS, through shutil.get_terminal_size)."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (argparse keeps them only in its private action list)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _fence(text: str) -> list[str]:
    return ["```text", *text.rstrip().splitlines(), "```", ""]


def harness_section() -> list[str]:
    """`python -m harness --help`, then each command's help, and each of its own subcommands'."""
    from harness.__main__ import build_parser

    with _columns(WIDTH):
        top = build_parser()
        lines = ["## `python -m harness`", "", *_fence(top.format_help())]
        for name, parser in _subparsers(top).items():
            lines += [f"### `python -m harness {name}`", "", *_fence(parser.format_help())]
            for sub, subparser in _subparsers(parser).items():
                lines += [f"#### `python -m harness {name} {sub}`", "", *_fence(subparser.format_help())]
    return lines


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _flag(arg: Any) -> str:
    """'`--matrix=STRING`, `-m`' as invoke spells a flag; a positional argument by its name in capitals."""
    long, *short = arg.names
    if arg.positional:
        return f"`{long.upper().replace('-', '_')}`"
    value = {str: "STRING", int: "INT", float: "FLOAT"}.get(arg.kind, "") if arg.takes_value else ""
    name = f"--[no-]{long}" if arg.kind is bool and arg.default is True else f"--{long}"
    shown = f"`{name}={value}`" if value else f"`{name}`"
    return ", ".join([shown, *(f"`-{s}`" for s in short)])


def _default(arg: Any) -> str:
    if arg.kind is list:
        return "repeatable"
    if arg.default in (None, False, "", []):
        return ""
    return f"`{arg.default}`"


def tasks_section(collection: Any | None = None) -> list[str]:
    """Each task: `invoke NAME` (or `refenv NAME`), its docstring, and a table of its flags."""
    from refenv.program import help_kept

    ns = collection if collection is not None else load_collection()
    lines = ["## The tasks: `invoke TASK` (or `refenv TASK`)", ""]
    for name in sorted(ns.task_names):
        task = ns[name]
        lines += [f"### `invoke {name}`", ""]
        doc = (task.__doc__ or "").strip()
        lines += [*(line.strip() for line in doc.splitlines()), ""] if doc else []
        with help_kept(ns):
            args = sorted(task.get_arguments(), key=lambda a: (not a.positional, a.names[0]))
        if args:
            lines += ["| flag | default | what it does |", "|---|---|---|"]
            lines += [f"| {_flag(a)} | {_default(a)} | {_cell(a.help or '')} |" for a in args]
            lines.append("")
    return lines


def verdicts_section() -> list[str]:
    """The verdict table the commands answer in: each verdict's family, words, fixes and what is asked for."""
    lines = ["## Verdicts", "",
             "The verdict table (`harness/schema/verdicts.py`), in the order the stack is examined.", "",
             "| verdict | family | in words | kinds of fix | asked of a reporter | issue label |",
             "|---|---|---|---|---|---|"]
    for v in TABLE:
        asked = "<br>".join(f"`{_cell(c)}`" for c in v.ask)
        lines.append(f"| `{v.code}` | {v.family} | {_cell(v.words)} | {', '.join(v.fixes)} | {asked} | "
                     f"`{v.label}` |")
    return [*lines, ""]


def page(collection: Any | None = None) -> str:
    """The whole reference page, as `invoke docs` writes it."""
    return "\n".join([HEAD, *harness_section(), *tasks_section(collection), *verdicts_section()]).rstrip() + "\n"


def write(root: Path) -> Path:
    """Write the page under `root` (the checkout); its path."""
    target = root / PAGE
    target.write_text(page(), encoding="utf-8")
    return target
