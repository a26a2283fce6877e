"""What the container toolkit injects on a simulated host: capabilities, device selection, mounts and nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from refenv.builder.driverfiles import SimDriver
from refenv.model import profiles
from refenv.run import toolkit

DRIVER = SimDriver(Path("/cache/sim"), Path("/cache/sim/libcuda.so.1"), Path("/cache/sim/libnvidia-ml.so.1"),
                   Path("/cache/sim/nvidia-smi"), "0" * 64)
R580 = profiles.get("r580")
CONF = "/host/run/simdriver.conf"


def inject(env: dict[str, str], gpu_access: bool = True, gpus: str | None = None) -> toolkit.Injection:
    return toolkit.inject(R580, DRIVER, env, gpu_access=gpu_access, config_host_path=CONF, gpus=gpus)


def test_nothing_without_gpu_access() -> None:
    assert inject({"NVIDIA_VISIBLE_DEVICES": "all"}, gpu_access=False) == toolkit.Injection()
    assert not toolkit.Injection().injected


@pytest.mark.parametrize("value", [None, "", "void", "  "])
def test_void_empty_or_unset_injects_nothing(value: str | None) -> None:
    env = {} if value is None else {"NVIDIA_VISIBLE_DEVICES": value}
    assert inject(env) == toolkit.Injection()


def test_all_gpus_default_capabilities() -> None:
    got = inject({"NVIDIA_VISIBLE_DEVICES": "all"})
    assert got.mounts == (
        toolkit.Mount("/cache/sim/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", True),
        toolkit.Mount("/cache/sim/libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", True),
        toolkit.Mount("/cache/sim/nvidia-smi", "/usr/bin/nvidia-smi", True),
        toolkit.Mount(CONF, "/etc/refenv/simdriver.conf", True),
    )
    assert [d.container_path for d in got.devices] == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                                       "/dev/nvidia0", "/dev/nvidia1"]
    assert {(d.host_path, d.permissions) for d in got.devices} == {("/dev/null", "rwm")}
    assert got.gpus == R580.gpus and got.capabilities == {"compute", "utility"}
    assert got.ldconfig and got.injected
    assert got.config_text == profiles.render_config(R580, R580.gpus, require_device_nodes=True)


def test_none_gives_libraries_but_no_gpu() -> None:
    got = inject({"NVIDIA_VISIBLE_DEVICES": "none"})
    assert got.gpus == ()
    assert [d.container_path for d in got.devices] == list(toolkit.CONTROL_NODES)
    assert len(got.mounts) == 4
    assert got.config_text is not None and "[gpu]" not in got.config_text


def test_selection_by_index_and_uuid_in_host_order() -> None:
    by_index = inject({"NVIDIA_VISIBLE_DEVICES": "1"})
    assert by_index.gpus == (R580.gpus[1],)
    assert by_index.devices[-1].container_path == "/dev/nvidia1"
    assert by_index.config_text is not None and "minor=1" in by_index.config_text
    assert R580.gpus[0].uuid not in by_index.config_text
    both = inject({"NVIDIA_VISIBLE_DEVICES": f"{R580.gpus[1].uuid},0"})
    assert both.gpus == R580.gpus


def test_gpus_flag_replaces_the_environment() -> None:
    assert inject({"NVIDIA_VISIBLE_DEVICES": "void"}, gpus="all").gpus == R580.gpus
    assert inject({"NVIDIA_VISIBLE_DEVICES": "all"}, gpus="0").gpus == (R580.gpus[0],)


@pytest.mark.parametrize("value", ["2", "GPU-00000000-0000-0000-0000-000000000000", "0,x"])
def test_unknown_device_refuses_the_container(value: str) -> None:
    with pytest.raises(toolkit.ToolkitError, match=r"nvidia-container-cli: device error: .*: unknown device"):
        inject({"NVIDIA_VISIBLE_DEVICES": value})


def test_utility_alone_has_nvidia_smi_but_no_libcuda() -> None:
    got = inject({"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility"})
    targets = [m.container_path for m in got.mounts]
    assert "/usr/bin/nvidia-smi" in targets and "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" in targets
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" not in targets


def test_compute_alone_has_libcuda_only() -> None:
    got = inject({"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute"})
    assert [m.container_path for m in got.mounts] == ["/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                                      "/etc/refenv/simdriver.conf"]


def test_graphics_only_gets_nodes_but_none_of_the_simulated_libraries() -> None:
    got = inject({"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "graphics"})
    assert got.mounts == () and got.config_text is None and not got.ldconfig
    assert len(got.devices) == 5


@pytest.mark.parametrize(("value", "expected"), [
    (None, {"compute", "utility"}), ("", {"compute", "utility"}), ("Compute", {"compute"}),
    ("all", toolkit.ALL_CAPABILITIES), ("utility, video", {"utility", "video"}),
])
def test_capabilities(value: str | None, expected: set[str]) -> None:
    assert toolkit.capabilities(value) == expected
