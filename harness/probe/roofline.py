"""Roofline arithmetic: is an operation compute- or memory-bound on a device, and how fast can it be.

Pure. The roofs are a peak FLOP/s per dtype and a memory bandwidth, from a spec sheet or from a saved
probe document; an operation is FLOPs over bytes. Attainable = min(peak, intensity x bandwidth); the
ridge point (peak / bandwidth, FLOP per byte) splits the two regimes (facts: H200 spec 206, measured
~183; H100 SXM 295; A100-80 153).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.gpus.specs import GpuSpec
from harness.probe import accounting, results


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


def analyze(op: Operation, roofs: Roofs, measured_ms: float | None = None) -> dict[str, Any]:
    """Intensity, ridge, bound, attainable throughput and least time; with a measured time, how far off."""
    peak = roofs.peak(op.dtype)
    ridge = accounting.ridge_point(peak, roofs.bandwidth_gbps)
    intensity = op.flops / op.bytes
    attainable = min(peak, intensity * roofs.bandwidth_gbps / 1000.0)
    best_s = max(op.flops / (peak * 1e12), op.bytes / (roofs.bandwidth_gbps * 1e9))
    out: dict[str, Any] = {
        "operation": op.description, "kind": op.kind, "dtype": op.dtype,
        "flops": op.flops, "bytes": op.bytes,
        "roofs": {"name": roofs.name, "source": roofs.source, "peak_tflops": peak,
                  "bandwidth_gbps": roofs.bandwidth_gbps},
        "intensity_flop_per_byte": intensity,
        "ridge_flop_per_byte": ridge,
        "bound": "compute" if intensity >= ridge else "memory",
        "attainable_tflops": attainable,
        "attainable_ms": best_s * 1000.0,
        "measured": None,
    }
    if measured_ms is not None:
        if not measured_ms > 0:
            raise RooflineError(f"--measured-ms must be positive, got {measured_ms:g}")
        seconds = measured_ms / 1000.0
        out["measured"] = {
            "ms": measured_ms,
            "tflops": op.flops / seconds / 1e12,
            "gbps": op.bytes / seconds / 1e9,
            "percent_of_roofline": 100.0 * best_s / seconds,
            "slower_by": seconds / best_s,
        }
    return out


def spec_roofs(spec: GpuSpec) -> Roofs:
    """Roofs from a spec-sheet row."""
    peaks = {d: v for d, v in spec.tflops.items() if v is not None}
    return Roofs(f"{spec.id} (spec)", "spec", spec.bandwidth_gbps, peaks)


def probe_roofs(doc: dict[str, Any], where: str = "probe document") -> Roofs:
    """Measured roofs from a saved probe document: best of copy/triad, and the best GEMM median per dtype."""
    results.check_document(doc, where)
    bandwidths = [results.figure(results.by_id(doc, m) or {}) for m in ("memory.copy", "memory.triad")]
    measured_bw = [b for b in bandwidths if b]
    if not measured_bw:
        raise RooflineError(f"{where}: no measured memory bandwidth (memory.copy / memory.triad were not run)")
    peaks = {}
    for dtype in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        value = _best(doc, dtype, [])
        if value:
            peaks[dtype] = value
    name = doc.get("device_info", {}).get("name") or doc.get("device_info", {}).get("model") or doc.get("device")
    return Roofs(f"{name} (measured)", "probe", max(measured_bw), peaks)


def classify_points(points: Iterable[dict[str, Any]], peak_tflops: float, bandwidth_gbps: float) -> list[str]:
    """'memory' or 'compute' for each sweep point, by its intensity against the ridge of these roofs."""
    ridge = accounting.ridge_point(peak_tflops, bandwidth_gbps)
    return ["compute" if p["intensity_flop_per_byte"] >= ridge else "memory" for p in points]


# The GEMM measurements that show each dtype's compute roof. On the CPU, oneDNN's fp32 matmul can beat
# torch.mm's BLAS by 2x (seen here on an AMD EPYC with MKL): the roof is the best either reached.
ROOF_MEASUREMENTS = {"fp32": ("gemm.fp32", "gemm.fp32_onednn")}


def _best(doc: dict[str, Any], dtype: str, sweeps: list[dict[str, Any]]) -> float | None:
    """The highest TFLOP/s seen in `dtype`: its GEMMs' medians or any sweep point's."""
    ids = ROOF_MEASUREMENTS.get(dtype, (f"gemm.{dtype}",))
    seen = [results.figure(results.by_id(doc, mid) or {}) for mid in ids]
    seen += [p.get("tflops_median") for s in sweeps if s.get("dtype") == dtype for p in s["points"]]
    return max((v for v in seen if v), default=None)


def summarize(measurements: list[dict[str, Any]], sweeps: list[dict[str, Any]], dtype: str,
              spec_peak_tflops: float | None, spec_bandwidth_gbps: float | None) -> dict[str, Any]:
    """The document's roofline section: measured roofs and ridge beside the spec's, and the sweeps."""
    doc = {"schema": results.SCHEMA, "version": results.VERSION, "measurements": measurements}
    bw = [results.figure(results.by_id(doc, m) or {}) for m in ("memory.copy", "memory.triad")]
    bandwidth = max((b for b in bw if b), default=None)
    peak = _best(doc, dtype, sweeps)
    measured_ridge = accounting.ridge_point(peak, bandwidth) if peak and bandwidth else None
    spec_ridge = (accounting.ridge_point(spec_peak_tflops, spec_bandwidth_gbps)
                  if spec_peak_tflops and spec_bandwidth_gbps else None)
    for sweep in sweeps:
        roof = _best(doc, sweep["dtype"], [sweep])
        if not (roof and bandwidth and sweep["points"]):
            continue
        bounds = classify_points(sweep["points"], roof, bandwidth)
        for i, point in enumerate(sweep["points"]):
            point["bound"] = bounds[i]
            attainable = min(roof, point["intensity_flop_per_byte"] * bandwidth / 1000.0)
            point["percent_of_attainable"] = round(100.0 * point["tflops_median"] / attainable, 1)
    return {
        "dtype": dtype,
        "measured": {"peak_tflops": peak, "bandwidth_gbps": bandwidth,
                     "ridge_flop_per_byte": None if measured_ridge is None else round(measured_ridge, 1)},
        "spec": {"peak_tflops": spec_peak_tflops, "bandwidth_gbps": spec_bandwidth_gbps,
                 "ridge_flop_per_byte": None if spec_ridge is None else round(spec_ridge, 1)},
        "sweeps": sweeps,
    }
