"""One input discipline for every surface: bounded reads, strict numbers, bounded JSON, anchored patterns.

Standard library only (the harness runs inside bare images). Every refusal is an `InputError` whose message
is one line naming the field (or file) and what is allowed; callers turn it into exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

# A config.json, probe file or matrix.yaml is a few kB; this bounds a mistaken path, not a real input.
DEFAULT_CAP = 4 * 1024 * 1024
MAX_DEPTH = 64
# Python refuses int() of more than 4,300 digits (sys.int_info.default_max_str_digits) with a ValueError
# that names no field; no quantity refenv reads needs more than 30 digits.
MAX_DIGITS = 30
MAX_FLOAT_CHARS = 80  # float() is linear, but no real decimal needs more
MESSAGE_WIDTH = 60

_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_BRACKETS_RE = re.compile(r"[\[\]{}]")


class InputError(ValueError):
    """Input refused; the message is one line that names the field or file and what is allowed."""


def without_prefix(text: str, prefix: str) -> str:
    """`text` less a leading `prefix` (str.removeprefix is Python 3.9+; the harness runs on 3.8)."""
    return text[len(prefix):] if text.startswith(prefix) else text


def shorten(value: object, width: int = MESSAGE_WIDTH) -> str:
    """The repr of a value for an error message, cut to `width` characters with its full length said."""
    text = repr(value)
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text)} characters)"


def label(value: str, width: int = MESSAGE_WIDTH) -> str:
    """A name or path as it is, when short and printable; else its shortened repr."""
    return value if len(value) <= width and value.isprintable() else shorten(value, width)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


# --- bounded reads ---------------------------------------------------------------------------------------

def read_stream(stream: IO[bytes], what: str, cap: int = DEFAULT_CAP) -> bytes:
    """At most `cap` bytes from a stream; more is refused (st_size says nothing of pipes and devices)."""
    data = stream.read(cap + 1)
    if len(data) > cap:
        raise InputError(f"{what}: longer than the {cap} bytes read; pass the file itself, not a device or a log")
    return data


def read_bounded(path: str | Path, what: str, cap: int = DEFAULT_CAP) -> bytes:
    """The bytes of a file, device, pipe or '-' (standard input), at most `cap`; one-line errors."""
    if str(path) == "-":
        return read_stream(sys.stdin.buffer, what, cap)
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{what}: {label(str(p))} is a folder, not a file")
        with p.open("rb") as stream:
            return read_stream(stream, what, cap)
    except FileNotFoundError:
        raise InputError(f"{what}: cannot read {label(str(p))}: no such file") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read {label(str(p))}: {exc.strerror or exc}") from None


def decode_utf8(data: bytes, what: str) -> str:
    """Strict UTF-8 text (a BOM is dropped); an undecodable byte is refused naming its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{what}: line {line}: not UTF-8 text (byte {data[exc.start]:#04x})") from None


def read_text(path: str | Path, what: str, cap: int = DEFAULT_CAP) -> str:
    """A bounded, strictly decoded UTF-8 text file."""
    return decode_utf8(read_bounded(path, what, cap), what)


# --- numbers ---------------------------------------------------------------------------------------------

def _range(value: float, field: str, lo: float | None, hi: float | None, shown: object = None) -> None:
    shown = value if shown is None else shown
    if lo is not None and value < lo:
        raise InputError(f"{field}: must be >= {_num(lo)}, got {shorten(shown)}")
    if hi is not None and value > hi:
        raise InputError(f"{field}: must be <= {_num(hi)}, got {shorten(shown)}")


def parse_int(text: str, field: str, lo: int | None = None, hi: int | None = None) -> int:
    """A decimal integer of ASCII digits only, at most MAX_DIGITS of them, within [lo, hi]."""
    s = text.strip(" \t")
    if not _INT_RE.fullmatch(s):
        raise InputError(f"{field}: expected an integer of ASCII digits, got {shorten(text)}")
    if len(s.lstrip("+-")) > MAX_DIGITS:
        raise InputError(f"{field}: more than {MAX_DIGITS} digits ({len(s)} characters)")
    value = int(s)
    _range(value, field, lo, hi)
    return value


def parse_float(text: str, field: str, lo: float | None = None, hi: float | None = None) -> float:
    """A finite decimal number of ASCII digits (1.5, 7e9), within [lo, hi]; nan, inf and 1e400 refused."""
    s = text.strip(" \t")
    if len(s) > MAX_FLOAT_CHARS or not _FLOAT_RE.fullmatch(s):
        raise InputError(f"{field}: expected a finite number such as 7e9 or 1.5, got {shorten(text)}")
    value = float(s)
    if not math.isfinite(value):
        raise InputError(f"{field}: {shorten(text)} is beyond the finite numbers")
    _range(value, field, lo, hi, s)
    return value


def check_number(value: object, field: str, lo: float | None = None, hi: float | None = None, *,
                 integral: bool = False) -> float:
    """A number already parsed (JSON, YAML): finite, not a bool, integral where asked, within [lo, hi]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{field}: expected a number, got {shorten(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{field}: {shorten(value)} is not a finite number")
        if integral and not value.is_integer():
            raise InputError(f"{field}: expected an integer, got {shorten(value)}")
    _range(value, field, lo, hi)
    return value


def int_arg(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse `type=` for integers in [lo, hi]; a refusal is argparse's one usage error (exit 2)."""
    def integer(text: str) -> int:
        try:
            return parse_int(text, "value", lo, hi)
        except InputError as exc:
            raise argparse.ArgumentTypeError(without_prefix(str(exc), "value: ")) from None
    return integer


def float_arg(lo: float, hi: float) -> Callable[[str], float]:
    """An argparse `type=` for finite numbers in [lo, hi] (no nan, inf, 1e400 or unicode digits)."""
    def number(text: str) -> float:
        try:
            return parse_float(text, "value", lo, hi)
        except InputError as exc:
            raise argparse.ArgumentTypeError(without_prefix(str(exc), "value: ")) from None
    return number


# --- JSON ------------------------------------------------------------------------------------------------

def nesting_error(text: str, max_depth: int = MAX_DEPTH) -> str | None:
    """'line N' where flow brackets nest deeper than `max_depth`, else None.

    Quoted text is not skipped: a bracket inside a string counts too, so this over-counts and suits inputs
    that never nest deeply on purpose (matrix.yaml), before a recursive parser (PyYAML's) sees them.
    """
    depth = 0
    for m in _BRACKETS_RE.finditer(text):
        depth += 1 if m.group() in "[{" else -1
        if depth > max_depth:
            return f"line {text.count(chr(10), 0, m.start()) + 1}"
    return None


def depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed document (iterative: no recursion to exhaust)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def _no_constant(name: str) -> Any:
    raise InputError(f"{name} is not a JSON number (the JSON standard has no NaN or Infinity)")


def _json_int(field: str) -> Any:
    def parse(text: str) -> int:
        return parse_int(text, field)
    return parse


def _json_float(field: str) -> Any:
    def parse(text: str) -> float:
        return parse_float(text, field)
    return parse


def loads_json(text: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON: nesting bounded, NaN/Infinity refused, numbers finite and of bounded length."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_int=_json_int(f"{what}: a number"),
                          parse_float=_json_float(f"{what}: a number"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except InputError as exc:
        raise InputError(str(exc) if str(exc).startswith(what) else f"{what}: {exc}") from None
    except RecursionError:  # json's C scanner stops at the interpreter's recursion limit, cleanly
        too_deep = True
    else:
        too_deep = depth(value) > max_depth
    if too_deep:
        raise InputError(f"{what}: nested deeper than {max_depth} levels of lists and objects")
    return value


def load_json_file(path: str | Path, what: str, cap: int = DEFAULT_CAP, max_depth: int = MAX_DEPTH) -> Any:
    """A bounded read, strict UTF-8 and strict JSON, all refused in one line naming `what`."""
    return loads_json(read_text(path, what, cap), what, max_depth)


def finite_or_null(value: Any) -> Any:
    """A copy of a document in which NaN and infinities are null: a measurement that has no finite figure."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def dumps_json(value: Any, **kwargs: Any) -> str:
    """JSON that is JSON: NaN and Infinity raise instead of printing what no parser reads."""
    return json.dumps(value, allow_nan=False, **kwargs)


# --- patterns --------------------------------------------------------------------------------------------

def matches(pattern: re.Pattern[str], value: object) -> bool:
    """The whole string matches (re.match with `$` lets a trailing newline through)."""
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def require(pattern: re.Pattern[str], value: object, field: str, allowed: str, max_len: int = 200) -> str:
    """`value` when it is a string of at most `max_len` characters that wholly matches; else InputError."""
    if not isinstance(value, str):
        raise InputError(f"{field}: expected a string ({allowed}), got {shorten(value)}")
    if len(value) > max_len:
        raise InputError(f"{field}: longer than {max_len} characters ({len(value)}); allowed: {allowed}")
    if pattern.fullmatch(value) is None:
        raise InputError(f"{field}: {shorten(value)} is not allowed; allowed: {allowed}")
    return value
