"""A stack section as text for people: one line per distribution, then each finding with evidence and fix."""

from __future__ import annotations

import textwrap

from harness.schema import SEVERITY_ERROR as ERROR
from harness.schema import SEVERITY_WARNING as WARNING
from harness.schema.envelope import Failed, StackSection
from harness.schema.stack_document import Distribution, Inventory

WIDTH = 100
MAX_ARCH = 8


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def _arch(d: Distribution) -> str:
    arch = d.arch
    if not arch:
        return ""
    shown = " ".join(arch[:MAX_ARCH]) + (" …" if len(arch) > MAX_ARCH else "")
    extra = d.extra_arch
    return shown + (f" (+{len(extra)} in some kernels)" if extra else "")


def _imported(d: Distribution) -> str:
    tried = d.trial
    if tried is None:
        return ""
    return "imports" if tried.ok else f"DOES NOT IMPORT: {tried.error}"


def distribution_line(d: Distribution) -> str:
    """'torchvision 0.29.1  CUDA 13.0  requires torch>=2.14.0  sm_75 … compute_120  imports'."""
    built = d.built_for
    parts = [f"{d.name} {d.version}"]
    if built.cuda:
        parts.append(f"CUDA {built.cuda}")
    torch_req = d.requires_torch()
    if torch_req:
        parts.append(f"requires torch{torch_req}")
    if d.pinned_by_torch:
        parts.append(f"torch pins {d.pinned_by_torch}")
    if built.per_cuda:
        parts.append(f"libraries for CUDA {', '.join(built.per_cuda)}")
    for piece in (_arch(d), _imported(d)):
        if piece:
            parts.append(piece)
    return "  ".join(parts)


def read_line(inv: Inventory) -> str:
    """'read 34 distributions, 93 shared objects (563 fatbin containers) in 3.7 s'."""
    read = inv.read
    return (f"read {read.distributions} distributions, {read.shared_objects} shared objects "
            f"({read.fatbin_containers} fatbin containers) in {inv.wall_s} s")


def render_stack(section: StackSection, heading: str = "refenv stack") -> str:
    if isinstance(section, Failed):
        return f"{heading}: could not be read: {section.error.message}\n"
    dists = section.inventory.distributions
    findings = section.findings
    state = "ready" if section.ready else f"NOT READY ({len(section.errors)} error(s))"
    lines = [f"{heading}: {state}, {len(findings)} finding(s)"]
    host = section.host
    if host.gpus or host.driver_cuda:
        gpus = ", ".join(f"{g.name} ({g.compute_capability})" for g in host.gpus)
        cuda = host.driver_cuda
        driver = f"a driver supporting CUDA {cuda // 1000}.{cuda % 1000 // 10}" if cuda else "a driver of unknown CUDA"
        lines.append(_wrap(f"judged for: {gpus or 'no GPU named'}; {driver}", "  "))
    for d in dists:
        if d.kind != "cuda-library":
            lines.append(_wrap(distribution_line(d), "  "))
    libraries = [f"{d.name} {d.version}" for d in dists if d.kind == "cuda-library"]
    if libraries:
        lines.append(_wrap(f"{len(libraries)} CUDA library wheel(s): {', '.join(libraries)}", "  "))
    lines.append(f"  {read_line(section.inventory)}")
    for f in findings:
        mark = "ERROR" if f.severity == ERROR else "warn" if f.severity == WARNING else "info"
        lines.append("")
        lines.append(_wrap(f"[{mark}] {f.title}", ""))
        lines.extend(_wrap(f"- {ev}", "      ") for ev in f.evidence)
        lines.extend(f"    fix: {fix}" for fix in f.remediation)  # unwrapped: commands are copied
    return "\n".join(lines).rstrip() + "\n"
