"""`invoke matrix` killed with SIGKILL (no chance to clean up): what it finished stays, written whole; the next
`invoke matrix` removes the dead run's containers, and only those, and reuses every cell the dead run finished."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from refenv.engines.docker.sdk import Engine
from refenv.model.builds import EnvBuild
from refenv.model.rundoc import load_run
from refenv.run import owners
from tests.docker.fault_support import invoke, own_cache, project
from tests.docker.support import CPU, DIAGNOSIS_ONLY, leftovers

HOSTS = ["r535", "r580"]
SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "cvd-empty": {"env": {"CUDA_VISIBLE_DEVICES": ""}}}


def _running_cells(engine: Engine, run_id: str) -> list[str]:
    found = engine.client.containers.list(filters={"label": [f"refenv.run={run_id}", "refenv.kind=cell"]})
    return [str(c.id) for c in found]


def _sentinel(engine: Engine, image: str, run_id: str) -> str:
    """A container of another run on the same engine, sleeping; its id."""
    container = engine.client.containers.run(image, entrypoint=["sleep"], command=["600"], detach=True,
                                             network_mode="none",
                                             labels={"refenv.managed": "true", "refenv.run": run_id,
                                                     "refenv.kind": "cell"})
    return str(container.id)


def test_a_sigkilled_run_is_reaped_by_the_next_which_reuses_what_it_finished(
        engine: Engine, env_builds: dict[str, EnvBuild], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = own_cache(tmp_path / "cache", monkeypatch)
    matrix = project(tmp_path / "project", [CPU], HOSTS, SCENARIOS, {**DIAGNOSIS_ONLY, "parallel": 1})
    results = tmp_path / "results"
    image = str(env_builds[CPU].tag)
    # Others' runs on this engine: one whose runner lives (this test's process), one that records no owner.
    live_other = _sentinel(engine, image, "20000101-000000-live00")
    owners.record(owners.Owner("20000101-000000-live00", os.uname().nodename, os.getpid(),
                               owners.process_start(os.getpid()),
                               f"DockerEngine@{os.environ.get('DOCKER_HOST') or 'default'}"))
    unrecorded = _sentinel(engine, image, "20000101-000000-norec0")
    args = ("matrix", "--matrix", str(matrix), "--results", str(results))
    first = invoke(*args)
    run_id = None
    try:
        # Kill it once a cell has finished (it is cached) and the next one is running.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and first.poll() is None:
            runs = [p.name for p in results.iterdir() if p.is_dir()] if results.is_dir() else []
            run_id = runs[0] if runs else None
            finished = list((cache / "cells").glob("*.json")) if (cache / "cells").is_dir() else []
            if run_id and finished and _running_cells(engine, run_id):
                break
            time.sleep(0.1)
        assert run_id is not None and first.poll() is None, "the run ended before it could be killed"
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
        assert first.returncode == -signal.SIGKILL

        killed = load_run(results / run_id)  # the document as it stood: whole JSON, marked partial
        done = {c.id for c in killed.cells if c.status == "PASS"}
        assert killed.run.interrupted and done, [(c.id, c.status) for c in killed.cells]
        assert leftovers(engine, run_id), "the killed run left its container in flight"

        second = invoke(*args)
        out, _ = second.communicate(timeout=600)
        assert second.returncode == 0, out
        assert f"left by run {run_id}, whose runner is gone" in " ".join(out.split()), out
        assert leftovers(engine, run_id) == []
        assert {str(c.id) for c in engine.client.containers.list()} >= {live_other, unrecorded}, \
            "another run's containers were touched"
        rerun = load_run(results / "latest")
        assert rerun.run.id != run_id and not rerun.run.interrupted
        cached = {c.id for c in rerun.cells if c.cached}
        assert done <= cached, (done, cached)
        assert {c.status for c in rerun.cells} == {"PASS"}
        assert not [o for o in owners.read_all() if o.run_id in (run_id, rerun.run.id)]
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
        for container in (live_other, unrecorded):
            engine.client.containers.get(container).remove(force=True)
        if run_id:
            engine.remove_containers({"refenv.run": run_id})
