"""`invoke matrix` when things go wrong: no engine, a failed build, a hung or starved container, Ctrl-C; and its caches."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from harness.schema import CPU_WHEEL, DRIVER_BROKEN, NOT_VISIBLE
from refenv.builder.environment import build_environment
from refenv.builder.wheelhouse import lock_path, read_lock
from refenv.engines.docker.sdk import Engine
from refenv.engines.seam import ContainerSpec
from refenv.model import codec
from refenv.model.builds import EnvBuild
from refenv.model.labels import MANAGED
from refenv.model.matrix import Matrix
from tests.docker.fault_support import invoke
from tests.docker.support import (
    CPU,
    CU130,
    DIAGNOSIS_ONLY,
    GPU,
    ROOT,
    cell,
    default_data,
    describe,
    facts,
    findings,
    leftovers,
    run_grid,
    small_matrix,
)

MISSING_RELEASE = "2.14.9"  # no such torch on any index
HUNG = "r580-cuinit-hang"   # its cuInit never returns (refenv/data/profiles.json)


def test_an_unreachable_engine_stops_before_any_work(tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = invoke("matrix", "--results", str(results), env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode not in (0, None), out
    assert "no Docker engine answers" in out and "start one" in out, out
    assert "Traceback" not in out, out
    assert "simulated driver" not in out and "environment" not in out, "no work before the engine answers"
    assert not results.exists(), "no results folder for a run that never started"


def _tamper(lock_file: Path) -> str:
    """Change the torch wheel's hash in a lock; returns the wheel's file name."""
    data = json.loads(lock_file.read_text(encoding="utf-8"))
    wheel = next(w for w in data["wheels"] if w["name"] == "torch")
    wheel["sha256"] = ("0" if wheel["sha256"][0] != "0" else "1") + wheel["sha256"][1:]
    lock_file.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return str(wheel["filename"])


def test_a_failed_build_marks_only_its_cells(env_builds: dict[str, EnvBuild], tmp_path: Path) -> None:
    # A matrix of its own folder: its locks are copies, one with a torch hash that no longer matches the wheel.
    folder = tmp_path / "project"
    (folder / "locks").mkdir(parents=True)
    shutil.copy(lock_path(ROOT / "matrix.yaml", CPU), folder / "locks" / f"{CPU}.json")
    shutil.copy(lock_path(ROOT / "matrix.yaml", CPU), folder / "locks" / "tampered.json")
    wheel = _tamper(folder / "locks" / "tampered.json")
    extra = {"tampered": default_data()["environments"][CPU], "missing": {"torch": MISSING_RELEASE}}
    matrix = small_matrix([CPU], ["r580"], GPU, DIAGNOSIS_ONLY, extra_envs=extra, path=folder / "matrix.yaml")

    outcome = run_grid(matrix, tmp_path / "results")

    builds = {e["name"]: e for e in codec.encode(outcome.document.environments)}
    tampered = cell(outcome, "tampered", "r580", "gpu")
    assert tampered["status"] == "BUILD_FAILED", describe(tampered)
    assert wheel in tampered["reason"] and "lock" in tampered["reason"], tampered["reason"]
    assert builds["tampered"]["build"]["status"] == "FAILED"
    assert wheel in builds["tampered"]["build"]["log_tail"]
    missing = cell(outcome, "missing", "r580", "gpu")
    assert missing["status"] == "BUILD_FAILED", describe(missing)
    assert f"torch=={MISSING_RELEASE}" in missing["reason"], missing["reason"]
    assert builds["missing"]["build"]["log_tail"]
    good = cell(outcome, CPU, "r580", "gpu")
    assert good["status"] == "PASS" and good["observed"]["verdict"] == CPU_WHEEL, describe(good)
    assert builds[CPU]["build"]["status"] == "CACHED" and builds[CPU]["image"] == env_builds[CPU].tag
    assert not outcome.ok
    assert (outcome.folder / "report.html").is_file()


def test_a_hung_container_is_killed_and_says_timeout(engine: Engine, env_builds: Any, tmp_path: Path) -> None:
    # A driver whose cuInit never returns, and a harness told to wait for it far longer (run.init_timeout_s) than
    # the cell may run: the container truly hangs, however fast this machine is, until the runner kills it.
    matrix = small_matrix([CPU], [HUNG], GPU, {**DIAGNOSIS_ONLY, "timeout_s": 20, "init_timeout_s": 3600})
    outcome = run_grid(matrix, tmp_path)
    c = cell(outcome, CPU, HUNG, "gpu")
    assert c["status"] == "TIMEOUT", describe(c)
    assert "time limit" in c["reason"]
    assert leftovers(engine, outcome.document.run.id) == []
    assert not outcome.ok


def test_a_hung_driver_is_named_when_the_harness_gives_up_first(engine: Engine, env_builds: Any,
                                                                tmp_path: Path) -> None:
    # The same driver with the harness's bound inside the cell's time: the real CUDA runtime blocks in cuInit under
    # torch.cuda.is_available(), the harness gives up on it and reports; the prediction agrees.
    scenarios = {**GPU, "cvd-empty": {"gpus": "all", "env": {"CUDA_VISIBLE_DEVICES": ""}}}
    matrix = small_matrix([CU130], [HUNG], scenarios, {**DIAGNOSIS_ONLY, "init_timeout_s": 5})
    outcome = run_grid(matrix, tmp_path)
    c = cell(outcome, CU130, HUNG, "gpu")
    assert c["status"] == "PASS" and c["observed"]["verdict"] == DRIVER_BROKEN, describe(c)
    found = facts(c)
    assert found["torch"]["blocked_in"] == "torch.cuda.is_available()" and found["torch"]["blocked_s"] >= 5
    assert found["driver"]["libcuda"]["blocked_in"] == "cuInit(0)"
    (hang,) = findings(c, DRIVER_BROKEN)
    assert hang["title"].startswith("the driver's initialisation never returns") and "--gpu-reset" in str(hang)
    hidden = cell(outcome, CU130, HUNG, "cvd-empty")  # no visible GPU: nothing to bring up, nothing blocks
    assert hidden["status"] == "PASS" and hidden["observed"]["verdict"] == NOT_VISIBLE, describe(hidden)
    assert leftovers(engine, outcome.document.run.id) == []


def test_a_container_killed_for_memory_says_oom_killed(engine: Engine, env_builds: Any, tmp_path: Path) -> None:
    outcome = run_grid(small_matrix([CPU], ["r580"], GPU, {**DIAGNOSIS_ONLY, "memory": "64m"}), tmp_path)
    c = cell(outcome, CPU, "r580", "gpu")
    assert c["status"] == "OOM_KILLED", describe(c)
    assert "run.memory" in c["reason"]
    assert leftovers(engine, outcome.document.run.id) == []


def _cell_containers(engine: Engine, run_id: str) -> set[str]:
    found = engine.client.containers.list(all=True, filters={"label": [f"refenv.run={run_id}", "refenv.kind=cell"]})
    return {str(c.id) for c in found}


@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_removes_containers_and_writes_the_partial_report(engine: Engine, env_builds: Any, tmp_path: Path,
                                                                 stop: signal.Signals, code: int) -> None:
    results = tmp_path / "results"
    proc = invoke("matrix", "--env", CPU, "--host", "r5*", "--scenario", "gpu,cvd-empty", "--rerun",
                  "--parallel", "1", "--results", str(results))
    seen: set[str] = set()
    run_id = None
    deadline = time.monotonic() + 1800  # a hang guard only: a cold machine builds the simulated driver first
    try:
        # Wait until the first cell has finished and the second one runs, then press Ctrl-C.
        while len(seen) < 2 and time.monotonic() < deadline and proc.poll() is None:
            runs = [p.name for p in results.iterdir() if p.is_dir()] if results.is_dir() else []
            if runs:
                run_id = runs[0]
                seen |= _cell_containers(engine, run_id)
            time.sleep(0.2)
        assert run_id is not None and len(seen) >= 2 and proc.poll() is None, "the run ended before Ctrl-C"
        proc.send_signal(stop)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, out
    assert "interrupted" in out
    assert leftovers(engine, run_id) == []
    folder = results / run_id
    doc: dict[str, Any] = json.loads((folder / "cells.json").read_text(encoding="utf-8"))
    assert doc["run"]["interrupted"] is True
    statuses = [c["status"] for c in doc["cells"]]
    assert "PASS" in statuses, "the cell that finished is kept"
    assert [c["reason"] for c in doc["cells"] if c["status"] == "NOT_RUN"], statuses
    assert all("interrupted" in c["reason"] for c in doc["cells"] if c["status"] == "NOT_RUN")
    assert (folder / "report.html").is_file()


def test_an_unchanged_environment_is_not_rebuilt(engine: Engine, default_matrix: Matrix,
                                                 env_builds: dict[str, EnvBuild]) -> None:
    for env in default_matrix.environments:
        again = build_environment(engine, default_matrix, env, lambda name, line: None)
        assert again.status == "CACHED", f"{env.name}: {again.status} {again.error}"
        assert again.tag == env_builds[env.name].tag
        lock = read_lock(lock_path(default_matrix.path, env.name))
        assert lock is not None and again.lock_sha256 == lock.sha256


def test_a_second_run_reuses_cells_and_rerun_runs_them_again(env_builds: Any, tmp_path: Path) -> None:
    matrix = small_matrix([CPU], ["r580"], {**GPU, "cvd-empty": {"env": {"CUDA_VISIBLE_DEVICES": ""}}},
                          DIAGNOSIS_ONLY)
    first = run_grid(matrix, tmp_path, use_cache=False)
    second = run_grid(matrix, tmp_path, use_cache=True)
    third = run_grid(matrix, tmp_path, use_cache=False)
    for outcome, cached in ((first, False), (second, True), (third, False)):
        cells = codec.encode(outcome.document.cells)
        assert [c["status"] for c in cells] == ["PASS", "PASS"], [describe(c) for c in cells]
        assert [c["cached"] for c in cells] == [cached, cached]
        assert all(e.build.status == "CACHED" for e in outcome.document.environments)
    assert [c.cache_key for c in first.document.cells] == [c.cache_key for c in second.document.cells]
    assert all((c.wall_s or 0) > 0 for c in third.document.cells)
    assert second.document.summary.cached == 2


@pytest.mark.parametrize("limit", [1.9, 1.97, 2.0, 2.03, 2.1])
def test_a_container_ending_at_its_time_limit_is_timeout_or_done_never_an_error(
        engine: Engine, env_builds: dict[str, EnvBuild], limit: float) -> None:
    # The kill can reach a container that has just exited: Docker refuses it (409, "is not running"),
    # which once made the cell an ERROR. Whichever side of the limit it lands, the outcome is one of the two.
    spec = ContainerSpec(image=str(env_builds[CPU].tag), command=("2",), entrypoint=("sleep",), environment=(),
                         labels=((MANAGED, "true"), ("refenv.kind", "test")), binds=())
    outcome = engine.run(spec, limit)
    assert (outcome.exit_code, outcome.timed_out) in ((0, False), (None, True)), outcome
