"""`python -m harness probe [--quick|--full] [--device auto|cuda|cpu] [--json] [--out FILE]`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness import document
from harness.probe import bands
from harness.probe.devices import ProbeError
from harness.probe.suite import run_probes
from harness.probe.views import render_probe
from harness.schema import EXIT_FAILING, EXIT_HARNESS_ERROR, EXIT_OK


def register(subparsers: Any) -> None:
    """Add the `probe` command."""
    parser = subparsers.add_parser(
        "probe",
        help="measure memory bandwidth, host<->device copies and GEMM throughput against the spec sheet",
        description="Measure this device's memory bandwidth, host<->device copies, GEMM TFLOP/s per dtype "
        "and a roofline sweep; compare each with the spec sheet of the detected GPU (PASS / WARN / FAIL / "
        "SKIP). Without a GPU, the same probes run on the CPU.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", dest="mode", action="store_const", const="quick",
                       help="the short suite (default; about a second on a CPU, under 20 s on a GPU)")
    group.add_argument("--full", dest="mode", action="store_const", const="full",
                       help="longer runs to sustained clocks, bigger buffers, the fused roofline sweep")
    parser.set_defaults(mode="quick")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto (default): the GPU when torch sees one, else the CPU")
    parser.add_argument("--json", action="store_true", help="print the JSON document instead of text")
    parser.add_argument("--out", metavar="FILE", help="also write the JSON document to FILE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the suite, print it, write it; 1 when any measurement FAILs."""
    try:
        doc = run_probes(args.mode, args.device)
    except ProbeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    if args.out:  # atomically; one that cannot be written is an InputError, exit 2
        document.write(doc, args.out)
    if args.json:
        document.write(doc, None)
    else:
        print(render_probe(doc))
    return EXIT_FAILING if doc.status == bands.FAIL else EXIT_OK
