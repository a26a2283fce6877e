"""`python -m harness <command>`: diagnose, probe, roofline, memory, cell, measure."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from harness import __version__

# Each command lives in its own module, which exposes `register(subparsers)`; the parser it adds
# sets `func(args) -> int`. Modules are imported here, but none imports torch at import time.
COMMANDS = (
    "harness.diagnose",
    "harness.probe.cli",
    "harness.roofline_cli",
    "harness.memory.cli",
    "harness.cell",
    "harness.measure",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description="refenv's harness: why torch.cuda.is_available() is False, how fast this device is, "
        "and whether a training run fits in its memory.",
    )
    parser.add_argument("--version", action="version", version=f"refenv harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args))


if __name__ == "__main__":
    sys.exit(main())
