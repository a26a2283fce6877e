"""The shape of the facts the harness gathers, layer by layer, as plain JSON-able dicts.

Every value may be None, which means *unknown* (not gathered, or not in a pasted report), as
distinct from False/0/empty, which are observations. The classifier (`harness.classify`) reads
only this shape, so facts gathered live, parsed from a `collect_env` dump, or loaded from a saved
document are judged by the same code.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, TypedDict


class SimulatedStage(TypedDict, total=False):
    """How far a process got with refenv's simulated libcuda (the stage record of refenv/images/simdriver/libcuda.c)."""

    driver_version_queried: bool
    cuinit_called: bool
    cuinit_result: Optional[int]
    device_count_queried: bool
    device_count: Optional[int]
    export_table_requested: bool
    runtime_accepted: bool       # the runtime read the driver's version and went on to cuInit
    proc_address_requests: int
    unsupported_calls: int
    first_unsupported_call: Optional[str]


class SimulatedLibrary(TypedDict, total=False):
    """What a library of refenv's simulated driver says of itself (refenvSimulatedDriverInfo and
    refenvSimulatedNvmlInfo in refenv/images/simdriver), or `unparsable` with what it printed."""

    simulated: bool
    library: str
    config_path: str
    config_found: bool
    config_error: Optional[str]
    profile: str
    driver_version: str
    cuda_driver_version: int
    gpu_count: int
    visible_devices: Optional[List[int]]   # libcuda: the ordinals CUDA_VISIBLE_DEVICES left this process
    stage: SimulatedStage               # libcuda
    init_calls: int                     # NVML
    init_result: Optional[int]             # NVML
    device_count_queried: bool          # NVML
    unparsable: str


class SimulatedDriver(TypedDict, total=False):
    libcuda: Optional[SimulatedLibrary]
    nvml: Optional[SimulatedLibrary]


class GpuFact(TypedDict, total=False):
    index: Optional[int]
    name: Optional[str]
    memory_total_bytes: Optional[int]
    uuid: Optional[str]
    compute_capability: Optional[str]  # "9.0"
    pci_bus_id: Optional[str]


class LibcudaFact(TypedDict, total=False):
    loaded: Optional[bool]          # libcuda.so.1 could be dlopen'ed
    path: Optional[str]
    error: Optional[str]            # the dlopen error
    file: Optional[str]             # when it did not load: a libcuda.so.1 on the loader's path all the same
    driver_version: Optional[int]   # cuDriverGetVersion, e.g. 12080
    cuinit: Optional[int]           # cuInit(0) result, 0 = CUDA_SUCCESS
    cuinit_name: Optional[str]      # cuGetErrorName, e.g. CUDA_ERROR_NO_DEVICE
    cuinit_message: Optional[str]   # cuGetErrorString
    device_count: Optional[int]     # cuDeviceGetCount after a successful cuInit
    blocked_in: Optional[str]       # the call that had not returned when the probe gave up ("cuInit(0)": hung)
    blocked_s: Optional[float]      # ... after this many seconds (harness.gather.bounded)


class NvmlFact(TypedDict, total=False):
    loaded: Optional[bool]          # libnvidia-ml.so.1 found
    init_error: Optional[str]       # e.g. "Driver/library version mismatch"
    init_error_code: Optional[int]  # e.g. 18 (NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    driver_version: Optional[str]   # "535.247.01"
    cuda_driver_version: Optional[int]
    devices: Optional[List[GpuFact]]
    source: Optional[str]           # "pynvml" or "ctypes"
    blocked_in: Optional[str]       # NVML had not answered when the probe gave up (harness.gather.bounded)
    blocked_s: Optional[float]


class SmiFact(TypedDict, total=False):
    path: Optional[str]
    rc: Optional[int]
    output: Optional[str]           # the first lines of what it printed
    works: Optional[bool]


class PciDeviceFact(TypedDict, total=False):
    """One device of the PCI bus as sysfs shows it (/sys/bus/pci/devices/<address>/{vendor,class,driver})."""

    address: Optional[str]          # "0000:18:00.0"
    vendor: Optional[str]           # "0x10de" (NVIDIA)
    device_class: Optional[str]     # "0x030200" (a 3D controller); 0x03xxxx is a display controller
    driver: Optional[str]           # the bound driver's name ("nvidia", "nouveau", "vfio-pci"); None: none bound


class DriverFacts(TypedDict, total=False):
    dev_nodes: Optional[List[str]]          # /dev/nvidia*
    dev_access: Optional[Dict[str, str]]  # node -> "ok", or why it cannot be opened ("EPERM: Operation not permitted")
    proc_version: Optional[str]             # first line of /proc/driver/nvidia/version
    kernel_module_version: Optional[str]    # parsed from proc_version
    libcuda: LibcudaFact
    nvml: NvmlFact
    nvidia_smi: SmiFact
    simulated: Optional[SimulatedDriver]    # what refenv's simulated driver says of itself
    pci: Optional[List[PciDeviceFact]]      # the PCI bus; None: unknown (no /sys/bus/pci, or an empty one)
    pci_root: Optional[str]                 # where it was read: /sys/bus/pci, or a simulated host's view of it


class TorchFacts(TypedDict, total=False):
    importable: Optional[bool]
    import_error: Optional[str]
    version: Optional[str]            # torch.__version__
    cuda: Optional[str]               # torch.version.cuda; None with importable=True means a CPU wheel
    hip: Optional[str]
    cudart_version: Optional[int]     # cudaRuntimeGetVersion of the bundled runtime
    cuda_runtime_package: Optional[str]  # e.g. "nvidia-cuda-runtime-cu12 12.8.90"
    arch_list: Optional[List[str]]    # torch._C._cuda_getArchFlags()
    is_available: Optional[bool]
    device_count: Optional[int]
    init_warning: Optional[str]       # the "CUDA initialization: ..." text, without the prefix
    init_error: Optional[str]         # what torch.cuda.init() raised
    nvml_based_check: Optional[bool]  # PYTORCH_NVML_BASED_CUDA_CHECK=1
    simulated_stage: Optional[SimulatedLibrary]  # the simulated libcuda's record, read in torch's process
    warnings: Optional[List[str]]     # other warnings torch raised (e.g. "... sm_120 is not compatible ...")
    error: Optional[str]              # why the torch facts could not be gathered (timeout, crash)
    blocked_in: Optional[str]         # the call that had not returned: "torch.cuda.is_available()" on a hung driver
    blocked_s: Optional[float]        # ... after this many seconds (harness.gather.bounded)
    devices: Optional[List[GpuFact]]


class VisibilityFacts(TypedDict, total=False):
    cuda_visible_devices: Optional[str]        # None = unset
    nvidia_visible_devices: Optional[str]
    nvidia_driver_capabilities: Optional[str]
    cuda_device_order: Optional[str]
    in_container: Optional[bool]
    container_evidence: Optional[str]
    launch: Optional[str]          # how a report's work was started: 'docker run', 'compose', 'pod', 'slurm', ...
    gpu_requested: Optional[bool]  # whether that start asks for a GPU
    launch_fix: Optional[str]      # the same start asking for one, in its own syntax


class HostFacts(TypedDict, total=False):
    os: Optional[str]        # "Linux", "Windows", "Darwin"
    platform: Optional[str]
    python: Optional[str]
    machine: Optional[str]
    hostname: Optional[str]
    libc: Optional[str]      # "glibc 2.31" (confstr CS_GNU_LIBC_VERSION); None without glibc


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


# What the values of a saved document may be, beyond their types: checked when one is read back
# (harness.intake.saved), before anything acts on it. Versions and capabilities are ASCII digits matched whole
# (Python's int() also reads Arabic-Indic and full-width digits, which no driver or wheel prints); counts
# and codes lie in ranges that hold every real machine. Paths are dotted, `[]` for every item of a list.
VERSION_TAIL = r"[0-9A-Za-z.+_-]{0,64}"   # local labels and pre-releases: +cu121, a0+git8ac9b20, rc1, .dev2024
FORMATS: dict[str, tuple[re.Pattern[str], str]] = {
    "torch.version": (re.compile(r"[0-9]{1,4}\.[0-9]{1,4}(?:\.[0-9]{1,4})?" + VERSION_TAIL),
                      "a torch version such as 2.1.0+cu121"),
    "torch.cuda": (re.compile(r"[0-9]{1,2}\.[0-9]{1,2}(?:\.[0-9]{1,3})?"),
                   "a CUDA version such as 12.1, or null for a CPU build"),
    "torch.hip": (re.compile(r"[0-9]{1,2}\.[0-9]{1,2}" + VERSION_TAIL), "a ROCm version such as 6.0.32830, or null"),
    "torch.arch_list[]": (re.compile(r"[A-Za-z0-9_]{1,24}"), "an architecture such as sm_90"),
    "driver.nvml.driver_version": (re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,3}"),
                                   "a driver version such as 535.104.05"),
    "driver.kernel_module_version": (re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,3}"),
                                     "a driver version such as 535.104.05"),
    "driver.nvml.devices[].compute_capability": (re.compile(r"[0-9]{1,2}\.[0-9]"), "MAJOR.MINOR such as 9.0"),
    "torch.devices[].compute_capability": (re.compile(r"[0-9]{1,2}\.[0-9]"), "MAJOR.MINOR such as 9.0"),
    "host.python": (re.compile(r"[0-9]{1,2}\.[0-9]{1,3}(?:\.[0-9]{1,3})?[0-9A-Za-z.+_-]{0,20}"),
                    "a Python version such as 3.11.7"),
}
_VERSION_NUMBER = (0, 99_999)   # cuDriverGetVersion-style: 12080 is CUDA 12.8
RANGES: dict[str, tuple[int, int]] = {
    "driver.libcuda.driver_version": _VERSION_NUMBER,
    "driver.nvml.cuda_driver_version": _VERSION_NUMBER,
    "torch.cudart_version": _VERSION_NUMBER,
    "driver.libcuda.cuinit": (0, 99_999),              # CUresult codes run to 999 (CUDA_ERROR_UNKNOWN)
    "driver.nvml.init_error_code": (0, 99_999),        # nvmlReturn_t codes run to 999 (NVML_ERROR_UNKNOWN)
    "driver.libcuda.device_count": (0, 4096),
    "torch.device_count": (0, 4096),
    "driver.nvml.devices[].index": (0, 4095),
    "torch.devices[].index": (0, 4095),
    "driver.nvml.devices[].memory_total_bytes": (0, 1 << 50),
    "torch.devices[].memory_total_bytes": (0, 1 << 50),
    "driver.nvidia_smi.rc": (-255, 255),               # a negative code is the signal that ended it
}
