"""The roofline picture's data: sweep points and roofs read out of a probe document.

The document's `roofline` section is written by `harness.probe.roofline.summarize`: a dtype, spec and
measured roofs (`peak_tflops`, `bandwidth_gbps`, `ridge_flop_per_byte`) and sweeps of points
(`intensity_flop_per_byte`, `tflops_median`). On a CPU probe the roofs are the CPU's, which a
report must say plainly when the host it stands for is a simulated GPU host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.schema.envelope import ProbesSection
from harness.schema.probe_document import RoofFigures, SweepPoint
from harness.schema.probe_document import Sweep as SweepRecord
from refenv.report.probes import documents

SWEEP_NAMES = {"gemm_shapes": "GEMM shape sweep", "fused_fma": "fused x*a+b sweep"}


@dataclass(frozen=True)
class Point:
    """One measured point: intensity (FLOP/byte), throughput (TFLOP/s) and what it was."""

    intensity: float
    tflops: float
    label: str


@dataclass(frozen=True)
class Sweep:
    """A series of points from one sweep method."""

    name: str
    dtype: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Roof:
    """A memory roof and a compute roof, either possibly unknown; `kind` is 'spec' or 'measured'."""

    kind: str
    bandwidth_gbps: float | None
    peak_tflops: float | None

    @property
    def ridge(self) -> float | None:
        """FLOP per byte where the two roofs meet, when both are known."""
        if self.bandwidth_gbps and self.peak_tflops:
            return self.peak_tflops * 1000.0 / self.bandwidth_gbps
        return None


@dataclass(frozen=True)
class Figure:
    """Everything one roofline picture draws, and the caption that says what the roofs are."""

    title: str
    dtype: str
    device: str
    sweeps: tuple[Sweep, ...]
    roofs: tuple[Roof, ...]
    caption: str


def _positive(value: float | None) -> float | None:
    if value is not None and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _roof(figures: RoofFigures, kind: str) -> Roof | None:
    bw, peak = _positive(figures.bandwidth_gbps), _positive(figures.peak_tflops)
    return Roof(kind, bw, peak) if bw or peak else None


def _label(p: SweepPoint) -> str:
    if p.m is not None:
        return f"GEMM {p.m}x{p.n}x{p.k}"
    if p.steps is not None:
        return f"{p.steps} fused steps"
    return "point"


def _sweep(raw: SweepRecord) -> Sweep | None:
    points = []
    for p in raw.points:
        x, y = _positive(p.intensity_flop_per_byte), _positive(p.tflops_median)
        if x and y:
            points.append(Point(x, y, _label(p)))
    if not points:
        return None
    method = raw.method or "sweep"
    return Sweep(SWEEP_NAMES.get(method, method), raw.dtype, tuple(points))


def caption_for(device: str, host_kind: str, host: str) -> str:
    """Say what the roofs are: a GPU's, or the CPU's when the host it stands for is simulated."""
    if device == "cpu" and host_kind == "simulated":
        return (f"CPU figures: host {host} is a simulated driver, so device work cannot run; these roofs and "
                "points are the CPU of the machine that ran the container, not the simulated GPU.")
    if device == "cpu":
        return "CPU figures: roofs and points measured on the CPU of the machine that ran the container."
    return "GPU figures: spec roofs from the GPU's data sheet, measured roofs and points from this run."


def figure(probes: ProbesSection | None, title: str, host_kind: str = "", host: str = "") -> Figure | None:
    """The roofline picture of a cell's or a measurement's probes, or None without one."""
    probe = next((d for d in documents(probes) if d.roofline is not None), None)
    if probe is None or probe.roofline is None:
        return None
    section = probe.roofline
    sweeps = tuple(s for s in (_sweep(r) for r in section.sweeps) if s)
    roofs = tuple(r for r in (_roof(section.spec, "spec"), _roof(section.measured, "measured")) if r)
    if not sweeps and not roofs:
        return None
    return Figure(title=title, dtype=section.dtype, device=probe.device, sweeps=sweeps, roofs=roofs,
                  caption=caption_for(probe.device, host_kind, host))
