"""The local Docker engine behind the runner's seam (`refenv.engines.seam.CellEngine`).

Builds go through `refenv.builder.environment`, containers through `refenv.engines.docker.sdk.Engine`
(the one module that speaks the docker SDK). Cancelling a run removes its containers by label, and the
dependency installs this engine has in flight: those are labelled by environment, not by run, so only the
ones it started go.
"""

from __future__ import annotations

import threading

from refenv.builder.environment import build_environment, given_image
from refenv.builder.team import team_image
from refenv.engines.docker.sdk import Engine
from refenv.engines.seam import ContainerSpec, ImageRequest, Inventory, Progress, RunOutcome
from refenv.errors import NoGpuRuntime
from refenv.model.builds import EnvBuild
from refenv.model.labels import DEPS_BUILD, ENVIRONMENT, KIND, MANAGED, of_run


class DockerEngine:
    """A `CellEngine` on one Docker engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._building: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def connect(cls) -> DockerEngine:
        """The engine DOCKER_HOST names (or the local socket); EngineUnavailable says how to start one."""
        return cls(Engine.connect())

    def inventory(self) -> Inventory:
        return self.engine.info()

    def ensure_image(self, request: ImageRequest, progress: Progress) -> EnvBuild:
        env = request.environment
        if request.given is not None:
            return given_image(self.engine, env, request.given)
        if env.team is not None:
            return team_image(self.engine, env, progress)
        with self._lock:
            self._building.add(env.name)
        try:
            return build_environment(self.engine, None, env, progress, relock=request.relock,
                                     lock_file=request.lock_file)
        finally:
            with self._lock:
                self._building.discard(env.name)

    def image_id(self, ref: str) -> str | None:
        return self.engine.image_id(ref)

    def release(self, build: EnvBuild) -> None:
        """The environment's image; for refenv's recipe, the dependency layer image under it too."""
        if build.tag:
            self.engine.remove_image(build.tag)
        for image_id in self.engine.images_labelled({MANAGED: "true", KIND: "deps", ENVIRONMENT: build.environment}):
            self.engine.remove_unused_image(image_id)

    def image_labels(self, ref: str) -> dict[str, str] | None:
        return self.engine.image_labels(ref)

    def run_here(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        return self.engine.run(spec, timeout)

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        return self.engine.gpu_runtime_error(image)

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        return self.engine.run(spec, timeout)

    def cancel(self, run_id: str) -> int:
        with self._lock:
            building = sorted(self._building)
        removed = sum(self.engine.remove_containers({MANAGED: "true", KIND: DEPS_BUILD, ENVIRONMENT: name})
                      for name in building)
        return removed + self.engine.remove_containers(of_run(run_id))
