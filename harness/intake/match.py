"""The failure catalogue over the normalised text: the reader's tolerance of how a message was pasted.

A catalogue row keeps one pattern, in the stack's own spelling. Its anchors are written back as the row
spells them (spelling.py), and the row's own pattern runs: on each logical line, over a few lines where a
message runs on or an anchor is broken across a line, and on a last line the paste cut inside a message.
Every hit names the logical line it starts on.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from functools import lru_cache

from harness.catalogue import Entry, Hit, entries, scan
from harness.intake.parsed import Line
from harness.intake.spelling import FOLD_RE, anchors, exact_anchors, folded_counts, respell

PARAGRAPH_LINES = 40      # a paragraph is read in pieces of at most this many lines ...
PARAGRAPH_CHARS = 8_192   # ... and characters: a message spans a few lines, a log does not
WINDOW = 8                # a message that runs on is read over at most this many lines
SEAM = 120                # an anchor broken across lines lies within this many characters of the break
CLOSING = 24             # characters of a wording's end that say where a message stops
CUT_MIN = 16              # characters of a wording (folded) a paste cut short must keep to be recognised
_CUT_MARKS = "[].…"       # what a reporter leaves where they cut: '[...]', '…'


@lru_cache(maxsize=1)
def _openings() -> tuple[tuple[str, Entry], ...]:
    """Each wording of each row, folded, up to its first parameter: what a paste cut short keeps of it."""
    out = []
    for e in entries():
        for t in e.texts:
            opening = FOLD_RE.sub("", t.template.split("{", 1)[0].lower())
            if len(opening) >= CUT_MIN:
                out.append((opening, e))
    return tuple(out)


def cut_short(text: str) -> tuple[Entry, int] | None:
    """The row whose wording this text ends by beginning and not finishing (a paste cut off mid-message), and
    where in the text that wording starts."""
    low = text.lower()
    where = [i for i, ch in enumerate(low) if not (ch.isspace() or ch == "-")]
    folded = "".join(low[i] for i in where).rstrip(_CUT_MARKS)
    for opening, e in _openings():
        at = folded.rfind(opening[:CUT_MIN])
        if at >= 0 and len(folded) - at < len(opening) and opening.startswith(folded[at:]):
            return e, where[at]
    return None


@lru_cache(maxsize=256)
def _closing(entry: Entry) -> str:
    """The last words of a row's newest wording, folded, when they hold no parameter ('' otherwise)."""
    tail = entry.text[-CLOSING:]
    return "" if "{" in tail or "}" in tail or len(entry.text) < 2 * CLOSING else FOLD_RE.sub("", tail.lower())


@dataclass(frozen=True)
class Found:
    """A catalogue hit and the logical line it starts on. Its offsets index `text`: the line's own text,
    or a paragraph's for a message that runs across lines (`offset` is where the line starts there and
    `ends` where each of the paragraph's lines ends)."""

    hit: Hit
    index: int
    text: str
    offset: int = 0
    ends: tuple[int, ...] = ()
    cut: bool = False  # the paste ends inside the message: its text is the row's own wording

    @property
    def id(self) -> str:
        return self.hit.id

    def tail(self) -> str:
        """The message from the hit to the end of the line it ends on, or to the end of the row's wording when
        the line goes on past it (a wrapped paste joined the next line to it)."""
        if self.cut:
            return self.hit.text
        last = max(self.hit.end, self.hit.start + 1)
        end = next((e for e in self.ends if e >= last), len(self.text))
        return _closed(_closing(self.hit.entry), self.text[self.hit.start:end])

    def before(self) -> str:
        """What its line says before the hit."""
        return self.text[self.offset:self.hit.start]


def find_all(lines: list[Line]) -> list[list[Found]]:
    """Per logical line, the catalogue hits that start on it, first first."""
    found: list[list[Found]] = [[] for _ in lines]
    for i, line in enumerate(lines):
        if line.text:
            found[i] = [Found(h, i, line.text) for h in scan(line.text)]
    _cut_off(lines, found)
    _run_on(lines, found)
    low = "\n".join(line.text for line in lines).lower()
    counts, across = folded_counts(low)
    seams = across > sum(counts.values())  # an anchor is broken across a line break somewhere
    if not seams and not _unanswered(lines, low, found):
        return found  # every line that names an anchor gave a hit: no message runs on
    for piece in _paragraphs(lines):
        for k in _open_ends(lines, piece, found, seams):
            window = piece[k:k + WINDOW]
            _across(lines, window, found)
    return found


def _unanswered(lines: list[Line], low: str, found: list[list[Found]]) -> bool:
    """Whether a line names an anchor and gave no hit (its pattern may need the next line)."""
    starts = list(itertools.accumulate((len(line.text) + 1 for line in lines), initial=0))
    return any(not found[bisect.bisect_right(starts, m.start()) - 1] for m in exact_anchors().finditer(low))


def _run_on(lines: list[Line], found: list[list[Found]]) -> None:
    """A message found on one line whose wording closes on a later one (torch printed it over several lines,
    or a paste broke it at a sentence): its text runs on to where the wording closes."""
    for i, hits in enumerate(found):
        for k, f in enumerate(hits):
            closing = _closing(f.hit.entry)
            if f.cut or f.ends or not closing or _closes(closing, f.text[f.hit.start:]):
                continue
            window = [j for j in range(i, min(len(lines), i + WINDOW)) if lines[j].text]
            text = " ".join(lines[j].text for j in window)
            if window[:1] != [i] or not _closes(closing, text[f.hit.start:]):
                continue
            at = FOLD_RE.sub("", text[f.hit.start:].lower()).find(closing)
            where = [p for p in range(f.hit.start, len(text)) if not (text[p].isspace() or text[p] == "-")]
            end = where[at + len(closing) - 1] + 1
            hits[k] = Found(f.hit, i, text, 0, (end,))


@lru_cache(maxsize=256)  # a log repeats its messages line for line
def _closes(closing: str, said: str) -> bool:
    return closing in FOLD_RE.sub("", said.lower())


@lru_cache(maxsize=256)
def _closed(closing: str, said: str) -> str:
    """The message up to where its wording closes (torch's own '(Triggered internally at ...)' after it kept),
    or all of it when the wording's close is not in it."""
    if not closing or not _closes(closing, said):
        return said
    low = said.lower()
    where = [i for i, ch in enumerate(low) if not (ch.isspace() or ch == "-")]
    stop = where["".join(low[i] for i in where).find(closing) + len(closing) - 1] + 1
    rest = said[stop:]
    keep = rest[:rest.find(")") + 1] if rest.lstrip().startswith("(Triggered") else ""
    return said[:stop] + keep


def _cut_off(lines: list[Line], found: list[list[Found]]) -> None:
    """A message without parameters that the paste cuts short (on its last line, or where the reporter marked a
    cut) is that message; one with parameters lost them, and is left to the clues (symptoms.py)."""
    text_lines = [i for i, line in enumerate(lines) if line.text]
    for i in {*text_lines[-1:], *(i for i in text_lines if lines[i].text.endswith(("[...]", "\u2026")))}:
        cut = cut_short(lines[i].text)
        if cut is None or "{" in cut[0].text or any(f.id == cut[0].id for f in found[i]):
            continue
        entry, start = cut
        found[i].append(Found(Hit(entry, {}, start, len(lines[i].text), entry.text), i, lines[i].text, cut=True))


def _open_ends(lines: list[Line], piece: list[int], found: list[list[Found]], seams: bool) -> list[int]:
    """Where in a paragraph a message may run on into the next line: a line that names an anchor but gave
    no hit (its pattern needs more than the line), or an anchor broken across two lines."""
    pattern, _ = anchors()
    exact = exact_anchors()
    starts = []
    for k, i in enumerate(piece[:-1]):
        text = lines[i].text
        if not found[i] and exact.search(text.lower()):
            starts.append(k)
            continue
        if not seams:
            continue
        head, tail = FOLD_RE.sub("", text[-SEAM:].lower()), FOLD_RE.sub("", lines[piece[k + 1]].text[:SEAM].lower())
        seam = head + tail
        if any(m.start() < len(head) < m.end() for m in pattern.finditer(seam)):
            starts.append(k)
    return starts


def _across(lines: list[Line], window: list[int], found: list[list[Found]]) -> None:
    """Hits of a few lines read as one: each is kept on the line it starts on, unless found there already."""
    starts: list[int] = []
    at = 0
    for i in window:
        starts.append(at)
        at += len(lines[i].text) + 1
    # An anchor broken across two lines is respelled whole; the lines' bounds move with it.
    marks = [*starts, *(starts[k] + len(lines[i].text) for k, i in enumerate(window))]
    text = respell(" ".join(lines[i].text for i in window), marks)
    starts, ends = marks[:len(window)], tuple(marks[len(window):])
    for hit in scan(text):
        k = max(j for j, s in enumerate(starts) if s <= hit.start)
        index = window[k]
        if any(f.id == hit.id for f in found[index]):
            continue  # found on the line itself
        found[index].append(Found(hit, index, text, starts[k], ends))


def _paragraphs(lines: list[Line]) -> list[list[int]]:
    """Runs of non-empty logical lines, cut to bounded pieces."""
    pieces: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i, line in enumerate(lines):
        if not line.text or len(current) >= PARAGRAPH_LINES or size + len(line.text) > PARAGRAPH_CHARS:
            if len(current) > 1:
                pieces.append(current)
            current, size = [], 0
        if line.text:
            current.append(i)
            size += len(line.text) + 1
    if len(current) > 1:
        pieces.append(current)
    return pieces
