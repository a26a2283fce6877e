"""The stack's phrases spelled as the failure catalogue spells them: the reader's tolerance of case, spacing,
hyphens and line breaks, so that one pattern per catalogue row reads every way a phrase was pasted.

Each row's anchor is found with letter case, whitespace and hyphens folded away (torch 0.x printed
'too old(found version 8000)', a message retyped in prose loses its capitals, a wrapped one its line
break) and written back in the row's spelling; the row's own pattern then runs (match.py).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from harness.catalogue import entries

FOLD_RE = re.compile(r"[\s\-]+")
_FOLD_LINE_RE = re.compile(r"[^\S\n]+|-+")  # folds within lines, keeps line breaks


@lru_cache(maxsize=1)
def anchors() -> tuple[re.Pattern[str], dict[str, str]]:
    """One alternation of every anchor, folded (longest first), and folded anchor -> its spelling."""
    spelling: dict[str, str] = {}
    for e in entries():
        for p in e.patterns:
            spelling.setdefault(FOLD_RE.sub("", p.anchor.lower()), p.anchor)
    folded = sorted(spelling, key=len, reverse=True)
    return re.compile("|".join(re.escape(f) for f in folded)), spelling


@lru_cache(maxsize=1)
def exact_anchors() -> re.Pattern[str]:
    """Every anchor as the catalogue spells it, lower-cased: a respelled line names one this way."""
    _, spelling = anchors()
    return re.compile("|".join(re.escape(s.lower()) for s in sorted(set(spelling.values()), key=len, reverse=True)))


def _respellings(text: str) -> list[tuple[int, int, str]]:
    """(start, end, spelling) of every anchor the text spells otherwise than the catalogue. Linear: one
    folding pass and one search of an alternation of literals."""
    pattern, spelling = anchors()
    low = text.lower()
    named = {m.group(0) for m in pattern.finditer(FOLD_RE.sub("", low))}
    # Most lines that name an anchor spell it as the catalogue does: nothing to map back.
    if all(spelling[f] in text if spelling[f] != spelling[f].lower() else spelling[f] in low for f in named):
        return []
    where = [i for i, ch in enumerate(low) if not (ch.isspace() or ch == "-")]
    folded = "".join(low[i] for i in where)
    spans = []
    for m in pattern.finditer(folded):
        start, end = where[m.start()], where[m.end() - 1] + 1
        spelled = _cased(spelling[m.group(0)], text[start:end])
        if text[start:end] != spelled:
            spans.append((start, end, spelled))
    return spans


def _cased(anchor: str, span: str) -> str:
    """The anchor's spacing; its letter case where it has capitals (its row matches case), else the text's
    (an all-lower-case anchor belongs to a row that matches any case)."""
    if anchor != anchor.lower():
        return anchor
    letters = iter(ch for ch in span if not (ch.isspace() or ch == "-"))
    return "".join(ch if ch.isspace() or ch == "-" else next(letters, ch) for ch in anchor)


@lru_cache(maxsize=2)  # normalise() and find_all() ask of the same text
def folded_counts(low: str) -> tuple[Counter[str], int]:
    """Anchors named within lines (folded), and how many are named when line breaks fold away too."""
    pattern, _ = anchors()
    within = _FOLD_LINE_RE.sub("", low)
    counts = Counter(pattern.findall(within))
    return counts, len(pattern.findall(within.replace("\n", ""))) if counts or "\n" in within else 0


def respell_lines(texts: list[str]) -> list[str]:
    """respell() on each line; one pass over the whole text first finds whether any line needs it."""
    _, spelling = anchors()
    joined = "\n".join(texts)
    low = joined.lower()
    counts, _ = folded_counts(low)
    exact = all((joined if spelling[f] != spelling[f].lower() else low).count(spelling[f]) >= n
                for f, n in counts.items())
    return texts if exact else [respell(t) for t in texts]


def respell(text: str, marks: list[int] | None = None) -> str:
    """The text with every catalogue anchor written as the catalogue spells it, whatever its case, spacing
    or hyphens here; `marks` (offsets into the text, ascending) are moved to where they land."""
    spans = _respellings(text)
    if not spans:
        return text
    out, done, shift, k = [], 0, 0, 0
    for start, end, spelled in spans:
        while marks is not None and k < len(marks) and marks[k] <= start:
            marks[k] += shift
            k += 1
        while marks is not None and k < len(marks) and marks[k] < end:
            marks[k] = start + shift + len(spelled)  # a bound inside an anchor moves past it
            k += 1
        out.append(text[done:start])
        out.append(spelled)
        shift += len(spelled) - (end - start)
        done = end
    while marks is not None and k < len(marks):
        marks[k] += shift
        k += 1
    out.append(text[done:])
    return "".join(out)
