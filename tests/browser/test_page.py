"""The paste page answers as the command line does, for every report, and fetches nothing outside its folder.

The reports are the project's own (tests/data/reports) and, where it sits beside the checkout, the corpus of
real bug reports (../shared/reports, read in place). Each is pasted into the page's text box; the text the
page then holds is what `python -m harness diagnose --from FILE --json` is given, and the verdicts must match.
"""

from __future__ import annotations

import io
import json
import os
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from harness.__main__ import main
from refenv.ship import chromium
from tests.browser.conftest import ROOT, Served

OWN = sorted((ROOT / "tests" / "data" / "reports").glob("*.txt"))
CORPUS_DIR = Path(os.environ.get("REFENV_REPORTS") or ROOT.parent / "shared" / "reports")
CORPUS = sorted(CORPUS_DIR.glob("*.txt")) if CORPUS_DIR.is_dir() else []


def body(path: Path) -> str:
    """What the reporter posted: a corpus case's text after its `---` header, or a whole report file."""
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n---\n")
    return rest if sep and "root_cause:" in head else text


def cli_verdict(text: str, tmp_path: Path) -> str:
    """The command line's verdict on this text (REFUSED where it exits 2, as bad input)."""
    report = tmp_path / "report.txt"
    report.write_bytes(text.encode("utf-8"))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["diagnose", "--from", str(report), "--json"])
    if code == 2:
        return "REFUSED"
    assert code in (0, 1), err.getvalue()
    return str(json.loads(out.getvalue())["diagnosis"]["verdict"])


def page_verdict(tab: chromium.Page, text: str) -> tuple[str, str]:
    """(the verdict the page shows, the text it diagnosed) after pasting `text` and pressing Diagnose."""
    before = tab.evaluate("window.refenvTimings.answers")
    tab.evaluate(f"document.getElementById('report').value = {json.dumps(text)}; "
                 "document.getElementById('diagnose').click(); true")
    tab.wait_for(f"window.refenvTimings.answers > {before}", timeout=120)
    shown = tab.evaluate("document.getElementById('verdict').textContent")
    assert shown == tab.evaluate("document.getElementById('result').dataset.verdict")
    return str(shown), str(tab.evaluate("document.getElementById('report').value"))


def test_the_page_answers_as_the_command_line_for_every_report(loaded: chromium.Page, tmp_path: Path) -> None:
    reports = OWN + CORPUS
    assert len(OWN) >= 20
    differ = []
    for path in reports:
        shown, pasted = page_verdict(loaded, body(path))
        expected = cli_verdict(pasted, tmp_path)
        if shown != expected:
            differ.append(f"{path.name}: page {shown}, command line {expected}")
    assert not differ, "\n".join(differ)
    print(f"{len(reports)} reports ({len(CORPUS)} from {CORPUS_DIR}): the page and the command line agree")


def test_the_page_shows_the_text_report_and_the_comment(loaded: chromium.Page) -> None:
    page_verdict(loaded, (ROOT / "tests/data/reports/smi-table-pip.txt").read_text(encoding="utf-8"))
    text = loaded.evaluate("document.getElementById('text').textContent")
    comment = loaded.evaluate("document.getElementById('markdown').textContent")
    assert text.startswith("refenv diagnose: DRIVER_TOO_OLD\n  from text: the pasted report")
    assert comment.startswith("**refenv diagnose: `DRIVER_TOO_OLD`** (confidence: high)")
    assert loaded.evaluate("document.getElementById('confidence').textContent") == "confidence: high"
    assert loaded.evaluate("document.getElementById('version').textContent").startswith("refenv-diagnose ")
    shown, _ = page_verdict(loaded, "The README has a typo.\n")
    assert shown == "REFUSED"
    assert "no fact about the torch / CUDA stack" in loaded.evaluate("document.getElementById('text').textContent")


def test_nothing_outside_the_pages_folder_is_fetched(loaded: chromium.Page, served: Served) -> None:
    page_verdict(loaded, "torch.cuda.is_available() is False\n")
    loaded.pump(1.0)
    requested = loaded.requested()
    assert any(u.endswith("/pyodide/pyodide.asm.wasm") for u in requested)
    assert any(u.endswith("/refenv-diagnose.pyz") for u in requested)
    outside = [u for u in requested if not u.startswith(served.url) and u != "about:blank"]
    assert outside == []
    folder_files = {p.relative_to(served_root(served)).as_posix() for p in served_root(served).rglob("*") if p.is_file()}
    asked = {p.split("?")[0].lstrip("/") or "index.html" for p in served.paths}
    assert asked <= folder_files, asked - folder_files


def served_root(served: Served) -> Path:
    return Path(served.server.RequestHandlerClass.keywords["directory"])  # type: ignore[attr-defined]


def test_the_watch_would_see_a_request_outside_the_folder(chromium_exe: str) -> None:
    """The control: a page that does fetch from elsewhere is seen doing so (else the test above proves nothing)."""
    with chromium.browser(exe=chromium_exe) as tab:
        target = "http://127.0.0.2:9/pixel.png"
        tab.navigate(f"data:text/html,<img src='{target}'>")
        # Events are collected until the request is seen: a loaded machine takes longer, never too long to tell.
        deadline = time.monotonic() + 120
        while target not in tab.requested() and time.monotonic() < deadline:
            tab.pump(0.5)
        assert target in tab.requested()


@pytest.mark.parametrize("verdict", ["DRIVER_TOO_OLD"])
def test_a_file_opened_is_read_as_its_bytes(loaded: chromium.Page, verdict: str) -> None:
    doc = loaded.send("DOM.getDocument")
    node = loaded.send("DOM.querySelector", nodeId=doc["root"]["nodeId"], selector="#file")
    before = loaded.evaluate("window.refenvTimings.answers")
    loaded.send("DOM.setFileInputFiles", nodeId=node["nodeId"],
                files=[str(ROOT / "tests/data/reports/traceback-too-old.txt")])
    loaded.wait_for(f"window.refenvTimings.answers > {before}", timeout=120)
    assert loaded.evaluate("document.getElementById('verdict').textContent") == verdict
