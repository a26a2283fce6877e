"""A cell whose image has an older glibc than the simulated driver needs is refused before it runs, with why;
the cells that mount no driver still run (refenv.run.plan, refenv.run.glibc, through a fake engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.model.matrix import Environment, Host, Matrix, RunSettings, Scenario
from refenv.run.pipeline import Options, run_matrix
from tests.unit.fake_engine import NO_DRIVER_DOC, UI, FakeEngine, Script

pytestmark = pytest.mark.usefixtures("private_cache")

OLD = Environment("old", "2.1.0", "cu121", "3.9")
R535 = Host("r535", "simulated", "r535")
SCENARIOS = (Scenario("gpu", "all"), Scenario("no-gpu", "none"))
FAST = RunSettings(timeout_s=5, parallel=2, probes="off", memory_check="off")


def run(libc: str | None, tmp_path: Path) -> dict[str, tuple[str, str]]:
    engine = FakeEngine(libc=libc, scripts={"old/r535/no-gpu": Script(NO_DRIVER_DOC)})
    outcome = run_matrix(Matrix("matrix.yaml", (OLD,), (R535,), SCENARIOS, FAST),
                         Options(results_root=tmp_path / "results", use_cache=False), UI(), engine)
    return {c.scenario: (c.status, c.reason) for c in outcome.document.cells}


def test_an_image_older_than_the_driver_is_not_run_with_the_reason(tmp_path: Path) -> None:
    cells = run("glibc 2.12", tmp_path)
    status, reason = cells["gpu"]
    assert status == "NOT_RUN" and "has glibc 2.12" in reason and "need glibc >=" in reason
    assert cells["no-gpu"][0] == "PASS"   # nothing is mounted there: it runs


def test_an_image_without_glibc_is_refused(tmp_path: Path) -> None:
    assert "no GNU C library" in run("none", tmp_path)["gpu"][1]


def test_an_image_with_a_new_enough_glibc_runs(tmp_path: Path) -> None:
    assert run("glibc 2.31", tmp_path)["gpu"][0] == "PASS"
