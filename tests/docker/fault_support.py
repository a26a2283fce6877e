"""What the docker tier's fault tests share: a cache of their own, a small disk of their own to fill, a small
project folder with its own matrix, and the runner as a user starts it (`invoke matrix` in a process).

The machine's real disk and the session's caches are never filled: a small tmpfs is mounted for the folder a
test fills, and the compiled simulated driver and the linker caches are linked, not copied (the wheelhouse is
REFENV_WHEELHOUSE's, tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from refenv import paths
from refenv.builder.wheelhouse import lock_path
from tests.conftest import in_ci
from tests.docker.support import ROOT, matrix_text

SHARED = ("simdriver", "ldcache")


def own_cache(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """REFENV_CACHE at `root`: cells, builds' logs and run records of the test's own; the session's compiled
    driver and linker caches linked."""
    shared = paths.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    for name in SHARED:
        (shared / name).mkdir(parents=True, exist_ok=True)
        os.symlink(shared / name, root / name)
    monkeypatch.setenv("REFENV_CACHE", str(root))
    return root


def needs_root() -> None:
    """Mounting a small disk needs root: fail under CI=true, skip elsewhere."""
    if os.geteuid() == 0:
        return
    if in_ci():
        pytest.fail("CI=true and the disk-full tests need root to mount a small tmpfs", pytrace=False)
    pytest.skip("mounting a small tmpfs needs root")


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "16m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `folder` for the test, unmounted after."""
    needs_root()
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Write zeros into `folder` until its disk refuses (ENOSPC); the file that holds them."""
    filler = folder / ".filler"
    block = b"\0" * (256 << 10)
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    with contextlib.suppress(OSError), filler.open("ab", buffering=0) as out:  # the last partial block
        while True:
            out.write(b"\0" * 512)
    return filler


def project(folder: Path, envs: list[str], hosts: list[str], scenarios: Mapping[str, Mapping[str, Any]],
            run: Mapping[str, Any]) -> Path:
    """A folder with its own matrix.yaml and the default matrix's locks of its environments."""
    (folder / "locks").mkdir(parents=True, exist_ok=True)
    for env in envs:
        shutil.copy(lock_path(ROOT / "matrix.yaml", env), folder / "locks" / f"{env}.json")
    path = folder / "matrix.yaml"
    path.write_text(matrix_text(envs, hosts, scenarios, run), encoding="utf-8")
    return path


def invoke(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`invoke <args>` in the project folder, as a user types it (Ctrl-C interrupts it: tests/conftest.py)."""
    return subprocess.Popen([sys.executable, "-m", "invoke", *args], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
