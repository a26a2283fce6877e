"""The share of the CPU this process was given: its cgroup's CPU quota, its cpuset, its affinity.

A container started with `--cpus 1` on a 64-core host still lists 64 processors in /proc/cpuinfo;
what it may use is its cgroup's quota (cgroup v2 `cpu.max`: "QUOTA PERIOD" or "max PERIOD"; v1
`cpu.cfs_quota_us` / `cpu.cfs_period_us`, -1 for none), its cpuset, and the affinity mask the kernel
applies (see the kernel's Documentation/admin-guide/cgroup-v2.rst, "CPU Interface Files" and "Cpuset
Interface Files"). A CPU probe is judged against this share, never the host's whole peak. Parsing is
pure; `read_share()` gathers the files and never raises.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

_CGROUP = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CpuShare:
    """What limits this process's CPU time; None where nothing limits it (or nothing could be read)."""

    quota_cpus: float | None        # cpu.max quota / period: 1.5 for `--cpus 1.5`
    quota_source: str | None        # the file the quota came from
    cpuset_cpus: int | None         # CPUs in the effective cpuset
    affinity_cpus: int | None       # CPUs in sched_getaffinity(0)


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 cpu.max: '150000 100000' -> 1.5; 'max 100000' -> None (no limit)."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max" or not all(p.isdigit() for p in parts) or int(parts[1]) == 0:
        return None
    return int(parts[0]) / int(parts[1])


def parse_cfs(quota: str, period: str) -> float | None:
    """cgroup v1: cpu.cfs_quota_us '-1' means no limit; else quota / period."""
    q, p = quota.strip(), period.strip()
    if not q.lstrip("-").isdigit() or not p.isdigit() or int(q) <= 0 or int(p) == 0:
        return None
    return int(q) / int(p)


def parse_cpu_list(text: str) -> int | None:
    """A kernel CPU list: '0-3,8,10-11' -> 7; '' or malformed -> None."""
    count = 0
    for part in text.strip().split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return None
        count += (int(high) - int(low) + 1) if dash else 1
    return count or None


def cgroup_dirs(proc_self_cgroup: str, root: Path = _CGROUP) -> list[Path]:
    """The cgroup v2 folders of this process, innermost first, up to the mount's root.

    /proc/self/cgroup's '0::/docker/abc' names the folder under the mount; inside a container's own
    cgroup namespace it reads '0::/' and the container's limits sit at the mount's root.
    """
    path = next((line.split("::", 1)[1].strip() for line in proc_self_cgroup.splitlines() if line.startswith("0::")),
                "/")
    parts = [p for p in path.strip("/").split("/") if p]
    return [root.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_share(root: Path = _CGROUP, proc: Path = Path("/proc/self/cgroup")) -> CpuShare:
    """The quota (the tightest of this cgroup and its ancestors), the cpuset and the affinity mask."""
    quota: tuple[float, str] | None = None
    cpuset: int | None = None
    for folder in cgroup_dirs(_read(proc) or "", root):
        text = _read(folder / "cpu.max")
        value = parse_cpu_max(text) if text else None
        if value is not None and (quota is None or value < quota[0]):
            quota = (value, str(folder / "cpu.max"))
        if cpuset is None and (cpus := _read(folder / "cpuset.cpus.effective")):
            cpuset = parse_cpu_list(cpus)
    if cpuset is None and (cpus := _read(root / "cpuset" / "cpuset.effective_cpus")):  # cgroup v1
        cpuset = parse_cpu_list(cpus)
    if quota is None:  # cgroup v1
        q, p = _read(root / "cpu" / "cpu.cfs_quota_us"), _read(root / "cpu" / "cpu.cfs_period_us")
        value = parse_cfs(q, p) if q and p else None
        quota = (value, str(root / "cpu" / "cpu.cfs_quota_us")) if value is not None else None
    try:
        affinity: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return CpuShare(quota[0] if quota else None, quota[1] if quota else None, cpuset, affinity)


def given_cpus(threads: int, physical_cores: int | None, share: CpuShare) -> tuple[float, str]:
    """The CPUs a probe with `threads` threads can use, and what set that number.

    The smallest of: its threads, the physical cores, the cpuset, the affinity mask, and the quota
    (fractional: `--cpus 0.5` gives half a core's time).
    """
    limits: list[tuple[float, str]] = [(float(threads), f"{threads} torch threads")]
    if physical_cores:
        limits.append((float(physical_cores), f"{physical_cores} physical cores"))
    if share.cpuset_cpus:
        limits.append((float(share.cpuset_cpus), f"cpuset of {share.cpuset_cpus} CPUs"))
    if share.affinity_cpus:
        limits.append((float(share.affinity_cpus), f"affinity of {share.affinity_cpus} CPUs"))
    if share.quota_cpus is not None:
        limits.append((share.quota_cpus, f"CPU quota {share.quota_cpus:g} ({share.quota_source})"))
    value, why = min(limits, key=lambda item: item[0])
    return (round(value, 3) if not math.isclose(value, round(value)) else float(round(value))), why
