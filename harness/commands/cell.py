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
from harness.diagnosis.live import diagnose_live, gpu_usable, waiver_reason
from harness.gather.bounded import INIT_TIMEOUT_S
from harness.inputs import float_arg
from harness.schema import EXIT_HARNESS_ERROR, EXIT_OK
from harness.schema.envelope import CELL_SCHEMA, JOB_VERSION, CellDocument

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


def run(args: argparse.Namespace) -> int:
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
        # The probes and the memory model are imported only when asked for: the matrix's cells diagnose alone.
        if args.probes != "off":
            from harness.probe.section import probes_section

            doc = dataclasses.replace(doc, probes=probes_section(args.probes, on_gpu, waiver_reason(diagnosis)))
        if args.memory != "off":
            from harness.memory.section import memory_section

            doc = dataclasses.replace(doc, memory=memory_section(args.memory, on_gpu))
    except Exception as exc:
        doc = dataclasses.replace(doc, error=document.error_of(exc))
        print(f"harness cell: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = EXIT_HARNESS_ERROR
    document.write(dataclasses.replace(doc, wall_s=round(time.monotonic() - start, 3)), args.out)
    return code
