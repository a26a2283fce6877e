"""This machine's own GPUs, read through NVML on the host, as a profile the predictor understands."""

from __future__ import annotations

import contextlib
import logging

from harness import compat
from refenv.profiles import Faults, Gpu, Profile

LOG = logging.getLogger(__name__)


def _s(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def probe() -> Profile | None:
    """The host's driver and GPUs, or None when this machine has no working NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        LOG.info("no NVIDIA driver on this host: %s", exc)
        return None
    try:
        driver = _s(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            memory = int(pynvml.nvmlDeviceGetMemoryInfo(h).total)
            gpus.append(Gpu(_s(pynvml.nvmlDeviceGetName(h)), memory, f"{major}.{minor}", 0,
                            _s(pynvml.nvmlDeviceGetUUID(h)), _s(pynvml.nvmlDeviceGetPciInfo(h).busId), i))
        cuda = compat.int_to_cuda(int(pynvml.nvmlSystemGetCudaDriverVersion()))
    except pynvml.NVMLError as exc:
        LOG.info("NVML answered only in part: %s", exc)
        return None
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
    return Profile("real", "this machine's GPUs", driver, cuda, tuple(gpus), Faults())
