"""`diagnose --format markdown`: the comment an issue gets, checked against the reports it was made from.

Every quoted line must be the report's own line of that number; a verdict is named only at high or medium
confidence; the fix's blocks hold commands only; what came from the report stays inside code.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.answer import comment, markup
from harness.answer.redact import redact
from harness.diagnosis.report import diagnose_report
from harness.schema import FAILING, decode
from harness.schema.envelope import DiagnoseDocument

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
CASES = sorted(p.name for p in REPORTS.glob("*.txt"))
QUOTED = re.compile(r"^\s*line (\d+) \| (.*)$")


def fenced(text: str) -> list[tuple[str, list[str]]]:
    """(info string, lines) of every fenced block, a fence closing only at a backtick run of its own length."""
    blocks: list[tuple[str, list[str]]] = []
    fence, info, body = "", "", list[str]()
    for line in text.splitlines():
        stripped = line.strip()
        if not fence:
            m = re.match(r"^(`{3,})(\w*)$", stripped)
            if m:
                fence, info, body = m.group(1), m.group(2), []
        elif stripped == fence:
            blocks.append((info, body))
            fence = ""
        else:
            body.append(line.strip())
    assert not fence, "a code block is left open"
    return blocks


def outside_code(text: str) -> str:
    """The comment with its code blocks and code spans taken out: what GitHub renders as Markdown."""
    out, fence = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        m = re.match(r"^(`{3,})\w*$", stripped)
        if not fence and m:
            fence = m.group(1)
        elif fence and stripped == fence:
            fence = ""
        elif not fence:
            out.append(re.sub(r"(`+)(?:(?!\1).)*?\1", "", line))
    return "\n".join(out)


def render_case(name: str) -> tuple[DiagnoseDocument, str]:
    doc = diagnose_report(str(REPORTS / name))
    return doc, comment.render(doc)


@pytest.mark.parametrize("name", CASES)
def test_the_comment_quotes_the_reports_own_lines_by_number(name: str) -> None:
    doc, text = render_case(name)
    lines = (REPORTS / name).read_text(encoding="utf-8").splitlines()
    quoted = [QUOTED.match(line) for block in fenced(text) for line in block[1]]
    quoted_lines = [(int(m.group(1)), m.group(2)) for m in quoted if m]
    assert quoted_lines or not (doc.input and doc.input.provenance), "facts were read but no line is quoted"
    for number, shown in quoted_lines:
        assert shown == markup.clip(redact(markup.clip(lines[number - 1].rstrip(), 2000))), (number, shown)


@pytest.mark.parametrize("name", CASES)
def test_a_verdict_is_named_only_at_high_or_medium_confidence(name: str) -> None:
    doc, text = render_case(name)
    first = text.splitlines()[0]
    assert doc.diagnosis is not None and doc.diagnosis.assessment is not None
    verdict, confidence = doc.diagnosis.verdict, doc.diagnosis.assessment.confidence
    if confidence in ("high", "medium") and verdict != "CANNOT_TELL":
        assert first.startswith(f"**refenv diagnose: `{verdict}`** (confidence: {confidence})")
    else:
        assert first.startswith("**refenv diagnose: not enough in this report to tell")
        assert f"confidence: {confidence}" in first
        assert "**Fix**" not in text and "Every finding" not in text
        assert not re.search(r"refenv diagnose: `", text)
        assert "please run these" in text  # it asks for what would settle it


@pytest.mark.parametrize("name", CASES)
def test_the_fix_blocks_hold_commands_and_the_details_close(name: str) -> None:
    doc, text = render_case(name)
    fix = text.split("**Fix**", 1)[1].split("\n\n", 1)[0] if "**Fix**" in text else ""
    for info, body in fenced(fix):
        assert info == "sh" and body and all(markup.is_command(line) for line in body), body
    assert doc.diagnosis is not None
    primary = next((f for f in doc.diagnosis.findings if f.severity == "error" and f.verdict in FAILING), None)
    has_fix = bool(primary and primary.remediation) and comment.states_verdict(doc)
    assert ("**Fix**" in text) == (has_fix and doc.diagnosis.verdict in FAILING)
    assert text.count("<details>") == text.count("</details>")
    assert len(text) <= comment.MAX_CHARS


def test_a_fix_step_keeps_its_words_and_puts_its_command_under_them() -> None:
    _, text = render_case("smi-table-pip.txt")
    fix = text.split("**Fix**", 1)[1]
    assert "- or keep the driver and install a torch it runs:\n  ```sh\n  pip install torch==2.3.1 --index-url " in fix


def hostile_report() -> str:
    return "\n".join([
        "torch.cuda.is_available() returns False @octocat <img src=x onerror=alert(1)> [click](http://evil.example)",
        "| NVIDIA-SMI 470.256.02   Driver Version: 470.256.02   CUDA Version: 11.4 | ```` </details> <!--",
        "pip install torch==2.3.1  # ![pixel](http://evil.example/p.png) ```",
        "CUDA_VISIBLE_DEVICES=0 HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ0123 python t.py",
    ])


def test_what_the_report_says_stays_in_code_and_secrets_are_not_echoed(tmp_path: Path) -> None:
    report = tmp_path / "hostile.txt"
    report.write_text(hostile_report(), encoding="utf-8")
    text = comment.render(diagnose_report(str(report)))
    rendered = outside_code(text)
    for bad in ("@octocat", "<img", "](http://evil", "<!--", "onerror"):
        assert bad not in rendered, bad
    assert rendered.count("<details>") == rendered.count("</details>")  # the report's </details> is inside code
    for secret in ("hf_abcdefghijklmnopqrstuvwxyz0123", "ghp_0123456789abcdefghijABCDEFGHIJ0123"):
        assert secret not in text
    assert "CUDA_VISIBLE_DEVICES=0" in text  # the stack's own variables are evidence, kept
    quoted = [line for _, body in fenced(text) for line in body if QUOTED.match(line)]
    assert len(quoted) == 4, quoted  # every line of it was read, each inside a fence longer than its backticks


def test_the_command_line_writes_the_same_comment() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["diagnose", "--from", str(REPORTS / "kernel-api-mismatch.txt"), "--format", "markdown"])
    assert code == 1
    as_json = io.StringIO()
    with redirect_stdout(as_json):
        main(["diagnose", "--from", str(REPORTS / "kernel-api-mismatch.txt"), "--format", "json"])
    doc = decode(DiagnoseDocument, json.loads(as_json.getvalue()))  # the printed document, read back
    assert out.getvalue() == comment.render(doc)
    assert out.getvalue().startswith("**refenv diagnose: `DRIVER_BROKEN`** (confidence: high)")


def test_json_and_another_format_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--from", str(REPORTS / "os-only.txt"), "--json", "--format", "markdown"])
    assert code == 2
    assert "--json and --format markdown" in capsys.readouterr().err


def test_a_live_diagnosis_shows_its_primary_findings_evidence() -> None:
    doc = decode(DiagnoseDocument, {"harness_version": "0.1.0", "diagnosis": {"verdict": "NO_DRIVER", "findings": [
        {"verdict": "NO_DRIVER", "severity": "error", "title": "no NVIDIA driver on this machine",
         "evidence": ["/dev/nvidia*: none"], "remediation": ["install the NVIDIA driver and reboot"]}]}})
    text = comment.render(doc)
    assert text.startswith("**refenv diagnose: `NO_DRIVER`**: no NVIDIA driver on this machine")
    assert ("sh", []) not in fenced(text)
    assert ("", ["/dev/nvidia*: none"]) in fenced(text)


def test_a_comment_too_long_drops_its_folds_not_its_answer() -> None:
    doc = diagnose_report(str(REPORTS / "smi-table-pip.txt"))
    assert doc.diagnosis is not None
    many = tuple(f"unknown {i} " + "x" * 200 for i in range(400))
    text = comment.render(dataclasses.replace(doc, diagnosis=dataclasses.replace(doc.diagnosis, unknowns=many)))
    assert len(text) <= comment.MAX_CHARS
    assert text.startswith("**refenv diagnose: `DRIVER_TOO_OLD`**") and "**Fix**" in text
    assert "folded details were left out" in text
