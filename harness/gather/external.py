"""One way to run an external command: it returns (rc, out, err) and never raises."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    rc: int | None        # None when the command could not be started or timed out
    out: str
    err: str
    error: str | None = None  # why rc is None

    @property
    def ok(self) -> bool:
        return self.rc == 0


def run(argv: Sequence[str], timeout: float = 10.0, env: Mapping[str, str] | None = None) -> Result:
    """Run `argv` without a shell; a missing program, a timeout or an OSError become a Result."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, timeout=timeout, check=False,
            env=dict(env) if env is not None else None,
        )
    except FileNotFoundError:
        return Result(None, "", "", f"{argv[0]}: not found")
    except subprocess.TimeoutExpired as exc:
        return Result(None, _text(exc.stdout), _text(exc.stderr), f"{argv[0]}: timed out after {timeout:g} s")
    except OSError as exc:
        return Result(None, "", "", f"{argv[0]}: {exc}")
    return Result(proc.returncode, _text(proc.stdout), _text(proc.stderr))


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def which(name: str) -> str | None:
    """The path of `name` on PATH, or None (shutil.which without importing shutil's extras)."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None
