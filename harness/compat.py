"""Compatibility knowledge of the driver / CUDA runtime / torch stack, as checked-in data.

The tables live in `data/compat.json` with their sources; this module loads them once, validates
them (a malformed row names its field), and answers questions as pure functions. The harness and the
host side both ask here, so the matrix's expected verdicts and the harness's diagnosis share one
source of truth.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import datafiles

DATA_FILE = Path(__file__).with_name("data") / "compat.json"

_DRIVER_RE = re.compile(r"^\d{3,4}(\.\d{1,3}){1,2}$")
_CUDA_RE = re.compile(r"^\d{1,2}\.\d{1,2}(\.\d{1,3})?$")
_VARIANT_RE = re.compile(r"^(cpu|cu\d{3,4}|rocm[\d.]+)$")


class CompatDataError(ValueError):
    """The compatibility data is malformed; the message names the field."""


def parse_version(text: str) -> tuple[int, ...]:
    """'535.247.01' -> (535, 247, 1); '12.8' -> (12, 8). Raises ValueError on anything else."""
    parts = text.strip().split(".")
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a dotted version: {text!r}")
    return tuple(int(p) for p in parts)


def cuda_to_int(cuda: str) -> int:
    """'12.8' -> 12080, the encoding of cuDriverGetVersion / cudaRuntimeGetVersion (1000*major + 10*minor)."""
    v = parse_version(cuda)
    return 1000 * v[0] + 10 * (v[1] if len(v) > 1 else 0)


def int_to_cuda(value: int) -> str:
    """12080 -> '12.8'."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def variant_cuda(variant: str) -> str | None:
    """'cu128' -> '12.8', 'cu130' -> '13.0', 'cpu' -> None."""
    m = re.fullmatch(r"cu(\d+)(\d)", variant)
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


def cuda_variant(cuda: str) -> str:
    """'12.8' -> 'cu128'."""
    v = parse_version(cuda)
    return f"cu{v[0]}{v[1] if len(v) > 1 else 0}"


def torch_series(version: str) -> str:
    """'2.14.1+cu130' -> '2.14'."""
    public = version.split("+", 1)[0]
    parts = public.split(".")
    return ".".join(parts[:2])


def public_version(version: str) -> str:
    """'2.14.1+cu130' -> '2.14.1' (what pip's == takes)."""
    return version.split("+", 1)[0]


@dataclass(frozen=True)
class TorchRelease:
    series: str
    default_cuda: str
    variants: tuple[str, ...]
    python_min: str
    python_max: str


@dataclass(frozen=True)
class ArchRule:
    cuda_min: tuple[int, ...]
    cuda_max: tuple[int, ...]
    torch_min: tuple[int, ...]
    torch_max: tuple[int, ...]
    arch: tuple[str, ...]


@dataclass(frozen=True)
class Compat:
    """The validated tables."""

    sources: dict[str, str]
    toolkit_min_driver: tuple[tuple[str, str], ...]
    minor_floor: dict[int, tuple[str, int]]
    branch_cuda: dict[int, str]
    torch_releases: dict[str, TorchRelease]
    arch_rules: tuple[ArchRule, ...]
    index_url: str


def _require(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise CompatDataError(f"{DATA_FILE.name}: {where}: {what}")


def validate(raw: dict[str, Any]) -> Compat:
    """Turn the raw JSON into `Compat`, or raise CompatDataError naming the bad field."""
    _require(raw.get("schema") == "refenv.compat", "schema", "expected 'refenv.compat'")
    sources = raw.get("sources")
    if not isinstance(sources, dict) or not sources:
        raise CompatDataError(f"{DATA_FILE.name}: sources: every table needs its source named")
    for key in ("toolkit", "minor", "branches", "torch", "arch"):
        _require(key in sources, f"sources.{key}", "missing source")

    rows: list[tuple[str, str]] = []
    for i, row in enumerate(raw.get("toolkit_min_driver", [])):
        where = f"toolkit_min_driver[{i}]"
        _require(isinstance(row, list) and len(row) == 2, where, "expected [cuda, driver]")
        _require(bool(_CUDA_RE.match(row[0])), where, f"bad CUDA version {row[0]!r}")
        _require(bool(_DRIVER_RE.match(row[1])), where, f"bad driver version {row[1]!r}")
        if rows:
            _require(parse_version(row[0]) > parse_version(rows[-1][0]), where, "CUDA versions must ascend")
            _require(parse_version(row[1]) >= parse_version(rows[-1][1]), where, "drivers must not descend")
        rows.append((row[0], row[1]))
    _require(bool(rows), "toolkit_min_driver", "empty table")

    floors: dict[int, tuple[str, int]] = {}
    for major, entry in raw.get("minor_version_floor", {}).items():
        where = f"minor_version_floor.{major}"
        _require(major.isdigit(), where, "major must be an integer")
        _require(bool(_DRIVER_RE.match(str(entry.get("driver", "")))), where + ".driver", "bad driver")
        cdv = entry.get("cuda_driver_version")
        _require(isinstance(cdv, int) and cdv == int(major) * 1000, where + ".cuda_driver_version",
                 f"expected {int(major) * 1000}")
        floors[int(major)] = (entry["driver"], cdv)

    branches: dict[int, str] = {}
    for branch, cuda in raw.get("branch_cuda", {}).items():
        _require(branch.isdigit() and bool(_CUDA_RE.match(cuda)), f"branch_cuda.{branch}", "bad entry")
        branches[int(branch)] = cuda

    releases: dict[str, TorchRelease] = {}
    for series, entry in raw.get("torch_releases", {}).items():
        where = f"torch_releases.{series}"
        _require(bool(re.fullmatch(r"\d+\.\d+", series)), where, "series must be MAJOR.MINOR")
        _require(bool(_CUDA_RE.match(entry.get("default", ""))), where + ".default", "bad CUDA version")
        variants = entry.get("variants", [])
        _require(bool(variants) and all(_VARIANT_RE.match(v) for v in variants), where + ".variants",
                 "expected cpu / cuXYZ names")
        py = entry.get("python", [])
        _require(len(py) == 2, where + ".python", "expected [min, max]")
        releases[series] = TorchRelease(series, entry["default"], tuple(variants), py[0], py[1])

    rules: list[ArchRule] = []
    for i, rule in enumerate(raw.get("arch_rules", [])):
        where = f"arch_rules[{i}]"
        try:
            rules.append(ArchRule(
                parse_version(rule["cuda_min"]), parse_version(rule["cuda_max"]),
                parse_version(rule["torch_min"]), parse_version(rule["torch_max"]),
                tuple(rule["arch"]),
            ))
        except (KeyError, ValueError) as exc:
            raise CompatDataError(f"{DATA_FILE.name}: {where}: {exc}") from None
        _require(all(re.fullmatch(r"(sm|compute)_\d+a?", a) for a in rule["arch"]), where + ".arch",
                 "expected sm_XY / compute_XY")

    index_url = raw.get("index_url", "")
    _require("{variant}" in index_url, "index_url", "must contain {variant}")
    return Compat(sources, tuple(rows), floors, branches, releases, tuple(rules), index_url)


@lru_cache(maxsize=1)
def load() -> Compat:
    """The validated tables, read once."""
    return validate(json.loads(datafiles.read(DATA_FILE.name)))


# ---- questions ------------------------------------------------------------------------------


def min_driver_for_cuda(cuda: str, compat: Compat | None = None) -> str | None:
    """The minimum Linux driver with the full feature set of toolkit `cuda` (its first release)."""
    c = compat or load()
    want = parse_version(cuda)[:2]
    for toolkit, driver in c.toolkit_min_driver:
        if parse_version(toolkit)[:2] == want:
            return driver
    # An unlisted minor: the first listed release above it is a safe upper bound.
    for toolkit, driver in c.toolkit_min_driver:
        if parse_version(toolkit)[:2] > want:
            return driver
    return None


def minor_floor(cuda_major: int, compat: Compat | None = None) -> tuple[str, int] | None:
    """(driver, cuda_driver_version) below which a runtime of this major refuses the driver."""
    return (compat or load()).minor_floor.get(cuda_major)


def runtime_accepts(runtime_cuda: str, driver_cuda_version: int, compat: Compat | None = None) -> bool:
    """Whether a CUDA runtime of this version starts on a driver reporting `driver_cuda_version`.

    Minor-version compatibility: a 12.x runtime runs on any driver reporting >= 12000, a 13.x
    runtime needs >= 13000 (measured here; see compat.json sources.minor).
    """
    major = parse_version(runtime_cuda)[0]
    floor = minor_floor(major, compat)
    threshold = floor[1] if floor else cuda_to_int(runtime_cuda)
    return driver_cuda_version >= threshold


def branch_of(driver: str) -> int:
    """'535.247.01' -> 535."""
    return parse_version(driver)[0]


def cuda_for_driver(driver: str, compat: Compat | None = None) -> str | None:
    """The highest CUDA version a Linux driver supports, by its branch (nearest known branch below)."""
    c = compat or load()
    branch = branch_of(driver)
    known = [b for b in c.branch_cuda if b <= branch]
    return c.branch_cuda[max(known)] if known else None


def torch_release(version: str, compat: Compat | None = None) -> TorchRelease | None:
    """The release table row for a torch version string such as '2.14.1+cu130'."""
    return (compat or load()).torch_releases.get(torch_series(version))


def variant_of(version: str, cuda: str | None, compat: Compat | None = None) -> str:
    """The build variant from what torch reports: 'cpu' when torch.version.cuda is None."""
    if cuda is None:
        return "cpu"
    return cuda_variant(cuda)


def best_variant(series: str, driver_cuda_version: int, compat: Compat | None = None) -> str | None:
    """The newest CUDA variant of a torch series that a driver runs.

    Prefers a variant the driver fully supports (its CUDA <= the driver's); failing that, the newest
    one the runtime still accepts through minor-version compatibility (same major).
    """
    c = compat or load()
    release = c.torch_releases.get(series)
    if release is None:
        return None
    cudas = {v: vc for v in release.variants if (vc := variant_cuda(v)) is not None}
    full = [v for v, vc in cudas.items() if cuda_to_int(vc) <= driver_cuda_version]
    minor = [v for v, vc in cudas.items() if runtime_accepts(vc, driver_cuda_version, c)]
    pool = full or minor
    return max(pool, key=lambda v: cuda_to_int(cudas[v])) if pool else None


def newest_torch_for_driver(driver_cuda_version: int, compat: Compat | None = None) -> tuple[str, str] | None:
    """(series, variant) of the newest torch release with a variant this driver runs."""
    c = compat or load()
    for series in sorted(c.torch_releases, key=parse_version, reverse=True):
        variant = best_variant(series, driver_cuda_version, c)
        if variant:
            return series, variant
    return None


def index_url(variant: str, compat: Compat | None = None) -> str:
    return (compat or load()).index_url.format(variant=variant)


def pip_install_line(version: str, variant: str, compat: Compat | None = None) -> str:
    """The exact command that installs `torch==version` in `variant` from PyTorch's index."""
    return f"pip install torch=={public_version(version)} --index-url {index_url(variant, compat)}"


def arch_list(version: str, cuda: str, compat: Compat | None = None) -> tuple[str, ...] | None:
    """The compiled architectures of the torch `version` wheel built for `cuda`, if the rules know it."""
    c = compat or load()
    series = parse_version(torch_series(version))
    cu = parse_version(cuda)[:2]
    for rule in c.arch_rules:
        if rule.cuda_min[:2] <= cu <= rule.cuda_max[:2] and rule.torch_min <= series <= rule.torch_max:
            return rule.arch
    return None


def parse_arch_list(text: str) -> tuple[str, ...]:
    """'sm_75 sm_80 compute_90' (torch._C._cuda_getArchFlags) -> ('sm_75', 'sm_80', 'compute_90')."""
    return tuple(t for t in re.split(r"[\s,;]+", text.strip()) if t)


def arch_supports(capability: str, arches: tuple[str, ...] | list[str]) -> bool:
    """Whether a device of compute capability 'X.Y' can run a wheel compiled for `arches`.

    A cubin for sm_XY runs on devices of the same major with minor >= Y (architecture-specific
    'a' cubins only on X.Y itself); PTX for compute_XY is JIT-compiled for any device >= X.Y
    (CUDA C Programming Guide, "Binary Compatibility" and "PTX Compatibility").
    """
    major, minor = (int(p) for p in capability.split(".")[:2])
    for arch in arches:
        m = re.fullmatch(r"(sm|compute)_(\d+?)(\d)(a|f)?", arch)
        if not m:
            continue
        kind, amaj, amin, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if kind == "sm":
            if suffix == "a" and (amaj, amin) == (major, minor):
                return True
            if suffix != "a" and amaj == major and amin <= minor:
                return True
        elif (amaj, amin) <= (major, minor):
            return True
    return False


def sm_name(capability: str) -> str:
    """'12.0' -> 'sm_120'."""
    major, minor = capability.split(".")[:2]
    return f"sm_{major}{minor}"
