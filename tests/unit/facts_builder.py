"""Facts records for classifier tests: a healthy machine, and the ways it breaks."""

from __future__ import annotations

import copy
from typing import Any

A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "memory_total_bytes": 85899345920,
        "uuid": "GPU-5a1d3c2e-0000-4000-8000-000000000001", "compute_capability": "8.0", "pci_bus_id": "00000000:07:00.0"}
H100 = {"index": 1, "name": "NVIDIA H100 80GB HBM3", "memory_total_bytes": 85520809984,
        "uuid": "GPU-9b2e4d1f-0000-4000-8000-000000000002", "compute_capability": "9.0", "pci_bus_id": "00000000:0F:00.0"}
P40 = {"index": 0, "name": "Tesla P40", "memory_total_bytes": 25769803776,
       "uuid": "GPU-1c3e5a7b-0000-4000-8000-000000000003", "compute_capability": "6.1", "pci_bus_id": "00000000:03:00.0"}
CU130_ARCH = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]

DRIVERS = {"470.256.02": 11040, "535.247.01": 12020, "570.172.08": 12080, "580.95.05": 13000}


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def healthy(driver_version: str = "580.95.05", gpus: list[dict[str, Any]] | None = None,
            torch_version: str = "2.14.1+cu130",
            cuda: str | None = "13.0", in_container: bool = False, **over: Any) -> dict[str, Any]:
    """A machine where everything works, unless `over` says otherwise."""
    gpus = [A100] if gpus is None else gpus
    driver = driver_version
    dcv = DRIVERS[driver]
    facts = {
        "source": "probed",
        "host": {"os": "Linux", "python": "3.11.2"},
        "driver": {
            "dev_nodes": ["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"],
            "proc_version": f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Sat Jan 1 00:00:00 UTC 2025",
            "kernel_module_version": driver,
            "libcuda": {"loaded": True, "path": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "error": None,
                        "driver_version": dcv, "cuinit": 0, "cuinit_name": "CUDA_SUCCESS",
                        "cuinit_message": "no error", "device_count": len(gpus)},
            "nvml": {"loaded": True, "init_error": None, "init_error_code": None, "driver_version": driver,
                     "cuda_driver_version": dcv, "devices": gpus, "source": "pynvml"},
            "nvidia_smi": {"path": "/usr/bin/nvidia-smi", "rc": 0, "output": "NVIDIA-SMI ...", "works": True},
            "simulated": None,
        },
        "torch": {"importable": True, "version": torch_version, "cuda": cuda, "hip": None,
                  "arch_list": CU130_ARCH if cuda else None, "cudart_version": 13000 if cuda else None,
                  "is_available": True, "device_count": len(gpus), "init_warning": None, "init_error": None,
                  "warnings": []},
        "visibility": {"cuda_visible_devices": None, "nvidia_visible_devices": None,
                       "nvidia_driver_capabilities": None, "cuda_device_order": None,
                       "in_container": in_container, "container_evidence": "/.dockerenv exists" if in_container else None},
    }
    return merge(facts, over)


NO_LIBCUDA = {"loaded": False, "path": None, "error": "libcuda.so.1: cannot open shared object file",
              "driver_version": None, "cuinit": None, "cuinit_name": None, "cuinit_message": None, "device_count": None}
NO_NVML = {"loaded": False, "init_error": "NVML Shared Library Not Found", "init_error_code": 12,
           "driver_version": None, "cuda_driver_version": None, "devices": None}
UNAVAILABLE = {"is_available": False, "device_count": 0}


def no_driver(**over: Any) -> dict[str, Any]:
    """Nothing of the driver at all."""
    base = healthy(driver={"dev_nodes": [], "proc_version": None, "kernel_module_version": None,
                           "libcuda": NO_LIBCUDA, "nvml": NO_NVML,
                           "nvidia_smi": {"path": None, "rc": None, "output": None, "works": False}},
                   torch={**UNAVAILABLE, "init_error": "Found no NVIDIA driver on your system. Please check that you "
                          "have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"})
    return merge(base, over)
