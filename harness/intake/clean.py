"""Pasted text into clean lines: markdown fences, e-mail quoting and terminal colours removed."""

from __future__ import annotations

import re

from harness.intake.parsed import Line, ReportError

# Terminal colour and cursor sequences (ECMA-48 CSI) that survive a copy from some terminals.
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# "> " quoting, repeated for quotes of quotes; ">>>" is Python's prompt and stays.
_QUOTE_RE = re.compile(r"^[ \t]{0,3}(?:>(?!>>)[ \t]?)+")
FENCE_RE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_TRIGGERED = "(Triggered internally at "
# Longer lines are read up to here: a real report's longest line (a warning with its URL) is under
# 1 kB, and a bound keeps every per-line pattern's cost bounded whatever is pasted.
MAX_LINE = 16_384

MAX_CHARS = 4_000_000  # a collect_env dump is a few kB; this bounds a pasted log, not a real dump
NOT_A_REPORT = (
    "expected the output of `python -m torch.utils.collect_env` (with any warnings printed above it) "
    "or a saved `python -m harness diagnose --json` document"
)


def check_text(text: str) -> None:
    """Refuse empty, binary or oversized input with a one-line reason."""
    if not text.strip():
        raise ReportError(f"the report is empty: {NOT_A_REPORT}")
    if "\x00" in text:
        raise ReportError(f"the report holds NUL bytes, so it is binary, not text: {NOT_A_REPORT}")
    if len(text) > MAX_CHARS:
        raise ReportError(f"the report is {len(text)} characters long, more than the {MAX_CHARS} read: "
                          "paste the collect_env output and the warnings above it, not a whole log")


def clean(raw: str) -> str:
    """One pasted line as collect_env printed it."""
    text = _ANSI_RE.sub("", raw).replace("\ufeff", "")
    if FENCE_RE.match(text):
        return ""
    return _QUOTE_RE.sub("", text).strip()


def split_lines(text: str) -> list[Line]:
    """The report's lines, numbered from 1 as an editor shows them."""
    return [Line(i, raw.rstrip(), clean(raw[:MAX_LINE])) for i, raw in enumerate(text.splitlines(), start=1)]


def strip_triggered(message: str) -> str:
    """Drop torch's '(Triggered internally at .../CUDAFunctions.cpp:108.)' suffix."""
    at = message.rfind(_TRIGGERED)
    tail = message[at + len(_TRIGGERED):].rstrip() if at >= 0 else ""
    tail = tail[:-1] if tail.endswith(".") else tail
    if at >= 0 and tail.endswith(")") and ")" not in tail[:-1]:
        message = message[:at]
    return message.strip()
