"""Read any pasted text into facts: a collect_env dump when there is one, and every other reader besides.

The readers run in a fixed order and the first value of a fact wins, so what a dump or a measured line
states beats what prose suggests, and inference (`implied.py`) only fills what nothing stated.
"""

from __future__ import annotations

from harness.intake import collect_env, driverlog, hints, implied, installs, messages, platforms, prose, unknowns
from harness.intake.clean import check_text, split_lines
from harness.intake.parsed import Builder, ParsedReport, ReportError
from harness.intake.sections import read_dump

NO_FACT = ("no fact about the torch / CUDA stack was found in it (no torch version, torch message, "
           "nvidia-smi output, driver version, GPU, install command or collect_env field): paste the output of "
           "`python -m torch.utils.collect_env`, or the error torch printed, or a saved `python -m harness "
           "diagnose --json` document")
# Fact paths that say something about the stack or the machine it runs on.
_STACK = ("torch.", "driver.", "visibility.", "host.")


def parse_report(text: str) -> ParsedReport:
    """Facts from any text; ReportError when it holds no fact about the stack at all."""
    check_text(text)
    lines = split_lines(text)
    dump = read_dump(lines)
    is_dump = collect_env.is_dump(dump)
    b = Builder("collect_env" if is_dump else "text")
    if is_dump:
        collect_env.read(b, lines, dump)
    else:
        messages.read(b, lines)
        hints.read(b, lines)
    driverlog.read(b, lines)
    installs.read(b, lines)
    prose.read(b, lines)
    platforms.read(b, lines)
    implied.read(b, with_capabilities=not is_dump)
    stated = [p for p in b.provenance if p.startswith(_STACK) and p not in b.inferred]
    if not stated and not _stack_clues(b):
        if dump.header is not None and not dump.fields:
            raise ReportError(f"the collect_env output stops at line {dump.header.number}, before its first "
                              "field ('PyTorch version: ...'): paste the whole output")
        if is_dump:
            raise ReportError("the collect_env output is cut off before anything it reports about torch, the "
                              "driver or the system: paste the whole output")
        raise ReportError(NO_FACT)
    found = (unknowns.for_dump(b.facts, set(b.provenance), dump) if is_dump
             else unknowns.for_text(b.facts, set(b.provenance)))
    return b.build("collect_env" if is_dump else "text", found)


def _stack_clues(b: Builder) -> bool:
    """Clues that are about the GPU stack even without a fact (a GPU named, a machine without one)."""
    return any(c in b.clues for c in ("no_gpu", "nvidia_gpu", "no_device", "insufficient_driver", "rocm",
                                      "apple_silicon", "smi_cuda_na", "pip_install", "conda_install", "kernel_fault",
                                      "gpu_refused"))
