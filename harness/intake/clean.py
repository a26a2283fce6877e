"""One pasted line made plain: terminal colours, e-mail quoting, markdown and HTML marks, typographic
quotes and the prompt it was typed at removed, whitespace folded. Whole-text steps (line numbers, common
indentation, wrapped lines) are `normal.py`'s."""

from __future__ import annotations

import re

from harness.intake.parsed import ReportError

# Terminal colour and cursor sequences (ECMA-48 CSI) that survive a copy from some terminals.
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# "> " quoting, repeated for quotes of quotes; ">>>" is Python's prompt and stays.
QUOTE_RE = re.compile(r"^[ \t]{0,3}(?:>(?!>>)[ \t]?)+")
FENCE_RE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
# Markdown bold and the HTML a rendered issue leaves in a copy ('<pre>', '<br>', '<code>').
_MARKUP_RE = re.compile(r"\*\*|</?(?:pre|code|br|details|summary)\s{0,2}/?>", re.I)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " ",
                         "\u200b": "", "\ufeff": "", "\u2011": "-", "\u2010": "-"})
# The prompts a line was typed at: Python's REPL and IPython, then shells (bash, zsh with a conda or venv
# prefix, PowerShell, cmd). '# ' is not among them: it opens a markdown heading or a comment as often.
_REPL_RE = re.compile(r"^(?P<p>>>>|\.\.\.|In \[\d{1,5}\]:|Out\[\d{1,5}\]:)(?:\s|$)")
_SHELL_RE = re.compile(
    r"^(?P<p>(?:\([\w.@/ -]{1,60}\)\s{1,2})?(?:[\w.-]{1,40}@[\w.-]{1,60}:[^\s$#]{0,200}\s?[$#]|[$%\u276f\u279c]"
    r"|\u2514\u2500[$#]|PS [A-Za-z]:\\[^>\n]{0,200}>|[A-Za-z]:\\[^>\n]{0,200}>))(?:\s|$)")
_PROMPT_STARTS = frozenset(">.IO($%PC\u276f\u279c\u2514")  # what a prompt without a user@host part starts with
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


def unquote(raw: str) -> str:
    """A pasted line without colours, e-mail quoting and odd characters, its indentation kept."""
    text = raw[:MAX_LINE]
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    if not text.isascii():
        text = text.translate(_QUOTES)
    if "\t" in text:
        text = text.expandtabs(4)
    if ">" in text[:12]:
        text = QUOTE_RE.sub("", text)
    return text.rstrip()


def is_fence(text: str) -> bool:
    return bool(FENCE_RE.match(text))


def split_prompt(text: str) -> tuple[str, str]:
    """(prompt, the rest) of a line typed at a REPL or shell prompt; ('', text) otherwise."""
    if text[:1] not in _PROMPT_STARTS and "@" not in text[:102] and text[1:3] != ":\\":
        return "", text
    m = _REPL_RE.match(text) or _SHELL_RE.match(text)
    if m is None:
        return "", text
    return m.group("p"), text[m.end():]


def fold(text: str) -> str:
    """Markup removed and whitespace folded to single spaces."""
    if "*" in text or "<" in text:
        text = _MARKUP_RE.sub("", text)
    return " ".join(text.split())


def clean(raw: str) -> str:
    """One pasted line as the tool printed it, prompt included (the reader's line-by-line view)."""
    text = unquote(raw)
    return "" if is_fence(text) else fold(text)


def strip_triggered(message: str) -> str:
    """Drop torch's '(Triggered internally at .../CUDAFunctions.cpp:108.)' suffix."""
    at = message.rfind(_TRIGGERED)
    tail = message[at + len(_TRIGGERED):].rstrip() if at >= 0 else ""
    tail = tail[:-1] if tail.endswith(".") else tail
    if at >= 0 and tail.endswith(")") and ")" not in tail[:-1]:
        message = message[:at]
    return message.strip()
