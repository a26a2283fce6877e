"""junit.xml: one testsuite per scenario, one testcase per cell, and a suite `refenv.measured` with one testcase per
measurement made once per environment (or real GPU host), for the CI systems that read JUnit.

FAIL is a `<failure>`, a cell that could not answer (ERROR, BUILD_FAILED, TIMEOUT, OOM_KILLED) an
`<error>`, NOT_RUN `<skipped>`: the elements and attributes of the schema Jenkins and GitLab read
(jenkinsci/xunit-plugin `junit-10.xsd`; GitLab "Unit test reports"). XML 1.0 cannot carry most control
characters at all, so they are replaced before serialising.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from refenv.model.records import CellResult, MeasurementRecord
from refenv.model.rundoc import RunDocument
from refenv.model.status import FAIL, look
from refenv.report import view
from refenv.report.formats import MISSING, text

# Characters XML 1.0 forbids (W3C XML 1.0, production [2] Char), and the surrogates Python strings may hold.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: str) -> str:
    """The text with every character XML 1.0 cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)


def _seconds(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "0"


def details(cell: CellResult) -> str:
    """The body of a failure or error: reason, both verdicts, torch's message, findings and fixes."""
    exp, obs = cell.expected, cell.observed
    lines = [f"{cell.status}: {text(cell.reason)}",
             f"expected: {text(exp.verdict if exp else None)}" + (f" ({exp.reason})" if exp and exp.reason else "")]
    if obs:
        lines.append(f"observed: {text(obs.verdict)}" + (" (simulated driver)" if obs.simulated else ""))
        if obs.torch_message:
            lines.append(f"torch says: {obs.torch_message}")
        for f in obs.findings:
            if f.severity in ("error", "warning"):
                lines.append(f"finding [{f.severity}] {text(f.verdict)}: {text(f.title)}")
                lines += [f"  evidence: {e}" for e in f.evidence]
    else:
        lines.append("observed: nothing (no result was written)")
    steps = view.fixes(cell)
    lines += [f"fix: {s}" for s in steps] or ([f"fix: {view.NO_FIX}"] if cell.status == FAIL else [])
    return "\n".join(lines)


def _testcase(parent: ET.Element, cell: CellResult) -> str:
    case = ET.SubElement(parent, "testcase", {
        "name": xml_safe(cell.id),
        # CI tools split classname at its last dot into package and class; versions in it would shatter it.
        "classname": xml_safe(f"refenv.{cell.scenario or MISSING}"),
        "time": _seconds(cell.wall_s),
    })
    reason = xml_safe(text(cell.reason))
    kind = look(cell.status).junit
    if kind in ("failure", "error"):
        ET.SubElement(case, kind, {"message": reason, "type": cell.status}).text = xml_safe(details(cell))
    elif kind == "skipped":
        ET.SubElement(case, "skipped", {"message": reason})
    if cell.log_tail:
        ET.SubElement(case, "system-out").text = xml_safe(cell.log_tail)
    return cell.status


def _measurement_case(parent: ET.Element, m: MeasurementRecord) -> str:
    """A measurement made once per environment (or real GPU host): a testcase of the suite `refenv.measured`."""
    case = ET.SubElement(parent, "testcase", {"name": xml_safe(m.id), "classname": "refenv.measured",
                                              "time": _seconds(m.wall_s)})
    reason = xml_safe(text(m.reason))
    kind = look(m.status).junit
    if kind in ("failure", "error"):
        ET.SubElement(case, kind, {"message": reason, "type": m.status}).text = xml_safe(f"{m.label}: {reason}")
    elif kind == "skipped":
        ET.SubElement(case, "skipped", {"message": reason})
    if m.log_tail:
        ET.SubElement(case, "system-out").text = xml_safe(m.log_tail)
    return m.status


def _tally(statuses: list[str]) -> dict[str, int]:
    kinds = [look(s).junit for s in statuses]
    return {"tests": len(statuses), "failures": kinds.count("failure"), "errors": kinds.count("error"),
            "skipped": kinds.count("skipped")}


def render_junit(doc: RunDocument) -> str:
    """The whole junit.xml for one run document, as text with an XML declaration."""
    r = doc.run
    root = ET.Element("testsuites", {"name": xml_safe(f"refenv matrix {text(r.id)}")})
    all_statuses: list[str] = []
    total_time = 0.0
    for scenario in view.scenario_names(doc):
        members = [c for c in doc.cells if c.scenario == scenario]
        suite = ET.SubElement(root, "testsuite", {"name": xml_safe(f"refenv.{scenario}")})
        if r.started:
            suite.set("timestamp", xml_safe(r.started))
        props = ET.SubElement(suite, "properties")
        properties: tuple[tuple[str, str | bool | None], ...] = (("run", r.id), ("refenv_version", r.refenv_version),
            ("harness_version", r.harness_version), ("interrupted", r.interrupted))
        for name, value in properties:
            ET.SubElement(props, "property", {"name": name, "value": xml_safe(text(value))})
        statuses = [_testcase(suite, c) for c in members]
        seconds = sum(c.wall_s for c in members if c.wall_s is not None)
        for key, n in _tally(statuses).items():
            suite.set(key, str(n))
        suite.set("time", f"{seconds:.3f}")
        all_statuses += statuses
        total_time += seconds
    if doc.measurements:
        suite = ET.SubElement(root, "testsuite", {"name": "refenv.measured"})
        statuses = [_measurement_case(suite, m) for m in doc.measurements]
        seconds = sum(m.wall_s for m in doc.measurements if m.wall_s is not None)
        for key, n in _tally(statuses).items():
            suite.set(key, str(n))
        suite.set("time", f"{seconds:.3f}")
        all_statuses += statuses
        total_time += seconds
    for key, n in _tally(all_statuses).items():
        root.set(key, str(n))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
