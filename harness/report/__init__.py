"""Facts from what a user pasted: a `torch.utils.collect_env` output or a saved diagnose document.

The parsers fill the same facts shape the live gatherer produces (`harness.facts`), so the same
classifier judges a machine refenv cannot touch.
"""

from __future__ import annotations

from harness.report.collect_env import parse_collect_env
from harness.report.document import parse_document
from harness.report.load import load_report, parse_text
from harness.report.model import ParsedReport, ReportError

__all__ = ["ParsedReport", "ReportError", "load_report", "parse_collect_env", "parse_document", "parse_text"]
