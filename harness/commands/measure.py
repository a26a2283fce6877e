"""`python -m harness measure`: what depends on the environment (and the device), not on the cell.

The probes and the memory verification answer the same on every host profile and scenario of an
environment: the CPU figures depend on the image and the CPU, the GPU figures on the image and the real
device. So the host runs this once per environment on the CPU, and once per environment and real GPU host
with the GPUs given, and a cell only diagnoses (`python -m harness cell --probes off --memory off`).
On a device torch cannot use, the GPU work is waived with the reason, never faked.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from harness import document
from harness.memory.section import memory_section
from harness.probe.section import cpu_probes, probes_section, waived
from harness.schema import EXIT_HARNESS_ERROR, EXIT_OK
from harness.schema.envelope import JOB_VERSION, MEASURE_SCHEMA, MeasureDocument, ProbePair

SCHEMA = MEASURE_SCHEMA
VERSION = JOB_VERSION


def register(sub: Any) -> None:
    p = sub.add_parser("measure", help="probes and memory verification of this environment, once, to one JSON "
                       "document", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", metavar="FILE", required=True, help="where to write the measurement document")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--probes", choices=("quick", "full", "off"), default="quick")
    p.add_argument("--memory", choices=("quick", "full", "off"), default="quick")
    p.set_defaults(func=run)


def cuda_waiver() -> str | None:
    """Why torch cannot use a GPU in this process, or None when it can (one torch import, in process)."""
    try:
        import torch
    except Exception as exc:  # a broken CUDA library raises OSError as much as ImportError
        return f"torch is not importable ({type(exc).__name__}: {exc}): GPU probes are waived"
    if torch.version.cuda is None:
        return "a CPU build of torch: GPU probes are waived"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "torch.cuda.is_available() is False here: GPU probes are waived (the cells say why)"
    return None


def measure(device: str, probes: str, memory: str) -> MeasureDocument:
    """The document's sections: the device measured, why the GPU was waived (if it was), probes and memory."""
    if device == "cpu":
        return MeasureDocument(device="cpu", probes=None if probes == "off" else cpu_probes(),
                               memory=memory_section(memory, False))
    reason = cuda_waiver()
    if reason is not None:
        return MeasureDocument(device="cuda", waived=reason,
                               probes=None if probes == "off" else ProbePair(gpu=waived(reason)))
    return MeasureDocument(device="cuda", probes=probes_section(probes, True, ""),
                           memory=memory_section(memory, True))


def run(args: argparse.Namespace) -> int:
    doc = document.new(MeasureDocument, "measure")
    start = time.monotonic()
    code = EXIT_OK
    try:
        found = measure(args.device, args.probes, args.memory)
        doc = dataclasses.replace(doc, device=found.device, waived=found.waived, probes=found.probes,
                                  memory=found.memory)
    except Exception as exc:
        doc = dataclasses.replace(doc, error=document.error_of(exc))
        print(f"harness measure: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = EXIT_HARNESS_ERROR
    document.write(dataclasses.replace(doc, wall_s=round(time.monotonic() - start, 3)), args.out)
    return code
