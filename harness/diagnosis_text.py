"""Text for people: a diagnosis document rendered as a short report."""

from __future__ import annotations

import textwrap
from typing import Any

from harness.schema import ERROR, WARNING

WIDTH = 100


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def _assessment(a: Any, inferred: dict[str, str]) -> list[str]:
    """A report's answer: its confidence, what it rests on, what it could not rule out, what to ask for."""
    if not isinstance(a, dict):
        return []
    lines = [f"  confidence: {a.get('confidence')}" + (f"; {a['why']}" if a.get("why") else "")]
    lines.extend(_wrap(f"rests on: {r}", "  ") for r in a.get("rests_on") or [])
    if a.get("competing"):
        lines.append(f"  not ruled out: {', '.join(a['competing'])}")
    lines.extend(_wrap(f"inferred: {path}: {why}", "  ") for path, why in inferred.items())
    if a.get("ask"):
        lines.append("  to settle it, ask the reporter for the output of:")
        lines.extend(f"    {cmd}" for cmd in a["ask"])
    return lines


def render_diagnosis(doc: dict[str, Any]) -> str:
    """The diagnosis document as text: verdict first, then each finding with evidence and fix."""
    diag = doc.get("diagnosis") or {}
    facts = doc.get("facts") or {}
    t = facts.get("torch") or {}
    verdict = diag.get("verdict", "?")
    lines = [f"refenv diagnose: {verdict}" + ("   (simulated driver)" if diag.get("simulated") else "")]
    if doc.get("input"):
        lines.append(f"  from {doc['input'].get('kind')}: {doc['input'].get('path')}")
        envs = doc["input"].get("environments") or []
        if doc["input"].get("environment") and len(envs) > 1:
            each = "; ".join(f"{e.get('name')} (lines {'-'.join(map(str, e.get('lines') or []))}): {e.get('verdict')}"
                             for e in envs)
            lines.append(_wrap(f"about: {doc['input']['environment']} (one of {len(envs)} environments in the "
                               f"report: {each})", "  "))
    if t.get("is_available") is not None:
        count = t.get("device_count")
        lines.append(f"  torch.cuda.is_available() = {t.get('is_available')}"
                     + (f", device_count() = {count}" if count is not None else ""))
    lines.extend(_assessment(diag.get("assessment"), (doc.get("input") or {}).get("inferred") or {}))
    lines.append("")
    for f in diag.get("findings", []):
        if f["severity"] == ERROR and f["verdict"]:
            mark = f"FAIL {f['verdict']}"
        elif f["severity"] == WARNING:
            mark = "warn"
        elif f["verdict"] == "OK":
            mark = "ok"
        else:
            mark = "info"
        lines.append(_wrap(f"[{mark}] {f['title']}", ""))
        for ev in f.get("evidence", []):
            lines.append(_wrap(f"- {ev}", "      "))
        for fix in f.get("remediation", []):
            lines.append(f"    fix: {fix}")  # unwrapped: a command must survive copy and paste
    if diag.get("unknowns"):
        lines.append("")
        lines.append("Not known from these facts:")
        lines.extend(_wrap(f"- {u}", "  ") for u in diag["unknowns"])
    notes = (doc.get("input") or {}).get("notes") or []
    if notes:
        lines.append("")
        lines.append("Read from the report:")
        lines.extend(_wrap(f"- {n}", "  ") for n in notes)
    if doc.get("error"):
        lines.append("")
        lines.append(f"harness error: {doc['error'].get('message')}")
    return "\n".join(lines).rstrip() + "\n"
