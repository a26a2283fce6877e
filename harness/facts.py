"""The shape of the facts the harness gathers, layer by layer, as plain JSON-able dicts.

Every value may be None, which means *unknown* (not gathered, or not in a pasted report), as
distinct from False/0/empty, which are observations. The classifier (`harness.classify`) reads
only this shape, so facts gathered live, parsed from a `collect_env` dump, or loaded from a saved
document are judged by the same code.
"""

from __future__ import annotations

from typing import TypedDict


class SimulatedStage(TypedDict, total=False):
    """How far a process got with refenv's simulated libcuda (the stage record of images/simdriver/libcuda.c)."""

    driver_version_queried: bool
    cuinit_called: bool
    cuinit_result: int | None
    device_count_queried: bool
    device_count: int | None
    export_table_requested: bool
    runtime_accepted: bool       # the runtime read the driver's version and went on to cuInit
    proc_address_requests: int
    unsupported_calls: int
    first_unsupported_call: str | None


class SimulatedLibrary(TypedDict, total=False):
    """What a library of refenv's simulated driver says of itself (refenvSimulatedDriverInfo and
    refenvSimulatedNvmlInfo in images/simdriver), or `unparsable` with what it printed."""

    simulated: bool
    library: str
    config_path: str
    config_found: bool
    config_error: str | None
    profile: str
    driver_version: str
    cuda_driver_version: int
    gpu_count: int
    visible_devices: list[int] | None   # libcuda: the ordinals CUDA_VISIBLE_DEVICES left this process
    stage: SimulatedStage               # libcuda
    init_calls: int                     # NVML
    init_result: int | None             # NVML
    device_count_queried: bool          # NVML
    unparsable: str


class SimulatedDriver(TypedDict, total=False):
    libcuda: SimulatedLibrary | None
    nvml: SimulatedLibrary | None


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
    simulated: SimulatedDriver | None    # what refenv's simulated driver says of itself


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
    simulated_stage: SimulatedLibrary | None  # the simulated libcuda's record, read in torch's process
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


# A section a report did not fill may be missing altogether: these read each as empty then, so a reader
# asks for a value and gets None for unknown, wherever the facts came from.
def host_of(facts: Facts | None) -> HostFacts:
    return (facts or {}).get("host") or {}


def driver_of(facts: Facts | None) -> DriverFacts:
    return (facts or {}).get("driver") or {}


def libcuda_of(facts: Facts | None) -> LibcudaFact:
    return driver_of(facts).get("libcuda") or {}


def nvml_of(facts: Facts | None) -> NvmlFact:
    return driver_of(facts).get("nvml") or {}


def smi_of(facts: Facts | None) -> SmiFact:
    return driver_of(facts).get("nvidia_smi") or {}


def torch_of(facts: Facts | None) -> TorchFacts:
    return (facts or {}).get("torch") or {}


def visibility_of(facts: Facts | None) -> VisibilityFacts:
    return (facts or {}).get("visibility") or {}


def devices_of(section: NvmlFact | TorchFacts) -> list[GpuFact]:
    """The GPUs NVML (or torch) listed; none when it listed none or could not tell."""
    return list(section.get("devices") or ())


def torch_texts(facts: Facts | None) -> str:
    """Everything torch said, one message a line: its init warning, what init raised, its other warnings."""
    t = torch_of(facts)
    parts = [t.get("init_warning") or "", t.get("init_error") or "", *(t.get("warnings") or ())]
    return "\n".join(p for p in parts if p)
