"""`invoke matrix --dry-run`: a real host is predicted from where its cells would run, never from this machine
when they run on a cluster (refenv/run/dryrun.py). The Kubernetes nodes come from the API stub's GFD labels;
the Slurm probe job runs in the slurm tier."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from refenv.model.matrix import Environment, Host, Matrix, Scenario
from refenv.model.placement import KubePlacement
from refenv.model.profiles import Faults, Gpu, Profile
from refenv.run.dryrun import RealHosts, kubernetes_hosts, predict
from tests.unit.kube_stub import Cluster, serve

CU130 = Environment("cu130", "2.14.1", "cu130")
H100 = Profile("real", "a node's GPUs", "580.95.05", "13.0",
               (Gpu("NVIDIA H100 80GB HBM3", 80 << 30, "9.0", 132, "GPU-00000000-0000-0000-0000-000000000000",
                    "00000000:01:00.0", 0),), Faults())
GFD = {"nvidia.com/gpu.present": "true", "nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104",
       "nvidia.com/cuda.driver.rev": "12", "nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "2",
       "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.compute.major": "8",
       "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81920"}


def matrix(*hosts: Host) -> Matrix:
    return Matrix("matrix.yaml", (CU130,), hosts, (Scenario("gpu", "all"),))


def test_each_real_host_is_predicted_from_its_own_gpus_or_says_why_not() -> None:
    m = matrix(Host("h100", "real"), Host("gone", "real"), Host("r535", "simulated", "r535"))
    found = predict(m, RealHosts({"h100": H100, "gone": None}, {"gone": "host gone (node n3): no driver answers"}))
    by_host = {p.spec.host.name: p for p in found}
    assert by_host["h100"].expected is not None and by_host["h100"].expected.verdict == "OK"
    assert by_host["gone"].expected is None and by_host["gone"].why_not == \
        "not run there: host gone (node n3): no driver answers"
    assert by_host["r535"].expected is not None and by_host["r535"].expected.verdict == "DRIVER_TOO_OLD"


@pytest.fixture
def api() -> Iterator[tuple[Cluster, client.ApiClient]]:
    cluster = Cluster()
    server, url = serve(cluster)
    with client.ApiClient(client.Configuration(host=url)) as api_client:
        yield cluster, api_client
    server.shutdown()


def test_kubernetes_real_hosts_come_from_the_node_their_selector_matches(
        api: tuple[Cluster, client.ApiClient]) -> None:
    cluster, api_client = api
    cluster.nodes = {"a100-1": GFD, "cpu-1": {"kubernetes.io/os": "linux"}}
    a100 = Host("a100", "real", kubernetes=KubePlacement((("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),)))
    h100 = Host("h100", "real", kubernetes=KubePlacement((("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),)))
    real = kubernetes_hosts((a100, h100), api_client)
    profile = real.profiles["a100"]
    assert profile is not None and profile.driver_version == "535.104.12" and len(profile.gpus) == 8
    assert real.errors == {"h100": "host h100: no GPU node matches its node_selector "
                                   "(nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3)"}
    by_host = {p.spec.host.name: p for p in predict(matrix(a100, h100), real)}
    assert by_host["a100"].expected is not None and by_host["a100"].expected.verdict == "DRIVER_TOO_OLD"
    assert by_host["h100"].expected is None
