"""What the issue bot does for one event, decided from the diagnosis and the issue's comments (pure).

It speaks once per issue: one comment, found again by the hidden MARKER it opens with and by its author,
updated when the answer changes and left alone when it does not. It is silent on text that holds no fact
about the stack, and on a report whose stack works or that shows no failure, unless it answered the issue
before (then its comment follows the text). Labels name a verdict only where the comment states one.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.answer.comment import states_verdict
from harness.answer.github import IssueComment
from harness.facts import torch_of
from harness.schema import CANNOT_TELL, FAILING, OTHER, verdict_of
from harness.schema.envelope import DiagnoseDocument

MARKER = "<!-- refenv-issue-bot -->"
SILENT, CREATE, UPDATE, UNCHANGED = "silent", "create", "update", "unchanged"
ANSWER, QUIET = "answer", "quiet"


@dataclass(frozen=True)
class Plan:
    action: str                       # silent | create | update | unchanged
    why: str                          # one line for the workflow's log
    body: str = ""
    comment_id: int | None = None
    add_labels: tuple[str, ...] = ()
    remove_labels: tuple[str, ...] = ()


def weight(doc: DiagnoseDocument | None) -> str | None:
    """ANSWER for a failure (or a report outside the stack refenv judges, or an is_available() of False
    nothing explains), QUIET for a stack that works or a text that shows no failure, None for no fact."""
    if doc is None:
        return None
    verdict = doc.diagnosis.verdict if doc.diagnosis else None
    if verdict in FAILING or verdict == OTHER:
        return ANSWER
    return ANSWER if verdict == CANNOT_TELL and torch_of(doc.facts).get("is_available") is False else QUIET


def label_for(verdict: str, prefix: str) -> str:
    """'refenv: driver-too-old' for DRIVER_TOO_OLD and the prefix 'refenv: ' (the verdict table's label)."""
    return prefix + verdict_of(verdict).label


def own_comment(comments: list[IssueComment], login: str) -> IssueComment | None:
    """The bot's earlier comment: the oldest that opens with the marker and was written by `login`."""
    for c in comments:
        body, user = c.get("body"), c.get("user") or {}
        if isinstance(body, str) and body.startswith(MARKER) and isinstance(user, dict) and user.get("login") == login:
            return c
    return None


def labels(doc: DiagnoseDocument, current: tuple[str, ...], prefix: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(labels to add, labels to remove): the stated verdict's label, and any other of the prefix."""
    if not prefix:
        return (), ()
    wanted = label_for(doc.diagnosis.verdict, prefix) if states_verdict(doc) and doc.diagnosis else None
    add = (wanted,) if wanted and wanted not in current else ()
    remove = tuple(name for name in current if name.startswith(prefix) and name != wanted)
    return add, remove


def plan(doc: DiagnoseDocument | None, body: str, comments: list[IssueComment] | None, login: str,
         current_labels: tuple[str, ...] = (), label_prefix: str = "") -> Plan:
    """The plan for this event: `body` is the comment rendered for `doc`; `comments` the issue's comments
    (None when they were not fetched: a text without a fact needs no look)."""
    kind = weight(doc)
    if doc is None or kind is None:
        return Plan(SILENT, "no fact about the torch / CUDA stack in the text")
    earlier = own_comment(comments or [], login)
    if kind == QUIET and earlier is None:
        verdict = doc.diagnosis.verdict if doc.diagnosis else "?"
        return Plan(SILENT, f"{verdict}: nothing to fix, and no earlier answer to follow")
    add, remove = labels(doc, current_labels, label_prefix)
    if earlier is None:
        return Plan(CREATE, "a new answer", body, None, add, remove)
    if str(earlier.get("body") or "").replace("\r\n", "\n") == body:  # a body edited on the web has \r\n
        return Plan(UNCHANGED, "the earlier answer still holds", body, earlier.get("id"), add, remove)
    return Plan(UPDATE, "the answer changed with the text", body, earlier.get("id"), add, remove)
