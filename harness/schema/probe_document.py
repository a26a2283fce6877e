"""The probe's result document, `refenv.probe` version 1, as typed records (written by harness/probe/).

After nvbandwidth and DCGM: numbers as numbers with units in key names (`gbps_median`, `tflops_median`),
null for missing, samples beside every median, and an outcome per measurement (PASS / WARN / FAIL / SKIP
with its reason). Each record writes exactly the keys the document has always had (`optional_key` marks
a key only some records carry); a measurement's figures are written under its unit's names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, TypedDict, Union

from harness.schema.jsondata import decode_fields, encode, optional_key
from harness.schema.outcomes import SKIP

PROBE_SCHEMA = "refenv.probe"
PROBE_VERSION = 1
# A figure's unit: its name in the keys, how it reads, and the key of the work it counts per call.
UNITS = {"gbps": ("GB/s", "bytes_per_call"), "tflops": ("TFLOP/s", "flops_per_call")}
# What torch reports of each flag that decides a float32 matmul's precision; "unreadable: ..." when it raised.
PrecisionFlags = Dict[str, Union[bool, str, None]]


@dataclass(frozen=True)
class Band:
    """PASS at or above `pass_percent` of peak, WARN at or above `warn_percent`, FAIL below."""

    pass_percent: float
    warn_percent: float
    source: str


@dataclass(frozen=True)
class Telemetry:
    """One NVML reading: clocks, power, temperature, throttle reasons; every figure null when unavailable."""

    available: bool
    error: Optional[str] = None
    sm_clock_mhz: Optional[int] = None
    sm_clock_max_mhz: Optional[int] = None
    mem_clock_mhz: Optional[int] = None
    power_w: Optional[float] = None
    power_limit_w: Optional[float] = None
    temperature_c: Optional[int] = None
    pstate: Optional[int] = None
    throttle_reasons_mask: Optional[int] = None
    throttle_reasons: Optional[Tuple[str, ...]] = None


class ProbeParams(TypedDict, total=False):
    """How a measurement was taken; each probe sets the keys that describe it."""

    dtype: str
    numel: int
    buffer_bytes: int
    cache_bytes: Optional[int]
    buffer_over_cache: Optional[float]
    data: str
    timer: str
    m: int
    n: int
    k: int
    precision: PrecisionFlags
    format: str
    out_dtype: str
    use_fast_accum: bool
    telemetry_after: Telemetry
    op: str
    bytes: int
    pinned: bool


@dataclass(frozen=True)
class Figures:
    """A measured figure in `unit` ('gbps' or 'tflops'): the median and its samples, the work per call, and
    how it was judged. Written under the unit's names (`gbps_median`, `reference_gbps`, `bytes_per_call`)."""

    unit: str
    median: float
    samples: Tuple[float, ...] = ()
    seconds_median: Optional[float] = None
    seconds_samples: Tuple[float, ...] = ()
    spread_percent: Optional[float] = None
    work_per_call: Optional[int] = None
    convention: str = ""
    reference: Optional[float] = None
    percent_of_peak: Optional[float] = None
    band: Optional[Band] = None
    flags: Tuple[str, ...] = ()
    params: ProbeParams = field(default_factory=ProbeParams)

    @property
    def unit_label(self) -> str:
        """'GB/s' or 'TFLOP/s'."""
        return UNITS[self.unit][0]

    def names(self) -> dict[str, str]:
        """The document's key for each generic field."""
        return _names(self.unit)


def _names(unit: str) -> dict[str, str]:
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")
    return {"median": f"{unit}_median", "samples": f"{unit}_samples", "work_per_call": UNITS[unit][1],
            "reference": f"reference_{unit}"}


_UNIT_OF = {shown: unit for unit, (shown, _) in UNITS.items()}


@dataclass(frozen=True)
class Measurement:
    """One measurement: what, its outcome and why; its figures unless it was waived (SKIP) or raised."""

    id: str
    title: str
    status: str
    reason: str = ""
    figures: Optional[Figures] = None

    @property
    def median(self) -> Optional[float]:
        return self.figures.median if self.figures else None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "title": self.title, "status": self.status, "reason": self.reason}
        if self.figures is not None:
            names = self.figures.names()
            out["unit"] = self.figures.unit_label
            out.update({names.get(k, k): v for k, v in encode(self.figures).items() if k != "unit"})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Measurement:
        head = {k: d[k] for k in ("id", "title", "status", "reason") if k in d}
        if "unit" not in d:
            return decode_fields(cls, head)
        unit = _UNIT_OF.get(str(d["unit"]))
        if unit is None:
            raise ValueError(f"unit: expected one of {', '.join(_UNIT_OF)}, got {d['unit']!r}")
        back = {doc: name for name, doc in _names(unit).items()}
        figures = {back.get(k, k): v for k, v in d.items() if k not in head}
        return decode_fields(cls, {**head, "figures": {**figures, "unit": unit}})


@dataclass(frozen=True)
class SweepPoint:
    """One point of a roofline sweep: its intensity, what it ran (a GEMM shape or fused steps), its speed."""

    intensity_flop_per_byte: float
    tflops_median: float
    tflops_samples: Tuple[float, ...] = ()
    seconds_median: Optional[float] = None
    seconds_samples: Tuple[float, ...] = ()
    spread_percent: Optional[float] = None
    gbps_median: Optional[float] = None
    m: Optional[int] = optional_key()
    n: Optional[int] = optional_key()
    k: Optional[int] = optional_key()
    steps: Optional[int] = optional_key()
    numel: Optional[int] = optional_key()
    bound: Optional[str] = optional_key()                    # 'memory' or 'compute', against the roofs
    percent_of_attainable: Optional[float] = optional_key()


@dataclass(frozen=True)
class Sweep:
    """An arithmetic-intensity sweep ('gemm_shapes' or 'fused_fma'): its outcome and its points."""

    method: str
    dtype: str
    status: str
    reason: Optional[str] = None
    bytes_convention: Optional[str] = optional_key()
    data: Optional[str] = optional_key()
    points: Tuple[SweepPoint, ...] = ()


@dataclass(frozen=True)
class RoofFigures:
    """A device's two roofs and where they meet; null where unknown."""

    peak_tflops: Optional[float] = None
    bandwidth_gbps: Optional[float] = None
    ridge_flop_per_byte: Optional[float] = None


@dataclass(frozen=True)
class RooflineSection:
    """The measured roofs beside the spec's, and the sweeps that climb them."""

    dtype: str
    measured: RoofFigures = field(default_factory=RoofFigures)
    spec: RoofFigures = field(default_factory=RoofFigures)
    sweeps: Tuple[Sweep, ...] = ()


@dataclass(frozen=True)
class SpecMatchInfo:
    """Which spec row describes the device, on what basis, and why (or why none)."""

    id: Optional[str]
    basis: Optional[str]
    reason: str
    candidates: Tuple[str, ...] = ()


@dataclass(frozen=True)
class CpuPeak:
    """The CPU's peak estimate: cores x clock x FLOPs per cycle, with its inputs."""

    gflops: float
    cores: float
    mhz: float
    isa: str
    sp_flops_per_cycle: int
    given_by: Optional[str] = None     # what set `cores` (a cgroup quota, a cpuset, the threads)
    note: str = ""


@dataclass(frozen=True)
class SpecSection:
    """What the figures are judged against: a GPU's spec row (as data/gpu_specs.json has it) or the CPU's
    estimated peak."""

    match: Optional[SpecMatchInfo] = None
    row: Optional[Dict[str, Any]] = None
    cpu_peak_estimate: Optional[CpuPeak] = None


@dataclass(frozen=True)
class PrecisionSection:
    at_start: PrecisionFlags
    tf32_override: bool


@dataclass(frozen=True)
class TelemetrySection:
    before: Telemetry
    after: Optional[Telemetry] = None


class ProbeEnvironment(TypedDict, total=False):
    """Python, platform, torch and its CUDA runtime: what produced the figures."""

    python: str
    platform: str
    machine: str
    torch: str
    torch_cuda: Optional[str]
    cudnn: Optional[int]
    torch_threads: int
    blas: Optional[str]


class CpuShareInfo(TypedDict, total=False):
    """The CPU a process was given: its cgroup quota, cpuset, affinity, and what that leaves it."""

    quota_cpus: Optional[float]
    quota_source: Optional[str]
    cpuset_cpus: Optional[int]
    affinity_cpus: Optional[int]
    given_cpus: float
    given_by: str


class DeviceInfo(TypedDict, total=False):
    """What the device under test says of itself: a GPU's properties, or the CPU's."""

    name: str
    index: int
    uuid: Optional[str]
    compute_capability: str
    sm_count: int
    memory_total_bytes: int
    memory_free_bytes: int
    l2_cache_bytes: Optional[int]
    cuda_visible_devices: Optional[str]
    model: Optional[str]
    logical_cpus: Optional[int]
    physical_cores: Optional[int]
    mhz: Optional[float]
    mhz_source: Optional[str]
    llc_bytes: Optional[int]
    vector_isa: Optional[str]
    torch_threads: int
    cpu_share: CpuShareInfo


@dataclass(frozen=True)
class ProbeDocument:
    """One run of the probe suite on one device (or the GPU's, waived with the reason)."""

    schema: str = PROBE_SCHEMA
    version: int = PROBE_VERSION
    mode: str = ""
    device: str = ""
    status: str = SKIP
    waived: Optional[str] = None
    started_utc: Optional[str] = None
    wall_seconds: Optional[float] = None
    environment: ProbeEnvironment = field(default_factory=ProbeEnvironment)
    device_info: DeviceInfo = field(default_factory=DeviceInfo)
    spec: Optional[SpecSection] = None
    precision: Optional[PrecisionSection] = None
    telemetry: Optional[TelemetrySection] = None
    measurements: Tuple[Measurement, ...] = ()
    roofline: Optional[RooflineSection] = None
    notes: Tuple[str, ...] = ()

    def measurement(self, mid: str) -> Optional[Measurement]:
        """The measurement `mid`, or None."""
        return next((m for m in self.measurements if m.id == mid), None)

    @property
    def device_name(self) -> str:
        """The GPU's name or the CPU's model; the device kind when it said neither."""
        return self.device_info.get("name") or self.device_info.get("model") or self.device
