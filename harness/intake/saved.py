"""Read a saved `python -m harness diagnose --json` document back into facts, checking their shape."""

from __future__ import annotations

import copy
import functools
import re
import typing
from typing import Any, cast

from harness import facts as facts_module
from harness.facts import Facts, empty_facts
from harness.inputs import shorten
from harness.intake import unknowns
from harness.intake.parsed import ParsedReport, ReportError
from harness.schema import SCHEMA, SCHEMA_VERSION

_SOURCES = {"probed": "gathered live on that machine", "collect_env": "read from a collect_env output",
            "document": "read from an earlier saved document"}
_KINDS: dict[Any, str] = {str: "a string", int: "an integer", bool: "true or false", list: "a list",
                          dict: "an object"}


def parse_document(data: dict[str, Any]) -> ParsedReport:
    """Facts of a saved diagnose document; ReportError naming the field when its shape is wrong."""
    if not isinstance(data, dict):
        raise ReportError(f"a saved diagnose document is a JSON object, not {type(data).__name__}")
    schema = data.get("schema")
    if schema != SCHEMA:
        raise ReportError(f"field 'schema' is {schema!r}: expected {SCHEMA!r} (a `python -m harness diagnose "
                          "--json` document)")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= SCHEMA_VERSION:
        raise ReportError(f"field 'version' is {version!r}: this harness reads {SCHEMA} versions 1 to "
                          f"{SCHEMA_VERSION}")
    raw = data.get("facts")
    if raw is None:
        error = data.get("error") or {}
        why = f" ({error.get('type')}: {error.get('message')})" if isinstance(error, dict) and error else ""
        raise ReportError(f"field 'facts' is missing: the saved document holds no facts{why}")
    if not isinstance(raw, dict):
        raise ReportError(f"field 'facts' must be an object, not {type(raw).__name__}")
    extra: list[str] = []
    _check(raw, Facts, "facts", extra)
    facts = cast("dict[str, Any]", empty_facts("document"))
    for key, value in copy.deepcopy(raw).items():
        if isinstance(value, dict) and isinstance(facts.get(key), dict):
            facts[key].update(value)
        elif key != "source":
            facts[key] = value
    origin = _SOURCES.get(str(raw.get("source")), "of unknown origin")
    notes = [f"a saved diagnose document (harness {data.get('harness_version') or '?'}, created "
             f"{data.get('created') or '?'}); its facts were {origin}"]
    if extra:
        notes.append("fields this harness does not know, kept as they are: " + ", ".join(extra))
    provenance, old_notes = _input_of(data)
    notes.extend(old_notes)
    return ParsedReport(cast(Facts, facts), "document", provenance, tuple(unknowns.for_document(facts)),
                        tuple(dict.fromkeys(notes)))


def _input_of(data: dict[str, Any]) -> tuple[dict[str, tuple[int, str]], list[str]]:
    """Provenance and notes a document made from a pasted report carries (diagnose --from)."""
    given = data.get("input")
    if not isinstance(given, dict):
        return {}, []
    provenance: dict[str, tuple[int, str]] = {}
    given_provenance = given.get("provenance")
    for path, where in (given_provenance.items() if isinstance(given_provenance, dict) else ()):
        if isinstance(where, dict) and isinstance(where.get("line"), int):
            provenance[str(path)] = (int(where["line"]), str(where.get("text", "")))
    given_notes = given.get("notes")
    notes = [n for n in (given_notes if isinstance(given_notes, list) else ()) if isinstance(n, str)]
    return provenance, notes


@functools.lru_cache(maxsize=None)  # noqa: UP033  (functools.cache is 3.9+; the harness runs on 3.8)
def _fields(record: type) -> dict[str, Any]:
    """A facts.py record's fields and their types, evaluated once (facts.py spells them as 3.8 evaluates)."""
    return typing.get_type_hints(record)


def _required(tp: Any) -> Any:
    """Optional[X] -> X: null is allowed wherever a fact is optional, and checked as absent."""
    if typing.get_origin(tp) is typing.Union:
        kinds = [a for a in typing.get_args(tp) if a is not type(None)]
        return kinds[0] if len(kinds) == 1 else tp
    return tp


def _pattern_key(where: str) -> str:
    """'facts.driver.nvml.devices[0].index' -> 'driver.nvml.devices[].index' (the key of FORMATS and RANGES)."""
    return re.sub(r"\[[0-9]+\]", "[]", where[len("facts."):])


def _check_value(value: Any, where: str) -> None:
    """A string in its field's format, a number in its field's range (harness.facts.FORMATS, RANGES)."""
    key = _pattern_key(where)
    if isinstance(value, str) and key in facts_module.FORMATS:
        pattern, allowed = facts_module.FORMATS[key]
        if pattern.fullmatch(value) is None:
            raise ReportError(f"{where}: {shorten(value, 40)} is not allowed; expected {allowed}")
    elif isinstance(value, int) and key in facts_module.RANGES:
        lo, hi = facts_module.RANGES[key]
        if not lo <= value <= hi:
            raise ReportError(f"{where}: {shorten(value, 40)} is out of range; expected {lo} to {hi}")


def _check(value: Any, tp: Any, where: str, extra: list[str]) -> None:
    """Check a value against its facts.py type and format; unknown keys are listed, not refused."""
    tp = _required(tp)
    if value is None or tp is Any:
        return
    kind = typing.get_origin(tp) or tp
    if kind in _KINDS:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ReportError(f"{where}: expected {_KINDS[kind]} or null, got {shorten(value, 40)}")
        _check_value(value, where)
        if kind is list:
            (item_type,) = typing.get_args(tp)
            for i, item in enumerate(cast("list[Any]", value)):
                if item is None:  # a list holds values; null stands for an unknown list, never an item
                    item_kind = _KINDS.get(typing.get_origin(item_type) or item_type, "an object")
                    raise ReportError(f"{where}[{i}]: expected {item_kind}, got null")
                _check(item, item_type, f"{where}[{i}]", extra)
    elif isinstance(tp, type) and hasattr(tp, "__annotations__"):  # a facts.py record (a TypedDict)
        if not isinstance(value, dict):
            raise ReportError(f"{where}: expected an object, got {type(value).__name__}")
        fields = _fields(tp)
        for key, item in value.items():
            if key not in fields:
                extra.append(f"{where}.{key}")
            else:
                _check(item, fields[key], f"{where}.{key}", extra)
