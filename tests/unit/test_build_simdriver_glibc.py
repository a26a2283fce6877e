"""The simulated driver loads on every base refenv offers: the GLIBC versions its files need, read from the ELF,
against each base's glibc; and a cell of an image whose glibc is older still is refused, not misjudged."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from refenv.builder import elfneeds, simdriver
from refenv.builder.driverfiles import SimDriver
from refenv.model import suites
from tests.conftest import in_ci


@pytest.fixture(scope="module")
def driver() -> SimDriver:
    return simdriver.build()


def readelf_needs(path: Path) -> list[tuple[str, str]]:
    """(library, version) pairs as binutils' `readelf -V` prints them: an independent reading of the same bytes."""
    readelf = shutil.which("readelf")
    if readelf is None:
        if in_ci():
            pytest.fail("CI=true and readelf (binutils, which gcc brings) is missing", pytrace=False)
        pytest.skip("readelf (binutils) is not installed")
    text = subprocess.run([readelf, "-V", "--wide", str(path)], capture_output=True, text=True, check=True).stdout
    section = text.split(".gnu.version_r", 1)[1] if ".gnu.version_r" in text else ""
    out, library = [], ""
    for line in section.splitlines():
        file = re.search(r"File: (\S+)", line)
        name = re.search(r"Name: (\S+)", line)
        if file:
            library = file.group(1)
        elif name:
            out.append((library, name.group(1)))
    return out


def test_the_elf_reader_agrees_with_readelf(driver: SimDriver) -> None:
    files = [driver.libcuda, driver.libnvidia_ml, driver.nvidia_smi, Path(sys.executable).resolve()]
    for path in files:
        mine = [(n.library, n.version) for n in elfneeds.needs(path)]
        assert mine and sorted(mine) == sorted(readelf_needs(path)), path


def test_the_reader_refuses_what_is_not_elf(tmp_path: Path) -> None:
    text = tmp_path / "libcuda.so.1"
    text.write_text("not a library")
    with pytest.raises(elfneeds.ElfError, match="not an ELF file"):
        elfneeds.needs(text)
    cut = tmp_path / "cut.so"
    cut.write_bytes(Path(sys.executable).resolve().read_bytes()[:200])
    with pytest.raises(elfneeds.ElfError, match="truncated or malformed"):
        elfneeds.needs(cut)
    assert elfneeds.glibc_key("GLIBC_2.2.5") == (2, 2, 5) and elfneeds.glibc_key("GLIBC_PRIVATE") is None


def test_the_driver_loads_with_every_bases_glibc(driver: SimDriver) -> None:
    oldest = suites.oldest_suite()
    if not driver.built_in.startswith(f"Debian {oldest}"):
        message = f"the simulated driver was built by {driver.built_in}, not in Debian {oldest}'s build root"
        if in_ci():
            pytest.fail(f"CI=true: {message} (root and debootstrap are needed)", pytrace=False)
        pytest.skip(message)
    needed = elfneeds.newest_glibc([driver.libcuda, driver.libnvidia_ml, driver.nvidia_smi])
    assert needed == driver.glibc and needed is not None
    for suite, glibc in suites.SUITE_GLIBC.items():
        assert suites.glibc_key(needed) <= suites.glibc_key(glibc), f"needs GLIBC_{needed}, {suite} has {glibc}"


def test_the_host_compiler_build_records_what_it_needs(tmp_path: Path) -> None:
    built = simdriver.build(tmp_path, toolchain=simdriver.host_toolchain())
    assert built.built_in.startswith("this machine")
    assert built.glibc == elfneeds.newest_glibc([built.libcuda, built.libnvidia_ml, built.nvidia_smi])
    host = subprocess.run(["getconf", "GNU_LIBC_VERSION"], capture_output=True, text=True, check=True).stdout
    assert built.glibc is not None and suites.glibc_key(built.glibc) <= suites.glibc_key(host.split()[1])


def test_an_image_older_than_the_driver_is_refused_with_why(driver: SimDriver) -> None:
    from refenv.run import glibc

    needs = SimDriver(driver.root, driver.libcuda, driver.libnvidia_ml, driver.nvidia_smi, "d", "2.34",
                                "this machine (gcc 12)")
    reason = glibc.refusal("2.31", needs, "refenv/env-old:1")
    assert reason is not None and "has glibc 2.31" in reason and ">= 2.34" in reason
    assert glibc.refusal("2.36", needs, "img") is None
    assert glibc.refusal(None, needs, "img") is None          # not read: nothing is claimed
    assert "no GNU C library" in (glibc.refusal(glibc.NONE, needs, "alpine") or "")
    assert glibc.parse("glibc 2.31\n") == "2.31" and glibc.parse("none") == glibc.NONE
    assert glibc.parse("musl libc (x86_64)") is None
