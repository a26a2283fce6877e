"""The errors refenv reports to its user: each says what went wrong, where, and what to do."""

from __future__ import annotations


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
