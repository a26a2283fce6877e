"""Package versions and version specifiers, as PEP 440 defines them (the subset installed metadata uses).

The harness has no third-party imports, so it cannot use `packaging`: this is its own reading of PEP 440
("Version scheme": epoch, release, pre-, post- and dev-releases, local labels; "Version specifiers": ==, !=,
<=, >=, <, >, ~=, === and the `.*` prefix match). Installed versions are judged as `pip check` judges them:
pre-releases count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION_RE = re.compile(
    r"v?(?:(?P<epoch>\d{1,9})!)?(?P<release>\d{1,12}(?:\.\d{1,12}){0,20})"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d{0,12}))?"
    r"(?:-(?P<post_implicit>\d{1,12})|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>\d{0,12}))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev_n>\d{0,12}))?"
    r"(?:\+(?P<local>[a-z0-9]{1,40}(?:[-_.][a-z0-9]{1,40}){0,10}))?",
    re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_SPEC_RE = re.compile(r"\s*(===|==|!=|~=|<=|>=|<|>)\s*([^\s,;]{1,80})\s*")
INF = (1 << 62,)


class VersionError(ValueError):
    """Not a PEP 440 version or specifier."""


@dataclass(frozen=True)
class Version:
    text: str
    epoch: int
    release: tuple[int, ...]
    pre: tuple[int, int] | None
    post: int | None
    dev: int | None
    local: str | None

    @property
    def public(self) -> str:
        return self.text.split("+", 1)[0]

    def key(self) -> tuple[object, ...]:
        """Ordering as PEP 440 gives it: a dev release sorts before its pre-releases, which sort before it."""
        release = self.release
        while len(release) > 1 and release[-1] == 0:
            release = release[:-1]
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, ...] = (-1,)
        else:
            pre = self.pre if self.pre is not None else INF
        post = (self.post,) if self.post is not None else (-1,)
        dev = (self.dev,) if self.dev is not None else INF
        return self.epoch, release, pre, post, dev


def parse(text: str) -> Version:
    m = _VERSION_RE.fullmatch(text.strip())
    if m is None:
        raise VersionError(f"not a version: {text!r}")
    pre = None
    if m.group("pre"):
        pre = (_PRE[m.group("pre").lower()], int(m.group("pre_n") or 0))
    implicit, post_n, dev_n = m.group("post_implicit"), m.group("post_n"), m.group("dev_n")
    post = int(implicit) if implicit else (int(post_n or 0) if post_n is not None else None)
    dev = int(dev_n or 0) if dev_n is not None else None
    return Version(text.strip(), int(m.group("epoch") or 0), tuple(int(p) for p in m.group("release").split(".")),
                   pre, post, dev,
                   m.group("local"))


def _prefix_match(v: Version, spec: str) -> bool:
    want = parse(spec[:-2]).release
    have = v.release + (0,) * max(0, len(want) - len(v.release))
    return have[:len(want)] == want


def _one(v: Version, op: str, spec: str) -> bool:
    if op == "===":
        return v.text == spec
    if op in ("==", "!=") and spec.endswith(".*"):
        return _prefix_match(v, spec) == (op == "==")
    s = parse(spec)
    # A specifier without a local label ignores the candidate's (2.14.1+cu130 is ==2.14.1).
    mine = v.key() if s.local is None else (v.key(), v.local or "")
    theirs = s.key() if s.local is None else (s.key(), s.local)
    if op == "==":
        return mine == theirs
    if op == "!=":
        return mine != theirs
    if op == "~=":
        if len(s.release) < 2:
            raise VersionError(f"~= needs at least two release numbers: {spec!r}")
        prefix = ".".join(str(p) for p in s.release[:-1]) + ".*"
        return v.key() >= s.key() and _prefix_match(v, prefix)
    if op == ">=":
        return v.key() >= s.key()
    if op == "<=":
        return v.key() <= s.key()
    if op == ">":
        # >V excludes V's post-releases unless V is one (PEP 440, "Exclusive ordered comparison").
        return v.key() > s.key() and not (s.post is None and v.post is not None and v.key()[1] == s.key()[1])
    # <V excludes V's pre-releases (a dev release is one too) unless V is one.
    early = v.pre is not None or v.dev is not None
    return v.key() < s.key() and not (s.pre is None and s.dev is None and early and v.key()[1] == s.key()[1])


def satisfies(version: str, specifier: str) -> bool:
    """Whether `version` meets every clause of `specifier` ('>=2.2,<3'; empty: anything). VersionError if unreadable."""
    v = parse(version)
    clauses = [c for c in specifier.split(",") if c.strip()]
    for clause in clauses:
        m = _SPEC_RE.fullmatch(clause)
        if m is None:
            raise VersionError(f"not a version specifier: {clause.strip()!r}")
        if not _one(v, m.group(1), m.group(2)):
            return False
    return True


def local_label(version: str) -> str | None:
    """'0.29.1+cu130' -> 'cu130'."""
    return version.split("+", 1)[1] if "+" in version else None
