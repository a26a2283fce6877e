"""Child process: what torch itself says about CUDA, printed as JSON.

torch caches the device count for the life of a process and warns the reason only once
(torch/cuda/__init__.py), so every check runs here, in a fresh process, with warnings recorded.
The calls that initialise the driver run in a thread (harness.gather.bounded): on a hung driver
torch.cuda.is_available() never returns, and after the bound (`--bound S`) the facts say so.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
import warnings
from typing import Any

from harness.catalogue.load import torch_init_prefix
from harness.facts import GpuFact, SimulatedLibrary, TorchFacts
from harness.gather.bounded import INIT_TIMEOUT_S, Bounded, Step, bound_of

RUNTIME_PACKAGES = ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11")


def _runtime_package() -> str | None:
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return None
    for name in RUNTIME_PACKAGES:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def _cudart_version() -> int | None:
    """cudaRuntimeGetVersion of the runtime torch loaded; it answers without touching the driver."""
    from harness.gather.libcuda import loaded_path

    path = loaded_path("libcudart.so")
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        value = ctypes.c_int(0)
        return value.value if lib.cudaRuntimeGetVersion(ctypes.byref(value)) == 0 else None
    except (OSError, AttributeError):
        return None


def _simulated_stage() -> SimulatedLibrary | None:
    from harness.gather.libcuda import loaded_path, simulated_info

    if loaded_path("libcuda.so") is None:
        return None
    try:
        # RTLD_NOLOAD: read the copy torch's runtime loaded, never a fresh one.
        return simulated_info(ctypes.CDLL("libcuda.so.1", mode=getattr(os, "RTLD_NOLOAD", 4)))
    except OSError:
        return None


def _ask_cuda(torch: Any, out: TorchFacts, step: Step) -> None:
    """What torch says of CUDA, into `out` as it answers: the calls that initialise the driver."""
    step.enter("torch.cuda.is_available()")
    available = bool(torch.cuda.is_available())
    out["is_available"] = available
    step.enter("torch.cuda.device_count()")
    count = int(torch.cuda.device_count())
    out["device_count"] = count
    if available:
        devices: list[GpuFact] = []
        for i in range(count):
            step.enter(f"torch.cuda.get_device_properties({i})")
            props = torch.cuda.get_device_properties(i)
            devices.append({"index": i, "name": props.name,
                            "compute_capability": f"{props.major}.{props.minor}",
                            "memory_total_bytes": int(props.total_memory)})
        out["devices"] = devices
    else:
        step.enter("torch.cuda.init()")
        try:
            torch.cuda.init()
        except Exception as exc:  # what torch.cuda.init() raises is the message users see
            out["init_error"] = str(exc)
    step.leave()


def probe(bound: float = INIT_TIMEOUT_S) -> tuple[TorchFacts, bool]:
    """torch's facts, and whether every call returned (False: one is blocked in the driver, in a thread that
    cannot be joined)."""
    nvml_check = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1"
    out: TorchFacts = {"importable": False, "nvml_based_check": nvml_check}
    caught: list[str] = []
    returned = True
    with warnings.catch_warnings(record=True) as records:  # process-wide: the thread's warnings are recorded too
        warnings.simplefilter("always")
        try:
            import torch
        except Exception as exc:  # torch may fail with OSError from a broken CUDA library, not only ImportError
            out["import_error"] = f"{type(exc).__name__}: {exc}"
            return out, True
        out["importable"] = True
        out["version"] = str(torch.__version__)
        out["cuda"] = torch.version.cuda
        out["hip"] = getattr(torch.version, "hip", None)
        flags = getattr(torch._C, "_cuda_getArchFlags", None)
        out["arch_list"] = flags().split() if flags and out["cuda"] else None
        out["cudart_version"] = _cudart_version() if out["cuda"] else None
        out["cuda_runtime_package"] = _runtime_package()
        # The bound runs from the first CUDA call: importing torch, however slow its disk, is not the driver's.
        asked = Bounded(lambda step: _ask_cuda(torch, out, step), "refenv-torch-cuda")
        if not asked.wait(time.monotonic() + bound):
            returned = False
            out["blocked_in"], out["blocked_s"] = asked.blocked()
        out["simulated_stage"] = _simulated_stage()
        caught = [str(r.message) for r in records]
    prefix = torch_init_prefix()
    init = [w[len(prefix):] for w in caught if w.startswith(prefix)]
    out["init_warning"] = init[0] if init else None
    out["warnings"] = [w for w in caught if not w.startswith(prefix)][:10]
    return out, returned


if __name__ == "__main__":
    facts, returned = probe(bound_of(sys.argv))
    json.dump(facts, sys.stdout)
    sys.stdout.flush()
    if not returned:
        os._exit(0)  # a thread blocked in the driver cannot be joined, and the interpreter would wait at exit
