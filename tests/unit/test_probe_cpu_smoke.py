"""The probes on the CPU with real torch at tiny sizes: the document's shape, positive finite figures."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.__main__ import main
from harness.probe import devices, results, sweep, views
from harness.probe.sizes import MIB, make_plan
from harness.probe.suite import run_suite
from harness.probe.timing import TimingPlan
from harness.schema import encode

TINY = TimingPlan(samples=3, warmup_s=0.0, min_sample_s=0.0)


@pytest.fixture(scope="module")
def tiny_doc() -> dict[str, Any]:
    plan = dataclasses.replace(make_plan("quick", "cpu"), cache_multiple=1, buffer_floor_bytes=MIB, memory=TINY,
                               gemm_n=64, gemm=TINY, sweep_n=128, sweep_ms=(1, 16, 128), sweep=TINY)
    target = dataclasses.replace(devices.cpu_target(), cache_bytes=MIB)
    doc: dict[str, Any] = encode(run_suite(plan, target))  # the document as the harness writes it
    return doc


def _figures(record: dict[str, Any]) -> list[float]:
    unit = "gbps" if "gbps_median" in record else "tflops"
    return [record[f"{unit}_median"], *record[f"{unit}_samples"], *record["seconds_samples"]]


def test_document_shape(tiny_doc: dict[str, Any]) -> None:
    assert (tiny_doc["schema"], tiny_doc["version"], tiny_doc["device"]) == ("refenv.probe", 1, "cpu")
    assert tiny_doc["status"] in ("PASS", "WARN", "FAIL")
    assert tiny_doc["environment"]["torch"]
    assert tiny_doc["device_info"]["torch_threads"] >= 1
    assert tiny_doc["precision"]["at_start"]["float32_matmul_precision"]
    ids = [m["id"] for m in tiny_doc["measurements"]]
    assert ids[: len(results.GPU_IDS)] == list(results.GPU_IDS)
    json.dumps(tiny_doc)
    assert results.check_document(json.loads(json.dumps(tiny_doc)))


def test_cpu_figures_are_positive_and_finite(tiny_doc: dict[str, Any]) -> None:
    measured = {m["id"]: m for m in tiny_doc["measurements"] if m["status"] != "SKIP"}
    assert {"memory.copy", "memory.triad", "gemm.fp32"} <= set(measured)
    for mid, record in measured.items():
        assert record["status"] in ("PASS", "WARN", "FAIL"), record
        assert "error" not in record["reason"].lower(), record["reason"]
        values = _figures(record)
        assert all(math.isfinite(v) and v > 0 for v in values), (mid, values)
        assert len(record["seconds_samples"]) == TINY.samples
    assert measured["memory.copy"]["params"]["dtype"] == "fp64"
    assert measured["gemm.fp32"]["flops_per_call"] == 2 * 64**3


def test_transfers_and_other_dtypes_are_skipped_with_reasons(tiny_doc: dict[str, Any]) -> None:
    for record in tiny_doc["measurements"]:
        if record["id"].startswith("transfer.") or record["id"] in ("gemm.bf16", "gemm.fp8"):
            assert record["status"] == "SKIP"
            assert record["reason"]


def test_roofline_section(tiny_doc: dict[str, Any]) -> None:
    roof = tiny_doc["roofline"]
    assert roof["dtype"] == "fp32"
    assert roof["measured"]["ridge_flop_per_byte"] > 0
    shapes = roof["sweeps"][0]
    assert [p["m"] for p in shapes["points"]] == [1, 16, 128]
    assert all(p["tflops_median"] > 0 and p["bound"] in ("memory", "compute") for p in shapes["points"])
    assert roof["sweeps"][1]["status"] == "SKIP"


def test_text_report_lists_every_measurement(tiny_doc: dict[str, Any]) -> None:
    text = views.render_probe(results.check_document(tiny_doc))
    for record in tiny_doc["measurements"]:
        assert record["title"] in text
    assert "roofline (fp32)" in text


def test_cuda_device_needs_a_gpu() -> None:
    import torch

    if torch.cuda.is_available():
        assert devices.resolve_device("cuda") == "cuda"
    else:
        with pytest.raises(devices.ProbeError, match="--device cpu"):
            devices.resolve_device("cuda")
    assert devices.resolve_device("cpu") == "cpu"


def test_probe_command_writes_json_and_roofline_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "probe.json"
    rc = main(["probe", "--quick", "--device", "cpu", "--json", "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert rc == (1 if printed["status"] == "FAIL" else 0)
    assert json.loads(out.read_text()) == printed
    assert printed["wall_seconds"] > 0  # recorded: how long it takes is the machine's, not a bound to hold here
    rc = main(["roofline", "matmul", "1", "4096", "4096", "--dtype", "fp32", "--probe", str(out), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert answer["bound"] == "memory"
    assert answer["roofs"]["source"] == "probe"


def test_roofline_command_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["roofline", "matmul", "1", "1", "1", "--probe", str(bad)]) == 2
    assert "refenv.probe" in capsys.readouterr().err
    assert main(["roofline", "matmul", "1", "1", "1", "--probe", str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["roofline", "decode", "--params", "7e9", "--batch", "8", "--gpu", "H100-SXM"]) == 0
    assert "memory-bound" in capsys.readouterr().out


@pytest.mark.slow
def test_fused_sweep_compiles_on_the_cpu() -> None:
    plan = dataclasses.replace(make_plan("quick", "cpu"), fused_steps=(8,), fused_numel=2**16, sweep=TINY)
    result = encode(sweep.fused_sweep(devices.cpu_target(), plan))
    assert result["status"] == "PASS", result["reason"]
    (point,) = result["points"]
    assert point["intensity_flop_per_byte"] == pytest.approx(2 * 8 / 8)
    assert point["tflops_median"] > 0
