"""Child process: what torch itself says about CUDA, printed as JSON lines.

torch caches the device count for the life of a process and warns the reason only once
(torch/cuda/__init__.py), so every check runs here, in a fresh process, with warnings recorded.
On a hung driver torch.cuda.is_available() never returns, and it does not let go of the interpreter while it
waits (torch's binding keeps the GIL), so no thread of this process can give up on it. So before each call
that initialises the driver this child prints a line, {"facts": what it has so far, "calling": the call}; the
parent (harness.gather.collect) bounds the calls from the first such line, and reports the last one as the
call that had not returned. The last line, with "calling" null, holds every fact.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import warnings
from typing import Any, Callable  # noqa: UP035  (collections.abc.Callable[...] is 3.9+; the harness runs on 3.8)

from harness.catalogue.load import torch_init_prefix
from harness.facts import GpuFact, SimulatedLibrary, TorchFacts

# What the child says before a call that may never return: the facts so far, and the call.
Progress = Callable[[TorchFacts, str], None]

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


def _ask_cuda(torch: Any, out: TorchFacts, progress: Progress) -> None:
    """What torch says of CUDA, into `out` as it answers: the calls that initialise the driver."""
    progress(out, "torch.cuda.is_available()")
    available = bool(torch.cuda.is_available())
    out["is_available"] = available
    progress(out, "torch.cuda.device_count()")
    count = int(torch.cuda.device_count())
    out["device_count"] = count
    if available:
        devices: list[GpuFact] = []
        for i in range(count):
            progress(out, f"torch.cuda.get_device_properties({i})")
            props = torch.cuda.get_device_properties(i)
            devices.append({"index": i, "name": props.name,
                            "compute_capability": f"{props.major}.{props.minor}",
                            "memory_total_bytes": int(props.total_memory)})
        out["devices"] = devices
    else:
        progress(out, "torch.cuda.init()")
        try:
            torch.cuda.init()
        except Exception as exc:  # what torch.cuda.init() raises is the message users see
            out["init_error"] = str(exc)


def probe(progress: Progress | None = None) -> TorchFacts:
    """torch's facts; `progress` hears of each call that initialises the driver before it is made."""
    nvml_check = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1"
    out: TorchFacts = {"importable": False, "nvml_based_check": nvml_check}
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        try:
            import torch
        except Exception as exc:  # torch may fail with OSError from a broken CUDA library, not only ImportError
            out["import_error"] = f"{type(exc).__name__}: {exc}"
            return out
        out["importable"] = True
        out["version"] = str(torch.__version__)
        out["cuda"] = torch.version.cuda
        out["hip"] = getattr(torch.version, "hip", None)
        flags = getattr(torch._C, "_cuda_getArchFlags", None)
        out["arch_list"] = flags().split() if flags and out["cuda"] else None
        out["cudart_version"] = _cudart_version() if out["cuda"] else None
        out["cuda_runtime_package"] = _runtime_package()
        _ask_cuda(torch, out, progress or (lambda facts, call: None))
        out["simulated_stage"] = _simulated_stage()
        caught = [str(r.message) for r in records]
    prefix = torch_init_prefix()
    init = [w[len(prefix):] for w in caught if w.startswith(prefix)]
    out["init_warning"] = init[0] if init else None
    out["warnings"] = [w for w in caught if not w.startswith(prefix)][:10]
    return out


def say(facts: TorchFacts, calling: str | None) -> None:
    """One line for the parent, sent at once: it may be the last this process prints."""
    sys.stdout.write(json.dumps({"facts": facts, "calling": calling}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    say(probe(say), None)
