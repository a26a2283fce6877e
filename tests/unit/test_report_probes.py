"""Probe documents flattened into report rows: as the harness cell's pair, partial, or failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.schema.envelope import ProbePair, ProbesSection
from refenv.model import codec
from refenv.model.records import CellResult
from refenv.model.rundoc import load_run
from refenv.report.probes import brief, judged_rows, measurement_columns, probe_summary

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "cells"


def cell(name: str, cid: str) -> CellResult:
    found = load_run(SAMPLES / f"{name}.json").cell(cid)
    assert found is not None
    return found


def test_gpu_probe_rows_carry_median_reference_percent_and_status() -> None:
    summary = probe_summary(cell("passing", "torch-2.14.1-cu130/local/gpu").probes)
    assert summary is not None and summary.device == "NVIDIA H200" and summary.waived is None
    bf16 = next(r for r in summary.rows if r.id == "gemm.bf16")
    assert (bf16.measured, bf16.reference, bf16.percent, bf16.status) == ("785.8 TFLOP/s", "989.4 TFLOP/s", "79%", "PASS")
    assert brief(bf16) == "785.8 TFLOP/s 79%"
    assert summary.ridge_spec == "206.1 FLOP/B"


def test_cpu_probe_of_a_simulated_host_is_waived_for_the_gpu_and_keeps_cpu_rows() -> None:
    summary = probe_summary(cell("passing", "torch-2.14.1-cu130/r580/gpu").probes)
    assert summary is not None and summary.device == "AMD EPYC (CPU)"
    assert summary.waived is not None and "simulated driver" in summary.waived
    assert [r.id for r in judged_rows(summary)] == ["memory.copy", "memory.triad", "gemm.fp32", "gemm.fp32_onednn"]
    fp32 = next(r for r in judged_rows(summary) if r.id == "gemm.fp32")
    assert brief(fp32).endswith("WARN")  # a status other than PASS is spelled out


def test_columns_run_memory_then_transfers_then_gemms() -> None:
    cpu = probe_summary(cell("passing", "torch-2.14.1-cu130/r580/gpu").probes)
    gpu = probe_summary(cell("passing", "torch-2.14.1-cu130/local/gpu").probes)
    assert cpu is not None and gpu is not None
    columns = measurement_columns([cpu, gpu])
    assert columns[:3] == ["memory.copy", "memory.triad", "transfer.h2d_pageable"]
    assert columns.index("gemm.fp32_onednn") > columns.index("transfer.d2h_pinned")


def test_a_cut_short_probe_document_reads_with_dashes() -> None:
    cut: ProbesSection = codec.decode_value(ProbesSection, {"gpu": None, "cpu": {"measurements": [
        {"id": "memory.copy", "title": "device memory copy", "status": "PASS"},
        {"id": "gemm.fp32", "title": "", "status": "", "unit": "TFLOP/s", "tflops_median": 0.09}]}})
    summary = probe_summary(cut)
    assert summary is not None
    assert [(r.id, r.title, r.measured, r.status) for r in summary.rows] == [
        ("memory.copy", "device memory copy", "—", "PASS"), ("gemm.fp32", "gemm.fp32", "0.09 TFLOP/s", "—")]
    assert probe_summary(None) is None


def test_what_is_not_a_probe_document_is_refused_where_it_is_read() -> None:
    # A record that is not one (junk in the list) is named by its place when the document is read, not shown.
    with pytest.raises(codec.DecodeError, match=r"cpu\.measurements\[1\]: expected an object"):
        codec.decode_value(ProbesSection, {"cpu": {"measurements": [{"id": "a", "title": "a", "status": "PASS"}, "junk"]}})
    with pytest.raises(codec.DecodeError, match="measurements"):
        codec.decode_value(ProbesSection, {"cpu": {"measurements": "not a list"}})


def test_the_harness_cells_pair_of_documents_and_its_error_form() -> None:
    pair = cell("passing", "torch-2.14.1-cu130/r580/gpu").probes
    assert isinstance(pair, ProbePair) and pair.gpu is not None and pair.cpu is not None and pair.gpu.mode == "waived"
    summary = probe_summary(pair)
    assert summary is not None and summary.device == "AMD EPYC (CPU)" and summary.mode == "quick"
    failed = probe_summary(cell("failures", "torch-2.14.1-cu130/r580/hidden").probes)
    assert failed is not None and failed.status == "FAIL" and failed.rows == ()
    assert failed.error == "RuntimeError: CUDA error: operation not supported"
    assert probe_summary(ProbePair(gpu=None, cpu=None)) is None
