"""junit.xml: valid XML that CI reads, counts that match the run's summary, reasons and torch's messages inside."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from refenv.model.rundoc import RunDocument, from_data
from refenv.report.junit import render_junit, xml_safe
from tests.unit.run_samples import raw, sample


def case(root: ET.Element, cid: str) -> ET.Element:
    found = root.find(f".//testcase[@name='{cid}']")
    assert found is not None, cid
    return found


@pytest.mark.parametrize("name", ["passing", "failures"])
def test_counts_match_the_summary(name: str) -> None:
    doc = sample(name)
    root = ET.fromstring(render_junit(doc))
    by = raw(name)["summary"]["by_status"]
    assert int(root.get("tests", "-1")) == raw(name)["summary"]["total"]
    assert int(root.get("failures", "-1")) == by["FAIL"]
    assert int(root.get("errors", "-1")) == by["ERROR"] + by["BUILD_FAILED"] + by["TIMEOUT"] + by["OOM_KILLED"]
    assert int(root.get("skipped", "-1")) == by["NOT_RUN"]
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["refenv.gpu", "refenv.hidden"]
    assert sum(int(s.get("tests", "0")) for s in suites) == len(doc.cells)
    assert len(root.findall(".//testcase")) == len(doc.cells)


def test_fail_is_a_failure_with_reason_and_torch_message() -> None:
    doc = sample("failures")
    root = ET.fromstring(render_junit(doc))
    failure = case(root, "torch-2.14.1-cu130/r570/gpu").find("failure")
    assert failure is not None
    assert failure.get("message") == doc.cells[[c.id for c in doc.cells].index("torch-2.14.1-cu130/r570/gpu")].reason
    assert "Error 803: system has unsupported display driver / cuda driver combination" in (failure.text or "")
    assert "fix: cat /proc/driver/nvidia/version && nvidia-smi" in (failure.text or "")


@pytest.mark.parametrize(("cid", "kind"), [
    ("torch-2.14.1-cu130/none/hidden", "ERROR"),
    ("torch-2.9.0-cu126/r570/gpu", "BUILD_FAILED"),
    ("torch-2.10.0-cu128/r570/gpu", "TIMEOUT"),
    ("torch-2.14.1-cu130/r580/gpu", "OOM_KILLED"),
])
def test_cells_that_gave_no_answer_are_errors_of_their_kind(cid: str, kind: str) -> None:
    error = case(ET.fromstring(render_junit(sample("failures"))), cid).find("error")
    assert error is not None and error.get("type") == kind


def test_not_run_is_skipped_with_its_reason_and_log_tails_go_to_system_out() -> None:
    root = ET.fromstring(render_junit(sample("failures")))
    skipped = case(root, "torch-2.14.1-cu130/local/gpu").find("skipped")
    assert skipped is not None and 'could not select device driver "" with capabilities: [[gpu]]' in (
        skipped.get("message") or "")
    out = case(root, "torch-2.14.1-cu130/none/hidden").find("system-out")
    assert out is not None and "SIGSEGV" in (out.text or "")


def test_control_characters_and_markup_survive_as_valid_xml() -> None:
    doc = (raw("failures"))
    failed = next(c for c in doc["cells"] if c["id"] == "torch-2.14.1-cu130/r570/gpu")
    failed["reason"] = "bad\x00 \x1b[31mred\x1b[0m <script>&"
    failed["observed"]["torch_message"] = "<script>alert(1)</script>\x07"
    text = render_junit(from_data(doc))
    failure = case(ET.fromstring(text), "torch-2.14.1-cu130/r570/gpu").find("failure")
    assert failure is not None
    assert failure.get("message") == "bad\ufffd \ufffd[31mred\ufffd[0m <script>&"
    assert "torch says: <script>alert(1)</script>\ufffd" in (failure.text or "")
    assert "<script>alert" not in text  # escaped in the file itself


def test_xml_safe_keeps_tabs_newlines_and_unicode() -> None:
    assert xml_safe("a\tb\nc — é \x0c") == "a\tb\nc — é \ufffd"


def test_partial_and_empty_documents_are_valid() -> None:
    doc = sample("partial")
    root = ET.fromstring(render_junit(doc))
    assert int(root.get("tests", "-1")) == len(doc.cells)
    assert int(root.get("skipped", "-1")) == sum(1 for c in doc.cells if c.status == "NOT_RUN")
    empty = ET.fromstring(render_junit(RunDocument()))
    assert empty.get("tests") == "0" and empty.findall("testsuite") == []
