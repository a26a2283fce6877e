"""The errors refenv reports to its user: each says what went wrong, where, and what to do."""

from __future__ import annotations

# The exit codes every refenv command shares (refenv.tasks.guard tells them all).
USAGE = 2
INTERNAL = 3


class RefenvError(Exception):
    """An expected failure with a message for people (tasks turn it into `invoke.Exit`)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message + (f"\n  {self.hint}" if self.hint else "")


class MatrixError(RefenvError):
    """matrix.yaml is malformed: names the file, line and field and says what is expected."""

    def __init__(self, path: str, line: int | None, field: str, expected: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {field}: {expected}")
        self.path, self.line, self.field, self.expected = path, line, field, expected


class EngineUnavailable(RefenvError):
    """No Docker engine answers."""


class EngineLost(RefenvError):
    """The engine stopped answering in the middle of the work (its daemon died or was stopped)."""


class NoGpuRuntime(RefenvError):
    """The engine has no NVIDIA runtime: `--gpus` cannot be honoured here."""


class BuildError(RefenvError):
    """An image could not be built; carries the log's tail."""

    def __init__(self, message: str, log_tail: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.log_tail = log_tail


class LockError(RefenvError):
    """A lock file is missing, stale, or a wheel no longer has the hash it was locked with."""


class NotStarted(RefenvError):
    """A scheduler never started the cell (its reason says why): the cell is NOT_RUN, not an error."""


def exit_for(exc: Exception) -> tuple[str, int]:
    """The one line and the exit code an exception ends a command with: bad input, or a failure refenv explains,
    exits 2 with its message; anything else is a bug in refenv, exit 3 in one line (1 is a verdict, never this)."""
    from harness.inputs import InputError, shorten

    if isinstance(exc, (InputError, RefenvError)):
        return f"refenv: {exc}", USAGE
    return f"refenv: internal error: {type(exc).__name__}: {shorten(str(exc), 200)} (please report this)", INTERNAL
