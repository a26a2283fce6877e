"""`invoke matrix --dry-run`: each cell's prediction, no container run. A real host's GPUs are read where its
cells would run, per backend: this machine's (local); a probe job placed as the host's cells would be, the
harness's own diagnosis on the node that answered (slurm); the GPU Feature Discovery labels of a node its
node selector matches (kubernetes). A real host that cannot be read there gets no prediction, with why:
this machine's GPUs say nothing about a cluster's nodes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from refenv import paths
from refenv.engines import realhost
from refenv.errors import RefenvError
from refenv.model.matrix import CellSpec, Host, Matrix
from refenv.model.placement import KubePlacement, SlurmPlacement
from refenv.model.profiles import PciDevice, Profile
from refenv.model.records import Expected
from refenv.run import expect
from refenv.run.plan import Scope, matrix_host_profile

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


@dataclass(frozen=True)
class Prediction:
    """A cell's expected verdict, or why there is none."""

    spec: CellSpec
    expected: Expected | None
    why_not: str = ""


@dataclass(frozen=True)
class RealHosts:
    """Each real host's GPUs where its cells would run, or why they could not be read."""

    profiles: Mapping[str, Profile | None]
    errors: Mapping[str, str]
    buses: Mapping[str, tuple[PciDevice, ...] | None] = field(default_factory=dict)  # where no driver answers


def local_hosts(hosts: tuple[Host, ...]) -> RealHosts:
    """This machine's GPUs stand for every real host: its cells run here."""
    real = realhost.probe()
    bus = realhost.bus() if real is None else None
    return RealHosts({h.name: real for h in hosts}, {}, {h.name: bus for h in hosts})


def slurm_hosts(hosts: tuple[Host, ...]) -> RealHosts:
    """A probe job per real host, placed as its cells would be (the placements checked against sinfo first)."""
    from refenv.engines.slurm import state
    from refenv.engines.slurm.client import Commands
    from refenv.engines.slurm.probe import probe_placement

    commands = Commands()
    state.check_placements(hosts, state.nodes(commands.sinfo_json()))
    folder = paths.cache_root() / "slurm-probes" / time.strftime("%Y%m%d-%H%M%S")
    profiles: dict[str, Profile | None] = {}
    errors: dict[str, str] = {}
    for host in hosts:
        probe = probe_placement(folder, host.name, host.slurm or SlurmPlacement(), commands)
        profile, why = realhost.profile_of(probe.document) if probe.document else (None, probe.error)
        profiles[host.name] = profile
        if profile is None:
            errors[host.name] = f"host {host.name} (node {probe.node or 'none'}): {why}"
    return RealHosts(profiles, errors)


def kubernetes_hosts(hosts: tuple[Host, ...], api: ApiClient | None = None) -> RealHosts:
    """Each real host from the GFD labels of the first GPU node its node selector matches."""
    from refenv.engines.connect import kube_api
    from refenv.engines.kubernetes.nodes import gpu_nodes, profile_from_labels, selected

    nodes = gpu_nodes(api or kube_api())
    profiles: dict[str, Profile | None] = {}
    errors: dict[str, str] = {}
    for host in hosts:
        selector = dict((host.kubernetes or KubePlacement()).node_selector)
        node = selected(selector, nodes)
        profiles[host.name] = profile_from_labels(node[1]) if node else None
        if node is None:
            errors[host.name] = (f"host {host.name}: no GPU node matches its node_selector "
                                 f"({', '.join(f'{k}={v}' for k, v in selector.items()) or 'none'})")
        elif profiles[host.name] is None:
            errors[host.name] = f"host {host.name} (node {node[0]}): GPU Feature Discovery found no driver"
    return RealHosts(profiles, errors)


def real_hosts(matrix: Matrix, backend: str) -> RealHosts:
    hosts = tuple(h for h in matrix.hosts if h.kind == "real")
    if not hosts:
        return RealHosts({}, {})
    if backend == "local":
        return local_hosts(hosts)
    if backend == "slurm":
        return slurm_hosts(hosts)
    if backend == "kubernetes":
        return kubernetes_hosts(hosts)
    raise RefenvError(f"unknown backend {backend!r}", "one of local, slurm, kubernetes")


def predict(matrix: Matrix, real: RealHosts) -> list[Prediction]:
    """Each cell of the matrix with its expectation, a real host's from where its cells would run (pure)."""
    out = []
    for spec in Scope(matrix.environments, matrix.hosts, matrix.scenarios, matrix.path).cells():
        if spec.host.kind == "real" and spec.host.name in real.errors:
            out.append(Prediction(spec, None, f"not run there: {real.errors[spec.host.name]}"))
            continue
        if not spec.environment.known:  # a team image's torch is read from the image when the matrix runs
            out.append(Prediction(spec, Expected("", (), None, "read from the image when the matrix runs")))
            continue
        profile = matrix_host_profile(spec.host, real.profiles.get(spec.host.name))
        bus = real.buses.get(spec.host.name) if spec.host.kind == "real" and profile is None else None
        out.append(Prediction(spec, expect.expect(spec.environment, spec.host, profile, spec.scenario, bus)))
    return out
