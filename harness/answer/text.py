"""The diagnosis as text a person reads and may paste anywhere: `diagnose`'s default output, the paste page's."""

from __future__ import annotations

from harness.answer.redact import redact, secrets_in
from harness.diagnosis.text import render_diagnosis
from harness.schema.envelope import DiagnoseDocument


def public_text(doc: DiagnoseDocument) -> str:
    """The text diagnosis with its secrets redacted by the one boundary (harness/answer/redact.py), pieces of
    them clipped anywhere in the document included."""
    return redact(render_diagnosis(doc), secrets_in(doc))
