"""Cells through a real Slurm cluster: the same results as the local engine, Ctrl-C, time limits, placements."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from refenv.engines import realhost
from refenv.engines.docker.engine import DockerEngine
from refenv.engines.docker.sdk import Engine
from refenv.engines.seam import ContainerSpec
from refenv.engines.slurm import client, state
from refenv.engines.slurm.engine import SlurmEngine
from refenv.model import codec
from refenv.model.builds import EnvBuild
from refenv.model.labels import CELL, KIND, MANAGED, RUN
from refenv.model.matrix import Host
from refenv.model.placement import SlurmPlacement
from refenv.run.pipeline import Options, run_matrix
from tests.docker.support import CPU, DIAGNOSIS_ONLY, ROOT, RecordingUI, leftovers, small_matrix

SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "no-gpu": {"gpus": "none"}}


def _jobs_of(run_id: str) -> list[state.Job]:
    return [j for j in state.jobs(client.squeue_json()).values() if j.name == f"refenv-{run_id}"]


def _comparable(cell: Any) -> dict[str, Any]:
    """What a cell says, without where and how long it ran."""
    data = codec.encode(cell)
    assert isinstance(data, dict)
    observed = data.get("observed") or {}
    return {"status": data["status"], "reason": data["reason"], "expected": data["expected"],
            "verdict": observed.get("verdict"), "torch": observed.get("torch_message"),
            "findings": [f.get("code") for f in observed.get("findings", [])]}


def test_a_small_matrix_through_slurm_gives_what_the_local_engine_gives(engine: Engine, cpu_build: EnvBuild,
                                                                      tmp_path: Path) -> None:
    matrix = small_matrix([CPU], ["none", "r535"], SCENARIOS, DIAGNOSIS_ONLY)
    slurm = SlurmEngine(DockerEngine(engine), matrix.hosts)
    on_slurm = run_matrix(matrix, Options(tmp_path / "slurm", parallel=4, use_cache=False), RecordingUI(), slurm)
    local = run_matrix(matrix, Options(tmp_path / "local", parallel=2, use_cache=False), RecordingUI(),
                       DockerEngine(engine))
    run_id = on_slurm.document.run.id
    assert run_id is not None
    assert [c.id for c in on_slurm.document.cells] == [c.id for c in local.document.cells]
    assert len(on_slurm.document.cells) == 4
    for a, b in zip(on_slurm.document.cells, local.document.cells, strict=True):
        assert _comparable(a) == _comparable(b), a.id
    assert on_slurm.ok, [(c.id, c.status, c.reason) for c in on_slurm.document.cells]
    jobs = _jobs_of(run_id)
    # One pack: the four cells submitted together run in one job, two at a time on this node's two CPUs.
    assert len(jobs) == 1 and all(j.terminal for j in jobs), jobs
    assert leftovers(engine, run_id) == []
    for name in ("cells.json", "report.md", "report.html", "junit.xml"):
        assert (on_slurm.folder / name).is_file(), name
    doc = json.loads((on_slurm.folder / "cells.json").read_text(encoding="utf-8"))
    assert {c["status"] for c in doc["cells"]} == {"PASS"}


def test_ctrl_c_cancels_every_job_and_leaves_no_container(engine: Engine, cpu_build: EnvBuild,
                                                          tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "invoke", "matrix", "--env", CPU, "--host", "r5*", "--scenario",
                             "gpu,cvd-empty", "--rerun", "--backend", "slurm", "--results", str(results)],
                            cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    run_id = None
    deadline = time.monotonic() + 1800  # a hang guard only: a cold machine builds the simulated driver first
    try:
        # Wait until a job runs and its container is up, then press Ctrl-C.
        while time.monotonic() < deadline and proc.poll() is None:
            runs = [p.name for p in results.iterdir() if p.is_dir()] if results.is_dir() else []
            if runs:
                run_id = runs[0]
                running = [j for j in _jobs_of(run_id) if j.state == "RUNNING"]
                containers = engine.client.containers.list(filters={"label": [f"refenv.run={run_id}",
                                                                              "refenv.kind=cell"]})
                if running and containers:
                    break
            time.sleep(0.3)
        assert run_id is not None and proc.poll() is None, "the run ended before Ctrl-C"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, out
    assert [j for j in _jobs_of(run_id) if not j.terminal] == []
    assert leftovers(engine, run_id) == []
    doc = json.loads((results / run_id / "cells.json").read_text(encoding="utf-8"))
    assert doc["run"]["interrupted"] is True
    assert any(c["status"] == "NOT_RUN" and "interrupted" in c["reason"] for c in doc["cells"])
    assert (results / run_id / "report.html").is_file()


def test_a_cell_past_its_time_limit_is_timeout(engine: Engine, cpu_build: EnvBuild, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    run_id = f"timeout-{os.getpid()}"
    assert cpu_build.tag is not None
    spec = ContainerSpec(image=cpu_build.tag, command=("sleep 600",), entrypoint=("sh", "-c"), environment=(),
                         labels=((MANAGED, "true"), (KIND, "cell"), (RUN, run_id), (CELL, "e/h/s")),
                         binds=((str(out), "/out", False),), mem_limit="256m")
    slurm = SlurmEngine(DockerEngine(engine))
    # The cell's own limit, as the local engine keeps it; Slurm's (whole minutes, the pack's) is not waited out:
    # its job ends COMPLETED (killed within the script), not Slurm's TIMEOUT.
    outcome = slurm.run(spec, timeout=5)
    assert outcome.timed_out and outcome.exit_code is None, outcome
    assert [j.state for j in _jobs_of(run_id)] == ["COMPLETED"]
    assert leftovers(engine, run_id) == []


def test_an_unknown_constraint_is_refused_before_any_job(tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    text = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
    matrix.write_text(text.replace("  real:\n    kind: real\n",
                                   "  real:\n    kind: real\n    slurm: {constraint: \"driver_r999&b300\"}\n"),
                      encoding="utf-8")
    (tmp_path / "locks").symlink_to(ROOT / "locks")
    before = set(state.jobs(client.squeue_json()))
    done = subprocess.run([sys.executable, "-m", "invoke", "matrix", "--matrix", str(matrix), "--backend", "slurm",
                           "--results", str(tmp_path / "results")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "driver_r999, b300" in out and "no node" in out and "driver_r535" in out, out
    assert "Traceback" not in out
    assert set(state.jobs(client.squeue_json())) == before, "a job was submitted"
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_invoke_fleet_prints_this_nodes_readiness(tmp_path: Path) -> None:
    node = state.nodes(client.sinfo_json())[0]
    done = subprocess.run([sys.executable, "-m", "invoke", "fleet", "--results", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"node {node.name} (features {','.join(node.features)}" in out, out
    here = realhost.probe()
    if here is None:  # no NVIDIA driver: the node needs one
        assert "no driver (" in out and "torch-2.14.1-cu130: no GPU: no driver; install R580 (>= 580.65.06)" in out
    else:
        assert f"driver {here.driver_version}" in out, out
    assert "torch-2.13.0-cpu: no GPU: a CPU-only build" in out
    assert list(tmp_path.glob("*/" + node.name + ".json")), "the node's diagnosis is kept"


def test_a_real_hosts_cells_follow_its_probe_to_the_node_that_answered(engine: Engine, cpu_build: EnvBuild,
                                                                      tmp_path: Path) -> None:
    node = state.nodes(client.sinfo_json())[0]
    matrix = small_matrix([CPU], ["none"], SCENARIOS, DIAGNOSIS_ONLY)
    real = Host("real", "real", slurm=SlurmPlacement(constraint=node.features[0]))
    matrix = replace(matrix, hosts=(real,))
    slurm = SlurmEngine(DockerEngine(engine), matrix.hosts)
    outcome = run_matrix(matrix, Options(tmp_path, parallel=2, use_cache=False), RecordingUI(), slurm)
    assert slurm.placements["real"].nodelist == node.name
    cells = {c.scenario: c for c in outcome.document.cells}
    assert cells["no-gpu"].status == "PASS", (cells["no-gpu"].status, cells["no-gpu"].reason)
    if realhost.probe() is None:  # this node has no NVIDIA driver: GPU cells cannot run there, and say why
        gpu = cells["gpu"]
        assert gpu.status == "NOT_RUN" and f"host real (node {node.name})" in (gpu.reason or ""), gpu.reason


def test_a_dry_run_reads_a_real_host_on_the_node_its_cells_would_run_on(tmp_path: Path) -> None:
    node = state.nodes(client.sinfo_json())[0]
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("version: 1\nenvironments:\n  torch-2.13.0-cpu: {torch: \"2.13.0\", variant: cpu}\n"
                      f"hosts:\n  real: {{kind: real, slurm: {{constraint: {node.features[0]}}}}}\n"
                      "scenarios:\n  gpu: {gpus: all}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "invoke", "matrix", "--matrix", str(matrix), "--dry-run",
                           "--backend", "slurm"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("torch-2.13.0-cpu/real/gpu"))
    here = realhost.probe()
    if here is None:  # the node has no driver: its cells would not run there, and the line says why
        assert f"not run there: host real (node {node.name})" in line, line
    else:
        assert "CPU_WHEEL" in line, line
