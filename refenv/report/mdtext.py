"""Markdown text that stays literal: escaped prose, table cells, code spans and fences that cannot be broken out of.

GitHub renders raw HTML in Markdown, so text from a container (torch's messages, logs) is either escaped
here or put in code, where CommonMark shows it verbatim (CommonMark spec 0.31, "Code spans", "Fenced code
blocks": a fence or span ends only at a backtick run of the same length).
"""

from __future__ import annotations

import re

# CommonMark's backslash escapes that matter for text we did not write: HTML, emphasis, code, tables.
_SPECIAL = re.compile(r"([\\`*<>|])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text: str) -> str:
    """Control characters (other than newline and tab) shown as U+FFFD, so no terminal or parser trips on them."""
    return _CONTROL.sub("\ufffd", text)


def inline(text: str) -> str:
    """Prose on one line with Markdown's special characters escaped."""
    return _SPECIAL.sub(r"\\\1", " ".join(clean(text).split()))


def cell(text: str) -> str:
    """A table cell: one line, escaped, never empty."""
    return inline(text) or " "


def code(text: str) -> str:
    """A code span that holds any text, backticks included."""
    flat = " ".join(clean(text).split())
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def fence(text: str, info: str = "text") -> str:
    """A fenced block longer than any backtick run inside it."""
    body = clean(text).rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=2)
    ticks = "`" * (longest + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A pipe table from already-escaped cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
