"""The container for one cell or measurement (pure): what it mounts, what it may do, how it is labelled.

Every cell runs with networking off, a read-only root, every capability dropped, no new privileges,
pid and memory limits, and refenv's labels. The spec is the engine seam's type (refenv/engines/seam.py);
each engine turns it into its own arguments.
"""

from __future__ import annotations

from dataclasses import replace

from harness.inputs import InputError
from refenv import paths
from refenv.engines.seam import OUT, RESULT, ContainerSpec
from refenv.errors import RefenvError
from refenv.model import accepts
from refenv.model.labels import CELL, KIND, MANAGED, RUN
from refenv.model.matrix import RunSettings, Scenario
from refenv.run.toolkit import Injection

LDCACHE = "/etc/ld.so.cache"
# Where a simulated host's PCI bus is mounted, and the variable that names it to the harness (the harness's
# harness/gather/pci.py SIMULATED_ROOT_ENV; tests/unit/test_classify_pci.py holds the two together).
PCI_VIEW = "/etc/refenv/pci"
SIMULATED_ROOT_ENV = "REFENV_SIMULATED_PCI"
HARNESS_MOUNT = "/opt/refenv-harness"
__all__ = ["HARNESS_MOUNT", "LDCACHE", "OUT", "RESULT", "ContainerSpec", "cell_spec", "container_env", "harness_bind",
           "ldcache_spec", "measure_spec", "with_mounted_harness"]


def harness_bind() -> tuple[str, str, bool]:
    """This checkout's harness, read-only, where a team image's Python finds it."""
    return (str(paths.harness_dir()), f"{HARNESS_MOUNT}/harness", True)


def with_mounted_harness(spec: ContainerSpec, interpreter: str) -> ContainerSpec:
    """The container of a team image: the harness is not in it, so it is mounted and run with the image's own
    Python (a recipe image has it baked in and as its entrypoint)."""
    env = dict(spec.environment)
    env["PYTHONPATH"] = HARNESS_MOUNT
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return replace(spec, entrypoint=(interpreter, "-m", "harness"), binds=(*spec.binds, harness_bind()),
                   environment=tuple(sorted(env.items())))


def container_env(scenario: Scenario, gpu_request: str | None) -> dict[str, str]:
    """The container's environment: the scenario's variables, plus what `docker run --gpus` adds.

    Docker's --gpus sets NVIDIA_VISIBLE_DEVICES (and the default capabilities) in the container
    (moby daemon/nvidia_linux.go), which is what the toolkit and the harness then read.
    """
    env = {"XDG_CACHE_HOME": "/tmp/cache", "HOME": "/home/refenv"}
    if gpu_request is not None:
        env["NVIDIA_VISIBLE_DEVICES"] = gpu_request
        env["NVIDIA_DRIVER_CAPABILITIES"] = "compute,utility"
    env.update(scenario.env_dict)
    for key, value in env.items():
        try:
            # A NUL or a newline in CUDA_VISIBLE_DEVICES (say, from a pasted report) never reaches a container.
            accepts.env_value(value, key)
        except InputError as exc:
            raise RefenvError(f"scenario {scenario.name}: {exc}") from None
    return env


def cell_spec(image: str, cell_id: str, run_id: str, out_dir: str, scenario: Scenario, settings: RunSettings,
              injection: Injection | None = None, ldcache: str | None = None, real_host: bool = False,
              threads: int = 1, cdi_specs: tuple[str, ...] = (), pci_dir: str | None = None) -> ContainerSpec:
    """Everything about the cell's container; `injection` is the simulated toolkit's, for simulated hosts.

    `real_host`: the engine itself is asked for the GPUs (--gpus, the NVIDIA runtime), as on a real host or
    a simulated one without the NVIDIA runtime. A scenario's CDI devices go to the engine with `cdi_specs`,
    the specs it resolves them from (none: the host has no spec)."""
    gpu_request = None
    if scenario.gpu_access and "NVIDIA_VISIBLE_DEVICES" not in scenario.env_dict:
        gpu_request = "all" if scenario.gpus == "all" else scenario.gpus.removeprefix("device=")
    binds: list[tuple[str, str, bool]] = [(out_dir, OUT, False)]
    devices: list[str] = []
    if injection is not None:
        binds += [(m.host_path, m.container_path, True) for m in injection.mounts]
        devices += [f"{d.host_path}:{d.container_path}:{d.permissions}" for d in injection.devices]
    if ldcache and ((injection is not None and injection.mounts) or (scenario.devices and cdi_specs)):
        # The toolkit refreshes the container's linker cache after it mounts the driver (through CDI too:
        # nvidia-ctk's update-ldcache hook); a read-only root cannot, so the cache made for this image and
        # driver is mounted in its place.
        binds.append((ldcache, LDCACHE, True))
    if pci_dir is not None:
        # A simulated host's PCI bus, named to the harness as the simulated driver's configuration is
        # (harness/gather/pci.py); without it the harness reads the machine's own /sys/bus/pci.
        binds.append((pci_dir, PCI_VIEW, True))
    command = ("cell", "--out", RESULT, "--probes", settings.probes, "--memory", settings.memory_check,
               "--torch-timeout", f"{max(30.0, settings.timeout_s - 30):g}",
               "--init-timeout", f"{settings.init_timeout_s:g}")
    labels = ((MANAGED, "true"), (KIND, "cell"), (RUN, run_id), (CELL, cell_id))
    env = container_env(scenario, gpu_request if real_host or injection else None)
    # Cells run side by side: each gets its share of the cores, and its thread pools are told so (an
    # OpenMP pool larger than its CPU share spins and slows every cell several times over).
    env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)})
    if pci_dir is not None:
        env[SIMULATED_ROOT_ENV] = PCI_VIEW
    return ContainerSpec(
        image=image, command=command,
        environment=tuple(sorted(env.items())), cpus=float(threads),
        labels=labels, binds=tuple(binds), devices=tuple(devices),
        gpu_request=gpu_request if real_host else None,
        runtime="nvidia" if real_host and scenario.gpu_access and gpu_request is None else None,
        pids_limit=settings.pids, mem_limit=settings.memory,
        cdi_devices=scenario.devices, cdi_specs=cdi_specs if scenario.devices else (),
    )


def ldcache_spec(image: str, out_dir: str, libs: dict[str, str], run_id: str) -> ContainerSpec:
    """A one-off container that runs ldconfig with the driver's libraries in place and copies the cache out,
    beside the image's C library version (`getconf GNU_LIBC_VERSION`: "glibc 2.31"; "none" without glibc)."""
    binds = [(out_dir, OUT, False), *((host, target, True) for target, host in sorted(libs.items()))]
    command = (f"ldconfig && cp {LDCACHE} {OUT}/ld.so.cache && "
               f"{{ getconf GNU_LIBC_VERSION 2>/dev/null || echo none; }} > {OUT}/glibc")
    return ContainerSpec(
        image=image, command=(command,), environment=(),
        labels=((MANAGED, "true"), (KIND, "ldcache"), (RUN, run_id)),
        binds=tuple(binds), read_only=False, user="0", entrypoint=("sh", "-c"),
        tmpfs=(), pids_limit=64, mem_limit="512m",
    )


def measure_spec(image: str, measure_id: str, run_id: str, out_dir: str, settings: RunSettings, device: str,
                 threads: int = 1) -> ContainerSpec:
    """The container of one measurement: a cell's confinement, on the CPU, or with every GPU of a real host."""
    on_gpu = device == "cuda"
    scenario = Scenario("measure", "all" if on_gpu else "none")
    base = cell_spec(image, measure_id, run_id, out_dir, scenario, settings, real_host=on_gpu, threads=threads)
    command = ("measure", "--out", RESULT, "--device", device, "--probes", settings.probes,
               "--memory", settings.memory_check)
    return replace(base, command=command, labels=((MANAGED, "true"), (KIND, "measure"), (RUN, run_id),
                                                  (CELL, measure_id)))
