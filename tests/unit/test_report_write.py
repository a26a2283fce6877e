"""write_reports: the three files in a folder, each what its renderer returns."""

from __future__ import annotations

from pathlib import Path

from refenv.report import FILES, render_html, render_junit, render_markdown, write_reports
from tests.unit.run_samples import sample


def test_writes_every_report_and_returns_their_paths(tmp_path: Path) -> None:
    doc = sample("failures")
    folder = tmp_path / "run" / "reports"
    written = write_reports(doc, folder)
    assert written == {kind: folder / name for kind, name in FILES.items()}
    assert written["markdown"].read_text(encoding="utf-8") == render_markdown(doc)
    assert written["html"].read_text(encoding="utf-8") == render_html(doc)
    assert written["junit"].read_text(encoding="utf-8") == render_junit(doc)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES.values())  # no partial files left behind
