"""The engine a run's cells go to: the local engine (Docker or Podman), or a cluster backend in front of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from refenv.engines.seam import CellEngine
from refenv.errors import RefenvError
from refenv.model.matrix import Matrix
from refenv.model.placement import BACKENDS

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


ENGINES = ("docker", "podman")


def local_engine(engine: str) -> CellEngine:
    """This machine's engine: `docker` (the SDK) or `podman` (its CLI; images still built by Docker)."""
    from refenv.engines.docker.engine import DockerEngine

    if engine not in ENGINES:
        raise RefenvError(f"unknown engine {engine!r}", f"one of {', '.join(ENGINES)}")
    if engine == "podman":
        from refenv.engines.podman.engine import PodmanEngine

        return PodmanEngine.connect()
    return DockerEngine.connect()


def engine_for(backend: str, matrix: Matrix, engine: str | None = None) -> CellEngine:
    """`backend` is matrix.yaml's run.backend or --backend, `engine` its run.engine or --engine; a cluster's
    placements are checked here, before anything is built or submitted."""
    from refenv.engines.docker.engine import DockerEngine

    if backend not in BACKENDS:
        raise RefenvError(f"unknown backend {backend!r}", f"one of {', '.join(BACKENDS)}")
    chosen = engine or matrix.run.engine
    if backend != "local" and chosen != "docker":
        raise RefenvError(f"--engine {chosen} runs cells on this machine; the {backend} backend runs them on its "
                          "nodes with Docker", "use --backend local with --engine podman")
    if backend == "local":
        return local_engine(chosen)
    local = DockerEngine.connect()
    if backend == "slurm":
        from refenv.engines.slurm.engine import SlurmEngine

        return SlurmEngine(local, matrix.hosts, matrix.run.launcher)
    if backend == "kubernetes":
        from refenv.engines.kubernetes.engine import KubernetesEngine

        return KubernetesEngine(local, kube_api(), matrix.hosts)
    return local


def kube_api() -> ApiClient:
    """The official client on the cluster KUBECONFIG (or ~/.kube/config) names, as kubectl reads it."""
    try:
        from kubernetes import client, config
    except ImportError:
        raise RefenvError("the kubernetes backend needs the official client",
                          "pip install 'refenv[kubernetes]'") from None
    try:
        config.load_kube_config()  # type: ignore[no-untyped-call]  # the client's config has no annotations
    except config.ConfigException as exc:
        raise RefenvError(f"no Kubernetes cluster configured: {exc}", "set KUBECONFIG or ~/.kube/config") from None
    return client.ApiClient()


def parallel_for(backend: str, cells: int, parallel: int) -> int:
    """On a cluster the scheduler decides how many cells run at once: one waiting thread per cell."""
    if parallel or backend == "local":
        return parallel
    return max(1, min(cells, 256))
