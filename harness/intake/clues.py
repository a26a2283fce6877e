"""The first line of a report that holds a clue: its pattern is tried only on lines that hold one of its
keywords, so a long log costs a pass of literal searches, not a pass of every pattern over all of it."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from functools import lru_cache

from harness.intake.parsed import Line

TRIES = 64  # lines a clue's pattern is tried on: a log repeating a keyword cannot cost more


class Text:
    """A report's lines as one text (prompts included) with where each line starts."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.texts = [line.full for line in lines]
        self.whole = "\n".join(self.texts)
        self.low = self.whole.lower()
        self.starts = list(itertools.accumulate((len(t) + 1 for t in self.texts), initial=0))

    def index_at(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def holding(self, keywords: tuple[str, ...]) -> Iterator[int]:
        """The indexes of the lines that hold one of the keywords (lower case), first first, at most TRIES."""
        if not any(k in self.low for k in keywords):
            return
        found = _any_of(keywords).finditer(self.low)
        seen = -1
        for m in itertools.islice(found, TRIES):
            i = self.index_at(m.start())
            if i != seen:
                seen = i
                yield i

    def first(self, keywords: tuple[str, ...], pattern: re.Pattern[str],
              about: re.Pattern[str] | None = None) -> Line | None:
        """The first line that holds a keyword and matches the pattern (and `about`, when given)."""
        return next((self.lines[i] for i in self.holding(keywords)
                     if pattern.search(self.texts[i]) and (about is None or about.search(self.texts[i]))), None)


@lru_cache(maxsize=128)
def _any_of(keywords: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True)))
