"""Saved diagnose documents read back into facts; how a report is loaded from a path, bytes or text."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

from harness import document
from harness.diagnosis.report import diagnose_report
from harness.facts import empty_facts
from harness.intake import load_report, parse_document
from harness.schema.envelope import DiagnoseDocument

DATA = Path(__file__).resolve().parents[1] / "data" / "collect_env"
CASE = DATA / "too-old-driver_cu121-on-r470.txt"


def without_source(facts: Any) -> dict[str, Any]:
    return {k: v for k, v in facts.items() if k != "source"}


def test_saved_document_round_trips(tmp_path: Path) -> None:
    first = load_report(CASE)
    saved = tmp_path / "diagnosis.json"
    document.write(diagnose_report(str(CASE)), str(saved))
    again = load_report(saved)
    assert again.kind == "document"
    assert again.facts["source"] == "document"
    assert without_source(again.facts) == without_source(first.facts)
    assert again.provenance == first.provenance
    assert set(first.notes) <= set(again.notes)
    assert "its facts were read from a collect_env output" in again.notes[0]


def test_fenced_document_text_and_bytes() -> None:
    facts: dict[str, Any] = dict(empty_facts("probed"))
    facts["torch"] = {"importable": True, "version": "2.14.1+cu130", "cuda": "13.0", "cudart_version": 13000}
    doc = document.new(DiagnoseDocument, "diagnose", facts=facts)
    text = "```json\n" + document.dumps(doc) + "```\n"
    from_text = load_report(text)
    assert from_text.facts["torch"]["cudart_version"] == 13000
    assert "its facts were gathered live on that machine" in from_text.notes[0]
    assert load_report(text.encode()).facts == from_text.facts


def test_document_unknowns_and_observed_nulls() -> None:
    facts: dict[str, Any] = dict(empty_facts("probed"))
    facts["torch"] = {"importable": True, "version": "2.13.0+cpu", "cuda": None}
    facts["visibility"] = {"cuda_visible_devices": None, "in_container": False}
    report = parse_document({"schema": "refenv.diagnosis", "version": 1, "facts": facts})
    unknowns = "\n".join(report.unknowns)
    assert "the NVIDIA driver version: the saved document does not know it" in unknowns
    assert "CUDA version torch was built for" not in unknowns  # null with importable: a CPU build
    assert "CUDA_VISIBLE_DEVICES" not in unknowns  # null in a gathered document: unset
    assert "whether it ran in a container" not in unknowns


def test_unknown_fields_are_kept_and_named() -> None:
    facts = {"torch": {"version": "2.14.1", "new_field": [1, 2]}, "extra_section": {"a": 1}}
    report = parse_document({"schema": "refenv.diagnosis", "version": 1, "facts": facts})
    kept: dict[str, Any] = dict(report.facts)
    assert kept["torch"]["new_field"] == [1, 2]
    assert kept["extra_section"] == {"a": 1}
    assert any("facts.torch.new_field" in n and "facts.extra_section" in n for n in report.notes)
    assert report.facts["driver"] == {"libcuda": {}, "nvml": {}, "nvidia_smi": {}}


def test_document_is_copied_not_shared() -> None:
    facts = {"torch": {"arch_list": ["sm_90"]}}
    report = parse_document({"schema": "refenv.diagnosis", "version": 1, "facts": facts})
    report.facts["torch"]["arch_list"].append("sm_100")  # type: ignore[union-attr]
    assert facts["torch"]["arch_list"] == ["sm_90"]


def test_paths_bytes_and_text_give_the_same_facts() -> None:
    text = CASE.read_text(encoding="utf-8")
    want = load_report(text).facts
    assert load_report(str(CASE)).facts == want
    assert load_report(CASE).facts == want
    assert load_report(text.encode()).facts == want
    # What PowerShell 5's `python -m torch.utils.collect_env > report.txt` writes.
    assert load_report(codecs.BOM_UTF16_LE + text.encode("utf-16-le")).facts == want


def test_bytes_that_are_not_utf8_are_replaced_and_noted() -> None:
    text = CASE.read_text(encoding="utf-8").replace("Laptop GPU", "Laptop GPU caf\u00e9")
    report = load_report(text.encode("latin-1", errors="replace"))
    devices = report.facts["driver"]["nvml"].get("devices") or []
    assert devices[0].get("name") == "NVIDIA GeForce RTX 3050 Laptop GPU caf\ufffd"
    assert report.notes[-1].startswith("the report is not valid UTF-8")


def test_document_json_keys_are_plain() -> None:
    report = load_report(CASE)
    assert json.loads(json.dumps(report.facts)) == report.facts
