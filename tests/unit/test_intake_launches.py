"""How the work was started, read as facts: the corrected start is the report's own, with the GPU asked for.

Each kind of start (a container engine's `run`, a Compose service, a Kubernetes pod, a Slurm job) is read from
the project's own fixtures and from short texts here; a start that asks for a GPU is no lead, one that does not
is NOT_VISIBLE with its correction as the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.diagnosis.report import diagnose_report, judge_report
from harness.intake import load_report
from harness.schema import NOT_VISIBLE

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
NO_DRIVER_WORDS = ("UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please check that you "
                   "have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")


def visibility(text: str) -> dict[str, object]:
    return dict(load_report(text + "\n" + NO_DRIVER_WORDS + "\n").facts.get("visibility") or {})


@pytest.mark.parametrize(("start", "launch", "fixed"), [
    ("$ docker run --rm -it img:1 python t.py", "docker run", "docker run --gpus all --rm -it img:1 python t.py"),
    ("sudo docker run -v /d:/d img:1 \\\n    python t.py", "docker run",
     "sudo docker run --gpus all -v /d:/d img:1 python t.py"),
    ("podman run --rm img:1 python t.py", "podman run", "podman run --device nvidia.com/gpu=all --rm img:1 python t.py"),
    ("nerdctl run img:1", "nerdctl run", "nerdctl run --gpus all img:1"),
    ("srun -N 1 python t.py", "slurm", "srun --gres=gpu:1 -N 1 python t.py"),
])
def test_a_command_is_corrected_in_its_own_syntax(start: str, launch: str, fixed: str) -> None:
    vis = visibility(start)
    assert vis["launch"] == launch and vis["gpu_requested"] is False
    assert vis["launch_fix"] == fixed


@pytest.mark.parametrize("start", [
    "docker run --gpus all img:1 python t.py",
    "docker run --gpus '\"device=0\"' img:1",
    "docker run --runtime=nvidia img:1",
    "podman run --device nvidia.com/gpu=all img:1",
    "srun --gres=gpu:2 python t.py",
    "srun --gpus=1 python t.py",
    "#SBATCH --gres=gpu:a100:1\n#SBATCH -t 10\npython t.py",
])
def test_a_start_that_asks_for_a_gpu_is_recorded_and_not_corrected(start: str) -> None:
    vis = visibility(start)
    assert vis["gpu_requested"] is True and "launch_fix" not in vis


def test_a_partition_named_for_gpus_is_not_a_request() -> None:
    vis = visibility("#SBATCH --partition=gpu\n#SBATCH -t 10\npython t.py")
    assert vis["launch"] == "slurm" and vis["gpu_requested"] is False
    assert vis["launch_fix"] == "`#SBATCH --gres=gpu:1` beside the script's other #SBATCH lines"


def test_a_compose_service_gets_its_device_reservation() -> None:
    vis = visibility("services:\n  web:\n    image: a/b:1\n    command: python t.py")
    assert vis["launch"] == "compose" and vis["gpu_requested"] is False
    assert str(vis["launch_fix"]).startswith("under the service 'web': `deploy: {resources: {reservations: "
                                             "{devices: [{driver: nvidia, count: all, capabilities: [gpu]}]}}}`")
    asked = visibility("services:\n  web:\n    image: a/b:1\n    deploy:\n      resources:\n        reservations:\n"
                       "          devices:\n            - driver: nvidia\n              capabilities: [gpu]")
    assert asked["gpu_requested"] is True


def test_a_pod_without_the_resource_and_one_without_the_runtime_class() -> None:
    bare = visibility("spec:\n  containers:\n  - name: w\n    image: a/b:1")
    assert bare["launch"] == "pod" and bare["gpu_requested"] is False
    assert bare["launch_fix"] == "under the container 'w': `resources: {limits: {nvidia.com/gpu: 1}}`"
    limited = visibility("spec:\n  containers:\n  - name: w\n    image: a/b:1\n    resources:\n      limits:\n"
                         "        nvidia.com/gpu: 1")
    assert limited["gpu_requested"] is True
    assert limited["launch_fix"] == "under the pod's spec: `runtimeClassName: nvidia`"
    classed = visibility("spec:\n  runtimeClassName: nvidia\n  containers:\n  - name: w\n    image: a/b:1\n"
                         "    resources:\n      limits:\n        nvidia.com/gpu: 1")
    assert classed["gpu_requested"] is True and "launch_fix" not in classed


@pytest.mark.parametrize(("name", "command"), [
    ("docker-without-gpus.txt", "docker run --gpus all --rm -it -e CUDA_VISIBLE_DEVICES=0 "),
    ("podman-run-no-device.txt", "podman run --device nvidia.com/gpu=all --rm -it docker.io/library/python:3.12 bash"),
    ("compose-no-deploy.txt", "`deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all"),
    ("pod-no-gpu-limit.txt", "under the container 'worker': `resources: {limits: {nvidia.com/gpu: 1}}`"),
    ("slurm-srun-no-gres.txt", "srun --gres=gpu:1 -p batch -t 01:00:00 python -c "),
])
def test_the_answer_is_not_visible_and_its_fix_is_the_corrected_start(name: str, command: str) -> None:
    doc = diagnose_report(str(REPORTS / name))
    assert doc.diagnosis is not None and doc.diagnosis.verdict == NOT_VISIBLE
    primary = doc.diagnosis.failing[0]
    assert primary.verdict == NOT_VISIBLE and primary.remedy is not None and primary.remedy.kind == "request_gpu"
    assert command in primary.remediation[0], primary.remediation


def test_a_start_that_asked_for_a_gpu_is_no_lead() -> None:
    report = load_report("docker run --gpus all img:1 python t.py\n>>> torch.cuda.is_available()\nFalse\n")
    doc = judge_report(report, "<text>")
    assert doc.diagnosis is not None and doc.diagnosis.assessment is not None
    assert doc.diagnosis.assessment.confidence == "low"
    assert not any("asks for no GPU" in r for r in doc.diagnosis.assessment.rests_on)
