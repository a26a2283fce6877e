"""Every Python interpreter on this machine: pyenv's versions, the python3.N on PATH, and the one running.

The single-file diagnoser promises any Python 3.8+ and a one-line refusal from older ones; its tests run
it with each interpreter found here, deduplicated by what the interpreter says it is.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: tuple[int, int, int]

    @property
    def name(self) -> str:
        return "python" + ".".join(map(str, self.version))


def _candidates() -> list[str]:
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python")))
    found += [p for p in (shutil.which(f"python{v}") for v in ("2", "3", *(f"3.{n}" for n in range(6, 16)))) if p]
    return [sys.executable, *found]  # the running one first: it has the project's torch


def _version(path: str) -> tuple[int, int, int] | None:
    try:
        done = subprocess.run([path, "-c", "import sys; print('%d %d %d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    return (int(parts[0]), int(parts[1]), int(parts[2])) if done.returncode == 0 and len(parts) == 3 else None


def interpreters() -> list[Interpreter]:
    """One interpreter per version found (the running one for its own version), oldest first."""
    seen: dict[tuple[int, int, int], Interpreter] = {}
    for path in _candidates():
        version = _version(path)
        if version is not None and version not in seen:
            seen[version] = Interpreter(path, version)
    return [seen[v] for v in sorted(seen)]
