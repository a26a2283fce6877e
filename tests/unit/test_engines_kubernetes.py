"""Kubernetes: one Job per cell, valid against the OpenAPI schema (strict) and the project's rules, and
driven through the official client against an API stub on loopback (create, watch, log, delete)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from refenv.engines.kubernetes import jobs, validate
from refenv.engines.kubernetes.engine import JobRunner, KubernetesEngine, result_of
from refenv.engines.seam import ImageRequest, Inventory, Progress, RunOutcome
from refenv.errors import NoGpuRuntime
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Host, RunSettings, Scenario
from refenv.model.placement import KubePlacement
from refenv.run.containers import ContainerSpec, cell_spec
from tests.unit.kube_stub import Cluster, PodScript, serve

A100 = KubePlacement(jobs.selector_for(535, "NVIDIA A100-SXM4-80GB", 8), gpus=1, namespace="gpu-tests")


def _spec(out: str = "/r/out", real: bool = True, gpus: str = "all") -> ContainerSpec:
    return cell_spec("registry.example/refenv/env-x:abc", "torch-2.14.1-cu130/a100/gpu", "20261201-run", out,
                     Scenario("gpu", gpus), RunSettings(memory="6g"), real_host=real)


def test_a_gpu_cells_job_validates_in_strict_mode_and_keeps_the_projects_rules() -> None:
    job = jobs.job_manifest(_spec(), A100, 240)
    assert validate.problems(job) == []
    pod = job["spec"]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits[jobs.GPU] == "1" and limits["memory"] == "6Gi"
    assert jobs.GPU not in pod["containers"][0]["resources"]["requests"]
    assert pod["restartPolicy"] == "Never" and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 240
    assert pod["nodeSelector"] == {"nvidia.com/cuda.driver.major": "535",
                                   "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                   "nvidia.com/gpu.compute.major": "8"}
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert "CUDA_VISIBLE_DEVICES" not in env
    security = pod["containers"][0]["securityContext"]
    assert security["readOnlyRootFilesystem"] and security["capabilities"] == {"drop": ["ALL"]}


def test_a_cell_without_gpu_access_asks_for_none() -> None:
    job = jobs.job_manifest(_spec(gpus="none"), KubePlacement(), 60)
    assert validate.problems(job) == []
    assert jobs.GPU not in job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


@pytest.mark.parametrize(("change", "says"), [
    (lambda j: j["spec"]["template"]["spec"].update(restartPolicy="Always"), "restartPolicy"),
    (lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"].update(
        limits={"memory": "1Gi"}, requests={"nvidia.com/gpu": "1"}), "only in requests"),
    (lambda j: j["metadata"].update(name="Refenv_Cell"), "DNS-1123"),
    (lambda j: j["spec"].update(backoffLimit=6), "backoffLimit"),
])
def test_the_project_rules_catch_what_the_schema_allows(change: Any, says: str) -> None:
    job = jobs.job_manifest(_spec(), A100, 240)
    change(job)
    assert validate.schema_errors(job) == [], "the schema alone accepts it"
    assert any(says in p for p in validate.project_rules(job)), validate.project_rules(job)


def test_the_schema_refuses_unknown_fields_and_wrong_types() -> None:
    job = jobs.job_manifest(_spec(), A100, 240)
    job["spec"]["template"]["spec"]["containers"][0]["gpus"] = "all"
    assert validate.schema_errors(job)
    job = jobs.job_manifest(_spec(), A100, 240)
    job["spec"]["activeDeadlineSeconds"] = "four minutes"
    assert validate.schema_errors(job)


def test_the_result_comes_back_through_the_log() -> None:
    doc = b'{"schema": "refenv.harness/cell"}'
    log = "torch says hello\n" + jobs.MARK + base64.b64encode(doc).decode() + "\n"
    assert result_of(log) == doc
    assert result_of("no marker\n") is None
    assert result_of(jobs.MARK + "!!!\n") is None
    command = jobs.wrapped_command(_spec())
    assert command[:2] == ["sh", "-c"] and "base64 -w0 /out/result.json" in command[2] and "exit $rc" in command[2]


class _Local:
    """The local engine's part the Kubernetes engine delegates (images); cells never reach it."""

    def inventory(self) -> Inventory:
        return Inventory()

    def ensure_image(self, request: ImageRequest, progress: Progress) -> EnvBuild:
        raise AssertionError("not used")

    def image_id(self, ref: str) -> str | None:
        return None

    def image_labels(self, ref: str) -> dict[str, str] | None:
        return None

    def run_here(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        raise AssertionError("no image is read in these tests")

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        return None

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        raise AssertionError("a cell went to the local engine")

    def cancel(self, run_id: str) -> int:
        return 0


@pytest.fixture
def api() -> Iterator[tuple[Cluster, client.ApiClient]]:
    cluster = Cluster()
    server, url = serve(cluster)
    config = client.Configuration(host=url)
    with client.ApiClient(config) as api_client:
        yield cluster, api_client
    server.shutdown()


def test_create_watch_log_delete_through_the_official_client(api: tuple[Cluster, client.ApiClient],
                                                              tmp_path: Path) -> None:
    cluster, api_client = api
    doc = {"schema": "refenv.harness/cell", "diagnosis": {"verdict": "OK"}}
    cluster.script = lambda job: PodScript("Failed", 1, "Error", None,
                                           "diagnosing\n" + jobs.MARK + base64.b64encode(json.dumps(doc).encode())
                                           .decode() + "\n")
    engine = KubernetesEngine(_Local(), api_client, (Host("a100", "real", kubernetes=A100),))
    spec = _spec(out=str(tmp_path))
    outcome = engine.run(spec, 240)
    name = jobs.job_name(spec)
    assert outcome.exit_code == 1 and not outcome.timed_out and not outcome.oom_killed
    assert json.loads((tmp_path / "result.json").read_text()) == doc, "the result from the log, where /out is"
    assert cluster.watched == [name] and cluster.logs_read == [name] and cluster.deleted == [name]
    assert cluster.jobs == {}, "the Job is deleted afterwards"


def test_a_pod_past_its_deadline_is_timed_out_and_an_oom_kill_is_oom(api: tuple[Cluster, client.ApiClient]) -> None:
    cluster, api_client = api
    runner = JobRunner(api_client)
    cluster.script = lambda job: PodScript("Failed", 137, "Error", "DeadlineExceeded", "")
    end = runner.run(jobs.job_manifest(_spec(), A100, 5), 5)
    assert end.timed_out and end.result is None
    cluster.script = lambda job: PodScript("Failed", 137, "OOMKilled", None, "")
    end = runner.run(jobs.job_manifest(_spec(gpus="none"), KubePlacement(), 5), 5)
    assert end.oom_killed and not end.timed_out
    assert cluster.jobs == {} and len(cluster.deleted) == 2


def test_cancel_deletes_every_job_of_the_run(api: tuple[Cluster, client.ApiClient]) -> None:
    cluster, api_client = api
    runner = JobRunner(api_client)
    for scenario in ("gpu", "no-gpu"):
        spec = cell_spec("img", f"e/a100/{scenario}", "run-7", "/o", Scenario(scenario), RunSettings())
        job = jobs.job_manifest(spec, KubePlacement(), 60)
        runner.create(job)
    other = jobs.job_manifest(cell_spec("img", "e/a100/gpu", "run-8", "/o", Scenario("gpu"), RunSettings()),
                              KubePlacement(), 60)
    runner.create(other)
    engine = KubernetesEngine(_Local(), api_client)
    assert engine.cancel("run-7") == 2
    assert list(cluster.jobs) == [other["metadata"]["name"]]


def test_fleet_reads_every_gpu_node_from_its_feature_discovery_labels(api: tuple[Cluster, client.ApiClient]) -> None:
    from refenv import fleet
    from refenv.engines.kubernetes.nodes import node_probes, profile_from_labels
    from refenv.model.matrix_yaml import load

    cluster, api_client = api
    gfd = {"nvidia.com/gpu.present": "true", "nvidia.com/cuda.driver.major": "535",
           "nvidia.com/cuda.driver.minor": "104", "nvidia.com/cuda.driver.rev": "12",
           "nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "2",
           "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.compute.major": "8",
           "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81920"}
    cluster.nodes = {"a100-1": gfd, "cpu-1": {"kubernetes.io/os": "linux"}}
    profile = profile_from_labels(gfd)
    assert profile is not None and profile.driver_version == "535.104.12" and profile.cuda_version == "12.2"
    assert len(profile.gpus) == 8 and profile.gpus[0].name == "NVIDIA A100 SXM4 80GB"
    assert profile.gpus[0].compute_capability == "8.0" and profile.gpus[0].memory_bytes == 81920 * 2**20
    probes = node_probes(api_client)
    assert [p.node for p in probes] == ["a100-1"], "only GPU nodes"
    envs = load(Path(__file__).resolve().parents[2] / "matrix.yaml").environments
    text = "\n".join(fleet.lines(fleet.report(probes[0], envs)))
    assert "driver 535.104.12" in text and "torch-2.10.0-cu128: torch gets a GPU" in text
    assert "torch-2.14.1-cu130: no GPU: driver too old for CUDA 13.0; install R580" in text
