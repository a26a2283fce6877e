"""The I/O of the check: a Dockerfile and its build context's files, and an image's inspect (labels and environment,
without running it) through the engine's own command line, so the check imports no engine library.

Everything here gathers; refenv/check/reader.py and the predictor judge. A missing engine, or an image it does
not have, is no error: the image is then known by its name alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from refenv.check.reader import Reader
from refenv.check.text import MAX_BYTES, CheckInputError, decode

INSPECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Inspected:
    """What an engine says of an image without running it."""

    labels: dict[str, str]
    env: dict[str, str]


def read_bytes(path: Path) -> bytes:
    """The file's bytes, at most MAX_BYTES + 1 of them (the reader refuses a larger one); CheckInputError when it
    cannot be read."""
    try:
        with path.open("rb") as f:
            return f.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise CheckInputError(f"{path}: a folder, not a file", "name the Dockerfile or matrix.yaml") from None
    except FileNotFoundError:
        raise CheckInputError(f"{path}: no such file", "name the Dockerfile or matrix.yaml to check") from None
    except OSError as exc:
        raise CheckInputError(f"{path}: cannot be read ({exc.strerror})", "check its permissions") from None


def context_reader(context: Path) -> Reader:
    """A reader of the build context's files by relative path: None for one outside the context or missing."""
    root = context.resolve()

    def read(rel: str) -> str | None:
        target = (root / rel.lstrip("/")).resolve()
        if (root != target and root not in target.parents) or not target.is_file():
            return None
        return decode(read_bytes(target), str(target.relative_to(root)))

    return read


def inspect(image: str, engine: str = "docker") -> Inspected | None:
    """The image's labels and environment from `ENGINE image inspect`, or None (no engine, no such image here)."""
    binary = shutil.which(engine)
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, "image", "inspect", "--format", "{{json .Config}}", image],
                              capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        config = json.loads(done.stdout or "null") or {}
    except ValueError:
        return None
    labels = {str(k): str(v) for k, v in (config.get("Labels") or {}).items()}
    env = dict(str(e).split("=", 1) for e in config.get("Env") or [] if "=" in str(e))
    return Inspected(labels, env)

