"""Read any pasted text into facts: a collect_env dump when there is one, and every other reader besides.

The readers run in a fixed order and the first value of a fact wins, so what a dump or a measured line
states beats what prose suggests, and inference (`implied.py`) only fills what nothing stated.
"""

from __future__ import annotations

import re

from harness.intake import (
    collect_env,
    conda,
    driverlog,
    environments,
    hints,
    images,
    implied,
    installs,
    labelled,
    launches,
    match,
    messages,
    platforms,
    prose,
    repl,
    several,
    symptoms,
    unknowns,
)
from harness.intake.clean import check_text
from harness.intake.clues import Text
from harness.intake.normal import normalise
from harness.intake.parsed import Builder, Line, ParsedReport, ReportError
from harness.intake.sections import read_dump

NO_FACT = ("no fact about the torch / CUDA stack was found in it (no torch version, torch message, "
           "nvidia-smi output, driver version, GPU, install command or collect_env field): paste the output of "
           "`python -m torch.utils.collect_env`, or the error torch printed, or a saved `python -m harness "
           "diagnose --json` document")
# Fact paths that say something about the stack or the machine it runs on.
_STACK = ("torch.", "driver.", "visibility.", "host.")
# Clues that say only where a text was written or run: alone they do not make it a report about the stack.
# Names of the stack's parts: a text that names one is about the stack though it states no fact (a question
# about CUDA under a screenshot, `torch.cuda.is_available()` without its answer), and is answered with what
# to ask for, CANNOT_TELL, not refused. 'GPU' alone is not among them: 'my GPU does not work' says nothing.
_NAMES_RE = re.compile(r"\b(?:py)?torch\b|\bcuda|\bnvidia|\bcudnn\b|\bnvcc\b", re.I)
_PLACES = frozenset(("windows", "wsl", "wsl1", "colab", "scheduler", "container", "nightly",
                     "failure_trace", "works_alone", "arch_words"))


def parse_report(text: str) -> ParsedReport:
    """Facts from any text; ReportError when it holds no fact about the stack at all. A report of several
    environments answers for the one it is about (several.py)."""
    check_text(text)
    lines = normalise(text)
    whole = read_lines(lines)
    envs = environments.split(lines)
    return several.answer(whole, lines, envs, read_lines) if len(envs) > 1 else whole


def read_lines(lines: list[Line]) -> ParsedReport:
    """Facts from normalised lines, read as one environment; ReportError when they hold nothing about the stack."""
    found = match.find_all(lines)
    dump = read_dump(lines)
    is_dump = collect_env.is_dump(dump)
    b = Builder("collect_env" if is_dump else "text")
    text = Text(lines)
    if is_dump:
        collect_env.read(b, lines, dump, found)
    else:
        messages.read(b, lines, found)
        for reader in (hints, repl):
            if reader.GATE.search(text.low):
                reader.read(b, lines)
    driverlog.read(b, lines, found)
    # A reader runs only on a text that holds its words: a long log costs one search each.
    for reader in (installs, conda, images, labelled, prose, launches):
        if reader.GATE.search(text.low):
            reader.read(b, lines)
    # A dump's lines about the build ('Is XPU available: False', 'HIP runtime version: N/A') name other
    # vendors' backends on every machine: the machine's clues are read from the other lines.
    machine = [line for line in lines if line.number not in dump.build_lines] if dump.build_lines else lines
    platforms.read(b, machine, Text(machine) if dump.build_lines else text)
    symptoms.read(b, lines, text)
    implied.read(b, with_capabilities=not is_dump)
    stated = [p for p in b.provenance if p.startswith(_STACK) and p not in b.inferred]
    if not stated and not set(b.clues) - _PLACES and not _NAMES_RE.search(text.whole):
        if dump.header is not None and not dump.fields:
            raise ReportError(f"the collect_env output stops at line {dump.header.number}, before its first "
                              "field ('PyTorch version: ...'): paste the whole output")
        if is_dump:
            raise ReportError("the collect_env output is cut off before anything it reports about torch, the "
                              "driver or the system: paste the whole output")
        raise ReportError(NO_FACT)
    unknown = (unknowns.for_dump(b.facts, set(b.provenance), dump) if is_dump
               else unknowns.for_text(b.facts, set(b.provenance)))
    return b.build("collect_env" if is_dump else "text", unknown)
