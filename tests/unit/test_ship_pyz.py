"""The single-file diagnoser (`invoke zipapp`): built for real, then run with every Python on this machine.

3.8 and newer diagnose (a report with --from, this very host without), each output opening with the
version line; older ones print that line and a one-line refusal. The docker tier runs it in an image.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from refenv.ship import pyz
from tests.unit.interpreters import Interpreter, interpreters

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "tests" / "data" / "reports" / "smi-table-pip.txt"
PYTHONS = interpreters()
VERSION_LINE = re.compile(r"^refenv-diagnose (\S+) \((\S+)\) on Python (\d+\.\d+\.\d+) \(\S+ \S+\)$")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> pyz.Build:
    return pyz.build(ROOT, tmp_path_factory.mktemp("pyz") / pyz.NAME)


def run(python: str, archive: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # Run from another folder than the checkout's root: the archive must not lean on a harness/ beside it.
    return subprocess.run([python, str(archive), *args], capture_output=True, text=True, timeout=300, check=False,
                          cwd=cwd)


def test_the_archive_holds_the_harness_and_nothing_else(archive: pyz.Build) -> None:
    with zipfile.ZipFile(archive.path) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        info = json.loads(z.read("harness/data/build.json"))
    tree = {p.relative_to(ROOT).as_posix() for p in (ROOT / "harness").rglob("*")
            if p.suffix in (".py", ".json") and "__pycache__" not in p.parts}
    assert set(names) == tree | {"__main__.py", "harness/data/build.json"}
    assert info["version"] == archive.version and info["commit"] == archive.commit != "no commit"
    assert archive.path.read_bytes().startswith(b"#!/usr/bin/env python3\n")


def test_one_commit_gives_one_archive(archive: pyz.Build, tmp_path: Path) -> None:
    again = pyz.build(ROOT, tmp_path / pyz.NAME)
    assert again.path.read_bytes() == archive.path.read_bytes()


def test_python_versions_of_both_kinds_are_on_this_machine() -> None:
    assert any(p.version >= (3, 8) for p in PYTHONS)


@pytest.mark.parametrize("python", PYTHONS, ids=lambda p: p.name)
def test_each_python_diagnoses_a_report_or_refuses_in_one_line(python: Interpreter, archive: pyz.Build,
                                                              tmp_path: Path) -> None:
    done = run(python.path, archive.path, "--from", str(REPORT), cwd=tmp_path)
    first, *rest = done.stdout.splitlines() or [""]
    m = VERSION_LINE.match(first)
    assert m, done.stdout + done.stderr
    assert m.groups() == (archive.version, archive.commit, ".".join(map(str, python.version)))
    if python.version < (3, 8):
        assert done.returncode == 2 and rest == []
        assert done.stderr.count("\n") == 1 and "needs Python 3.8 or newer" in done.stderr, done.stderr
        return
    assert done.returncode == 1, done.stderr
    assert rest[0] == "refenv diagnose: DRIVER_TOO_OLD"
    as_json = run(python.path, archive.path, "--json", "--from", str(REPORT), cwd=tmp_path)
    head, _, document = as_json.stdout.partition("\n")
    assert VERSION_LINE.match(head) and json.loads(document)["diagnosis"]["verdict"] == "DRIVER_TOO_OLD"


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.version >= (3, 8)], ids=lambda p: p.name)
def test_each_python_diagnoses_this_host_as_the_checkout_does(python: Interpreter, archive: pyz.Build,
                                                             tmp_path: Path) -> None:
    done = run(python.path, archive.path, "--json", cwd=tmp_path)
    head, _, document = done.stdout.partition("\n")
    assert VERSION_LINE.match(head), done.stdout[:300] + done.stderr
    doc = json.loads(document)
    assert doc["error"] is None, doc["error"]
    reference = subprocess.run([python.path, "-m", "harness", "diagnose", "--json"], capture_output=True, text=True,
                               timeout=300, check=False, cwd=ROOT)
    expected = json.loads(reference.stdout)
    assert done.returncode == reference.returncode
    assert doc["diagnosis"]["verdict"] == expected["diagnosis"]["verdict"]
    assert doc["facts"]["torch"].get("version") == expected["facts"]["torch"].get("version")
    # The answer pasted back (version line and all) is read as the saved document it is.
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(done.stdout, encoding="utf-8")
    back = subprocess.run([sys.executable, "-m", "harness", "diagnose", "--from", str(pasted), "--json"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    read = json.loads(back.stdout)
    assert read["input"]["kind"] == "document" and read["diagnosis"]["verdict"] == doc["diagnosis"]["verdict"]


def test_version_and_help_open_with_the_version_line(archive: pyz.Build, tmp_path: Path) -> None:
    version = run(sys.executable, archive.path, "--version", cwd=tmp_path)
    assert version.returncode == 0 and len(version.stdout.splitlines()) == 1
    assert VERSION_LINE.match(version.stdout.strip())
    helped = run(sys.executable, archive.path, "--help", cwd=tmp_path)
    assert helped.returncode == 0 and VERSION_LINE.match(helped.stdout.splitlines()[0])
    assert "--from FILE" in helped.stdout
    other = run(sys.executable, archive.path, "roofline", "matmul", "1024", "1024", "1024", "--gpu", "H100-SXM",
                cwd=tmp_path)
    assert other.returncode == 0 and VERSION_LINE.match(other.stdout.splitlines()[0]), other.stderr


def test_a_tree_without_the_harness_is_refused(tmp_path: Path) -> None:
    with pytest.raises(pyz.PyzError, match="no harness package"):
        pyz.build(tmp_path, tmp_path / "x.pyz")
