"""The verdict a report supports, with its confidence, what it rests on, what it could not rule out, and the
commands that would settle it (pure: facts, clues and the classifier's diagnosis in, an Assessment out).

The classifier judges facts; a report is often thin, so this weighs them. A measured fact (a driver
version, a build string, the version torch found) outweighs a generic symptom, and a fact inferred from the
tables weighs less than one stated; a report outside the seven verdicts (Apple Silicon or macOS, a ROCm
build, WSL 1, a GPU that is not NVIDIA's, a container that lost its devices) is answered OTHER; OK needs
evidence of a working GPU (torch says so, names its device, runs out of its memory, or counts past it),
and facts that contradict each other lower the confidence instead of being picked from. Without a lead
the answer is CANNOT_TELL. Calibrated on the corpus (benchmarks/report_corpus.py).
"""

from __future__ import annotations

import re
from typing import Any

from harness.catalogue.scan import find
from harness.intake.leads import get, in_container, leads, torch_texts
from harness.schema import (
    ARCH_UNSUPPORTED,
    CANNOT_TELL,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    FAILING,
    HIGH,
    LOW,
    MEDIUM,
    NO_DRIVER,
    NOT_VISIBLE,
    OK,
    OTHER,
    Assessment,
    Diagnosis,
    verdict_of,
)

# Measured facts: a failing finding resting on one of these is high confidence.
MEASURED = ("driver.nvml.driver_version", "driver.libcuda.driver_version", "driver.nvml.init_error",
            "driver.libcuda.cuinit", "torch.cuda", "torch.version", "torch.arch_list", "driver.kernel_module_version",
            "visibility.cuda_visible_devices", "visibility.nvidia_driver_capabilities", "torch.devices")
# What is asked of every reporter, beside each verdict's own commands (harness/schema/verdicts.py, TABLE).
COMMON_ASK = ('python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
              "nvidia-smi")
FULL = "python -m torch.utils.collect_env"
GENERIC = "torch sees no CUDA device and says nothing about why"
LEAD = "a lead, not a diagnosis: ask for the commands below"
# Clues that CUDA worked in some process of the report: it named its device, ran out of its memory, or was
# asked for a device index past the ones it counted.
WORKING = {"torch_named_device": "torch named or described its CUDA device",
           "cuda_oom": "torch ran out of CUDA device memory (it allocated on the GPU)",
           "invalid_ordinal": "CUDA counted its devices and the code asked for an index past them",
           "runs_on_gpu": "the report says the work runs on a GPU, by its index",
           "kernel_ran": "a kernel ran on the GPU and failed on its own terms (a device-side assert, an illegal "
                         "memory access in the kernel)",
           "tensor_on_gpu": "torch printed a tensor on a CUDA device",
           "smi_process": "nvidia-smi lists the Python process holding GPU memory",
           "gpu_timed": "the report compares the work's time on the CPU with its time on a CUDA device (it ran "
                        "on both)",
           "low_util": "the GPU holds the work's memory while its utilisation stays low"}
# Evidence that CUDA itself printed (a kernel's own failure, an allocation, a device count); the rest is the
# reporter's account or a tool's view of the GPU, which a runtime's "no kernel image" outranks.
CUDA_SAID = frozenset(("kernel_ran", "cuda_oom", "invalid_ordinal"))
# What says which machine torch's "no driver" message came from: without one of these (or a stated fact
# beside torch's own words), the message alone proved right 3 times in 5 in the corpus (a sandboxed IDE or
# an image for another vendor's GPU says the same words), so it is a lead, not a medium answer.
MACHINE_CLUES = frozenset(("no_gpu", "other_gpu", "colab", "container", "nvidia_gpu", "windows", "wsl",
                           "scheduler", "smi_ok", "one_gpu"))
_TORCH_WORDS = frozenset(("torch.init_error", "torch.init_warning", "torch.is_available", "torch.importable",
                          "torch.warnings"))
# What the problem more likely is, for each kind of evidence that CUDA works.
LIKELY = {"torch_named_device": "in the work itself, not the driver stack",
          "cuda_oom": "the memory the work needs (`python -m harness memory --fit` with the GPU's total from the "
                      "message sizes what fits)",
          "invalid_ordinal": "the device index the code or its configuration asks for (count from 0)",
          "runs_on_gpu": "which GPU is used: CUDA_VISIBLE_DEVICES takes effect only when set before torch first "
                         "touches CUDA",
          "kernel_ran": "the data or labels given to the kernel (rerun with CUDA_LAUNCH_BLOCKING=1 to see the "
                        "operation that failed)",
          "tensor_on_gpu": "in the work itself, not the driver stack",
          "smi_process": "how the work uses the GPU: low utilisation with memory held points at the input pipeline "
                         "(more DataLoader workers, pin_memory=True), not the driver",
          # Small kernels and host-device copies cost more than they save, and kernels are queued
          # asynchronously: a clock read without torch.cuda.synchronize() measures the launch, not the work
          # (PyTorch docs, "CUDA semantics: Asynchronous execution"; torch.utils.benchmark synchronizes).
          "gpu_timed": "the workload or its timing, not the driver: work this small is dominated by kernel "
                       "launches and host-device copies, CUDA runs asynchronously (call torch.cuda.synchronize() "
                       "before reading the clock, or time with torch.utils.benchmark) and the first call pays for "
                       "CUDA's start (warm up before timing)",
          # The GPU waits on batches the CPU prepares (PyTorch docs, torch.utils.data: num_workers, pin_memory).
          "low_util": "the input pipeline, not the driver: the GPU waits on batches the CPU prepares (more "
                      "DataLoader workers with num_workers, pin_memory=True, preprocessing moved off the "
                      "training loop or onto the GPU)"}
# The runtime's own words that it has no kernel for the device: a kernel launch reached a visible device
# through a working driver and a CUDA build, so no driver, a hidden device and a CPU build are ruled out.
_KERNEL_WORDS = ("cuda.no_kernel_image", "torch.arch_not_compatible")
# Set by the reader (several.py) when another environment of the report fails otherwise, and as surely.
CONFLICT, TIE = "environment_conflict", "environment_tie"


def _asked(*verdicts: str) -> tuple[str, ...]:
    out = [FULL, *COMMON_ASK]
    for v in verdicts:
        out.extend(verdict_of(v).ask)
    return tuple(dict.fromkeys(out))


# torch's out-of-memory message names the device's total: 'Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total
# capacity; ...' before torch 2.1, 'Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which
# ...' since (c10/cuda/CUDACachingAllocator.cpp).
_OOM_TOTAL_RE = re.compile(r"GPU\s?(?P<gpu>\d{1,3})(?:;\s?| has a total capacity of )(?P<total>\d{1,4}(?:\.\d{1,3})?)"
                           r"\s?(?P<unit>[GMT]iB)")


def oom_total(line: str) -> tuple[str, str] | None:
    """(the GPU's index, its total as `memory --budget` reads it: '23.64GiB') from torch's OOM message."""
    m = _OOM_TOTAL_RE.search(line)
    return (m.group("gpu"), f"{m.group('total')}{m.group('unit')}") if m else None


def assess_report(facts: Any, diagnosis: Diagnosis, provenance: Any, inferred: Any, clues: Any) -> Assessment:
    """assess() over a parsed report's provenance, inferred facts and clues."""
    a = assess(facts, diagnosis, set(provenance) - set(inferred), set(inferred), set(clues))
    oom = clues.get("cuda_oom") if a.verdict == OK and hasattr(clues, "get") else None
    total = oom_total(str(oom[1])) if oom else None
    if total is None:
        return a
    # The out-of-memory report is handed to the memory planner with the device's total from the message.
    gpu, budget = total
    command = f"python -m harness memory --model <model> --budget {budget} --fit"
    why = (f"CUDA works; the problem is more likely the memory the work needs: GPU {gpu} has {budget} in all "
           f"(torch's message); `{command}` (or --config config.json / --params N) says what fits")
    return Assessment(a.verdict, a.confidence, a.rests_on, a.competing, a.ask, why)


def assess(facts: Any, diagnosis: Diagnosis, stated: set[str], inferred: set[str], clues: set[str]) -> Assessment:
    """Weigh the classifier's verdict against how the facts were known and what the prose says."""
    a = _weigh(facts, diagnosis, stated, inferred, clues)
    if CONFLICT in clues and a.confidence != LOW:
        # Another environment of the report fails otherwise: this one decides, but not beyond doubt.
        lowered = LOW if TIE in clues else MEDIUM
        return Assessment(a.verdict, lowered, (*a.rests_on, "another environment in the report fails otherwise"),
                          a.competing, a.ask, a.why + ("; the report's environments disagree" if TIE in clues else ""))
    return a


def _weigh(facts: Any, diagnosis: Diagnosis, stated: set[str], inferred: set[str], clues: set[str]) -> Assessment:
    outside = _outside(facts, clues)
    if outside:
        return outside
    failing = diagnosis.failing
    if failing and failing[0].title == GENERIC:
        return _symptom(facts, clues)
    if failing:
        return _failing(facts, diagnosis.verdict, failing[0].title, stated, inferred, clues)
    return _no_failure(facts, stated, clues)


def _outside(facts: Any, clues: set[str]) -> Assessment | None:
    if get(facts, "torch.is_available") is True:
        return None  # a working device (a ROCm build included) is judged as such
    if get(facts, "torch.hip") or ("rocm" in clues and not get(facts, "torch.cuda")):
        return Assessment(OTHER, MEDIUM, ("a ROCm build of torch (AMD GPUs)",), (), _asked(),
                          "outside: a ROCm build uses AMD's HIP, not the NVIDIA driver stack refenv judges")
    if ("apple_silicon" in clues or get(facts, "host.os") == "Darwin") and "colab" not in clues:
        why = "Apple Silicon" if "apple_silicon" in clues else "macOS"
        return Assessment(OTHER, HIGH if "apple_silicon" in clues else MEDIUM, (f"the machine is a Mac ({why})",),
                          (NO_DRIVER,), ('python -c "import torch; print(torch.backends.mps.is_available())"',),
                          "outside: macOS has no current NVIDIA CUDA driver; on Apple Silicon torch uses the "
                          "'mps' device, not CUDA")
    no_driver = find(torch_texts(facts), ("torch.no_driver",)) is not None
    if "wsl1" in clues or ("wsl" in clues and no_driver and not get(facts, "driver.nvml.driver_version")):
        return Assessment(OTHER, MEDIUM if "wsl1" in clues else LOW, ("the report runs under WSL",),
                          (NO_DRIVER,), ("wsl -l -v", "nvidia-smi", "ls -l /usr/lib/wsl/lib/libcuda.so*"),
                          "outside: WSL 1 has no GPU passthrough; under WSL 2 the driver is the Windows host's "
                          "(check the distribution's WSL version with `wsl -l -v`)")
    if "other_gpu" in clues and "nvidia_gpu" not in clues and not no_driver and not get(
            facts, "driver.nvml.driver_version"):
        return Assessment(OTHER, MEDIUM, ("the GPU the report names is not NVIDIA's (AMD or Intel)",),
                          (NO_DRIVER, CPU_WHEEL), ("lspci | grep -i -e vga -e 3d", *_asked()),
                          "outside: torch.cuda drives NVIDIA GPUs; AMD's need a ROCm build of torch, Intel's the "
                          "'xpu' device")
    if get(facts, "driver.nvml.init_error_code") == 999 and in_container(facts, clues):
        # NVIDIA container toolkit troubleshooting: 'Failed to initialize NVML: Unknown Error' inside a running
        # container after systemd or `docker update` re-applied its cgroup device rules.
        return Assessment(OTHER, MEDIUM, ("NVML fails with 'Unknown Error' inside a container",),
                          (NOT_VISIBLE, DRIVER_BROKEN), ("nvidia-smi", "docker exec CONTAINER nvidia-smi",
                                                         "cat /etc/docker/daemon.json"),
                          "outside: a container that lost its GPU devices after it started (its cgroup device "
                          "rules were re-applied); restart it, or give it the devices explicitly")
    return None


def _symptom(facts: Any, clues: set[str]) -> Assessment:
    """is_available() is False (or torch found no device) and the classifier has nothing more: the leads."""
    found = leads(facts, clues)
    if found:
        verdict, why, confidence = found[0]
        others = tuple(dict.fromkeys(v for v, _, _ in found[1:] if v != verdict)) or (
            tuple(v for v in (NOT_VISIBLE, NO_DRIVER) if v != verdict))
        return Assessment(verdict, confidence, (why, GENERIC), others, _asked(verdict, *others),
                          LEAD if confidence == LOW else "")
    return Assessment(NOT_VISIBLE, LOW, (GENERIC,), (NO_DRIVER, DRIVER_BROKEN, CPU_WHEEL),
                      _asked(NOT_VISIBLE, NO_DRIVER, CPU_WHEEL))


def _failing(facts: Any, verdict: str, title: str, stated: set[str], inferred: set[str],
             clues: set[str]) -> Assessment:
    measured = [p for p in MEASURED if p in stated and p not in inferred]
    rests = [title, *(f"{p} = {get(facts, p)!r} (stated)" for p in measured[:4])]
    # A GPU's inferred capability bears on ARCH_UNSUPPORTED only.
    relevant = [p for p in sorted(inferred) if verdict == ARCH_UNSUPPORTED or not p.startswith("driver.nvml.devices")]
    rests.extend(f"{p} (inferred)" for p in relevant[:3])
    container = in_container(facts, clues)
    if verdict in (NO_DRIVER, DRIVER_BROKEN) and "scheduler" in clues and "gpu_requested" not in clues:
        return Assessment(NOT_VISIBLE, MEDIUM, (*rests, "a batch-scheduler job (Slurm/PBS): without a GPU "
                          "allocated the job sees no driver"), (verdict,),
                          (*_asked(NOT_VISIBLE, verdict), "scontrol show job $SLURM_JOB_ID | grep -i gres"),
                          "the job was given no GPU: request one (e.g. --gres=gpu:1)")
    asked_for = "container_gpu_request" in clues and verdict == NO_DRIVER
    if verdict in (NO_DRIVER, DRIVER_BROKEN) and container and (clues & {"smi_cuda_na", "compose_gpu", "smi_ok"}
                                                                or asked_for):
        return Assessment(NOT_VISIBLE, MEDIUM, (*rests, "a container that asked for a GPU, or whose nvidia-smi "
                          "works (or shows CUDA Version N/A): the driver's compute libraries were not mounted"),
                          (verdict,), _asked(NOT_VISIBLE, verdict), "give the container GPU access with the "
                          "'compute' capability (--gpus all, capabilities: [gpu, compute, utility], or the "
                          "runtime class / device plugin that mounts the driver)")
    if verdict == NO_DRIVER and "nvidia_gpu" in clues and "no_gpu" not in clues and not container:
        competing: tuple[str, ...] = (DRIVER_BROKEN, NOT_VISIBLE)
    elif verdict == NO_DRIVER:
        competing = (NOT_VISIBLE,)
    elif verdict == DRIVER_BROKEN:
        competing = (DRIVER_TOO_OLD, NOT_VISIBLE) if container else (DRIVER_TOO_OLD,)
    elif verdict in (CPU_WHEEL, DRIVER_TOO_OLD):
        competing = ()
    elif verdict == NOT_VISIBLE:
        competing = (NO_DRIVER, DRIVER_BROKEN)
    elif find(torch_texts(facts), _KERNEL_WORDS) is not None:
        competing = ()  # the runtime itself said it has no kernel for the device: nothing else launches one
    else:
        competing = (DRIVER_TOO_OLD,) if not measured else ()
    if verdict == NOT_VISIBLE and get(facts, "visibility.gpu_requested") is False and not measured:
        confidence = MEDIUM  # the report's own start of the work asks for no GPU (launches.py)
    elif verdict == NO_DRIVER and not clues & MACHINE_CLUES and not stated - _TORCH_WORDS:
        confidence = LOW  # torch's words alone: see MACHINE_CLUES
    elif verdict == ARCH_UNSUPPORTED and not torch_texts(facts) and (
            "torch.arch_list" in inferred or any(p.endswith("compute_capability") for p in inferred)):
        confidence = MEDIUM  # the architectures or the capability come from the tables, not from torch
    elif measured:
        # A CPU build inferred from where pip installs from (not seen) is not beyond doubt.
        # Nor is a CUDA build inferred from what a conda command asked for (the solver may have given another).
        guessed = "torch.cuda" in inferred and not torch_texts(facts) and (
            verdict == CPU_WHEEL or "conda_install" in clues)
        confidence = MEDIUM if guessed else HIGH
    elif inferred and not torch_texts(facts):
        confidence = LOW
    else:
        confidence = MEDIUM
    return Assessment(verdict, confidence, tuple(rests), competing, _asked(verdict, *competing))


def _no_failure(facts: Any, stated: set[str], clues: set[str]) -> Assessment:
    available = get(facts, "torch.is_available")
    count = get(facts, "torch.device_count")
    texts = torch_texts(facts)
    if available is True or (isinstance(count, int) and count > 0):
        how = "torch.is_available" if available is True else "torch.device_count"
        said = f"{how} = {get(facts, how)!r}"
        if "available_both" in clues or find(texts, ("torch.no_gpus", "cuda.no_device")):
            return Assessment(NOT_VISIBLE, LOW, (said, "and torch finds no device in another run of the report"),
                              (OK, NO_DRIVER), _asked(NOT_VISIBLE),
                              "torch sees a GPU in one run and none in another: what differs between them (a "
                              "script, launcher, scheduler or container setting CUDA_VISIBLE_DEVICES) hides it")
        if find(texts, _KERNEL_WORDS) is not None and not clues & set(WORKING):
            # The runtime's own words: the device is seen, and the build (or an extension) has no kernel for it.
            return Assessment(ARCH_UNSUPPORTED, MEDIUM, (said, "the CUDA runtime has no kernel image for the "
                              "device"), (OK,), _asked(ARCH_UNSUPPORTED),
                              "is_available() is True while kernels fail: the build has no kernel for this GPU")
        if "failure_trace" in clues and "arch_words" in clues and not clues & set(WORKING):
            return Assessment(ARCH_UNSUPPORTED, LOW, (said, "an error after it, and the report discusses the GPU's "
                              "architecture"), (OK,), _asked(ARCH_UNSUPPORTED),
                              "a lead, not a diagnosis: is_available() is True while kernels fail")
        sure = HIGH if how in stated and "failure_trace" not in clues else MEDIUM
        return Assessment(OK, sure, (said,), (), ())
    shown = [c for c in WORKING if c in clues]
    if find(texts, _KERNEL_WORDS) is not None:
        # The runtime said no kernel launches on this device: only CUDA's own words that one ran outweigh it.
        shown = [c for c in shown if c in CUDA_SAID]
    working = [WORKING[c] for c in shown]
    if working and available is not False:
        likely = "; ".join(dict.fromkeys(LIKELY[c] for c in shown))
        return Assessment(OK, MEDIUM, tuple(working), (), _asked(), f"CUDA works; the problem is more likely {likely}")
    found = leads(facts, clues)
    if available is False and not found:
        found.append((CANNOT_TELL, "torch.cuda.is_available() is False, and nothing says why", LOW))
    if not found:
        return Assessment(CANNOT_TELL, LOW, ("the report holds no evidence of a working GPU nor of a failure",),
                          tuple(v for v in FAILING), _asked(*FAILING),
                          "cannot tell: OK needs evidence that torch sees a GPU")
    verdict, why, confidence = found[0]
    others = tuple(dict.fromkeys(v for v, _, _ in found[1:] if v != verdict))
    rest = others or tuple(v for v in (NO_DRIVER, NOT_VISIBLE, CPU_WHEEL) if v != verdict)
    if find(texts, _KERNEL_WORDS) is not None:
        rest = tuple(v for v in rest if v not in (NO_DRIVER, NOT_VISIBLE, CPU_WHEEL))
    asked = _asked(*rest) if verdict == CANNOT_TELL else _asked(verdict, *rest)
    return Assessment(verdict, confidence, (why,), rest, asked, LEAD if confidence == LOW else "")
