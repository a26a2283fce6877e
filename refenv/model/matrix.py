"""The matrix model: environments × hosts × scenarios, and the cells they make (plain data)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from harness import compat
from harness.gather.bounded import INIT_TIMEOUT_S
from refenv.model.cells import cell_id
from refenv.model.placement import KubePlacement, SlurmPlacement
from refenv.model.profiles import Profile

HOST_KINDS = ("none", "simulated", "real")


@dataclass(frozen=True)
class Bootstrap:
    """How to make the base image offline: debootstrap a Debian suite with Python, then `docker import`."""

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    packages: tuple[str, ...] = ("python3", "python3-venv", "passwd")


@dataclass(frozen=True)
class Base:
    """The base image: pulled from a registry when `image` is set and reachable, else bootstrapped."""

    image: str | None = None
    bootstrap: Bootstrap = field(default_factory=Bootstrap)


RECIPE, IMAGE, DOCKERFILE = "recipe", "image", "dockerfile"
SOURCES = (RECIPE, IMAGE, DOCKERFILE)


NETWORK_DEFAULT = "default"
NETWORKS = (NETWORK_DEFAULT, "host", "none")


@dataclass(frozen=True)
class TeamImage:
    """Where an environment that is not refenv's recipe comes from: an existing image, or a team's Dockerfile.

    The harness is not baked into such an image: it is mounted read-only and run with the image's own Python
    (`interpreter`)."""

    source: str                                   # IMAGE or DOCKERFILE
    image: str | None = None                      # image: REF
    dockerfile: str | None = None                 # dockerfile: PATH (absolute, resolved beside matrix.yaml)
    context: str | None = None                    # the build context (absolute); the Dockerfile's folder if unset
    build_args: tuple[tuple[str, str], ...] = ()
    interpreter: str = "python3"                  # the image's Python: a name on its PATH or an absolute path
    # How the Dockerfile is built, as `docker build` takes it (refenv/builder/team.py):
    target: str | None = None                     # --target: a stage of a multi-stage Dockerfile
    platform: str | None = None                   # --platform: linux/amd64, linux/arm64/v8
    network: str = NETWORK_DEFAULT                # --network: default (the builder's), host, or none (hermetic)
    secrets: tuple[Secret, ...] = ()              # --secret: RUN --mount=type=secret,id=ID (BuildKit's syntax)


@dataclass(frozen=True)
class Secret:
    """A build secret: its id, and where its value comes from (an environment variable or a file); the value
    itself is never part of a matrix, a record or an image tag."""

    id: str
    env: str | None = None                        # the variable that holds it
    file: str | None = None                       # the file that holds it (absolute)


@dataclass(frozen=True)
class Environment:
    """One image: a Python, a torch build (version + variant), extra packages; or a team's own image (`team`),
    whose torch, variant, Python and architectures are read from the image itself (refenv/run/imagefacts.py)."""

    name: str
    torch: str                   # "2.14.1"; "" for a team image not read yet
    variant: str                 # "cpu" or "cu130"; "" for a team image not read yet
    python: str = "3.11"
    packages: tuple[str, ...] = ()
    index_url: str | None = None  # where the variant comes from; None = PyPI's default build
    base: Base = field(default_factory=Base)
    team: TeamImage | None = None            # None: refenv's own recipe
    arch: tuple[str, ...] | None = None      # read from the image; None: from harness.compat's tables

    @property
    def cuda(self) -> str | None:
        return compat.variant_cuda(self.variant)

    @property
    def source(self) -> str:
        return self.team.source if self.team else RECIPE

    @property
    def known(self) -> bool:
        """Whether its torch is known (a recipe's always; a team image's once read)."""
        return bool(self.torch and self.variant)

    @property
    def requirements(self) -> tuple[str, ...]:
        """What the lock resolves: torch pinned, the harness's NVML bindings, what this torch release imports
        at run time without declaring it (compat.json `requires`), the extra packages."""
        release = compat.torch_release(self.torch)
        return (f"torch=={self.torch}", "nvidia-ml-py", *(release.requires if release else ()), *self.packages)


@dataclass(frozen=True)
class Host:
    """The driver a container sees: none, a simulated profile, or the machine's real GPUs.

    A simulated host names a shipped profile, or carries one made on the fly (`invoke reproduce`).
    """

    name: str
    kind: str
    profile: str | None = None
    description: str = ""
    inline: Profile | None = None
    slurm: SlurmPlacement | None = None          # where a real host's cells run on a Slurm cluster
    kubernetes: KubePlacement | None = None      # which Kubernetes nodes a real host's cells run on


@dataclass(frozen=True)
class Scenario:
    """How a container is started: GPU access, and the variables that decide visibility."""

    name: str
    gpus: str = "all"                                 # "all", "none", or "device=0,1"
    env: tuple[tuple[str, str], ...] = ()
    description: str = ""
    devices: tuple[str, ...] = ()                     # CDI names, e.g. "nvidia.com/gpu=all" (then gpus is "none")

    @property
    def gpu_access(self) -> bool:
        return self.gpus != "none"

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)


MODES = ("quick", "full", "off")  # of run.probes and run.memory_check (`harness measure --probes/--memory`)


@dataclass(frozen=True)
class RunSettings:
    timeout_s: float = 240.0
    # How long the driver's initialisation may take in a cell before the harness reports it hung (cell
    # --init-timeout); a cell whose timeout_s is shorter is killed first, and says TIMEOUT.
    init_timeout_s: float = INIT_TIMEOUT_S
    memory: str = "6g"
    pids: int = 1024
    parallel: int = 0              # 0 = the number of cores
    probes: str = "quick"          # "quick", "full" or "off"
    memory_check: str = "quick"    # "quick", "full" or "off"
    backend: str = "local"         # "local", "slurm" or "kubernetes": where cells run
    engine: str = "docker"         # the local engine: "docker" or "podman"
    launcher: str = "docker"       # on Slurm nodes: "docker", "pyxis" or "oci"


@dataclass(frozen=True)
class Matrix:
    path: str
    environments: tuple[Environment, ...]
    hosts: tuple[Host, ...]
    scenarios: tuple[Scenario, ...]
    run: RunSettings = field(default_factory=RunSettings)

    def environment(self, name: str) -> Environment:
        return next(e for e in self.environments if e.name == name)

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def scenario(self, name: str) -> Scenario:
        return next(s for s in self.scenarios if s.name == name)


@dataclass(frozen=True)
class CellSpec:
    environment: Environment
    host: Host
    scenario: Scenario

    @property
    def id(self) -> str:
        return cell_id(self.environment.name, self.host.name, self.scenario.name)


def _pick(names: list[str], patterns: list[str] | None, what: str) -> list[str]:
    """Names matching any of the comma-separated glob patterns; an unmatched pattern is an error."""
    if not patterns:
        return names
    wanted = [p.strip() for spec in patterns for p in spec.split(",") if p.strip()]
    chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in wanted)]
    missing = [p for p in wanted if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    if missing:
        from refenv.errors import RefenvError

        raise RefenvError(f"no {what} matches {', '.join(missing)}", f"known {what}s: {', '.join(names)}")
    return chosen


def select(matrix: Matrix, env: list[str] | None = None, host: list[str] | None = None,
           scenario: list[str] | None = None) -> Matrix:
    """The slice of the matrix that the CLI's --env/--host/--scenario patterns name."""
    envs = _pick([e.name for e in matrix.environments], env, "environment")
    hosts = _pick([h.name for h in matrix.hosts], host, "host")
    scenarios = _pick([s.name for s in matrix.scenarios], scenario, "scenario")
    return Matrix(matrix.path, tuple(e for e in matrix.environments if e.name in envs),
                  tuple(h for h in matrix.hosts if h.name in hosts),
                  tuple(s for s in matrix.scenarios if s.name in scenarios), matrix.run)


# At about a second a cell on two cores, 10,000 cells are hours of work: a larger run is refused unless its
# size is confirmed (`invoke matrix --max-cells N`), so a mistyped matrix never plans a quarter of a million.
MAX_CELLS = 10_000


def check_size(matrix: Matrix, max_cells: int = MAX_CELLS) -> int:
    """The number of cells; RefenvError with the number when it passes `max_cells`."""
    sizes = (len(matrix.environments), len(matrix.hosts), len(matrix.scenarios))
    total = sizes[0] * sizes[1] * sizes[2]
    if total > max_cells:
        from refenv.errors import RefenvError

        raise RefenvError(f"{total:,} cells ({sizes[0]} environments x {sizes[1]} hosts x {sizes[2]} scenarios): "
                          f"more than the {max_cells:,} a run takes without confirmation",
                          f"run a slice (--env, --host, --scenario), or confirm the size with --max-cells {total}")
    return total


def cells(matrix: Matrix) -> list[CellSpec]:
    return [CellSpec(e, h, s) for e in matrix.environments for h in matrix.hosts for s in matrix.scenarios]
