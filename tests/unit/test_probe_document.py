"""The refenv.probe document: records from synthetic timings, the waived-GPU document, skip rules."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from harness.probe import bands, gemm, results, telemetry, waived_gpu
from harness.schema import encode
from harness.schema.probe_document import Measurement, RooflineSection, Sweep


def _copy_record() -> Measurement:
    nbytes = 2 * 2**30
    seconds = [0.5e-3, 0.5e-3 * 1.02, 0.5e-3 * 0.99]
    judgement = bands.judge(nbytes / 0.5e-3 / 1e9, 4800.0, bands.BANDS["memory"])
    return results.measured("memory.copy", unit="gbps", work=nbytes, seconds=seconds,
                             convention="read + write", judgement=judgement, reference=4800.0,
                             params={"buffer_bytes": 2**30})


def test_measured_record_has_units_in_keys_and_samples_beside_the_median() -> None:
    rec: dict[str, Any] = encode(_copy_record())  # as the document holds it
    assert rec["gbps_median"] == pytest.approx(2 * 2**30 / 0.5e-3 / 1e9, rel=1e-4)
    assert len(rec["gbps_samples"]) == 3
    assert rec["bytes_per_call"] == 2 * 2**30
    assert rec["reference_gbps"] == 4800.0
    assert rec["status"] == "PASS"
    assert rec["percent_of_peak"] == pytest.approx(89.5, abs=0.1)
    assert rec["band"]["source"]
    json.dumps(rec)


def test_tflops_record() -> None:
    flops = 2 * 8192**3
    judgement = bands.judge(flops / 1.4e-3 / 1e12, 989.4, bands.BANDS["gemm.bf16"])
    rec = encode(results.measured("gemm.bf16", unit="tflops", work=flops, seconds=[1.4e-3] * 3,
                                  convention="2MNK", judgement=judgement, reference=989.4, params={}))
    assert rec["tflops_median"] == pytest.approx(785.4, rel=1e-3)
    assert rec["flops_per_call"] == flops
    assert rec["unit"] == "TFLOP/s"
    with pytest.raises(ValueError, match="furlongs"):
        results.measured("x", unit="furlongs", work=1, seconds=[1.0], convention="", judgement=judgement,
                          reference=None, params={})


def test_document_status_is_the_worst_measurement() -> None:
    doc = dataclasses.replace(results.new_document("quick", "cuda"), measurements=(
        _copy_record(), results.skipped("gemm.fp8", "no fp8"), results.failed("gemm.bf16", "probe raised RuntimeError: boom")))
    finished = results.finish(doc)
    assert finished.status == "FAIL"
    assert results.check_document(json.loads(json.dumps(encode(finished)))) == finished  # read back as written


def test_waived_gpu_document() -> None:
    doc = encode(waived_gpu("simulated driver: no device work"))
    assert (doc["schema"], doc["version"], doc["device"]) == ("refenv.probe", 1, "cuda")
    assert doc["status"] == "SKIP"
    assert doc["waived"] == "simulated driver: no device work"
    assert {m["id"] for m in doc["measurements"]} == set(results.GPU_IDS)
    assert all(m["status"] == "SKIP" and m["reason"] == doc["waived"] for m in doc["measurements"])
    json.dumps(doc)


@pytest.mark.parametrize(("doc", "message"), [
    ([], "JSON object"),
    ({"schema": "refenv.diagnosis", "version": 1, "measurements": []}, "refenv.probe"),
    ({"schema": "refenv.probe", "version": 99, "measurements": []}, "version"),
    ({"schema": "refenv.probe", "version": 1}, "measurements"),
])
def test_check_document_names_what_is_off(doc: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        results.check_document(doc)


@pytest.mark.parametrize(("dtype", "device", "cc", "skipped"), [
    ("bf16", "cuda", (7, 0), True),    # V100: bf16 emulated
    ("bf16", "cuda", (8, 0), False),
    ("tf32", "cuda", (7, 5), True),
    ("fp8", "cuda", (8, 6), True),
    ("fp8", "cuda", (8, 9), False),
    ("fp8", "cuda", (9, 0), False),
    ("fp16", "cuda", (7, 0), False),
    ("fp32", "cpu", None, False),
    ("bf16", "cpu", None, True),
])
def test_gemm_skip_rules(dtype: str, device: str, cc: tuple[int, int] | None, skipped: bool) -> None:
    assert (gemm.skip_reason(dtype, device, cc) is not None) == skipped


def test_throttle_reasons_decode() -> None:
    assert telemetry.decode_throttle(0) == []
    assert telemetry.decode_throttle(0x1 | 0x4) == ["gpu_idle", "sw_power_cap"]
    assert telemetry.decode_throttle(0x1000) == ["0x1000"]


def test_telemetry_reading_has_every_field_or_says_why_not() -> None:
    reading = encode(telemetry.read_telemetry(None))
    assert set(telemetry.FIELDS) <= set(reading)
    if not reading["available"]:
        assert reading["error"]
        assert all(reading[f] is None for f in telemetry.FIELDS)


def test_a_failed_sweep_fails_the_document() -> None:
    doc = dataclasses.replace(results.new_document("full", "cuda"), measurements=(_copy_record(),))
    failed = dataclasses.replace(doc, roofline=RooflineSection("bf16", sweeps=(Sweep("fused_fma", "fp32", "FAIL"),)))
    assert results.finish(failed).status == "FAIL"
    skipped = dataclasses.replace(doc, roofline=RooflineSection("bf16", sweeps=(Sweep("fused_fma", "fp32", "SKIP"),)))
    assert results.finish(skipped).status == "PASS"
