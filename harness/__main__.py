"""`python -m harness <command>`: diagnose, stack, probe, roofline, memory, cell, measure, bot."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from harness import __version__
from harness.commands import COMMANDS, module_of
from harness.inputs import InputError, shorten, without_prefix
from harness.schema import EXIT_HARNESS_ERROR, EXIT_INTERNAL

EXIT_PIPE_CLOSED = 141  # as a shell reports a writer that SIGPIPE ended


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and exit 2 through main(), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        # argparse quotes what was typed: a line break in an argument must not break the one-line message.
        flat = message if message.isprintable() else message.encode("unicode_escape").decode("ascii")
        raise InputError(f"{without_prefix(self.prog, 'python -m harness ')}: {flat}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `only` that one: a matrix cell runs `cell` once per container, and
    importing every command's modules (the probes, the memory model) would delay its diagnosis for nothing."""
    parser = _Parser(
        prog="python -m harness",
        description="refenv's harness: why torch.cuda.is_available() is False, how fast this device is, "
        "and whether a training run fits in its memory.",
    )
    parser.add_argument("--version", action="version", version=f"refenv harness {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or name == only:
            importlib.import_module(module_of(name)).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    try:
        args = parser.parse_args(words)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return EXIT_HARNESS_ERROR
        return int(func(args))
    except InputError as exc:
        from harness.answer.redact import redact  # a refusal quotes what it was given: no secret in it leaves

        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    except (KeyboardInterrupt, SystemExit):
        raise
    except BrokenPipeError:
        # The reader left (`... | head`): no error of ours. Python's own exit would flush into the closed pipe
        # and complain again, so standard output goes to /dev/null first (Python docs, signal module, "Note
        # on SIGPIPE"); the status is a shell's for a writer the pipe ended, 128 + SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except Exception as exc:  # a crash must never read as a verdict (exit 1 means failing or "does not fit")
        from harness.answer.redact import redact

        print(f"internal error: {type(exc).__name__}: {shorten(redact(str(exc)), 200)} (please report this)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
