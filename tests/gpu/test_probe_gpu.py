"""The probe on a real GPU: the document, the fp32/TF32 split, the roofline, and the H200 targets.

The full suite runs once per session, in a fresh process, as a user would run it. benchmarks/gpu_suite.sh
runs both suites first and hands their documents and wall times over (REFENV_PROBE_FULL_JSON,
REFENV_PROBE_FULL_SECONDS, REFENV_PROBE_QUICK_JSON, REFENV_PROBE_QUICK_SECONDS) so nothing runs twice.
H200 targets (facts/gpu-specs.md; measured here: copy ~4.3 TB/s, bf16 769-798 TFLOP/s): device copy
>= 4.2 TB/s read + write, bf16 GEMM >= 770 TFLOP/s, quick suite <= 20 s, full suite <= 90 s.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
H200_COPY_GBPS = 4200.0
H200_BF16_TFLOPS = 770.0
QUICK_SECONDS = 20.0
FULL_SECONDS = 90.0


def _suite(mode: str, tmp: Path) -> tuple[dict[str, Any], float]:
    """(document, wall seconds) of `python -m harness probe --<mode> --device cuda`, handed over or run here."""
    given = os.environ.get(f"REFENV_PROBE_{mode.upper()}_JSON")
    seconds = os.environ.get(f"REFENV_PROBE_{mode.upper()}_SECONDS")
    if given and seconds:
        return json.loads(Path(given).read_text(encoding="utf-8")), float(seconds)
    out = tmp / f"probe_{mode}.json"
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", "probe", f"--{mode}", "--device", "cuda", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - t0
    assert done.returncode in (0, 1), done.stderr
    return json.loads(out.read_text(encoding="utf-8")), wall


@pytest.fixture(scope="session")
def full(require_cuda: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], float]:
    return _suite("full", tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="session")
def quick(require_cuda: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], float]:
    return _suite("quick", tmp_path_factory.mktemp("quick"))


def _m(doc: dict[str, Any], mid: str) -> dict[str, Any]:
    found = [m for m in doc["measurements"] if m["id"] == mid]
    assert found, f"{mid} missing"
    one: dict[str, Any] = found[0]
    return one


def _is_h200(doc: dict[str, Any]) -> bool:
    return "H200" in str(doc["device_info"].get("name"))


def _h200_only(doc: dict[str, Any]) -> None:
    if not _is_h200(doc):
        pytest.skip(f"H200 targets; this is {doc['device_info'].get('name')}")


def test_document_describes_the_gpu(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    assert (doc["schema"], doc["version"], doc["device"], doc["mode"]) == ("refenv.probe", 1, "cuda", "full")
    info = doc["device_info"]
    assert info["sm_count"] > 0 and info["memory_total_bytes"] > 0 and info["l2_cache_bytes"] > 0
    copy = _m(doc, "memory.copy")
    assert copy["params"]["buffer_bytes"] >= 16 * info["l2_cache_bytes"]
    assert doc["spec"]["match"]["reason"]


def test_h200_matches_its_spec_row(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    _h200_only(doc)
    assert doc["spec"]["match"]["id"] == "H200-SXM"
    assert doc["spec"]["match"]["basis"] == "name+hardware"


def test_no_probe_raised_and_none_failed(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    for m in doc["measurements"]:
        assert "raised" not in (m.get("reason") or ""), m
        assert m["status"] != "FAIL", m
    for sweep in doc["roofline"]["sweeps"]:
        assert sweep["status"] != "FAIL", sweep


def test_samples_beside_every_median(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    for m in doc["measurements"]:
        if m["status"] == "SKIP":
            continue
        unit = "gbps" if "gbps_median" in m else "tflops"
        assert m[f"{unit}_median"] == pytest.approx(statistics.median(m[f"{unit}_samples"]), rel=1e-3)
        assert all(v > 0 for v in m[f"{unit}_samples"])


def test_fp32_is_ieee_and_tf32_is_faster(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    fp32, tf32 = _m(doc, "gemm.fp32"), _m(doc, "gemm.tf32")
    assert fp32["params"]["precision"]["allow_tf32_cublas"] is False
    assert tf32["params"]["precision"]["allow_tf32_cublas"] is True
    if os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") != "1":
        assert "fp32_above_peak" not in fp32["flags"], fp32["reason"]
    if tf32["status"] != "SKIP":
        assert tf32["tflops_median"] > 2 * fp32["tflops_median"]


def test_telemetry_read_before_and_after(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    for when in ("before", "after"):
        reading = doc["telemetry"][when]
        assert reading["available"], reading["error"]
        assert reading["sm_clock_mhz"] > 0
    assert _m(doc, "gemm.bf16")["params"]["telemetry_after"]["power_w"] > 0


def test_roofline_climbs_from_memory_to_compute(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    roof = doc["roofline"]
    assert roof["measured"]["ridge_flop_per_byte"] > 0
    shapes = next(s for s in roof["sweeps"] if s["method"] == "gemm_shapes")
    bounds = [p["bound"] for p in shapes["points"]]
    assert bounds[0] == "memory" and bounds[-1] == "compute"
    fused = next(s for s in roof["sweeps"] if s["method"] == "fused_fma")
    assert fused["status"] == "PASS", fused["reason"]
    rates = [p["tflops_median"] for p in fused["points"]]
    assert rates[-1] > 5 * rates[0]  # fused steps raise intensity; eager chaining would not


def test_h200_measured_ridge_near_the_facts(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    _h200_only(doc)
    # Facts: spec ridge 206, measured here 788 / 4.3 = ~183 FLOP/B.
    assert 150 <= doc["roofline"]["measured"]["ridge_flop_per_byte"] <= 230
    assert doc["roofline"]["spec"]["ridge_flop_per_byte"] == pytest.approx(206.1, abs=0.1)


def test_h200_device_copy_bandwidth(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    _h200_only(doc)
    copy = _m(doc, "memory.copy")
    assert copy["gbps_median"] >= H200_COPY_GBPS, copy
    assert copy["status"] == "PASS"


def test_h200_bf16_gemm(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    _h200_only(doc)
    bf16 = _m(doc, "gemm.bf16")
    assert bf16["tflops_median"] >= H200_BF16_TFLOPS, bf16
    assert bf16["status"] == "PASS"


def test_h200_pinned_transfers_within_band(full: tuple[dict[str, Any], float]) -> None:
    doc, _ = full
    _h200_only(doc)
    for mid in ("transfer.h2d_pinned", "transfer.d2h_pinned"):
        assert _m(doc, mid)["status"] in ("PASS", "WARN"), _m(doc, mid)


def test_full_suite_time(full: tuple[dict[str, Any], float]) -> None:
    doc, seconds = full
    _h200_only(doc)
    assert seconds <= FULL_SECONDS


def test_quick_suite_time(quick: tuple[dict[str, Any], float]) -> None:
    doc, seconds = quick
    assert doc["mode"] == "quick" and doc["device"] == "cuda"
    _h200_only(doc)
    assert seconds <= QUICK_SECONDS
