"""The shape of the facts the harness gathers, layer by layer, as plain JSON-able dicts.

Every value may be None, which means *unknown* (not gathered, or not in a pasted report), as
distinct from False/0/empty, which are observations. The classifier (`harness.classify`) reads
only this shape, so facts gathered live, parsed from a `collect_env` dump, or loaded from a saved
document are judged by the same code.
"""

from __future__ import annotations

from typing import Any, TypedDict


class GpuFact(TypedDict, total=False):
    index: int | None
    name: str | None
    memory_total_bytes: int | None
    uuid: str | None
    compute_capability: str | None  # "9.0"
    pci_bus_id: str | None


class LibcudaFact(TypedDict, total=False):
    loaded: bool | None          # libcuda.so.1 could be dlopen'ed
    path: str | None
    error: str | None            # the dlopen error
    driver_version: int | None   # cuDriverGetVersion, e.g. 12080
    cuinit: int | None           # cuInit(0) result, 0 = CUDA_SUCCESS
    cuinit_name: str | None      # cuGetErrorName, e.g. CUDA_ERROR_NO_DEVICE
    cuinit_message: str | None   # cuGetErrorString
    device_count: int | None     # cuDeviceGetCount after a successful cuInit


class NvmlFact(TypedDict, total=False):
    loaded: bool | None          # libnvidia-ml.so.1 found
    init_error: str | None       # e.g. "Driver/library version mismatch"
    init_error_code: int | None  # e.g. 18 (NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    driver_version: str | None   # "535.247.01"
    cuda_driver_version: int | None
    devices: list[GpuFact] | None
    source: str | None           # "pynvml" or "ctypes"


class SmiFact(TypedDict, total=False):
    path: str | None
    rc: int | None
    output: str | None           # the first lines of what it printed
    works: bool | None


class DriverFacts(TypedDict, total=False):
    dev_nodes: list[str] | None          # /dev/nvidia*
    dev_access: dict[str, str] | None    # node -> "ok", or why it cannot be opened ("EPERM: Operation not permitted")
    proc_version: str | None             # first line of /proc/driver/nvidia/version
    kernel_module_version: str | None    # parsed from proc_version
    libcuda: LibcudaFact
    nvml: NvmlFact
    nvidia_smi: SmiFact
    simulated: dict[str, Any] | None     # what refenv's simulated driver says of itself


class TorchFacts(TypedDict, total=False):
    importable: bool | None
    import_error: str | None
    version: str | None            # torch.__version__
    cuda: str | None               # torch.version.cuda; None with importable=True means a CPU wheel
    hip: str | None
    cudart_version: int | None     # cudaRuntimeGetVersion of the bundled runtime
    cuda_runtime_package: str | None  # e.g. "nvidia-cuda-runtime-cu12 12.8.90"
    arch_list: list[str] | None    # torch._C._cuda_getArchFlags()
    is_available: bool | None
    device_count: int | None
    init_warning: str | None       # the "CUDA initialization: ..." text, without the prefix
    init_error: str | None         # what torch.cuda.init() raised
    nvml_based_check: bool | None  # PYTORCH_NVML_BASED_CUDA_CHECK=1
    simulated_stage: dict[str, Any] | None  # the simulated driver's stage record, read in torch's process
    warnings: list[str] | None     # other warnings torch raised (e.g. "... sm_120 is not compatible ...")
    error: str | None              # why the torch facts could not be gathered (timeout, crash)
    devices: list[GpuFact] | None


class VisibilityFacts(TypedDict, total=False):
    cuda_visible_devices: str | None        # None = unset
    nvidia_visible_devices: str | None
    nvidia_driver_capabilities: str | None
    cuda_device_order: str | None
    in_container: bool | None
    container_evidence: str | None


class HostFacts(TypedDict, total=False):
    os: str | None        # "Linux", "Windows", "Darwin"
    platform: str | None
    python: str | None
    machine: str | None
    hostname: str | None


class Facts(TypedDict, total=False):
    host: HostFacts
    driver: DriverFacts
    torch: TorchFacts
    visibility: VisibilityFacts
    source: str           # "probed" (gathered live), "collect_env", or "document"


def empty_facts(source: str = "probed") -> Facts:
    """A facts record where everything is unknown."""
    return {
        "host": {},
        "driver": {"libcuda": {}, "nvml": {}, "nvidia_smi": {}},
        "torch": {},
        "visibility": {},
        "source": source,
    }
