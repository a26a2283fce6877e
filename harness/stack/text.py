"""A stack section as text for people: one line per distribution, then each finding with evidence and fix."""

from __future__ import annotations

import textwrap
from typing import Any

from harness.schema import SEVERITY_ERROR as ERROR
from harness.schema import SEVERITY_WARNING as WARNING

WIDTH = 100
MAX_ARCH = 8


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def _arch(d: dict[str, Any]) -> str:
    arch = list(d.get("arch") or [])
    if not arch:
        return ""
    shown = " ".join(arch[:MAX_ARCH]) + (" …" if len(arch) > MAX_ARCH else "")
    extra = d.get("extra_arch") or []
    return shown + (f" (+{len(extra)} in some kernels)" if extra else "")


def _imported(d: dict[str, Any]) -> str:
    tried = d.get("import")
    if not tried:
        return ""
    return "imports" if tried.get("ok") else f"DOES NOT IMPORT: {tried.get('error')}"


def distribution_line(d: dict[str, Any]) -> str:
    """'torchvision 0.29.1  CUDA 13.0  requires torch>=2.14.0  sm_75 … compute_120  imports'."""
    built = d.get("built_for") or {}
    parts = [f"{d['name']} {d['version']}"]
    if built.get("cuda"):
        parts.append(f"CUDA {built['cuda']}")
    torch_req = next((r["spec"] for r in d.get("requires") or [] if r["name"] == "torch"), None)
    if torch_req:
        parts.append(f"requires torch{torch_req}")
    if d.get("pinned_by_torch"):
        parts.append(f"torch pins {d['pinned_by_torch']}")
    if built.get("per_cuda"):
        parts.append(f"libraries for CUDA {', '.join(built['per_cuda'])}")
    for piece in (_arch(d), _imported(d)):
        if piece:
            parts.append(piece)
    return "  ".join(parts)


def render_stack(section: dict[str, Any], heading: str = "refenv stack") -> str:
    if section.get("error"):
        return f"{heading}: could not be read: {section['error'].get('message')}\n"
    inv = section.get("inventory") or {}
    dists = inv.get("distributions") or []
    findings = section.get("findings") or []
    errors = sum(1 for f in findings if f["severity"] == ERROR)
    state = "ready" if section.get("ready") else f"NOT READY ({errors} error(s))"
    lines = [f"{heading}: {state}, {len(findings)} finding(s)"]
    host = section.get("host") or {}
    if host.get("gpus") or host.get("driver_cuda"):
        gpus = ", ".join(f"{g['name']} ({g['compute_capability']})" for g in host.get("gpus") or [])
        cuda = host.get("driver_cuda")
        driver = f"a driver supporting CUDA {cuda // 1000}.{cuda % 1000 // 10}" if cuda else "a driver of unknown CUDA"
        lines.append(_wrap(f"judged for: {gpus or 'no GPU named'}; {driver}", "  "))
    for d in dists:
        if d["kind"] != "cuda-library":
            lines.append(_wrap(distribution_line(d), "  "))
    libraries = [f"{d['name']} {d['version']}" for d in dists if d["kind"] == "cuda-library"]
    if libraries:
        lines.append(_wrap(f"{len(libraries)} CUDA library wheel(s): {', '.join(libraries)}", "  "))
    read = inv.get("read") or {}
    lines.append(f"  read {read.get('distributions', 0)} distributions, {read.get('shared_objects', 0)} shared objects "
                 f"({read.get('fatbin_containers', 0)} fatbin containers) in {inv.get('wall_s', 0)} s")
    for f in findings:
        mark = "ERROR" if f["severity"] == ERROR else "warn" if f["severity"] == WARNING else "info"
        lines.append("")
        lines.append(_wrap(f"[{mark}] {f['title']}", ""))
        lines.extend(_wrap(f"- {ev}", "      ") for ev in f.get("evidence") or [])
        lines.extend(f"    fix: {fix}" for fix in f.get("remediation") or [])  # unwrapped: commands are copied
    return "\n".join(lines).rstrip() + "\n"
