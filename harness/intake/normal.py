"""The one normalisation every reader sees: pasted text into logical lines, each naming its original line.

Per line (`clean.py`): colours, quoting, markup and the prompt removed, whitespace folded, the failure
catalogue's phrases spelled as the catalogue spells them (`match.py`). Over the
whole text: numbered listings lose their numbers, the common indentation goes, and lines a mail client,
an editor or a terminal wrapped are joined again. A line was wrapped when the text shows a wrap width
that its breakable lines fill (at least two lines end within a word of it) and the next line starts a
word at the margin that would not have fitted; a line that opens a new record (a bullet, a prompt, a
table row, a `Key: value` field) is never joined to the one above it.
"""

from __future__ import annotations

import re

from harness.intake.clean import fold, is_fence, split_prompt, unquote
from harness.intake.parsed import Line
from harness.intake.spelling import respell_lines

# A numbered listing: '12 | x', '12: x', '  12  x' (an editor's or a pager's line numbers).
_NUMBER_RE = re.compile(r"^\s{0,4}(?P<n>\d{1,5})(?:\s{0,2}[|:\u2502]\s?|\s{2,})(?=\S)")
_RUN = 3  # consecutive numbers before a listing is believed
# What a line that starts a new record looks like: it is never the tail of a wrapped line.
_RECORD_RE = re.compile(
    r"^(?:[-*+\u2022]\s|\d{1,3}[.)]\s|[|+#\[{<>]|Traceback|File \"|[A-Z][\w()/.-]{0,30}(?: [\w()/.-]{1,30}){0,5}"
    r"[:\uff1a]\s|\w{1,40}=|GPU \d|NVIDIA-SMI|\d{4}-\d\d-\d\d|"
    # a log record that opens with a path ('/opt/x/__init__.py:52: UserWarning'), a package list's row
    # ('pytorch   1.12.1   py3.9_cpu_0'), a command typed on a line of its own
    r"(?:[A-Za-z]:)?[~.\w-]{0,40}[/\\][^\s:]{1,300}:|"
    r"[a-z][\w.-]{0,40}\s{1,40}\d{1,3}\.\d{1,3}[\w.+]{0,30}(?:\s|$)|"
    r"(?:export|set|python\d?(?:\.\d{1,2})?|pip\d?|conda|mamba|docker|podman|sudo|cd|git|nvidia-smi|srun|sbatch|"
    r"uv|apt(?:-get)?|import|kubectl)\s)")
# A line that ends on a word no sentence or record ends on goes on, whatever the next line looks like.
_OPEN_END_RE = re.compile(r"\b(?:the|a|an|of|to|from|and|or|with|in|on|for|your|by|at|is|are|be|that)$", re.I)
_MIN_WRAPS = 2     # lines that must end at the wrap width before the text is believed wrapped
_SLACK = 0.5       # a wrapped line fills at least this share of the width
_MAX_JOINED = 64   # physical lines one logical line may join: a wrapped paragraph, not a log
_GAP = 8           # spaces a table row may have held where it was wrapped
_NARROWEST = 40    # no editor, mail client or terminal wraps narrower


def normalise(text: str) -> list[Line]:
    """The report's logical lines (blank and fence lines kept as empty ones), numbered from 1."""
    raws = text.splitlines()
    plain = [unquote(raw) for raw in raws]
    fences = [is_fence(p) for p in plain]
    plain = _unnumbered(["" if fences[k] else p for k, p in enumerate(plain)])
    # The common indentation: none as soon as a line starts at the margin (the usual case, found at once).
    if not any(p[:1] not in ("", " ") for p in plain):
        margin = min((len(p) - len(p.lstrip()) for p in plain if p.strip()), default=0)
        plain = [p[margin:] for p in plain]
    joins = _wrapped(plain)
    lines: list[Line] = []
    i = 0
    while i < len(plain):
        j = i
        while j < len(joins) and joins[j] and j - i < _MAX_JOINED:
            j += 1
        prompt, body = split_prompt(plain[i].strip())
        if j > i:
            body = " ".join([body, *(plain[k].strip() for k in range(i + 1, j + 1))])
        lines.append(Line(i + 1, raws[i].rstrip(), fold(body), prompt, j + 1 if j > i else 0))
        i = j + 1
    texts = [line.text for line in lines]
    spelled = respell_lines(texts)
    if spelled is texts:
        return lines
    return [line if t is line.text else line._replace(text=t) for line, t in zip(lines, spelled)]  # noqa: B905


def _unnumbered(plain: list[str]) -> list[str]:
    """Lines of a numbered listing (three or more consecutive numbers) without their numbers."""
    numbers: list[int | None] = []
    for p in plain:
        m = _NUMBER_RE.match(p) if p[:1].isdigit() or p[:1] == " " else None
        numbers.append(int(m.group("n")) if m else None)
    out = list(plain)
    i = 0
    while i < len(plain):
        j = i
        while j + 1 < len(plain) and numbers[j] is not None and numbers[j + 1] == (numbers[j] or 0) + 1:
            j += 1
        if numbers[i] is not None and j - i + 1 >= _RUN:
            for k in range(i, j + 1):
                m = _NUMBER_RE.match(plain[k])
                out[k] = plain[k][m.end():] if m else plain[k]
        i = j + 1
    return out


def _open_end(text: str) -> bool:
    """A line that cannot end where it does: on a word no sentence ends on, or a table row not yet closed."""
    text = text.strip()
    return bool(_OPEN_END_RE.search(text)) or (text.startswith("|") and not text.endswith("|"))


def _closed_row(text: str) -> bool:
    """A table row or border closed at its right edge ('| ... |', '+----+'): whatever follows is a line of its own."""
    text = text.strip()
    return text[:1] in "|+" and text[-1:] in "|+"


def _first_word(text: str) -> str:
    return text.split(" ", 1)[0]


def _wrapped(plain: list[str]) -> list[bool]:
    """joins[i]: line i+1 is the continuation of line i, wrapped at the text's width."""
    breakable = [len(p) for p in plain if " " in p.strip()]
    joins = [False] * max(0, len(plain) - 1)
    if not breakable:
        return joins
    width = max(breakable)
    if width < _NARROWEST:
        return joins
    candidates = [
        i for i in range(len(plain) - 1)
        if len(plain[i]) + 1 + len(_first_word(plain[i + 1])) > width - _GAP
        and plain[i].strip() and plain[i + 1].strip() and not plain[i + 1][:1].isspace()
        and max(len(plain[i]), len(_first_word(plain[i + 1]))) >= _SLACK * width
        # the run of spaces a wrap drops is unknown: a line that cannot end there needs less proof
        and len(plain[i].rstrip()) + 1 + len(_first_word(plain[i + 1])) > width - (_GAP if _open_end(plain[i]) else 0)
        and (_open_end(plain[i]) or not _RECORD_RE.match(plain[i + 1]))
        # a sentence that ends where a capital begins the next line is as likely a line of its own
        and not (plain[i].rstrip().endswith((".", "!", "?")) and plain[i + 1][:1].isupper())
        and not _closed_row(plain[i])
        and plain[i + 1] != plain[i]  # a line repeated is a log's repetition, not a wrap
        and not split_prompt(plain[i + 1])[0]
    ]
    if len(candidates) >= _MIN_WRAPS:
        for i in candidates:
            joins[i] = True
    return joins
