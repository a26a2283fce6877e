"""What the paste page shows for a report (refenv/web/answer.py hands the page this, Pyodide running it in the browser).

The report the page wrote into its virtual file system is diagnosed as `python -m harness diagnose --from FILE`
diagnoses it; the answer is one JSON object: the verdict, its confidence, a one-line summary, the text report
and the issue comment, or why there is none (what the command line refuses with exit 2, or an internal error).
"""

from __future__ import annotations

import dataclasses
import json

from harness.answer.comment import render as render_comment
from harness.answer.redact import redact, secrets_in
from harness.answer.text import public_text
from harness.diagnosis.report import diagnose_report
from harness.intake import ReportError

REFUSED, ERROR = "REFUSED", "ERROR"


def answer(path: str) -> str:
    """JSON for the page: verdict, confidence, summary, the text report and the issue comment (or why not)."""
    try:
        doc = diagnose_report(path)
    except (ReportError, OSError) as exc:  # what the command line refuses with exit 2
        return json.dumps({"verdict": REFUSED, "message": redact(f"harness diagnose: {exc}")})
    except Exception as exc:  # what the command line reports as an internal error (exit 3)
        return json.dumps({"verdict": ERROR, "message": redact(f"internal error: {type(exc).__name__}: {exc}")})
    if doc.input is not None:
        doc = dataclasses.replace(doc, input=dataclasses.replace(doc.input, path="the pasted report"))
    diagnosis = doc.diagnosis
    assessment = diagnosis.assessment if diagnosis else None
    return json.dumps({
        "verdict": diagnosis.verdict if diagnosis else None,
        "confidence": assessment.confidence if assessment else None,
        "summary": redact(assessment.rests_on[0] if assessment and assessment.rests_on else "", secrets_in(doc)),
        "text": public_text(doc),
        "markdown": render_comment(doc),
    })
