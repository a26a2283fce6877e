"""What a thin report points at when no measured fact decides: its leads, strongest first (pure).

A lead is a verdict, why, and how sure: the facts of visibility (a scheduler job without a GPU, a hiding
CUDA_VISIBLE_DEVICES), then the stack's own words (a kernel fault, an error code, torch's words retyped),
then what the machine is (no GPU, a Colab CPU runtime), then how torch was installed, then where it
runs (a container). Each names the clue or fact it rests on.
"""

from __future__ import annotations

from typing import Any

from harness import cvd
from harness.catalogue.scan import find
from harness.classify.driver import LAUNCH_WORDS
from harness.schema import (
    ARCH_UNSUPPORTED,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    LOW,
    MEDIUM,
    NO_DRIVER,
    NOT_VISIBLE,
)


def get(facts: Any, path: str) -> Any:
    node = facts
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def torch_texts(facts: Any) -> str:
    parts = [get(facts, "torch.init_warning"), get(facts, "torch.init_error"), *(get(facts, "torch.warnings") or [])]
    return "\n".join(str(p) for p in parts if p)


def in_container(facts: Any, clues: set[str]) -> bool:
    return bool(get(facts, "visibility.in_container")) or "container" in clues


def _hidden_by_cvd(facts: Any, clues: set[str]) -> bool:
    """CUDA_VISIBLE_DEVICES names only ordinals past the one GPU the report says the machine has."""
    value = get(facts, "visibility.cuda_visible_devices")
    return value is not None and "one_gpu" in clues and not cvd.parse(str(value), ["GPU-0"]).visible


def leads(facts: Any, clues: set[str]) -> list[tuple[str, str, str]]:
    """Every lead the report holds, strongest first: (verdict, why, confidence)."""
    out: list[tuple[str, str, str]] = []
    texts = torch_texts(facts)
    cvd_value = get(facts, "visibility.cuda_visible_devices")
    launch = get(facts, "visibility.launch")
    if launch and get(facts, "visibility.gpu_requested") is False:
        words = LAUNCH_WORDS.get(str(launch), f"the {launch} start")
        out.append((NOT_VISIBLE, f"{words} asks for no GPU", MEDIUM))
    if "scheduler" in clues and "gpu_requested" not in clues:
        out.append((NOT_VISIBLE, "a batch-scheduler job (Slurm/PBS) that may have been given no GPU", LOW))
    if cvd_value is not None:
        hidden = _hidden_by_cvd(facts, clues)
        out.append((NOT_VISIBLE, f"CUDA_VISIBLE_DEVICES={cvd_value!r} decides which GPUs torch may see"
                    + ("; the report says the machine has one GPU, which that value hides" if hidden else ""),
                    MEDIUM if hidden else LOW))
    for verdict, words in ((DRIVER_TOO_OLD, "its driver-too-old message"), (NO_DRIVER, "its no-driver message")):
        if f"source_{verdict}" in clues:
            out.append((verdict, f"the traceback stops at torch's source line of {words} (its driver check, "
                        "torch/cuda/__init__.py), though the message itself is not shown", LOW))
    if "works_with_older_cuda" in clues:
        out.append((DRIVER_TOO_OLD, "another environment of the report works with torch built for an older CUDA: "
                    "the driver runs that CUDA and not this build's", MEDIUM))
    if find(texts, ("cuda.no_kernel_image",)) or get(facts, "torch.devices") or "error_code_ARCH_UNSUPPORTED" in clues:
        out.append((ARCH_UNSUPPORTED, "torch named the GPU's compute capability as one its build does not carry (or "
                    "the runtime found no kernel image for it)", LOW))
    if "gpu_fell_off" in clues:
        out.append((DRIVER_BROKEN, "the kernel log says a GPU has fallen off the bus (Xid 79): the driver cannot "
                    "reach it until it is reset or the machine rebooted, and CUDA's initialisation hangs or fails "
                    "meanwhile", MEDIUM))
    if "kernel_fault" in clues:
        out.append((DRIVER_BROKEN, "the kernel log reports a GPU or driver fault (Xid, RmInitAdapter)", LOW))
    for verdict in (DRIVER_BROKEN, DRIVER_TOO_OLD, NOT_VISIBLE, NO_DRIVER, CPU_WHEEL):
        if f"error_code_{verdict}" in clues:
            out.append((verdict, f"the report names a CUDA error code whose meaning is {verdict}", LOW))
        if f"cut_{verdict}" in clues:
            out.append((verdict, f"the report ends inside the stack's message for {verdict}, cut short", LOW))
    if "hang_words" in clues:
        out.append((DRIVER_BROKEN, "the report says CUDA's initialisation hangs (in its own words): a hung driver or "
                    "a GPU fallen off the bus", LOW))
    if "init_failed_words" in clues:
        out.append((DRIVER_BROKEN, "the report says CUDA's initialisation failed (in its own words)", LOW))
    if "too_old_words" in clues or "insufficient_driver" in clues:
        out.append((DRIVER_TOO_OLD, "the report says the driver is too old for this CUDA (in its own or the "
                    "runtime's words)", LOW))
    if clues & {"not_compiled", "conda_cpuonly", "cpu_build_words"}:
        out.append((CPU_WHEEL, "the report says torch is a CPU-only build (torch's words retyped, conda's cpuonly, "
                    "or its own words)", LOW))
    if get(facts, "driver.nvidia_smi.works") is False:
        if in_container(facts, clues):
            out.append((NOT_VISIBLE, "nvidia-smi is missing or fails inside a container: the driver was not "
                        "mounted into it (no GPU access requested)", LOW))
        else:
            out.append((NO_DRIVER, "nvidia-smi could not communicate with the driver", LOW))
    if "no_gpu" in clues or ("colab" in clues and "nvidia_gpu" not in clues):
        out.append((NO_DRIVER, "the report says the machine has no NVIDIA GPU (or a CPU runtime)", LOW))
    if "no_device" in clues:
        # cudaErrorNoDevice comes from a driver that loaded and listed no device (without one the runtime says
        # the driver is insufficient, cudaErrorInsufficientDriver): on a machine the report says has an NVIDIA
        # GPU, something hides it.
        has_gpu = bool(clues & {"one_gpu", "nvidia_gpu"}) and "no_gpu" not in clues
        out.append((NOT_VISIBLE if cvd_value is not None or has_gpu else NO_DRIVER, "the CUDA runtime found no "
                    "CUDA-capable device" + (" on a machine the report says has an NVIDIA GPU" if has_gpu else ""),
                    LOW))
    if find(texts, ("torch.no_gpus",)) and cvd_value is None:
        out.append((NOT_VISIBLE, "torch found no device it may use (torch.no_gpus): something hides "
                    "them (CUDA_VISIBLE_DEVICES, a launcher, a container), or the machine has none", LOW))
    if "works_alone" in clues:
        out.append((NOT_VISIBLE, "it works when run directly and fails under a launcher, job or script: that "
                    "setting hides the GPUs", LOW))
    if clues & {"conda_install", "conda_forge"} and get(facts, "torch.cuda") is None and "pip_install" not in clues:
        out.append((CPU_WHEEL, "conda installed torch: when its solver finds no CUDA build that fits the other "
                    "packages it installs the CPU one", LOW))
    if in_container(facts, clues):
        out.append((NOT_VISIBLE, "it runs in a container, whose GPU access is the usual gap", LOW))
    return out
