"""The issue bot end to end: recorded GitHub event payloads in, the REST requests it makes asserted.

`python -m harness bot` runs in this process against a loopback stub of GitHub's API (github_stub.py: a
real HTTP server), with the environment GitHub Actions gives a step (GITHUB_EVENT_PATH, GITHUB_TOKEN,
GITHUB_API_URL). The payloads under tests/data/events are in the shapes GitHub documents for the
`issues` and `issue_comment` webhooks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.__main__ import main
from harness.answer import event, reply
from tests.unit.github_stub import BOT, TOKEN, State, github_stub

EVENTS = Path(__file__).resolve().parents[1] / "data" / "events"


def run_bot(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], state: State, payload: Path,
            *args: str, token: str = TOKEN) -> tuple[int, str, str]:
    """Run the bot on one payload against the stub; (exit status, stdout, stderr)."""
    with github_stub(state) as api:
        monkeypatch.setenv("GITHUB_API_URL", api)
        monkeypatch.setenv("GITHUB_TOKEN", token)
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(payload))
        monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)
        monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
        code = main(["bot", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_an_opened_report_gets_one_comment_and_its_label(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    code, out, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened.json", "--label-prefix", "cuda: ")
    assert code == 0, out
    assert state.calls() == ["GET /repos/o/r/issues/7/comments", "POST /repos/o/r/issues/7/comments",
                             "POST /repos/o/r/issues/7/labels"]
    first = state.requests[0]
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    assert first.headers["x-github-api-version"] == "2022-11-28"
    assert first.headers["accept"] == "application/vnd.github+json"
    assert first.query == {"per_page": ["100"], "page": ["1"]}
    body = state.requests[1].body["body"]
    assert body.startswith(reply.MARKER + "\n")
    assert "**refenv diagnose: `DRIVER_TOO_OLD`** (confidence: high)" in body
    assert "issue line 5 | | NVIDIA-SMI 470.256.02" in body  # the body's own line numbers, the title apart
    lines = json.loads((EVENTS / "issues-opened.json").read_text(encoding="utf-8"))["issue"]["body"].splitlines()
    assert lines[5 - 1].startswith("| NVIDIA-SMI 470.256.02")
    assert state.requests[2].body == {"labels": ["cuda: driver-too-old"]}
    assert "DRIVER_TOO_OLD, high confidence" in out


def test_an_edit_updates_the_same_comment_and_its_labels(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = State()
    run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened.json", "--label-prefix", "cuda: ")
    first_id = state.comments[7][0]["id"]
    state.labels[7] = ["bug", "cuda: driver-too-old"]
    state.requests.clear()
    code, _, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-edited.json", "--label-prefix", "cuda: ")
    assert code == 0
    assert state.calls() == ["GET /repos/o/r/issues/7/comments", f"PATCH /repos/o/r/issues/comments/{first_id}",
                             "DELETE /repos/o/r/issues/7/labels/cuda%3A%20driver-too-old",
                             "POST /repos/o/r/issues/7/labels"]
    assert len(state.comments[7]) == 1, "never a second comment"
    assert "**refenv diagnose: `CPU_WHEEL`**" in state.comments[7][0]["body"]
    assert state.labels[7] == ["bug", "cuda: cpu-wheel"]
    again = json.loads((EVENTS / "issues-edited.json").read_text(encoding="utf-8"))
    again["issue"]["labels"] = [{"name": name} for name in state.labels[7]]  # what the issue carries now
    again_path = tmp_path / "edited-again.json"
    again_path.write_text(json.dumps(again), encoding="utf-8")
    state.requests.clear()
    run_bot(monkeypatch, capsys, state, again_path, "--label-prefix", "cuda: ")
    assert state.calls() == ["GET /repos/o/r/issues/7/comments"], "an answer that did not change is left alone"


def test_a_thin_report_is_asked_for_commands_then_a_reply_settles_it(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened-thin.json", "--label-prefix", "cuda: ")
    assert state.calls() == ["GET /repos/o/r/issues/8/comments", "POST /repos/o/r/issues/8/comments"]  # no label
    asked = state.comments[8][0]["body"]
    assert "not enough in this report to tell" in asked and "please run these" in asked
    assert "python -m torch.utils.collect_env" in asked
    assert not re.search(r"refenv diagnose: `", asked), "no verdict at low confidence"
    state.add_comment(8, "+1 same here", login="someone")
    state.requests.clear()
    code, _, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issue-comment-created.json", "--label-prefix", "cuda: ")
    assert code == 0
    own = state.comments[8][0]
    assert state.calls() == ["GET /repos/o/r/issues/8/comments", f"PATCH /repos/o/r/issues/comments/{own['id']}",
                             "POST /repos/o/r/issues/8/labels"]
    assert "**refenv diagnose: `DRIVER_TOO_OLD`** (confidence: high)" in own["body"]
    assert "comment line 6 | | NVIDIA-SMI 470.182.03" in own["body"]


def test_the_bots_own_comment_and_pull_requests_start_nothing(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = json.loads((EVENTS / "issue-comment-created.json").read_text(encoding="utf-8"))
    data["comment"]["user"] = {"login": BOT, "type": "Bot"}
    data["comment"]["body"] = reply.MARKER + "\n**refenv diagnose: `DRIVER_TOO_OLD`**"
    own = tmp_path / "own.json"
    own.write_text(json.dumps(data), encoding="utf-8")
    for payload in (own, EVENTS / "issue-comment-on-pull-request.json"):
        state = State()
        code, out, _ = run_bot(monkeypatch, capsys, state, payload)
        assert code == 0 and state.requests == [] and "silent" in out


def test_an_issue_without_a_fact_about_the_stack_gets_no_request(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    code, out, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened-not-gpu.json", "--label-prefix", "x: ")
    assert code == 0 and state.requests == []
    assert "silent" in out


def test_a_huge_body_is_read_only_up_to_githubs_own_limit(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = json.loads((EVENTS / "issues-opened.json").read_text(encoding="utf-8"))
    filler = "".join(f"epoch {i}: loss 0.{i % 97:02d} lr 3e-4 [{'=' * 40}]\n" for i in range(200_000))
    data["issue"]["body"] += filler  # ~14 MB, past what GitHub would ever store
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps(data), encoding="utf-8")
    state = State()
    code, _, _ = run_bot(monkeypatch, capsys, state, huge)
    assert code == 0
    body = state.comments[7][0]["body"]
    assert "DRIVER_TOO_OLD" in body and "only the first 65,536 characters" in body
    assert len(body) < 65_536


def test_a_payload_past_the_bound_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.write(b'{"action": "opened", "pad": "')
        f.truncate(event.MAX_EVENT_BYTES + 10)
    state = State()
    code, _, err = run_bot(monkeypatch, capsys, state, big)
    assert code == 2 and state.requests == []
    assert err.count("\n") == 1 and "the event payload (GITHUB_EVENT_PATH)" in err


def test_a_hostile_body_echoes_no_secret_no_mention_and_no_markup(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    trap = state.add_comment(10, reply.MARKER + " not the bot's", login="mallory")
    code, _, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened-hostile.json")
    assert code == 0
    assert trap["body"] == reply.MARKER + " not the bot's", "another user's comment with the marker is not the bot's"
    assert [c["user"]["login"] for c in state.comments[10]] == ["mallory", BOT]
    body = state.comments[10][1]["body"]
    for secret in ("s3cretpassw0rd", "ghp_AAAA", "wJalrXUtnFEMI", "eyJhbGciOiJIUzI1NiJ9", "/home/mallory", "hunter2",
                   "ssh-XXXX"):
        assert secret not in body, secret
    prose = outside_fences(body)
    for live in ("@octocat", "@o/", "<img", "<script", "](javascript", "![p]", "\u202e"):
        assert live not in prose, live
    assert prose.count("<details>") == prose.count("</details>")  # the body's own </details> stays in code
    assert "</details> </summary>" not in prose
    assert body.startswith(reply.MARKER) and prose.count(reply.MARKER) == 1


def test_github_refusing_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    state = State(refuse=403)
    code, _, err = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened.json")
    assert code == 1
    assert err.strip().count("\n") == 0
    assert "GitHub answered 403 to GET /repos/o/r/issues/7/comments: Resource not accessible by integration" in err
    assert TOKEN not in err


def test_a_wrong_token_is_refused_by_github_and_never_shown(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_bot(monkeypatch, capsys, State(), EVENTS / "issues-opened.json", token="ghs_wrong0123456789")
    assert code == 1 and "401" in err and "Bad credentials" in err
    assert "ghs_wrong" not in out + err


def test_no_token_is_bad_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    code, _, err = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened.json", token="")
    assert code == 2 and state.requests == [] and "GITHUB_TOKEN" in err


def test_its_own_comment_is_found_past_the_first_page(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    for i in range(130):
        state.add_comment(7, f"comment {i}", login="someone")
    own = state.add_comment(7, reply.MARKER + "\nan older answer")
    code, _, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-edited.json")
    assert code == 0
    assert state.calls() == ["GET /repos/o/r/issues/7/comments", "GET /repos/o/r/issues/7/comments",
                             f"PATCH /repos/o/r/issues/comments/{own['id']}"]
    assert [r.query["page"] for r in state.requests[:2]] == [["1"], ["2"]]


def test_a_dry_run_prints_the_comment_and_calls_nothing(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    state = State()
    with github_stub(state):
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
        code = main(["bot", "--event", str(EVENTS / "issues-opened.json"), "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and state.requests == []
    assert reply.MARKER in out and "DRIVER_TOO_OLD" in out
    assert outputs.read_text(encoding="utf-8") == "action=create\nverdict=DRIVER_TOO_OLD\nconfidence=high\n"


def outside_fences(text: str) -> str:
    """The lines GitHub renders as Markdown: outside fenced blocks, and with code spans taken out."""
    out, fence = [], ""
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,})\w*$", line)
        if not fence and m:
            fence = m.group(1)
        elif fence and line.strip() == fence:
            fence = ""
        elif not fence:
            out.append(re.sub(r"(`+)(?:(?!\1).)*?\1", "", line))
    return "\n".join(out)


def test_other_events_are_left_alone(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    dispatch = tmp_path / "dispatch.json"
    dispatch.write_text(json.dumps({"inputs": {}, "ref": "refs/heads/main"}), encoding="utf-8")
    state = State()
    with github_stub(state) as api:
        monkeypatch.setenv("GITHUB_API_URL", api)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        assert main(["bot", "--event", str(dispatch), "--event-name", "workflow_dispatch"]) == 0
        closed = json.loads((EVENTS / "issues-opened.json").read_text(encoding="utf-8"))
        closed["action"] = "closed"
        (tmp_path / "closed.json").write_text(json.dumps(closed), encoding="utf-8")
        assert main(["bot", "--event", str(tmp_path / "closed.json"), "--event-name", "issues"]) == 0
    assert state.requests == [] and capsys.readouterr().out.count("silent") == 2


def test_a_payload_that_does_not_fit_names_its_field(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = json.loads((EVENTS / "issues-opened.json").read_text(encoding="utf-8"))
    bad["issue"]["number"] = "7"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    code, _, err = run_bot(monkeypatch, capsys, State(), path)
    assert code == 2 and err.strip() == "error: the event payload: issue.number: expected int, got str"
