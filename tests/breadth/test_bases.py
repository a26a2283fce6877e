"""Older bases and older torch releases work as the newest do: each environment of breadth.yaml (every Debian
base refenv bootstraps, with the oldest and the newest torch release pip serves for its Python) goes through
`run_matrix` on simulated R470, R535 and R580 hosts, with and without GPU access, and its CPU measurement
(probes and the memory verification); every cell and the measurement must pass. The torch 2.1.0 / Python 3.9 /
bullseye environment also reproduces a Python 3.8 report from a 460 driver. One environment at a time, its
images removed after it (all but the default matrix's, which the docker tier uses too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.intake import load_report
from harness.schema import DRIVER_BROKEN, DRIVER_TOO_OLD, NOT_VISIBLE, OK
from harness.schema.memory_document import MemoryVerification
from refenv.builder import simdriver
from refenv.engines.docker.sdk import Engine
from refenv.model import matrix_yaml, suites
from refenv.model.matrix import select
from refenv.reproduce import infer
from refenv.reproduce.account import render, succeeded
from refenv.reproduce.execute import Settings, reproduce
from refenv.run.pipeline import Options, Outcome, run_matrix
from tests.docker.support import DEFAULT_MATRIX, JSON_MARK, ROOT, RecordingUI, cell, describe, python_in_image

BREADTH = ROOT / "breadth.yaml"
ENVIRONMENTS = [e.name for e in matrix_yaml.load(BREADTH).environments]
DEFAULT_ENVIRONMENTS = {e.name for e in matrix_yaml.load(DEFAULT_MATRIX).environments}
ISSUE_CASE = "bullseye-torch-2.1.0-cu121"
REPORT = ROOT / "tests" / "data" / "collect_env" / "too-old-driver_cu121-py38-r460.txt"


def run(name: str, results: Path, ui: RecordingUI) -> Outcome:
    matrix = select(matrix_yaml.load(BREADTH), env=[name])
    return run_matrix(matrix, Options(results_root=results, use_cache=False), ui)


def remove_images(engine: Engine, name: str) -> None:
    """The environment's own images (dependencies and environment, every tag), unless the default matrix has it
    too: the next environment then has the disk they took."""
    if name in DEFAULT_ENVIRONMENTS:
        return
    for repository in (f"refenv/env-{name}", f"refenv/deps-{name}"):
        for image in engine.client.images.list(name=repository):
            for tag in image.tags:
                engine.remove_image(tag)


def glibc_of(engine: Engine, image: str) -> str:
    """The C library the image's own Python reports, as the simulated driver's loader will find it."""
    code = f"import json, os; print({JSON_MARK!r} + json.dumps({{'libc': os.confstr('CS_GNU_LIBC_VERSION')}}))"
    return str(python_in_image(engine, image, code)["libc"])


def test_the_breadth_matrix_covers_every_base_with_its_oldest_and_newest_release() -> None:
    matrix = matrix_yaml.load(BREADTH)
    by_suite: dict[str, list[str]] = {}
    for env in matrix.environments:
        by_suite.setdefault(env.base.bootstrap.suite, []).append(env.torch)
    assert set(by_suite) == {"bullseye", "bookworm", "trixie"}
    assert all(len(set(releases)) >= 2 for releases in by_suite.values()), by_suite
    assert {h.name for h in matrix.hosts} == {"r470", "r535", "r580"}
    assert {(s.name, s.gpu_access) for s in matrix.scenarios} == {("gpu", True), ("no-gpu", False)}


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_every_cell_and_the_measurement_pass(name: str, engine: Engine, tmp_path: Path) -> None:
    ui = RecordingUI()
    env = matrix_yaml.load(BREADTH).environment(name)
    try:
        outcome = run(name, tmp_path / "results", ui)
        doc = outcome.document
        image = next(b.image for b in ui.builds if b.environment == name)
        assert image is not None, [(b.status, b.error) for b in ui.builds]
        # The simulated driver was built for the oldest base: it loads with this base's glibc, read in the image.
        libc = glibc_of(engine, image)
        assert libc == f"glibc {suites.SUITE_GLIBC[env.base.bootstrap.suite]}", libc
        driver = simdriver.build()
        assert driver.glibc is not None
        assert suites.glibc_key(driver.glibc) <= suites.glibc_key(libc.split()[1]), (driver.glibc, libc)
        assert doc.cells, f"{name}: no cells ran"
        bad = [describe(cell(outcome, c.environment, c.host, c.scenario)) for c in doc.cells if c.status != "PASS"]
        assert not bad, "\n".join(bad)
        for c in doc.cells:
            assert c.observed is not None
            if c.scenario == "no-gpu":
                assert c.observed.verdict == NOT_VISIBLE
            else:  # the simulated driver loaded: the runtime (or the wheel's arch list) judged it, as on a real host
                assert c.observed.simulated and c.observed.verdict not in (NOT_VISIBLE, DRIVER_BROKEN), c.reason
        measured = [m for m in doc.measurements if m.environment == name]
        assert len(measured) == 1 and measured[0].status == "PASS", [(m.status, m.reason) for m in measured]
        memory = measured[0].memory
        assert isinstance(memory, MemoryVerification), memory
        assert memory.status == "PASS" and str(memory.torch or "").startswith(env.torch), memory

        if name == ISSUE_CASE:
            check_the_issue_case(outcome, tmp_path)
    finally:
        remove_images(engine, name)


def check_the_issue_case(outcome: Outcome, tmp_path: Path) -> None:
    """torch 2.1.0+cu121 on Python 3.9 and bullseye: too old a driver on R470, a GPU on R535 and R580; and a
    Python 3.8 report from driver 460.32.03 reproduced with torch's own words."""
    too_old = cell(outcome, ISSUE_CASE, "r470", "gpu")
    assert too_old["observed"]["verdict"] == DRIVER_TOO_OLD
    assert "found version 11040" in (too_old["observed"]["torch_message"] or "")
    for host in ("r535", "r580"):
        assert cell(outcome, ISSUE_CASE, host, "gpu")["observed"]["verdict"] == OK
    settings = Settings(BREADTH, tmp_path / "reproduce", use_cache=False)
    done = reproduce(infer(load_report(REPORT)), REPORT.name, settings, RecordingUI())
    got = done.original.cell
    assert got.observed is not None, f"{got.status}: {got.reason}\n{got.log_tail}"
    assert got.observed.verdict == DRIVER_TOO_OLD and got.status == "PASS", got.reason
    assert "found version 11020" in (got.observed.torch_message or "")
    assert done.original.reproduction.environment.name == ISSUE_CASE
    assert any("Python 3.8" in s for s in done.original.reproduction.substitutions)
    assert succeeded(done), render(done)
