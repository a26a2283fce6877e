"""Which device the probes run on, and what it says of itself: properties, cache sizes, spec row.

I/O around torch (imported lazily); the judgement over what it returns is `specs.match_spec`.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from typing import Any

from harness.gpus import specs
from harness.probe import cpuinfo, cpushare
from harness.schema.probe_document import CpuPeak, CpuShareInfo, DeviceInfo, ProbeEnvironment


class ProbeError(RuntimeError):
    """The probes cannot run as asked (e.g. --device cuda with no usable GPU); the message says why."""


@dataclass(frozen=True)
class Target:
    """The device under test and the references it is judged against."""

    device: str                      # "cuda" or "cpu"
    info: DeviceInfo
    spec: specs.GpuSpec | None = None
    match: specs.SpecMatch | None = None
    cache_bytes: int | None = None   # L2 on a GPU, the last-level cache on the CPU
    free_bytes: int | None = None
    capability: tuple[int, int] | None = None
    uuid: str | None = None
    cpu_peak: CpuPeak | None = None

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    @property
    def cpu_peak_tflops(self) -> float | None:
        """The CPU's estimated fp32 peak in TFLOP/s, None where it is not known."""
        return self.cpu_peak.gflops / 1000.0 if self.cpu_peak else None


def torch_module() -> Any:
    """torch, imported on first use (never at module import), typed loosely: its stubs vary by release."""
    import torch

    return torch


def resolve_device(requested: str) -> str:
    """'auto' -> 'cuda' when torch sees a GPU, else 'cpu'; 'cuda' without one is a ProbeError."""
    if requested not in ("auto", "cuda", "cpu"):
        raise ProbeError(f"--device must be auto, cuda or cpu, not {requested!r}")
    if requested == "cpu":
        return "cpu"
    torch = torch_module()
    available = bool(torch.cuda.is_available())
    if requested == "cuda" and not available:
        why = "a CPU-only torch wheel" if torch.version.cuda is None else "torch.cuda.is_available() is False"
        raise ProbeError(f"--device cuda: no usable GPU ({why}); run `python -m harness diagnose` to see why, "
                         "or probe the CPU with --device cpu")
    return "cuda" if available else "cpu"


def environment() -> ProbeEnvironment:
    """Python, platform, torch and its CUDA runtime: what produced the figures."""
    torch = torch_module()
    return ProbeEnvironment(
        python=sys.version.split()[0],
        platform=platform.platform(),
        machine=platform.machine(),
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        torch_threads=torch.get_num_threads(),
        blas=_blas_line(torch),
    )


def _blas_line(torch: Any) -> str | None:
    try:
        config = torch.__config__.show()
    except Exception:
        return None
    for line in config.splitlines():
        if "BLAS_INFO=" in line:
            return str(line.split("BLAS_INFO=", 1)[1].split(",", 1)[0])
    return None


def gpu_target(index: int = 0) -> Target:
    """The GPU at torch index `index`: its properties and the spec row they match."""
    torch = torch_module()
    props = torch.cuda.get_device_properties(index)
    capability = (int(props.major), int(props.minor))
    l2 = getattr(props, "L2_cache_size", None)
    uuid = str(props.uuid) if getattr(props, "uuid", None) is not None else None
    free, _total = torch.cuda.mem_get_info(index)
    match = specs.match_spec(props.name, int(props.multi_processor_count), int(props.total_memory))
    info = DeviceInfo(
        name=props.name,
        index=index,
        uuid=uuid,
        compute_capability=f"{capability[0]}.{capability[1]}",
        sm_count=int(props.multi_processor_count),
        memory_total_bytes=int(props.total_memory),
        memory_free_bytes=int(free),
        l2_cache_bytes=int(l2) if l2 else None,
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
    )
    return Target("cuda", info, match.spec, match, int(l2) if l2 else None, int(free), capability, uuid)


def cpu_target() -> Target:
    """This CPU: model, cores, clock, cache, the threads torch uses, and the peak estimate."""
    torch = torch_module()
    cpu = cpuinfo.read_cpu()
    threads = torch.get_num_threads()
    share = cpushare.read_share()
    # Judged against the CPU this process was given (a cell's --cpus quota), not the host's whole peak.
    cores, given_by = cpushare.given_cpus(threads, cpu.physical_cores, share)
    peak = cpuinfo.estimate_peak_gflops(cores, cpu.mhz, cpu.flags, given_by)
    info = cpu.to_dict()
    info["torch_threads"] = threads
    info["cpu_share"] = CpuShareInfo(quota_cpus=share.quota_cpus, quota_source=share.quota_source,
                                     cpuset_cpus=share.cpuset_cpus, affinity_cpus=share.affinity_cpus,
                                     given_cpus=cores, given_by=given_by)
    return Target("cpu", info, cache_bytes=cpu.llc_bytes, cpu_peak=peak)
