"""Podman behind the runner's seam (`refenv.engines.seam.CellEngine`), through its CLI (cli.py says why).

Images are built by the Docker engine (refenv's builder) and copied into Podman's storage the first time
a run needs them (`docker save | podman load`: the same image id, layers shared with what Podman holds).
Containers are created, started, waited for with a time limit, inspected and always removed. A cell that
asks for CDI devices gets its host's spec in Podman's CDI directory while its container is created and
started — Podman 4.3 reads specs only from /etc/cdi and /var/run/cdi, resolves them when the container
starts, and two specs of one kind defining the same device would conflict — so the spec goes into
/var/run/cdi (not /etc) for that moment only, under a lock shared by every refenv process, and is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from refenv.engines.docker.engine import DockerEngine
from refenv.engines.podman import cli
from refenv.engines.seam import ContainerSpec, ImageRequest, Inventory, Progress, RunOutcome
from refenv.errors import EngineUnavailable, NoGpuRuntime, NotStarted, RefenvError
from refenv.model.builds import EnvBuild
from refenv.model.labels import KIND, MANAGED, of_run

LOG = logging.getLogger(__name__)
CDI_DIR = Path("/var/run/cdi")
START_HINT = "install it (Debian: apt-get install podman, or run ./go, which installs it)"


def podman(*args: str, timeout: float = 120.0, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    """One podman command; its status and words are the caller's to judge."""
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False,
                          stdin=stdin)


class PodmanEngine:
    """A `CellEngine` on this machine's Podman; images come from `images` (the Docker engine)."""

    name = "podman"

    def __init__(self, images: DockerEngine) -> None:
        self.images = images
        self._lock = threading.Lock()
        self._names = 0

    @classmethod
    def connect(cls) -> PodmanEngine:
        if shutil.which("podman") is None:
            raise EngineUnavailable("podman is not installed", START_HINT)
        try:
            done = podman("version", "--format", "{{.Client.Version}}", timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EngineUnavailable(f"podman does not answer: {exc}", START_HINT) from None
        if done.returncode != 0:
            raise EngineUnavailable(f"podman does not answer: {done.stderr.strip()}", START_HINT)
        return cls(DockerEngine.connect())

    def inventory(self) -> Inventory:
        done = podman("version", "--format", "{{.Client.Version}}", timeout=30)
        return Inventory(f"podman {done.stdout.strip()}" if done.returncode == 0 else "podman", None)

    # ---- images -----------------------------------------------------------------------------

    def ensure_image(self, request: ImageRequest, progress: Progress) -> EnvBuild:
        build = self.images.ensure_image(request, progress)
        if build.status == "FAILED" or build.tag is None or self.image_id(build.tag) is not None:
            return build
        progress(request.environment.name, f"copying {build.tag} into podman (docker save | podman load)")
        try:
            self.copy_image(build.tag)
        except RefenvError as exc:
            from dataclasses import replace

            return replace(build, status="FAILED", error=str(exc))
        return build

    def copy_image(self, tag: str) -> None:
        """`docker save TAG | podman load`: streamed, never written to disk in between."""
        save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert save.stdout is not None
        try:
            load = podman("load", "-q", timeout=3600, stdin=save.stdout.fileno())
        finally:
            save.stdout.close()
            _, err = save.communicate(timeout=3600)
        if save.returncode != 0 or load.returncode != 0:
            raise RefenvError(f"copying {tag} into podman failed: {(err.decode() + load.stderr).strip()[-400:]}")

    def image_id(self, ref: str) -> str | None:
        done = podman("image", "inspect", "--format", "{{.Id}}", ref, timeout=60)
        return f"sha256:{done.stdout.strip()}" if done.returncode == 0 and done.stdout.strip() else None

    def image_labels(self, ref: str) -> dict[str, str] | None:
        return self.images.image_labels(ref)

    def run_here(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        """Reading an image (refenv/run/imagefacts.py) goes to the Docker engine it came from."""
        return self.images.run_here(spec, timeout)

    def remove_image(self, ref: str) -> None:
        podman("rmi", "--force", ref, timeout=300)

    def release(self, build: EnvBuild) -> None:
        """The copy in Podman's storage, and the Docker engine's image it came from."""
        if build.tag:
            self.remove_image(build.tag)
        self.images.release(build)

    # ---- containers -------------------------------------------------------------------------

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        """Ask for every GPU once (podman's way: the CDI name); podman's refusal when it cannot give them."""
        spec = ContainerSpec(image=image, command=(), environment=(), labels=((MANAGED, "true"), (KIND, "gpu-check")),
                             binds=(), entrypoint=("true",), gpu_request="all", tmpfs=())
        try:
            outcome = self.run(spec, 60)
        except RefenvError as exc:
            return NoGpuRuntime(exc.message, exc.hint)
        return None if outcome.exit_code == 0 else NoGpuRuntime(f"podman: {outcome.logs.strip()[-300:]}")

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        with self._lock:
            self._names += 1
            name = f"refenv-{os.getpid()}-{self._names}"
        try:
            with self._cdi(spec):
                made = podman("create", *cli.create_args(spec, name), timeout=120)
                if made.returncode != 0:
                    raise cli.translate(made.stderr, spec)
                started = podman("start", name, timeout=120)
                if started.returncode != 0:
                    raise cli.translate(started.stderr, spec)
            timed_out, code = False, None
            try:
                waited = podman("wait", name, timeout=timeout)
                code = int(waited.stdout.strip().splitlines()[-1]) if waited.returncode == 0 else None
            except subprocess.TimeoutExpired:
                timed_out = True
                podman("kill", name, timeout=60)
            oom = podman("inspect", "--format", "{{.State.OOMKilled}}", name, timeout=60).stdout.strip() == "true"
            logs = podman("logs", "--tail", "60", name, timeout=60)
            return RunOutcome(code, timed_out, oom, logs.stdout + logs.stderr)
        finally:
            podman("rm", "--force", "--volumes", name, timeout=120)

    @contextlib.contextmanager
    def _cdi(self, spec: ContainerSpec) -> Iterator[None]:
        """The spec's CDI files in podman's directory while its container is created and started."""
        if not spec.cdi_devices and spec.gpu_request is None:
            yield
            return
        CDI_DIR.mkdir(parents=True, exist_ok=True)
        placed: list[Path] = []
        with open(CDI_DIR / ".refenv.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one refenv spec of a kind at a time, across processes
            try:
                for i, source in enumerate(spec.cdi_specs):
                    target = CDI_DIR / f"refenv-{os.getpid()}-{i}.json"
                    shutil.copyfile(source, target)
                    placed.append(target)
                yield
            finally:
                for target in placed:
                    target.unlink(missing_ok=True)
                fcntl.flock(lock, fcntl.LOCK_UN)

    def remove_containers(self, labels: dict[str, str]) -> int:
        return remove_labelled(labels, images=False)[0]

    def cancel(self, run_id: str) -> int:
        return self.images.cancel(run_id) + self.remove_containers(of_run(run_id))


def remove_labelled(labels: dict[str, str], images: bool = True) -> tuple[int, int]:
    """Every podman container (and, with `images`, image) carrying all of `labels`: (containers, images) removed."""
    filters = [arg for key, value in labels.items() for arg in ("--filter", f"label={key}={value}")]
    found = podman("ps", "--all", "--quiet", *filters, timeout=60).stdout.split()
    if found:
        podman("rm", "--force", "--volumes", *found, timeout=300)
    ids = sorted(set(podman("images", "--quiet", *filters, timeout=60).stdout.split())) if images else []
    if ids:
        podman("rmi", "--force", *ids, timeout=600)
    return len(found), len(ids)


__all__ = ["NotStarted", "PodmanEngine", "remove_labelled"]
