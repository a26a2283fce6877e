"""The browser tier: the paste page built for real (`invoke web`), served on loopback, in headless Chromium.

Every test here is marked `browser`. Without Chromium, or without the pinned Pyodide tarball (npm fetches
it once into refenv's cache), these tests skip; with CI=true they fail: `./go` installs both tools.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from refenv.errors import RefenvError
from refenv.ship import chromium, page
from tests.conftest import in_ci

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/browser as `browser`, so `-m browser` selects the tier."""
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)


def _missing(what: str) -> None:
    if in_ci():
        pytest.fail(f"CI=true and the browser tier needs {what}", pytrace=False)
    pytest.skip(f"{what}; or deselect the tier: -m 'not browser'")


@pytest.fixture(scope="session")
def chromium_exe() -> str:
    exe = chromium.find()
    if exe is None:
        _missing("Chromium (Debian's chromium; ./go installs it)")
    assert exe is not None
    return exe


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> page.Site:
    """The page's folder, built as `invoke web` builds it."""
    try:
        return page.build(ROOT, tmp_path_factory.mktemp("site") / "web")
    except RefenvError as exc:
        _missing(f"the paste page's Pyodide: {exc}")
        raise


class Served:
    """A static server of the page's folder on loopback, like any host would serve it; it keeps each path asked."""

    def __init__(self, folder: Path) -> None:
        self.paths: list[str] = []
        served = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                served.paths.append(self.path)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def served(site: page.Site) -> Iterator[Served]:
    s = Served(site.folder)
    yield s
    s.close()


@pytest.fixture(scope="session")
def loaded(chromium_exe: str, served: Served) -> Iterator[chromium.Page]:
    """One Chromium tab with the page loaded and its Python ready."""
    with chromium.browser(exe=chromium_exe) as tab:
        tab.navigate(served.url)
        tab.wait_for("window.refenvTimings && window.refenvTimings.ready_ms", timeout=300)
        yield tab
