"""What a container on a simulated host gets, whichever way it asked (pure): the one entry point of planning
and prediction.

Three ways in: the engine's own CDI resolution (a scenario's `devices:`, podman --device nvidia.com/gpu=all);
the NVIDIA runtime's CDI mode (CDI names in NVIDIA_VISIBLE_DEVICES, resolved against the same spec, its
refusal in the runtime's words); and the runtime's classic enumeration (--gpus, NVIDIA_VISIBLE_DEVICES
indices and UUIDs: refenv/run/toolkit.py). The CDI spec is itself built from the toolkit's description
(refenv/run/cdi.py), so the three cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from refenv.builder.driverfiles import SimDriver
from refenv.model.matrix import Scenario
from refenv.model.profiles import Profile
from refenv.run import cdi, toolkit
from refenv.run.toolkit import Injection


def selection(scenario: Scenario) -> str | None:
    """The --gpus selection, or None when NVIDIA_VISIBLE_DEVICES decides (the NVIDIA runtime without --gpus)."""
    if "NVIDIA_VISIBLE_DEVICES" in scenario.env_dict:
        return None
    return "all" if scenario.gpus == "all" else scenario.gpus.removeprefix("device=")


# What an image's own ENV may set that decides what a container sees (NVIDIA container toolkit docs,
# docker-specialized.md: the runtime reads the container's whole environment, the image's included).
VISIBILITY = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")


def in_image(scenario: Scenario, image_env: Mapping[str, str]) -> Scenario:
    """The scenario as a container of an image whose ENV is `image_env` has it, as the toolkit reads it.

    The container's environment is the image's ENV beneath `docker run -e` (Docker merges them, the run's value
    winning). A --gpus request then appends its own NVIDIA_VISIBLE_DEVICES to the process environment, and the
    toolkit takes the last value (moby daemon/nvidia_linux.go, setNvidiaGPUs): an image's NVIDIA_VISIBLE_DEVICES
    decides only where no --gpus is made (the NVIDIA runtime without it). --gpus sets NVIDIA_DRIVER_CAPABILITIES
    only for capabilities it names (`--gpus all` names none), so an image's capabilities hold under it, and its
    CUDA_VISIBLE_DEVICES is what the CUDA driver in the container reads. Pure.
    """
    gpus_request = scenario.gpu_access and not scenario.devices and selection(scenario) is not None
    baked = [(k, v) for k, v in image_env.items() if k in VISIBILITY and k not in scenario.env_dict
             and not (k == "NVIDIA_VISIBLE_DEVICES" and gpus_request)]
    return replace(scenario, env=(*baked, *scenario.env)) if baked else scenario


def inject(profile: Profile, driver: SimDriver, scenario: Scenario, *, config_host_path: str,
           node_dir: str = toolkit.NO_NODE_DIR) -> Injection:
    """The mounts, nodes and GPUs the container gets; ToolkitError with the refusal when it would not start."""
    if scenario.devices:
        return cdi.inject(profile, driver, scenario.devices, config_host_path=config_host_path, node_dir=node_dir)
    value = selection(scenario)
    names = toolkit.cdi_names(scenario.env_dict.get("NVIDIA_VISIBLE_DEVICES") if value is None else value)
    if scenario.gpu_access and names is not None and not profile.faults.no_runtime:
        return cdi.inject(profile, driver, names, config_host_path=config_host_path, node_dir=node_dir,
                          runtime=True)
    return toolkit.inject(profile, driver, scenario.env_dict, gpu_access=scenario.gpu_access,
                          config_host_path=config_host_path, gpus=value, node_dir=node_dir)
