"""What the NVIDIA container toolkit would inject into a container on a simulated host, as a pure function.

Semantics (NVIDIA container toolkit docs, docker-specialized.md; shared/facts/torch-failures.md):
- nothing is injected into a container started without GPU access (the plain runtime);
- `NVIDIA_VISIBLE_DEVICES` (or the `--gpus` selection, which takes its place) is a list of GPU
  indices or UUIDs, `all`, `none` (driver libraries and control nodes but no GPU) or `void`/empty/
  unset (nothing at all); an unknown device stops the container from starting;
- `NVIDIA_DRIVER_CAPABILITIES` defaults to `compute,utility`: `compute` brings libcuda, `utility`
  brings NVML and nvidia-smi (so `utility` alone gives a working nvidia-smi and no CUDA driver).
The toolkit also refreshes the container's linker cache (its update-ldcache hook); `ldconfig` says the
runner must do the same before the command, or `dlopen("libcuda.so.1")` finds nothing.

NVIDIA_VISIBLE_DEVICES may also name CDI devices (`nvidia.com/gpu=all`, `=0`, `=UUID`): the runtime's CDI
mode, which resolves them against the host's CDI spec instead of its own enumeration (refenv/run/injection.py
chooses the way in; refenv/run/cdi.py resolves).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from refenv.builder.driverfiles import SimDriver
from refenv.model.profiles import Gpu, Profile, render_config
from refenv.run import devnodes

LIB_DIR = "/usr/lib/x86_64-linux-gnu"
SMI_PATH = "/usr/bin/nvidia-smi"
CONFIG_PATH = "/etc/refenv/simdriver.conf"
DEFAULT_CAPABILITIES = frozenset({"compute", "utility"})
ALL_CAPABILITIES = frozenset({"compute", "compat32", "display", "graphics", "utility", "video"})
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
HEALTHY_NODE = "/dev/null"
# Where the nodes with NVIDIA's numbers live when a prediction needs no real path (refenv/run/devnodes.py).
NO_NODE_DIR = "/nonexistent/devnodes"


class Mount(NamedTuple):
    host_path: str
    container_path: str
    read_only: bool


class DeviceNode(NamedTuple):
    host_path: str
    container_path: str
    permissions: str  # cgroup permissions, "rwm"


class ToolkitError(ValueError):
    """The real toolkit would refuse to start this container; the message is its text."""


@dataclass(frozen=True)
class Injection:
    """Mounts, device nodes and configuration the container gets, and the GPUs it sees."""

    mounts: tuple[Mount, ...] = ()
    devices: tuple[DeviceNode, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    capabilities: frozenset[str] = frozenset()
    config_text: str | None = None  # mount it at CONFIG_PATH (its mount is among `mounts`)
    ldconfig: bool = False

    @property
    def injected(self) -> bool:
        return bool(self.mounts or self.devices)


def capabilities(value: str | None) -> frozenset[str]:
    """NVIDIA_DRIVER_CAPABILITIES as a set: unset or empty means compute,utility; `all` means every one."""
    if value is None or not value.strip():
        return DEFAULT_CAPABILITIES
    caps = frozenset(c.strip().lower() for c in value.split(",") if c.strip())
    return ALL_CAPABILITIES if "all" in caps else caps


def select_gpus(profile: Profile, selection: str | None) -> tuple[Gpu, ...] | None:
    """The GPUs a NVIDIA_VISIBLE_DEVICES value selects, in the host's order; None for void/empty/unset."""
    value = (selection or "").strip()
    if value in ("", "void"):
        return None
    if value == "none":
        return ()
    if value == "all":
        return profile.gpus
    chosen: dict[int, Gpu] = {}
    for entry in (e.strip() for e in value.split(",")):
        gpu = None
        # ASCII digits only: str.isdigit() also takes "٣" (which int() reads as 3) and 5,000-digit strings.
        if entry.isascii() and entry.isdigit() and len(entry) <= 4:
            gpu = profile.gpus[int(entry)] if int(entry) < len(profile.gpus) else None
        else:
            gpu = next((g for g in profile.gpus if g.uuid == entry), None)
        if gpu is None:
            # The text nvidia-container-cli prints before the container is refused.
            raise ToolkitError(f"nvidia-container-cli: device error: {entry}: unknown device")
        chosen[gpu.minor] = gpu
    return tuple(chosen[m] for m in sorted(chosen))


def cdi_names(value: str | None) -> tuple[str, ...] | None:
    """The CDI device names of a NVIDIA_VISIBLE_DEVICES value (`vendor/class=name`, comma-separated), or
    None when it holds none (indices, UUIDs, all, none, void)."""
    entries = [e.strip() for e in (value or "").split(",") if e.strip()]
    if not entries or not any("=" in e and "/" in e.split("=", 1)[0] for e in entries):
        return None
    return tuple(entries)


def device_nodes(profile: Profile, gpus: tuple[Gpu, ...], *, node_dir: str = NO_NODE_DIR, control: bool = True,
                 stale_uvm: bool = False) -> tuple[DeviceNode, ...]:
    """The /dev/nvidia* nodes a container gets: the control nodes (when `control`), then one per GPU.

    A healthy node is the host's /dev/null under the NVIDIA name; on a host whose device cgroup was reset
    (`device_cgroup_denied`) each carries NVIDIA's numbers with permission "m" only, and a stale CDI spec's
    nvidia-uvm carries the old major number (refenv/run/devnodes.py says why each).
    """
    denied = profile.faults.device_cgroup_denied
    wanted: list[tuple[str, int | None]] = [(n, None) for n in CONTROL_NODES] if control else []
    wanted += [(f"/dev/nvidia{g.minor}", g.minor) for g in gpus]
    out = []
    for path, minor in wanted:
        stale = stale_uvm and path.startswith("/dev/nvidia-uvm")
        if denied or stale:
            node = devnodes.numbers(path, minor, stale_uvm=stale)
            out.append(DeviceNode(devnodes.path_of(node_dir, node), path, "m" if denied else "rwm"))
        else:
            out.append(DeviceNode(HEALTHY_NODE, path, "rwm"))
    return tuple(out)


def inject(
    profile: Profile,
    driver: SimDriver,
    env: Mapping[str, str],
    *,
    gpu_access: bool,
    config_host_path: str,
    gpus: str | None = None,
    node_dir: str = NO_NODE_DIR,
    lib_dir: str = LIB_DIR,
) -> Injection:
    """What the toolkit would give a container on the simulated host `profile`.

    `env` is the container's environment; `gpu_access` whether it was started with `--gpus` (or the
    NVIDIA runtime); `gpus` the `--gpus` selection ("all", "0,1", a UUID), which replaces
    NVIDIA_VISIBLE_DEVICES. Device nodes are the host's /dev/null mapped to the /dev/nvidia* paths, so that
    each node exists inside the container, or nodes under `node_dir` for a host's faults (`device_nodes`).
    `config_host_path` is where the caller writes `config_text` on the host.
    """
    if not gpu_access:
        return Injection()
    if profile.faults.no_runtime:
        # Docker's own refusal comes from the engine (containers.cell_spec asks it for --gpus).
        return Injection()
    value = gpus if gpus is not None else env.get("NVIDIA_VISIBLE_DEVICES")
    if cdi_names(value) is not None:
        # CDI names are resolved against the host's spec (refenv/run/injection.py), not enumerated here.
        raise ToolkitError(f"CDI device names in NVIDIA_VISIBLE_DEVICES={value!r} need the runtime's CDI mode")
    selected = select_gpus(profile, value)
    if selected is None:
        return Injection()
    caps = capabilities(env.get("NVIDIA_DRIVER_CAPABILITIES"))
    mounts: list[Mount] = []
    if "compute" in caps:
        mounts.append(Mount(str(driver.libcuda), f"{lib_dir}/libcuda.so.1", True))
    if "utility" in caps:
        mounts.append(Mount(str(driver.libnvidia_ml), f"{lib_dir}/libnvidia-ml.so.1", True))
        mounts.append(Mount(str(driver.nvidia_smi), SMI_PATH, True))
    config_text = None
    if mounts:
        # require_device_nodes: the simulated libraries then see exactly the nodes mapped below.
        config_text = render_config(profile, selected, require_device_nodes=True)
        mounts.append(Mount(config_host_path, CONFIG_PATH, True))
    devices = device_nodes(profile, selected, node_dir=node_dir)
    return Injection(tuple(mounts), devices, selected, caps, config_text, bool(mounts))


def node_state(injection: Injection) -> tuple[bool, bool]:
    """(the GPU nodes are there but may not be opened, nvidia-uvm is missing or reaches no driver), for a
    container that was given the driver; both False when nothing was injected."""
    if not injection.devices:
        return False, False
    denied = any(set(d.permissions) <= {"m"} for d in injection.devices)
    stale = devnodes.Node(devnodes.STALE_UVM_MAJOR, 0).name
    uvm = [d for d in injection.devices if d.container_path == "/dev/nvidia-uvm"]
    return denied, not uvm or uvm[0].host_path.endswith("/" + stale)
