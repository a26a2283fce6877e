"""The tolerant reading of cells.json every renderer shares: counts, outcome, grids, labels, fixes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.schema import Finding
from refenv.model.records import CellResult, MeasurementRecord, Observed
from refenv.model.rundoc import RunDocument
from refenv.report import view
from refenv.report.formats import MISSING, fmt_bytes, fmt_number, fmt_seconds, text
from tests.unit.run_samples import raw, sample


@pytest.mark.parametrize("name", ["passing", "failures"])
def test_counts_from_the_cells_agree_with_the_runs_own_summary(name: str) -> None:
    doc = sample(name)
    assert view.status_counts(doc) == raw(name)["summary"]["by_status"]


def test_outcome_of_each_sample() -> None:
    assert view.outcome(sample("passing")) == "PASSED"
    assert view.outcome(sample("failures")) == "FAILED"
    assert view.outcome(sample("partial")) == "INTERRUPTED"
    assert view.outcome(RunDocument()) == "EMPTY"


def test_outcome_fails_when_a_measurement_went_wrong_though_every_cell_passed() -> None:
    # The run exits 1 then (RunDocument.summary.ok): its headline must not say PASSED.
    doc = replace(sample("passing"), measurements=(MeasurementRecord("e/cpu", "e", status="ERROR"),))
    assert view.outcome(doc) == "FAILED"


def test_grid_puts_each_cell_at_its_crossing_and_none_where_no_cell_was_written() -> None:
    doc = sample("partial")
    hidden = next(g for g in view.grids(doc) if g.scenario == "hidden")
    row = dict(hidden.rows)["torch-2.14.1-cu130"]
    by_host = dict(zip(hidden.hosts, row, strict=True))
    assert by_host["r580"] is not None and by_host["r580"].id == "torch-2.14.1-cu130/r580/hidden"
    assert by_host["none"] is None
    assert view.cell_label(by_host["none"]) == MISSING


def test_labels_say_pass_with_the_verdict_and_fail_with_both() -> None:
    cells = {c.id: c for c in sample("failures").cells}
    assert view.cell_label(cells["torch-2.14.1-cu130/none/gpu"]) == "PASS NO_DRIVER"
    assert view.cell_label(cells["torch-2.14.1-cu130/r570/gpu"]) == \
        "FAIL expected DRIVER_TOO_OLD / observed DRIVER_BROKEN"
    assert view.cell_label(cells["torch-2.10.0-cu128/r570/gpu"]) == "TIMEOUT"


def test_attention_orders_fail_first_and_groups_one_reason() -> None:
    doc = sample("failures")
    statuses = [c.status for c in view.attention(doc)]
    assert statuses[:2] == ["FAIL", "FAIL"] and statuses[-1] == "NOT_RUN"
    groups = view.attention_groups(doc)
    build = next(g for g in groups if g.status == "BUILD_FAILED")
    assert len(build.cells) == 8
    assert "hash" in build.reason


def test_fixes_come_from_error_findings_first_each_once() -> None:
    findings = (Finding("", "info", "context", remediation=("look",)),
                Finding("DRIVER_TOO_OLD", "error", "old", remediation=("upgrade", "look")))
    cell = CellResult("e/h/s", "e", "h", "s", observed=Observed("DRIVER_TOO_OLD", findings=findings))
    assert view.fixes(cell) == ["upgrade", "look"]


def test_an_empty_document_reads_as_nothing() -> None:
    doc = RunDocument()
    assert view.status_counts(doc)["PASS"] == 0
    assert view.header_rows(doc)[0] == ("run", MISSING)
    assert view.environment_names(doc) == []
    assert view.build_failures(doc) == []


def test_header_names_selection_docker_and_versions() -> None:
    doc = sample("partial")
    rows = dict(view.header_rows(doc))
    assert rows["selection"] == "env: torch-2.14.1-cu130, torch-2.13.0-cpu; host: all; scenario: all"
    assert rows["finished"] == "— (interrupted)"
    assert rows["docker"] == "28.2.2, NVIDIA runtime: —"


def test_text_and_formats() -> None:
    assert text(None) == text("") == text(()) == MISSING
    assert text(False) == "no"
    assert fmt_seconds(3725) == "1 h 02 min"
    assert fmt_seconds(83.4) == "1 min 23 s"
    assert fmt_bytes(1536) == "1.5 KiB"
    assert fmt_bytes(1029890) == "1006 KiB"
    assert fmt_number(4271.0, "GB/s") == "4271 GB/s"
    assert fmt_number(True) == MISSING
