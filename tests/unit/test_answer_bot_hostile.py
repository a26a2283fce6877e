"""The issue bot on hostile events and a hostile API: it answers or stays silent, never crashes (exit 3).

Each case runs `python -m harness bot` in this process against the loopback GitHub stub (github_stub.py),
as test_answer_bot.py does: a lone surrogate in the text, a token no HTTP header can carry, issue numbers
below 1, thousands of comments before the bot's own, a search that runs out of time, a payload with far more
labels than GitHub keeps, and API errors that quote the token or another secret.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.answer import github, reply
from harness.answer.event import MAX_LABELS
from tests.unit.github_stub import TOKEN, State
from tests.unit.test_answer_bot import EVENTS, run_bot


def payload(tmp_path: Path, change: Any, name: str = "issues-opened.json") -> Path:
    data = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "event.json"
    # ensure_ascii keeps a lone surrogate as the JSON escape GitHub would send (\ud800).
    path.write_text(json.dumps(data, ensure_ascii=True), encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["title", "body", "comment"])
def test_a_lone_surrogate_is_read_as_a_replacement_character(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             where: str) -> None:
    def change(data: dict[str, Any]) -> None:
        if where == "comment":
            data["comment"]["body"] += "\n\ud800 lone \udfff surrogates"
        else:
            data["issue"][where] += " \ud800 lone surrogate"

    name = "issue-comment-created.json" if where == "comment" else "issues-opened.json"
    state = State()
    code, _, err = run_bot(monkeypatch, capsys, state, payload(tmp_path, change, name))
    assert code == 0, err
    posted = [r.body["body"] for r in state.requests if r.method in ("POST", "PATCH") and r.body and "body" in r.body]
    assert posted and all("\ud800" not in b for b in posted)
    posted[0].encode("utf-8")  # valid Unicode: it encodes


@pytest.mark.parametrize("token", ["ghs_tökenWithUmlaut0123456789", "ghs_\u20ac0123456789abcdef", "ghs_tab\tin",
                                   "ghs_" + "x" * 5000])
def test_a_token_no_header_can_carry_is_bad_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                  token: str) -> None:
    state = State()
    code, out, err = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened.json", token=token)
    assert code == 2, err
    assert "GITHUB_TOKEN" in err and state.requests == []
    assert token[:12] not in out + err


@pytest.mark.parametrize("number", [0, -1, -(2**40), 2**31, 10**15])
def test_an_issue_number_below_one_or_beyond_is_bad_input(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          number: int) -> None:
    state = State()
    path = payload(tmp_path, lambda d: d["issue"].__setitem__("number", number))
    code, _, err = run_bot(monkeypatch, capsys, state, path)
    assert code == 2 and "issue.number" in err and state.requests == []


def test_its_own_comment_is_found_after_3000_others(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    for i in range(3050):
        state.add_comment(7, f"comment {i}", login="someone")
    own = state.add_comment(7, reply.MARKER + "\nan older answer")
    code, _, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-edited.json")
    assert code == 0
    calls = state.calls()
    assert calls[-1] == f"PATCH /repos/o/r/issues/comments/{own['id']}"
    assert calls.count("GET /repos/o/r/issues/7/comments") == 31
    assert "POST /repos/o/r/issues/7/comments" not in calls, "never a second answer"
    assert len(state.comments[7]) == 3051


def test_the_search_stops_at_its_time_and_stays_silent(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    for i in range(250):
        state.add_comment(7, f"comment {i}", login="someone")
    monkeypatch.setattr(github, "SEARCH_SECONDS", 0.0)
    code, out, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-edited.json")
    assert code == 0 and "silent" in out and "not all read" in out
    assert state.calls() == ["GET /repos/o/r/issues/7/comments"], "one page, then the time is up: nothing posted"


def test_a_search_that_ends_finds_nothing_and_answers_once(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    state = State()
    for i in range(200):  # exactly two full pages: the third, empty, ends the search
        state.add_comment(7, f"comment {i}", login="someone")
    code, _, _ = run_bot(monkeypatch, capsys, state, EVENTS / "issues-edited.json")
    assert code == 0
    assert state.calls() == ["GET /repos/o/r/issues/7/comments"] * 3 + ["POST /repos/o/r/issues/7/comments"]


def test_labels_are_removed_only_as_many_as_an_issue_can_hold(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    labels = [{"name": f"cuda: stale-{i}"} for i in range(100_000)]
    path = payload(tmp_path, lambda d: d["issue"].__setitem__("labels", labels))
    state = State()
    state.labels[7] = [x["name"] for x in labels[:MAX_LABELS]]
    code, _, _ = run_bot(monkeypatch, capsys, state, path, "--label-prefix", "cuda: ")
    assert code == 0
    deletes = [c for c in state.calls() if c.startswith("DELETE")]
    assert len(deletes) == MAX_LABELS == 100
    assert state.labels[7] == ["cuda: driver-too-old"]


@pytest.mark.parametrize("message", [f"Bad credentials: token {TOKEN} was revoked",
                                     "token=ghp_0123456789abcdefghijABCDEFGHIJ0123 is not allowed",
                                     f"{TOKEN[:20]}... rejected"])
def test_an_api_error_that_quotes_a_secret_is_logged_redacted(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str],
                                                              message: str) -> None:
    state = State(refuse=422, refuse_message=message)
    code, out, err = run_bot(monkeypatch, capsys, state, EVENTS / "issues-opened.json")
    assert code == 1 and err.strip().count("\n") == 0
    assert "GitHub answered 422" in err
    for secret in (TOKEN, "ghp_0123456789abcdefghijABCDEFGHIJ0123"):
        assert not [secret[i:i + 8] for i in range(len(secret) - 7) if secret[i:i + 8] in out + err]
