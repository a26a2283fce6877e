"""`python -m harness diagnose`: why torch.cuda.is_available() is False, with evidence and the fix."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from typing import Any

from harness import document
from harness.diagnosis.live import diagnose_live
from harness.gather.bounded import INIT_TIMEOUT_S
from harness.inputs import InputError, float_arg
from harness.schema import (
    CANNOT_TELL,
    EXIT_FAILING,
    EXIT_HARNESS_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    OTHER,
    TABLE,
    VERDICTS,
    exit_code_for,
)
from harness.schema.envelope import DiagnoseDocument
from harness.schema.stack_document import JudgedStack
from harness.schema.verdicts import FAMILY_WORDS

FORMATS = ("text", "json", "markdown")


def _verdicts_in_order() -> str:
    """The failing verdicts in the order they are examined, each family named once (the verdict table's)."""
    families: dict[str, list[str]] = {}
    for row in TABLE:
        if row.failing:
            families.setdefault(row.family, []).append(row.code)
    said = ", ".join(f"{', '.join(codes)} ({FAMILY_WORDS[family]})" for family, codes in families.items())
    return textwrap.fill(f"verdicts, in the order they are examined: {said}.", 105)


EPILOG = f"""\
exit status: 0 when CUDA works (OK), 1 for a failing verdict, 2 for bad input or when the harness could
not gather a layer (the JSON document is still written, with the error), 3 for an internal error. With
--from, a report outside the {len(VERDICTS)} verdicts ({OTHER}) or too thin to judge ({CANNOT_TELL}) exits 1, and text
with no fact about the stack exits 2. With --stack, an extension that cannot run here also exits 1.

{_verdicts_in_order()}

examples:
  python -m harness diagnose
  python -m harness diagnose --json --out diagnosis.json
  python -m harness diagnose --stack     # and every extension beside torch (python -m harness stack)
  python -m harness diagnose --from issue.txt --format markdown > comment.md
  python -m torch.utils.collect_env > report.txt 2>&1; python -m harness diagnose --from report.txt
"""


def register(sub: Any) -> None:
    p = sub.add_parser("diagnose", help="say why torch.cuda.is_available() is False, with evidence and the fix",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the versioned JSON document instead of text "
                   "(the same as --format json)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="text (the default), json (the versioned document), or markdown: the comment an issue "
                        "should get (verdict and confidence, the report's lines quoted with their numbers, the "
                        "fix as commands, what to ask for; no verdict at low confidence; secrets redacted)")
    p.add_argument("--out", metavar="FILE", help="also write the JSON document to FILE")
    p.add_argument("--from", dest="source", metavar="FILE",
                   help="diagnose a machine you cannot touch from what its user pasted: a `python -m "
                        "torch.utils.collect_env` output, torch's errors, nvidia-smi, install lines or any bug "
                        "report text, or a saved diagnose document ('-' reads standard input)")
    p.add_argument("--torch-timeout", type=float_arg(1, 86400), default=180.0, metavar="S",
                   help="seconds to wait for torch to import and answer (default 180)")
    p.add_argument("--init-timeout", type=float_arg(1, 86400), default=INIT_TIMEOUT_S, metavar="S",
                   help="seconds the driver's initialisation (cuInit, torch.cuda.is_available()) may take before it "
                        f"is reported hung (default {INIT_TIMEOUT_S:g})")
    p.add_argument("--stack", action="store_true",
                   help="also inventory and judge every distribution beside torch that ships CUDA code or pins torch, "
                        "against this machine's GPUs and driver (a `stack` section; see `python -m harness stack`)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    doc: DiagnoseDocument
    if args.source and args.stack:
        raise InputError("diagnose: --stack inventories this machine's environment; it does not apply to --from")
    if args.json and args.format not in (None, "json"):
        raise InputError(f"diagnose: --json and --format {args.format} ask for two outputs: give one")
    fmt = "json" if args.json else (args.format or "text")
    try:
        if args.source:
            from harness.diagnosis import report  # the reader, only for a report

            doc = report.diagnose_report(args.source)
        else:
            doc = diagnose_live(args.torch_timeout, args.init_timeout)
        if args.stack:
            from harness.stack.section import stack_section

            doc = dataclasses.replace(doc, stack=stack_section(doc.facts, args.torch_timeout))
    except Exception as exc:
        from harness.intake import ReportError

        doc = document.new(DiagnoseDocument, "diagnose", error=document.error_of(exc))
        bad_input = isinstance(exc, (ReportError, OSError))
        if bad_input:
            print(f"harness diagnose: {exc}", file=sys.stderr)
        else:
            print(f"harness diagnose: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if args.out:
            document.write(doc, args.out)
        if fmt == "json":
            document.write(doc, None)
        return EXIT_HARNESS_ERROR if bad_input else EXIT_INTERNAL
    if args.out:
        document.write(doc, args.out)
    if fmt == "json":
        document.write(doc, None)
    elif fmt == "markdown":
        from harness.answer.comment import render

        sys.stdout.write(render(doc))
    else:
        from harness.answer.text import public_text

        sys.stdout.write(public_text(doc))
        if doc.stack is not None:
            from harness.stack.text import render_stack

            sys.stdout.write("\n" + render_stack(doc.stack, "stack"))
    if doc.error is not None or doc.diagnosis is None:
        return EXIT_HARNESS_ERROR
    code = exit_code_for(doc.diagnosis.verdict)
    stack_broken = isinstance(doc.stack, JudgedStack) and not doc.stack.ready
    return EXIT_FAILING if code == EXIT_OK and stack_broken else code
