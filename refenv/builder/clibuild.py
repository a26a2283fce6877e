"""A team's BuildKit Dockerfile built by a builder's own command: `docker buildx build --load` or `podman build`.

The command is the one its owner would type (refenv/builder/buildkit.py makes it), run on the Dockerfile and
its context folder as they are: the builder reads `.dockerignore` itself, uses the engine's credentials, and
keeps its cache mounts between builds. Its lines stream to the build log; a failure is a BuildError with its
last lines. Podman's builder sees Podman's storage, so the base images it needs that only the Docker engine
holds are copied there first (`docker save | podman load`), and the image it built is copied to the Docker
engine (`podman save | docker load`, streamed) and removed from Podman's storage, whose cache mounts stay.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import IO

from refenv.builder.buildkit import PODMAN
from refenv.builder.store import ImageStore
from refenv.errors import BuildError

LOG = logging.getLogger(__name__)
CHUNK = 1 << 20


def have_buildx() -> bool:
    """Whether the Docker client has its buildx component (`docker buildx version` answers)."""
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "buildx", "version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def have_podman() -> bool:
    return shutil.which("podman") is not None


def _podman(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)


def run_builder(command: list[str], log: Callable[[str], None], timeout: float, env: dict[str, str]) -> None:
    """Run the builder, each line of its output to `log`; BuildError with its last lines when it fails."""
    log("$ " + " ".join(command))
    tail: list[str] = []
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                env=env)
    except OSError as exc:
        raise BuildError(f"{command[0]} could not start: {exc.strerror or exc}") from None
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            log(line.rstrip("\n"))
            tail = [*tail, line.rstrip("\n")][-30:]
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if code != 0:
        last = next((line for line in reversed(tail) if line.strip()), f"exit {code}")
        killed = f" (stopped after {timeout:.0f} s)" if code < 0 else ""
        raise BuildError(f"{command[0]} {command[1]} failed{killed}: {last.strip()}", "\n".join(tail))


def to_podman(store: ImageStore, refs: list[str], log: Callable[[str], None]) -> None:
    """The base images Podman's builder will need that only the Docker engine holds, copied into Podman."""
    for ref in refs:
        if store.image_id(ref) is None or _podman("image", "exists", ref, timeout=60).returncode == 0:
            continue
        log(f"copying {ref} into podman for its builder (docker save | podman load)")
        load = subprocess.Popen(["podman", "load", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert load.stdin is not None
        try:
            for chunk in store.save(ref):
                load.stdin.write(chunk)
        except BrokenPipeError:
            pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                load.stdin.close()
            _, err = load.communicate(timeout=3600)
        if load.returncode != 0:
            raise BuildError(f"copying {ref} into podman failed: {err.decode(errors='replace').strip()[-300:]}")


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk


def from_podman(store: ImageStore, tag: str, log: Callable[[str], None]) -> str:
    """The image Podman built, copied to the Docker engine as `tag` and removed from Podman; its id there."""
    log(f"copying {tag} to the Docker engine (podman save | docker load)")
    save = subprocess.Popen(["podman", "save", "--format", "docker-archive", tag], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert save.stdout is not None
    try:
        loaded = store.load(_chunks(save.stdout))
    finally:
        save.stdout.close()
        _, err = save.communicate(timeout=3600)
    if save.returncode != 0:
        raise BuildError(f"podman save {tag} failed: {err.decode(errors='replace').strip()[-300:]}")
    # Podman names a short name localhost/NAME; the Docker engine gets refenv's own tag.
    for ref in loaded:
        if ref != tag:
            store.tag(ref, tag)
            store.untag(ref)
    _podman("rmi", "--force", tag, f"localhost/{tag}", timeout=300)
    image_id = store.image_id(tag)
    if image_id is None:
        raise BuildError(f"{tag} is not in the Docker engine after podman save | docker load (loaded: {loaded})")
    return image_id


def build(store: ImageStore, builder: str, command: list[str], tag: str, bases: list[str],
          log: Callable[[str], None], timeout: float = 3600) -> str:
    """Build with the builder's own command; the image's id in the Docker engine."""
    if builder == PODMAN:
        to_podman(store, bases, log)
    run_builder(command, log, timeout, dict(os.environ))
    if builder == PODMAN:
        return from_podman(store, tag, log)
    image_id = store.image_id(tag)
    if image_id is None:
        raise BuildError(f"{command[0]} {command[1]} finished but {tag} is not in the Docker engine")
    return image_id
