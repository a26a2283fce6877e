"""A pasted report, or a saved document, judged: what `diagnose --from` says, and the bot and the paste page.

The reader (harness.intake) fills the same facts the live gatherer does, so the same classifier judges them;
the assessment then weighs how each fact was known (stated, inferred, a clue in prose).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness import document
from harness.classify import classify
from harness.intake import ParsedReport, load_report
from harness.intake.assess import assess_report
from harness.intake.fixes import answer_finding
from harness.intake.source import read_stdin
from harness.schema.envelope import DiagnoseDocument, ReportInput, SourceLine


def diagnose_report(source: str) -> DiagnoseDocument:
    """Judge the facts read from a pasted report or a saved document (a file, or '-' for standard input)."""
    # A Path, not the str: load_report reads a str holding a newline as the report's text itself.
    report = load_report(read_stdin() if source == "-" else Path(source))
    return judge_report(report, "<stdin>" if source == "-" else source)


def judge_report(report: ParsedReport, path: str) -> DiagnoseDocument:
    """The diagnosis document of a report already read (`path` names where it came from)."""
    opened = document.new(DiagnoseDocument, "diagnose")
    judged = classify(report.facts)
    unknowns = judged.unknowns
    if report.unknowns:
        # The reader's unknowns say the same as the classifier's generic ones, with the reason the report
        # cannot tell; keep only the classifier's notes of a check that failed.
        broken = [u for u in judged.unknowns if u.startswith("check ")]
        unknowns = tuple(dict.fromkeys([*report.unknowns, *broken]))
    assessment = assess_report(report.facts, judged, report.provenance, report.inferred, report.clues)
    # The classifier's verdict over the facts stays in the findings; the report's answer weighs how
    # they were known (a thin report is not OK without evidence of a working GPU).
    # An answer heads with, and fixes, its own verdict: where the weighing set the classifier's first finding
    # aside, the answer's verdict gets its finding first (harness/intake/fixes.py).
    own = answer_finding(report.facts, judged, assessment, set(report.clues))
    findings = (own, *judged.findings) if own is not None else judged.findings
    diagnosis = dataclasses.replace(judged, verdict=assessment.verdict, unknowns=unknowns, findings=findings,
                                    classifier_verdict=judged.verdict, assessment=assessment)
    read = ReportInput(
        kind=report.kind,
        path=path,
        provenance={k: SourceLine(v[0], v[1], "inferred" if k in report.inferred else "stated")
                    for k, v in report.provenance.items()},
        inferred=dict(report.inferred),
        clues={k: SourceLine(v[0], v[1]) for k, v in report.clues.items()},
        notes=tuple(report.notes),
        # A report of several environments: the one the answer is about, and each with its own verdict.
        environment=report.environment or None,
        environments=report.environments,
    )
    return dataclasses.replace(opened, facts=report.facts, input=read, diagnosis=diagnosis)
