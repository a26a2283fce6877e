"""A Dockerfile's text as the reader takes it, with bounds: too large, not text, or an expansion that grows without
end is bad input named by file and line, never a hang or a traceback (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from refenv.errors import RefenvError

# A Dockerfile of a megabyte is already far past any real one (docker/docs' examples are under 200 lines); the
# reader refuses more rather than spend seconds on it.
MAX_BYTES = 1 << 20
# One substituted word: an ARG that doubles itself ten times over (ARG A=$A$A) passes this well before it
# exhausts memory.
MAX_WORD = 64 * 1024
MAX_INSTRUCTIONS = 5000

# $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:+alternative}, ${NAME+alternative} (the Dockerfile
# reference, "Environment replacement"); a word escaped with a backslash is left alone.
_VAR = re.compile(r"\\\$|\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class CheckInputError(RefenvError):
    """A file the check reads is unusable: the message names the file (and line) and what to do."""


def decode(data: bytes, where: str) -> str:
    """The file's text: UTF-8 (a byte-order mark allowed), no NUL, at most MAX_BYTES; else CheckInputError."""
    if len(data) > MAX_BYTES:
        raise CheckInputError(f"{where}: {len(data):,} bytes, more than the {MAX_BYTES:,} a Dockerfile may have here",
                              "check the path: this does not look like a Dockerfile")
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise CheckInputError(f"{where}:{line}: a NUL byte: this is a binary file, not a Dockerfile",
                              "name the Dockerfile (or matrix.yaml) to check")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise CheckInputError(f"{where}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text",
                              "save the file as UTF-8") from None


def substitute(word: str, values: Mapping[str, str], where: str) -> str:
    """`word` with $NAME and ${NAME...} replaced from `values` (an unknown name is empty, as the builder makes
    it); CheckInputError when the result passes MAX_WORD."""
    def one(m: re.Match[str]) -> str:
        if m.group(0) == "\\$":
            return "$"
        name = m.group(1) or m.group(4) or ""
        value = values.get(name)
        op, operand = m.group(2), m.group(3) or ""
        if op in (":-", "-"):
            return value if value or (op == "-" and value is not None) else operand
        if op in (":+", "+"):
            return operand if value or (op == "+" and value is not None) else ""
        return value or ""

    out = _VAR.sub(one, word)
    if len(out) > MAX_WORD:
        raise CheckInputError(f"{where}: the value grows past {MAX_WORD:,} characters as its variables are "
                              "substituted (an ARG or ENV that repeats itself)",
                              "give the variable a plain value")
    return out


def unquote(value: str) -> str:
    """A shell word's quotes removed: '"2 3"' -> '2 3', "'x'" -> 'x' (ENV, ARG and LABEL values)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
