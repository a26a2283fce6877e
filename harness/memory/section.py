"""The `memory` section of a cell or measurement document: the verification run, or its failure recorded."""

from __future__ import annotations

from harness import document
from harness.schema.envelope import Failed, MemorySection


def memory_section(mode: str, on_gpu: bool) -> MemorySection | None:
    """The memory verification on the GPU (`on_gpu`) or the CPU, quick or full; None when `mode` is off."""
    if mode == "off":
        return None
    from harness.memory import run_verification

    try:
        return run_verification(quick=mode == "quick", device="cuda" if on_gpu else "cpu")
    except Exception as exc:  # a verification that breaks is a result, not a lost cell
        return Failed(document.error_of(exc))
