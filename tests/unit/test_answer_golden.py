"""The comment the bot writes, whole, for one report of each verdict family (golden files).

Each case is GitHub's published `issues.opened` example payload (octokit/webhooks,
payload-examples/api.github.com/issues/opened.payload.json, kept verbatim in tests/data/events) with its
body replaced by a report of tests/data/reports, run through `python -m harness bot --dry-run` as the
Action runs it. The rendered comment must equal tests/data/golden/<report>.md; after a deliberate change of
wording, `REFENV_UPDATE_GOLDEN=1 pytest tests/unit/test_answer_golden.py` rewrites them (read the diff).
Beside the whole text, what a reader must be able to trust is asserted on its own: the fixes in the lesson's
order, no placeholder, nothing stated that the report does not say.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from harness import __version__
from harness.__main__ import main
from harness.answer import comment
from harness.diagnosis.report import diagnose_report

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE = DATA / "events" / "issues-opened-github-example.json"
GOLDEN = DATA / "golden"
# report -> the verdict its comment states (None: it states none, it asks)
FAMILIES = {
    "found-version-only.txt": "DRIVER_TOO_OLD",
    "no-kernel-image-laptop.txt": "ARCH_UNSUPPORTED",
    "repl-version-cuda.txt": "CPU_WHEEL",
    "numbered-listing.txt": "NO_DRIVER",
    "docker-without-gpus.txt": "NOT_VISIBLE",
    "compose-no-deploy.txt": "NOT_VISIBLE",
    "slurm-srun-no-gres.txt": "NOT_VISIBLE",
    "kernel-api-mismatch.txt": "DRIVER_BROKEN",
    "device-assert.txt": "OK",
    "out-of-memory-ja.txt": "OK",
    "timings-labelled.txt": "OK",
    "util-smi-memory-held.txt": "OK",
    "macos-apple-silicon.txt": "OTHER",
    "os-only.txt": None,
}


# The bot posts nothing where the stack works or the text shows no failure (harness/answer/reply.py); the
# comment those reports would get (where it answered them before, or on the paste page) is rendered all the same.
SILENT = {"OK", None}


def bot_comment(report: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                monkeypatch: pytest.MonkeyPatch) -> str:
    """What `bot --dry-run` prints for the example payload carrying this report; for a report it stays silent
    on, its one line of log, then the comment the document renders to."""
    payload = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    payload["issue"]["body"] = (DATA / "reports" / report).read_text(encoding="utf-8")
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    for name in ("GITHUB_TOKEN", "GITHUB_EVENT_PATH", "GITHUB_EVENT_NAME", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    assert main(["bot", "--event", str(event), "--event-name", "issues", "--dry-run"]) == 0
    out = capsys.readouterr().out
    if FAMILIES[report] in SILENT:
        assert out.startswith("refenv issue bot: Codertocat/Hello-World#1: silent: ") and out.count("\n") == 1, out
        out += comment.render(diagnose_report(str(DATA / "reports" / report)), footer="the same comment, not posted")
    return out.replace(__version__, "VERSION")


@pytest.mark.parametrize("report", FAMILIES)
def test_the_comment_matches_its_golden_file(report: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    text = bot_comment(report, tmp_path, capsys, monkeypatch)
    golden = GOLDEN / f"{Path(report).stem}.md"
    if os.environ.get("REFENV_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"the comment for {report} changed; see {golden}"


@pytest.mark.parametrize("report", FAMILIES)
def test_the_comment_states_its_familys_verdict_and_no_placeholder(
        report: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    text = bot_comment(report, tmp_path, capsys, monkeypatch)
    verdict = FAMILIES[report]
    if verdict is None:
        assert "not enough in this report to tell" in text and "**Fix**" not in text
    else:
        assert f"**refenv diagnose: `{verdict}`**" in text
    assert not re.search(r"CUDA \?|= None\b|\{[a-z_]+\}|\?\?", text.replace("version.cuda = None", "")), (
        "a placeholder reached the comment")
    assert "libcuda loaded from" not in text, "no report here names where libcuda was loaded from"


def test_a_found_version_alone_offers_the_driver_update_first(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    text = bot_comment("found-version-only.txt", tmp_path, capsys, monkeypatch)
    fix = [line for line in text.split("**Fix**", 1)[1].split("\n\n", 1)[0].splitlines() if line.startswith("- ")]
    assert fix[0].startswith("- upgrade the driver: ") and "R580" in fix[0], fix
    assert fix[1] == "- or keep the driver and install a torch it runs:", fix
    assert "whl/cu118" in text  # a build whose CUDA (11.8) a CUDA 11.4 driver starts (minor-version compatibility)
    assert "inferred: the driver's CUDA version was read through it" in text


def test_no_kernel_image_on_an_old_laptop_gpu_is_not_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    text = bot_comment("no-kernel-image-laptop.txt", tmp_path, capsys, monkeypatch)
    assert "`OK`" not in text.split("<details>", 1)[0]
    assert "GeForce GT 740M (sm\\_30) is not among this torch's compiled architectures" in text
    assert "compute capability 3.0 from the GPU tables" in text  # inferred, and said so


def test_an_out_of_memory_report_is_handed_to_the_memory_planner_with_the_gpus_total(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    text = bot_comment("out-of-memory-ja.txt", tmp_path, capsys, monkeypatch)
    assert "`python -m harness memory --model <model> --budget 23.64GiB --fit`" in text


def test_timings_and_a_waiting_gpu_are_answered_with_what_more_likely_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    timed = bot_comment("timings-labelled.txt", tmp_path, capsys, monkeypatch)
    assert "torch.cuda.synchronize()" in timed and "the driver" in timed
    waiting = bot_comment("util-smi-memory-held.txt", tmp_path, capsys, monkeypatch)
    assert "num\\_workers" in waiting and "pin\\_memory=True" in waiting  # markdown escapes the underscores
