"""Find the catalogue's messages in a line, in time linear in its length.

Each pattern names a literal anchor. `str.find` locates the anchor (linear), and the regex runs only
in a bounded window around it, with bounded repetition only (checked at load), so no line, however
long or hostile, costs more than a pass per pattern plus a fixed amount per anchor tried.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from harness.catalogue.entries import Entry, Hit, Pattern
from harness.catalogue.load import entries

BEFORE = 320  # how far before its anchor a match may start (a GPU name, a tool's prefix)
AFTER = 640   # how far past its anchor a match may end (torch's longest message, captured texts)
TRIES = 16    # anchors tried per pattern and line: a line repeating an anchor cannot cost more
SHORT = 4096  # up to this length one pass of every anchor at once rules a line out faster than a find each


@lru_cache(maxsize=1)
def _any_anchor() -> re.Pattern[str]:
    """Every anchor, lower-cased, as one alternation of literals (no repetition: at most a pass per anchor)."""
    anchors = sorted({p.anchor.lower() for e in entries() for p in e.patterns}, key=len, reverse=True)
    return re.compile("|".join(re.escape(a) for a in anchors))


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[Entry, Pattern, str], ...]:
    """Every pattern with its entry and its anchor lower-cased once."""
    return tuple((e, p, p.anchor.lower()) for e in entries() for p in e.patterns)


def scan(line: str) -> list[Hit]:
    """Every entry whose pattern matches in this line, in the order they start."""
    return list(_scan(line))


# Several readers look at the same lines of one report; a bounded memo spares them the second pass.
@lru_cache(maxsize=1 << 14)
def _scan(line: str) -> tuple[Hit, ...]:
    low = line.lower()
    if len(low) <= SHORT and _any_anchor().search(low) is None:
        return ()
    hits: dict[tuple[str, int], Hit] = {}
    for entry, pattern, anchor in _patterns():
        at = low.find(anchor)
        tries = 0
        while at >= 0 and tries < TRIES:
            tries += 1
            lo, hi = max(0, at - BEFORE), min(len(line), at + len(anchor) + AFTER)
            m = pattern.regex.search(line, lo, hi)
            nxt = at + 1
            if m is not None:
                key = (entry.id, m.start())
                if key not in hits:
                    params = {k: v for k, v in m.groupdict().items() if v is not None}
                    hits[key] = Hit(entry, params, m.start(), m.end(), m.group(0))
                nxt = max(nxt, m.end())
            at = low.find(anchor, nxt)
    return tuple(sorted(hits.values(), key=lambda h: (h.start, h.entry.id)))


def scan_text(text: str) -> list[Hit]:
    """scan() over each line of a text, first line first (offsets are within each line)."""
    return [hit for line in text.splitlines() for hit in scan(line)]


def find(text: str, ids: Iterable[str]) -> Hit | None:
    """The first hit of any of these entries in a (multi-line) text."""
    wanted = set(ids)
    return next((h for h in scan_text(text) if h.entry.id in wanted), None)
