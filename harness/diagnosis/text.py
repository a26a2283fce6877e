"""Text for people: a diagnosis document rendered as a short report."""

from __future__ import annotations

import textwrap

from harness.facts import torch_of
from harness.schema import OK, SEVERITY_ERROR, SEVERITY_WARNING, Assessment
from harness.schema.envelope import DiagnoseDocument

WIDTH = 100


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def _assessment(a: Assessment | None, inferred: dict[str, str]) -> list[str]:
    """A report's answer: its confidence, what it rests on, what it could not rule out, what to ask for."""
    if a is None:
        return []
    lines = [f"  confidence: {a.confidence}" + (f"; {a.why}" if a.why else "")]
    lines.extend(_wrap(f"rests on: {r}", "  ") for r in a.rests_on)
    if a.competing:
        lines.append(f"  not ruled out: {', '.join(a.competing)}")
    lines.extend(_wrap(f"inferred: {path}: {why}", "  ") for path, why in inferred.items())
    if a.ask:
        lines.append("  to settle it, ask the reporter for the output of:")
        lines.extend(f"    {cmd}" for cmd in a.ask)
    return lines


def render_diagnosis(doc: DiagnoseDocument) -> str:
    """The diagnosis document as text: verdict first, then each finding with evidence and fix."""
    diag = doc.diagnosis
    t = torch_of(doc.facts)
    lines = [f"refenv diagnose: {diag.verdict if diag else '?'}"
             + ("   (simulated driver)" if diag and diag.simulated else "")]
    if doc.input is not None:
        lines.append(f"  from {doc.input.kind}: {doc.input.path}")
        envs = doc.input.environments
        if doc.input.environment and len(envs) > 1:
            each = "; ".join(f"{e.name} (lines {'-'.join(map(str, e.lines))}): {e.verdict}" for e in envs)
            lines.append(_wrap(f"about: {doc.input.environment} (one of {len(envs)} environments in the "
                               f"report: {each})", "  "))
    if t.get("is_available") is not None:
        count = t.get("device_count")
        lines.append(f"  torch.cuda.is_available() = {t.get('is_available')}"
                     + (f", device_count() = {count}" if count is not None else ""))
    elif t.get("blocked_in"):
        seconds = t.get("blocked_s")
        lines.append(f"  {t.get('blocked_in')}: no answer" + (f" after {seconds:g} s" if seconds else ""))
    if diag is not None:
        lines.extend(_assessment(diag.assessment, doc.input.inferred if doc.input else {}))
    lines.append("")
    for f in diag.findings if diag else ():
        if f.severity == SEVERITY_ERROR and f.verdict:
            mark = f"FAIL {f.verdict}"
        elif f.severity == SEVERITY_WARNING:
            mark = "warn"
        elif f.verdict == OK:
            mark = "ok"
        else:
            mark = "info"
        lines.append(_wrap(f"[{mark}] {f.title}", ""))
        lines.extend(_wrap(f"- {ev}", "      ") for ev in f.evidence)
        lines.extend(f"    fix: {fix}" for fix in f.remediation)  # unwrapped: a command must survive copy and paste
    if diag is not None and diag.unknowns:
        lines.append("")
        lines.append("Not known from these facts:")
        lines.extend(_wrap(f"- {u}", "  ") for u in diag.unknowns)
    notes = doc.input.notes if doc.input else ()
    if notes:
        lines.append("")
        lines.append("Read from the report:")
        lines.extend(_wrap(f"- {n}", "  ") for n in notes)
    if doc.error is not None:
        lines.append("")
        lines.append(f"harness error: {doc.error.message}")
    return "\n".join(lines).rstrip() + "\n"
