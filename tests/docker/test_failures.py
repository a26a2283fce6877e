"""The simulated driver, end to end: real torch wheels and their real CUDA runtimes fail as on users' machines.

Each run goes through `run_matrix` with a small matrix; each test checks one failure: the cell passes
(the harness's verdict is the predicted one), the verdict is the one the failure calls for, and torch's
own words (shared/facts/torch-failures.md) are in what the harness recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import compat
from harness.schema import ARCH_UNSUPPORTED, CPU_WHEEL, DRIVER_BROKEN, DRIVER_TOO_OLD, NOT_VISIBLE, OK
from refenv.model import codec, profiles
from refenv.run.pipeline import Outcome
from tests.docker.support import (
    CPU,
    CU128,
    CU130,
    DIAGNOSIS_ONLY,
    GPU,
    cell,
    describe,
    facts,
    findings,
    run_grid,
    small_matrix,
)

# torch's messages (shared/facts/torch-failures.md, "Messages").
NO_DRIVER_TEXT = "Found no NVIDIA driver on your system"
NO_GPUS_TEXT = "No CUDA GPUs are available"
NOT_COMPILED_TEXT = "Torch not compiled with CUDA enabled"
BROKEN_TEXTS = {
    "r580-mismatch": "Error 803: system has unsupported display driver / cuda driver combination",
    "r580-cuinit-999": "CUDA unknown error - this may be due to an incorrectly set up environment",
    "r580-cuinit-3": "CUDA driver initialization failed, you might not have a CUDA gpu.",
    "r580-stub": "CUDA driver is a stub library",
    "r580-forward-compat": "Error 804: forward compatibility was attempted on non supported HW",
    "r580-cuinit-803": "Error 803: system has unsupported display driver / cuda driver combination",
}
HIDING = {
    "cvd-empty": "",
    "cvd-minus-one": "-1",
    "cvd-unknown-index": "7",
    "cvd-unknown-uuid": "GPU-00000000-dead-beef-0000-000000000000",
}
HOSTS = ("r470", "r535", "r570", "r580")


def too_old_text(profile: str) -> str:
    """What torch warns when the runtime refuses the driver, with the version the driver reports."""
    return f"The NVIDIA driver on your system is too old (found version {profiles.get(profile).cuda_driver_version})"


@pytest.fixture(scope="module")
def grid(env_builds: Any, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """Every default wheel on four driver branches, started with --gpus."""
    matrix = small_matrix([CU130, CU128, CPU], HOSTS, GPU, DIAGNOSIS_ONLY)
    return run_grid(matrix, tmp_path_factory.mktemp("grid"))


@pytest.fixture(scope="module")
def faults(env_builds: Any, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The CUDA 13.0 wheel with no driver, and on every faulty or unsupported simulated host."""
    matrix = small_matrix([CU130], ["none", *BROKEN_TEXTS, "r580-pascal"], GPU, DIAGNOSIS_ONLY)
    return run_grid(matrix, tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def scenarios(env_builds: Any, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The CUDA 13.0 wheel on a healthy R580 host, started in the ways that hide its GPUs."""
    chosen: dict[str, dict[str, Any]] = {"no-gpu": {"gpus": "none"},
                                         "caps-utility": {"env": {"NVIDIA_DRIVER_CAPABILITIES": "utility"}}}
    chosen.update({name: {"env": {"CUDA_VISIBLE_DEVICES": value}} for name, value in HIDING.items()})
    return run_grid(small_matrix([CU130], ["r580"], chosen, DIAGNOSIS_ONLY), tmp_path_factory.mktemp("scenarios"))


def test_every_cell_of_the_runs_passes(grid: Outcome, faults: Outcome, scenarios: Outcome) -> None:
    for outcome in (grid, faults, scenarios):
        bad = [describe(codec.encode(c)) for c in outcome.document.cells if c.status != "PASS"]
        assert not bad, "\n".join(bad)
        assert outcome.ok and not outcome.interrupted


@pytest.mark.parametrize(("outcome_name", "host", "scenario"), [("faults", "none", "gpu"),
                                                               ("scenarios", "r580", "no-gpu")])
def test_a_container_without_gpu_access_is_not_visible(outcome_name: str, host: str, scenario: str,
                                                       request: pytest.FixtureRequest) -> None:
    c = cell(request.getfixturevalue(outcome_name), CU130, host, scenario)
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == NOT_VISIBLE
    assert NO_DRIVER_TEXT in c["observed"]["torch_message"]
    f = facts(c)
    assert f["visibility"]["in_container"] is True
    assert f["driver"]["libcuda"]["loaded"] is False and not f["driver"]["dev_nodes"]
    assert any("without GPU access" in x["title"] for x in findings(c, NOT_VISIBLE)), describe(c)


@pytest.mark.parametrize(("env", "host"), [(CU130, "r570"), (CU128, "r470"), (CU130, "r470"), (CU130, "r535")])
def test_a_driver_older_than_the_runtime_is_too_old(grid: Outcome, env: str, host: str) -> None:
    c = cell(grid, env, host, "gpu")
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == DRIVER_TOO_OLD
    assert too_old_text(host) in c["observed"]["torch_message"]
    assert c["observed"]["torch_message"].startswith("CUDA initialization: ")  # a warning, not an exception


def test_the_versions_torch_names_are_the_facts(grid: Outcome) -> None:
    """found version 12080 for R570, 11040 for R470 (shared/facts/cuda-compat.md)."""
    assert "found version 12080" in cell(grid, CU130, "r570", "gpu")["observed"]["torch_message"]
    assert "found version 11040" in cell(grid, CU128, "r470", "gpu")["observed"]["torch_message"]


@pytest.mark.parametrize("scenario", list(HIDING))
def test_cuda_visible_devices_that_hide_every_gpu(scenarios: Outcome, scenario: str) -> None:
    c = cell(scenarios, CU130, "r580", scenario)
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == NOT_VISIBLE
    torch = facts(c)["torch"]
    assert torch["is_available"] is False and torch["device_count"] == 0
    assert torch["init_warning"] is None and not torch["warnings"], "torch is silent when no device is visible"
    assert torch["init_error"] == NO_GPUS_TEXT
    driver = facts(c)["driver"]
    # The driver applies CUDA_VISIBLE_DEVICES (cuInit: 100, no device); NVML ignores it and still sees both GPUs.
    assert driver["libcuda"]["loaded"] is True and driver["libcuda"]["cuinit_name"] == "CUDA_ERROR_NO_DEVICE"
    assert len(driver["nvml"]["devices"]) == len(profiles.get("r580").gpus)
    assert findings(c, NOT_VISIBLE), describe(c)


@pytest.mark.parametrize("host", list(BROKEN_TEXTS))
def test_a_failing_driver_is_broken_in_torchs_words(faults: Outcome, host: str) -> None:
    c = cell(faults, CU130, host, "gpu")
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == DRIVER_BROKEN
    assert BROKEN_TEXTS[host] in c["observed"]["torch_message"], describe(c)
    assert findings(c, DRIVER_BROKEN), describe(c)


def test_the_version_mismatch_is_named_from_nvml(faults: Outcome) -> None:
    c = cell(faults, CU130, "r580-mismatch", "gpu")
    nvml = facts(c)["driver"]["nvml"]
    assert nvml["init_error_code"] == 18
    assert any("version mismatch" in f["title"] for f in findings(c, DRIVER_BROKEN)), describe(c)


def test_utility_capability_gives_nvml_and_smi_but_no_cuda_driver(scenarios: Outcome) -> None:
    c = cell(scenarios, CU130, "r580", "caps-utility")
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == NOT_VISIBLE
    driver = facts(c)["driver"]
    assert driver["nvidia_smi"]["works"] is True
    assert [d["uuid"] for d in driver["nvml"]["devices"]] == [g.uuid for g in profiles.get("r580").gpus]
    assert driver["libcuda"]["loaded"] is False
    assert NO_DRIVER_TEXT in c["observed"]["torch_message"]


@pytest.mark.parametrize("host", HOSTS)
def test_a_cpu_wheel_on_a_healthy_host_is_cpu_wheel(grid: Outcome, host: str) -> None:
    c = cell(grid, CPU, host, "gpu")
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == CPU_WHEEL
    assert NOT_COMPILED_TEXT in c["observed"]["torch_message"]
    f = facts(c)
    assert f["torch"]["cuda"] is None
    assert f["driver"]["nvml"]["driver_version"] == profiles.get(host).driver_version


def test_a_pascal_gpu_under_the_cu130_wheel_is_arch_unsupported(faults: Outcome) -> None:
    c = cell(faults, CU130, "r580-pascal", "gpu")
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == ARCH_UNSUPPORTED
    f = facts(c)
    # Judged from NVML's compute capability and the wheel's compiled list: the simulated driver runs no kernel.
    assert [d["compute_capability"] for d in f["driver"]["nvml"]["devices"]] == ["6.1"]
    assert tuple(f["torch"]["arch_list"]) == compat.arch_list("2.14.1", "13.0")
    assert not compat.arch_supports("6.1", f["torch"]["arch_list"])
    found = findings(c, ARCH_UNSUPPORTED)
    assert found and "Tesla P40" in found[0]["title"], describe(c)


@pytest.mark.parametrize(("env", "host"), [(CU130, "r580"), (CU128, "r535"), (CU128, "r570"), (CU128, "r580")])
def test_a_compatible_host_is_ok_and_marked_simulated(grid: Outcome, env: str, host: str) -> None:
    c = cell(grid, env, host, "gpu")
    assert c["status"] == "PASS", describe(c)
    assert c["observed"]["verdict"] == OK and c["observed"]["simulated"] is True
    assert c["reason"].endswith("(simulated)")
    stage = facts(c)["driver"]["simulated"]["libcuda"]["stage"]
    assert stage["driver_version_queried"] and stage["cuinit_called"] and stage["runtime_accepted"]
    assert stage["cuinit_result"] == 0
    evidence = [e for f in findings(c, OK) for e in f["evidence"]]
    assert any("the CUDA runtime accepted the simulated driver" in e for e in evidence), describe(c)


def test_each_cell_records_its_own_container_and_result(grid: Outcome) -> None:
    for c in grid.document.cells:
        assert not c.cached and (c.wall_s or 0) > 0 and c.result_path is not None
        assert Path(c.result_path).is_file()
        assert Path(c.result_path).is_relative_to(grid.folder)
