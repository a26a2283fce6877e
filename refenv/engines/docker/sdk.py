"""The one module that talks to Docker (docker SDK). Everything it is told to do was decided elsewhere.

Containers are always removed (detach, wait with a timeout, read, remove in `finally`: the habit of
docker-stacks' TrackedContainer), every object refenv makes carries the `refenv.managed` label so
`invoke clean` and an interrupted run can reap them, and Docker's errors are translated once, here.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout, RequestException

from harness import catalogue
from harness.inputs import shorten
from refenv.engines.seam import ContainerSpec, Inventory, RunOutcome
from refenv.errors import BuildError, EngineLost, EngineUnavailable, NoGpuRuntime, RefenvError
from refenv.model.labels import KIND, MANAGED

LOG = logging.getLogger(__name__)
# Docker's words when --gpus meets an engine without the NVIDIA runtime (the failure catalogue's rows).
NO_GPU_RUNTIME = ("docker.no_gpu_runtime", "docker.unknown_runtime")
NO_CDI = ("docker.no_cdi",)
START_HINT = ("start one: `sudo dockerd &` (Debian: apt-get install docker.io), or run `./go` which installs and "
              "starts it; set DOCKER_HOST if it listens elsewhere")


def translate(exc: Exception) -> RefenvError:
    """Docker's errors as refenv's, each with what to do."""
    text = getattr(exc, "explanation", None) or str(exc)
    if catalogue.find(str(text), NO_CDI) is not None:
        return NoGpuRuntime(f"this Docker engine does not resolve CDI device names (docker said: {text})",
                            "run the CDI scenarios with --engine podman, or on Docker 25+ with its cdi feature on")
    if catalogue.find(str(text), NO_GPU_RUNTIME) is not None:
        return NoGpuRuntime(
            "this Docker engine has no NVIDIA runtime, so --gpus cannot be honoured "
            f"(docker said: {text})",
            "install the NVIDIA Container Toolkit and run `nvidia-ctk runtime configure --runtime=docker`")
    if isinstance(exc, (RequestsConnectionError, DockerException)) and "Connection" in str(exc):
        return EngineUnavailable(f"no Docker engine answers: {exc}", START_HINT)
    return RefenvError(f"docker: {text}")


class Engine:
    """A connection to one Docker engine."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self._local = threading.local()

    @classmethod
    def connect(cls, timeout: float = 10.0, api_timeout: float = 1800.0) -> Engine:
        """Ping within `timeout`, or raise EngineUnavailable with what to do.

        The client that stays has a long timeout: committing a 7 GB layer takes tens of seconds, and
        the SDK's read timeout would cut it off. Waits on containers carry their own timeouts.
        """
        try:
            docker.from_env(timeout=int(timeout)).ping()
            client = docker.from_env(timeout=int(api_timeout))
        except (DockerException, RequestsConnectionError, ReadTimeout, OSError) as exc:
            raise EngineUnavailable(f"no Docker engine answers ({exc})", START_HINT) from None
        return cls(client)

    @property
    def api(self) -> Any:
        return self.client.api

    def info(self) -> Inventory:
        """The engine's version, and whether it has the NVIDIA runtime (what the run's header shows)."""
        info = self.client.info()
        return Inventory(info.get("ServerVersion"), "nvidia" in (info.get("Runtimes") or {}))

    # ---- images -----------------------------------------------------------------------------

    def image_labels(self, ref: str) -> dict[str, str] | None:
        """The labels of a local image, or None when it is not here."""
        try:
            image = self.client.images.get(ref)
        except ImageNotFound:
            return None
        return dict(image.labels or {})

    def image_id(self, ref: str) -> str | None:
        try:
            return str(self.client.images.get(ref).id)
        except ImageNotFound:
            return None

    def image_size(self, ref: str) -> int | None:
        """The bytes an image holds (`docker image inspect`'s Size), or None when it is not here."""
        try:
            return int(self.client.images.get(ref).attrs.get("Size") or 0) or None
        except (ImageNotFound, APIError):
            return None

    def root_dir(self) -> str | None:
        """Where the engine keeps images and containers (DockerRootDir), or None when it does not say."""
        root = self.client.info().get("DockerRootDir")
        return str(root) if root else None

    def pull(self, ref: str, auth: dict[str, str] | None = None) -> str:
        try:
            image = self.client.images.pull(ref, auth_config=auth)
        except (APIError, DockerException) as exc:
            raise translate(exc) from None
        return str(image.id)

    def import_rootfs(self, tar_path: Path, tag: str, changes: list[str]) -> str:
        """`docker import` a root filesystem tarball."""
        repo, _, version = tag.rpartition(":")
        try:
            self.api.import_image_from_file(str(tar_path), repository=repo, tag=version, changes=changes)
        except APIError as exc:
            raise translate(exc) from None
        return str(self.client.images.get(tag).id)

    def build(self, context: IO[bytes], tag: str, log: Callable[[str], None],
              labels: dict[str, str] | None = None, timeout: float = 1800,
              build_args: dict[str, str] | None = None, dockerfile: str | None = None, network: str | None = "none",
              target: str | None = None, platform: str | None = None) -> str:
        """Build from a tar context with the classic builder, streaming each log line to `log`.

        `network` None is the engine's default network (a team's build, as `docker build` has it); the registry
        credentials of the Docker config go with the request (docker-py sends them for every registry)."""
        stream = self.api.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True, pull=False,
                                decode=True, network_mode=network, labels=labels, timeout=int(timeout),
                                buildargs=build_args or None, dockerfile=dockerfile, target=target, platform=platform)
        image_id: str | None = None
        tail: list[str] = []
        try:
            for chunk in stream:
                if "stream" in chunk:
                    for line in str(chunk["stream"]).splitlines():
                        log(line)
                        tail = ([*tail, line])[-30:]
                if "aux" in chunk and "ID" in chunk["aux"]:
                    image_id = str(chunk["aux"]["ID"])
                if "error" in chunk:
                    log(str(chunk["error"]))
                    raise BuildError(f"docker build of {tag} failed: {chunk['error']}".strip(),
                                     "\n".join([*tail, str(chunk["error"])]))
        except APIError as exc:
            raise BuildError(f"docker build of {tag} failed: {exc.explanation}", "\n".join(tail)) from None
        if image_id is None:
            image_id = self.image_id(tag)
        if image_id is None:
            raise BuildError(f"docker build of {tag} produced no image", "\n".join(tail))
        return image_id

    def commit_run(self, image: str, command: list[str], tag: str, changes: list[str], log: Callable[[str], None],
                   binds: list[tuple[str, str]], env: dict[str, str], labels: dict[str, str],
                   timeout: float = 1800) -> str:
        """Run `command` in a container of `image` (no network) and commit the result as `tag`.

        `binds` are (host path, container path) pairs mounted read-only as HostConfig mounts: the SDK's
        `volumes=` would also declare them as image volumes, and the commit would keep that.
        """
        mounts = [docker.types.Mount(target, source, type="bind", read_only=True) for source, target in binds]
        container = self.client.containers.create(image, command=command, network_mode="none", mounts=mounts,
                                                  environment=env, labels={MANAGED: "true", **labels})
        tail: list[str] = []
        try:
            container.start()
            for raw in container.logs(stream=True, follow=True):
                for line in raw.decode("utf-8", "replace").splitlines():
                    log(line)
                    tail = ([*tail, line])[-30:]
            status = container.wait(timeout=timeout)
            code = int(status.get("StatusCode", -1))
            if code != 0:
                raise BuildError(f"installing into {tag} failed (exit {code})", "\n".join(tail))
            repo, _, version = tag.rpartition(":")
            container.commit(repository=repo, tag=version, changes=changes)
        except (APIError, ReadTimeout, RequestsConnectionError) as exc:
            raise BuildError(f"installing into {tag} failed: {exc}", "\n".join(tail)) from None
        finally:
            self._remove(container)
        image_id = self.image_id(tag)
        assert image_id is not None
        return image_id

    def save(self, ref: str) -> Iterator[bytes]:
        """`docker save REF`, as a stream of chunks."""
        try:
            # named: the archive keeps REF as its tag (unnamed, Podman loads it as <none>)
            yield from self.client.images.get(ref).save(chunk_size=1 << 20, named=ref)
        except (APIError, DockerException) as exc:
            raise translate(exc) from None

    def load(self, chunks: Iterator[bytes]) -> list[str]:
        """`docker load` of a streamed archive; the references it loaded."""
        loaded: list[str] = []
        try:
            for message in self.api.load_image(chunks):
                text = str(message.get("stream", "")) if isinstance(message, dict) else ""
                if "error" in message:
                    raise RefenvError(f"docker load failed: {message['error']}")
                loaded += [line.split(":", 1)[1].strip() for line in text.splitlines()
                           if line.startswith("Loaded image:")]
        except (APIError, DockerException) as exc:
            raise translate(exc) from None
        return loaded

    def tag(self, image: str, ref: str) -> None:
        repo, _, version = ref.rpartition(":")
        self.client.images.get(image).tag(repo, version)

    def push(self, ref: str, auth: dict[str, str] | None) -> Iterator[dict[str, Any]]:
        repo, _, version = ref.rpartition(":")
        try:
            yield from self.api.push(repo, tag=version, stream=True, decode=True, auth_config=auth)
        except APIError as exc:
            raise translate(exc) from None

    def remove_image(self, ref: str) -> None:
        with contextlib.suppress(NotFound, ImageNotFound):
            self.client.images.remove(ref, force=True)

    def remove_unused_image(self, ref: str) -> bool:
        """Remove an image unless another image stands on it (the engine answers 409): False when kept."""
        try:
            self.remove_image(ref)
        except APIError as exc:
            if exc.status_code == 409:  # "image has dependent child images": a kept build still uses it
                return False
            raise
        return True

    # ---- containers -------------------------------------------------------------------------

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        """Run one container (a runspec.ContainerSpec) to completion, or kill it at `timeout`; always remove it.

        EngineLost when the engine stops answering meanwhile: its connection's words, never a timeout.
        """
        try:
            container = self.client.containers.create(**create_kwargs(spec))
        except APIError as exc:
            raise translate(exc) from None
        except (RequestException, DockerException) as exc:  # a refused connection, a reply cut short
            raise lost("before the container was created", exc) from None
        try:
            try:
                container.start()
            except APIError as exc:
                raise translate(exc) from None
            started = time.monotonic()
            code, timed_out = self._wait(container, timeout, started)
            try:
                container.reload()
                oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
                logs = container.logs(tail=60).decode("utf-8", "replace")
            except NotFound:  # removed meanwhile (a cancelled run): nothing more to read
                oom, logs = False, ""
            return RunOutcome(code, timed_out, oom, logs)
        except APIError as exc:  # the engine answered, and refused: its words (an APIError is a RequestException)
            raise translate(exc) from None
        except (RequestException, DockerException) as exc:
            raise lost("while the container ran", exc) from None
        finally:
            self._remove(container)

    def _wait(self, container: Any, timeout: float, started: float) -> tuple[int | None, bool]:
        """(exit code, False) when it ended within `timeout`; (None, True) when it was killed at it.

        Over a unix socket docker-py reports its read timeout as a ConnectionError ("Read timed out"), the same
        type as a dead engine's: the clock tells them apart. A container that exits between the timeout and
        the kill makes Docker refuse the kill (409, "is not running"): it was still out of time, so TIMEOUT.
        """
        try:
            status = container.wait(timeout=timeout)
            return int(status.get("StatusCode", -1)), False
        except (ReadTimeout, RequestsConnectionError):
            if time.monotonic() - started < timeout * 0.99:
                raise  # the engine went away before the time was up
        try:
            container.kill()
        except NotFound:
            LOG.debug("container gone before the kill")
        except APIError as exc:
            if exc.status_code != 409:
                raise translate(exc) from None
            LOG.debug("container ended between its time limit and the kill: %s", exc.explanation)
        return None, True

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        """Try `--gpus all` once; the translated refusal when this engine cannot give a container a GPU."""
        request = docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
        try:
            container = self.client.containers.create(image, command=["true"], entrypoint=["true"],
                                                      network_mode="none", device_requests=[request],
                                                      labels={MANAGED: "true", KIND: "gpu-check"})
        except APIError as exc:
            err = translate(exc)
            return err if isinstance(err, NoGpuRuntime) else NoGpuRuntime(str(err))
        try:
            container.start()
            container.wait(timeout=60)
        except APIError as exc:
            err = translate(exc)
            return err if isinstance(err, NoGpuRuntime) else NoGpuRuntime(str(err))
        finally:
            self._remove(container)
        return None

    def _remove(self, container: Any) -> None:
        try:
            container.remove(force=True, v=True)
        except (NotFound, APIError) as exc:
            LOG.debug("container already gone: %s", exc)
        except (RequestException, DockerException) as exc:  # a dead engine: a later run reaps it by label
            LOG.warning("could not remove container %s: the engine does not answer (%s)", container.id, exc)

    def remove_containers(self, labels: dict[str, str]) -> int:
        """Remove every container (running or not) carrying all of `labels`; returns how many."""
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        found = self.client.containers.list(all=True, filters=filters)
        for c in found:
            self._remove(c)
        return len(found)

    def images_labelled(self, labels: dict[str, str]) -> list[str]:
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        return [str(i.id) for i in self.client.images.list(filters=filters)]

    def image_records(self, labels: dict[str, str]) -> list[tuple[str, str, str]]:
        """(id, repository, created) of each tag of the images carrying `labels`."""
        filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
        return [(str(i.id), tag.rpartition(":")[0], str(i.attrs.get("Created", "")))
                for i in self.client.images.list(filters=filters) for tag in (i.tags or [])]

    # ---- release images (invoke publish) ------------------------------------------------------

    def untag(self, ref: str) -> None:
        """Remove one name of an image; the image goes with its last name (`docker rmi NAME`, not forced)."""
        try:
            self.client.images.remove(ref)
        except (NotFound, ImageNotFound):
            LOG.debug("no image called %s", ref)
        except APIError as exc:
            raise translate(exc) from None


def lost(when: str, exc: Exception) -> EngineLost:
    """A connection that failed in the middle of the work, in its own words (docker-py's and the socket's)."""
    return EngineLost(f"the Docker engine stopped answering {when}: {shorten(str(exc), 240)}",
                      "the container may be left behind; the next `invoke matrix` on this engine removes it")


def create_kwargs(spec: ContainerSpec) -> dict[str, Any]:
    """docker SDK `containers.create` arguments for a `runspec.ContainerSpec`."""
    kwargs: dict[str, Any] = {
        "image": spec.image, "command": list(spec.command), "environment": dict(spec.environment),
        "labels": dict(spec.labels), "read_only": spec.read_only, "network_mode": spec.network,
        "cap_drop": list(spec.cap_drop), "security_opt": list(spec.security_opt), "pids_limit": spec.pids_limit,
        "mem_limit": spec.mem_limit, "memswap_limit": spec.mem_limit, "tmpfs": dict(spec.tmpfs),
        "mounts": [docker.types.Mount(target, source, type="bind", read_only=ro) for source, target, ro in spec.binds],
        "devices": list(spec.devices), "detach": True,
    }
    if spec.user is not None:
        kwargs["user"] = spec.user
    if spec.cpus is not None:
        kwargs["nano_cpus"] = int(spec.cpus * 1e9)
    if spec.runtime is not None:
        kwargs["runtime"] = spec.runtime
    if spec.entrypoint is not None:
        kwargs["entrypoint"] = list(spec.entrypoint)
    if spec.gpu_request is not None:
        ids = None if spec.gpu_request == "all" else spec.gpu_request.split(",")
        kwargs["device_requests"] = [docker.types.DeviceRequest(count=-1 if ids is None else 0, device_ids=ids,
                                                                capabilities=[["gpu"]])]
    if spec.cdi_devices:
        # What the docker CLI sends for --device vendor/class=name: a request to the "cdi" device driver,
        # which Docker 25+ resolves from /etc/cdi and /var/run/cdi and older daemons refuse.
        kwargs.setdefault("device_requests", []).append(
            docker.types.DeviceRequest(driver="cdi", device_ids=list(spec.cdi_devices)))
    return kwargs


def stale(records: list[tuple[str, str, str]]) -> list[str]:
    """Image ids older than the newest image of the same repository (superseded environment builds)."""
    newest: dict[str, tuple[str, str]] = {}
    for image_id, repo, created in records:
        if repo not in newest or created > newest[repo][1]:
            newest[repo] = (image_id, created)
    keep = {image_id for image_id, _ in newest.values()}
    return sorted({image_id for image_id, _, _ in records if image_id not in keep})
