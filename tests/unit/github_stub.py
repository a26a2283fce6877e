"""A loopback stand-in for GitHub's REST API (issue comments and labels), recording every request it gets.

A real HTTP server (http.server in a thread on 127.0.0.1) so the bot's urllib client, headers, JSON bodies
and error answers are exercised for real; it answers in the shapes GitHub documents (docs.github.com/rest,
"Issue comments" and "Labels").
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

TOKEN = "ghs_loopbackTestToken0123456789abcdef"
BOT = "github-actions[bot]"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class State:
    """What the stub holds: comments per issue, labels per issue, and every request in order."""

    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    labels: dict[int, list[str]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    refuse: int | None = None           # answer every call with this status (e.g. 403)
    refuse_message: str = "Resource not accessible by integration"  # GitHub's `message` in that answer
    next_id: int = 1000

    def add_comment(self, number: int, body: str, login: str = BOT) -> dict[str, Any]:
        self.next_id += 1
        made = {"id": self.next_id, "body": body, "user": {"login": login, "type": "Bot" if "[bot]" in login else "User"},
                "html_url": f"https://github.com/o/r/issues/{number}#issuecomment-{self.next_id}"}
        self.comments.setdefault(number, []).append(made)
        return made

    def calls(self) -> list[str]:
        """'GET /repos/o/r/issues/7/comments' for each request, in order (query left out)."""
        return [f"{r.method} {r.path}" for r in self.requests]


def _handler(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads state.requests
            pass

        def _answer(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            sent: Any = json.loads(self.rfile.read(length)) if length else None
            state.requests.append(Request(self.command, parts.path, parse_qs(parts.query),
                                          {k.lower(): v for k, v in self.headers.items()}, sent))
            body: dict[str, Any] = sent if isinstance(sent, dict) else {}
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._answer(401, {"message": "Bad credentials"})
            if state.refuse:
                return self._answer(state.refuse, {"message": state.refuse_message})
            route = self.command, parts.path
            m = re.fullmatch(r"/repos/o/r/issues/(\d+)/comments", parts.path)
            if m and self.command == "GET":
                q = parse_qs(parts.query)
                per, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
                return self._answer(200, state.comments.get(int(m.group(1)), [])[(page - 1) * per: page * per])
            if m and self.command == "POST":
                return self._answer(201, state.add_comment(int(m.group(1)), body["body"]))
            m = re.fullmatch(r"/repos/o/r/issues/comments/(\d+)", parts.path)
            if m and self.command == "PATCH":
                found = [c for cs in state.comments.values() for c in cs if c["id"] == int(m.group(1))]
                if not found:
                    return self._answer(404, {"message": "Not Found"})
                found[0]["body"] = body["body"]
                return self._answer(200, found[0])
            m = re.fullmatch(r"/repos/o/r/issues/(\d+)/labels(?:/(.+))?", parts.path)
            if m and self.command == "POST" and not m.group(2):
                held = state.labels.setdefault(int(m.group(1)), [])
                held.extend(name for name in body["labels"] if name not in held)
                return self._answer(200, [{"name": n} for n in held])
            if m and self.command == "DELETE" and m.group(2):
                held = state.labels.setdefault(int(m.group(1)), [])
                name = unquote(m.group(2))
                if name not in held:
                    return self._answer(404, {"message": "Label does not exist"})
                held.remove(name)
                return self._answer(200, [{"name": n} for n in held])
            return self._answer(404, {"message": f"Not Found: {route}"})

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

    return Handler


@contextmanager
def github_stub(state: State) -> Iterator[str]:
    """Serve `state` on a free loopback port for the block; yields the API's base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
