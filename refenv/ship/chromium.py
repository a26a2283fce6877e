"""Headless Chromium driven over the Chrome DevTools Protocol: how refenv looks at its paste page.

Chromium is started with a fresh profile and `--remote-debugging-port=0`; the port it chose is read from
the profile's DevToolsActivePort file, and the page's target is driven over its websocket (CDP: Page,
Runtime and Network domains, chromedevtools.github.io/devtools-protocol). Every request the page makes is
recorded from `Network.requestWillBeSent`, so a test can prove that nothing outside the page's folder was
fetched. The flags are those that run here: no sandbox (root in a container), no GPU, no QUIC, and none of
Chromium's own background traffic.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from refenv.errors import RefenvError

NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--remote-debugging-port=0")


class BrowserError(RefenvError):
    """Chromium is missing, did not start, or the page did not answer in time."""


def find() -> str | None:
    return next((p for p in (shutil.which(n) for n in NAMES) if p), None)


class Page:
    """One tab: send CDP commands, keep the events they cause, evaluate JavaScript."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        self.ws.send(json.dumps({"id": wanted, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline, method)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error'].get('message')}")
                result: dict[str, Any] = message.get("result") or {}
                return result
            if "method" in message:
                self.events.append(message)

    def _receive(self, deadline: float, what: str) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BrowserError(f"Chromium did not answer {what} in time")
        self.ws.settimeout(left)
        try:
            message: dict[str, Any] = json.loads(self.ws.recv())
        except Exception as exc:  # websocket's timeout and closed-connection errors alike
            raise BrowserError(f"Chromium did not answer {what}: {type(exc).__name__}: {exc}") from None
        return message

    def pump(self, seconds: float) -> None:
        """Collect the events that arrive in the next `seconds`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self.events.append(self._receive(deadline, "events"))
            except BrowserError:
                return

    def evaluate(self, expression: str, timeout: float = 60.0) -> Any:
        """The value of a JavaScript expression (a promise is awaited)."""
        answer = self.send("Runtime.evaluate", timeout=timeout, expression=expression, awaitPromise=True,
                           returnByValue=True)
        if "exceptionDetails" in answer:
            raise BrowserError(f"the page threw: {answer['exceptionDetails'].get('exception', {}).get('description')}")
        return answer.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 120.0, every: float = 0.05) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(every)
        raise BrowserError(f"the page never made {expression!r} true in {timeout:.0f} s")

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def requested(self) -> list[str]:
        """Every URL the page asked for since Network.enable, in order."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))


@contextmanager
def browser(width: int = 1280, height: int = 900, exe: str | None = None) -> Iterator[Page]:
    """A headless Chromium with a fresh profile and one blank tab, Network and Runtime enabled; always stopped."""
    import websocket  # websocket-client: the one third-party piece, a host-side test and benchmark tool

    exe = exe or find()
    if exe is None:
        raise BrowserError("no Chromium found", hint="install Debian's chromium (./go does)")
    with tempfile.TemporaryDirectory(prefix="refenv-chromium-") as profile:
        proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                                 "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port = _port(Path(profile) / "DevToolsActivePort", proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
                targets = json.loads(answer.read())
            url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
            try:
                page = Page(ws)
                for domain in ("Page", "Runtime", "Network"):
                    page.send(f"{domain}.enable")
                page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                          mobile=False)
                yield page
            finally:
                ws.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


def _port(active: Path, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    """The debugging port Chromium chose, from its DevToolsActivePort file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrowserError(f"Chromium exited at start (status {proc.returncode})")
        text = active.read_text(encoding="utf-8") if active.is_file() else ""
        if text.strip():
            return int(text.split()[0])
        time.sleep(0.1)
    raise BrowserError(f"Chromium wrote no {active.name} in {timeout:.0f} s")
