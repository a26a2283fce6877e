"""Memory verification documents as cases of ledgers: predicted against measured, errors, a failed run."""

from __future__ import annotations

from pathlib import Path

from harness.schema.envelope import MemorySection
from refenv.model import codec
from refenv.model.records import CellResult
from refenv.model.rundoc import load_run
from refenv.report.memory import Ledger, ledger_brief, memory_summary

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "cells"


def cell(name: str, cid: str) -> CellResult:
    found = load_run(SAMPLES / f"{name}.json").cell(cid)
    assert found is not None
    return found


def memory(data: object) -> MemorySection:
    """A memory section as the harness writes it, read as refenv reads it."""
    section: MemorySection = codec.decode_value(MemorySection, data)
    return section


def test_memory_verification_cases_and_ledgers() -> None:
    summary = memory_summary(cell("failures", "torch-2.10.0-cu128/r580/gpu").memory)
    assert summary is not None and summary.status == "FAIL" and summary.device == "cpu"
    assert (summary.passed, len(summary.cases)) == (6, 8)
    # The harness's order (harness/memory/probe_predict.py LEDGERS): the report keeps no copy of its own.
    assert summary.ledger_names == ["weights", "master_weights", "activations", "gradients", "optimizer_state"]
    bad = next(c for c in summary.cases if c.failing())
    act = bad.failing()[0]
    assert (bad.name, act.name, act.off, act.note) == ("small-llama/mixed-adamw/eager", "activations", "+31.0%",
                                                      "within 5%")
    broken = next(c for c in summary.cases if c.error)
    assert broken.ledgers == () and broken.total("predicted") is None


def test_ledgers_in_the_harness_order_and_figures_that_agree() -> None:
    summary = memory_summary(memory({"status": "PASS", "device": "cuda", "device_name": "NVIDIA H200", "cases": [
        {"name": "c", "status": "PASS", "ledgers": {
            "kv_cache": {"predicted_bytes": 1024, "measured_bytes": 1024, "status": "PASS", "tolerance": "exact"},
            "weights": {"predicted_bytes": 0, "measured_bytes": 512, "status": "FAIL", "tolerance": "exact"}}}]}))
    assert summary is not None and summary.device == "NVIDIA H200 (cuda)"
    case = summary.cases[0]
    assert [led.name for led in case.ledgers] == ["weights", "kv_cache"]
    assert case.total("predicted") == 1024 and case.total("measured") == 1536
    assert ledger_brief(case.ledgers[1]) == "1 KiB"
    assert ledger_brief(case.ledgers[0]) == "0 B → 512 B (+512 B)"
    assert Ledger("x", None, 5, "PASS", "").off == "—"


def test_a_verification_that_could_not_run_says_why() -> None:
    summary = memory_summary(memory({"error": {"type": "ImportError", "message": "no torch"}}))
    assert summary is not None and summary.notes == ("error: ImportError: no torch",) and summary.cases == ()
    summary = memory_summary(memory({"status": "FAIL", "error": "torch is not importable: no torch", "cases": []}))
    assert summary is not None and summary.notes == ("error: torch is not importable: no torch",)
    assert memory_summary(None) is None
