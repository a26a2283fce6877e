"""`memory --format svg|html`: the ledgers as stacked bars against the budget, one bar per rung of --fit; the
matrix report's memory checks drawn the same way."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from harness.__main__ import main
from harness.memory.budget import gpu_budget, judge
from harness.memory.estimate import InferSetup, TrainSetup, estimate_inference, estimate_training
from harness.memory.ladder import ladder
from harness.memory.picture import Bar, bars_svg, render_html, render_svg
from harness.memory.presets import preset
from refenv.report.memory import memory_summary, memory_svg
from tests.unit.test_report_memory import memory

SVG = "{http://www.w3.org/2000/svg}"


def segments(svg: str) -> list[str]:
    """The titles of the drawn segments ('weights: 1.00 GiB (...)'), in drawing order."""
    root = ET.fromstring(svg)
    titles = (r.find(f"{SVG}title") for r in root.iter(f"{SVG}rect"))
    return [t.text or "" for t in titles if t is not None]


def test_a_training_estimate_against_a_gpu_with_its_ladder() -> None:
    cfg = preset("llama-3-8b")
    setup = TrainSetup(micro_batch=8, seq_len=4096)
    est = estimate_training(cfg, setup)
    budget = gpu_budget("H100-SXM")
    fit = judge(est.peak_bytes, budget)
    plans = ladder(cfg, setup, budget)
    svg = render_svg(est, fit, plans)
    drawn = segments(svg)
    # The four state ledgers and the activations per bar, the peak's transients, and the budget's band.
    assert sum(t.startswith("weights:") for t in drawn) == 1 + len(plans)
    assert any(t.startswith("CUDA context 300.00 MiB + fragmentation margin 10%") for t in drawn)
    texts = " ".join(t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text"))
    assert "usable" in texts and "H100-SXM" in texts and "does NOT fit" in texts
    assert [p.title for p in plans][-1][:20] in texts and "FITS" in texts


def test_serving_draws_the_kv_cache_and_no_budget_without_one() -> None:
    est = estimate_inference(preset("gemma-3-27b"), InferSetup(context=131_072))
    drawn = segments(render_svg(est, None))
    assert [t.split(":")[0] for t in drawn] == ["weights", "activations", "KV cache"]


def test_names_are_escaped() -> None:
    est = estimate_inference(replace(preset("gpt2"), name='<b>"&'), InferSetup())
    svg = render_svg(est, None)
    ET.fromstring(svg)
    assert "<b>" not in svg and "&lt;b&gt;&quot;&amp;" in svg
    page = render_html(est, None)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<pre>" in page and "<b>" not in page


def test_bars_share_one_scale() -> None:
    svg = bars_svg("t", (Bar("a", (("weights", 100),)), Bar("b", (("weights", 50),))))
    widths = [float(r.get("width") or 0) for r in ET.fromstring(svg).iter(f"{SVG}rect") if r.get("fill") == "#0072B2"]
    assert widths[0] == pytest.approx(2 * widths[1])


@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_the_cli_prints_the_picture(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    rc = main(["memory", "--model", "deepseek-v3", "--mode", "infer", "--gpu", "H200", "--fit", "--format", fmt])
    out = capsys.readouterr().out
    assert rc in (0, 1) and ("<svg" in out) and (out.startswith("<!DOCTYPE html>") == (fmt == "html"))
    if fmt == "svg":
        ET.fromstring(out)


def test_the_matrix_report_draws_its_memory_check_the_same_way() -> None:
    summary = memory_summary(memory({"status": "FAIL", "device": "cpu", "cases": [
        {"name": "small/mixed", "status": "FAIL", "ledgers": {
            "weights": {"predicted_bytes": 2048, "measured_bytes": 2048, "status": "PASS", "tolerance": "exact"},
            "activations": {"predicted_bytes": 1000, "measured_bytes": 1310, "status": "FAIL",
                            "tolerance": "within 5%"}}},
        {"name": "broken", "status": "ERROR", "error": "RuntimeError: no"}]}))
    assert summary is not None
    svg = memory_svg(summary)
    assert svg is not None
    drawn = segments(svg)
    assert drawn == ["weights: 2.00 KiB (2,048 B)", "activations: 1000 B (1,000 B)",
                     "weights: 2.00 KiB (2,048 B)", "activations: 1.28 KiB (1,310 B)"]
    names = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert "small/mixed predicted" in names and "small/mixed measured" in names
    empty = memory_summary(memory({"status": "ERROR", "cases": [{"name": "x", "status": "ERROR", "error": "e"}]}))
    assert empty is not None and memory_svg(empty) is None
