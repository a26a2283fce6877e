"""Roofline arithmetic: is an operation compute- or memory-bound on a device, and how fast can it be.

Pure. The roofs are a peak FLOP/s per dtype and a memory bandwidth, from a spec sheet or from a saved
probe document; an operation is FLOPs over bytes. Attainable = min(peak, intensity x bandwidth); the
ridge point (peak / bandwidth, FLOP per byte) splits the two regimes (facts: H200 spec 206, measured
~183; H100 SXM 295; A100-80 153).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.gpus.specs import GpuSpec
from harness.probe import accounting
from harness.schema.probe_document import Measurement, ProbeDocument, RoofFigures, RooflineSection, Sweep, SweepPoint


class RooflineError(ValueError):
    """The question cannot be answered from these roofs (the message says which figure is missing)."""


@dataclass(frozen=True)
class Roofs:
    """The two roofs of a device: peak TFLOP/s per dtype and memory bandwidth in GB/s."""

    name: str
    source: str  # "spec" or "probe"
    bandwidth_gbps: float
    peak_tflops: dict[str, float]

    def peak(self, dtype: str) -> float:
        if dtype not in self.peak_tflops:
            have = ", ".join(sorted(self.peak_tflops)) or "none"
            raise RooflineError(f"{self.name}: no {dtype} compute roof ({self.source} has: {have})")
        return self.peak_tflops[dtype]


@dataclass(frozen=True)
class Operation:
    """Work to place under the roofs: its FLOPs, the bytes it must move, and which compute roof applies."""

    kind: str
    description: str
    flops: float
    bytes: float
    dtype: str


def matmul(m: int, n: int, k: int, dtype: str = "bf16") -> Operation:
    """An (M x K) @ (K x N) GEMM, each operand read once and the output written once."""
    _positive(m=m, n=n, k=k)
    return Operation("matmul", f"matmul {m}x{n}x{k} {dtype}", accounting.gemm_flops(m, n, k),
                     accounting.gemm_bytes(m, n, k, dtype), dtype)


def elementwise(numel: float, bytes_per_element: float, flops_per_element: float = 1.0) -> Operation:
    """An elementwise kernel: bytes read + written per element, FLOPs per element, on the fp32 units."""
    _positive(numel=numel, bytes_per_element=bytes_per_element)
    if flops_per_element < 0:
        raise RooflineError(f"--flops-per-element must be 0 or more, got {flops_per_element:g}")
    return Operation("elementwise", f"elementwise over {numel:g} elements, {bytes_per_element:g} B and "
                     f"{flops_per_element:g} FLOP each", numel * flops_per_element, numel * bytes_per_element,
                     "fp32")


def decode(params: float, batch: int, dtype: str = "bf16", kv_bytes: float = 0.0) -> Operation:
    """One LLM decode step: 2 x params x batch FLOPs; every weight read once per step, plus the KV cache."""
    _positive(params=params, batch=batch)
    if kv_bytes < 0:
        raise RooflineError(f"--kv-bytes must be 0 or more, got {kv_bytes:g}")
    weights = params * accounting.element_bytes(dtype)
    return Operation("decode", f"decode step, {params:g} params, batch {batch}, {dtype}, KV {kv_bytes:g} B",
                     2.0 * params * batch, weights + kv_bytes, dtype)


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise RooflineError(f"{name.replace('_', '-')} must be positive, got {value:g}")


@dataclass(frozen=True)
class RoofsUsed:
    """The roofs an answer was read against."""

    name: str
    source: str
    peak_tflops: float
    bandwidth_gbps: float


@dataclass(frozen=True)
class MeasuredTime:
    """A measured time against the roofline: its rates, and how far from the least time it is."""

    ms: float
    tflops: float
    gbps: float
    percent_of_roofline: float
    slower_by: float


@dataclass(frozen=True)
class Analysis:
    """Where an operation sits under the roofs: compute- or memory-bound, and how fast it can be."""

    operation: str
    kind: str
    dtype: str
    flops: float
    bytes: float
    roofs: RoofsUsed
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float
    bound: str
    attainable_tflops: float
    attainable_ms: float
    measured: MeasuredTime | None = None


def analyze(op: Operation, roofs: Roofs, measured_ms: float | None = None) -> Analysis:
    """Intensity, ridge, bound, attainable throughput and least time; with a measured time, how far off."""
    peak = roofs.peak(op.dtype)
    ridge = accounting.ridge_point(peak, roofs.bandwidth_gbps)
    intensity = op.flops / op.bytes
    attainable = min(peak, intensity * roofs.bandwidth_gbps / 1000.0)
    best_s = max(op.flops / (peak * 1e12), op.bytes / (roofs.bandwidth_gbps * 1e9))
    measured = None
    if measured_ms is not None:
        if not measured_ms > 0:
            raise RooflineError(f"--measured-ms must be positive, got {measured_ms:g}")
        seconds = measured_ms / 1000.0
        measured = MeasuredTime(measured_ms, op.flops / seconds / 1e12, op.bytes / seconds / 1e9,
                                100.0 * best_s / seconds, seconds / best_s)
    return Analysis(op.description, op.kind, op.dtype, op.flops, op.bytes,
                    RoofsUsed(roofs.name, roofs.source, peak, roofs.bandwidth_gbps), intensity, ridge,
                    "compute" if intensity >= ridge else "memory", attainable, best_s * 1000.0, measured)


def spec_roofs(spec: GpuSpec) -> Roofs:
    """Roofs from a spec-sheet row."""
    peaks = {d: v for d, v in spec.tflops.items() if v is not None}
    return Roofs(f"{spec.id} (spec)", "spec", spec.bandwidth_gbps, peaks)


def probe_roofs(doc: ProbeDocument, where: str = "probe document") -> Roofs:
    """Measured roofs from a saved probe document: best of copy/triad, and the best GEMM median per dtype."""
    measured_bw = [b for b in _bandwidths(doc.measurements) if b]
    if not measured_bw:
        raise RooflineError(f"{where}: no measured memory bandwidth (memory.copy / memory.triad were not run)")
    peaks = {}
    for dtype in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        value = _best(doc.measurements, dtype, [])
        if value:
            peaks[dtype] = value
    return Roofs(f"{doc.device_name} (measured)", "probe", max(measured_bw), peaks)


def classify_points(points: Iterable[SweepPoint], peak_tflops: float, bandwidth_gbps: float) -> list[str]:
    """'memory' or 'compute' for each sweep point, by its intensity against the ridge of these roofs."""
    ridge = accounting.ridge_point(peak_tflops, bandwidth_gbps)
    return ["compute" if p.intensity_flop_per_byte >= ridge else "memory" for p in points]


# The GEMM measurements that show each dtype's compute roof. On the CPU, oneDNN's fp32 matmul can beat
# torch.mm's BLAS by 2x (seen here on an AMD EPYC with MKL): the roof is the best either reached.
ROOF_MEASUREMENTS = {"fp32": ("gemm.fp32", "gemm.fp32_onednn")}


def _figures(measurements: Sequence[Measurement], ids: Iterable[str]) -> list[float | None]:
    by_id = {m.id: m for m in measurements}
    return [by_id[mid].median if mid in by_id else None for mid in ids]


def _bandwidths(measurements: Sequence[Measurement]) -> list[float | None]:
    return _figures(measurements, ("memory.copy", "memory.triad"))


def _best(measurements: Sequence[Measurement], dtype: str, sweeps: Sequence[Sweep]) -> float | None:
    """The highest TFLOP/s seen in `dtype`: its GEMMs' medians or any sweep point's."""
    seen = _figures(measurements, ROOF_MEASUREMENTS.get(dtype, (f"gemm.{dtype}",)))
    seen += [p.tflops_median for s in sweeps if s.dtype == dtype for p in s.points]
    return max((v for v in seen if v), default=None)


def _judged(sweep: Sweep, roof: float, bandwidth: float) -> Sweep:
    """The sweep with each point's bound and how close it came to what the roofs allow there."""
    points = []
    for point, bound in zip(sweep.points, classify_points(sweep.points, roof, bandwidth)):  # noqa: B905
        attainable = min(roof, point.intensity_flop_per_byte * bandwidth / 1000.0)
        points.append(dataclasses.replace(point, bound=bound, percent_of_attainable=round(
            100.0 * point.tflops_median / attainable, 1)))
    return dataclasses.replace(sweep, points=tuple(points))


def _ridge(peak: float | None, bandwidth: float | None) -> float | None:
    return round(accounting.ridge_point(peak, bandwidth), 1) if peak and bandwidth else None


def summarize(measurements: Sequence[Measurement], sweeps: Sequence[Sweep], dtype: str,
              spec_peak_tflops: float | None, spec_bandwidth_gbps: float | None) -> RooflineSection:
    """The document's roofline section: measured roofs and ridge beside the spec's, and the sweeps."""
    bandwidth = max((b for b in _bandwidths(measurements) if b), default=None)
    peak = _best(measurements, dtype, sweeps)
    judged = []
    for sweep in sweeps:
        roof = _best(measurements, sweep.dtype, [sweep])
        judged.append(_judged(sweep, roof, bandwidth) if roof and bandwidth and sweep.points else sweep)
    return RooflineSection(dtype, RoofFigures(peak, bandwidth, _ridge(peak, bandwidth)),
                           RoofFigures(spec_peak_tflops, spec_bandwidth_gbps,
                                       _ridge(spec_peak_tflops, spec_bandwidth_gbps)), tuple(judged))
