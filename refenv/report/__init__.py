"""The matrix run's reports: report.md, a self-contained report.html, junit.xml, and the console summary.

Every renderer is a pure function of the `cells.json` document (`refenv/model/records.py`); `write_reports`
is the only one that touches the disk.
"""

from __future__ import annotations

from pathlib import Path

from refenv.model.rundoc import RunDocument
from refenv.report.console import console_summary, console_table
from refenv.report.html import render_html
from refenv.report.junit import render_junit
from refenv.report.markdown import render_markdown

FILES = {"markdown": "report.md", "html": "report.html", "junit": "junit.xml"}


def write_reports(doc: RunDocument, folder: Path) -> dict[str, Path]:
    """Render every report of `doc` into `folder` (created if need be); their paths by kind."""
    folder.mkdir(parents=True, exist_ok=True)
    rendered = {"markdown": render_markdown(doc), "html": render_html(doc), "junit": render_junit(doc)}
    written = {}
    for kind, content in rendered.items():
        path = folder / FILES[kind]
        # Write beside, then rename: a reader never sees half a report, even if the run is interrupted here.
        partial = path.with_name(path.name + ".partial")
        partial.write_text(content, encoding="utf-8")
        partial.replace(path)
        written[kind] = path
    return written


__all__ = ["FILES", "console_summary", "console_table", "render_html", "render_junit", "render_markdown",
           "write_reports"]
