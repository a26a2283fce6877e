"""Pyodide for the paste page: the `pyodide` package from the npm registry, pinned and checked, its files taken
out of the tarball for the page to serve beside itself.

`npm pack pyodide@VERSION` fetches the package tarball (npm is the registry's own client); its sha512 must be
the `dist.integrity` the registry publishes for that version (`npm view pyodide@314.0.8 dist.integrity`),
so a changed or corrupted tarball is refused. Tarballs are kept in refenv's cache; `--pyodide TARBALL`
gives one by hand (a machine without npm or without the registry).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from refenv import paths
from refenv.errors import RefenvError

VERSION = "314.0.8"
# npm's dist.integrity for pyodide 314.0.8 (registry.npmjs.org/pyodide), checked when the tarball is read.
INTEGRITY = "sha512-74Wq1kXOC+CCEzAfxuRAO701nAcCMLjf8NrwvWpu8S41dVMXwXmLQ05dYB+F4e46AdnGo0oq7YHSVUpHsoarLQ=="
# What loadPyodide() fetches from its indexURL to run the standard library (the page loads no package),
# and the package's manifest, which names its version and licence (MPL-2.0).
FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json",
         "package.json")
MAX_MEMBER_BYTES = 64 << 20


class PyodideError(RefenvError):
    """The Pyodide tarball could not be had or does not check out."""


def integrity(data: bytes) -> str:
    """npm's Subresource Integrity string of these bytes (sha512, base64)."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def cached_tarball() -> Path:
    return paths.cache_root() / "pyodide" / f"pyodide-{VERSION}.tgz"


def fetch(npm: str | None = None) -> Path:
    """The pinned tarball from refenv's cache, fetched with `npm pack` when it is not there yet."""
    target = cached_tarball()
    if target.is_file():
        return target
    npm = npm or shutil.which("npm")
    if npm is None:
        raise PyodideError(f"npm is not installed, and Pyodide {VERSION} is not in {target.parent}",
                           hint="install Debian's npm (./go does), or pass --pyodide with the tarball of "
                                f"`npm pack pyodide@{VERSION}`")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".pack-") as tmp:
        try:
            done = subprocess.run([npm, "pack", f"pyodide@{VERSION}", "--silent"], cwd=tmp, capture_output=True,
                                  text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PyodideError(f"npm pack pyodide@{VERSION} did not finish: {exc}") from None
        made = Path(tmp) / f"pyodide-{VERSION}.tgz"
        if done.returncode != 0 or not made.is_file():
            raise PyodideError(f"npm pack pyodide@{VERSION} failed (exit {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-400:]}")
        check(made.read_bytes(), made)
        made.replace(target)  # atomic: a cache others share only ever holds whole, checked tarballs
    return target


def check(data: bytes, where: Path) -> None:
    found = integrity(data)
    if found != INTEGRITY:
        raise PyodideError(f"{where}: not pyodide {VERSION} as the npm registry publishes it (integrity {found[:24]}…, "
                           f"expected {INTEGRITY[:24]}…)")


def extract(tarball: Path, folder: Path) -> list[Path]:
    """Check the tarball and write FILES into `folder`; the paths written."""
    try:
        data = tarball.read_bytes()
    except OSError as exc:
        raise PyodideError(f"cannot read {tarball}: {exc.strerror or exc}") from None
    check(data, tarball)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with tarfile.open(tarball, "r:gz") as tar:
        for name in FILES:
            try:
                member = tar.getmember(f"package/{name}")
            except KeyError:
                raise PyodideError(f"{tarball}: no package/{name} in it") from None
            stream = tar.extractfile(member) if member.isfile() and member.size <= MAX_MEMBER_BYTES else None
            if stream is None:
                raise PyodideError(f"{tarball}: package/{name} is not a regular file of a sane size")
            (folder / name).write_bytes(stream.read())
            written.append(folder / name)
    return written
