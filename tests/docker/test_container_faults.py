"""The container toolkit's most reported failures on Docker, with torch's own words; CDI names refused.

Docker 20.10 has no CDI: a scenario asking for `nvidia.com/gpu=...` devices is NOT_RUN with the daemon's
refusal; the NVIDIA runtime's CDI mode (NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=all) is the (simulated)
runtime's doing and runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from refenv.model.builds import EnvBuild
from refenv.model.records import NOT_RUN, PASS
from tests.docker.support import CU130, DIAGNOSIS_ONLY, cell, describe, run_grid, small_matrix

SCENARIOS: dict[str, dict[str, Any]] = {"gpu": {"gpus": "all"}, "cdi-all": {"devices": ["nvidia.com/gpu=all"]},
             "nvd-cdi": {"gpus": "all", "env": {"NVIDIA_VISIBLE_DEVICES": "nvidia.com/gpu=all"}}}
HOSTS = ["r580-cgroup-reload", "r580-stale-cdi", "r580-no-cdi", "r580-no-runtime"]


def test_container_faults_on_docker(env_builds: dict[str, EnvBuild], tmp_path: Path) -> None:
    outcome = run_grid(small_matrix([CU130], HOSTS, SCENARIOS, run=DIAGNOSIS_ONLY), tmp_path)
    for c in outcome.document.cells:
        assert c.status in (PASS, NOT_RUN), describe(cell(outcome, c.environment, c.host, c.scenario))
    for host, scenario in (("r580-cgroup-reload", "gpu"), ("r580-cgroup-reload", "nvd-cdi"),
                           ("r580-stale-cdi", "nvd-cdi")):
        broken = cell(outcome, CU130, host, scenario)
        assert broken["status"] == PASS and broken["observed"]["verdict"] == "DRIVER_BROKEN", describe(broken)
        assert "CUDA unknown error" in broken["observed"]["torch_message"], describe(broken)
    denied = cell(outcome, CU130, "r580-cgroup-reload", "gpu")["observed"]["findings"][0]
    assert "/dev/nvidiactl: EPERM: Operation not permitted" in denied["evidence"], denied
    stale = cell(outcome, CU130, "r580-stale-cdi", "nvd-cdi")["observed"]["findings"][0]
    assert "/dev/nvidia-uvm: ENXIO: No such device or address" in stale["evidence"], stale
    assert cell(outcome, CU130, "r580-stale-cdi", "gpu")["observed"]["verdict"] == "OK"
    for host in HOSTS:  # Docker 20.10 cannot resolve a CDI name: the daemon's own refusal, never dropped
        refused = cell(outcome, CU130, host, "cdi-all")
        assert refused["status"] == NOT_RUN and 'could not select device driver "cdi"' in refused["reason"], refused
    no_runtime = cell(outcome, CU130, "r580-no-runtime", "gpu")
    assert no_runtime["status"] == NOT_RUN and "could not select device driver \"\"" in no_runtime["reason"]
    no_spec = cell(outcome, CU130, "r580-no-cdi", "nvd-cdi")
    assert no_spec["status"] == NOT_RUN and "unresolvable CDI devices nvidia.com/gpu=all" in no_spec["reason"]
