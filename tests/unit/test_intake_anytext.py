"""The reader takes any text: each shape of report gives its facts, stated or inferred, and a weighed verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.classify import classify
from harness.intake import ParsedReport, ReportError, load_report
from harness.intake.assess import assess_report, oom_total
from harness.schema import Assessment

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"

# fixture -> (verdict, confidence or None for any, {fact path: value}, {fact paths that must be inferred})
CASES: dict[str, tuple[str, str | None, dict[str, Any], set[str]]] = {
    "warning-no-driver.txt": ("NO_DRIVER", None, {}, set()),
    "traceback-too-old.txt": ("DRIVER_TOO_OLD", "high", {"driver.libcuda.driver_version": 10020}, set()),
    "smi-table-pip.txt": ("DRIVER_TOO_OLD", "high", {
        "driver.nvml.driver_version": "470.256.02", "torch.version": "2.3.1", "torch.cuda": "12.1",
        "torch.is_available": False}, {"torch.cuda", "driver.nvml.devices.0.compute_capability"}),
    "smi-failed-slurm.txt": ("NOT_VISIBLE", None, {"driver.nvidia_smi.works": False}, set()),
    "template-bullets-cpu.txt": ("CPU_WHEEL", "high", {"torch.version": "2.4.0+cpu", "torch.cuda": None,
                                                       "host.os": "Windows", "host.python": "3.11.9"}, set()),
    "conda-cpuonly.txt": ("CPU_WHEEL", None, {"torch.cuda": None}, {"torch.cuda"}),
    "conda-list-cpu-build.txt": ("CPU_WHEEL", "high", {"torch.version": "1.12.1", "torch.cuda": None}, set()),
    "conda-list-cuda-build.txt": ("CANNOT_TELL", "low", {"torch.cuda": "11.3"}, set()),
    "repl-version-cuda.txt": ("CPU_WHEEL", "high", {"torch.version": "2.1.2", "torch.cuda": None,
                                                    "torch.is_available": False}, set()),
    "docker-without-gpus.txt": ("NOT_VISIBLE", None, {"visibility.in_container": True,
                                                      "visibility.cuda_visible_devices": "0"}, set()),
    "compose-capabilities.txt": ("NOT_VISIBLE", None, {"visibility.nvidia_driver_capabilities": "utility"}, set()),
    "cvd-shell.txt": ("NOT_VISIBLE", None, {"visibility.cuda_visible_devices": "3"}, set()),
    "kernel-api-mismatch.txt": ("DRIVER_BROKEN", "high", {"driver.kernel_module_version": "550.107.02"},
                                {"driver.nvml.init_error"}),
    "runtime-error-802.txt": ("DRIVER_BROKEN", None, {"driver.libcuda.cuinit": 802}, {"driver.libcuda.cuinit"}),
    "arch-warning.txt": ("ARCH_UNSUPPORTED", "high", {}, set()),
    "old-gpu-warning.txt": ("ARCH_UNSUPPORTED", None, {}, set()),
    "wsl1.txt": ("OTHER", None, {"host.os": "Linux"}, {"host.os"}),
    "macos-apple-silicon.txt": ("OTHER", "high", {"host.os": "Darwin"}, {"host.os"}),
    "rocm-build.txt": ("OTHER", None, {"torch.version": "2.3.1+rocm6.0"}, set()),
    "non-english-cpu.txt": ("CPU_WHEEL", "high", {"torch.version": "2.1.0", "torch.cuda": None}, set()),
    "nvcc-only.txt": ("NOT_VISIBLE", "low", {"torch.is_available": False}, set()),
    "os-only.txt": ("CANNOT_TELL", "low", {"host.os": "Linux"}, set()),
    "colab-cpu.txt": ("NO_DRIVER", None, {}, set()),
    # torch's warning and its source line print between the call and its answer
    "repl-warning-between.txt": ("DRIVER_TOO_OLD", "high", {"torch.version": "2.14.1+cu130",
                                                            "torch.is_available": False}, set()),
    # The normalisation: a warning a mail client wrapped and quoted, torch 0.x's spelling, a numbered listing.
    "wrapped-quoted-too-old.txt": ("DRIVER_TOO_OLD", "high", {"driver.libcuda.driver_version": 11040,
                                                              "torch.version": "2.3.0"}, {"torch.cuda"}),
    "old-spelling-too-old.txt": ("DRIVER_TOO_OLD", "high", {"driver.libcuda.driver_version": 8000}, set()),
    "numbered-listing.txt": ("NO_DRIVER", "medium", {}, set()),
    # REPL answers: several values on one output line, answers written as comments, an assert and its fate.
    "oneliner-prints.txt": ("DRIVER_TOO_OLD", "high", {"torch.version": "2.3.1+cu121", "torch.cuda": "12.1",
                                                        "torch.is_available": False,
                                                        "driver.nvml.driver_version": "470.239.06"}, set()),
    "script-comment-answers.txt": ("CPU_WHEEL", "high", {"torch.version": "2.2.2", "torch.cuda": None,
                                                         "torch.is_available": False}, set()),
    # conda's plan and an exported spec state the build.
    "conda-plan-cpu.txt": ("CPU_WHEEL", "high", {"torch.version": "2.1.0", "torch.cuda": None}, set()),
    "conda-spec-cuda.txt": ("DRIVER_TOO_OLD", "high", {"torch.version": "1.12.1", "torch.cuda": "11.3",
                                                       "driver.kernel_module_version": "418.87.01"}, set()),
    # Template labels in Spanish, and an issue form's headings in Russian.
    "template-es.txt": ("CPU_WHEEL", "high", {"torch.version": "2.1.0+cpu", "torch.cuda": None,
                                              "host.os": "Windows", "host.python": "3.10.11",
                                              "torch.is_available": False}, set()),
    "form-ru-headings.txt": ("ARCH_UNSUPPORTED", "medium", {"torch.version": "2.5.1+cu124",
                                                            "driver.nvml.driver_version": "570.86.16"},
                             {"torch.arch_list", "driver.nvml.devices"}),
    # An image's tag names its torch; a container, and a pod that asked for a GPU, without a driver.
    "image-no-gpus.txt": ("NOT_VISIBLE", "medium", {"visibility.in_container": True,
                                                   "driver.nvidia_smi.works": False},
                          {"torch.version", "torch.cuda"}),
    "pod-gpu-no-driver.txt": ("NOT_VISIBLE", "medium", {"visibility.in_container": True}, set()),
    # A launch script hides the one GPU the machine has.
    "launch-script-cvd.txt": ("NOT_VISIBLE", "medium", {"visibility.cuda_visible_devices": "2"}, set()),
    # A framework's own words: about the stack, not a fact that decides.
    "lightning-no-gpu.txt": ("CANNOT_TELL", "low", {}, set()),
    # Two environments: the answer is about the one that fails.
    "two-environments.txt": ("DRIVER_TOO_OLD", "high", {"torch.version": "2.7.0+cu128",
                                                        "driver.libcuda.driver_version": 12020}, set()),
    # CUDA works: the failure is the memory the work needs, or a device index the machine lacks.
    "out-of-memory-ja.txt": ("OK", "medium", {}, set()),
    "invalid-ordinal.txt": ("OK", "medium", {}, set()),
    # A GPU torch.cuda cannot drive, a Jetson's pip wheel, torch's words paraphrased, a message cut short.
    "amd-gpu.txt": ("OTHER", "medium", {"torch.is_available": False}, set()),
    "jetson-pip.txt": ("CPU_WHEEL", "low", {"torch.cuda": None, "torch.is_available": False}, {"torch.cuda"}),
    "paraphrase-zh-too-old.txt": ("DRIVER_TOO_OLD", "low", {"torch.is_available": False}, set()),
    "cut-message.txt": ("NOT_VISIBLE", "low", {"torch.init_error": "No CUDA GPUs are available"}, set()),
    "returns-true-ja.txt": ("OK", "high", {"torch.is_available": True}, set()),
    # pip's generic aarch64 wheel (up to 2.9) on a Grace machine is CPU-only: inferred, so not high.
    "grace-pip.txt": ("CPU_WHEEL", "medium", {"torch.version": "2.5.1", "torch.cuda": None}, {"torch.cuda"}),
    # An Apple machine named by its model.
    "mac-model.txt": ("OTHER", "high", {"host.os": "Darwin"}, {"host.os"}),
    # Weighing: torch's too-old warning outranks a framework's banner that names the device it chose ('CPU');
    # a Mac named in a sentence; a Colab notebook runs on Colab's machine, not the Mac its browser is on;
    # torch's no-driver words alone are a lead; a container whose nvidia-smi works hides only the compute part.
    "yolo-banner-too-old.txt": ("DRIVER_TOO_OLD", "high", {"torch.version": "1.9.0"}, set()),
    "mac-laptop.txt": ("OTHER", "medium", {"host.os": "Darwin"}, {"host.os"}),
    "colab-from-mac.txt": ("NO_DRIVER", "medium", {}, set()),
    "no-driver-alone.txt": ("NO_DRIVER", "low", {}, set()),
    "container-smi-good.txt": ("NOT_VISIBLE", "medium", {"torch.is_available": False}, set()),
    # A Jetson's torch without JetPack's '+nv' label is the generic aarch64 wheel; a conda command's cudatoolkit=
    # pin names the build it asked for (inferred, so not high).
    "jetson-generic-release.txt": ("CPU_WHEEL", "medium", {"torch.cuda": None}, {"torch.cuda"}),
    "conda-cudatoolkit-old-driver.txt": ("DRIVER_TOO_OLD", "medium", {"torch.cuda": "10.2"}, {"torch.cuda"}),
    # Evidence that CUDA works: a kernel ran and asserted, Lightning counted the devices, the work runs on a GPU
    # by index; is_available()'s answer said before the call, and two answers of two runs in one sentence.
    "device-assert.txt": ("OK", "medium", {}, set()),
    "lightning-index.txt": ("OK", "medium", {}, set()),
    "runs-on-index.txt": ("OK", "medium", {}, set()),
    "answer-first.txt": ("OK", "high", {"torch.is_available": True}, set()),
    "two-runs-prose.txt": ("NOT_VISIBLE", "low", {"torch.is_available": True}, set()),
    # Facts in sentences: a release and build with a GPU named beside them; nvidia-smi failing; a runtime that
    # found no device on a machine that has one; Anaconda's _pytorch_select cpu_0; pip's '[cpu] version'.
    "prose-build-gpu.txt": ("ARCH_UNSUPPORTED", "medium", {"torch.version": "2.9.0+cu130", "torch.cuda": "13.0"},
                            {"torch.arch_list", "driver.nvml.devices"}),
    "smi-fails-prose.txt": ("NO_DRIVER", "low", {"driver.nvidia_smi.works": False}, set()),
    # torch's too-old message alone: the driver's CUDA is stated, that libcuda loaded follows from it.
    "found-version-only.txt": ("DRIVER_TOO_OLD", "high", {"driver.libcuda.driver_version": 11040,
                                                          "driver.libcuda.loaded": True}, {"driver.libcuda.loaded"}),
    # The runtime's "no kernel image" on a GPU named in prose (a Kepler laptop part, from the product lines).
    "no-kernel-image-laptop.txt": ("ARCH_UNSUPPORTED", "medium", {"torch.is_available": True},
                                   {"driver.nvml.devices"}),
    # A traceback cut at torch's own source line of its too-old message (torch 1.0's _check_driver); a build that
    # needs a newer driver, in words ('run on CUDA 11.2' is a version, not a GPU index); a Compose stack the
    # report calls GPU-enabled (it asked for the GPU); the private count device_count() wraps, answered in a
    # comment under it.
    "traceback-source-too-old.txt": ("DRIVER_TOO_OLD", "low", {}, set()),
    "newer-driver-words.txt": ("DRIVER_TOO_OLD", "low", {"torch.is_available": False}, set()),
    "compose-gpu-enabled-words.txt": ("NOT_VISIBLE", "medium", {}, set()),
    "private-count-comment.txt": ("OK", "high", {"torch.device_count": 2}, set()),
    # More evidence that CUDA works: nvidia-smi's process table lists the Python process; a tensor printed on cuda:0.
    "smi-python-process.txt": ("OK", "medium", {}, set()),
    "tensor-on-gpu.txt": ("OK", "medium", {}, set()),
    # Timings compared between CPU and GPU (CUDA ran on both sides): in words, as labelled times, a table with a
    # CUDA column, torch.utils.benchmark's comparison; none of it where torch says it has no GPU.
    "gpu-slower-words.txt": ("OK", "medium", {}, set()),
    "timings-labelled.txt": ("OK", "medium", {}, set()),
    "timings-table.txt": ("OK", "medium", {}, set()),
    "timings-benchmark-compare.txt": ("OK", "medium", {}, set()),
    "timings-unavailable.txt": ("NOT_VISIBLE", "low", {"torch.is_available": False}, set()),
    # Utilisation low while memory is held (the GPU waits on its input): nvidia-smi's figures beside the words,
    # memory held in words (English, Chinese); low utilisation with no memory held and no GPU is not evidence.
    "util-smi-memory-held.txt": ("OK", "medium", {}, set()),
    "util-memory-prose.txt": ("OK", "medium", {}, set()),
    "util-memory-zh.txt": ("OK", "medium", {}, set()),
    "util-allocated-zero.txt": ("OK", "medium", {}, set()),
    "util-low-no-memory.txt": ("NOT_VISIBLE", "low", {"torch.is_available": False}, set()),
    # How the work was started, read as facts: each start that asks for no GPU, in its own syntax.
    "podman-run-no-device.txt": ("NOT_VISIBLE", "medium", {"visibility.launch": "podman run",
                                                           "visibility.gpu_requested": False}, set()),
    "compose-no-deploy.txt": ("NOT_VISIBLE", "medium", {"visibility.launch": "compose",
                                                        "visibility.gpu_requested": False}, set()),
    "pod-no-gpu-limit.txt": ("NOT_VISIBLE", "medium", {"visibility.launch": "pod",
                                                       "visibility.gpu_requested": False}, set()),
    "slurm-srun-no-gres.txt": ("NOT_VISIBLE", "medium", {"visibility.launch": "slurm",
                                                         "visibility.gpu_requested": False}, set()),
    "no-device-one-gpu.txt": ("NOT_VISIBLE", "low", {}, set()),
    "conda-select-cpu.txt": ("CPU_WHEEL", "low", {}, set()),
    "bracket-cpu-version.txt": ("CPU_WHEEL", "low", {}, set()),
    # A driver stated in a sentence is a fact, for the verdict and for the fix.
    "driver-in-prose.txt": ("DRIVER_TOO_OLD", "high", {"driver.nvml.driver_version": "470.82.01"}, set()),
}


def _get(facts: Any, path: str) -> Any:
    node = facts
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else (node[int(key)] if isinstance(node, list) else None)
    return node


def _judged(name: str) -> tuple[ParsedReport, Assessment]:
    report = load_report(DATA / name)
    return report, assess_report(report.facts, classify(report.facts), report.provenance, report.inferred,
                                 report.clues)


def test_every_fixture_has_a_case() -> None:
    assert sorted(CASES) == sorted(p.name for p in DATA.glob("*.txt"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_verdict_and_facts(name: str) -> None:
    verdict, confidence, facts, inferred = CASES[name]
    report, a = _judged(name)
    assert report.kind == "text"
    assert a.verdict == verdict, f"{name}: {a}"
    if confidence:
        assert a.confidence == confidence, f"{name}: {a}"
    for path, want in facts.items():
        assert _get(report.facts, path) == want, f"{name}: {path}"
    assert inferred <= set(report.inferred), f"{name}: {report.inferred}"
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    for path, (number, text) in report.provenance.items():
        assert lines[number - 1].rstrip() == text, f"{name}: {path} points at line {number}"


def test_a_thin_report_asks_for_the_facts_that_settle_it() -> None:
    _, a = _judged("os-only.txt")
    assert a.verdict != "OK" and "python -m torch.utils.collect_env" in a.ask and "nvidia-smi" in a.ask
    assert len(a.competing) >= 3


def test_a_verdict_on_a_symptom_names_what_it_could_not_rule_out() -> None:
    _, a = _judged("nvcc-only.txt")
    assert a.confidence == "low" and a.competing


def test_text_without_a_stack_fact_is_refused() -> None:
    with pytest.raises(ReportError, match="no fact about the torch / CUDA stack"):
        load_report(b"Dear all,\nthe build is slow.\nRegards\n")


def test_stated_fact_beats_inference() -> None:
    report = load_report(b"pip install torch==2.3.1\n>>> torch.version.cuda\n'11.8'\n")
    assert report.facts["torch"]["cuda"] == "11.8" and "torch.cuda" not in report.inferred


def test_pypi_windows_wheel_is_inferred_cpu_only() -> None:
    report = load_report(b"C:\\Users\\me> pip install torch==2.3.1\n")
    assert report.facts["torch"]["cuda"] is None and "Windows" in report.inferred["torch.cuda"]


def test_a_gpu_named_in_a_bullet_is_kept_with_its_inferred_capability() -> None:
    report = load_report(DATA / "template-bullets-cpu.txt")
    assert report.details["gpu"] == "NVIDIA GeForce RTX 4070"
    assert any("compute capability 8.9 (inferred" in n for n in report.notes)


def test_clues_name_their_lines() -> None:
    report = load_report(DATA / "smi-failed-slurm.txt")
    number, text = report.clues["scheduler"]
    assert number == 1 and "#SBATCH" in text


def test_a_driver_stated_in_prose_bounds_the_fix() -> None:
    """No fix that keeps the driver proposes a build whose CUDA needs a newer driver than the one stated."""
    report = load_report(DATA / "driver-in-prose.txt")
    fixes = [line for f in classify(report.facts).failing for line in f.remediation]
    keep = [line for line in fixes if "keep the driver" in line]
    assert keep and all("/whl/cu118" in line for line in keep), fixes


@pytest.mark.parametrize(("line", "total"), [
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.32 GiB "
     "already allocated; 3.69 MiB free; 6.46 GiB reserved in total by PyTorch)", ("0", "7.79GiB")),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.19 "
     "GiB of which 1.2 GiB is free.", ("1", "79.19GiB")),
    ("CUDA out of memory. Tried to allocate 20.00 MiB", None),
])
def test_torchs_out_of_memory_message_gives_the_gpus_total(line: str, total: tuple[str, str] | None) -> None:
    # c10's caching allocator wrote the total as '(GPU 0; N GiB total capacity' before torch 2.1, and as
    # 'GPU 0 has a total capacity of N GiB' since.
    assert oom_total(line) == total
