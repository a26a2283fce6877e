"""Facts from what a user pasted: a `torch.utils.collect_env` output, any other text about the stack, or a
saved diagnose document.

The text is normalised once (normal.py), every reader fills the same facts shape the live gatherer
produces (`harness.facts`), so the same classifier judges a machine refenv cannot touch, and a report
of several environments answers for the one it is about (several.py).
"""

from __future__ import annotations

from harness.intake.collect_env import parse_collect_env
from harness.intake.parsed import ParsedReport, ReportError
from harness.intake.saved import parse_document
from harness.intake.source import load_report, parse_text

__all__ = ["ParsedReport", "ReportError", "load_report", "parse_collect_env", "parse_document", "parse_text"]
