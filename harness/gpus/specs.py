"""GPU spec sheets as checked-in data, and which row describes the device in hand.

The rows live in `data/gpu_specs.json`, each with its source; `load()` validates them once and a
malformed row names its field. A device is matched by name and confirmed by its SM count and memory
size, because names alone are ambiguous ("NVIDIA H100 80GB HBM3" says nothing of SXM or PCIe).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import datafiles

if TYPE_CHECKING:
    from harness.schema.probe_document import SpecMatchInfo

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "gpu_specs.json"
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
_LINKS = ("pcie3", "pcie4", "pcie5")
# A device reports a little less memory than its nominal size (ECC, reserved pages): an H200 shows
# 140.4 GiB of its 141 GB, a T4 with ECC 14.8 GiB of 16 GB (nvidia-smi on those parts).
_MEMORY_RATIO = (0.88, 1.06)
_SM_SLACK_INFERRED = 2


class SpecDataError(ValueError):
    """The spec table is malformed; the message names the row and field."""


@dataclass(frozen=True)
class GpuSpec:
    """One spec-sheet row: dense peaks, bandwidth, host link and the hardware that confirms it."""

    id: str
    name: str
    aliases: tuple[str, ...]
    family: str
    match: str | None
    exclude: str | None
    memory_gb: tuple[float, ...]
    bandwidth_gbps: float
    tflops: dict[str, float | None]
    host_link: str
    host_link_gbps: float
    sm_count: int | None
    compute_capability: str
    l2_mb: float | None
    inferred: tuple[str, ...]
    source: str
    cuda_memory_mib: tuple[int, ...] = ()   # what CUDA / nvidia-smi report, one per memory_gb size
    cuda_memory_source: str = ""
    nvml_names: tuple[str, ...] = ()        # what NVML / nvidia-smi call it, one per memory_gb size

    def cuda_memory_bytes(self) -> tuple[int, ...]:
        """Device memory as CUDA reports it, one per size; the datasheet's GB (1e9 B) where not recorded."""
        if self.cuda_memory_mib:
            return tuple(m << 20 for m in self.cuda_memory_mib)
        return tuple(round(g * 1e9) for g in self.memory_gb)

    def peak_tflops(self, dtype: str) -> float | None:
        """The dense peak for `dtype`, or None where the part has no such unit."""
        return self.tflops.get(dtype)


@dataclass(frozen=True)
class SpecMatch:
    """Which row applies, on what basis, and why (or why none)."""

    spec: GpuSpec | None
    basis: str | None  # "name+hardware", "hardware", "name-only"
    reason: str
    candidates: tuple[str, ...] = ()

    def info(self) -> SpecMatchInfo:
        """What the probe document says of the match."""
        # imported here: the GPU table is read by the matrix's model and `refenv check`, which write no probe document
        from harness.schema.probe_document import SpecMatchInfo

        return SpecMatchInfo(self.spec.id if self.spec else None, self.basis, self.reason, self.candidates)

    def row(self) -> dict[str, Any] | None:
        """The matched row as the table has it, less what only matching needs."""
        if self.spec is None:
            return None
        return {k: v for k, v in asdict(self.spec).items() if k not in ("family", "match", "exclude", "aliases")}


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise SpecDataError(f"{DATA_FILE.name}: {where}: {what}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _row(raw: dict[str, Any], links: dict[str, float], where: str) -> GpuSpec:
    for key in ("id", "name", "family", "source", "compute_capability", "host_link"):
        _need(isinstance(raw.get(key), str) and bool(raw[key]), f"{where}.{key}", "expected a non-empty string")
    for key in ("family", "match", "exclude"):
        if raw.get(key) is not None:
            try:
                re.compile(raw[key])
            except re.error as exc:
                raise SpecDataError(f"{DATA_FILE.name}: {where}.{key}: bad pattern: {exc}") from None
    memory: Any = raw.get("memory_gb")
    _need(isinstance(memory, list) and bool(memory) and all(_number(m) for m in memory),
          f"{where}.memory_gb", "expected a list of positive sizes in GB")
    _need(_number(raw.get("bandwidth_gbps")), f"{where}.bandwidth_gbps", "expected a positive number (GB/s)")
    tflops: Any = raw.get("tflops")
    _need(isinstance(tflops, dict) and set(tflops) == set(DTYPES), f"{where}.tflops",
          f"expected exactly the keys {', '.join(DTYPES)}")
    for dtype, value in tflops.items():
        _need(value is None or _number(value), f"{where}.tflops.{dtype}", "expected a positive number or null")
    _need(tflops["fp32"] is not None, f"{where}.tflops.fp32", "every GPU has an FP32 peak")
    _need(raw["host_link"] in links, f"{where}.host_link", f"expected one of {', '.join(_LINKS)}")
    sms = raw.get("sm_count")
    _need(sms is None or (isinstance(sms, int) and sms > 0), f"{where}.sm_count", "expected a positive integer")
    _need(bool(re.fullmatch(r"\d+\.\d+", raw["compute_capability"])), f"{where}.compute_capability",
          "expected MAJOR.MINOR")
    l2 = raw.get("l2_mb")
    _need(l2 is None or _number(l2), f"{where}.l2_mb", "expected a positive number or null")
    cuda: Any = raw.get("cuda_memory_mib", [])
    _need(isinstance(cuda, list) and all(isinstance(m, int) and m > 0 for m in cuda)
          and len(cuda) in (0, len(memory)), f"{where}.cuda_memory_mib",
          "expected positive MiB, one per memory_gb size")
    _need(not cuda or (isinstance(raw.get("cuda_memory_source"), str) and bool(raw["cuda_memory_source"])),
          f"{where}.cuda_memory_source", "name where the CUDA-visible memory figure comes from")
    nvml: Any = raw.get("nvml_names", [])
    _need(isinstance(nvml, list) and all(isinstance(n, str) and n for n in nvml)
          and len(nvml) in (0, len(memory)) and (not nvml or (len(cuda) == len(memory) and sms is not None)),
          f"{where}.nvml_names", "expected NVML's names, one per memory_gb size, beside cuda_memory_mib and sm_count")
    return GpuSpec(
        id=raw["id"], name=raw["name"], aliases=tuple(raw.get("aliases", ())), family=raw["family"],
        match=raw.get("match"), exclude=raw.get("exclude"), memory_gb=tuple(float(m) for m in memory),
        bandwidth_gbps=float(raw["bandwidth_gbps"]),
        tflops={k: (None if v is None else float(v)) for k, v in tflops.items()},
        host_link=raw["host_link"], host_link_gbps=links[raw["host_link"]], sm_count=sms,
        compute_capability=raw["compute_capability"], l2_mb=None if l2 is None else float(l2),
        inferred=tuple(raw.get("inferred", ())), source=raw["source"],
        cuda_memory_mib=tuple(cuda), cuda_memory_source=str(raw.get("cuda_memory_source", "")),
        nvml_names=tuple(nvml),
    )


def validate(raw: dict[str, Any]) -> tuple[GpuSpec, ...]:
    """Turn the raw JSON into spec rows, or raise SpecDataError naming the bad field."""
    _need(raw.get("schema") == "refenv.gpu_specs", "schema", "expected 'refenv.gpu_specs'")
    links_raw = raw.get("host_links", {})
    _need(isinstance(links_raw.get("source"), str), "host_links.source", "name the source of the link rates")
    links = {}
    for link in _LINKS:
        _need(_number(links_raw.get(link)), f"host_links.{link}", "expected GB/s per direction")
        links[link] = float(links_raw[link])
    rows: Any = raw.get("gpus")
    _need(isinstance(rows, list) and bool(rows), "gpus", "expected a non-empty list")
    specs = tuple(_row(r, links, f"gpus[{i}]") for i, r in enumerate(rows))
    names = [n.lower() for s in specs for n in (s.id, *s.aliases)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    _need(not dupes, "gpus", f"ids and aliases must be unique: {', '.join(dupes)}")
    nvml = [n.lower() for s in specs for n in s.nvml_names]
    dupes = sorted({n for n in nvml if nvml.count(n) > 1})
    _need(not dupes, "gpus", f"NVML names must be unique: {', '.join(dupes)}")
    return specs


@dataclass(frozen=True)
class ProductLine:
    """A product line's compute capability, for GPU names no spec row describes."""

    pattern: re.Pattern[str]
    compute_capability: str


def validate_lines(raw: dict[str, Any]) -> tuple[ProductLine, ...]:
    """The product lines of the table, or SpecDataError naming the bad field."""
    block: Any = raw.get("product_lines")
    _need(isinstance(block, dict) and isinstance(block.get("source"), str) and bool(block["source"]),
          "product_lines.source", "name the source of the product lines")
    lines: Any = block.get("lines")
    _need(isinstance(lines, list) and bool(lines), "product_lines.lines", "expected a non-empty list")
    out = []
    for i, line in enumerate(lines):
        where = f"product_lines.lines[{i}]"
        _need(isinstance(line, dict) and isinstance(line.get("pattern"), str), f"{where}.pattern", "expected a pattern")
        _need(bool(re.fullmatch(r"\d+\.\d+", str(line.get("compute_capability")))), f"{where}.compute_capability",
              "expected MAJOR.MINOR")
        try:
            out.append(ProductLine(re.compile(line["pattern"]), line["compute_capability"]))
        except re.error as exc:
            raise SpecDataError(f"{DATA_FILE.name}: {where}.pattern: bad pattern: {exc}") from None
    return tuple(out)


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(datafiles.read(DATA_FILE.name))
    return data


@lru_cache(maxsize=1)
def load() -> tuple[GpuSpec, ...]:
    """The validated spec rows, read once."""
    return validate(_raw())


@lru_cache(maxsize=1)
def product_lines() -> tuple[ProductLine, ...]:
    """The validated product lines, read once."""
    return validate_lines(_raw())


def find_spec(key: str, specs: tuple[GpuSpec, ...] | None = None) -> GpuSpec | None:
    """The row whose id or alias is `key` (case-insensitive), or None."""
    want = key.strip().lower()
    for spec in specs or load():
        if want in (n.lower() for n in (spec.id, *spec.aliases)):
            return spec
    return None


def normalize_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'rtx 4090'; 'Tesla V100-SXM2-16GB' -> 'v100 sxm2 16gb'."""
    text = re.sub(r"[-_/]+", " ", name.lower())
    text = re.sub(r"\b(nvidia|tesla|geforce)\b", " ", text)
    return " ".join(text.split())


def _hardware_agrees(spec: GpuSpec, sm_count: int | None, memory_bytes: int | None) -> bool:
    if sm_count is not None and spec.sm_count is not None:
        slack = _SM_SLACK_INFERRED if "sm_count" in spec.inferred else 0
        if abs(sm_count - spec.sm_count) > slack:
            return False
    if memory_bytes is not None:
        gib = memory_bytes / 2**30
        lo, hi = _MEMORY_RATIO
        if not any(lo <= gib / nominal <= hi for nominal in spec.memory_gb):
            return False
    return True


def match_spec(name: str, sm_count: int | None, memory_bytes: int | None,
               specs: tuple[GpuSpec, ...] | None = None) -> SpecMatch:
    """The spec row for a device: by name, confirmed (or, within a family, decided) by SMs and memory."""
    rows = specs or load()
    norm = normalize_name(name)
    family = [s for s in rows if re.search(s.family, norm)]
    if not family:
        return SpecMatch(None, None, f"no spec row for {name!r}")
    allowed = [s for s in family if not (s.exclude and re.search(s.exclude, norm))]
    if not allowed:
        excluders = ", ".join(s.id for s in family)
        return SpecMatch(None, None, f"no spec row for {name!r} (it is a variant that {excluders} excludes)")
    named = [s for s in allowed if not s.match or re.search(s.match, norm)]
    # A variant named outright ("pcie") wins over the family's default rows.
    explicit = [s for s in named if s.match]
    named = explicit or named
    known = sm_count is not None or memory_bytes is not None
    hw = f"{sm_count if sm_count is not None else '?'} SMs, " + (
        f"{memory_bytes / 2**30:.1f} GiB" if memory_bytes is not None else "? GiB")

    confirmed = [s for s in named if _hardware_agrees(s, sm_count, memory_bytes)]
    if len(confirmed) == 1:
        spec = confirmed[0]
        basis = "name+hardware" if known else "name-only"
        how = f"confirmed by {hw}" if known else "SM count and memory unknown: not confirmed"
        return SpecMatch(spec, basis, f"{name!r} is {spec.id} ({how})", tuple(s.id for s in named))
    if known:
        by_hw = [s for s in allowed if _hardware_agrees(s, sm_count, memory_bytes)]
        if len(by_hw) == 1:
            spec = by_hw[0]
            return SpecMatch(spec, "hardware",
                             f"{name!r} is {spec.id}: the name alone does not say which, {hw} does",
                             tuple(s.id for s in allowed))
        pool = by_hw or allowed
    else:
        pool = named or allowed
    ids = tuple(s.id for s in pool)
    if len(pool) > 1:
        return SpecMatch(None, None, f"{name!r} ({hw}) could be any of {', '.join(ids)}: not judged", ids)
    return SpecMatch(None, None, f"{name!r} looks like {', '.join(ids)} but {hw} does not agree: "
                     "not judged", ids)
