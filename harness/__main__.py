"""`python -m harness <command>`: diagnose, probe, roofline, memory, cell."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from harness import __version__
from harness.inputs import InputError, shorten
from harness.schema import EXIT_HARNESS_ERROR, EXIT_INTERNAL

# Each command lives in its own module, which exposes `register(subparsers)`; the parser it adds
# sets `func(args) -> int`. Modules are imported here, but none imports torch at import time.
COMMANDS = (
    "harness.diagnose",
    "harness.probe.cli",
    "harness.roofline_cli",
    "harness.memory.cli",
    "harness.cell",
)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit 2 through main(), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog.removeprefix('python -m harness ')}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    try:
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return EXIT_HARNESS_ERROR
        return int(func(args))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # a crash must never read as a verdict (exit 1 means failing or "does not fit")
        print(f"internal error: {type(exc).__name__}: {shorten(str(exc), 200)} (please report this)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
