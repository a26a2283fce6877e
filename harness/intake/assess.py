"""The verdict a report supports, with its confidence, what it rests on, what it could not rule out, and the
commands that would settle it (pure: facts, clues and the classifier's diagnosis in, an Assessment out).

The classifier judges facts; a report is often thin, so this weighs them. A measured fact (a driver
version, a build string, the version torch found) outweighs a generic symptom; a report outside the seven
verdicts (Apple Silicon or macOS, a ROCm build, WSL 1) is answered OTHER; OK needs evidence of a working GPU,
and without a lead the answer is CANNOT_TELL.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.catalogue.scan import find
from harness.schema import (
    ARCH_UNSUPPORTED,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    FAILING,
    NO_DRIVER,
    NOT_VISIBLE,
    OK,
    Diagnosis,
)

OTHER = "OTHER"
CANNOT_TELL = "CANNOT_TELL"
HIGH, MEDIUM, LOW = "high", "medium", "low"

# Measured facts: a failing finding resting on one of these is high confidence.
MEASURED = ("driver.nvml.driver_version", "driver.libcuda.driver_version", "driver.nvml.init_error",
            "driver.libcuda.cuinit", "torch.cuda", "torch.version", "torch.arch_list", "driver.kernel_module_version",
            "visibility.cuda_visible_devices", "visibility.nvidia_driver_capabilities", "torch.devices")
COMMON_ASK = ('python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"',
              "nvidia-smi")
ASK = {
    NO_DRIVER: ("nvidia-smi -L", "lspci | grep -i nvidia", "ls -l /dev/nvidia*"),
    DRIVER_BROKEN: ("cat /proc/driver/nvidia/version", "sudo dmesg | grep -i -e NVRM -e Xid",
                    "systemctl status nvidia-fabricmanager"),
    CPU_WHEEL: ("pip list 2>/dev/null | grep -i torch", "conda list pytorch"),
    DRIVER_TOO_OLD: ("nvidia-smi --query-gpu=driver_version --format=csv",),
    NOT_VISIBLE: ("echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES",
                  "ls -l /dev/nvidia*", "env | grep -i -e NVIDIA_DRIVER_CAPABILITIES -e SLURM_JOB_GPUS"),
    ARCH_UNSUPPORTED: ('python -c "import torch; print(torch.cuda.get_arch_list(), '
                       'torch.cuda.get_device_capability())"',),
}
FULL = "python -m torch.utils.collect_env"


@dataclass(frozen=True)
class Assessment:
    verdict: str                  # one of the seven verdicts, OTHER, or CANNOT_TELL
    confidence: str               # high | medium | low
    rests_on: tuple[str, ...]     # the facts and clues the verdict rests on
    competing: tuple[str, ...]    # verdicts it could not rule out
    ask: tuple[str, ...]          # commands to ask the reporter for next
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("rests_on", "competing", "ask"):
            d[key] = list(d[key])
        return d


def _get(facts: Any, path: str) -> Any:
    node = facts
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _asked(*verdicts: str) -> tuple[str, ...]:
    out = [FULL, *COMMON_ASK]
    for v in verdicts:
        out.extend(ASK.get(v, ()))
    return tuple(dict.fromkeys(out))


def assess_report(facts: Any, diagnosis: Diagnosis, provenance: Any, inferred: Any, clues: Any) -> Assessment:
    """assess() over a parsed report's provenance, inferred facts and clues."""
    return assess(facts, diagnosis, set(provenance) - set(inferred), set(inferred), set(clues))


def assess(facts: Any, diagnosis: Diagnosis, stated: set[str], inferred: set[str], clues: set[str]) -> Assessment:
    """Weigh the classifier's verdict against how the facts were known and what the prose says."""
    outside = _outside(facts, clues)
    if outside:
        return outside
    failing = diagnosis.failing
    if failing and failing[0].title == GENERIC:
        # The classifier's last resort is a symptom, not a measurement: a lead in the prose comes first.
        leads = [lead for lead in _leads(facts, clues) if lead[0] != NOT_VISIBLE]
        if leads:
            verdict, why = leads[0]
            return Assessment(verdict, LOW, (why, GENERIC), (NOT_VISIBLE,), _asked(verdict, NOT_VISIBLE),
                              "a lead, not a diagnosis: ask for the commands below")
        return Assessment(NOT_VISIBLE, LOW, (GENERIC,), (NO_DRIVER, DRIVER_BROKEN, CPU_WHEEL),
                          _asked(NOT_VISIBLE, NO_DRIVER, CPU_WHEEL))
    if failing:
        return _failing(facts, diagnosis.verdict, failing[0].title, stated, inferred, clues)
    return _no_failure(facts, stated, clues)


GENERIC = "torch sees no CUDA device and says nothing about why"


def _outside(facts: Any, clues: set[str]) -> Assessment | None:
    if _get(facts, "torch.is_available") is True:
        return None  # a working device (a ROCm build included) is judged as such
    if _get(facts, "torch.hip") or ("rocm" in clues and not _get(facts, "torch.cuda")):
        return Assessment(OTHER, MEDIUM, ("a ROCm build of torch (AMD GPUs)",), (), _asked(),
                          "outside: a ROCm build uses AMD's HIP, not the NVIDIA driver stack refenv judges")
    if "apple_silicon" in clues or _get(facts, "host.os") == "Darwin":
        why = "Apple Silicon" if "apple_silicon" in clues else "macOS"
        return Assessment(OTHER, HIGH if "apple_silicon" in clues else MEDIUM, (f"the machine is a Mac ({why})",),
                          (NO_DRIVER,), ('python -c "import torch; print(torch.backends.mps.is_available())"',),
                          "outside: macOS has no current NVIDIA CUDA driver; on Apple Silicon torch uses the "
                          "'mps' device, not CUDA")
    no_driver = find(_torch_texts(facts), ("torch.no_driver",)) is not None
    if "wsl1" in clues or ("wsl" in clues and no_driver and not _get(facts, "driver.nvml.driver_version")):
        return Assessment(OTHER, MEDIUM if "wsl1" in clues else LOW, ("the report runs under WSL",),
                          (NO_DRIVER,), ("wsl -l -v", "nvidia-smi", "ls -l /usr/lib/wsl/lib/libcuda.so*"),
                          "outside: WSL 1 has no GPU passthrough; under WSL 2 the driver is the Windows host's "
                          "(check the distribution's WSL version with `wsl -l -v`)")
    return None


def _torch_texts(facts: Any) -> str:
    parts = [_get(facts, "torch.init_warning"), _get(facts, "torch.init_error"), *(_get(facts, "torch.warnings") or [])]
    return "\n".join(str(p) for p in parts if p)


def _failing(facts: Any, verdict: str, title: str, stated: set[str], inferred: set[str],
             clues: set[str]) -> Assessment:
    measured = [p for p in MEASURED if p in stated and p not in inferred]
    rests = [title, *(f"{p} = {_get(facts, p)!r} (stated)" for p in measured[:4])]
    # A GPU's inferred capability bears on ARCH_UNSUPPORTED only.
    relevant = [p for p in sorted(inferred) if verdict == ARCH_UNSUPPORTED or not p.startswith("driver.nvml.devices")]
    rests.extend(f"{p} (inferred)" for p in relevant[:3])
    in_container = _get(facts, "visibility.in_container") or "container" in clues
    if verdict in (NO_DRIVER, DRIVER_BROKEN) and "scheduler" in clues and "gpu_requested" not in clues:
        return Assessment(NOT_VISIBLE, MEDIUM, (*rests, "a batch-scheduler job (Slurm/PBS): without a GPU "
                          "allocated the job sees no driver"), (verdict,),
                          (*_asked(NOT_VISIBLE, verdict), "scontrol show job $SLURM_JOB_ID | grep -i gres"),
                          "the job was given no GPU: request one (e.g. --gres=gpu:1)")
    if verdict in (NO_DRIVER, DRIVER_BROKEN) and in_container and (
            "smi_cuda_na" in clues or "compose_gpu" in clues or "smi_ok" in clues):
        return Assessment(NOT_VISIBLE, MEDIUM, (*rests, "a container whose nvidia-smi works (or shows CUDA "
                          "Version N/A): the driver's compute libraries were not mounted"), (verdict,),
                          _asked(NOT_VISIBLE, verdict), "give the container GPU access with the 'compute' "
                          "capability (--gpus all, or capabilities: [gpu, compute, utility])")
    if verdict == NO_DRIVER and "nvidia_gpu" in clues and "no_gpu" not in clues and not in_container:
        competing: tuple[str, ...] = (DRIVER_BROKEN, NOT_VISIBLE)
    elif verdict == NO_DRIVER:
        competing = (NOT_VISIBLE,)
    elif verdict == DRIVER_BROKEN:
        competing = (DRIVER_TOO_OLD, NOT_VISIBLE) if in_container else (DRIVER_TOO_OLD,)
    elif verdict in (CPU_WHEEL, DRIVER_TOO_OLD):
        competing = ()
    elif verdict == NOT_VISIBLE:
        competing = (NO_DRIVER, DRIVER_BROKEN)
    else:
        competing = (DRIVER_TOO_OLD,) if not measured else ()
    if measured:
        confidence = HIGH
    elif inferred and not _torch_texts(facts):
        confidence = LOW
    else:
        confidence = MEDIUM
    return Assessment(verdict, confidence, tuple(rests), competing, _asked(verdict, *competing))


def _no_failure(facts: Any, stated: set[str], clues: set[str]) -> Assessment:
    available = _get(facts, "torch.is_available")
    count = _get(facts, "torch.device_count")
    if available is True or (isinstance(count, int) and count > 0):
        how = "torch.is_available" if available is True else "torch.device_count"
        return Assessment(OK, HIGH if how in stated else MEDIUM, (f"{how} = {_get(facts, how)!r}",), (), ())
    leads = _leads(facts, clues)
    if available is False and not leads:
        leads.append((CANNOT_TELL, "torch.cuda.is_available() is False, and nothing says why"))
    if not leads:
        return Assessment(CANNOT_TELL, LOW, ("the report holds no evidence of a working GPU nor of a failure",),
                          tuple(v for v in FAILING), _asked(*FAILING),
                          "cannot tell: OK needs evidence that torch sees a GPU")
    verdict, why = leads[0]
    others = tuple(dict.fromkeys(v for v, _ in leads[1:] if v != verdict))
    rest = others or tuple(v for v in (NO_DRIVER, NOT_VISIBLE, CPU_WHEEL) if v != verdict)
    asked = _asked(*rest) if verdict == CANNOT_TELL else _asked(verdict, *rest)
    return Assessment(verdict, LOW, (why,), rest, asked,
                      "a lead, not a diagnosis: ask for the commands below")


def _leads(facts: Any, clues: set[str]) -> list[tuple[str, str]]:
    """What the prose and the symptoms point at, strongest first, when no measured fact decides."""
    leads: list[tuple[str, str]] = []
    texts = _torch_texts(facts)
    cvd = _get(facts, "visibility.cuda_visible_devices")
    if "scheduler" in clues and "gpu_requested" not in clues:
        leads.append((NOT_VISIBLE, "a batch-scheduler job (Slurm/PBS) that may have been given no GPU"))
    if cvd is not None:
        leads.append((NOT_VISIBLE, f"CUDA_VISIBLE_DEVICES={cvd!r} decides which GPUs torch may see"))
    if find(texts, ("cuda.no_kernel_image",)) or _get(facts, "torch.devices"):
        leads.append((ARCH_UNSUPPORTED, "torch named the GPU's compute capability as one its build does not "
                       "carry (or reported no kernel image for it)"))
    if "kernel_fault" in clues:
        leads.append((DRIVER_BROKEN, "the kernel log reports a GPU or driver fault (Xid, RmInitAdapter)"))
    if "not_compiled" in clues or "conda_cpuonly" in clues:
        leads.append((CPU_WHEEL, "the report quotes torch's words for a CPU-only build (or installs conda's "
                      "cpuonly)"))
    if _get(facts, "driver.nvidia_smi.works") is False:
        leads.append((NO_DRIVER, "nvidia-smi could not communicate with the driver"))
    if "no_gpu" in clues or ("colab" in clues and "nvidia_gpu" not in clues):
        leads.append((NO_DRIVER, "the report says the machine has no NVIDIA GPU (or a CPU runtime)"))
    if "no_device" in clues:
        leads.append((NOT_VISIBLE if _get(facts, "visibility.cuda_visible_devices") is not None else NO_DRIVER,
                      "the CUDA runtime found no CUDA-capable device"))
    if "insufficient_driver" in clues:
        leads.append((DRIVER_TOO_OLD, "the CUDA runtime says the driver is older than it needs"))
    if _get(facts, "visibility.in_container") or "container" in clues:
        leads.append((NOT_VISIBLE, "it runs in a container, whose GPU access is the usual gap"))
    return leads
