"""`refenv compat refresh`: torch's releases read from a package index (no wheel downloaded), told apart from
harness/data/compat.json, and written into it on request.

`index` reads the index (PEP 691 JSON or PEP 503 HTML, PEP 658 metadata or ranged reads through `remotezip`),
`builds` and `table` judge what it said (pure), `archs` reads a wheel's architectures where one is at hand.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import compat
from refenv.refresh import archs, builds, index, table

PYPI = "https://pypi.org/simple"


@dataclass(frozen=True)
class Refresh:
    indexes: tuple[str, ...]
    builds: tuple[builds.Build, ...]
    seen: dict[str, table.Seen]
    changes: tuple[table.Change, ...]
    notes: tuple[str, ...]          # what could not be read, said


def _oldest_series(raw: dict[str, Any]) -> tuple[int, ...]:
    keys = [compat.parse_version(s) for s in raw.get("torch_releases", {})]
    return min(keys) if keys else (0,)


def read_index(url: str, oldest: tuple[int, ...], wheelhouse: Path) -> tuple[list[builds.Build], list[str]]:
    """The builds one index lists: per series at or above `oldest`, its newest release of each build (the table
    is per series), with the metadata of one wheel of it."""
    files = [f for f in index.project_files(url) if not f.yanked]
    by_name = {f.filename: f for f in files}
    grouped = builds.group([f.filename for f in files])
    newest: dict[tuple[str, str], str] = {}
    for version, wheels in grouped.items():
        w = wheels[0][1]
        series = compat.torch_series(w.public)
        if compat.parse_version(series) < oldest:
            continue
        key = (series, w.local)
        if key not in newest or compat.parse_version(w.public) > compat.parse_version(newest[key].split("+")[0]):
            newest[key] = version
    out, notes = [], []
    for version in sorted(newest.values(), key=lambda v: compat.parse_version(v.split("+")[0])):
        wheels = grouped[version]
        text, how = index.metadata(by_name[builds.representative(wheels)])
        meta = builds.read_metadata(text) if text is not None else None
        if meta is None:
            notes.append(f"{version}: metadata not read: {how}")
        out.append(archs.with_archs(builds.build_of(version, wheels, meta, how), wheelhouse))
    return out, notes


def refresh(indexes: list[str], raw: dict[str, Any], wheelhouse: Path) -> Refresh:
    """Read every index and tell what it shows apart from compat.json (`raw`)."""
    found: list[builds.Build] = []
    notes: list[str] = []
    oldest = _oldest_series(raw)
    for url in indexes:
        got, said = read_index(url, oldest, wheelhouse)
        found += got
        notes += [f"{url}: {n}" for n in said]
        if not got:
            notes.append(f"{url}: lists no torch wheel of series {'.'.join(map(str, oldest))} or newer")
    seen = table.fold(found)
    changes = table.diff(raw, seen, compat.validate(raw))
    return Refresh(tuple(indexes), tuple(found), seen, tuple(changes), tuple(notes))


def source_line(r: Refresh, today: datetime.date | None = None) -> str:
    when = (today or datetime.date.today()).isoformat()
    return (f"read by `refenv compat refresh` on {when} from {', '.join(r.indexes)} (PEP 691/503 project pages, "
            f"each build's core metadata: PEP 658, or the wheel's METADATA through ranged reads): series "
            f"{', '.join(r.seen)}")


def lines(r: Refresh) -> list[str]:
    """The refresh as text: what differs from compat.json, then what could not be read."""
    real = [c for c in r.changes if c.kind != "architectures" or "unknown" not in c.text]
    unknown = [c for c in r.changes if c not in real]
    out = [f"compat refresh: {len(r.builds)} builds of {len(r.seen)} series read from {', '.join(r.indexes)}"]
    out += [f"  {c.kind:<14} {c.text}" for c in real] or ["  compat.json already says what the index says"]
    if unknown:
        out.append(f"  architectures unknown for {len(unknown)} builds:")
        out += [f"    {c.text.replace(': architectures unknown: ', ': ')}" for c in unknown]
    out += [f"  note: {n}" for n in r.notes]
    return out


def _rows(values: dict[str, Any], pad: bool) -> list[str]:
    """An object's members one a line, as compat.json writes them (its keys padded to one width where `pad`)."""
    width = max((len(json.dumps(k)) for k in values), default=0) + 1
    return [f"    {(json.dumps(k) + ':').ljust(width + 1) if pad else json.dumps(k) + ': '}"
            f"{json.dumps(v, ensure_ascii=False)}" + ("," if i < len(values) - 1 else "")
            for i, (k, v) in enumerate(values.items())]


def splice(text: str, key: str, values: dict[str, Any], pad: bool) -> str:
    """compat.json's text with one top-level object written anew, one member a line; the rest kept as written."""
    m = re.search(rf'^  "{re.escape(key)}": \{{\n(?P<body>.*?)^  \}}', text, re.M | re.S)
    if m is None:
        raise ValueError(f"compat.json: no top-level object {key!r} to write")
    body = "\n".join(_rows(values, pad)) + "\n"
    return text[:m.start("body")] + body + text[m.end("body"):]


def write(raw: dict[str, Any], r: Refresh, path: Path) -> dict[str, Any]:
    """compat.json with the refresh written in (its torch table and its sources; every other line as it was),
    checked by the loader's own validation before it is written."""
    new = table.merged(raw, r.seen, source_line(r))
    compat.validate(new)
    text = path.read_text(encoding="utf-8")
    text = splice(splice(text, "torch_releases", new["torch_releases"], True), "sources", new["sources"], False)
    if json.loads(text) != new:
        raise ValueError("compat.json: the written text does not read back as the refreshed table")
    path.write_text(text, encoding="utf-8")
    return new
