"""junit.xml: one testsuite per scenario, one testcase per cell, for the CI systems that read JUnit.

FAIL is a `<failure>`, a cell that could not answer (ERROR, BUILD_FAILED, TIMEOUT, OOM_KILLED) an
`<error>`, NOT_RUN `<skipped>`: the elements and attributes of the schema Jenkins and GitLab read
(jenkinsci/xunit-plugin `junit-10.xsd`; GitLab "Unit test reports"). XML 1.0 cannot carry most control
characters at all, so they are replaced before serialising.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from refenv.report import view
from refenv.report.formats import MISSING, as_list, text

ERROR_STATUSES = ("ERROR", "BUILD_FAILED", "TIMEOUT", "OOM_KILLED")
# Characters XML 1.0 forbids (W3C XML 1.0, production [2] Char), and the surrogates Python strings may hold.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: str) -> str:
    """The text with every character XML 1.0 cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)


def _seconds(value: Any) -> str:
    return f"{float(value):.3f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "0"


def details(cell: dict[str, Any]) -> str:
    """The body of a failure or error: reason, both verdicts, torch's message, findings and fixes."""
    exp, obs = view.expected(cell), view.observed(cell)
    lines = [f"{view.status_of(cell)}: {text(cell.get('reason'))}",
             f"expected: {text(exp.get('verdict'))}" + (f" ({exp['reason']})" if exp.get("reason") else "")]
    if obs:
        lines.append(f"observed: {text(obs.get('verdict'))}" + (" (simulated driver)" if obs.get("simulated") else ""))
        if obs.get("torch_message"):
            lines.append(f"torch says: {obs['torch_message']}")
        for f in view.findings(cell):
            if f.get("severity") in ("error", "warning"):
                lines.append(f"finding [{f.get('severity')}] {text(f.get('verdict'))}: {text(f.get('title'))}")
                lines += [f"  evidence: {e}" for e in as_list(f.get("evidence"))]
    else:
        lines.append("observed: nothing (no result was written)")
    steps = view.fixes(cell)
    lines += [f"fix: {s}" for s in steps] or ([f"fix: {view.NO_FIX}"] if view.status_of(cell) == "FAIL" else [])
    return "\n".join(lines)


def _testcase(parent: ET.Element, cell: dict[str, Any]) -> str:
    status = view.status_of(cell)
    case = ET.SubElement(parent, "testcase", {
        "name": xml_safe(view.cell_id(cell)),
        # CI tools split classname at its last dot into package and class; versions in it would shatter it.
        "classname": xml_safe(f"refenv.{cell.get('scenario') or MISSING}"),
        "time": _seconds(cell.get("wall_s")),
    })
    reason = xml_safe(text(cell.get("reason")))
    if status == "FAIL":
        ET.SubElement(case, "failure", {"message": reason, "type": status}).text = xml_safe(details(cell))
    elif status in ERROR_STATUSES:
        ET.SubElement(case, "error", {"message": reason, "type": status}).text = xml_safe(details(cell))
    elif status != "PASS":
        ET.SubElement(case, "skipped", {"message": reason})
    if cell.get("log_tail"):
        ET.SubElement(case, "system-out").text = xml_safe(str(cell["log_tail"]))
    return status


def _tally(statuses: list[str]) -> dict[str, int]:
    return {
        "tests": len(statuses),
        "failures": sum(1 for s in statuses if s == "FAIL"),
        "errors": sum(1 for s in statuses if s in ERROR_STATUSES),
        "skipped": sum(1 for s in statuses if s not in ("PASS", "FAIL", *ERROR_STATUSES)),
    }


def render_junit(doc: dict[str, Any]) -> str:
    """The whole junit.xml for one cells.json document, as text with an XML declaration."""
    r = view.run(doc)
    root = ET.Element("testsuites", {"name": xml_safe(f"refenv matrix {text(r.get('id'))}")})
    all_statuses: list[str] = []
    total_time = 0.0
    for scenario in view.scenario_names(doc):
        members = [c for c in view.cells(doc) if c.get("scenario") == scenario]
        suite = ET.SubElement(root, "testsuite", {"name": xml_safe(f"refenv.{scenario}")})
        if r.get("started"):
            suite.set("timestamp", xml_safe(str(r["started"])))
        props = ET.SubElement(suite, "properties")
        for name, value in (("run", r.get("id")), ("refenv_version", r.get("refenv_version")),
                            ("harness_version", r.get("harness_version")), ("interrupted", r.get("interrupted"))):
            ET.SubElement(props, "property", {"name": name, "value": xml_safe(text(value))})
        statuses = [_testcase(suite, c) for c in members]
        seconds = sum(float(c["wall_s"]) for c in members
                      if isinstance(c.get("wall_s"), (int, float)) and not isinstance(c.get("wall_s"), bool))
        for key, value in _tally(statuses).items():
            suite.set(key, str(value))
        suite.set("time", f"{seconds:.3f}")
        all_statuses += statuses
        total_time += seconds
    for key, value in _tally(all_statuses).items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
