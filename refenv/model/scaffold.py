"""`refenv init`: the matrix.yaml a team starts from, one environment per Dockerfile (or image) of its repository.

Finding the Dockerfiles reads the folder (`find_dockerfiles`); everything else is pure text over plain data, and
what it writes is a matrix refenv's own loader reads (tests/unit/test_scaffold.py parses every shape of it).
The hosts are the driver branches the team runs (`--drivers 535,570,580`), else every shipped branch and every
fault profile; the scenarios are the ways a container gets (or does not get) the GPU on Docker.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.inputs import InputError
from refenv.model import profiles
from refenv.model.accepts import ENV_NAME_RE, NAME_MAX, image_reference

# Docker's and Podman's file names: Dockerfile, Dockerfile.gpu, gpu.Dockerfile, Containerfile.
_DOCKERFILE_RE = re.compile(r"(?:Dockerfile|Containerfile)(?:\.[A-Za-z0-9_.-]+)?|[A-Za-z0-9_.-]+\.(?:Dockerfile|"
                            r"Containerfile)", re.I)
# Folders a build never comes from: version control, dependencies, build outputs, refenv's own results.
_SKIPPED = frozenset({"node_modules", "results", "dist", "build", "venv", "site-packages", "__pycache__"})
MAX_DEPTH = 4
MAX_FOUND = 32

# The scenarios of refenv's default matrix that Docker can start (CDI needs Podman or Docker 25+).
SCENARIOS: tuple[tuple[str, str, str], ...] = (
    ("gpu", "gpus: all", "docker run --gpus all"),
    ("no-gpu", "gpus: none", "docker run without --gpus"),
    ("cvd-empty", 'gpus: all\n    env: {CUDA_VISIBLE_DEVICES: ""}', "CUDA_VISIBLE_DEVICES set and empty"),
    ("nvd-void", "gpus: all\n    env: {NVIDIA_VISIBLE_DEVICES: void}",
     "NVIDIA_VISIBLE_DEVICES=void: the toolkit injects nothing"),
)


@dataclass(frozen=True)
class Planned:
    """One environment `refenv init` writes: a Dockerfile (relative to the matrix's folder) or an image."""

    name: str
    dockerfile: str | None = None
    image: str | None = None


def find_dockerfiles(folder: Path) -> list[str]:
    """The Dockerfiles under `folder` (relative POSIX paths, sorted, at most MAX_FOUND), hidden folders and
    dependency or output folders left out."""
    found: list[str] = []
    for here, dirs, files in os.walk(folder):
        depth = len(Path(here).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED and depth < MAX_DEPTH)
        found += [(Path(here) / f).relative_to(folder).as_posix() for f in sorted(files) if _DOCKERFILE_RE.fullmatch(f)]
    return sorted(found)[:MAX_FOUND]


def environment_name(text: str) -> str:
    """`text` as an environment name (lowercase, '-' between words; refenv/model/accepts.py's rule)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    name = "-".join(words)[:NAME_MAX].strip("-")
    return name if name and ENV_NAME_RE.fullmatch(name) else "team"


def dockerfile_name(rel: str, project: str) -> str:
    """An environment's name from its Dockerfile's path: the folder that holds it (the project's own name at
    the top) and what the file name adds ('Dockerfile.gpu', 'gpu.Dockerfile' -> 'gpu')."""
    path = Path(rel)
    stem = re.sub(r"(?i)^(?:dockerfile|containerfile)\.?|\.?(?:dockerfile|containerfile)$", "", path.name)
    where = path.parent.name if path.parent.name else project
    return environment_name("-".join(p for p in (where, stem) if p))


def image_name(ref: str) -> str:
    """An environment's name from an image reference: its last path component and tag
    ('nvcr.io/nvidia/pytorch:24.05-py3' -> 'pytorch-24-05-py3')."""
    last = ref.split("@", 1)[0].rsplit("/", 1)[-1]
    return environment_name(last.replace(":", "-"))


def unique(names: Iterable[str]) -> list[str]:
    """The names, a later duplicate numbered ('train', 'train-2')."""
    out: list[str] = []
    for name in names:
        candidate, n = name, 1
        while candidate in out:
            n += 1
            candidate = f"{name[:NAME_MAX - 4]}-{n}"
        out.append(candidate)
    return out


def plan(dockerfiles: Sequence[str], images: Sequence[str], project: str) -> list[Planned]:
    """The environments to write: one per Dockerfile, then one per image (each reference checked)."""
    for ref in images:
        image_reference(ref, "--image")
    names = unique([dockerfile_name(d, project) for d in dockerfiles] + [image_name(i) for i in images])
    made = [Planned(n, dockerfile=d) for n, d in zip(names, dockerfiles, strict=False)]
    return made + [Planned(n, image=i) for n, i in zip(names[len(dockerfiles):], images, strict=True)]


def branch_profiles() -> list[profiles.Profile]:
    """The shipped driver branches: a profile each, without faults of its own."""
    return [p for p in profiles.all() if p.name == f"r{p.branch}"]


def hosts(drivers: str | None) -> list[str]:
    """The simulated hosts for `--drivers` ('535,570,580' or 'r535,r580'), else every shipped profile (each
    branch, then the fault profiles); InputError naming the shipped branches for one refenv has not."""
    if not drivers:
        return [p.name for p in profiles.all()]
    shipped = {p.branch: p.name for p in branch_profiles()}
    chosen: list[str] = []
    for word in (w.strip().lower().removeprefix("r") for w in drivers.split(",")):
        if not word.isdigit() or int(word) not in shipped:
            raise InputError(f"--drivers: {word or 'an empty name'!r} is not a driver branch refenv simulates; "
                             f"it has {', '.join(str(b) for b in sorted(shipped))}")
        if shipped[int(word)] not in chosen:
            chosen.append(shipped[int(word)])
    return chosen


def _environment_text(env: Planned) -> str:
    if env.image is not None:
        return (f"  {env.name}:\n    image: {env.image}               # used as it is: here, else pulled\n"
                "    # python: /opt/conda/bin/python   # the image's Python, when python3 is not it\n")
    return (f"  {env.name}:\n    dockerfile: {env.dockerfile}\n"
            "    # context: .                    # the build context (default: the Dockerfile's folder)\n"
            "    # target: runtime               # a stage of a multi-stage Dockerfile\n"
            "    # build_args: {CUDA: \"12.8\"}\n"
            "    # secrets: {pip_token: {env: PIP_TOKEN}}   # RUN --mount=type=secret,id=pip_token\n"
            "    # network: none                 # a hermetic build (default: the builder's network, as docker build)\n"
            "    # platform: linux/amd64\n"
            "    # python: /opt/conda/bin/python   # the image's Python, when python3 is not it\n")


def matrix_text(envs: Sequence[Planned], host_names: Sequence[str]) -> str:
    """The commented matrix.yaml."""
    known = {p.name: p for p in profiles.all()}
    lines = ["# refenv's matrix for this repository (written by `refenv init`; edit freely).",
             "# Every environment runs on every host under every scenario: `refenv matrix` builds each image,",
             "# runs the harness in it against each driver (refenv's simulated driver: no GPU needed) and",
             "# checks what the compatibility rules predict against what torch does. Results: results/.",
             "version: 1", "", "environments:"]
    lines += [_environment_text(e).rstrip("\n") for e in envs]
    lines += ["", "hosts:", "  none:", "    kind: none", "    description: no driver injected at all"]
    for name in host_names:
        lines += [f"  {name}:", "    kind: simulated", f"    profile: {name}",
                  f"    description: {_yaml_text(known[name].description)}"]
    lines += ["  # real:                          # this machine's own GPUs, where it has them",
              "  #   kind: real", "", "scenarios:"]
    for name, body, description in SCENARIOS:
        lines += [f"  {name}:", f"    {body}", f"    description: {_yaml_text(description)}"]
    lines += ["", "run:", "  probes: quick                     # off | quick | full: measured once per environment",
              ""]
    return "\n".join(lines)


def _yaml_text(text: str) -> str:
    """A one-line YAML string, quoted (descriptions hold ':' and '#')."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
