"""Two kinds of evidence that CUDA works: timings compared between CPU and GPU, and utilisation low while the
GPU holds memory. Each answers OK with what more likely fails (the workload or its timing; the input
pipeline), each is read in every shape the family takes, and neither outranks a failure torch printed."""

from __future__ import annotations

import pytest

from harness.classify import classify
from harness.intake import load_report
from harness.intake.assess import assess_report
from harness.schema import Assessment


def _judge(text: str) -> tuple[set[str], Assessment]:
    report = load_report(text.encode("utf-8"))
    a = assess_report(report.facts, classify(report.facts), report.provenance, report.inferred, report.clues)
    return set(report.clues), a


@pytest.mark.parametrize("text", [
    "With torch 2.3 the GPU is slower than the CPU for my model.",
    "torch 2.3: training is slower on the GPU than on the CPU.",
    "torch 2.3: why is the CPU faster than CUDA here?",
    "torch 2.3 小模型 GPU比CPU慢",
    "torch 2.3\nTime on CPU: 1.2 s\nTime on GPU: 3.4 s",
    "torch 2.3: cpu took 120 ms, cuda:0 took 340 ms",
    "torch 2.3\ndevice\tcpu\tcuda\nmatmul\t1.2\t3.4",
    "torch 2.3\nsize,cpu,cuda\n64,0.12,0.51\n",
])
def test_timings_compared_between_cpu_and_gpu_say_cuda_ran(text: str) -> None:
    clues, a = _judge(text)
    assert "gpu_timed" in clues, text
    assert (a.verdict, a.confidence) == ("OK", "medium"), (text, a)
    assert "synchronize" in a.why and "driver" in a.why


@pytest.mark.parametrize("text", [
    "torch 2.3: GPU memory usage is 11 GB but GPU-Util is 1%",
    "torch 2.3: the training holds 8 GB of memory while GPU utilization stays at 0%",
    "torch 2.3: GPU usage is very low although the process uses most of the VRAM",
    "PyTorch: 显存占用 20G，GPU利用率很低",
])
def test_low_utilisation_with_memory_held_points_at_the_input_pipeline(text: str) -> None:
    clues, a = _judge(text)
    assert "low_util" in clues, text
    assert (a.verdict, a.confidence) == ("OK", "medium"), (text, a)
    assert "DataLoader" in a.why and "num_workers" in a.why


@pytest.mark.parametrize("text", [
    # The card's size is not memory held, nor is nvidia-smi's column name.
    "torch 2.3 on a laptop with a RTX 3060 with 6GB VRAM: GPU usage is 0%",
    "torch 2.3: total_memory=8192MB, and GPU utilization is 0%",
    "torch 2.3\n| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\nGPU usage 0%",
    # An idle desktop's card holds memory at 0% too: nvidia-smi's figures alone are not the reporter's complaint.
    "torch 2.3 fails in the container\n|  N/A 63C P3 19W / 72W |  3179MiB / 8192MiB   |      0%      Default    |",
    # Times with one device only, and sizes that are not times.
    "torch 2.3\ncpu: 1.2s\nthe GPU is a 3060 with 12 GB",
    "torch 2.3 on 16 cpu cores, GPU: 24GB",
])
def test_what_is_not_the_evidence(text: str) -> None:
    clues, a = _judge(text)
    assert not clues & {"gpu_timed", "low_util"}, (text, clues)
    assert a.verdict != "OK", (text, a)


def test_a_failure_torch_printed_outranks_the_timings() -> None:
    _, a = _judge("The GPU is slower than the CPU, then it fails:\nRuntimeError: CUDA error: no kernel image is "
                  "available for execution on the device")
    assert a.verdict == "ARCH_UNSUPPORTED", a


def test_torch_saying_it_has_no_gpu_outranks_low_utilisation() -> None:
    _, a = _judge(">>> torch.cuda.is_available()\nFalse\nThe job holds 4 GB of memory but GPU usage is 0%")
    assert a.verdict != "OK", a
