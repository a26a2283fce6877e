"""Roofline arithmetic: intensity, ridge, bound, attainable time, roofs from specs and probe documents."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from harness.gpus import specs
from harness.probe import bands, results, roofline
from harness.schema import encode
from harness.schema.probe_document import DeviceInfo, Measurement, ProbeDocument, Sweep, SweepPoint

H200 = roofline.Roofs("H200 (test)", "spec", 4800.0, {"bf16": 989.4, "fp32": 66.9, "fp8": 1979.0})


def test_square_bf16_matmul_is_compute_bound() -> None:
    r = encode(roofline.analyze(roofline.matmul(8192, 8192, 8192, "bf16"), H200))
    assert r["intensity_flop_per_byte"] == pytest.approx(8192 / 3)
    assert r["ridge_flop_per_byte"] == pytest.approx(206.1, abs=0.1)
    assert r["bound"] == "compute"
    assert r["attainable_tflops"] == 989.4
    assert r["attainable_ms"] == pytest.approx(2 * 8192**3 / 989.4e12 * 1e3)


def test_skinny_matmul_is_memory_bound() -> None:
    r = encode(roofline.analyze(roofline.matmul(8, 8192, 8192, "bf16"), H200))
    assert r["bound"] == "memory"
    assert r["attainable_tflops"] == pytest.approx(r["intensity_flop_per_byte"] * 4.8)
    assert r["attainable_ms"] == pytest.approx(r["bytes"] / 4800e9 * 1e3)


def test_decode_step_is_memory_bound_with_intensity_batch() -> None:
    # 7e9 bf16 params, batch 8: 2*7e9*8 FLOPs over 14e9 bytes of weights -> 8 FLOP/B.
    op = roofline.decode(7e9, 8, "bf16")
    r = encode(roofline.analyze(op, H200))
    assert r["intensity_flop_per_byte"] == pytest.approx(8.0)
    assert r["bound"] == "memory"
    assert r["attainable_ms"] == pytest.approx(14e9 / 4800e9 * 1e3)


def test_decode_kv_bytes_lower_intensity() -> None:
    plain = roofline.decode(7e9, 64, "bf16")
    with_kv = roofline.decode(7e9, 64, "bf16", kv_bytes=14e9)
    assert with_kv.bytes == plain.bytes + 14e9
    assert with_kv.flops / with_kv.bytes == pytest.approx(plain.flops / plain.bytes / 2)


def test_elementwise_uses_the_fp32_roof() -> None:
    op = roofline.elementwise(1e9, 12, flops_per_element=1)
    r = encode(roofline.analyze(op, H200))
    assert r["dtype"] == "fp32"
    assert r["intensity_flop_per_byte"] == pytest.approx(1 / 12)
    assert r["bound"] == "memory"
    # A long fused chain crosses the fp32 ridge (66.9 / 4.8 ~ 13.9 FLOP/B).
    assert roofline.analyze(roofline.elementwise(1e9, 8, 200), H200).bound == "compute"


def test_measured_time_against_the_roofline() -> None:
    op = roofline.decode(7e9, 8, "bf16")
    best_ms = 14e9 / 4800e9 * 1e3
    r = encode(roofline.analyze(op, H200, measured_ms=2 * best_ms))
    assert r["measured"]["percent_of_roofline"] == pytest.approx(50.0)
    assert r["measured"]["slower_by"] == pytest.approx(2.0)
    assert r["measured"]["gbps"] == pytest.approx(2400.0)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: roofline.matmul(0, 1, 1), "m must be positive"),
    (lambda: roofline.decode(7e9, 0), "batch"),
    (lambda: roofline.decode(7e9, 1, kv_bytes=-1), "kv-bytes"),
    (lambda: roofline.elementwise(10, 0), "bytes-per-element"),
    (lambda: roofline.elementwise(10, 4, -1), "flops-per-element"),
    (lambda: roofline.analyze(roofline.matmul(1, 1, 1, "tf32"), H200), "no tf32 compute roof"),
    (lambda: roofline.analyze(roofline.matmul(1, 1, 1), H200, measured_ms=0), "measured-ms"),
])
def test_bad_questions_say_what_is_wrong(make: Any, message: str) -> None:
    with pytest.raises(roofline.RooflineError, match=message):
        make()


def test_spec_roofs_drop_missing_units() -> None:
    v100 = specs.find_spec("V100")
    assert v100 is not None
    roofs = roofline.spec_roofs(v100)
    assert "bf16" not in roofs.peak_tflops and roofs.peak_tflops["fp16"] == 125
    assert roofs.bandwidth_gbps == 900


def _record(mid: str, unit: str, value: float) -> Measurement:
    seconds = [1.0, 1.0, 1.0]
    work = value * (1e9 if unit == "gbps" else 1e12)
    return results.measured(mid, unit=unit, work=work, seconds=seconds, convention="",
                             judgement=bands.judge(value, None, None), reference=None, params={})


def _probe_doc() -> ProbeDocument:
    return dataclasses.replace(results.new_document("full", "cuda"), device_info=DeviceInfo(name="NVIDIA H200"),
                               measurements=(_record("memory.copy", "gbps", 4300.0),
                                             _record("memory.triad", "gbps", 4150.0),
                                             _record("gemm.bf16", "tflops", 788.0), results.skipped("gemm.fp8", "test")))


def test_probe_roofs_take_the_best_bandwidth_and_each_gemm() -> None:
    roofs = roofline.probe_roofs(_probe_doc())
    assert roofs.bandwidth_gbps == 4300.0
    assert roofs.peak_tflops == {"bf16": 788.0}
    assert "NVIDIA H200" in roofs.name
    r = encode(roofline.analyze(roofline.matmul(8192, 8192, 8192), roofs))
    assert r["ridge_flop_per_byte"] == pytest.approx(183.3, abs=0.1)


def test_probe_roofs_need_a_bandwidth() -> None:
    doc = _probe_doc()
    doc = dataclasses.replace(doc, measurements=doc.measurements[2:])
    with pytest.raises(roofline.RooflineError, match=r"memory\.copy"):
        roofline.probe_roofs(doc)


def test_summary_puts_measured_ridge_beside_the_spec_and_classifies_points() -> None:
    sweep = Sweep("gemm_shapes", "bf16", "PASS", points=(SweepPoint(8.0, 30.0), SweepPoint(2731.0, 780.0)))
    out = encode(roofline.summarize(_probe_doc().measurements, [sweep], "bf16", 989.4, 4800.0))
    assert out["measured"] == {"peak_tflops": 788.0, "bandwidth_gbps": 4300.0, "ridge_flop_per_byte": 183.3}
    assert out["spec"]["ridge_flop_per_byte"] == pytest.approx(206.1)
    first, last = out["sweeps"][0]["points"]
    assert (first["bound"], last["bound"]) == ("memory", "compute")
    assert first["percent_of_attainable"] == pytest.approx(100 * 30.0 / (8.0 * 4.3), abs=0.1)
    assert last["percent_of_attainable"] == pytest.approx(100 * 780.0 / 788.0, abs=0.1)


def test_classify_points_at_the_ridge() -> None:
    points = [SweepPoint(x, 1.0) for x in (1.0, 200.0, 250.0)]
    assert roofline.classify_points(points, 1000.0, 5000.0) == ["memory", "compute", "compute"]


def test_fp32_roof_is_the_best_cpu_gemm() -> None:
    doc = dataclasses.replace(results.new_document("quick", "cpu"), measurements=(
        _record("memory.triad", "gbps", 45.0), _record("gemm.fp32", "tflops", 0.21),
        _record("gemm.fp32_onednn", "tflops", 0.46)))
    roofs = roofline.probe_roofs(doc)
    assert roofs.peak("fp32") == 0.46
    assert roofline.summarize(doc.measurements, [], "fp32", None, None).measured.peak_tflops == 0.46
