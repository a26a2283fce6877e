"""Child process: import each named module in turn and say, for each, what happened — the exact text.

`python -m harness.stack.trial PLAN` (PLAN: a JSON list of {"module": name, "libraries": [paths]}) prints one
line per module, prefixed `@@stack `: first `{"begin": name}`, then its result (ok, the exception as
`Type: message` with its causes, the warnings and log records it raised, what it printed). A module that
kills the process leaves a `begin` without a result: the parent (harness/stack/trials.py) knows which one it
was and goes on in a fresh process. Extensions often swallow why their compiled part did not load (torch's
`load_library` rewords the loader's error as "Could not load this library"); so the parent sets the switches
that make them say it (trials.py, TELL_ME_WHY), and after a failed import each of the module's own shared
objects is loaded directly, for the dynamic loader's own words (`undefined symbol: ...`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import io
import json
import logging
import os
import sys
import time
import warnings
from typing import TextIO

from harness.schema.jsondata import encode
from harness.schema.stack_document import ImportTrial

PREFIX = "@@stack "
MAX_LINES = 20
MAX_CHARS = 4000


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format still says something
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            text += f" ({_text(record.exc_info[1])})"
        self.lines.append(f"{record.name}: {text}"[:MAX_CHARS])


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _causes(exc: BaseException) -> list[str]:
    out: list[str] = []
    seen = {id(exc)}
    nxt = exc.__cause__ or exc.__context__
    while nxt is not None and id(nxt) not in seen and len(out) < 3:
        seen.add(id(nxt))
        out.append(_text(nxt)[:MAX_CHARS])
        nxt = nxt.__cause__ or nxt.__context__
    return out


def _tail(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    return [line[:MAX_CHARS] for line in lines[-MAX_LINES:]]


def _load(paths: list[str]) -> list[str]:
    """The loader's error for each shared object that does not load here (after torch, which they link)."""
    out = []
    for path in paths:
        try:
            ctypes.CDLL(path)
        except OSError as exc:
            out.append(str(exc)[:MAX_CHARS])
    return out


def attempt(module: str, libraries: list[str] | None = None) -> ImportTrial:
    """Import `module` here, recording everything it says; on failure, load `libraries` one by one."""
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    printed = io.StringIO()
    ok, error, causes, said = False, None, [], []
    start = time.monotonic()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed), \
                contextlib.redirect_stderr(printed):
            warnings.simplefilter("always")
            try:
                importlib.import_module(module)
                ok = True
            except BaseException as exc:  # SystemExit and KeyboardInterrupt from an import are its result too
                error = _text(exc)[:MAX_CHARS]
                causes = _causes(exc)
        said = [f"{w.category.__name__}: {w.message}"[:MAX_CHARS] for w in caught][:MAX_LINES]
    finally:
        root.removeHandler(records)
    loader = _load(libraries or []) if not ok else []
    return ImportTrial(module, ok, error, tuple(causes), tuple(said), tuple(records.lines[:MAX_LINES]),
                       tuple(_tail(printed.getvalue())), tuple(loader), round(time.monotonic() - start, 3))


def emit(out: TextIO, payload: object) -> None:
    """One line of the protocol: `{"begin": name}`, or a module's ImportTrial."""
    out.write(PREFIX + json.dumps(encode(payload)) + "\n")
    out.flush()


def main(argv: list[str]) -> int:
    out = sys.stdout
    try:
        plan = json.loads(argv[0]) if len(argv) == 1 else None
    except ValueError:
        plan = None
    if not isinstance(plan, list):
        print("usage: python -m harness.stack.trial '[{\"module\": NAME, \"libraries\": [PATH, ...]}, ...]'",
              file=sys.stderr)
        return 2
    for step in plan:
        module = str(step.get("module")) if isinstance(step, dict) else str(step)
        libraries = [str(p) for p in step.get("libraries") or []] if isinstance(step, dict) else []
        emit(out, {"begin": module})
        emit(out, attempt(module, libraries))
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Every result is written and flushed: leave without tearing down what was imported (torch and its
    # extensions take a second or more to unload, for nothing).
    os._exit(code)
