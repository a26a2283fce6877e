"""The engine a run's cells go to: the local Docker engine, or a cluster backend in front of it."""

from __future__ import annotations

from refenv.backend import CellEngine
from refenv.errors import RefenvError
from refenv.matrix import Matrix
from refenv.placement import BACKENDS


def engine_for(backend: str, matrix: Matrix) -> CellEngine:
    """`backend` is matrix.yaml's run.backend or --backend; a cluster's placements are checked here,
    before anything is built or submitted."""
    from refenv.dockerengine import DockerEngine

    if backend not in BACKENDS:
        raise RefenvError(f"unknown backend {backend!r}", f"one of {', '.join(BACKENDS)}")
    local = DockerEngine.connect()
    if backend == "slurm":
        from refenv.backends.slurm.engine import SlurmEngine

        return SlurmEngine(local, matrix.hosts, matrix.run.launcher)
    if backend == "kubernetes":
        raise RefenvError("the kubernetes backend renders and validates Jobs (refenv.backends.kubernetes) but "
                          "does not run a matrix yet", "use --backend local or --backend slurm")
    return local


def parallel_for(backend: str, cells: int, parallel: int) -> int:
    """On a cluster the scheduler decides how many cells run at once: one waiting thread per cell."""
    if parallel or backend == "local":
        return parallel
    return max(1, min(cells, 256))
