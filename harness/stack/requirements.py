"""`Requires-Dist` lines read, and their environment markers evaluated for this interpreter.

Sources: the core metadata specification ("Requires-Dist", in both its `name (specs)` and `name specs`
spellings) and PEP 508 (names, extras, `@ url`, and markers: `and`, `or`, parentheses, the comparison
operators and `in` / `not in` over the marker variables). A marker naming an extra is false here: the
stack is judged as installed, without extras. Anything unreadable is skipped rather than guessed.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass

from harness.stack.versions import VersionError, satisfies

_REQ_RE = re.compile(
    r"\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]{0,200})\])?\s*"
    r"(?:@\s*(?P<url>[^;\s]{1,2000})\s*|\(?(?P<spec>[^;()@]{0,400})\)?)\s*(?:;(?P<marker>.{0,2000}))?")
_TOKEN_RE = re.compile(r"\s*(?:(?P<str>'[^']{0,400}'|\"[^\"]{0,400}\")|(?P<op>===|==|!=|~=|<=|>=|<|>|not\s+in\b|in\b)"
                       r"|(?P<word>and\b|or\b|[A-Za-z_.]{1,40})|(?P<paren>[()]))")
_VERSION_VARS = ("python_version", "python_full_version", "implementation_version", "platform_release")


@dataclass(frozen=True)
class Requirement:
    name: str          # as written
    key: str           # normalised (PEP 503): lower case, runs of -_. as one -
    spec: str          # '==2.13.0', '' for any
    marker: str

    def met_by(self, version: str) -> bool | None:
        """Whether `version` meets it; None when the specifier or the version cannot be read."""
        try:
            return satisfies(version, self.spec)
        except VersionError:
            return None


def normalise(name: str) -> str:
    return re.sub(r"[-_.]{1,50}", "-", name).lower()


def environment() -> dict[str, str]:
    """The marker variables of this interpreter (PEP 508, "Environment Markers")."""
    impl = sys.implementation
    info = impl.version
    return {
        "os_name": os.name, "sys_platform": sys.platform, "platform_machine": platform.machine(),
        "platform_system": platform.system(), "platform_release": platform.release(),
        "platform_python_implementation": platform.python_implementation(),
        "implementation_name": impl.name,
        "implementation_version": f"{info.major}.{info.minor}.{info.micro}",
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "python_full_version": platform.python_version(), "extra": "",
    }


def _compare(left: str, op: str, right: str, versioned: bool) -> bool:
    if op in ("in", "not in"):
        return (left in right) == (op == "in")
    if versioned:
        try:
            return satisfies(left, f"{op}{right}")
        except VersionError:
            pass
    return {"==": left == right, "!=": left != right, "===": left == right}.get(op, False)


class _Markers:
    """A recursive-descent reading of one marker expression over `env`."""

    def __init__(self, text: str, env: dict[str, str]) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if m is None or m.end() == pos:
                raise ValueError(f"unreadable marker at {text[pos:pos + 20]!r}")
            kind = next(k for k in ("str", "op", "word", "paren") if m.group(k) is not None)
            value = m.group(kind)
            self.tokens.append((kind, " ".join(value.split()) if kind == "op" else value))
            pos = m.end()
        self.at = 0
        self.env = env

    def _next(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise ValueError("the marker ends too soon")
        self.at += 1
        return self.tokens[self.at - 1]

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _value(self) -> tuple[str, str | None]:
        kind, value = self._next()
        if kind == "str":
            return value[1:-1], None
        if kind == "word" and value in self.env:
            return self.env[value], value
        raise ValueError(f"unknown marker variable {value!r}")

    def _atom(self) -> bool:
        if self._peek() == "(":
            self._next()
            result = self.expr()
            if self._next()[1] != ")":
                raise ValueError("unbalanced parentheses")
            return result
        left, lname = self._value()
        kind, op = self._next()
        if kind != "op":
            raise ValueError(f"expected a comparison, got {op!r}")
        right, rname = self._value()
        return _compare(left, op, right, (lname or rname or "") in _VERSION_VARS)

    def _conjunction(self) -> bool:
        result = self._atom()
        while self._peek() == "and":
            self._next()
            result = self._atom() and result
        return result

    def expr(self) -> bool:
        result = self._conjunction()
        while self._peek() == "or":
            self._next()
            result = self._conjunction() or result
        return result


def applies(marker: str, env: dict[str, str] | None = None) -> bool | None:
    """Whether a marker holds here (True for none); None when it cannot be read."""
    if not marker.strip():
        return True
    try:
        reading = _Markers(marker, env if env is not None else environment())
        result = reading.expr()
    except ValueError:
        return None
    return result if reading.at == len(reading.tokens) else None


def parse(line: str) -> Requirement | None:
    """One Requires-Dist value, or None when it is not a readable requirement."""
    m = _REQ_RE.fullmatch(line.strip())
    if m is None:
        return None
    spec = "".join((m.group("spec") or "").split())
    return Requirement(m.group("name"), normalise(m.group("name")), spec, (m.group("marker") or "").strip())


def active(lines: list[str] | None, env: dict[str, str] | None = None) -> list[Requirement]:
    """The requirements that apply to this interpreter without extras."""
    out = []
    for line in lines or []:
        req = parse(line)
        if req is not None and applies(req.marker, env) is True:
            out.append(req)
    return out
