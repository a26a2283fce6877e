"""The fix of a report's answer where the weighing chose another verdict than the classifier's first finding.

The classifier judges the facts alone; the assessment (assess.py) weighs how they were known and what the
prose says, and may answer otherwise: torch's "no driver" words in a container whose nvidia-smi works are
NOT_VISIBLE, not NO_DRIVER; a Slurm job that requested no GPU is NOT_VISIBLE. An answer must then not head
with, nor fix, the finding it set aside: this gives the answer's verdict its own finding, with the evidence it
rests on and the fix of that verdict for what the report shows (pure).
"""

from __future__ import annotations

from typing import Any

from harness.catalogue.remedies import render
from harness.classify.context import Context
from harness.classify.driver import launch_evidence, launch_remedy
from harness.intake.leads import in_container
from harness.schema import (
    ARCH_UNSUPPORTED,
    BY_CODE,
    CPU_WHEEL,
    DRIVER_BROKEN,
    DRIVER_TOO_OLD,
    FAILING,
    NO_DRIVER,
    NOT_VISIBLE,
    SEVERITY_ERROR,
    Assessment,
    Diagnosis,
    Finding,
    Remedy,
)

LAYERS = {NO_DRIVER: "driver", DRIVER_BROKEN: "driver", CPU_WHEEL: "wheel", DRIVER_TOO_OLD: "wheel",
          NOT_VISIBLE: "visibility", ARCH_UNSUPPORTED: "wheel"}
# The machine the report describes has no NVIDIA GPU: a driver cannot help (platforms.py's clue).
NO_GPU = "no_gpu"
SCHEDULER = "scheduler"


def answer_finding(facts: Any, diagnosis: Diagnosis, assessment: Assessment, clues: set[str]) -> Finding | None:
    """A finding for the assessment's verdict when no finding of the classifier's says it first; else None."""
    verdict = assessment.verdict
    if verdict not in FAILING:
        return None
    failing = diagnosis.failing
    no_gpu = verdict == NO_DRIVER and NO_GPU in clues
    if failing and failing[0].verdict == verdict and not no_gpu:
        return None
    ctx = Context(facts)
    remedy = _remedy(ctx, verdict, clues)
    title = _title(ctx, verdict, clues, failing[0].title if failing else "")
    evidence = tuple(dict.fromkeys([*(f for f in assessment.rests_on if f != title), *launch_evidence(ctx)]))
    return Finding(verdict, SEVERITY_ERROR, title, evidence, render(remedy) if remedy else (), LAYERS[verdict],
                   remedy)


def _title(ctx: Context, verdict: str, clues: set[str], set_aside: str) -> str:
    words = BY_CODE[verdict].words.replace(" for CUDA {cuda}", "")
    if verdict == NOT_VISIBLE and (ctx.vis.get("launch") == "slurm" or SCHEDULER in clues):
        return "the batch job was started without a GPU"
    if verdict == NOT_VISIBLE and in_container(ctx.facts, clues):
        return "the container was not given the GPU (or the driver's libraries)"
    if verdict == NO_DRIVER and NO_GPU in clues:
        return "no NVIDIA GPU on this machine, so no driver for one"
    return f"{words} (weighed over: {set_aside})" if set_aside else words


def _remedy(ctx: Context, verdict: str, clues: set[str]) -> Remedy | None:
    if verdict == NOT_VISIBLE:
        started = launch_remedy(ctx)
        if started is not None:
            return started
        if SCHEDULER in clues and "gpu_requested" not in clues:
            return Remedy("request_gpu").with_params(launch="slurm", command="`#SBATCH --gres=gpu:1` in the job "
                                                     "script, or `srun --gres=gpu:1 …`")
        if in_container(ctx.facts, clues):
            if ctx.smi.get("works") or "smi_ok" in clues or "smi_cuda_na" in clues:
                return Remedy("add_capability", (("capability", "compute"),))
            return Remedy("enable_gpu_access")
        return Remedy("expose_devices", (("where", "unknown"),))
    if verdict == NO_DRIVER:
        if NO_GPU in clues:
            return Remedy("install_driver", (("gpu", "none"),))
        return Remedy("install_driver", (("detail", "short"),))
    if verdict == DRIVER_BROKEN:
        return Remedy("check_logs")
    if verdict == CPU_WHEEL:
        return Remedy("install_wheel").with_params(torch=ctx.torch.get("version"), driver_cuda=ctx.driver_cuda_version)
    if verdict == DRIVER_TOO_OLD:
        dcv = ctx.driver_cuda_version
        return Remedy("install_driver").with_params(action="upgrade", cuda=ctx.torch.get("cuda"),
                                                    torch=ctx.torch.get("version"), driver_cuda=dcv)
    caps = [str(g.get("compute_capability")) for g in ctx.gpus if g.get("compute_capability")]
    if caps:
        return Remedy("install_wheel").with_params(torch=ctx.torch.get("version"), capability=caps[0],
                                                   driver_cuda=ctx.driver_cuda_version)
    return None
