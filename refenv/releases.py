"""One torch release as compat.json knows it: its builds, each build's CUDA, minimum drivers and GPU
architectures, and the line that installs it (pure, over harness.compat's tables).

`refenv compat 2.14` prints it; the MCP server's `compat` tool answers it.
"""

from __future__ import annotations

import re
from typing import Any

from harness import compat

_RELEASE = re.compile(r"^\d{1,2}\.\d{1,3}(\.\d{1,3})?$")


class UnknownRelease(ValueError):
    """A release compat.json has no row for, or text that is no release; the message says which ones it has."""


def release_facts(version: str, table: compat.Compat | None = None) -> dict[str, Any]:
    """{'series', 'default_cuda', 'python', 'requires', 'builds': [{'variant', 'cuda', 'min_driver',
    'min_driver_minor_compat', 'architectures', 'install'}]} for '2.14' or '2.14.1'."""
    c = table or compat.load()
    text = version.strip()
    if not _RELEASE.match(text):
        raise UnknownRelease(f"{version!r} is not a torch release; give one such as 2.14 or 2.14.1")
    series = compat.torch_series(text)
    rel = compat.torch_release(series, c)
    if rel is None:
        known = ", ".join(c.torch_releases)
        raise UnknownRelease(f"torch {series} is not in compat.json (it knows {known}); `refenv compat refresh` "
                             "reads newer releases from the package index")
    exact = text if text.count(".") == 2 else f"{series}.0"
    builds = []
    for variant in rel.variants:
        cuda = compat.variant_cuda(variant)
        floor = compat.minor_floor(compat.parse_version(cuda)[0], c) if cuda else None
        arch = compat.arch_list(exact, cuda, c) if cuda else None
        builds.append({
            "variant": variant,
            "cuda": cuda,
            "min_driver": compat.min_driver_for_cuda(cuda, c) if cuda else None,
            "min_driver_minor_compat": floor[0] if floor else None,
            "architectures": list(arch) if arch is not None else None,
            "install": compat.pip_install_line(exact, variant, c),
        })
    return {"series": series, "default_cuda": rel.default_cuda, "python": [rel.python_min, rel.python_max],
            "requires": list(rel.requires), "builds": builds}


def lines(facts: dict[str, Any]) -> list[str]:
    """The release as text, a build a line."""
    out = [f"torch {facts['series']}: default CUDA {facts['default_cuda']}, Python {facts['python'][0]}-"
           f"{facts['python'][1]}" + (f", needs {', '.join(facts['requires'])}" if facts["requires"] else "")]
    for b in facts["builds"]:
        if b["cuda"] is None:
            out.append(f"  {b['variant']:<7} no CUDA  {b['install']}")
            continue
        arch = " ".join(b["architectures"]) if b["architectures"] is not None else "architectures unknown"
        out.append(f"  {b['variant']:<7} CUDA {b['cuda']}: driver >= {b['min_driver']} (>= "
                   f"{b['min_driver_minor_compat']} with minor-version compatibility); {arch}")
        out.append(f"          {b['install']}")
    return out
