"""An image's baked visibility variables (ENV) as the toolkit reads them: beneath the run's -e, and beneath a
--gpus request's NVIDIA_VISIBLE_DEVICES (refenv/run/injection.py, in_image); the matrix's simulated cells and
`refenv check` predict through the same rule, so they agree on such an image."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.schema import NOT_VISIBLE, OK
from refenv.builder.driverfiles import SimDriver
from refenv.check import predict
from refenv.model import profiles
from refenv.model.builds import EnvBuild
from refenv.model.matrix import CellSpec, Environment, Host, RunSettings, Scenario
from refenv.model.matrix_yaml import parse
from refenv.run import dryrun, expect, injection
from refenv.run.imagefacts import ImageFacts, read_facts
from refenv.run.plan import Prepared, Scope, plan_cell

DRIVER = SimDriver(Path("/cache/sim"), Path("/cache/sim/libcuda.so.1"), Path("/cache/sim/libnvidia-ml.so.1"),
                   Path("/cache/sim/nvidia-smi"), "0" * 64)
CU130 = Environment("cu130", "2.14.1", "cu130")
R580 = Host("r580", "simulated", "r580")
GPUS = Scenario("gpu", "all")
DEFAULT = Path(__file__).resolve().parents[2] / "matrix.yaml"


def test_the_image_lies_beneath_the_runs_own_variables() -> None:
    seen = injection.in_image(Scenario("caps", "all", (("NVIDIA_DRIVER_CAPABILITIES", "all"),)),
                              {"NVIDIA_DRIVER_CAPABILITIES": "utility", "CUDA_VISIBLE_DEVICES": "", "PATH": "/x"})
    assert seen.env_dict == {"NVIDIA_DRIVER_CAPABILITIES": "all", "CUDA_VISIBLE_DEVICES": ""}


def test_a_gpus_request_outranks_the_images_nvidia_visible_devices() -> None:
    """Docker appends --gpus's NVIDIA_VISIBLE_DEVICES after the image's (moby setNvidiaGPUs): the last one holds."""
    baked = {"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    assert injection.in_image(GPUS, baked).env_dict == {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    assert injection.selection(injection.in_image(GPUS, baked)) == "all"
    one = Scenario("one", "device=0")
    assert injection.selection(injection.in_image(one, baked)) == "0"
    # Without GPU access the toolkit is not there to read it: nothing is injected whatever the image says.
    plain = injection.in_image(Scenario("no-gpu", "none"), {"NVIDIA_VISIBLE_DEVICES": "all"})
    assert not injection.inject(profiles.get("r580"), DRIVER, plain, config_host_path="/c").injected


@pytest.mark.parametrize(("baked", "verdict"), [
    ({}, OK),
    ({"NVIDIA_DRIVER_CAPABILITIES": "utility"}, NOT_VISIBLE),   # NVML only, no libcuda
    ({"CUDA_VISIBLE_DEVICES": ""}, NOT_VISIBLE),
    ({"NVIDIA_VISIBLE_DEVICES": "void"}, OK),                   # --gpus all takes its place
])
def test_the_matrix_plan_and_the_check_agree_on_a_baked_variable(tmp_path: Path, baked: dict[str, str],
                                                                  verdict: str) -> None:
    build = EnvBuild(CU130.name, "CACHED", "refenv/env-cu130:abc", "abc", 0.0, None)
    prepared = Prepared({CU130.name: build}, DRIVER, facts={CU130.name: ImageFacts("python", env=baked)})
    plan = plan_cell(CellSpec(CU130, R580, GPUS), prepared, "r", tmp_path, RunSettings())
    [checked] = predict.predict(CU130, baked, (R580,), (GPUS,))
    assert plan.expected.verdict == checked.verdict == verdict
    assert plan.spec is not None
    mounted = {b[1] for b in plan.spec.binds}
    caps_utility = baked.get("NVIDIA_DRIVER_CAPABILITIES") == "utility"
    assert any(p.endswith("/libcuda.so.1") for p in mounted) is not caps_utility
    assert any(p.endswith("/libnvidia-ml.so.1") for p in mounted)
    # The container's environment is the image's beneath the scenario's: the capabilities refenv adds beside
    # --gpus (compute,utility) do not hide the image's own, and --gpus's NVIDIA_VISIBLE_DEVICES holds.
    started = dict(plan.spec.environment)
    assert started["NVIDIA_DRIVER_CAPABILITIES"] == baked.get("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
    assert started["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert started.get("CUDA_VISIBLE_DEVICES") == baked.get("CUDA_VISIBLE_DEVICES")


def test_the_default_matrix_cells_are_unchanged_by_images_that_bake_nothing(tmp_path: Path) -> None:
    matrix = parse(DEFAULT.read_text(encoding="utf-8"), str(DEFAULT))
    builds = {e.name: EnvBuild(e.name, "CACHED", f"refenv/env-{e.name}:abc", "abc", 0.0, None)
              for e in matrix.environments}
    facts = {e.name: ImageFacts("python") for e in matrix.environments}
    prepared = Prepared(builds, DRIVER, facts=facts)
    simulated = tuple(h for h in matrix.hosts if h.kind != "real")
    predicted = dryrun.predict(matrix, dryrun.RealHosts({}, {}))
    by_id = {p.spec.id: p.expected for p in predicted}
    cells = Scope(matrix.environments, simulated, matrix.scenarios).cells()
    assert cells
    for spec in cells:
        assert plan_cell(spec, prepared, "r", tmp_path, RunSettings()).expected == by_id[spec.id], spec.id
        assert expect.in_image(spec.scenario, {}) == spec.scenario


def test_the_probe_reads_the_images_visibility_variables() -> None:
    said = {"python": "3.11.2", "executable": "/usr/bin/python3", "require_cuda": None,
            "env": {"NVIDIA_DRIVER_CAPABILITIES": "utility", "HOME": "/root"}}
    facts = read_facts("python3", said, None, {})
    assert facts.env == {"NVIDIA_DRIVER_CAPABILITIES": "utility"}
    assert read_facts("python3", {"python": "3.11.2"}, None, {}).env == {}
