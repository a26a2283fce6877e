"""REPL transcripts and one-liners: each torch expression and the output line that answers it.

`>>> torch.cuda.is_available()` then `False`; `In [2]: torch.version.cuda` then `Out[2]: '12.1'`;
`python -c "import torch; print(torch.__version__, torch.version.cuda)"` then `2.1.0+cu121 12.1`; a
script line `print(torch.cuda.is_available())  # Returns False` or a comment under it (`# True`). Each
answer is taken only in the shape its expression prints (a bool, a count, a version, None), so prose after
the code cannot become a fact; the fact names the line the answer is on.
"""

from __future__ import annotations

import re
from typing import Any

from harness.intake.parsed import Builder, Line

# torch expressions a report prints, and the fact each answers.
_EXPR_RE = re.compile(
    r"torch\.(?P<e>__version__|version\.cuda|version\.hip|cuda\.is_a[a-z]{3,8}le\(\)|cuda\.device_count\(\)"
    r"|cuda\.get_device_name\([^()]{0,30}\)|cuda\.get_arch_list\(\)|cuda\.get_device_capability\([^()]{0,30}\)"
    r"|_C\._cuda_getDeviceCount\(\))")  # the count device_count() returns, called directly
FACTS = {"__version__": "torch.version", "version.cuda": "torch.cuda", "version.hip": "torch.hip",
         "is_available": "torch.is_available", "device_count": "torch.device_count"}
# Lines torch or Python print between an expression and its answer.
_NOISE_RE = re.compile(r"Warning: |^warnings\.warn\(|^return torch\._C\.|^\^+$|^Python \d|^\[(?:GCC|MSC|Clang)|"
                       r"^Type \"help\"")
# An answer written as a comment: '# Returns False', '# -> 0', '# will return true', '# True', '# result: 2'.
_COMMENT_RE = re.compile(r"(?:^|\s)#\s{0,3}(?:(?:it\s)?(?:returns?|gives?|prints?|outputs?|results?|shows?|is|"
                         r"will\s+return|"
                         r"->|=>|\u2192|:)\s{0,3}){0,2}(?P<a>[`'\"]?[\w.+]{1,40}[`'\"]?)", re.I)
_BOOL = {"true": True, "false": False}
_VERSION_RE = re.compile(r"^[`'\"]?(?P<v>\d{1,2}\.\d{1,2}(?:\.\d{1,3})?(?:(?:a|b|rc|\.dev|\.post)\d{1,12})?"
                         r"(?:\+[A-Za-z0-9.]{1,24})?)[`'\"]?$")
_CUDA_RE = re.compile(r"^[`'\"]?(?P<v>\d{1,2}\.\d{1,2})(?:\.\d{1,4})?[`'\"]?$")
_CAPABILITY_RE = re.compile(r"^\((?P<major>\d{1,2}),\s?(?P<minor>\d)\)$")
# What a text must hold (lower-cased) for this reader to find anything in it.
GATE = re.compile(r"torch\.")
_LOOKAHEAD = 6  # an answer is within this many lines of its expression
# `assert torch.cuda.is_available()`, then what became of it: an AssertionError, or the report saying so.
_ASSERTED_RE = re.compile(r"\bassert\s{1,4}(?:torch\.)?cuda\.is_a[a-z]{3,8}le\(\)")
_OUTCOME_RE = re.compile(r"\bassert(?:ion)?(?: statement)? (?P<o>fails|failed|passes|passed|succeeds|succeeded|"
                         r"works)\b|^(?P<e>AssertionError)\b", re.I)


def read(b: Builder, lines: list[Line]) -> None:
    for i, line in enumerate(lines):
        if "torch." not in line.text:
            continue
        if _ASSERTED_RE.search(line.text):
            _read_assert(b, lines[i + 1:])
            continue
        exprs = _expressions(line.text)
        if not exprs:
            continue
        comment = _COMMENT_RE.search(line.text[line.text.find(exprs[-1][1]):])
        if comment and len(exprs) == 1:
            _take(b, exprs[0][0], comment.group("a"), line)
            continue
        answer = _answer(lines, i)
        if answer is None:
            continue
        values = _split(answer.text, len(exprs))
        for (name, _), value in zip(exprs, values):  # noqa: B905  (strict= is 3.10+; fewer values is fine)
            _take(b, name, value, answer)


def _read_assert(b: Builder, following: list[Line]) -> None:
    """What the report says became of an asserted is_available(): each outcome is an answer (a report that
    shows both, run two ways, is read so)."""
    for line in following:
        for m in _OUTCOME_RE.finditer(line.text):
            passed = m.group("o") is not None and m.group("o").lower().startswith(("pass", "succeed", "work"))
            b.put("torch.is_available", passed, line)


def _expressions(text: str) -> list[tuple[str, str]]:
    """(fact name, expression text) for each torch expression the line prints or echoes, in order."""
    code = text.split(" #", 1)[0].rstrip("; ")
    # Printed, or echoed at a prompt: a line that ends with the expression ('import torch; torch.cuda.is_available()').
    printed = "print(" in code or bool(re.search(r"(?:^|[\s;])torch\.[\w.]{1,40}(?:\([^()]{0,30}\))?$", code))
    if not printed or re.search(r"\b(?:assert|if|while|return|def)\b", code):
        return []
    found = []
    for m in _EXPR_RE.finditer(code):
        key = m.group("e").split("(")[0]
        key = "is_available" if key.startswith("cuda.is_a") else key[len("cuda."):] if key.startswith("cuda.") else key
        key = "device_count" if key == "_C._cuda_getDeviceCount" else key
        found.append((key, m.group(0)))
    return found


def _answer(lines: list[Line], i: int) -> Line | None:
    """The output line under line i: the next one that is no prompt, no warning and no code."""
    for line in lines[i + 1:i + 1 + _LOOKAHEAD]:
        if not line.text or _NOISE_RE.search(line.text):
            continue
        if line.prompt in (">>>", "...", "In") or "torch." in line.text or line.text.startswith("import "):
            return None
        if line.text.startswith("#"):
            m = _COMMENT_RE.match(line.text)
            return Line(line.number, line.raw, m.group("a"), line.prompt, line.last) if m else None
        return line
    return None


def _split(text: str, count: int) -> list[str]:
    """The printed values: one per expression, separated by spaces (a lone value takes the whole line)."""
    text = text.split(" #", 1)[0]
    if count == 1:
        label = re.match(r"^[A-Za-z][\w ()?.-]{0,40}:\s(?P<v>\S.*)$", text)  # 'CUDA available: False'
        return [label.group("v").strip() if label else text.strip()]
    return text.split()[:count]


def _take(b: Builder, name: str, value: str, line: Line) -> None:
    """The fact an expression's printed value states, when the value has the shape it prints."""
    v = value.strip().strip(",")
    low = v.strip("`'\"").lower()
    fact: Any = None
    if name == "is_available" and low in _BOOL:
        fact = _BOOL[low]
    elif name == "device_count" and low.isdigit():
        fact = int(low)
    elif name == "__version__" and _VERSION_RE.match(v):
        fact = _VERSION_RE.match(v).group("v")  # type: ignore[union-attr]
    elif name in ("version.cuda", "version.hip") and (low == "none" or _CUDA_RE.match(v)):
        fact = None if low == "none" else _CUDA_RE.match(v).group("v")  # type: ignore[union-attr]
    elif name == "get_device_name" and v.strip("'\"") and not re.search(r"Error|Traceback|File ", v):
        b.detail("gpu", v.strip("'\""), line)
        b.clue("torch_named_device", line)  # torch opened the device to name it: CUDA started there
        return
    elif name == "get_arch_list" and v.startswith("["):
        arches = re.findall(r"(?:sm|compute)_\d{2,3}a?", v)
        if arches and b.put("torch.arch_list", arches, line):
            b.put("torch.importable", True, line)
        return
    elif name == "get_device_capability" and _CAPABILITY_RE.match(v):
        m = _CAPABILITY_RE.match(v)
        assert m is not None
        b.detail("capability", f"{m.group('major')}.{m.group('minor')}", line)
        b.clue("torch_named_device", line)
        return
    else:
        return
    path = FACTS[name]
    if b.put(path, fact, line):
        if name in ("__version__", "version.cuda"):
            b.put("torch.importable", True, line)  # with torch.cuda unknown, importable alone reads as CPU-only
        if name == "version.cuda" and fact is None:
            b.note(f"line {line.number}: torch.version.cuda is None: a CPU-only build")
    elif b.get(path) != fact:
        b.note(f"line {line.number}: {name} printed {v}, unlike line {b.provenance[path][0]}")

