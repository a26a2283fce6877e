"""The engine seam: what the runner needs from wherever cells run — an image per environment, a container
run with a time limit, all of a run cancelled, what the engine offers — and the types it exchanges.
The local Docker engine is one implementation (`refenv/engines/docker/engine.py`); the unit tests drive
the runner through a fake; the Slurm and Kubernetes engines are others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harness.schema.envelope import DiagnoseDocument
from refenv.errors import NoGpuRuntime
from refenv.model.matrix import Environment

if TYPE_CHECKING:
    from refenv.model.builds import EnvBuild
    from refenv.model.matrix import Host
    from refenv.model.profiles import PciDevice, Profile

Progress = Callable[[str, str], None]  # (environment, log line)

OUT = "/out"
RESULT = f"{OUT}/result.json"


@dataclass(frozen=True)
class ContainerSpec:
    """One container as plain data: what runs, what it mounts and may do, how it is labelled; the engine
    turns it into its own arguments (run/containers.py makes them, for cells and measurements)."""

    image: str
    command: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    labels: tuple[tuple[str, str], ...]
    binds: tuple[tuple[str, str, bool], ...]        # (host path, container path, read only)
    devices: tuple[str, ...] = ()                    # "host:container:perms"
    gpu_request: str | None = None                   # "all" or "0,1": --gpus for a real host
    runtime: str | None = None                       # "nvidia": a real host where NVIDIA_VISIBLE_DEVICES decides
    read_only: bool = True
    network: str = "none"
    cap_drop: tuple[str, ...] = ("ALL",)
    security_opt: tuple[str, ...] = ("no-new-privileges",)
    pids_limit: int = 1024
    mem_limit: str = "6g"
    tmpfs: tuple[tuple[str, str], ...] = (("/tmp", "rw,nosuid,nodev,size=1g"),)
    user: str | None = None
    entrypoint: tuple[str, ...] | None = None
    cpus: float | None = None                        # CPU quota: cells side by side must not oversubscribe
    cdi_devices: tuple[str, ...] = ()                # CDI names the engine resolves (podman --device KIND=NAME)
    cdi_specs: tuple[str, ...] = ()                  # host files: the CDI specs it resolves them from


@dataclass(frozen=True)
class Inventory:
    """What the engine is and offers, for the run's header."""

    server_version: str | None = None
    nvidia_runtime: bool | None = None


@dataclass(frozen=True)
class ImageRequest:
    """One environment's image: built from its lock (kept in `lock_file`), or `given` as it is."""

    environment: Environment
    lock_file: Path
    relock: bool = False
    given: str | None = None        # an image to run as it is (a pulled release), not built


@dataclass(frozen=True)
class RunOutcome:
    """How a container ended: its exit code, or killed at its time limit, or killed for memory."""

    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    logs: str


class CellEngine(Protocol):
    """The runner's engine. `run` and `cancel` are called from several threads at once."""

    def inventory(self) -> Inventory:
        """The engine's version and whether it can give a container a GPU."""
        ...

    def ensure_image(self, request: ImageRequest, progress: Progress) -> EnvBuild:
        """The environment's image, built or found; a failure is a FAILED record, never an exception."""
        ...

    def image_id(self, ref: str) -> str | None:
        """The id of an image the engine holds, or None."""
        ...

    def image_labels(self, ref: str) -> dict[str, str] | None:
        """An image's labels, or None when the engine does not hold it."""
        ...

    def run_here(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        """Run a container beside the images, on this machine (reading an image), wherever the cells run."""
        ...

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        """Why a container of `image` cannot get a GPU here, or None when it can."""
        ...

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        """Run the container to completion or kill it at `timeout`; it never outlives the call."""
        ...

    def cancel(self, run_id: str) -> int:
        """Stop and remove every container of the run (and builds in flight); how many were removed."""
        ...


@dataclass(frozen=True)
class NodeProbe:
    """What one node said: its diagnosis document, or why there is none."""

    node: str
    features: tuple[str, ...] = ()
    gres: str = ""
    document: DiagnoseDocument | None = None
    error: str | None = None


@dataclass(frozen=True)
class RealHost:
    """What probing a real host found where its cells run: its driver and GPUs, or why it has none."""

    profile: Profile | None
    node: str | None = None
    error: str | None = None     # why the host's cells cannot get a GPU there
    bus: tuple[PciDevice, ...] | None = None  # the node's PCI bus where no driver answers (None: unknown)


@runtime_checkable
class ReleasesImages(Protocol):
    """An engine that can give back the disk of an environment's image once its cells are judged."""

    def release(self, build: EnvBuild) -> None:
        """Remove the image the build made (and what only it stands on) from the engine."""
        ...


@runtime_checkable
class ProbesRealHosts(Protocol):
    """An engine whose real hosts are elsewhere (cluster nodes): it probes them instead of this machine."""

    def probe_real_hosts(self, hosts: tuple[Host, ...]) -> dict[str, RealHost]:
        """Each real host, from a probe job where its cells will run (and pinned there), by name."""
        ...
