"""`python -m harness <command>`: diagnose, probe, roofline, memory, cell, measure."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from harness import __version__

# Each command lives in its own module, which exposes `register(subparsers)`; the parser it adds
# sets `func(args) -> int`. None imports torch at import time.
COMMANDS = {
    "diagnose": "harness.diagnose",
    "probe": "harness.probe.cli",
    "roofline": "harness.roofline_cli",
    "memory": "harness.memory.cli",
    "cell": "harness.cell",
    "measure": "harness.measure",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `only` that one: a matrix cell runs `cell` once per container, and
    importing every command's modules (the probes, the memory model) would delay its diagnosis for nothing."""
    parser = argparse.ArgumentParser(
        prog="python -m harness",
        description="refenv's harness: why torch.cuda.is_available() is False, how fast this device is, "
        "and whether a training run fits in its memory.",
    )
    parser.add_argument("--version", action="version", version=f"refenv harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    args = parser.parse_args(words)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args))


if __name__ == "__main__":
    sys.exit(main())
