"""`invoke matrix` when the Docker engine dies while cells run: on a second engine of the test's own (the
machine's engine, which others' runs share, is never stopped). The cells in flight say so in the connection's
words, the run document stays whole JSON, and once the engine is back the next run removes what the dead one
left and resumes; when the engine is stopped, nothing of it is left running."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from refenv.engines.docker.engine import DockerEngine
from refenv.engines.docker.sdk import Engine
from refenv.model import codec
from refenv.model.builds import EnvBuild
from refenv.model.rundoc import load_run
from refenv.run import owners
from refenv.run.pipeline import Options, Outcome, run_matrix
from tests.docker.fault_support import own_cache
from tests.docker.second_engine import second_engine
from tests.docker.support import CPU, DIAGNOSIS_ONLY, RecordingUI, describe, small_matrix

SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "cvd-empty": {"env": {"CUDA_VISIBLE_DEVICES": ""}},
             "no-gpu": {"gpus": "none"}}
LOST = "the Docker engine stopped answering"


def engine_bridges() -> set[str]:
    """The bridge interfaces of the machine (the machine's engine's docker0 among them)."""
    out = subprocess.run(["ip", "-o", "link", "show", "type", "bridge"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines() if ":" in line}


def test_the_engine_dying_mid_run(engine: Engine, env_builds: dict[str, EnvBuild], tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    own_cache(tmp_path / "cache", monkeypatch)
    image = str(env_builds[CPU].tag)
    matrix = small_matrix([CPU], ["r535", "r580"], SCENARIOS, {**DIAGNOSIS_ONLY, "parallel": 2})
    options = Options(results_root=tmp_path / "results", parallel=2, use_cache=False, images={CPU: image})
    bridges_before = engine_bridges()
    with second_engine() as second:
        second.copy_image(engine, image)
        monkeypatch.setenv("DOCKER_HOST", second.host)
        ran: list[Outcome] = []
        raised: list[BaseException] = []

        def run() -> None:
            try:
                ran.append(run_matrix(matrix, options, RecordingUI(), DockerEngine.connect()))
            except BaseException as exc:  # said by the assertions below, not lost in the thread
                raised.append(exc)

        runner = threading.Thread(target=run)
        runner.start()
        client = second.client()
        deadline = time.monotonic() + 300
        while runner.is_alive() and time.monotonic() < deadline and \
                not client.containers.list(filters={"label": "refenv.kind=cell"}):
            time.sleep(0.05)
        assert runner.is_alive(), "the run ended before the engine could die under it: " + (
            repr(raised[0]) if raised else "it finished first: " + "; ".join(
                describe(c) for c in codec.encode(ran[0].document.cells)))
        second.kill()
        runner.join(timeout=300)
        assert ran, f"the run did not come back after its engine died: {raised}"
        outcome = ran[0]
        cells = codec.encode(outcome.document.cells)
        lost = [c for c in cells if c["status"] == "ERROR" and LOST in c["reason"]]
        assert [c for c in lost if "while the container ran" in c["reason"]], [describe(c) for c in cells]
        assert all(c["status"] == "PASS" or c in lost for c in cells), [describe(c) for c in cells]
        assert load_run(outcome.folder) == outcome.document and not outcome.ok
        dead = outcome.document.run.id
        assert [o.ended for o in owners.read_all() if o.run_id == dead] == [True]

        second.start()  # the engine is back: the next run removes what the dead one left, and resumes
        again = run_matrix(matrix, Options(results_root=tmp_path / "results", parallel=2, images={CPU: image}),
                           RecordingUI(), DockerEngine.connect())
        assert second.client().containers.list(all=True, filters={"label": f"refenv.run={dead}"}) == []
        assert not owners.read_all()
        statuses = {c.id: (c.status, c.cached) for c in again.document.cells}
        assert all(s == "PASS" for s, _ in statuses.values()), statuses
        passed = {c["id"] for c in cells if c["status"] == "PASS"}
        assert all(statuses[i][1] for i in passed), statuses  # what finished before the engine died is reused
        running = second
    assert running.processes() == [], "the second engine left processes behind"
    # Its own bridge is gone, and the machine's engine keeps its own (a daemon started with --bridge=none
    # would have deleted docker0, and every later build on the default network would fail).
    assert engine_bridges() == bridges_before
