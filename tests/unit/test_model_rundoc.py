"""The run document: what the writer writes, the reader reads back, and every renderer takes (refenv.model.rundoc)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from harness.classify import classify
from harness.facts import Facts
from refenv.engines.seam import Inventory
from refenv.model import codec, matrix_yaml
from refenv.model.builds import EnvBuild
from refenv.model.records import CellResult, Expected
from refenv.model.rundoc import SCHEMA_VERSION, RunDocument, RunDocumentError, from_data, load_run, to_json, write_run
from refenv.model.status import LOOKS, STATUSES, look
from refenv.report import console_summary, console_table, render_html, render_junit, render_markdown
from refenv.report.html import css_class
from refenv.run.assemble import document, run_info
from refenv.run.dryrun import predict, real_hosts
from refenv.run.judge import judge_cell
from refenv.run.plan import Scope
from tests.unit.facts_builder import healthy, no_driver

ROOT = Path(__file__).resolve().parents[2]


def harness_doc(facts: dict[str, Any]) -> dict[str, Any]:
    """A cell document as `python -m harness cell` writes it, with the real classifier's diagnosis."""
    return {"schema": "refenv.cell", "diagnosis": {"facts": facts, "diagnosis": classify(cast(Facts, facts)).to_dict()},
            "probes": None, "memory": None}


def real_document() -> RunDocument:
    """The project's matrix, its cells judged from real harness documents, put together by `run.document`."""
    matrix = matrix_yaml.load(ROOT / "matrix.yaml")
    plans = predict(matrix, real_hosts(matrix, "local"))
    results = []
    for i, plan in enumerate(plans):
        spec, expected = plan.spec, plan.expected
        assert expected is not None  # on this machine every host is predicted
        base = CellResult(spec.id, spec.environment.name, spec.host.name, spec.scenario.name)
        facts = no_driver() if expected.verdict == "NO_DRIVER" else healthy()
        timed_out = i == 1
        results.append(judge_cell(base, expected, harness_doc(facts), 0, timed_out, False, "the log"))
    results.append(CellResult("x/y/z", "x", "y", "z", status="NOT_RUN", reason="this engine has no NVIDIA runtime"))
    builds = {e.name: EnvBuild(e.name, "CACHED", f"refenv/env-{e.name}:1", "ab" * 8, 1.5, None)
              for e in matrix.environments}
    scope = Scope(matrix.environments, matrix.hosts, matrix.scenarios, matrix.path)
    started = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    info = run_info("20261201-000000-abcdef", started, 12.3, scope, {"env": ["*"]}, False,
                    Inventory("28.2.2", False), 2, True)
    return document(scope, info, builds, tuple(results), None)


def test_what_the_writer_writes_the_reader_reads_and_every_renderer_takes(tmp_path: Path) -> None:
    written = real_document()
    doc = load_run(write_run(written, tmp_path / "cells.json"))
    assert doc == written
    assert {c.status for c in doc.cells} >= {"PASS", "FAIL", "TIMEOUT", "NOT_RUN"}
    ids = [c.id for c in doc.cells]
    markdown, html, junit = render_markdown(doc), render_html(doc), render_junit(doc)
    assert all(f"`{i}`" in markdown or i.split("/")[0] in markdown for i in ids)
    assert len(ET.fromstring(junit).findall(".//testcase")) == len(ids)
    assert all(c.id in html for c in doc.cells if c.status != "PASS")
    assert "TIMEOUT" in console_summary(doc)
    console = Console(record=True, width=300)
    console.print(console_table(doc))
    assert "FAIL" in console.export_text()


def test_the_summary_is_written_for_readers_without_refenv() -> None:
    data = json.loads(to_json(real_document()))
    assert data["schema"] == "refenv.cells" and data["version"] == SCHEMA_VERSION
    assert data["summary"]["total"] == len(data["cells"]) and data["summary"]["ok"] is False


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d.update(schema="other"), "not a matrix run document"),
    (lambda d: d.update(version=2), "has version 2; this refenv reads version 1"),
    (lambda d: d["cells"][0].update(status=3), "cells[0].status: expected a string, got 3"),
    (lambda d: d["cells"][0].pop("id"), "cells[0].id: missing"),
    (lambda d: d["cells"][0]["expected"].update(verdicts="OK"), "cells[0].expected.verdicts: expected a list"),
    (lambda d: d["hosts"][0].update(gpus=[{"memory_bytes": "lots"}]), "hosts[0].gpus[0].memory_bytes"),
    (lambda d: d["cells"][0]["observed"]["findings"].append({"verdict": "NOPE", "severity": "error",
                                                            "title": "t"}), "unknown verdict 'NOPE'"),
])
def test_a_document_that_does_not_fit_is_refused_with_where(change: Any, words: str, tmp_path: Path) -> None:
    data = json.loads(to_json(real_document()))
    data["cells"][0]["observed"] = data["cells"][0]["observed"] or {"verdict": "OK", "findings": []}
    change(data)
    path = tmp_path / "cells.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RunDocumentError) as info:
        load_run(tmp_path)
    assert words in str(info.value) and str(path) in str(info.value)


def test_unreadable_files_are_refused_plainly(tmp_path: Path) -> None:
    with pytest.raises(RunDocumentError, match="cannot read"):
        load_run(tmp_path / "nothing.json")
    (tmp_path / "cells.json").write_text("{not json")
    with pytest.raises(RunDocumentError, match="is not JSON"):
        load_run(tmp_path / "cells.json")


def test_a_partial_document_takes_defaults_and_unknown_keys_are_ignored() -> None:
    doc = from_data({"schema": "refenv.cells", "version": 1, "newer": True,
                     "cells": [{"id": "e/h/s", "environment": "e", "host": "h", "scenario": "s", "extra": {}}]})
    assert doc.cells[0].status == "NOT_RUN" and doc.run.interrupted is False and doc.environments == ()


def test_a_new_field_on_the_cell_record_is_one_declaration() -> None:
    """The reader and writer follow the class: a field added to the record needs no codec change."""
    grown = dataclasses.make_dataclass("GrownCell", [("gpu_seconds", float | None, None)],
                                       bases=(CellResult,), frozen=True)
    cell = grown("e/h/s", "e", "h", "s", status="PASS", reason="ok", expected=Expected("OK"), gpu_seconds=4.5)
    data = codec.encode(cell)
    assert data["gpu_seconds"] == 4.5
    assert codec.decode(grown, data) == cell
    old = {k: v for k, v in data.items() if k != "gpu_seconds"}  # a document written before the field existed
    assert codec.decode(grown, old).gpu_seconds is None


def test_every_status_has_one_look_used_by_every_renderer() -> None:
    assert set(LOOKS) == set(STATUSES)
    assert {look(s).family for s in STATUSES} == {"agreed", "disagreed", "no answer", "skipped"}
    assert css_class("FAIL") == LOOKS["FAIL"].css and css_class(None) == "missing"
    assert look("SOMETHING_NEW").family == "no answer"  # never read as a pass
