"""Environment images: a content-addressed plan (pure), and building what the plan names (through the engine).

An environment is two images. The dependencies image is the base plus /opt/venv, installed by a
container that has no network and sees the wheelhouse read-only (`uv pip install --no-index
--require-hashes`), then committed: the classic builder has no build mounts, and sending a 4 GB
wheelhouse through its build context cost 2.7x a plain pip install (measured here: 119 s vs 43 s).
The environment image is built from `refenv/images/env.Dockerfile.j2` on top of it with the classic builder.
Both tags are digests of everything that goes in, so an unchanged environment is never rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2

from harness import __version__ as harness_version
from harness import compat
from refenv import paths
from refenv.builder.context import tar_context
from refenv.builder.store import ImageStore
from refenv.builder.wheelhouse import Lock, requirements_text
from refenv.model.builds import BUILT, CACHED
from refenv.model.labels import DEPS_BUILD, ENVIRONMENT, KIND, MANAGED
from refenv.model.matrix import Environment

UID = 10001
TEMPLATE = "env.Dockerfile.j2"
INSTALL_RECIPE_VERSION = 2  # bump when the install command below changes meaning
VENV = "/opt/venv"
# Where the install container sees its inputs: under /tmp, which every cell hides under a tmpfs, so the
# empty mount points the commit keeps are never seen.
BUILD_DIR = "/tmp/refenv-build"


@dataclass(frozen=True)
class ImagePlan:
    environment: str
    deps_tag: str
    env_tag: str
    content_hash: str
    labels: tuple[tuple[str, str], ...]
    dockerfile: str
    install_command: tuple[str, ...]
    requirements: str


def tree_digest(folder: Path) -> str:
    """sha256 over a source tree's relative paths and bytes (caches and bytecode left out)."""
    h = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        if "__pycache__" in file.parts or file.suffix == ".pyc":
            continue
        h.update(file.relative_to(folder).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return h.hexdigest()


def _dq(value: str) -> str:
    """A Dockerfile double-quoted string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dockerfile(env_name: str, deps_image: str, labels: tuple[tuple[str, str], ...],
                      template: str | None = None) -> str:
    text = template if template is not None else (paths.images_dir() / TEMPLATE).read_text(encoding="utf-8")
    jenv = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    jenv.filters["dq"] = _dq
    return jenv.from_string(text).render(env_name=env_name, deps_image=deps_image, labels=labels, uid=UID)


def install_command(requirements_path: str, wheels: str) -> tuple[str, ...]:
    """The hermetic install: a venv from the base's python3, then the locked wheels, bytecode compiled."""
    script = (
        "set -e; "
        f"{BUILD_DIR}/uv venv --quiet --python python3 {VENV}; "
        f"{BUILD_DIR}/uv pip install --python {VENV}/bin/python --no-index --find-links {wheels} --require-hashes "
        f"--no-deps --compile-bytecode -r {requirements_path}; "
        f"rm -rf /tmp/uv-cache; {VENV}/bin/python -c 'import sys; print(\"python\", sys.version.split()[0])'"
    )
    return ("sh", "-c", script)


def _torch_label(version: str, variant: str) -> str:
    """What torch.__version__ says: PyPI's CUDA wheels carry no local label, but torch reports one."""
    return version if "+" in version else f"{version}+{variant}"


def labels_for(env: Environment, lock: Lock, content_hash: str) -> tuple[tuple[str, str], ...]:
    cuda = env.cuda
    floor = compat.minor_floor(compat.parse_version(cuda)[0]) if cuda else None
    full = compat.min_driver_for_cuda(cuda) if cuda else None
    torch_wheel = lock.wheel("torch")
    return (
        ("org.opencontainers.image.title", f"refenv {env.name}"),
        ("org.opencontainers.image.description", f"torch {env.torch} ({env.variant}), Python {env.python}"),
        ("org.opencontainers.image.version", content_hash[:16]),
        ("org.opencontainers.image.vendor", "refenv"),
        (MANAGED, "true"),
        ("refenv.kind", "environment"),
        ("refenv.environment", env.name),
        ("refenv.torch", _torch_label(torch_wheel.version if torch_wheel else env.torch, env.variant)),
        ("refenv.variant", env.variant),
        ("refenv.cuda", cuda or "none"),
        ("refenv.python", env.python),
        ("refenv.min-driver", floor[0] if floor else "none"),
        ("refenv.min-driver-full", full or "none"),
        ("refenv.harness-version", harness_version),
        ("refenv.lock-sha256", lock.sha256),
        ("refenv.content-hash", content_hash),
    )


def plan(env: Environment, base_id: str, lock: Lock, harness_hash: str, template: str | None = None) -> ImagePlan:
    """Name both images by what goes into them (pure)."""
    requirements = requirements_text(lock)
    command = install_command(f"{BUILD_DIR}/in/requirements.txt", f"{BUILD_DIR}/wheels")
    deps_hash = hashlib.sha256(json.dumps(
        {"base": base_id, "lock": lock.sha256, "install": command, "recipe": INSTALL_RECIPE_VERSION},
        sort_keys=True).encode()).hexdigest()
    deps_tag = f"refenv/deps-{env.name}:{deps_hash[:16]}"
    tmpl = template if template is not None else (paths.images_dir() / TEMPLATE).read_text(encoding="utf-8")
    # The labels are part of the content too (all but the one that names the hash itself).
    label_inputs = [kv for kv in labels_for(env, lock, "") if kv[0] != "refenv.content-hash"]
    content_hash = hashlib.sha256(json.dumps(
        {"deps": deps_hash, "harness": harness_hash, "template": tmpl, "env": env.name, "uid": UID,
         "labels": label_inputs}, sort_keys=True).encode()).hexdigest()
    labels = labels_for(env, lock, content_hash)
    dockerfile = render_dockerfile(env.name, deps_tag, labels, tmpl)
    return ImagePlan(env.name, deps_tag, f"refenv/env-{env.name}:{content_hash[:16]}", content_hash, labels,
                     dockerfile, command, requirements)


@dataclass(frozen=True)
class Built:
    status: str            # BUILT or CACHED (refenv/model/builds.py)
    tag: str
    wall_s: float
    log: Path | None


def ensure(engine: ImageStore, p: ImagePlan, base_ref: str, wheelhouse: Path, uv_binary: Path,
           log: Callable[[str], None], log_path: Path | None = None) -> Built:
    """Build whatever of the plan is not in the engine yet."""
    start = time.monotonic()
    if engine.image_id(p.env_tag):
        return Built(CACHED, p.env_tag, 0.0, None)
    if not engine.image_id(p.deps_tag):
        staging = paths.cache_root() / "staging" / p.environment
        staging.mkdir(parents=True, exist_ok=True)
        (staging / "requirements.txt").write_text(p.requirements, encoding="utf-8")
        log(f"installing the locked wheels into {p.deps_tag} (no network)")
        engine.commit_run(
            base_ref, list(p.install_command), p.deps_tag,
            changes=["ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     f"LABEL {MANAGED}=true", "LABEL refenv.kind=deps", "CMD [\"python\"]"],
            log=log,
            binds=[(str(wheelhouse), f"{BUILD_DIR}/wheels"), (str(staging), f"{BUILD_DIR}/in"),
                   (str(uv_binary), f"{BUILD_DIR}/uv")],
            env={"UV_CACHE_DIR": "/tmp/uv-cache", "UV_NO_PROGRESS": "1"},
            labels={KIND: DEPS_BUILD, ENVIRONMENT: p.environment})
    log(f"building {p.env_tag}")
    context = tar_context({"Dockerfile": p.dockerfile.encode(), "harness": paths.harness_dir()})
    engine.build(context, p.env_tag, log)
    return Built(BUILT, p.env_tag, round(time.monotonic() - start, 1), log_path)
