"""A cell's container as plain data (refenv.run.containers) and the docker SDK arguments made of it (engine.create_kwargs)."""

from __future__ import annotations

from pathlib import Path

from refenv.builder.driverfiles import SimDriver
from refenv.engines.docker.sdk import create_kwargs
from refenv.model import profiles
from refenv.model.labels import MANAGED
from refenv.model.matrix import RunSettings, Scenario
from refenv.run import toolkit
from refenv.run.containers import LDCACHE, OUT, RESULT, cell_spec, container_env, ldcache_spec
from refenv.run.expect import selection

DRIVER = SimDriver(Path("/cache/sim"), Path("/cache/sim/libcuda.so.1"), Path("/cache/sim/libnvidia-ml.so.1"),
                   Path("/cache/sim/nvidia-smi"), "0" * 64)
R580 = profiles.get("r580")
SETTINGS = RunSettings(timeout_s=240, memory="6g", pids=1024, probes="quick", memory_check="off")
GPU = Scenario("gpu", "all")


def injection(scenario: Scenario) -> toolkit.Injection:
    return toolkit.inject(R580, DRIVER, scenario.env_dict, gpu_access=scenario.gpu_access,
                          config_host_path="/run/r580--gpu.conf", gpus=selection(scenario))


def test_every_cell_is_locked_down_and_labelled() -> None:
    spec = cell_spec("img:1", "e/h/s", "run-1", "/res/e/h/s", GPU, SETTINGS)
    assert spec.read_only and spec.network == "none" and spec.cap_drop == ("ALL",)
    assert spec.security_opt == ("no-new-privileges",)
    assert (spec.pids_limit, spec.mem_limit) == (1024, "6g")
    assert dict(spec.labels) == {MANAGED: "true", "refenv.kind": "cell", "refenv.run": "run-1", "refenv.cell": "e/h/s"}
    assert spec.binds == (("/res/e/h/s", OUT, False),)
    assert spec.command[:3] == ("cell", "--out", RESULT)


def test_the_harness_gets_the_settings_and_less_time_than_the_container() -> None:
    spec = cell_spec("img:1", "c", "r", "/o", GPU, SETTINGS)
    args = dict(zip(spec.command[1::2], spec.command[2::2], strict=True))
    assert args == {"--out": RESULT, "--probes": "quick", "--memory": "off", "--torch-timeout": "210",
                    "--init-timeout": "60"}
    short = cell_spec("img:1", "c", "r", "/o", GPU, RunSettings(timeout_s=5, init_timeout_s=12))
    args = dict(zip(short.command[1::2], short.command[2::2], strict=True))
    assert args["--torch-timeout"] == "30", "the harness's own torch timeout never drops below 30 s"
    assert args["--init-timeout"] == "12", "run.init_timeout_s, as the matrix says, whatever the cell's limit"


def test_a_simulated_host_mounts_the_driver_read_only_with_its_linker_cache() -> None:
    inj = injection(GPU)
    spec = cell_spec("img:1", "c", "r", "/o", GPU, SETTINGS, inj, ldcache="/cache/ld.so.cache")
    assert spec.binds[0] == ("/o", OUT, False)
    assert set(spec.binds[1:-1]) == {(m.host_path, m.container_path, True) for m in inj.mounts}
    assert spec.binds[-1] == ("/cache/ld.so.cache", LDCACHE, True)
    assert spec.devices == tuple(f"/dev/null:{d.container_path}:rwm" for d in inj.devices)
    env = dict(spec.environment)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert spec.gpu_request is None and spec.runtime is None, "a simulated host never asks Docker for a GPU"


def test_no_linker_cache_without_driver_libraries() -> None:
    void = Scenario("void", "all", (("NVIDIA_VISIBLE_DEVICES", "void"),))
    spec = cell_spec("img:1", "c", "r", "/o", void, SETTINGS, injection(void), ldcache="/cache/ld.so.cache")
    assert spec.binds == (("/o", OUT, False),) and spec.devices == ()


def test_host_none_sets_no_gpu_variables() -> None:
    env = dict(cell_spec("img:1", "c", "r", "/o", GPU, SETTINGS).environment)
    assert "NVIDIA_VISIBLE_DEVICES" not in env and "NVIDIA_DRIVER_CAPABILITIES" not in env


def test_the_scenario_overrides_what_gpus_sets() -> None:
    caps = Scenario("caps", "all", (("NVIDIA_DRIVER_CAPABILITIES", "utility"), ("CUDA_VISIBLE_DEVICES", "")))
    env = container_env(caps, "all")
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "utility" and env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"


def test_a_real_host_asks_for_gpus_or_the_nvidia_runtime() -> None:
    devices = cell_spec("img:1", "c", "r", "/o", Scenario("d", "device=0,1"), SETTINGS, real_host=True)
    assert devices.gpu_request == "0,1" and devices.runtime is None
    assert dict(devices.environment)["NVIDIA_VISIBLE_DEVICES"] == "0,1"
    by_variable = cell_spec("img:1", "c", "r", "/o", Scenario("n", "all", (("NVIDIA_VISIBLE_DEVICES", "1"),)),
                            SETTINGS, real_host=True)
    assert by_variable.gpu_request is None and by_variable.runtime == "nvidia"
    none = cell_spec("img:1", "c", "r", "/o", Scenario("n", "none"), SETTINGS, real_host=True)
    assert none.gpu_request is None and none.runtime is None


def test_threads_bound_the_cpu_share_and_the_thread_pools() -> None:
    spec = cell_spec("img:1", "c", "r", "/o", GPU, SETTINGS, threads=3)
    env = dict(spec.environment)
    assert spec.cpus == 3.0 and env["OMP_NUM_THREADS"] == "3" and env["MKL_NUM_THREADS"] == "3"


def test_the_linker_cache_container_runs_ldconfig_as_root_with_the_libraries() -> None:
    spec = ldcache_spec("img:1", "/tmp/out", {"/usr/lib/libcuda.so.1": "/cache/libcuda.so.1"}, "run-1")
    assert spec.user == "0" and not spec.read_only and spec.entrypoint == ("sh", "-c")
    assert "ldconfig" in spec.command[0] and LDCACHE in spec.command[0]
    assert spec.binds == (("/tmp/out", OUT, False), ("/cache/libcuda.so.1", "/usr/lib/libcuda.so.1", True))
    assert dict(spec.labels)["refenv.run"] == "run-1"


def test_docker_arguments_carry_every_limit() -> None:
    spec = cell_spec("img:1", "c", "r", "/o", GPU, SETTINGS, injection(GPU), "/cache/ld.so.cache", threads=2)
    kwargs = create_kwargs(spec)
    assert kwargs["image"] == "img:1" and kwargs["detach"] is True
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == "6g", "no swap: a memory limit that holds"
    assert kwargs["nano_cpus"] == 2_000_000_000 and kwargs["pids_limit"] == 1024
    assert kwargs["read_only"] and kwargs["network_mode"] == "none" and kwargs["cap_drop"] == ["ALL"]
    assert kwargs["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=1g"}
    assert [(m["Source"], m["Target"], m["ReadOnly"]) for m in kwargs["mounts"]] == list(spec.binds)
    assert kwargs["devices"] == list(spec.devices)
    assert "device_requests" not in kwargs and "runtime" not in kwargs and "user" not in kwargs


def test_docker_gpu_requests() -> None:
    every = create_kwargs(cell_spec("i", "c", "r", "/o", GPU, SETTINGS, real_host=True))["device_requests"][0]
    assert every["Count"] == -1 and every["Capabilities"] == [["gpu"]]
    two = create_kwargs(cell_spec("i", "c", "r", "/o", Scenario("d", "device=0,1"), SETTINGS,
                                  real_host=True))["device_requests"][0]
    assert two["DeviceIDs"] == ["0", "1"] and two["Count"] == 0


def test_stale_images_are_all_but_the_newest_of_each_repository() -> None:
    from refenv.engines.docker.sdk import stale

    records = [("a", "refenv/env-x", "2026-11-29T10:00:00Z"), ("b", "refenv/env-x", "2026-11-29T11:00:00Z"),
               ("c", "refenv/env-y", "2026-11-29T09:00:00Z"), ("b", "refenv/env-x", "2026-11-29T11:00:00Z")]
    assert stale(records) == ["a"]
