"""Probe documents flattened into report rows: bare, as the harness cell's pair, partial, or failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from refenv.report.probes import brief, judged_rows, measurement_columns, probe_summary

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "cells"


def cell(name: str, cid: str) -> dict[str, Any]:
    doc = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    found: dict[str, Any] = next(c for c in doc["cells"] if c["id"] == cid)
    return found


def test_gpu_probe_rows_carry_median_reference_percent_and_status() -> None:
    summary = probe_summary(cell("passing", "torch-2.14.1-cu130/local/gpu")["probes"])
    assert summary is not None and summary.device == "NVIDIA H200" and summary.waived is None
    bf16 = next(r for r in summary.rows if r.id == "gemm.bf16")
    assert (bf16.measured, bf16.reference, bf16.percent, bf16.status) == ("785.8 TFLOP/s", "989.4 TFLOP/s", "79%", "PASS")
    assert brief(bf16) == "785.8 TFLOP/s 79%"
    assert summary.ridge_spec == "206.1 FLOP/B"


def test_cpu_probe_of_a_simulated_host_is_waived_for_the_gpu_and_keeps_cpu_rows() -> None:
    summary = probe_summary(cell("passing", "torch-2.14.1-cu130/r580/gpu")["probes"])
    assert summary is not None and summary.device == "AMD EPYC (CPU)"
    assert summary.waived is not None and "simulated driver" in summary.waived
    assert [r.id for r in judged_rows(summary)] == ["memory.copy", "memory.triad", "gemm.fp32", "gemm.fp32_onednn"]
    fp32 = next(r for r in judged_rows(summary) if r.id == "gemm.fp32")
    assert brief(fp32).endswith("WARN")  # a status other than PASS is spelled out


def test_columns_run_memory_then_transfers_then_gemms() -> None:
    cpu = probe_summary(cell("passing", "torch-2.14.1-cu130/r580/gpu")["probes"])
    gpu = probe_summary(cell("passing", "torch-2.14.1-cu130/local/gpu")["probes"])
    assert cpu is not None and gpu is not None
    columns = measurement_columns([cpu, gpu])
    assert columns[:3] == ["memory.copy", "memory.triad", "transfer.h2d_pageable"]
    assert columns.index("gemm.fp32_onednn") > columns.index("transfer.d2h_pinned")


def test_a_cut_short_probe_document_reads_with_dashes() -> None:
    summary = probe_summary({"measurements": [{"id": "memory.copy", "status": "PASS"}, "junk", {"title": "x"}]})
    assert summary is not None
    assert [(r.id, r.measured, r.status) for r in summary.rows] == [("memory.copy", "—", "PASS"), ("—", "—", "—")]
    assert probe_summary("not a document") is None


def test_the_harness_cells_pair_of_documents_and_its_error_form() -> None:
    pair = cell("passing", "torch-2.14.1-cu130/r580/gpu")["probes"]
    assert set(pair) == {"gpu", "cpu"} and pair["gpu"]["mode"] == "waived"
    summary = probe_summary(pair)
    assert summary is not None and summary.device == "AMD EPYC (CPU)" and summary.mode == "quick"
    failed = probe_summary(cell("failures", "torch-2.14.1-cu130/r580/hidden")["probes"])
    assert failed is not None and failed.status == "FAIL" and failed.rows == ()
    assert failed.error == "RuntimeError: CUDA error: operation not supported"
    assert probe_summary({"gpu": None, "cpu": None}) is None
