"""The builds an index lists, folded into compat.json's torch table, told apart from it, and written into it (pure).

compat.json keeps one row per torch series ('2.15'): the CUDA its PyPI wheel bundles (`default`), the builds
PyTorch publishes (`variants`: cuXYZ and cpu), the CPython versions (`python`: [oldest, newest]). A refresh
reads what an index says of each series and names every difference: a new release, a new build, Pythons
added or dropped, another default CUDA, and GPU architectures added or dropped where a wheel was at hand to
read (refenv/refresh/archs.py); elsewhere it says they are unknown. An index lists only its own builds
(PyPI the default one, download.pytorch.org/whl/cu130 the cu130 ones), so a build missing from it is never
read as dropped.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from harness import compat
from refenv.refresh.builds import Build, python_floor

_VARIANT = re.compile(r"^(cpu|cu\d{3,4}|rocm[\d.]+)$")


@dataclass(frozen=True)
class Seen:
    """One series as the index shows it."""

    series: str
    versions: tuple[str, ...]
    default: str | None               # the CUDA of the plain-version (PyPI) build; None when the index has none
    variants: tuple[str, ...]
    python: tuple[str, str] | None    # (oldest, newest)
    builds: tuple[Build, ...]


def _variant_key(v: str) -> tuple[int, int]:
    """cuXYZ ascending by number, then rocm, then cpu (compat.json's order)."""
    if v.startswith("cu"):
        return (0, int(v[2:]))
    return (1, 0) if v.startswith("rocm") else (2, 0)


def _key(series: str) -> tuple[int, ...]:
    return compat.parse_version(series)


def fold(builds: list[Build]) -> dict[str, Seen]:
    """The builds by series."""
    by: dict[str, list[Build]] = {}
    for b in builds:
        if _VARIANT.match(b.variant):
            by.setdefault(b.series, []).append(b)
    out = {}
    for series, bs in sorted(by.items(), key=lambda kv: _key(kv[0])):
        plain = [b for b in bs if not b.local and b.cuda]
        pythons = sorted({p for b in bs for p in b.pythons}, key=compat.parse_version)
        floors = [f for f in (python_floor(b.requires_python) for b in bs) if f]
        if floors:
            floor = min(floors, key=compat.parse_version)
            pythons = [p for p in pythons if compat.parse_version(p) >= compat.parse_version(floor)]
        newest = max(plain, key=lambda b: compat.parse_version(b.version.split("+")[0])) if plain else None
        out[series] = Seen(series, tuple(sorted({b.version for b in bs})), newest.cuda if newest else None,
                           tuple(sorted({b.variant for b in bs}, key=_variant_key)),
                           (pythons[0], pythons[-1]) if pythons else None, tuple(bs))
    return out


@dataclass(frozen=True)
class Change:
    series: str
    kind: str          # 'new release', 'new build', 'python', 'default CUDA', 'architectures'
    text: str


def _pythons(p: tuple[str, str] | list[str]) -> str:
    return f"{p[0]}-{p[1]}"


def _arch_changes(s: Seen, table: compat.Compat) -> list[Change]:
    out = []
    for b in s.builds:
        if b.cuda is None:
            continue
        if b.archs is None:
            out.append(Change(s.series, "architectures", f"{b.version}: architectures {b.arch_source}"))
            continue
        known = compat.arch_list(b.version, b.cuda, table)
        if known is None:
            out.append(Change(s.series, "architectures", f"{b.version}: {' '.join(b.archs)} ({b.arch_source}); "
                                                         "no arch rule of compat.json covers it"))
            continue
        added = [a for a in b.archs if a not in known]
        dropped = [a for a in known if a not in b.archs]
        if added or dropped:
            said = "; ".join(x for x in (f"added {' '.join(added)}" if added else "",
                                         f"dropped {' '.join(dropped)}" if dropped else "") if x)
            out.append(Change(s.series, "architectures", f"{b.version}: {said} ({b.arch_source})"))
    return out


def diff(raw: dict[str, Any], seen: dict[str, Seen], table: compat.Compat) -> list[Change]:
    """Every difference between compat.json (raw, and validated as `table`) and what the index shows."""
    releases = raw.get("torch_releases", {})
    out: list[Change] = []
    for series, s in seen.items():
        row = releases.get(series)
        if row is None:
            default = f"default CUDA {s.default}" if s.default else "default CUDA unknown (the index has no PyPI build)"
            py = f"Python {_pythons(s.python)}" if s.python else "Python unknown"
            out.append(Change(series, "new release", f"torch {series} ({', '.join(s.versions)}): builds "
                                                     f"{', '.join(s.variants)}; {default}; {py}"))
        else:
            new = [v for v in s.variants if v not in row.get("variants", [])]
            if new:
                out.append(Change(series, "new build", f"torch {series}: new builds {', '.join(new)}"))
            if s.python and list(s.python) != list(row.get("python", [])):
                out.append(Change(series, "python", f"torch {series}: Python {_pythons(row.get('python', ['?', '?']))}"
                                                    f" -> {_pythons(s.python)}"))
            if s.default and s.default != row.get("default"):
                out.append(Change(series, "default CUDA", f"torch {series}: default CUDA {row.get('default')} -> "
                                                          f"{s.default}"))
        out.extend(_arch_changes(s, table))
    return out


def merged(raw: dict[str, Any], seen: dict[str, Seen], source: str) -> dict[str, Any]:
    """compat.json with what the index shows written in: new series added, builds added, Pythons and the default
    CUDA as the index has them; every source kept, and this refresh named under `sources.torch_index`."""
    out = copy.deepcopy(raw)
    releases: dict[str, Any] = out.setdefault("torch_releases", {})
    for series, s in seen.items():
        row = releases.get(series)
        if row is None:
            default = s.default or max((compat.variant_cuda(v) for v in s.variants if v.startswith("cu")),
                                       key=lambda c: compat.parse_version(c or "0"), default=None)
            if default is None or s.python is None:
                continue  # a series without a CUDA build or without a CPython wheel is no row of this table
            releases[series] = {"default": default, "variants": list(s.variants), "python": list(s.python)}
            continue
        row["variants"] = sorted(set(row.get("variants", [])) | set(s.variants), key=_variant_key)
        if s.python:
            row["python"] = list(s.python)
        if s.default:
            row["default"] = s.default
    out["torch_releases"] = dict(sorted(releases.items(), key=lambda kv: _key(kv[0])))
    sources: dict[str, str] = out.setdefault("sources", {})
    sources["torch_index"] = source
    return out
