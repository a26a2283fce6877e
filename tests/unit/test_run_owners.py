"""Runs whose runner is gone are cleaned up by the next run on their engine, and only those (refenv/run/owners.py),
with real processes standing for live and dead runners; and the run document as it stands (refenv/run/checkpoint.py)
stays whole JSON while the run goes and when the disk refuses it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from refenv.model.matrix import Environment, Host, Matrix, RunSettings, Scenario
from refenv.model.rundoc import load_run
from refenv.run import owners
from refenv.run.pipeline import Options, run_matrix
from tests.unit.fake_engine import UI, FakeEngine, Script

pytestmark = pytest.mark.usefixtures("private_cache")
HOST = socket.gethostname()


def dead_pid() -> tuple[int, int | None]:
    """The pid and start time of a process that has ended (and been reaped by its parent)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = owners.process_start(child.pid)
    child.wait()
    return child.pid, started


def test_alive_knows_a_live_process_a_dead_one_and_a_reused_pid() -> None:
    me = os.getpid()
    assert owners.alive(me, owners.process_start(me))
    assert not owners.alive(me, (owners.process_start(me) or 0) + 1)  # the same pid, another process
    assert not owners.alive(*dead_pid())


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = owners.process_start(child.pid)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child.pid}/stat").read_text().split(")")[-1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.05)
    try:
        assert not owners.alive(child.pid, started)
    finally:
        child.wait()


def test_only_runs_whose_owner_is_gone_on_this_engine_are_orphaned() -> None:
    def alive(pid: int, started: int | None) -> bool:
        return pid == 1

    live = owners.Owner("live", HOST, 1, None, "E")
    dead = owners.Owner("dead", HOST, 2, None, "E")
    elsewhere = owners.Owner("elsewhere", "another-host", 2, None, "E")
    ended_elsewhere = owners.Owner("ended", "another-host", 1, None, "E", ended=True)
    other_engine = owners.Owner("other", HOST, 2, None, "F")
    found = owners.orphaned([live, dead, elsewhere, ended_elsewhere, other_engine], HOST, "E", alive)
    assert [o.run_id for o in found] == ["dead", "ended"]


def matrix() -> Matrix:
    return Matrix("matrix.yaml", (Environment("cu130", "2.14.1", "cu130"),), (Host("r580", "simulated", "r580"),),
                  (Scenario("gpu", "all"),), RunSettings(timeout_s=5, parallel=1, probes="off", memory_check="off"))


def test_the_next_run_reaps_a_dead_runs_containers_and_leaves_a_live_ones(tmp_path: Path) -> None:
    engine = FakeEngine()
    key = owners.engine_key(engine)
    pid, started = dead_pid()
    owners.record(owners.Owner("run-of-a-killed-runner", HOST, pid, started, key))
    owners.record(owners.Owner("run-of-a-live-runner", HOST, os.getpid(), owners.process_start(os.getpid()), key))
    owners.record(owners.Owner("run-on-another-engine", HOST, pid, started, "DockerEngine@unix:///other.sock"))
    ui = UI()
    outcome = run_matrix(matrix(), Options(results_root=tmp_path / "results"), ui, engine)
    assert engine.cancelled[0] == "run-of-a-killed-runner"
    assert "run-of-a-live-runner" not in engine.cancelled and "run-on-another-engine" not in engine.cancelled
    assert any("run-of-a-killed-runner" in s and "runner is gone" in s for s in ui.stages)
    left = {o.run_id for o in owners.read_all()}
    assert left == {"run-of-a-live-runner", "run-on-another-engine"}  # its own record went at its end
    assert outcome.document.run.id in engine.cancelled  # and it swept what it left (nothing)


class Flaky(FakeEngine):
    """An engine that, while `answers` is off, fails as a dead Docker engine does when asked to sweep a run."""

    answers = True

    def cancel(self, run_id: str) -> int:
        if not self.answers:
            raise ConnectionError("('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))")
        return super().cancel(run_id)


def test_a_run_that_cannot_sweep_is_marked_ended_for_the_next(tmp_path: Path) -> None:
    engine = Flaky()
    engine.answers = False
    outcome = run_matrix(matrix(), Options(results_root=tmp_path / "results"), UI(), engine)
    record = [o for o in owners.read_all() if o.run_id == outcome.document.run.id]
    assert len(record) == 1 and record[0].ended and record[0].pid == os.getpid()
    engine.answers = True
    run_matrix(matrix(), Options(results_root=tmp_path / "results"), UI(), engine)
    assert engine.cancelled[0] == outcome.document.run.id and not owners.read_all()


# ---- the run document as it stands ----------------------------------------------------------------------

class Watching(UI):
    """Reads cells.json each time a cell finishes, as someone looking at a run in progress would."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.seen: list[dict[str, str]] = []

    def cell_done(self, result: object) -> None:
        super().cell_done(result)  # type: ignore[arg-type]
        doc = json.loads(next(self.folder.glob("*/cells.json")).read_text(encoding="utf-8"))
        self.seen.append({c["id"]: c["status"] for c in doc["cells"]} | {"interrupted": str(doc["run"]["interrupted"])})


def test_the_run_document_is_written_as_the_run_goes(tmp_path: Path) -> None:
    hosts = (Host("a", "simulated", "r580"), Host("b", "simulated", "r535"))
    m = Matrix("matrix.yaml", (Environment("cu130", "2.14.1", "cu130"),), hosts, (Scenario("gpu", "all"),),
               RunSettings(timeout_s=5, parallel=1, probes="off", memory_check="off"))
    ui = Watching(tmp_path / "results")
    outcome = run_matrix(m, Options(results_root=tmp_path / "results"), ui,
                         FakeEngine(scripts={"cu130/b/gpu": Script(None, exit_code=2, logs="disk full")}))
    first = ui.seen[0]
    assert first["interrupted"] == "True" and "NOT_RUN" in first.values()  # a document that says it is partial
    assert list(tmp_path.glob("results/*/cells.json.tmp")) == []
    final = load_run(outcome.folder)
    assert not final.run.interrupted and [c.status for c in final.cells] == ["PASS", "ERROR"]
    assert final.cells[1].reason == "the harness wrote no result (exit 2): disk full"


def test_a_refused_write_keeps_the_last_whole_document(tmp_path: Path) -> None:
    from refenv.model.records import CellResult
    from refenv.model.rundoc import RunDocument, RunInfo
    from refenv.run.checkpoint import Checkpoint
    from refenv.run.plan import Scope

    m = matrix()
    scope = Scope(m.environments, m.hosts, m.scenarios)
    path = tmp_path / "run" / "cells.json"
    cp = Checkpoint(path, scope, lambda cells, measured: RunDocument(RunInfo(id="r", interrupted=True), cells=cells),
                    every=0.0)
    assert cp.write() and load_run(path).cells[0].status == "NOT_RUN"
    # The temporary file beside it lands on /dev/full: the write fails as on a full disk, ENOSPC and all.
    (path.parent / "cells.json.tmp").symlink_to("/dev/full")
    cp.cells["cu130/r580/gpu"] = CellResult("cu130/r580/gpu", "cu130", "r580", "gpu", status="PASS", reason="OK")
    assert not cp.write(force=True)
    assert load_run(path).cells[0].status == "NOT_RUN" and sorted(p.name for p in path.parent.iterdir()) == \
        ["cells.json"]


class FillsTheDisk(UI):
    """After the last cell, the run folder's disk is full (cells.json's temporary file lands on /dev/full)."""

    def __init__(self, results: Path) -> None:
        super().__init__()
        self.results = results

    def cell_done(self, result: object) -> None:
        super().cell_done(result)  # type: ignore[arg-type]
        folder = next(p for p in self.results.iterdir() if p.is_dir())
        (folder / "cells.json.tmp").symlink_to("/dev/full")


def test_a_full_disk_at_the_end_says_so_and_what_stands(tmp_path: Path) -> None:
    from refenv.run.pipeline import RunNotWritten

    results = tmp_path / "results"
    with pytest.raises(RunNotWritten) as info:
        run_matrix(matrix(), Options(results_root=results), FillsTheDisk(results), FakeEngine())
    assert "No space left on device" in info.value.message and "stands" in info.value.message
    folder = next(p for p in results.iterdir() if p.is_dir())
    partial = load_run(folder)  # the document written as the run went: whole, and marked as partial
    assert partial.run.interrupted and [c.status for c in partial.cells] == ["PASS"]
    assert not owners.read_all()  # the run still swept and released its record
