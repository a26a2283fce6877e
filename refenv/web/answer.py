"""The paste page's Python (run by Pyodide in the browser): diagnose the report the page wrote into its
virtual file system as `python -m harness diagnose --from FILE` does, and hand the page what to show.

The harness is the single-file diagnoser the page serves beside itself (refenv-diagnose.pyz), imported
from the archive as any Python imports a zip on its path.
"""

import dataclasses
import json
import sys

sys.path.insert(0, "/refenv/refenv-diagnose.pyz")

from harness.answer.comment import render as render_comment
from harness.answer.redact import redact, secrets_in
from harness.diagnose import diagnose_report, public_text
from harness.intake import ReportError
from harness.launcher import version_line

VERSION = version_line()


def answer(path: str) -> str:
    """JSON for the page: verdict, confidence, summary, the text report and the issue comment (or why not)."""
    try:
        doc = diagnose_report(path)
    except (ReportError, OSError) as exc:  # what the command line refuses with exit 2
        return json.dumps({"verdict": "REFUSED", "message": redact(f"harness diagnose: {exc}")})
    except Exception as exc:  # what the command line reports as an internal error (exit 3)
        return json.dumps({"verdict": "ERROR", "message": redact(f"internal error: {type(exc).__name__}: {exc}")})
    if doc.input is not None:
        doc = dataclasses.replace(doc, input=dataclasses.replace(doc.input, path="the pasted report"))
    diagnosis = doc.diagnosis
    assessment = (diagnosis.assessment if diagnosis else None) or {}
    return json.dumps({
        "verdict": diagnosis.verdict if diagnosis else None,
        "confidence": assessment.get("confidence"),
        "summary": redact(str((assessment.get("rests_on") or [""])[0]), secrets_in(doc)),
        "text": public_text(doc),
        "markdown": render_comment(doc),
    })
