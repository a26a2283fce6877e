"""This machine's facts, gathered and judged: what `diagnose` says without `--from`, and every matrix cell.

Runs inside the images: the gatherer (child processes for the driver's libraries and for torch) and the
classifier, nothing of the report reader or the answer surfaces.
"""

from __future__ import annotations

import dataclasses
import time

from harness import document
from harness.facts import torch_of
from harness.gather.bounded import INIT_TIMEOUT_S
from harness.schema import OK
from harness.schema.envelope import DiagnoseDocument, ErrorRecord


def diagnose_live(torch_timeout: float = 180.0, init_timeout: float = INIT_TIMEOUT_S) -> DiagnoseDocument:
    """Gather this machine's facts and judge them; the result document."""
    from harness.gather.collect import gather

    opened = document.new(DiagnoseDocument, "diagnose")
    start = time.monotonic()
    # The classifier is imported once the child probes are under way (gather starts them first): its
    # import then overlaps torch's instead of delaying it.
    facts, errors = gather(torch_timeout, then=_load_classifier, init_timeout=init_timeout)
    from harness.classify import classify

    # A verdict reached without one of the layers is not a verdict: say the harness failed.
    error = ErrorRecord("ProbeError", "; ".join(errors)) if errors else None
    return dataclasses.replace(opened, facts=facts, probe_errors=tuple(errors), diagnosis=classify(facts),
                               error=error, wall_s=round(time.monotonic() - start, 3))


def _load_classifier() -> None:
    import harness.classify  # noqa: F401


def gpu_usable(diagnosis: DiagnoseDocument) -> bool:
    """A real device torch can use: verdict OK, not simulated, and torch said is_available() True."""
    diag = diagnosis.diagnosis
    return (diag is not None and diag.verdict == OK and not diag.simulated
            and torch_of(diagnosis.facts).get("is_available") is True)


def waiver_reason(diagnosis: DiagnoseDocument) -> str:
    """Why the GPU work of a cell is waived: a simulated driver, or no usable GPU."""
    diag = diagnosis.diagnosis
    if diag is not None and diag.simulated:
        return "simulated driver: GPU probes are waived; device work is measured only on a real GPU"
    return f"no usable GPU (verdict {diag.verdict if diag else None}): GPU probes are waived"
