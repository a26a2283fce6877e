"""CDI specs for simulated hosts: valid by the spec's rules, resolved as an engine resolves them, predicted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.schema import DRIVER_BROKEN, DRIVER_TOO_OLD, OK
from refenv.builder.driverfiles import SimDriver
from refenv.model import profiles
from refenv.model.matrix import Environment, Host, Scenario
from refenv.run import cdi, cdi_rules, devnodes, expect, injection, toolkit

DRIVER = SimDriver(Path("/cache/sim"), Path("/cache/sim/libcuda.so.1"), Path("/cache/sim/libnvidia-ml.so.1"),
                   Path("/cache/sim/nvidia-smi"), "0" * 64)
CONF = "/run/hosts/r580--cdi.conf"
NODES = "/cache/devnodes"
CU130 = Environment("cu130", "2.14.1", "cu130")


def spec(name: str) -> dict[str, Any]:
    got = cdi.spec_for(profiles.get(name), DRIVER, config_host_path=CONF, node_dir=NODES)
    assert got is not None
    return got


def cdi_scenario(*names: str) -> Scenario:
    return Scenario("cdi", "none", (), "", names)


@pytest.mark.parametrize("name", [p.name for p in profiles.all() if p.faults.cdi_spec != "absent"
                                  and not p.faults.no_runtime])
def test_every_hosts_spec_keeps_the_cdi_rules(name: str) -> None:
    got = spec(name)
    assert cdi_rules.problems(got) == []
    assert cdi_rules.problems(json.loads(cdi.dumps(got))) == []  # as the file holds it


def test_the_spec_has_the_shape_nvidia_ctk_writes() -> None:
    got, r580 = spec("r580"), profiles.get("r580")
    assert got["kind"] == "nvidia.com/gpu" and got["cdiVersion"] == "0.5.0"
    names = [d["name"] for d in got["devices"]]
    assert names == ["0", r580.gpus[0].uuid, "1", r580.gpus[1].uuid, "all"]
    edits = got["containerEdits"]
    assert edits["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]
    assert [n["path"] for n in edits["deviceNodes"]] == list(toolkit.CONTROL_NODES)
    assert {m["containerPath"] for m in edits["mounts"]} == {
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/bin/nvidia-smi",
        toolkit.CONFIG_PATH}
    assert all(m["options"] == ["ro", "nosuid", "nodev", "bind"] for m in edits["mounts"])
    by_name = {d["name"]: d["containerEdits"]["deviceNodes"] for d in got["devices"]}
    assert [n["path"] for n in by_name["all"]] == ["/dev/nvidia0", "/dev/nvidia1"]
    assert by_name["1"] == by_name[r580.gpus[1].uuid] == [{"path": "/dev/nvidia1", "hostPath": "/dev/null",
                                                            "permissions": "rwm"}]


def test_faulty_hosts_name_nodes_with_nvidias_numbers() -> None:
    denied = spec("r580-cgroup-reload")
    nodes = denied["containerEdits"]["deviceNodes"] + denied["devices"][-1]["containerEdits"]["deviceNodes"]
    assert {n["permissions"] for n in nodes} == {"m"}
    assert nodes[0]["hostPath"] == f"{NODES}/c195-255" and nodes[-1]["hostPath"] == f"{NODES}/c195-1"
    stale = spec("r580-stale-cdi")["containerEdits"]["deviceNodes"]
    assert [n["hostPath"] for n in stale] == ["/dev/null", f"{NODES}/c508-0", f"{NODES}/c508-1"]
    assert cdi.spec_for(profiles.get("r580-no-cdi"), DRIVER, config_host_path=CONF) is None


def test_the_stale_major_is_held_by_no_driver_here() -> None:
    """The simulation relies on open() of 508:0 failing with ENXIO: no driver on this machine may own 508."""
    majors = {int(line.split()[0]) for line in Path("/proc/devices").read_text().splitlines()
              if line[:4].strip().isdigit()}
    assert devnodes.STALE_UVM_MAJOR not in majors and devnodes.NVIDIA_MAJOR not in majors


@pytest.mark.parametrize("broken", [
    ("kind", "nvidia.com"), ("kind", "nvidia.com/gpu/x"), ("cdiVersion", "0.4.0"), ("cdiVersion", "1"),
    ("devices", []), ("extra", 1),
])
def test_the_validator_refuses_what_the_rules_refuse(broken: tuple[str, Any]) -> None:
    bad = copy.deepcopy(spec("r580"))
    bad[broken[0]] = broken[1]
    assert cdi_rules.problems(bad), broken


def test_the_validator_names_the_place_of_a_bad_device() -> None:
    bad = copy.deepcopy(spec("r580"))
    bad["devices"][1]["name"] = "-bad"
    bad["devices"][2]["containerEdits"] = {}
    bad["containerEdits"]["deviceNodes"][0]["permissions"] = "rwx"
    bad["containerEdits"]["mounts"][0]["containerPath"] = "relative"
    bad["containerEdits"]["env"].append("NOEQUALS")
    bad["devices"][3]["name"] = "0"
    problems = "\n".join(cdi_rules.problems(bad))
    for where in ("spec.devices[1].name", "spec.devices[2].containerEdits", "deviceNodes[0].permissions",
                  "mounts[0].containerPath", "env[1]", "'0' is defined twice"):
        assert where in problems, problems
    hooked = copy.deepcopy(spec("r580"))
    hooked["containerEdits"]["hooks"] = [{"hookName": "onBoot", "path": "usr/bin/nvidia-ctk"}]
    assert len(cdi_rules.problems(hooked)) == 2
    old = copy.deepcopy(spec("r580"))
    old["cdiVersion"] = "0.4.0"
    assert any("hostPath needs 0.5.0" in p for p in cdi_rules.problems(old))


def test_resolution_takes_spec_wide_edits_then_each_device() -> None:
    r580 = profiles.get("r580")
    one = cdi.inject(r580, DRIVER, ["nvidia.com/gpu=1"], config_host_path=CONF)
    assert one.gpus == (r580.gpus[1],)
    assert [d.container_path for d in one.devices] == [*toolkit.CONTROL_NODES, "/dev/nvidia1"]
    by_uuid = cdi.inject(r580, DRIVER, [f"nvidia.com/gpu={r580.gpus[0].uuid}"], config_host_path=CONF)
    assert by_uuid.gpus == (r580.gpus[0],)
    every = cdi.inject(r580, DRIVER, ["nvidia.com/gpu=all", "nvidia.com/gpu=0"], config_host_path=CONF)
    assert every.gpus == r580.gpus and len(every.devices) == 5
    assert every.config_text == profiles.render_config(r580, r580.gpus, require_device_nodes=True)


@pytest.mark.parametrize(("host", "names", "missing"), [
    ("r580-no-cdi", ["nvidia.com/gpu=all"], "nvidia.com/gpu=all"),
    ("r580", ["nvidia.com/gpu=2"], "nvidia.com/gpu=2"),
    ("r535", [f"nvidia.com/gpu={profiles.get('r580').gpus[0].uuid}"], profiles.get("r580").gpus[0].uuid),
    ("r580", ["amd.com/gpu=all"], "amd.com/gpu=all"),
])
def test_what_no_spec_defines_is_unresolvable(host: str, names: list[str], missing: str) -> None:
    with pytest.raises(toolkit.ToolkitError, match=f"unresolvable CDI devices .*{missing}"):
        cdi.inject(profiles.get(host), DRIVER, names, config_host_path=CONF)


def test_the_runtimes_cdi_mode_resolves_nvidia_visible_devices() -> None:
    r580 = profiles.get("r580")
    runtime = Scenario("nvd", "all", (("NVIDIA_VISIBLE_DEVICES", "nvidia.com/gpu=0"),))
    got = injection.inject(r580, DRIVER, runtime, config_host_path=CONF)
    assert got.gpus == (r580.gpus[0],)
    with pytest.raises(toolkit.ToolkitError, match=r"nvidia-container-runtime: .*unresolvable CDI devices"):
        injection.inject(profiles.get("r580-no-cdi"), DRIVER, runtime, config_host_path=CONF)
    assert toolkit.cdi_names("0,GPU-1") is None and toolkit.cdi_names("nvidia.com/gpu=all") == ("nvidia.com/gpu=all",)
    # The classic enumeration does not take CDI names: only the runtime's CDI mode does.
    with pytest.raises(toolkit.ToolkitError, match="CDI mode"):
        toolkit.inject(r580, DRIVER, {"NVIDIA_VISIBLE_DEVICES": "nvidia.com/gpu=0"}, gpu_access=True,
                       config_host_path=CONF)
    assert injection.selection(runtime) is None and injection.selection(Scenario("d", "device=1")) == "1"


@pytest.mark.parametrize(("host", "scenario", "verdict", "words"), [
    ("r580", cdi_scenario("nvidia.com/gpu=all"), OK, "accepts"),
    ("r535", cdi_scenario("nvidia.com/gpu=0"), DRIVER_TOO_OLD, "12020"),
    ("r580-stale-cdi", cdi_scenario("nvidia.com/gpu=all"), DRIVER_BROKEN, "stale CDI spec"),
    ("r580-stale-cdi", Scenario("gpu"), OK, "accepts"),   # the legacy hook reads the live nodes
    ("r580-cgroup-reload", Scenario("gpu"), DRIVER_BROKEN, "device cgroup"),
    ("r580-cgroup-reload", cdi_scenario("nvidia.com/gpu=0"), DRIVER_BROKEN, "device cgroup"),
    ("r580-no-cdi", cdi_scenario("nvidia.com/gpu=all"), "", "unresolvable CDI devices nvidia.com/gpu=all"),
    ("r580-no-runtime", Scenario("gpu"), "", "could not select device driver"),
])
def test_cdi_and_container_faults_are_predicted(host: str, scenario: Scenario, verdict: str, words: str) -> None:
    got = expect.expect(CU130, Host(host, "simulated", host), profiles.get(host), scenario)
    assert got.verdict == verdict and words in got.reason, got
    if verdict == DRIVER_BROKEN:
        assert got.torch_text is not None and "CUDA unknown error" in got.torch_text


def test_cdi_names_make_their_own_container_and_cache_key(tmp_path: Path) -> None:
    """A `devices:` scenario without --gpus is not the same container as a plain no-GPU one, on any host."""
    from refenv.model.builds import EnvBuild
    from refenv.model.matrix import CellSpec, RunSettings
    from refenv.run.plan import Prepared, plan_cell

    build = EnvBuild(CU130.name, "CACHED", "refenv/env-cu130:abc", "abc", 0.0, None)
    prepared = Prepared({CU130.name: build}, DRIVER)
    none = Host("none", "none")
    plain = plan_cell(CellSpec(CU130, none, Scenario("no-gpu", "none")), prepared, "r", tmp_path, RunSettings())
    cdi_cell = plan_cell(CellSpec(CU130, none, cdi_scenario("nvidia.com/gpu=all")), prepared, "r", tmp_path,
                         RunSettings())
    assert plain.cache_key != cdi_cell.cache_key
    assert cdi_cell.spec is not None and cdi_cell.spec.cdi_devices == ("nvidia.com/gpu=all",)
    assert cdi_cell.spec.cdi_specs == ()  # no driver, no toolkit: no spec for the engine to read
    r580 = Host("r580", "simulated", "r580")
    on_r580 = plan_cell(CellSpec(CU130, r580, cdi_scenario("nvidia.com/gpu=all")), prepared, "r", tmp_path,
                        RunSettings())
    assert on_r580.spec is not None and len(on_r580.spec.cdi_specs) == 1
    written = dict(on_r580.files)
    assert cdi_rules.problems(json.loads(written[Path(on_r580.spec.cdi_specs[0])])) == []


def test_the_fault_nodes_are_made_with_the_drivers_mode(tmp_path: Path) -> None:
    """mknod's mode passes through the umask: the nodes must still be crw-rw-rw-, so that a container's user
    is refused by the device cgroup (EPERM), not by the mode (EACCES)."""
    import os
    import stat

    if os.geteuid() != 0:
        pytest.skip("mknod needs root (the engines' daemons, and CI here, run as root)")
    old = os.umask(0o022)
    try:
        devnodes.ensure(str(tmp_path), {devnodes.Node(195, 255)})
    finally:
        os.umask(old)
    made = (tmp_path / "c195-255").stat()
    assert stat.S_ISCHR(made.st_mode) and stat.S_IMODE(made.st_mode) == 0o666
    assert made.st_rdev == os.makedev(195, 255)
    os.chmod(tmp_path / "c195-255", 0o600)  # a node left by an older run is put right
    devnodes.ensure(str(tmp_path), {devnodes.Node(195, 255)})
    assert stat.S_IMODE((tmp_path / "c195-255").stat().st_mode) == 0o666
