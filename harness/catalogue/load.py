"""Load `data/failures.json` once and validate it: a malformed row names its id and field."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import datafiles
from harness.catalogue.entries import CODE_APIS, LAYERS, REMEDY_KINDS, Code, Entry, Pattern, Text
from harness.schema import VERDICTS, Remedy

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "failures.json"
# A quantified group ('(...)+', '(...)*', '(...){n,m}') can backtrack without bound: none allowed,
# so every pattern runs in time linear in the window it is given.
_NESTED_RE = re.compile(r"\)[*+{]")
_UNBOUNDED_RE = re.compile(r"(?<!\\)(?:[*+]|\{[0-9]*,\})")  # '{n,}' has no upper bound either
_ID_RE = re.compile(r"^[a-z]+\.[a-z0-9_]+$")
_FIELD_RE = re.compile(r"\{(\w+)\}")


class CatalogueError(ValueError):
    """The failure catalogue is malformed; the message names the entry and the field."""


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise CatalogueError(f"{DATA_FILE.name}: {where}: {what}")


def _pattern(raw: Any, where: str, full: bool) -> Pattern:
    _need(isinstance(raw, dict) and isinstance(raw.get("anchor"), str) and isinstance(raw.get("regex"), str),
          where, "expected {anchor, regex}")
    anchor, source = raw["anchor"], raw["regex"]
    _need(len(anchor) >= 6, f"{where}.anchor", "at least 6 characters, so it rules lines out cheaply")
    _need(not _NESTED_RE.search(source), f"{where}.regex", "no quantified group (it could backtrack)")
    _need(not _UNBOUNDED_RE.search(source), f"{where}.regex", "bounded repetition only ({0,N}, not * or +)")
    if full:
        try:
            re.compile(source)
        except re.error as exc:
            raise CatalogueError(f"{DATA_FILE.name}: {where}.regex: {exc}") from None
    return Pattern(anchor, source)


def _code(raw: Any, where: str) -> Code | None:
    if raw is None:
        return None
    _need(isinstance(raw, dict) and raw.get("api") in CODE_APIS and isinstance(raw.get("value"), int), where,
          f"expected {{api: one of {', '.join(CODE_APIS)}, value: int}}")
    return Code(raw["api"], raw["value"], str(raw.get("name") or ""), str(raw.get("text") or ""))


def _remedy(raw: Any, where: str) -> Remedy | None:
    if raw is None:
        return None
    _need(isinstance(raw, dict) and raw.get("kind") in REMEDY_KINDS, where,
          f"expected {{kind: one of {', '.join(REMEDY_KINDS)}, ...params}}")
    return Remedy.from_dict(raw)


def _entry(raw: Any, i: int, full: bool) -> Entry:
    where = f"entries[{i}]"
    _need(isinstance(raw, dict), where, "expected an object")
    ident = raw.get("id")
    _need(isinstance(ident, str) and bool(_ID_RE.match(ident)), f"{where}.id", "expected layer.name")
    where = f"entries[{i}] ({ident})"
    _need(raw.get("layer") in LAYERS, f"{where}.layer", f"expected one of {', '.join(LAYERS)}")
    _need(raw.get("verdict") == "" or raw.get("verdict") in VERDICTS, f"{where}.verdict", "unknown verdict")
    for key in ("meaning", "source"):
        _need(isinstance(raw.get(key), str) and bool(raw[key]), f"{where}.{key}", "a non-empty string")
    patterns = raw.get("patterns")
    _need(isinstance(patterns, list) and bool(patterns), f"{where}.patterns", "at least one pattern")
    texts = raw.get("texts")
    _need(isinstance(texts, list) and bool(texts), f"{where}.texts", "at least one text")
    parsed_texts = []
    for j, t in enumerate(texts):
        _need(isinstance(t, dict) and isinstance(t.get("since"), str) and isinstance(t.get("text"), str),
              f"{where}.texts[{j}]", "expected {since, text}")
        parsed_texts.append(Text(t["since"], t["text"]))
    example = raw.get("example", {})
    _need(isinstance(example, dict), f"{where}.example", "expected an object of parameter values")
    compiled = tuple(_pattern(p, f"{where}.patterns[{j}]", full) for j, p in enumerate(patterns))
    code = _code(raw.get("code"), f"{where}.code")
    for j, t in enumerate(parsed_texts):
        missing = set(_FIELD_RE.findall(t.template)) - set(example)
        _need(not missing, f"{where}.example", f"no example value for {', '.join(sorted(missing))}")
        # Each wording, filled with the example, must be recognised by the row's own patterns (or,
        # for a bare CUDA error text such as 'unknown error', its code's name).
        sample = _FIELD_RE.sub(lambda m: str(example[m.group(1)]), t.template).splitlines()
        if code and code.name:
            sample.append(code.name)
        # scan() runs a regex only where its anchor is found: an anchor not in the wording finds nothing.
        _need(not full or any(p.anchor.lower() in line.lower() and p.regex.search(line) for p in compiled
                              for line in sample),
              f"{where}.texts[{j}]", "no pattern of this row (its anchor and regex) matches its own wording")
    return Entry(ident, raw["layer"], raw["verdict"], raw["meaning"], raw["source"], compiled,
                 tuple(parsed_texts), tuple(sorted((str(k), str(v)) for k, v in example.items())),
                 code, _remedy(raw.get("remedy"), f"{where}.remedy"))


def validate(data: Any, full: bool = True) -> tuple[Entry, ...]:
    """The rows of a catalogue, or CatalogueError naming the field. `full` also compiles every regex and checks
    that each wording is recognised by its own row's patterns: what the tests prove of the shipped file, so
    loading it at run time (entries()) skips that work and the patterns compile when first used."""
    _need(isinstance(data, dict) and data.get("schema") == "refenv.failures", "schema", "expected refenv.failures")
    sources = data.get("sources")
    _need(isinstance(sources, dict) and bool(sources), "sources", "every row's source must be named")
    raw = data.get("entries")
    _need(isinstance(raw, list) and bool(raw), "entries", "expected a list of entries")
    entries = tuple(_entry(r, i, full) for i, r in enumerate(raw))
    seen: set[str] = set()
    codes: set[tuple[str, int]] = set()
    for e in entries:
        _need(e.id not in seen, e.id, "duplicate id")
        seen.add(e.id)
        _need(e.source in sources, f"{e.id}.source", f"not among the named sources ({', '.join(sources)})")
        if e.code and e.code.name:
            _need((e.code.api, e.code.value) not in codes, f"{e.id}.code", "a second row for this code")
            codes.add((e.code.api, e.code.value))
    return entries


def validate_prefix(data: Any) -> str:
    """The words torch prints before the reason CUDA did not initialise, with their named source."""
    raw: Any = data.get("torch_init_prefix") if isinstance(data, dict) else None
    _need(isinstance(raw, dict) and isinstance(raw.get("text"), str) and bool(raw["text"].strip()),
          "torch_init_prefix", "expected {text, source, meaning}")
    _need(raw["source"] in data["sources"], "torch_init_prefix.source", "not among the named sources")
    return str(raw["text"])


@lru_cache(maxsize=1)
def _data() -> Any:
    return json.loads(datafiles.read(DATA_FILE.name))


@lru_cache(maxsize=1)
def entries() -> tuple[Entry, ...]:
    """Every entry, validated once (its form; the shipped file's patterns are proven by the tests: validate())."""
    return validate(_data(), full=False)


@lru_cache(maxsize=1)
def torch_init_prefix() -> str:
    """'CUDA initialization: ', as torch prints it before the reason (the facts keep the reason alone)."""
    return validate_prefix(_data())
