"""Pyodide for the paste page is the npm registry's tarball or nothing: its integrity is checked before use."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from refenv.errors import RefenvError
from refenv.ship import page, pyodide


def test_integrity_is_npms_sha512_in_base64() -> None:
    # The SRI form npm's dist.integrity uses (W3C Subresource Integrity): "sha512-" + base64 of the digest.
    assert pyodide.integrity(b"abc") == "sha512-" + base64.b64encode(hashlib.sha512(b"abc").digest()).decode()
    assert pyodide.INTEGRITY.startswith("sha512-") and len(pyodide.INTEGRITY) == 7 + 88


def fake_tarball(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name in pyodide.FILES:
            data = f"not {name}".encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_tarball_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    tarball = fake_tarball(tmp_path / f"pyodide-{pyodide.VERSION}.tgz")
    with pytest.raises(pyodide.PyodideError, match=f"not pyodide {pyodide.VERSION} as the npm registry publishes it"):
        pyodide.extract(tarball, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_page_refuses_to_overwrite_a_folder_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(RefenvError, match="not empty and not a page folder"):
        page.build(Path(__file__).resolve().parents[2], tmp_path, tarball=tmp_path / "none.tgz")
    assert (tmp_path / "mine.txt").read_text() == "keep me"
