"""invoke fleet's judgement: a node's diagnosis, the environments that can use its GPUs, what it needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.schema.envelope import DiagnoseDocument
from refenv import fleet
from refenv.engines.slurm.client import Commands
from refenv.engines.slurm.probe import probe_nodes, probe_placement, probe_script
from refenv.errors import RefenvError
from refenv.model import codec, profiles
from refenv.model.matrix_yaml import load
from refenv.model.placement import SlurmPlacement

ROOT = Path(__file__).resolve().parents[2]


def _nvml(profile: profiles.Profile) -> dict[str, Any]:
    """facts.driver.nvml as `harness diagnose --json` writes it on a node with these GPUs."""
    major, minor = (int(x) for x in profile.cuda_version.split("."))
    return {"loaded": True, "init_error": None, "driver_version": profile.driver_version,
            "cuda_driver_version": major * 1000 + minor * 10,
            "devices": [{"index": i, "name": g.name, "memory_total_bytes": g.memory_bytes,
                         "compute_capability": g.compute_capability, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id}
                        for i, g in enumerate(profile.gpus)]}


def _doc(nvml: dict[str, Any]) -> DiagnoseDocument:
    """A node's `harness diagnose --json` document with these NVML facts, read as refenv reads it."""
    return codec.decode(DiagnoseDocument, {"schema": "refenv.diagnosis", "facts": {"driver": {"nvml": nvml}}})


def test_a_node_on_r535_runs_cu128_and_needs_r580_for_cu130() -> None:
    envs = {e.name: e for e in load(ROOT / "matrix.yaml").environments}
    r535 = profiles.get("r535")
    report = fleet.report(fleet.NodeProbe("n1", ("driver_r535",), "gpu:h100:8", _doc(_nvml(r535))), envs.values())
    assert report.driver == r535.driver_version and len(report.gpus) == len(r535.gpus)
    by_env = {r.environment: r for r in report.readiness}
    assert by_env["torch-2.10.0-cu128"].is_ready
    cu130 = by_env["torch-2.14.1-cu130"]
    assert not cu130.is_ready and cu130.refused[0].verdict == "DRIVER_TOO_OLD"
    assert cu130.refused[0].fix.branch == "R580"
    text = "\n".join(fleet.lines(report))
    assert "node n1 (features driver_r535; gres gpu:h100:8)" in text
    assert "torch-2.10.0-cu128: torch gets a GPU" in text
    assert "torch-2.14.1-cu130: no GPU: driver too old for CUDA 13.0; install R580" in text
    needs = fleet.needs([report], "torch-2.14.1-cu130")
    assert needs and needs[0].startswith("n1: DRIVER_TOO_OLD; install R580")


def test_a_node_without_a_driver_needs_one_and_a_failed_probe_says_so() -> None:
    envs = load(ROOT / "matrix.yaml").environments
    bare = fleet.report(fleet.NodeProbe("n2", document=_doc({"init_error": "libnvidia-ml.so.1: cannot open"})),
                        envs)
    assert bare.driver is None and bare.why_no_driver == "libnvidia-ml.so.1: cannot open"
    verdicts = {r.environment: r.refused[0].verdict for r in bare.readiness}
    assert verdicts["torch-2.14.1-cu130"] == "NO_DRIVER" and verdicts["torch-2.13.0-cpu"] == "CPU_WHEEL"
    failed = fleet.report(fleet.NodeProbe("n3", error="job FAILED"), envs)
    assert fleet.lines(failed) == ["node n3", "  probe failed: job FAILED"]
    assert fleet.needs([failed], "torch-2.13.0-cpu") == ["n3: not probed (job FAILED)"]


def test_the_probe_script_runs_the_harness_from_the_project(tmp_path: Path) -> None:
    text = probe_script(Path("/shared/refenv"), tmp_path / "n1.json")
    assert "PYTHONPATH=/shared/refenv python3 -m harness diagnose --json" in text
    assert f"mv {tmp_path}/n1.json.tmp {tmp_path}/n1.json" in text


def test_an_unknown_partition_is_refused_with_the_clusters_partitions(tmp_path: Path) -> None:
    """Not "no node is up": the partition does not exist, and no probe job is submitted."""
    sinfo = {"nodes": [{"name": "vm", "state": "idle", "partitions": ["debug"], "features": "", "gres": ""}]}
    submitted: list[list[str]] = []

    def sbatch(argv: list[str]) -> str:
        submitted.append(argv)
        return "1"

    commands = Commands(sbatch=sbatch, sinfo_json=lambda: json.dumps(sinfo))
    with pytest.raises(RefenvError, match="partition 'nope' does not exist") as err:
        probe_nodes(tmp_path, "nope", commands)
    assert err.value.hint == "partitions: debug" and submitted == []


def test_a_host_probe_that_answered_is_read_without_waiting_for_squeue(tmp_path: Path) -> None:
    """A job that already left squeue's listing (MinJobAge) but wrote its diagnosis has answered."""
    cancelled: list[list[str]] = []

    def sbatch(argv: list[str]) -> str:
        (tmp_path / "host-h100.json").write_text(json.dumps(codec.encode(_doc(_nvml(profiles.get("r535"))))),
                                                  encoding="utf-8")
        return "7"

    commands = Commands(sbatch=sbatch, squeue_json=lambda: json.dumps({"jobs": []}), scancel=cancelled.append)
    # The answer is there before the first look: the limit only has to outlast that look, however slow the machine.
    probe = probe_placement(tmp_path, "h100", SlurmPlacement(constraint="h100"), commands, timeout_s=300, poll_s=0.01)
    assert probe.document is not None and cancelled == []
