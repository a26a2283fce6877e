"""The roofline picture's data: sweep points and roofs read out of a probe document.

The document's `roofline` section is written by `harness.probe.roofline.summarize`: a dtype, spec and
measured roofs (`peak_tflops`, `bandwidth_gbps`, `ridge_flop_per_byte`) and sweeps of points
(`intensity_flop_per_byte`, `tflops_median`). On a CPU probe the roofs are the CPU's, which a
report must say plainly when the host it stands for is a simulated GPU host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from refenv.report.formats import as_dict, as_list
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


def _positive(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _roof(section: Any, kind: str) -> Roof | None:
    d = as_dict(section)
    bw, peak = _positive(d.get("bandwidth_gbps")), _positive(d.get("peak_tflops"))
    return Roof(kind, bw, peak) if bw or peak else None


def _label(p: dict[str, Any]) -> str:
    if "m" in p:
        return f"GEMM {p.get('m')}x{p.get('n')}x{p.get('k')}"
    if "steps" in p:
        return f"{p.get('steps')} fused steps"
    return "point"


def _sweep(raw: dict[str, Any]) -> Sweep | None:
    points = []
    for p in as_list(raw.get("points")):
        if not isinstance(p, dict):
            continue
        x, y = _positive(p.get("intensity_flop_per_byte")), _positive(p.get("tflops_median"))
        if x and y:
            points.append(Point(x, y, _label(p)))
    if not points:
        return None
    method = str(raw.get("method") or "sweep")
    return Sweep(SWEEP_NAMES.get(method, method), str(raw.get("dtype") or ""), tuple(points))


def caption_for(device: str, host_kind: str, host: str) -> str:
    """Say what the roofs are: a GPU's, or the CPU's when the host it stands for is simulated."""
    if device == "cpu" and host_kind == "simulated":
        return (f"CPU figures: host {host} is a simulated driver, so device work cannot run; these roofs and "
                "points are the CPU of the machine that ran the container, not the simulated GPU.")
    if device == "cpu":
        return "CPU figures: roofs and points measured on the CPU of the machine that ran the container."
    return "GPU figures: spec roofs from the GPU's data sheet, measured roofs and points from this run."


def figure(probes: Any, title: str, host_kind: str = "", host: str = "") -> Figure | None:
    """The roofline picture of a cell's probes (a document, or the gpu/cpu pair), or None without one."""
    probe = next((d for d in documents(probes) if as_dict(d.get("roofline")).get("sweeps")
                  or as_dict(d.get("roofline")).get("measured")), None)
    if probe is None:
        return None
    section = as_dict(probe.get("roofline"))
    sweeps = tuple(s for s in (_sweep(r) for r in as_list(section.get("sweeps")) if isinstance(r, dict)) if s)
    roofs = tuple(r for r in (_roof(section.get("spec"), "spec"), _roof(section.get("measured"), "measured")) if r)
    if not sweeps and not roofs:
        return None
    device = str(probe.get("device") or "")
    return Figure(title=title, dtype=str(section.get("dtype") or ""), device=device, sweeps=sweeps, roofs=roofs,
                  caption=caption_for(device, host_kind, host))
