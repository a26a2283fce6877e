"""The exact words an entry prints, for a given torch release: for expectations and simulated hosts."""

from __future__ import annotations

import re

from harness.catalogue.lookup import entry
from harness.catalogue.model import Entry, Text

_RELEASE_RE = re.compile(r"^(\d+)\.(\d+)")
_FIELD_RE = re.compile(r"\{(\w+)\}")


def _release(version: str) -> tuple[int, int]:
    m = _RELEASE_RE.match(version.strip())
    if not m:
        raise ValueError(f"not a torch release: {version!r}")
    return int(m.group(1)), int(m.group(2))


def wording(e: Entry, release: str | None = None) -> Text:
    """The wording in force at this release (the newest when None or for a non-torch message)."""
    if release is None:
        return e.texts[-1]
    at = _release(release)
    chosen = e.texts[0]
    for t in e.texts:
        if t.since == "*" or _release(t.since) <= at:
            chosen = t
    return chosen


def fill(template: str, params: dict[str, str]) -> str:
    """Put the parameters into a template; ValueError naming one that is missing."""
    def put(m: re.Match[str]) -> str:
        if m.group(1) not in params:
            raise ValueError(f"no value for {{{m.group(1)}}} in {template[:60]!r}")
        return params[m.group(1)]
    return _FIELD_RE.sub(put, template)


def render(e: Entry, release: str | None = None, **params: object) -> str:
    return fill(wording(e, release).template, {k: str(v) for k, v in params.items()})


def torch_text(ident: str, release: str | None = None, **params: object) -> str:
    """What torch `release` prints for entry `ident`, e.g. torch_text('torch.driver_too_old', '2.14', found=12080)."""
    return render(entry(ident), release, **params)


def example_text(e: Entry, release: str | None = None) -> str:
    """The wording filled with the entry's own example values."""
    return fill(wording(e, release).template, dict(e.example))
