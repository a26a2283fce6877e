"""What a GitHub event says: which issue, who wrote what, and the text to read (pure over the payload).

GitHub writes the webhook payload of the event that started a workflow to the file GITHUB_EVENT_PATH
(docs.github.com, "Webhook events and payloads": `issues` with `action` opened/edited and an `issue`;
`issue_comment` with `action` created, the `issue` and the `comment`; both with the `repository`). The
text is the issue's title and body, and for a comment the comment after them (a reporter answering
the bot's questions adds to the issue, not replaces it). Each part is cut at GitHub's own limit of
65,536 characters for a body, at a line break, so nothing bigger is ever read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.inputs import InputError, load_json_file

MAX_EVENT_BYTES = 32 << 20   # GitHub caps a webhook payload at 25 MB
MAX_PART_CHARS = 65_536      # GitHub's limit on an issue's or a comment's body
ANSWERED = {"issues": ("opened", "edited"), "issue_comment": ("created",)}
# GitHub keeps at most 100 labels on an issue or pull request (its API refuses more: actions/labeler 4.2.0
# release notes, "the GitHub API imposes a limit of 100 labels"); a payload listing more is not GitHub's.
MAX_LABELS = 100
MAX_LABEL_CHARS = 100        # a label's name is at most 50 characters on GitHub; anything longer is cut here
MAX_NUMBER = 2**31 - 1       # issue numbers count up from 1 in each repository
# A lone UTF-16 surrogate: JSON's \ud800 escape decodes to one, and no UTF-8 text can hold it.
_SURROGATE = re.compile("[\ud800-\udfff]")


class EventError(InputError):
    """The payload is not an event the bot can read; the message names the field."""


@dataclass(frozen=True)
class Part:
    """One piece of the text read: where it came from and the line it starts on in the joined text."""

    label: str       # "title" | "issue" | "comment"
    text: str
    first_line: int


@dataclass(frozen=True)
class Event:
    name: str                      # issues | issue_comment
    action: str
    repository: str                # owner/name
    number: int
    labels: tuple[str, ...]        # the issue's labels now
    author: str                    # who wrote the text that triggered the event
    author_is_bot: bool
    pull_request: bool
    parts: tuple[Part, ...]
    cut: bool                      # a part was longer than MAX_PART_CHARS and was cut

    @property
    def answered(self) -> bool:
        """Whether the bot answers this event at all (an issue opened or edited, a comment created)."""
        return self.action in ANSWERED.get(self.name, ())

    def text(self) -> str:
        return "\n".join(p.text for p in self.parts)

    def where(self, line: int) -> str:
        """'title', 'issue line 3' or 'comment line 2' for a line of the joined text."""
        part = next((p for p in reversed(self.parts) if line >= p.first_line), None)
        if part is None:
            return f"line {line}"
        return part.label if part.label == "title" else f"{part.label} line {line - part.first_line + 1}"


def valid_text(text: str) -> str:
    """The text as valid Unicode: each lone surrogate (a JSON '\\ud800' no UTF-8 can encode) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _field(data: Any, path: str, kind: type, required: bool = True) -> Any:
    node = data
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    if node is None and not required:
        return None
    if not isinstance(node, kind) or isinstance(node, bool) is not (kind is bool):
        raise EventError(f"the event payload: {path}: expected {kind.__name__}, got {type(node).__name__}")
    return valid_text(node) if isinstance(node, str) else node


def _labels(data: Any) -> tuple[str, ...]:
    """The issue's label names, as many as GitHub keeps on an issue (the rest of a longer list is not read)."""
    found = _field(data, "issue.labels", list, required=False) or []
    names = (x.get("name") for x in found[:MAX_LABELS] if isinstance(x, dict))
    return tuple(valid_text(n)[:MAX_LABEL_CHARS] for n in names if isinstance(n, str))


def cut(text: str, limit: int = MAX_PART_CHARS) -> tuple[str, bool]:
    """The text up to `limit` characters, ending at a line break where one is near; whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    at = head.rfind("\n")
    return (head[:at] if at > limit // 2 else head), True


def parse(data: Any, name: str) -> Event:
    """The event from a payload already parsed (`name`: GITHUB_EVENT_NAME, told from the payload when it is
    neither issues nor issue_comment); EventError names the field that does not fit."""
    if not isinstance(data, dict):
        raise EventError("the event payload: expected a JSON object")
    if name not in ANSWERED:
        name = "issue_comment" if isinstance(data.get("comment"), dict) else "issues"
    action = _field(data, "action", str)
    number = _field(data, "issue.number", int)
    if not 1 <= number <= MAX_NUMBER:
        shown = number if abs(number) < 10**12 else "a larger number"
        raise EventError(f"the event payload: issue.number: expected an issue number from 1 to {MAX_NUMBER}, "
                         f"got {shown}")
    repository = _field(data, "repository.full_name", str)
    labels = _labels(data)
    title = " ".join((_field(data, "issue.title", str, required=False) or "").split())
    body, issue_cut = cut(_field(data, "issue.body", str, required=False) or "")
    texts = [("title", title[:1000]), ("issue", body)]
    comment_cut = False
    if name == "issue_comment":
        comment, comment_cut = cut(_field(data, "comment.body", str, required=False) or "")
        texts.append(("comment", comment))
    parts, line = [], 1
    for label, text in texts:
        # One line separator (GitHub keeps the browser's \r\n), so a part's lines are counted as the reader counts them.
        normal = "\n".join(text.splitlines())
        parts.append(Part(label, normal, line))
        line += normal.count("\n") + 1
    who = "comment.user" if name == "issue_comment" else "issue.user"
    user = _field(data, who, dict, required=False) or {}
    login = user.get("login")
    return Event(name, action, repository, number, labels, valid_text(login) if isinstance(login, str) else "",
                 user.get("type") == "Bot", isinstance((data.get("issue") or {}).get("pull_request"), dict),
                 tuple(parts), issue_cut or comment_cut)


def read(path: str, name: str) -> Event:
    """The event in the payload file GitHub wrote (bounded, strict JSON)."""
    return parse(load_json_file(path, "the event payload (GITHUB_EVENT_PATH)", cap=MAX_EVENT_BYTES), name)
