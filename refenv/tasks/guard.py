"""What every task shares: exit codes, the matrix a task reads, and the guard that turns exceptions into them.

Exit codes, on every task: 0 done; 1 a result that is not good (cells that disagree, a failed build, a
reproduction that did not reproduce); 2 bad input (a malformed matrix.yaml, report or flag); 3 an internal
error (an exception no check foresaw: a bug in refenv, reported in one line).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from invoke.exceptions import Exit, UnexpectedExit

from refenv.errors import INTERNAL, USAGE, exit_for

__all__ = ["EXIT_INTERNAL", "USAGE", "guarded", "load_matrix", "say", "stamp"]

if TYPE_CHECKING:
    from refenv.model.matrix import Matrix

EXIT_INTERNAL = INTERNAL
P = ParamSpec("P")
R = TypeVar("R")


def load_matrix(path: str, env: list[str] | None, host: list[str] | None, scenario: list[str] | None) -> Matrix:
    """The matrix file at `path`, narrowed to the environments, hosts and scenarios named (globs)."""
    from refenv.model.matrix import select
    from refenv.model.matrix_yaml import load

    return select(load(path), env or None, host or None, scenario or None)


def say(prefix: str, line: str) -> None:
    print(f"{prefix}: {line}")


def stamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def guarded(body: Callable[P, R]) -> Callable[P, R]:
    """A task whose unforeseen exceptions exit 3 in one line, never 1 with a traceback (1 is a verdict)."""
    @functools.wraps(body)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return body(*args, **kwargs)
        except (Exit, KeyboardInterrupt, SystemExit, BrokenPipeError):
            raise
        except UnexpectedExit as exc:  # a command the task ran (pytest, ruff) failed: its status, not a bug
            raise Exit(f"refenv: `{exc.result.command}` exited {exc.result.exited}",
                       code=exc.result.exited or 1) from None
        except Exception as exc:  # bad input or a failure refenv explains (2), else a bug (3)
            message, code = exit_for(exc)
            raise Exit(message, code=code) from None
    return guarded
