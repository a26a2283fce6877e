"""The roofline picture: the points and roofs read from a probe document, and the SVG drawn from them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.schema.envelope import ProbePair, ProbesSection
from harness.schema.probe_document import ProbeDocument, RooflineSection, Sweep, SweepPoint
from refenv.model.rundoc import load_run
from refenv.report import roofline_data
from refenv.report.roofline_svg import render_svg

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "cells"
SVG = "{http://www.w3.org/2000/svg}"


def probes(cid: str) -> ProbesSection | None:
    cell = load_run(SAMPLES / "passing.json").cell(cid)
    assert cell is not None
    return cell.probes


def texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_gpu_figure_has_both_roofs_and_the_sweep() -> None:
    fig = roofline_data.figure(probes("torch-2.14.1-cu130/local/gpu"), "t", "real", "local")
    assert fig is not None and fig.dtype == "bf16" and fig.device == "cuda"
    spec = next(r for r in fig.roofs if r.kind == "spec")
    assert (spec.bandwidth_gbps, spec.peak_tflops) == (4800.0, 989.4)
    assert spec.ridge is not None and round(spec.ridge, 1) == 206.1  # facts/gpu-specs.md: H200 ridge 206
    assert fig.sweeps[0].points[0].label == "GEMM 8x8192x8192"
    assert fig.caption.startswith("GPU figures")


def test_cpu_figure_of_a_simulated_host_says_so_and_keeps_a_compute_only_spec_roof() -> None:
    fig = roofline_data.figure(probes("torch-2.14.1-cu130/r580/gpu"), "t", "simulated", "r580")
    assert fig is not None and fig.device == "cpu"
    assert "host r580 is a simulated driver" in fig.caption and "not the simulated GPU" in fig.caption
    spec = next(r for r in fig.roofs if r.kind == "spec")
    assert spec.bandwidth_gbps is None and spec.ridge is None and spec.peak_tflops == 0.3323


def test_svg_is_valid_xml_with_labelled_roofs_ridges_and_points() -> None:
    fig = roofline_data.figure(probes("torch-2.14.1-cu130/local/gpu"), "H200 <bf16>", "real", "local")
    assert fig is not None
    svg = render_svg(fig)
    root = ET.fromstring(svg)
    labels = texts(svg)
    assert "spec compute roof: 989.4 TFLOP/s" in labels
    assert "spec memory roof: 4800 GB/s" in labels
    assert "spec ridge 206" in labels
    assert "TFLOP/s (bf16)" in labels
    assert len(list(root.iter(f"{SVG}circle"))) == 6 + 1  # six points and the legend's dot
    assert root.get("aria-label") == "H200 <bf16>"  # escaped in the text, read back by the parser


def test_cpu_svg_switches_to_gflops_and_draws_the_compute_only_roof() -> None:
    fig = roofline_data.figure(probes("torch-2.14.1-cu130/r580/gpu"), "cpu", "simulated", "r580")
    assert fig is not None
    labels = texts(render_svg(fig))
    assert "GFLOP/s (fp32)" in labels
    assert "spec compute roof: 332.3 GFLOP/s" in labels
    assert not any(label.startswith("spec ridge") for label in labels)


def test_no_figure_without_points_or_roofs() -> None:
    assert roofline_data.figure(None, "t") is None
    assert roofline_data.figure(ProbePair(cpu=ProbeDocument(roofline=None)), "t") is None
    bad_point = Sweep("gemm_shapes", "fp32", "PASS", points=(SweepPoint(-1.0, 1.0),))
    assert roofline_data.figure(ProbePair(cpu=ProbeDocument(roofline=RooflineSection("fp32", sweeps=(bad_point,)))),
                                "t") is None


def test_a_figure_of_roofs_only_still_draws() -> None:
    fig = roofline_data.Figure("roofs only", "bf16", "cuda", (), (roofline_data.Roof("spec", 3350.0, 989.4),), "")
    labels = texts(render_svg(fig))
    assert "spec ridge 295" in labels  # facts/gpu-specs.md: H100 SXM ridge 295
