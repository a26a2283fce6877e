"""The `probes` section of a cell or measurement document: the GPU measured, or waived with the CPU beside it.

A probe that breaks is a result (`Failed`, with its error), never a lost document: `cell` and `measure` write
this section beside the diagnosis or the memory verification.
"""

from __future__ import annotations

from harness import document
from harness.schema.envelope import Failed, ProbePair, ProbesSection
from harness.schema.probe_document import ProbeDocument


def probes_section(mode: str, on_gpu: bool, reason: str) -> ProbesSection | None:
    """The GPU probed (`on_gpu`), or its probes waived with `reason` and the CPU probed quickly instead."""
    if mode == "off":
        return None
    from harness import probe

    try:
        if on_gpu:
            return ProbePair(gpu=probe.run_probes(mode, "cuda"))
        return ProbePair(gpu=probe.waived_gpu(reason), cpu=probe.run_probes("quick", "cpu"))
    except Exception as exc:  # a probe that breaks is a result, not a lost cell
        return Failed(document.error_of(exc))


def cpu_probes() -> ProbesSection:
    """The CPU alone, probed quickly (a measurement of an environment on the CPU)."""
    from harness import probe

    try:
        return ProbePair(cpu=probe.run_probes("quick", "cpu"))
    except Exception as exc:  # a probe that breaks is a result, not a lost measurement
        return Failed(document.error_of(exc))


def waived(reason: str) -> ProbeDocument:
    """The GPU probes' document when they cannot run here, with the reason."""
    from harness import probe

    return probe.waived_gpu(reason)
