"""Load a report from a file, bytes or text: decode it safely and tell a collect_env dump from a document."""

from __future__ import annotations

import codecs
import dataclasses
import re
import sys
from pathlib import Path

from harness.inputs import InputError, loads_json, read_stream
from harness.intake.anytext import parse_report
from harness.intake.clean import FENCE_RE, MAX_CHARS, NOT_A_REPORT, check_text
from harness.intake.parsed import ParsedReport, ReportError
from harness.intake.saved import parse_document

MAX_BYTES = MAX_CHARS * 4
_VERSION_LINE_RE = re.compile(r"\Arefenv-diagnose [^\n]{1,200}\n")
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13, 27}  # tab, newlines, form feed and ESC occur in text


def load_report(source: str | Path | bytes) -> ParsedReport:
    """Parse a report given as a path (str or Path), its bytes, or its text (a str with newlines)."""
    if isinstance(source, bytes):
        if len(source) > MAX_BYTES:
            raise ReportError(f"the report holds more than {MAX_BYTES} bytes, more than a report: pass the "
                              "collect_env output and the warnings above it, not a whole log")
        return _with_decoding(source)
    if isinstance(source, Path) or "\n" not in source:
        return _with_decoding(_read(Path(source)))
    return parse_text(source)


def parse_text(text: str) -> ParsedReport:
    """A saved diagnose document when the text is a JSON object, else facts read from any text."""
    check_text(text)
    body = "\n".join(ln for ln in text.strip().splitlines() if not FENCE_RE.match(ln)).strip()
    # The single-file diagnoser prints its version line first, `--json` included (harness/launcher.py).
    body = _VERSION_LINE_RE.sub("", body, count=1).lstrip()
    if not body.startswith("{"):
        return parse_report(text)
    try:
        # The input discipline's JSON: nesting bounded, no NaN/Infinity, no 5,000-digit number for int().
        data = loads_json(body, "the report starts like a JSON document but does not parse")
    except InputError as exc:
        raise ReportError(str(exc)) from None
    if not isinstance(data, dict) or "schema" not in data:
        raise ReportError(f"a JSON document without a 'schema' field: {NOT_A_REPORT}")
    return parse_document(data)


def decode(data: bytes) -> tuple[str, str | None]:
    """The text of a report and, when bytes had to be replaced, a note saying so."""
    note = None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # PowerShell 5's `>` writes UTF-16 with a byte-order mark.
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ReportError(f"the report starts as UTF-16 text but does not decode: {exc.reason}") from None
    elif b"\x00" in data:
        raise ReportError(f"the report holds NUL bytes, so it is binary, not text: {NOT_A_REPORT}")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            note = f"the report is not valid UTF-8: {text.count(chr(0xFFFD))} undecodable bytes were replaced"
    controls = sum(1 for ch in text if ord(ch) in _CONTROL)
    if controls > len(text) // 100:
        raise ReportError(f"the report is binary ({controls} control characters in {len(text)}), not text: "
                          f"{NOT_A_REPORT}")
    return text, note


def read_stdin() -> bytes:
    """Standard input, bounded like a file: it may be a pipe that never ends."""
    try:
        return read_stream(sys.stdin.buffer, "standard input", MAX_BYTES)
    except InputError as exc:
        raise ReportError(f"{exc}: a report is the collect_env output and the warnings above it, not a whole "
                          "log") from None


def _with_decoding(data: bytes) -> ParsedReport:
    text, note = decode(data)
    report = parse_text(text)
    return dataclasses.replace(report, notes=(*report.notes, note)) if note else report


def _read(path: Path) -> bytes:
    """A report file's bytes; a clear ReportError for a missing, unreadable or oversized one."""
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise ReportError(f"{path} is a folder: pass the file holding the collect_env output or document")
        if size > MAX_BYTES:
            raise ReportError(f"{path} is {size} bytes long, more than a report: pass the collect_env output "
                              "and the warnings above it, not a whole log")
        with path.open("rb") as f:  # st_size is 0 for devices and pipes: the read itself is bounded
            return read_stream(f, str(path), MAX_BYTES)
    except InputError as exc:
        raise ReportError(f"{exc}: a report is the collect_env output and the warnings above it, not a whole "
                          "log") from None
    except FileNotFoundError:
        raise ReportError(f"cannot read {path}: no such file (pass a file holding a collect_env output or a "
                          "saved diagnose document, or '-' for standard input)") from None
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
