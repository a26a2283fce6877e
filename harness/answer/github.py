"""The bot's one way to GitHub: its REST API's issue comments and labels, over urllib (standard library).

Endpoints (docs.github.com/rest, API version 2022-11-28): list an issue's comments
`GET /repos/{owner}/{repo}/issues/{number}/comments`, create one `POST` there, update one
`PATCH /repos/{owner}/{repo}/issues/comments/{id}`, add labels `POST /repos/{owner}/{repo}/issues/{number}/labels`
and remove one `DELETE .../labels/{name}`. The API's base comes from GITHUB_API_URL (GitHub Enterprise
Server has its own); the token goes in an `Authorization: Bearer` header and nowhere else, never into
an error message: what GitHub answers is passed through the one redactor (harness/answer/redact.py), the
token itself among the secrets it knows. Answers are read up to a bound, like every other input.

The bot's own comment is looked for page by page (oldest first, 100 a page, the most GitHub serves) until it
is found or the pages end, bounded by time rather than by a count of pages: an issue with 3,000 comments
before the bot's still gets its one comment updated, never a second one.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypedDict, cast

from harness.answer.redact import redact
from harness.inputs import InputError, loads_json

API_VERSION = "2022-11-28"
MAX_ANSWER_BYTES = 16 << 20
PER_PAGE = 100          # the most the list endpoints serve a page (docs.github.com/rest, "per_page ... max 100")
SEARCH_SECONDS = 300.0  # how long the bot looks through an issue's comments for its own
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
# A token goes into an HTTP header, which holds visible ASCII only (RFC 9110 section 5.5; http.client refuses
# other characters with an exception); GitHub's tokens are letters, digits and '_'.
_TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")


class CommentUser(TypedDict, total=False):
    login: str
    type: str                 # "User" or "Bot"


class IssueComment(TypedDict, total=False):
    """What the bot reads of GitHub's issue comment object (the REST API's own JSON; other keys are kept)."""

    id: int
    body: str
    user: CommentUser


class GitHubError(Exception):
    """GitHub refused or could not be reached; the message says which call and what GitHub said."""


class SearchTimedOut(GitHubError):
    """The issue's comments could not all be looked through in the time given."""


class Client:
    """Issue comments and labels of one repository."""

    def __init__(self, api_url: str, repository: str, token: str, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"GITHUB_API_URL: expected an http(s) URL such as https://api.github.com, got "
                             f"{api_url[:80]!r}")
        if not _REPOSITORY.fullmatch(repository):
            raise InputError(f"the repository: expected OWNER/NAME, got {repository[:80]!r}")
        if not _TOKEN.fullmatch(token):
            what = "none" if not token else "one longer than 4096 characters" if len(token) > 4096 else \
                "one with a space, a control character or a character outside ASCII"
            raise InputError(f"GITHUB_TOKEN: expected a GitHub token (visible ASCII characters, as GitHub issues "
                             f"them), got {what}")
        self.base = api_url.rstrip("/")
        self.repo = repository
        self._token = token
        self.timeout = timeout

    def __repr__(self) -> str:  # never the token
        return f"Client({self.base!r}, {self.repo!r})"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        url = f"{self.base}/repos/{self.repo}{path}"
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json", "Authorization": f"Bearer {self._token}",
            "X-GitHub-Api-Version": API_VERSION, "User-Agent": "refenv-issue-bot",
            **({"Content-Type": "application/json"} if data is not None else {})})
        where = f"{method} {urllib.parse.urlsplit(url).path}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                raw = answer.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise GitHubError(self._clean(f"GitHub answered {exc.code} to {where}: {_message(exc)}")) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GitHubError(self._clean(f"GitHub could not be reached for {where}: {reason}")) from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise GitHubError(f"GitHub's answer to {where} is longer than {MAX_ANSWER_BYTES} bytes")
        if not raw.strip():
            return None
        try:
            return loads_json(raw.decode("utf-8", "replace"), f"GitHub's answer to {where}")
        except InputError as exc:
            raise GitHubError(self._clean(str(exc))) from None

    def _clean(self, message: str) -> str:
        """A message for the log: one line, bounded, redacted (the token and every other secret taken out)."""
        shown = redact(" ".join(message.split())[:400], known=(self._token,))
        # A token too short for the 8-character pieces is still never shown whole.
        return shown.replace(self._token, "[redacted]") if len(self._token) >= 4 else shown

    def find_comment(self, number: int, wanted: Callable[[IssueComment], bool],
                     seconds: float = SEARCH_SECONDS) -> IssueComment | None:
        """The oldest comment of the issue that `wanted` takes, read page by page until it is found or the pages
        end; SearchTimedOut when `seconds` pass first (their fields are checked where read)."""
        deadline = time.monotonic() + seconds
        page = 1
        while True:
            batch = self._call("GET", f"/issues/{number}/comments?per_page={PER_PAGE}&page={page}")
            if not isinstance(batch, list):
                raise GitHubError(f"GitHub's list of comments of issue {number} is not a list")
            comments = [cast(IssueComment, c) for c in batch if isinstance(c, dict)]
            found = next((c for c in comments if wanted(c)), None)
            if found is not None or len(batch) < PER_PAGE:
                return found
            if time.monotonic() > deadline:
                raise SearchTimedOut(f"the comments of issue {number} were not all read in {seconds:g} s "
                                     f"({page * PER_PAGE} read)")
            page += 1

    def create_comment(self, number: int, body: str) -> IssueComment:
        made = self._call("POST", f"/issues/{number}/comments", {"body": body})
        return cast(IssueComment, made) if isinstance(made, dict) else {}

    def update_comment(self, comment_id: int, body: str) -> IssueComment:
        made = self._call("PATCH", f"/issues/comments/{comment_id}", {"body": body})
        return cast(IssueComment, made) if isinstance(made, dict) else {}

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._call("POST", f"/issues/{number}/labels", {"labels": labels})

    def remove_label(self, number: int, name: str) -> None:
        try:
            self._call("DELETE", f"/issues/{number}/labels/{urllib.parse.quote(name, safe='')}")
        except GitHubError as exc:
            if " 404 " not in str(exc):  # already gone: what was wanted
                raise


def _message(exc: urllib.error.HTTPError) -> str:
    """GitHub's own `message` from an error answer, one line, bounded."""
    try:
        data = json.loads(exc.read(65536).decode("utf-8", "replace"))
        message = data.get("message") if isinstance(data, dict) else None
    except (ValueError, OSError):
        message = None
    return " ".join(str(message or exc.reason or "no message").split())[:200]
