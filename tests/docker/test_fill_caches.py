"""The shared caches the tests read through (tests/conftest.py), each filled from empty once per run: the test
wheel helper's download, the wheelhouse's fetch of what a lock names, and the simulated driver's build root.

Every other cache the tests read is their session's own, so the paths that fill those run in every session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from refenv.builder import buildroot, simdriver, wheelhouse
from refenv.builder.wheelhouse import Lock, LockInputs, Wheel
from refenv.model import suites
from tests.conftest import in_ci
from tests.docker.support import wheel

SMALL = "six==1.17.0"   # one small wheel for every Python: the paths are under test, not the package


def test_the_wheel_helper_downloads_into_an_empty_folder(tmp_path: Path) -> None:
    house = tmp_path / "wheels"
    found = wheel(SMALL, house)
    assert found.parent == house and found.name.startswith("six-1.17.0-") and found.stat().st_size > 0
    assert wheel(SMALL, house) == found, "the second call finds what the first downloaded"


def test_an_empty_wheelhouse_gets_what_a_lock_names_checked_by_its_hash(tmp_path: Path) -> None:
    got = wheel(SMALL, tmp_path / "elsewhere")
    inputs: LockInputs = {"requirements": [SMALL], "python": "3.11",
                          "platform": f"manylinux x86_64 (glibc {suites.DEFAULT_GLIBC})", "extra_index_url": None}
    lock = Lock("small", inputs, "i" * 64,
                (Wheel("six", "1.17.0", got.name, wheelhouse.sha256_file(got), got.stat().st_size),))
    house = tmp_path / "wheelhouse"
    wheelhouse.ensure_wheels(lock, house)
    assert (house / got.name).read_bytes() == got.read_bytes()


def test_an_empty_folder_gets_a_build_root_that_builds_the_simulated_driver(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        message = "making a build root needs root and debootstrap (./go installs it)"
        if in_ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    try:
        root = buildroot.ensure(folder=tmp_path / "buildroot")
        assert root.path.parent == tmp_path / "buildroot" and (root.path / "usr" / "bin" / "cc").exists()
        toolchain = simdriver.Toolchain("cc", simdriver.buildroot_identity(),
                                        f"Debian {root.suite} (glibc {root.glibc})", root)
        driver = simdriver.build(tmp_path / "simdriver", toolchain=toolchain)
        assert driver.built_in == f"Debian {suites.oldest_suite()} (glibc {root.glibc})"
        assert driver.glibc is not None and suites.glibc_key(driver.glibc) <= suites.glibc_key(root.glibc)
    finally:
        shutil.rmtree(tmp_path / "buildroot", ignore_errors=True)  # 300 MB: not left for pytest's last three runs
