"""Which torch build and Python can be had here, and the nearest one when the exact one cannot (pure).

A build comes from PyPI (each release's default Linux build), from PyTorch's own index (every other
variant, when that index is reachable), or from a wheel already on disk. Python comes from a base image
(a Debian suite, `refenv.model.suites.SUITE_PYTHON`) within the release's supported range (compat.json).
A substitute keeps the CUDA major of what was asked for, since the major decides which drivers accept
the runtime (facts/cuda-compat.md, "Minor-version compatibility"); every substitution is named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness import compat

PYPI, INDEX, LOCAL = "PyPI", "PyTorch's index", "a wheel on disk"
DEFAULT_PYTHON = "3.11"  # the default base's (Debian bookworm)


@dataclass(frozen=True)
class Offer:
    """What this machine can fetch: PyTorch's index or not, wheels on disk, the bases' Pythons."""

    pytorch_index: bool
    local: frozenset[tuple[str, str, str]]   # (torch release, variant, python) of wheels pip finds on disk
    pythons: tuple[str, ...]                 # the Pythons a base image can have
    cached: frozenset[tuple[str, str, str]] = frozenset()  # the same, already in refenv's wheelhouse


@dataclass(frozen=True)
class Build:
    torch: str
    variant: str
    python: str
    source: str
    substitutions: tuple[str, ...] = ()


def _minor(python: str) -> int:
    return compat.parse_version(python)[1]


def pythons_for(torch: str, offer: Offer) -> list[str]:
    """The bases' Pythons the release supports (all of them for a release refenv does not know)."""
    release = compat.torch_release(torch)
    if release is None:
        return list(offer.pythons)
    lo, hi = compat.parse_version(release.python_min), compat.parse_version(release.python_max)
    return [p for p in offer.pythons if lo <= compat.parse_version(p) <= hi]


def by_nearness(wanted: str | None, pythons: list[str]) -> list[str]:
    """Pythons nearest the wanted one first; ties go to the default base's, then the newer."""
    target = _minor(wanted) if wanted else _minor(DEFAULT_PYTHON)
    return sorted(pythons, key=lambda p: (abs(_minor(p) - target), p != DEFAULT_PYTHON, -_minor(p)))


def source_of(torch: str, variant: str, python: str, offer: Offer) -> str | None:
    """Where this exact build comes from here, or None when it cannot be had."""
    release = compat.torch_release(torch)
    if (torch, variant, python) in offer.local:
        return LOCAL
    if release is not None and compat.cuda_variant(release.default_cuda) == variant:
        return PYPI
    if offer.pytorch_index and (release is None or variant in release.variants):
        return INDEX
    return None


def _major(variant: str) -> int | None:
    cuda = compat.variant_cuda(variant)
    return compat.parse_version(cuda)[0] if cuda else None


def _candidates(torch: str, variant: str, offer: Offer) -> list[tuple[str, str, str]]:
    """(release, variant, why) to try, the asked-for build first, then substitutes by nearness."""
    out = [(torch, variant, "")]
    major = _major(variant)
    release = compat.torch_release(torch)
    if release is not None and major is not None and _major(compat.cuda_variant(release.default_cuda)) == major:
        default = compat.cuda_variant(release.default_cuda)
        out.append((torch, default, f"the PyPI build of torch {torch} ({default}, the same CUDA major)"))
    if major is None:  # a CPU build: any CPU wheel on disk, nearest release first
        local = sorted({(t, v) for t, v, _ in offer.local if v == "cpu"}, key=lambda tv: _distance(torch, tv[0]))
        out += [(t, v, f"torch {t}+cpu, a CPU build on disk") for t, v in local]
        return out
    table = compat.load().torch_releases
    for series in sorted(table, key=lambda s: _distance(torch, f"{s}.0")):
        default = compat.cuda_variant(table[series].default_cuda)
        if _major(default) == major and series != compat.torch_series(torch):
            out.append((version_in(series, default, offer), default,
                        f"torch {series} from PyPI ({default}), the nearest release with a CUDA {major} build here"))
    return out


def _distance(a: str, b: str) -> tuple[int, int]:
    """How far apart two releases are: by series in the release table, then newer first."""
    order = sorted(compat.load().torch_releases, key=compat.parse_version)
    def index(v: str) -> int:
        series = compat.torch_series(v)
        return order.index(series) if series in order else len(order)
    return abs(index(a) - index(b)), -index(b)


def version_in(series: str, variant: str, offer: Offer) -> str:
    """The newest release of a series with this variant on disk, else its first release."""
    found = [t for t, v, _ in offer.local | offer.cached if v == variant and compat.torch_series(t) == series]
    return max(found, key=compat.parse_version) if found else f"{series}.0"


def choose(torch: str, variant: str, python: str | None, os_name: str, offer: Offer,
           accept: Callable[[Build], bool] | None = None) -> Build | None:
    """The asked-for Linux build, or the nearest one that can be had (and that `accept` takes), with every
    substitution said; None when nothing fits."""
    head: list[str] = []
    if os_name != "Linux":
        head.append(f"a {os_name} report: reproduced with a Linux x86_64 build (containers run Linux)")
    for cand_torch, cand_variant, why in _candidates(torch, variant, offer):
        for py in by_nearness(python, pythons_for(cand_torch, offer)):
            source = source_of(cand_torch, cand_variant, py, offer)
            if source is None:
                continue
            notes = list(head)
            if why:
                reason = ("PyTorch's index is not reachable from here" if not offer.pytorch_index
                          else "it is not offered")
                notes.append(f"torch {torch}+{variant} cannot be had ({reason}): using {why}")
            if python and py != python:
                notes.append(f"Python {python}: no base image here has it for torch {cand_torch}; using Python "
                             f"{py} (bases: {', '.join(offer.pythons)})")
            build = Build(cand_torch, cand_variant, py, source, tuple(notes))
            if accept is None or accept(build):
                return build
    return None
