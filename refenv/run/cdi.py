"""The CDI spec `nvidia-ctk cdi generate` would write for a simulated host, and its resolution (pure).

Shape (the toolkit's generated specs, e.g. /etc/cdi/nvidia.yaml; the CDI spec, SPEC.md): kind
`nvidia.com/gpu`; one device per GPU by index and by UUID, and `all`; the spec-wide edits hold what every
device needs — the control nodes (nvidiactl, nvidia-uvm, nvidia-uvm-tools), the driver's libraries and
nvidia-smi as read-only bind mounts, and `NVIDIA_VISIBLE_DEVICES=void` so that a legacy hook injects
nothing twice. Everything comes from `refenv.run.toolkit` (the mounts and nodes the simulated driver is
given today), so the two ways in cannot drift apart. Three differences from the real file, each for the
simulation: device nodes name their host side (`hostPath`: the host's /dev/null, or a node with NVIDIA's
numbers for a fault), which needs cdiVersion 0.5.0; the simulated driver's configuration is one more
mount (it lists every GPU, and the libraries see only those whose nodes the container got); and the
linker-cache step (nvidia-ctk's `update-ldcache` createContainer hook, a binary on a real host) is done the
way refenv does it for every cell: a linker cache made for the image and driver, mounted by the cell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from refenv.builder.driverfiles import SimDriver
from refenv.model.profiles import Profile, render_config
from refenv.run import toolkit
from refenv.run.toolkit import DeviceNode, Injection, Mount, ToolkitError

KIND = "nvidia.com/gpu"
CDI_VERSION = "0.5.0"   # the first with deviceNodes[].hostPath
MOUNT_OPTIONS = ("ro", "nosuid", "nodev", "bind")  # what nvidia-ctk writes for each library
VOID = "NVIDIA_VISIBLE_DEVICES=void"
Spec = dict[str, Any]


def _node(d: DeviceNode) -> dict[str, str]:
    return {"path": d.container_path, "hostPath": d.host_path, "permissions": d.permissions}


def _mount(m: Mount) -> dict[str, Any]:
    return {"hostPath": m.host_path, "containerPath": m.container_path, "options": list(MOUNT_OPTIONS)}


def spec_for(profile: Profile, driver: SimDriver, *, config_host_path: str,
             node_dir: str = toolkit.NO_NODE_DIR, lib_dir: str = toolkit.LIB_DIR) -> Spec | None:
    """The host's spec as its CDI spec directory holds it; None when none was generated (fault `absent`, or a
    host without the toolkit, whose nvidia-ctk writes it)."""
    if profile.faults.cdi_spec == "absent" or profile.faults.no_runtime:
        return None
    full = toolkit.inject(profile, driver, {}, gpu_access=True, config_host_path=config_host_path, gpus="all",
                          node_dir=node_dir, lib_dir=lib_dir)
    stale = profile.faults.cdi_spec == "stale-uvm"
    control = toolkit.device_nodes(profile, (), node_dir=node_dir, stale_uvm=stale)
    devices: list[dict[str, Any]] = []
    for gpu in profile.gpus:
        nodes = [_node(d) for d in toolkit.device_nodes(profile, (gpu,), node_dir=node_dir, control=False)]
        devices += [{"name": str(gpu.minor), "containerEdits": {"deviceNodes": nodes}},
                    {"name": gpu.uuid, "containerEdits": {"deviceNodes": nodes}}]
    every = toolkit.device_nodes(profile, profile.gpus, node_dir=node_dir, control=False)
    devices.append({"name": "all", "containerEdits": {"deviceNodes": [_node(d) for d in every]}})
    return {
        "cdiVersion": CDI_VERSION,
        "kind": KIND,
        "devices": devices,
        "containerEdits": {
            "env": [VOID],
            "deviceNodes": [_node(d) for d in control],
            "mounts": [_mount(m) for m in full.mounts],
        },
    }


def dumps(spec: Spec) -> str:
    """The spec as the file an engine reads (JSON is YAML too; CDI reads both by extension)."""
    return json.dumps(spec, indent=2, sort_keys=False) + "\n"


def config_text(profile: Profile) -> str:
    """The simulated driver's configuration the spec mounts: every GPU; the libraries keep those with nodes."""
    return render_config(profile, profile.gpus, require_device_nodes=True)


def unresolvable(names: Sequence[str]) -> str:
    """The CDI library's words for names no spec defines (podman, containerd and the NVIDIA runtime print them)."""
    return f"unresolvable CDI devices {', '.join(names)}"


def resolve(spec: Mapping[str, Any] | None, names: Sequence[str]) -> list[Mapping[str, Any]]:
    """The edits that apply, spec-wide first, then each named device's; ToolkitError naming what is unresolvable."""
    kind = spec.get("kind") if spec else None
    by_name = {d["name"]: d for d in (spec or {}).get("devices", [])}
    missing = [n for n in names if n.partition("=")[0] != kind or n.partition("=")[2] not in by_name]
    if spec is None or missing:
        raise ToolkitError(unresolvable(missing or list(names)))
    wanted = dict.fromkeys(n.partition("=")[2] for n in names)
    return [spec.get("containerEdits", {}), *(by_name[n]["containerEdits"] for n in wanted)]


def inject(profile: Profile, driver: SimDriver, names: Sequence[str], *, config_host_path: str,
           node_dir: str = toolkit.NO_NODE_DIR, lib_dir: str = toolkit.LIB_DIR, runtime: bool = False) -> Injection:
    """What a container that asked for CDI `names` gets on this host: the spec's edits, resolved.

    `runtime` marks the NVIDIA runtime's CDI mode (NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=...), whose
    refusal names the runtime; an engine's own resolution (podman --device) refuses in the engine's words.
    """
    spec = spec_for(profile, driver, config_host_path=config_host_path, node_dir=node_dir, lib_dir=lib_dir)
    try:
        edits = resolve(spec, names)
    except ToolkitError as exc:
        if runtime:
            raise ToolkitError(f"nvidia-container-runtime: error modifying OCI spec: failed to inject CDI devices: "
                               f"{exc}") from None
        raise
    nodes: dict[str, DeviceNode] = {}
    mounts: dict[str, Mount] = {}
    for edit in edits:
        for d in edit.get("deviceNodes", []):
            nodes.setdefault(d["path"], DeviceNode(d["hostPath"], d["path"], d.get("permissions", "rwm")))
        for m in edit.get("mounts", []):
            mounts.setdefault(m["containerPath"], Mount(m["hostPath"], m["containerPath"], "ro" in m["options"]))
    minors = {n for n in nodes if n.removeprefix("/dev/nvidia").isdigit()}
    gpus = tuple(g for g in profile.gpus if f"/dev/nvidia{g.minor}" in minors)
    return Injection(tuple(mounts.values()), tuple(nodes.values()), gpus, toolkit.DEFAULT_CAPABILITIES,
                     config_text(profile), True)
