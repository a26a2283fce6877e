"""Kubernetes GPU nodes as refenv sees them: a driver profile read from GPU Feature Discovery's labels
(pure), and the nodes listed through the official client, for `invoke fleet --backend kubernetes`.

GFD labels (NVIDIA k8s-device-plugin README, facts/cluster.md): `nvidia.com/cuda.driver.major/minor/rev`
(535.104.12 -> 535/104/12), `nvidia.com/cuda.runtime.major/minor` (the driver's CUDA, as nvidia-smi
prints it), `nvidia.com/gpu.product` (spaces as dashes), `nvidia.com/gpu.compute.major/minor`,
`nvidia.com/gpu.count`, `nvidia.com/gpu.memory` (MiB). No probe job is needed: the labels are the probe.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubernetes import client

from harness.facts import DriverFacts, Facts, GpuFact, NvmlFact
from harness.schema.envelope import DiagnoseDocument
from refenv.engines.seam import NodeProbe
from refenv.model.profiles import Faults, Gpu, Profile

P = "nvidia.com/"


def profile_from_labels(labels: Mapping[str, str]) -> Profile | None:
    """The node's driver and GPUs from its GFD labels, or None when GFD found no driver."""
    major, minor = labels.get(f"{P}cuda.driver.major"), labels.get(f"{P}cuda.driver.minor")
    if not major or minor is None:
        return None
    rev = labels.get(f"{P}cuda.driver.rev")
    driver = ".".join(x for x in (major, minor, rev) if x)
    cuda = f"{labels.get(f'{P}cuda.runtime.major', '')}.{labels.get(f'{P}cuda.runtime.minor', '0')}"
    if cuda.startswith("."):
        from harness import compat

        cuda = compat.cuda_for_driver(driver) or "0.0"
    count = int(labels.get(f"{P}gpu.count", "0") or 0)
    name = labels.get(f"{P}gpu.product", "unknown GPU").replace("-", " ")
    capability = f"{labels.get(f'{P}gpu.compute.major', '0')}.{labels.get(f'{P}gpu.compute.minor', '0')}"
    memory = int(labels.get(f"{P}gpu.memory", "0") or 0) * 1024 * 1024
    # GPU Feature Discovery publishes no UUIDs or bus ids; the prediction needs neither, but a profile's GPUs
    # are checked as the simulated driver would read them, so each gets a placeholder of the right shape.
    gpus = tuple(Gpu(name, memory, capability, 0, f"GPU-00000000-0000-0000-0000-{i:012x}", f"00000000:{i:02X}:00.0", i)
                 for i in range(count))
    return Profile("real", "a Kubernetes node's GPUs (GPU Feature Discovery)", driver, cuda, gpus, Faults())


def gpu_nodes(api: client.ApiClient) -> list[tuple[str, dict[str, str]]]:
    """Every node that GPU Feature Discovery labelled, with its labels."""
    nodes = client.CoreV1Api(api).list_node(label_selector=f"{P}gpu.present=true").items
    return [(n.metadata.name, dict(n.metadata.labels or {})) for n in nodes if n.metadata and n.metadata.name]


def probe_document(profile: Profile | None) -> DiagnoseDocument:
    """What `harness diagnose --json` would say of the node's NVML, so the fleet view reads both alike."""
    if profile is None:
        return DiagnoseDocument(facts=Facts(driver=DriverFacts(nvml=NvmlFact(
            init_error="GPU Feature Discovery found no driver"))))
    major, minor = (int(x) for x in profile.cuda_version.split(".")[:2])
    devices = [GpuFact(index=g.minor, name=g.name, memory_total_bytes=g.memory_bytes,
                       compute_capability=g.compute_capability, uuid=g.uuid, pci_bus_id=g.pci_bus_id)
               for g in profile.gpus]
    return DiagnoseDocument(facts=Facts(driver=DriverFacts(nvml=NvmlFact(
        driver_version=profile.driver_version, cuda_driver_version=major * 1000 + minor * 10, devices=devices))))


def node_probes(api: client.ApiClient) -> list[NodeProbe]:
    """The GPU nodes, each as the fleet view's probe of it."""
    out = []
    for name, labels in gpu_nodes(api):
        features = tuple(f"{k.removeprefix(P)}={v}" for k, v in sorted(labels.items())
                         if k in (f"{P}gpu.product", f"{P}cuda.driver.major"))
        out.append(NodeProbe(name, features, f"nvidia.com/gpu: {labels.get(f'{P}gpu.count', '?')}",
                             probe_document(profile_from_labels(labels))))
    return out
