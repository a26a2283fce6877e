"""The console summary after a run: counts, every cell that did not pass in one line, where the reports are."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from refenv.model.records import CellResult
from refenv.model.rundoc import RunDocument
from refenv.report.console import console_summary, console_table
from tests.unit.run_samples import sample


def test_summary_has_outcome_counts_failures_and_paths() -> None:
    paths = {"markdown": Path("results/r/report.md"), "html": Path("results/r/report.html")}
    text = console_summary(sample("failures"), paths)
    lines = text.splitlines()
    assert lines[0] == "refenv matrix 20261129-171512-9f8e7d: FAILED in 20 min 47 s"
    assert lines[1] == "24 cells: 7 PASS, 2 FAIL, 1 ERROR, 8 BUILD_FAILED, 1 TIMEOUT, 1 OOM_KILLED, 4 NOT_RUN"
    assert ("  FAIL          torch-2.14.1-cu130/r570/gpu: expected DRIVER_TOO_OLD, observed DRIVER_BROKEN: "
            "torch's message lacks 'is too old'") in lines
    assert any(line.startswith("  BUILD_FAILED  8 cells: image refenv/env-torch-2.9.0-cu126") for line in lines)
    assert "                  torch-2.9.0-cu126/local/hidden" in lines
    assert "  html     results/r/report.html" in lines


def test_a_passing_run_lists_nothing_to_fix() -> None:
    text = console_summary(sample("passing"))
    assert "PASSED" in text and "30 cells: 30 PASS (6 cached)" in text
    assert "not passed" not in text and "reports:" not in text


def test_reasons_are_cut_to_one_line() -> None:
    doc = RunDocument(cells=(CellResult("e/h/s", "e", "h", "s", status="ERROR", reason="first\nsecond " + "x" * 400),))
    line = next(line for line in console_summary(doc).splitlines() if "e/h/s" in line)
    assert "first second" in line and line.endswith("…") and len(line) < 200


def test_rich_table_shows_grids_and_keeps_brackets_literal() -> None:
    console = Console(record=True, width=200, color_system=None)
    console.print(console_table(sample("failures")))
    out = console.export_text()
    assert "scenario gpu: --gpus all, nothing hidden" in out
    assert "FAIL expected DRIVER_TOO_OLD / observed DRIVER_BROKEN (sim)" in out
    assert "capabilities: [[gpu]]" in out  # document text is never read as rich markup


def test_rich_table_of_an_interrupted_run() -> None:
    console = Console(record=True, width=160, color_system=None)
    console.print(console_table(sample("partial")))
    out = console.export_text()
    assert "INTERRUPTED" in out and "interrupted before this cell ran" in out
