"""Cells that are the same container within a run (the same cache key: no GPU access mounts no driver, so
every simulated host gives the container alike) run once, also on --rerun (refenv.run.cells.share)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.model.matrix import Environment, Host, Matrix, RunSettings, Scenario
from refenv.run.pipeline import Options, Outcome, run_matrix
from tests.unit.fake_engine import NO_DRIVER_DOC, UI, FakeEngine, Script

pytestmark = pytest.mark.usefixtures("private_cache")

CU130 = Environment("cu130", "2.14.1", "cu130")
R535, R580 = Host("r535", "simulated", "r535"), Host("r580", "simulated", "r580")
GPU, NO_GPU = Scenario("gpu", "all"), Scenario("no-gpu", "none")
SETTINGS = RunSettings(timeout_s=0.5, parallel=2, probes="off", memory_check="off")


def run(engine: FakeEngine, tmp_path: Path, *scenarios: Scenario) -> Outcome:
    m = Matrix("matrix.yaml", (CU130,), (R535, R580), scenarios, SETTINGS)
    return run_matrix(m, Options(results_root=tmp_path / "results", use_cache=False), UI(), engine)


def test_the_same_container_runs_once_and_stands_for_the_others(tmp_path: Path) -> None:
    engine = FakeEngine(default=Script(NO_DRIVER_DOC))
    ui = UI()
    m = Matrix("matrix.yaml", (CU130,), (R535, R580), (NO_GPU, GPU), SETTINGS)
    outcome = run_matrix(m, Options(results_root=tmp_path / "results", use_cache=False), ui, engine)
    no_gpu = [c for c in outcome.document.cells if c.scenario == "no-gpu"]
    assert sorted(engine.ran) == ["cu130/r535/gpu", "cu130/r535/no-gpu", "cu130/r580/gpu"]
    assert [c.status for c in no_gpu] == ["PASS", "PASS"] and no_gpu[0].cache_key == no_gpu[1].cache_key
    assert [c.cached for c in no_gpu] == [False, True] and no_gpu[1].wall_s == 0.0
    assert Path(no_gpu[1].result_path or "").is_file() and len(ui.cells) == 4


def test_a_container_that_gave_no_answer_stands_for_none(tmp_path: Path) -> None:
    engine = FakeEngine(default=Script(NO_DRIVER_DOC), scripts={"cu130/r535/no-gpu": Script(hang=True)})
    outcome = run(engine, tmp_path, NO_GPU)
    assert sorted(engine.ran) == ["cu130/r535/no-gpu", "cu130/r580/no-gpu"]
    assert {c.host: c.status for c in outcome.document.cells} == {"r535": "TIMEOUT", "r580": "PASS"}
