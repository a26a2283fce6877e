"""Which release of an extension goes with a torch release: the checked-in table `data/pairings.json`.

Each distribution names how its matching build is had (`how`): `paired` (a release per torch release, in the
table), `index` (PyTorch's index has a build pinned to each torch), `source` (built against the installed
torch), `per-cuda` (one library per CUDA version inside the wheel), `cuda-named` (one wheel per CUDA major),
`torch-pin` (the version torch's own metadata pins). Every row names its source; the table is validated
when first read, and a malformed row names its distribution and field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import datafiles

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "pairings.json"
HOWS = ("paired", "index", "source", "per-cuda", "cuda-named", "torch-pin")
_VERSION_RE = re.compile(r"\d{1,4}(\.\d{1,4}){1,3}")


class PairingError(ValueError):
    """The pairing table is malformed; the message names the distribution and the field."""


@dataclass(frozen=True)
class Pair:
    torch: str      # a release ('2.14.1') or a series ('2.14')
    version: str    # the extension's release, or its series
    source: str


@dataclass(frozen=True)
class Rule:
    how: str
    source: str
    pairs: tuple[Pair, ...]


@dataclass(frozen=True)
class Match:
    """The extension release for a torch release: a pip requirement and where the pairing comes from."""

    requirement: str   # 'torchvision==0.29.1' or 'torchvision==0.27.*'
    source: str        # the source's words


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise PairingError(f"{DATA_FILE.name}: {where}: {what}")


def validate(data: Any) -> tuple[dict[str, str], dict[str, Rule]]:
    _need(isinstance(data, dict) and data.get("schema") == "refenv.pairings", "schema", "expected refenv.pairings")
    sources = data.get("sources")
    _need(isinstance(sources, dict) and all(isinstance(v, str) and v for v in sources.values()), "sources",
          "a name -> description map")
    rules: dict[str, Rule] = {}
    for name, raw in (data.get("distributions") or {}).items():
        where = f"distributions.{name}"
        _need(isinstance(raw, dict) and raw.get("how") in HOWS, f"{where}.how", f"one of {', '.join(HOWS)}")
        _need(raw.get("source") in sources, f"{where}.source", "one of the named sources")
        pairs = []
        for i, row in enumerate(raw.get("pairs") or []):
            at = f"{where}.pairs[{i}]"
            _need(isinstance(row, dict), at, "expected {torch, version, source}")
            for key in ("torch", "version"):
                _need(isinstance(row.get(key), str) and bool(_VERSION_RE.fullmatch(row[key])), f"{at}.{key}",
                      "a release such as 2.14.1 or a series such as 2.14")
            _need(row.get("source") in sources, f"{at}.source", "one of the named sources")
            pairs.append(Pair(row["torch"], row["version"], row["source"]))
        rules[name] = Rule(raw["how"], raw["source"], tuple(pairs))
    return dict(sources), rules


@lru_cache(maxsize=1)
def table() -> tuple[dict[str, str], dict[str, Rule]]:
    return validate(json.loads(datafiles.read(DATA_FILE.name)))


def rule(dist: str) -> Rule | None:
    """How a distribution's matching build is had (cupy-cuda12x is `cupy`), or None for one the table lacks."""
    rules = table()[1]
    key = dist.lower().replace("_", "-")
    return rules.get(key) or rules.get(key.split("-cuda")[0] if key.startswith("cupy") else "")


def paired(dist: str, torch_version: str) -> Match | None:
    """The release of `dist` paired with this torch: the exact release first, then its series."""
    found = rule(dist)
    if found is None or not found.pairs:
        return None
    public = torch_version.split("+", 1)[0]
    series = ".".join(public.split(".")[:2])
    for wanted in (public, series):
        row = next((p for p in found.pairs if p.torch == wanted), None)
        if row is not None:
            exact = row.version.count(".") >= 2
            spec = f"=={row.version}" if exact else f"=={row.version}.*"
            return Match(f"{dist}{spec}", table()[0][row.source])
    return None
