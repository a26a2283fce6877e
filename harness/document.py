"""The versioned result document every harness command writes (JSON): its envelope, and how it is written.

The documents themselves are records (harness/schema/envelope.py and the documents it holds); this opens one
with the envelope's stamps, records a failure, and writes it atomically.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import tempfile
import traceback
from typing import Any, TypeVar

from harness import __version__
from harness.inputs import InputError, dumps_json, finite_or_null, label
from harness.schema.envelope import Envelope, ErrorRecord
from harness.schema.jsondata import encode

E = TypeVar("E", bound=Envelope)


def new(cls: type[E], command: str, **sections: Any) -> E:
    """A document of `cls` opened by `command` now, by this harness; `sections` fill the rest."""
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return cls(harness_version=__version__, command=command, created=created, **sections)


def error_of(exc: BaseException) -> ErrorRecord:
    """How a harness failure is recorded: type, message and the traceback's last lines."""
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return ErrorRecord(type(exc).__name__, str(exc), "".join(tb)[-4000:])


def dumps(doc: object) -> str:
    # NaN and Infinity are not JSON (RFC 8259): a figure that is not finite is written as null, "unknown".
    return dumps_json(finite_or_null(encode(doc)), indent=2, sort_keys=False, default=str) + "\n"


def write(doc: object, path: str | None, what: str = "--out") -> None:
    """Write a record (or plain JSON data) to `path` atomically (a reader never sees half a document), or to
    stdout for None/'-'.

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
