"""The podman command lines for a container (pure), and podman's refusals in refenv's words.

Why the CLI and not podman's Docker-compatible API through the docker SDK: the CLI needs no service
(`podman system service`) to be started and kept alive beside each run; CDI devices (`--device
nvidia.com/gpu=all`), explicit ulimits and cgroup permissions on `--device` are documented for the CLI,
while the compatibility API maps Docker's fields onto them with its own gaps; and each call's exit
status and words are plain. Podman's CLI calls take tens of milliseconds here, so a container's five
calls (create, start, wait, inspect, rm) cost little beside the container itself.
"""

from __future__ import annotations

import re

from harness import catalogue
from harness.catalogue.remedies import render
from refenv.engines.seam import ContainerSpec
from refenv.errors import NotStarted, RefenvError

# Podman's runc fails to start a container under its default rlimits on this kind of host ("error setting
# rlimit type 7: operation not permitted": the default nofile exceeds what the sandbox's hard limit allows);
# explicit limits within the host's make it start (checked on Debian 12, podman 4.3).
ULIMITS = ("nofile=1024:20000", "nproc=4096:4096")
# The catalogue's rows for an engine refusing a container's GPUs (the cell is then NOT_RUN, never an ERROR).
GPU_REFUSALS = ("cdi.unresolvable", "podman.no_runtime", "docker.no_gpu_runtime", "docker.unknown_runtime",
                "docker.no_cdi")


def create_args(spec: ContainerSpec, name: str) -> list[str]:
    """`podman create` arguments for a container spec (after the word `create`)."""
    args = ["--name", name, "--network", spec.network, "--pids-limit", str(spec.pids_limit),
            "--memory", spec.mem_limit, "--memory-swap", spec.mem_limit]
    for limit in ULIMITS:
        args += ["--ulimit", limit]
    if spec.read_only:
        args += ["--read-only", "--read-only-tmpfs=false"]
    for cap in spec.cap_drop:
        args += ["--cap-drop", cap]
    for opt in spec.security_opt:
        args += ["--security-opt", opt]
    for key, value in spec.labels:
        args += ["--label", f"{key}={value}"]
    for key, value in spec.environment:
        args += ["--env", f"{key}={value}"]
    for target, options in spec.tmpfs:
        args += ["--tmpfs", f"{target}:{options}"]
    for source, target, ro in spec.binds:
        args += ["--mount", f"type=bind,source={source},destination={target}" + (",ro=true" if ro else "")]
    for device in spec.devices:
        args += ["--device", device]
    for device in spec.cdi_devices:
        args += ["--device", device]
    if spec.gpu_request is not None:
        # Podman gives GPUs through CDI (podman 5's --gpus is the same request): every GPU, or those named.
        ids = ["all"] if spec.gpu_request == "all" else spec.gpu_request.split(",")
        for gpu in ids:
            args += ["--device", f"nvidia.com/gpu={gpu}"]
    if spec.runtime is not None:
        args += ["--runtime", spec.runtime]
    if spec.user is not None:
        args += ["--user", spec.user]
    if spec.cpus is not None:
        args += ["--cpus", f"{spec.cpus:g}"]
    if spec.entrypoint is not None:
        args += ["--entrypoint", spec.entrypoint[0] if len(spec.entrypoint) == 1 else _json(spec.entrypoint)]
    return [*args, spec.image, *spec.command]


def _json(items: tuple[str, ...]) -> str:
    import json

    return json.dumps(list(items))


def wants_gpu(spec: ContainerSpec) -> bool:
    return bool(spec.cdi_devices or spec.gpu_request is not None or spec.runtime is not None)


def translate(words: str, spec: ContainerSpec | None = None) -> RefenvError:
    """Podman's error output as refenv's error: a refusal of the container's GPUs is NotStarted (the cell
    is NOT_RUN with podman's words and the catalogue's fix), anything else a RefenvError."""
    # Podman names the container by its 64-hex id; the cell's reason needs its words, not the id.
    text = re.sub(r'container "[0-9a-f]{64}": ', "container: ", " ".join(words.strip().split())) \
        or "podman failed and said nothing"
    hit = catalogue.find(text, GPU_REFUSALS)
    if hit is not None or (spec is not None and wants_gpu(spec) and "CDI" in text):
        remedy = hit.entry.remedy if hit is not None else None
        hint = "; ".join(render(remedy)) if remedy is not None else None
        return NotStarted(f"podman refused the container's GPUs (podman said: {text})", hint)
    return RefenvError(f"podman: {text}")
