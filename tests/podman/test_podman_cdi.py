"""Cells on Podman: the same verdicts as Docker, and the CDI scenarios and container faults for real.

The cu130 image is copied from Docker into Podman once (shared layers afterwards); each fault gives torch's
own words through the real CUDA runtime, and Podman's own refusal where it cannot resolve a CDI name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from refenv.engines.podman.engine import CDI_DIR, PodmanEngine, podman
from refenv.model.records import NOT_RUN, PASS
from refenv.run.pipeline import Options, run_matrix
from tests.docker.support import CU130, DIAGNOSIS_ONLY, RecordingUI, cell, describe, small_matrix

CDI_ALL = {"devices": ["nvidia.com/gpu=all"]}
SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "cdi-all": CDI_ALL, "cdi-1": {"devices": ["nvidia.com/gpu=1"]},
             "nvd-cdi": {"gpus": "all", "env": {"NVIDIA_VISIBLE_DEVICES": "nvidia.com/gpu=all"}}}
HOSTS = ["r580", "r535", "r580-cgroup-reload", "r580-stale-cdi", "r580-no-cdi"]


def test_cdi_scenarios_and_container_faults_on_podman(podman: PodmanEngine, tmp_path: Path) -> None:
    matrix = small_matrix([CU130], HOSTS, SCENARIOS, run=DIAGNOSIS_ONLY)
    before = set(os.listdir(CDI_DIR)) if CDI_DIR.is_dir() else set()
    outcome = run_matrix(matrix, Options(results_root=tmp_path, use_cache=False), RecordingUI(), podman)
    assert (outcome.document.run.docker.server_version or "").startswith("podman"), outcome.document.run.docker
    # Every cell agrees with its prediction, or was refused by the engine as predicted.
    for c in outcome.document.cells:
        assert c.status in (PASS, NOT_RUN), describe(cell(outcome, c.environment, c.host, c.scenario))
    ok = cell(outcome, CU130, "r580", "cdi-all")
    assert ok["observed"]["verdict"] == "OK" and ok["observed"]["simulated"], describe(ok)
    assert cell(outcome, CU130, "r580", "cdi-1")["observed"]["device_count"] in (0, 1)
    too_old = cell(outcome, CU130, "r535", "cdi-all")
    assert "found version 12020" in (too_old["observed"]["torch_message"] or ""), describe(too_old)
    for host, scenario in (("r580-stale-cdi", "cdi-all"), ("r580-cgroup-reload", "cdi-all"),
                           ("r580-cgroup-reload", "gpu")):
        broken = cell(outcome, CU130, host, scenario)
        assert broken["status"] == PASS and broken["observed"]["verdict"] == "DRIVER_BROKEN", describe(broken)
        assert "CUDA unknown error" in broken["observed"]["torch_message"], describe(broken)
    fix = cell(outcome, CU130, "r580-stale-cdi", "cdi-all")["observed"]["findings"][0]
    assert "/dev/nvidia-uvm" in fix["title"] and any("nvidia-ctk cdi generate" in f for f in fix["remediation"]), fix
    denied = cell(outcome, CU130, "r580-cgroup-reload", "cdi-all")["observed"]["findings"][0]
    assert any("EPERM" in e for e in denied["evidence"]) and any("restart the container" in f for f in denied["remediation"])
    # The legacy hook reads the live nodes: the stale spec only hurts through CDI.
    assert cell(outcome, CU130, "r580-stale-cdi", "gpu")["observed"]["verdict"] == "OK"
    refused = cell(outcome, CU130, "r580-no-cdi", "cdi-all")
    assert refused["status"] == NOT_RUN and "unresolvable CDI devices nvidia.com/gpu=all" in refused["reason"]
    assert "podman" in refused["reason"]
    # Nothing of refenv's is left in podman's CDI directory, and no container of the run.
    assert (set(os.listdir(CDI_DIR)) if CDI_DIR.is_dir() else set()) - before <= {".refenv.lock"}
    assert outcome.document.run.id is not None
    left = podman_ps(outcome.document.run.id)
    assert left == [], left


def podman_ps(run_id: str) -> list[str]:
    return podman("ps", "--all", "--quiet", "--filter", f"label=refenv.run={run_id}").stdout.split()
