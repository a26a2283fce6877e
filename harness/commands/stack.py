"""`python -m harness stack`: every distribution that ships CUDA code or pins torch, and whether it can run.

It lists torch, each extension (torchvision, torchaudio, xformers, flash-attn, bitsandbytes, triton, vllm,
deepspeed, apex, cupy, and any other that ships CUDA kernels or requires torch) and the CUDA library wheels;
for each, the torch it requires, the CUDA it was built for, the GPU architectures compiled into its shared
objects (read from their `.nv_fatbin` sections: SASS per sm_XY and PTX as compute_XY, no CUDA tool needed) and
the result of importing it in a child process, with the exact error. Then it judges them: an import that
fails, a requirement not met, an extension built for another CUDA than torch's; with --capability, a GPU
its code cannot run on; with --driver-cuda, a CUDA newer than the driver's.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness import document
from harness.inputs import float_arg, require
from harness.schema import EXIT_FAILING, EXIT_HARNESS_ERROR, EXIT_OK
from harness.schema.envelope import StackDocument

EPILOG = """\
exit status: 0 when every distribution can run (no error finding), 1 when one cannot, 2 for bad input or when
the inventory could not be taken, 3 for an internal error.

examples:
  python -m harness stack
  python -m harness stack --capability 8.9 --capability 12.0 --driver-cuda 12.8
  python -m harness stack --json --out stack.json
"""


def _capability(text: str) -> str:
    import re

    return require(re.compile(r"\d{1,2}\.\d"), text, "--capability", "a compute capability such as 8.9", 8)


def _driver_cuda(text: str) -> int:
    import re

    from harness import compat

    return compat.cuda_to_int(require(re.compile(r"\d{1,2}\.\d{1,2}"), text, "--driver-cuda",
                                      "the CUDA version the driver supports, such as 12.8", 8))


def register(sub: Any) -> None:
    p = sub.add_parser("stack", help="list the CUDA stack beyond torch (extensions, their CUDA, architectures, "
                       "imports) and judge it", description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the versioned JSON document instead of text")
    p.add_argument("--out", metavar="FILE", help="also write the JSON document to FILE")
    p.add_argument("--capability", action="append", default=[], type=_capability, metavar="X.Y",
                   help="judge the architectures for a GPU of this compute capability (repeatable)")
    p.add_argument("--driver-cuda", type=_driver_cuda, metavar="X.Y",
                   help="judge each extension's CUDA against a driver supporting this CUDA version")
    p.add_argument("--no-imports", action="store_true", help="read the files only: import nothing")
    p.add_argument("--import-timeout", type=float_arg(1, 86400), default=180.0, metavar="S",
                   help="seconds for all the imports together (default 180)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.stack.inventory import inventory
    from harness.stack.section import host_from, judged
    from harness.stack.text import render_stack

    try:
        found = inventory(import_timeout=args.import_timeout, imports=not args.no_imports)
    except OSError as exc:
        failed = document.new(StackDocument, "stack", error=document.error_of(exc))
        if args.out:
            document.write(failed, args.out)
        print(f"harness stack: cannot read the installed distributions: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    section = judged(found, host_from(None, args.capability, args.driver_cuda))
    doc = document.new(StackDocument, "stack", stack=section)
    if args.out:
        document.write(doc, args.out)
    if args.json:
        document.write(doc, None)
    else:
        sys.stdout.write(render_stack(section))
    return EXIT_OK if section.ready else EXIT_FAILING
