"""The versioned result document every harness command writes (JSON), and how it is written."""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import tempfile
import traceback
from typing import Any

from harness import __version__
from harness.inputs import InputError, dumps_json, finite_or_null, label
from harness.schema import SCHEMA, SCHEMA_VERSION


def new(command: str, schema: str = SCHEMA, version: int = SCHEMA_VERSION) -> dict[str, Any]:
    return {
        "schema": schema,
        "version": version,
        "harness_version": __version__,
        "command": command,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "error": None,
    }


def error_of(exc: BaseException) -> dict[str, Any]:
    """How a harness failure is recorded: type, message and the traceback's last lines."""
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {"type": type(exc).__name__, "message": str(exc), "traceback": "".join(tb)[-4000:]}


def dumps(doc: dict[str, Any]) -> str:
    # NaN and Infinity are not JSON (RFC 8259): a figure that is not finite is written as null, "unknown".
    return dumps_json(finite_or_null(doc), indent=2, sort_keys=False, default=str) + "\n"


def write(doc: dict[str, Any], path: str | None, what: str = "--out") -> None:
    """Write to `path` atomically (a reader never sees half a document), or to stdout for None/'-'.

    A path that cannot be written (a folder, a read-only place) is bad input, an InputError naming `what`,
    and the temporary file beside it is removed.
    """
    text = dumps(doc)
    if path in (None, "-"):
        sys.stdout.write(text)
        return
    assert path is not None
    tmp = None
    try:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise InputError(f"{what} {label(path)}: cannot write: {exc.strerror or exc}") from None
