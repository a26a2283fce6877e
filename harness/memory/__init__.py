"""Memory arithmetic: predict every ledger of a training step or inference server, and prove it.

Pure Python over plain data; torch is imported only by the verification (`run_verification`).
"""

from __future__ import annotations

from harness.schema.memory_document import MemoryVerification


def run_verification(quick: bool = True, device: str = "auto") -> MemoryVerification:
    """Measure a real transformer step on this machine and compare it with the prediction (a JSON document)."""
    from harness.memory.verify import run_verification as _run

    return _run(quick=quick, device=device)
