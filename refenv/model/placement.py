"""Where a `real` host's cells run on a cluster (plain data, read from matrix.yaml's host entries).

    r535-h100: {kind: real, slurm: {constraint: "driver_r535&h100", gres: "gpu:1"}}
    a100-pool: {kind: real, kubernetes: {node_selector: {nvidia.com/cuda.driver.major: "535"}}}
"""

from __future__ import annotations

from dataclasses import dataclass

BACKENDS = ("local", "slurm", "kubernetes")
LAUNCHERS = ("docker", "pyxis", "oci")


@dataclass(frozen=True)
class SlurmPlacement:
    """Slurm's --constraint, --gres, --partition, --account (all optional); `nodelist` pins a probed node."""

    constraint: str | None = None
    gres: str | None = None
    partition: str | None = None
    account: str | None = None
    nodelist: str | None = None


@dataclass(frozen=True)
class KubePlacement:
    """A Kubernetes node selector (GPU Feature Discovery labels) and how many GPUs a cell's pod asks for."""

    node_selector: tuple[tuple[str, str], ...] = ()
    gpus: int = 1
    namespace: str = "default"
