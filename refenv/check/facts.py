"""What a Dockerfile (or an image's inspect) says about the environment it makes, each fact with its line (plain data).

These are the facts an image probe gives the matrix (refenv/run/imagefacts.py: torch's version and CUDA, the
Python, NVIDIA_REQUIRE_CUDA, the labels), read without building: a fact keeps the file and line it came from, so
a finding or a prediction can say where to change it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Where:
    """A file and a 1-based line in it ('Dockerfile', 12); line 0 for what has no line (an image's inspect)."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Fact:
    """One value and where it was read."""

    value: str
    where: Where


@dataclass(frozen=True)
class Requirement:
    """A package an install line asks for: 'torch', '==2.6.0+cu126' (its specifier, empty when unpinned)."""

    name: str                      # normalised: lower case, '-' for '_'
    specifier: str                 # '==2.6.0+cu126', '>=2.4,<2.6', '' (unpinned), or a wheel's exact version
    where: Where
    text: str = ""                 # as written


@dataclass(frozen=True)
class Install:
    """One package-manager command of a RUN line: pip, uv pip, uv sync, conda or mamba."""

    tool: str                      # 'pip', 'uv pip', 'uv sync', 'conda', 'mamba'
    requirements: tuple[Requirement, ...]
    index_urls: tuple[Fact, ...] = ()       # --index-url, -i, [[tool.uv.index]] urls
    extra_index_urls: tuple[Fact, ...] = ()
    channels: tuple[Fact, ...] = ()         # conda -c
    where: Where = Where("")


@dataclass(frozen=True)
class Base:
    """What the stage's FROM image is known to hold: a CUDA base, a PyTorch image, an NGC release, an inspected
    image, or nothing known (a plain image, whose torch comes from the install lines)."""

    image: str
    kind: str                      # 'nvidia-cuda', 'pytorch', 'ngc', 'inspected', 'plain'
    cuda: str | None = None        # '12.4.1' for a CUDA base (its toolkit or runtime); None when none or unknown
    torch: str | None = None       # the torch the image ships ('2.6.0+cu124', '2.10.0a0')
    variant: str | None = None     # 'cu124', 'cpu'
    python: str | None = None
    min_driver: str | None = None  # the release's documented driver floor (NGC)
    flavour: str = ""              # nvidia/cuda: 'base', 'runtime', 'devel', 'cudnn-runtime', ...
    source: str = ""               # where what is known of it comes from


@dataclass(frozen=True)
class DockerfileFacts:
    """The final stage's environment as the Dockerfile makes it."""

    path: str
    stage: str                                     # the stage judged ('final' stage's name, or its index)
    base: Base
    from_line: Where
    installs: tuple[Install, ...] = ()
    env: dict[str, Fact] = field(default_factory=dict)       # ENV of the stage chain, and the base image's
    labels: dict[str, Fact] = field(default_factory=dict)
    apt: tuple[Fact, ...] = ()                     # packages of apt-get/apt/yum/dnf install lines
    files_read: tuple[str, ...] = ()               # requirements, pyproject and lock files read through COPY
    notes: tuple[str, ...] = ()                    # what was seen and could not be read (a file outside the context)
