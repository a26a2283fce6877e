"""`refenv compat refresh` against package indexes served on 127.0.0.1 during the test, from the real metadata of
torch 2.14.1 and 2.15.0 (tests/data/index/, their origin in ORIGIN.md): PyPI's layout (PEP 691 JSON, PEP 658
metadata files) and PyTorch's (PEP 503 HTML, local versions +cuXYZ, no metadata files: the wheel's METADATA
read through ranged requests). compat.json knows torch up to 2.14, so 2.15 must appear as a new release."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness import compat
from refenv import refresh
from refenv.refresh import builds, remotezip, table
from tests.unit.stack_samples import SASS, container, entry, shared_object

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "index"
META = {v: (DATA / f"torch-{v}-cp312-cp312-manylinux_2_28_x86_64.whl.metadata").read_bytes()
        for v in ("2.14.1", "2.15.0")}
PAGE = json.loads((DATA / "pypi-torch.json").read_text(encoding="utf-8"))


def _wheel(version: str) -> bytes:
    """A wheel-shaped zip holding the release's real METADATA (and a large stored member before it, so the reads
    are ranged ones into the middle of the file)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("torch/lib/padding.bin"), os.urandom(300_000), zipfile.ZIP_STORED)
        z.writestr(f"torch-{version}.dist-info/METADATA", META[version])
        z.writestr(f"torch-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    return out.getvalue()


class Index:
    """A loopback index: its files, and a record of every request (path, Range header)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[str, bytes]] = {}
        self.ranged: set[str] = set()          # paths answered 206 to a Range header
        self.seen: list[tuple[str, str | None]] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.seen.append((self.path, self.headers.get("Range")))
                kind, body = index.routes.get(self.path, ("", b""))
                if not kind:
                    self.send_error(404)
                    return
                m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range") or "")
                if m and self.path in index.ranged:
                    lo, hi = int(m.group(1)), min(int(m.group(2)), len(body) - 1)
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {lo}-{hi}/{len(body)}")
                    body = body[lo:hi + 1]
                else:
                    self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def index() -> Iterator[Index]:
    served = Index()
    yield served
    served.server.shutdown()
    served.server.server_close()


def _version(filename: str) -> str:
    return filename.split("-")[1]


def pypi_layout(index: Index) -> str:
    """PyPI's project page as it was read (tests/data/index/pypi-torch.json), its files on this index, each Linux
    x86_64 wheel with PEP 714's `core-metadata` and its `.metadata` file (the release's, which is one for every
    CPython of the platform: checked for 2.14.1's cp311 and cp312 wheels, see ORIGIN.md)."""
    files = []
    for listed in PAGE["files"]:
        f = dict(listed, url=f"{index.url}/files/{listed['filename']}")
        if "manylinux" in f["filename"] and f["filename"].endswith("x86_64.whl"):
            meta = META[_version(f["filename"])]
            f["core-metadata"] = {"sha256": hashlib.sha256(meta).hexdigest()}
            index.routes[f"/files/{f['filename']}.metadata"] = ("text/plain", meta)
        files.append(f)
    page = dict(PAGE, files=files)
    index.routes["/simple/torch/"] = (refresh.index.JSON_TYPE, json.dumps(page).encode())
    return f"{index.url}/simple"


# The build whose real metadata is checked in, on its own variant's index: PyPI's 2.14.1 bundles CUDA 13.0
# and its 2.15.0 CUDA 13.2, the builds download.pytorch.org publishes as +cu130 and +cu132.
BUILDS = {"cu130": "2.14.1", "cu132": "2.15.0"}


def pytorch_layout(index: Index, variant: str, ranged: bool = True) -> str:
    """PyTorch's own index (download.pytorch.org/whl/cuXYZ): an HTML page of local versions (`+` written %2B),
    a wheel for each CPython PyPI has the release for, no metadata files; the wheels answer ranged requests
    where `ranged`."""
    version = BUILDS[variant]
    body = _wheel(version)
    anchors = []
    for f in PAGE["files"]:
        name = f["filename"]
        if _version(name) != version or not name.endswith("manylinux_2_28_x86_64.whl"):
            continue
        local = name.replace(f"torch-{version}-", f"torch-{version}%2B{variant}-")
        path = f"/whl/{variant}/files/{local}"
        index.routes[path] = ("application/octet-stream", body)
        if ranged:
            index.ranged.add(path)
        anchors.append(f'<a href="{path}#sha256={hashlib.sha256(body).hexdigest()}" '
                       f'data-requires-python="{f["requires-python"].replace(">", "&gt;")}">{local}</a><br/>')
    html = "<!DOCTYPE html><html><body><h1>Links for torch</h1>" + "".join(anchors) + "</body></html>"
    index.routes[f"/whl/{variant}/torch/"] = ("text/html", html.encode())
    return f"{index.url}/whl/{variant}"


def _run(*args: str, wheelhouse: Path) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).parent / "refenv"
    env = {**os.environ, "REFENV_WHEELHOUSE": str(wheelhouse)}
    return subprocess.run([str(program), "compat", "refresh", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_the_metadata_gives_the_bundled_cuda_and_the_pythons() -> None:
    old, new = builds.read_metadata(META["2.14.1"].decode()), builds.read_metadata(META["2.15.0"].decode())
    assert (old.version, old.cuda, old.requires_python) == ("2.14.1", "13.0", ">=3.10")
    assert (new.version, new.cuda, new.requires_python) == ("2.15.0", "13.2", ">=3.11")
    pinned = "Requires-Dist: nvidia-cuda-runtime-cu12==12.8.90; platform_system == \"Linux\"\n"
    assert builds.read_metadata("Metadata-Version: 2.1\nName: torch\nVersion: 2.8.0\n" + pinned).cuda == "12.8"


def test_pypi_layout_shows_the_new_release_and_nothing_false_about_the_known_one(index: Index, tmp_path: Path) -> None:
    url = pypi_layout(index)
    done = _run("--index", url, "--table", str(ROOT / "harness" / "data" / "compat.json"), wheelhouse=tmp_path)
    assert done.returncode == 1, done.stderr  # compat.json is behind the index
    out = done.stdout
    assert re.search(r"new release +torch 2\.15 \(2\.15\.0\): builds cu132; default CUDA 13\.2; Python 3\.11-3\.15",
                     out), out
    assert "torch 2.14:" not in out, "2.14.1 on the index says what compat.json says of 2.14"
    assert "architectures unknown for 2 builds" in out
    # Only metadata files were read: no request for a wheel itself.
    wheels = [path for path, _ in index.seen if path.endswith(".whl")]
    assert not wheels
    assert any(path.endswith(".whl.metadata") for path, _ in index.seen)


def test_write_adds_the_release_keeps_the_sources_and_the_rest_of_the_file(index: Index, tmp_path: Path) -> None:
    url = pypi_layout(index)
    mine = tmp_path / "compat.json"
    shutil.copy(ROOT / "harness" / "data" / "compat.json", mine)
    before = mine.read_text(encoding="utf-8")
    done = _run("--index", url, "--table", str(mine), "--write", wheelhouse=tmp_path / "none")
    assert done.returncode == 0, done.stdout + done.stderr
    raw = json.loads(mine.read_text(encoding="utf-8"))
    table_ = compat.validate(raw)
    assert table_.torch_releases["2.15"].default_cuda == "13.2"
    assert (table_.torch_releases["2.15"].python_min, table_.torch_releases["2.15"].python_max) == ("3.11", "3.15")
    old = json.loads(before)
    assert all(raw["sources"][k] == v for k, v in old["sources"].items())
    assert url in raw["sources"]["torch_index"]
    changed = [ln for ln in mine.read_text(encoding="utf-8").splitlines() if ln not in before.splitlines()]
    # The 2.15 row and 2.14's gaining its comma; the refresh's source and the last source gaining its comma.
    assert len(changed) == 4, changed
    assert sum(ln.startswith('    "2.15": ') for ln in changed) == 1
    again = _run("--index", url, "--table", str(mine), wheelhouse=tmp_path / "none")
    assert again.returncode == 0 and "already says" in again.stdout, again.stdout


def test_pytorch_layout_reads_local_versions_through_ranged_reads(index: Index, tmp_path: Path) -> None:
    urls = [pytorch_layout(index, "cu130"), pytorch_layout(index, "cu132")]
    r = refresh.refresh(urls, json.loads((ROOT / "harness" / "data" / "compat.json").read_text()), tmp_path)
    by_version = {b.version: b for b in r.builds}
    assert set(by_version) == {"2.14.1+cu130", "2.15.0+cu132"}
    assert by_version["2.14.1+cu130"].pythons == ("3.10", "3.11", "3.12", "3.13", "3.14")
    assert by_version["2.15.0+cu132"].cuda == "13.2" and by_version["2.15.0+cu132"].variant == "cu132"
    assert by_version["2.15.0+cu132"].metadata.startswith("ranged read of torch-2.15.0.dist-info/METADATA")
    assert next(c.kind for c in r.changes if c.series == "2.15") == "new release"
    assert not [c for c in r.changes if c.series == "2.14" and c.kind != "architectures"]
    # Every request for a wheel was a ranged one, and none asked for more than the tail the zip reader reads.
    for path, rng in index.seen:
        if path.endswith(".whl"):
            assert rng is not None
            lo, hi = map(int, rng.removeprefix("bytes=").split("-"))
            assert hi - lo < remotezip.TAIL


def test_a_server_without_ranges_is_not_asked_for_the_wheel_and_the_gap_is_said(index: Index, tmp_path: Path) -> None:
    url = pytorch_layout(index, "cu130", ranged=False)
    r = refresh.refresh([url], json.loads((ROOT / "harness" / "data" / "compat.json").read_text()), tmp_path)
    assert [b.cuda for b in r.builds] == ["13.0"]  # from the local version, the metadata being unread
    assert any("does not answer ranged requests" in n for n in r.notes), r.notes


def test_architectures_come_from_a_wheel_in_the_wheelhouse(index: Index, tmp_path: Path) -> None:
    url = pytorch_layout(index, "cu132")
    archs = (75, 80, 86, 90, 100, 120)
    lib = shared_object(container([entry(SASS, sm) for sm in archs]))
    with zipfile.ZipFile(tmp_path / "torch-2.15.0+cu132-cp312-cp312-manylinux_2_28_x86_64.whl", "w") as z:
        z.writestr("torch/lib/libtorch_cuda.so", lib)
    r = refresh.refresh([url], json.loads((ROOT / "harness" / "data" / "compat.json").read_text()), tmp_path)
    new = next(b for b in r.builds if b.version == "2.15.0+cu132")
    assert new.archs == tuple(f"sm_{a}" for a in archs)
    said = [c.text for c in r.changes if c.kind == "architectures" and c.series == "2.15"]
    assert said and "no arch rule of compat.json covers it" in said[0]


def test_an_unreachable_index_is_a_clear_error(tmp_path: Path) -> None:
    done = _run("--index", "http://127.0.0.1:9/simple", wheelhouse=tmp_path)
    assert done.returncode == 2
    assert "127.0.0.1:9/simple/torch/: cannot reach it" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_table_text_is_rewritten_as_it_was_written() -> None:
    text = (ROOT / "harness" / "data" / "compat.json").read_text(encoding="utf-8")
    raw = json.loads(text)
    assert refresh.splice(refresh.splice(text, "torch_releases", raw["torch_releases"], True), "sources",
                          raw["sources"], False) == text
    assert table.fold([]) == {}
