"""`python -m harness cell`: one matrix cell inside its container — diagnose, probe, check memory.

The host reads only the document this writes to the mounted output folder (never the logs). The
diagnosis runs first, in fresh child processes; the probes and the memory verification follow in this
process. On a real GPU that torch can use, they measure the GPU; anywhere else the GPU probes are
waived with the reason and the CPU figures are taken instead.

`invoke matrix` runs cells with `--probes off --memory off`: what they would measure depends on the
environment and the device, not the cell, so the host measures it once per environment and real GPU host
with `python -m harness measure` (harness/commands/measure.py). A cell then costs the diagnosis alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from harness import document
from harness.facts import torch_of
from harness.gather.bounded import INIT_TIMEOUT_S
from harness.inputs import float_arg
from harness.schema import EXIT_HARNESS_ERROR, EXIT_OK, OK
from harness.schema.envelope import (
    CELL_SCHEMA,
    JOB_VERSION,
    CellDocument,
    DiagnoseDocument,
    Failed,
    MemorySection,
    ProbePair,
    ProbesSection,
)

SCHEMA = CELL_SCHEMA
VERSION = JOB_VERSION


def register(sub: Any) -> None:
    p = sub.add_parser("cell", help="run one matrix cell: diagnose, probes and memory check, to one JSON document",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", metavar="FILE", required=True, help="where to write the cell document")
    p.add_argument("--probes", choices=("quick", "full", "off"), default="quick")
    p.add_argument("--memory", choices=("quick", "full", "off"), default="quick")
    p.add_argument("--torch-timeout", type=float_arg(1, 86400), default=180.0, metavar="S")
    p.add_argument("--init-timeout", type=float_arg(1, 86400), default=INIT_TIMEOUT_S, metavar="S",
                   help="seconds the driver's initialisation may take before it is reported hung")
    p.add_argument("--stack", choices=("on", "off"), default="off",
                   help="inventory and judge the extensions beside torch against this cell's host (a `stack` section)")
    p.set_defaults(func=run)


def gpu_usable(diagnosis: DiagnoseDocument) -> bool:
    """A real device torch can use: verdict OK, not simulated, and torch said is_available() True."""
    diag = diagnosis.diagnosis
    return (diag is not None and diag.verdict == OK and not diag.simulated
            and torch_of(diagnosis.facts).get("is_available") is True)


def waiver_reason(diagnosis: DiagnoseDocument) -> str:
    diag = diagnosis.diagnosis
    if diag is not None and diag.simulated:
        return "simulated driver: GPU probes are waived; device work is measured only on a real GPU"
    return f"no usable GPU (verdict {diag.verdict if diag else None}): GPU probes are waived"


def run_probes(mode: str, on_gpu: bool, reason: str) -> ProbesSection | None:
    if mode == "off":
        return None
    from harness import probe

    try:
        if on_gpu:
            return ProbePair(gpu=probe.run_probes(mode, "cuda"))
        return ProbePair(gpu=probe.waived_gpu(reason), cpu=probe.run_probes("quick", "cpu"))
    except Exception as exc:  # a probe that breaks is a result, not a lost cell
        return Failed(document.error_of(exc))


def run_memory(mode: str, on_gpu: bool) -> MemorySection | None:
    if mode == "off":
        return None
    from harness.memory import run_verification

    try:
        return run_verification(quick=mode == "quick", device="cuda" if on_gpu else "cpu")
    except Exception as exc:
        return Failed(document.error_of(exc))


def run(args: argparse.Namespace) -> int:
    from harness.commands.diagnose import diagnose_live

    doc = document.new(CellDocument, "cell")
    start = time.monotonic()
    code = EXIT_OK
    try:
        diagnosis = diagnose_live(args.torch_timeout, args.init_timeout)
        doc = dataclasses.replace(doc, diagnosis=diagnosis)
        if args.stack == "on":
            from harness.stack.section import stack_section

            doc = dataclasses.replace(doc, stack=stack_section(diagnosis.facts, args.torch_timeout))
        on_gpu = gpu_usable(diagnosis)
        doc = dataclasses.replace(doc, probes=run_probes(args.probes, on_gpu, waiver_reason(diagnosis)),
                                  memory=run_memory(args.memory, on_gpu))
    except Exception as exc:
        doc = dataclasses.replace(doc, error=document.error_of(exc))
        print(f"harness cell: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = EXIT_HARNESS_ERROR
    document.write(dataclasses.replace(doc, wall_s=round(time.monotonic() - start, 3)), args.out)
    return code
