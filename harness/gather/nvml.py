"""What NVML says: the driver version string, the CUDA version it supports, and the devices.

Uses the official bindings (nvidia-ml-py, imported as pynvml) when installed, else a few ctypes
calls of the documented C API (NVML API Reference Guide) against libnvidia-ml.so.1.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

from harness import catalogue
from harness.facts import GpuFact, NvmlFact

LIBNVML = "libnvidia-ml.so.1"
# nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND, as the failure catalogue names it.
NVML_ERROR_LIBRARY_NOT_FOUND = catalogue.code_of("nvml.library_not_found")


def _s(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _empty() -> NvmlFact:
    return {"loaded": None, "init_error": None, "init_error_code": None, "driver_version": None,
            "cuda_driver_version": None, "devices": None, "source": None}


def probe() -> tuple[NvmlFact, str | None]:
    """NVML facts, and the simulated driver's self-description if this NVML is refenv's."""
    try:
        import pynvml  # noqa: F401
    except ImportError:
        return _probe_ctypes()
    return _probe_pynvml()


def _probe_pynvml() -> tuple[NvmlFact, str | None]:
    import pynvml

    fact = _empty()
    fact["source"] = "pynvml"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        code = int(getattr(exc, "value", -1))
        fact["loaded"] = code != NVML_ERROR_LIBRARY_NOT_FOUND
        fact["init_error"], fact["init_error_code"] = _s(str(exc)), code
        return fact, None
    fact["loaded"] = True
    try:
        fact["driver_version"] = _s(pynvml.nvmlSystemGetDriverVersion())
        fact["cuda_driver_version"] = int(pynvml.nvmlSystemGetCudaDriverVersion())
        devices: list[GpuFact] = []
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            devices.append({
                "index": i, "name": _s(pynvml.nvmlDeviceGetName(h)),
                "memory_total_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
                "uuid": _s(pynvml.nvmlDeviceGetUUID(h)),
                "compute_capability": f"{major}.{minor}",
                "pci_bus_id": _s(pynvml.nvmlDeviceGetPciInfo(h).busId),
            })
        fact["devices"] = devices
    except pynvml.NVMLError as exc:
        fact["init_error"] = f"after init: {exc}"
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
    return fact, _sim_info()


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Pci(ctypes.Structure):
    # nvmlPciInfo_t as documented: legacy bus id, domain, bus, device, ids, then the bus id string.
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


def _probe_ctypes() -> tuple[NvmlFact, str | None]:
    fact = _empty()
    fact["source"] = "ctypes"
    try:
        lib = ctypes.CDLL(LIBNVML)
    except OSError as exc:
        fact["loaded"], fact["init_error"], fact["init_error_code"] = False, str(exc), NVML_ERROR_LIBRARY_NOT_FOUND
        return fact, None
    fact["loaded"] = True
    lib.nvmlErrorString.restype = ctypes.c_char_p
    rc = lib.nvmlInit_v2()
    if rc != 0:
        fact["init_error"], fact["init_error_code"] = _s(lib.nvmlErrorString(rc)), int(rc)
        return fact, None
    buf = ctypes.create_string_buffer(96)
    if lib.nvmlSystemGetDriverVersion(buf, 96) == 0:
        fact["driver_version"] = _s(buf.value)
    cuda = ctypes.c_int(0)
    if lib.nvmlSystemGetCudaDriverVersion(ctypes.byref(cuda)) == 0:
        fact["cuda_driver_version"] = cuda.value
    count = ctypes.c_uint(0)
    devices: list[GpuFact] = []
    if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0:
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                continue
            gpu: GpuFact = {"index": i}
            if lib.nvmlDeviceGetName(handle, buf, 96) == 0:
                gpu["name"] = _s(buf.value)
            if lib.nvmlDeviceGetUUID(handle, buf, 96) == 0:
                gpu["uuid"] = _s(buf.value)
            mem = _Memory()
            if lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0:
                gpu["memory_total_bytes"] = int(mem.total)
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            if lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)) == 0:
                gpu["compute_capability"] = f"{major.value}.{minor.value}"
            pci = _Pci()
            if lib.nvmlDeviceGetPciInfo_v3(handle, ctypes.byref(pci)) == 0:
                gpu["pci_bus_id"] = _s(pci.busId)
            devices.append(gpu)
    fact["devices"] = devices
    lib.nvmlShutdown()
    return fact, _sim_info(lib)


def _sim_info(lib: ctypes.CDLL | None = None) -> str | None:
    """The simulated NVML's self-description (refenvSimulatedNvmlInfo), raw; None for a real NVML."""
    try:
        lib = lib or ctypes.CDLL(LIBNVML)
        func = lib.refenvSimulatedNvmlInfo
    except (OSError, AttributeError):
        return None
    func.restype = ctypes.c_char_p
    raw = func()
    return _s(raw) if raw else None
