"""The CPU the fallback probes run on: model, cores, clock, vector flags, last-level cache, a peak estimate.

Parsing is pure over the text of /proc/cpuinfo and sysfs; `read_cpu()` gathers that text and never
raises. The peak estimate is cores x clock x FLOPs per cycle (probe facts: AVX2+FMA 32 SP FLOPs per
cycle, AVX-512 with two FMA units 64), a floor where the clock read is the nominal one.
"""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from harness.schema.probe_document import CpuPeak, DeviceInfo

_SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class CpuInfo:
    """What the CPU says of itself; None where it did not say."""

    model: str | None
    logical_cpus: int | None
    physical_cores: int | None
    mhz: float | None
    mhz_source: str | None
    flags: tuple[str, ...]
    llc_bytes: int | None

    def to_dict(self) -> DeviceInfo:
        """What the probe document says of the CPU: the flags as the vector ISA they announce."""
        return DeviceInfo(model=self.model, logical_cpus=self.logical_cpus, physical_cores=self.physical_cores,
                          mhz=self.mhz, mhz_source=self.mhz_source, llc_bytes=self.llc_bytes,
                          vector_isa=vector_isa(self.flags))


def parse_cpuinfo(text: str) -> CpuInfo:
    """Model, logical CPUs, physical cores, median MHz and flags from /proc/cpuinfo's text (the clock's
    source and the cache are read elsewhere: None here)."""
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    procs = []
    for block in blocks:
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "processor" in fields:
            procs.append(fields)
    cores = {(p.get("physical id", "0"), p["core id"]) for p in procs if "core id" in p}
    mhz = [float(p["cpu MHz"]) for p in procs if re.fullmatch(r"[\d.]+", p.get("cpu MHz", ""))]
    flags = procs[0].get("flags", procs[0].get("Features", "")).split() if procs else []
    return CpuInfo(model=procs[0].get("model name") if procs else None, logical_cpus=len(procs) or None,
                   physical_cores=len(cores) or None, mhz=statistics.median(mhz) if mhz else None, mhz_source=None,
                   flags=tuple(flags), llc_bytes=None)


def parse_cache_size(text: str) -> int | None:
    """'32768K' -> 33554432; '1M' -> 1048576; None for anything else."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2)]


def vector_isa(flags: tuple[str, ...]) -> str | None:
    """The widest FMA-capable vector ISA the flags announce."""
    have = set(flags)
    if "avx512f" in have:
        return "avx512"
    if {"avx2", "fma"} <= have:
        return "avx2+fma"
    if "avx" in have:
        return "avx"
    if "sse2" in have:
        return "sse2"
    return None


# Single-precision FLOPs per cycle per core (probe facts; avx and sse2: one add and one multiply
# unit of 8 and 4 lanes).
SP_FLOPS_PER_CYCLE = {"avx512": 64, "avx2+fma": 32, "avx": 16, "sse2": 8}


def estimate_peak_gflops(cores: float | None, mhz: float | None, flags: tuple[str, ...],
                         given_by: str | None = None) -> CpuPeak | None:
    """cores x GHz x SP FLOPs/cycle, with its inputs; None where the processor is not known.

    `cores` is the CPU share the probe was given (cpushare.given_cpus), fractional under a quota;
    `given_by` says what set it.
    """
    isa = vector_isa(flags)
    if not cores or not mhz or isa is None:
        return None
    per_cycle = SP_FLOPS_PER_CYCLE[isa]
    return CpuPeak(round(cores * mhz / 1000.0 * per_cycle, 1), cores, mhz, isa, per_cycle, given_by,
                   "cores x clock x FLOPs/cycle; avx512 assumes two FMA units; the clock is the one the OS "
                   "reports, so boost can exceed it")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_llc_bytes(sys_cpu: Path = _SYS_CPU) -> int | None:
    """The size of cpu0's highest-level cache from sysfs, or None."""
    best: tuple[int, int] | None = None
    for index in sorted(sys_cpu.glob("cpu0/cache/index*")):
        level, size = _read(index / "level"), _read(index / "size")
        if level and level.strip().isdigit() and size:
            nbytes = parse_cache_size(size)
            if nbytes and (best is None or int(level) > best[0]):
                best = (int(level), nbytes)
    return best[1] if best else None


def read_cpu() -> CpuInfo:
    """Gather the CPU's description from /proc and sysfs; unknowns are None."""
    parsed = parse_cpuinfo(_read(Path("/proc/cpuinfo")) or "")
    mhz, source = parsed.mhz, "/proc/cpuinfo cpu MHz" if parsed.mhz else None
    max_khz = _read(_SYS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq")
    if max_khz and max_khz.strip().isdigit():
        mhz, source = int(max_khz) / 1000.0, "cpufreq cpuinfo_max_freq"
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = os.cpu_count() or 0
    logical, physical = parsed.logical_cpus, parsed.physical_cores
    # A container's cpuset hides CPUs that /proc/cpuinfo still lists: count what this process may use.
    if physical and logical and allowed and allowed < logical:
        physical = max(1, allowed * physical // logical)
    return CpuInfo(parsed.model, allowed or logical, physical, mhz, source, parsed.flags, read_llc_bytes())
