"""A diagnosis document as the comment an issue should get (GitHub-flavoured Markdown, pure).

What it says, in order: the verdict and its confidence in one line; the report's lines it rests on, quoted
with their line numbers; the fix as commands to copy; what is not ruled out; the commands to ask the
reporter for; then the long parts folded in <details>. A low-confidence answer states no verdict: it names
what is not ruled out and asks for the commands that would settle it (a bot must not publish guesses).

Everything taken from the report is quoted in code (mentions, links, images and HTML do nothing there),
passed through `redact` (no credential or environment value is echoed) and cut to a bounded length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.answer import markup
from harness.answer.redact import redact
from harness.schema import ERROR, FAILING, OK

HIGH, MEDIUM, LOW = "high", "medium", "low"
OTHER, CANNOT_TELL = "OTHER", "CANNOT_TELL"
OPEN_LINES = 12        # evidence lines shown before the fold
MAX_LINES = 60         # evidence lines at all
MAX_CHARS = 60_000     # GitHub refuses comments over 65,536 characters
HEADLINE = {OK: "torch gets a GPU", OTHER: "outside the NVIDIA driver stack refenv judges"}


def states_verdict(doc: dict[str, Any]) -> bool:
    """Whether the answer may name its verdict: a live diagnosis, or a report read at high or medium confidence."""
    diag = doc.get("diagnosis") or {}
    assessment = diag.get("assessment")
    if not isinstance(assessment, dict):
        return bool(diag.get("verdict"))
    return assessment.get("confidence") in (HIGH, MEDIUM) and diag.get("verdict") != CANNOT_TELL


def _assessment(doc: dict[str, Any]) -> dict[str, Any]:
    """A report's assessment (confidence, rests_on, competing, ask, why); empty for a live diagnosis."""
    found = (doc.get("diagnosis") or {}).get("assessment")
    return found if isinstance(found, dict) else {}


def _line_label(number: int) -> str:
    return f"line {number}"


def evidence_lines(doc: dict[str, Any]) -> list[tuple[int, str, bool]]:
    """(line number, text, rests on it) of every report line a fact or clue was read from, the ones the
    answer rests on first, then by line."""
    source = doc.get("input") or {}
    rests = [str(r) for r in _assessment(doc).get("rests_on") or []]
    lines: dict[int, tuple[str, bool]] = {}
    entries = [*(source.get("provenance") or {}).items(), *(source.get("clues") or {}).items()]
    for key, where in entries:
        if not isinstance(where, dict) or not isinstance(where.get("line"), int):
            continue
        key_rests = any(r == key or r.startswith(f"{key} ") for r in rests)
        text, rested = lines.get(where["line"], (str(where.get("text", "")), False))
        lines[where["line"]] = (text, rested or key_rests)
    ordered = sorted(lines.items(), key=lambda kv: (not kv[1][1], kv[0]))
    return [(n, text, rested) for n, (text, rested) in ordered]


def _quote_block(rows: list[tuple[int, str, bool]], where: Callable[[int], str]) -> list[str]:
    labels = [where(n) for n, _, _ in rows]
    width = max((len(label) for label in labels), default=0)
    body = [f"{label.rjust(width)} | {markup.clip(redact(markup.clip(text, 2000)))}"
            for label, (_, text, _) in zip(labels, rows)]  # noqa: B905 (zip(strict=) is Python 3.10+)
    return markup.code_block(body)


def _evidence(doc: dict[str, Any], where: Callable[[int], str]) -> list[str]:
    rows = evidence_lines(doc)[:MAX_LINES]
    if not rows:
        return []
    shown = sorted(rows[:OPEN_LINES])
    out = ["**What the report says** (the lines read, as quoted):", *_quote_block(shown, where)]
    rest = sorted(rows[OPEN_LINES:])
    if rest:
        out += markup.details(f"{len(rest)} more lines read", _quote_block(rest, where))
    return out


def _findings(diag: dict[str, Any], failing_only: bool) -> list[dict[str, Any]]:
    found = [f for f in diag.get("findings") or [] if isinstance(f, dict)]
    if failing_only:
        return [f for f in found if f.get("severity") == ERROR and f.get("verdict") in FAILING]
    return found


def _fix(diag: dict[str, Any]) -> list[str]:
    """The primary finding's fix, step by step: its words, and under each the commands in it, to copy."""
    primary = next(iter(_findings(diag, failing_only=True)), None)
    if primary is None:
        return []
    out = ["**Fix**"]
    for step in (redact(str(s)) for s in primary.get("remediation") or []):
        commands = markup.commands_in(step)
        words = markup.without_command_tail(step)
        if words:
            out.append(f"- {markup.escape(words)}")
        elif commands:
            out.append("- run:")
        out += [f"  {line}" for line in markup.code_block(commands, "sh")] if commands else []
    return out if len(out) > 1 else []


def _primary_evidence(diag: dict[str, Any]) -> list[str]:
    """A live diagnosis has no report lines: the primary finding's own evidence stands for them."""
    primary = next(iter(_findings(diag, failing_only=True)), None)
    evidence = [redact(str(e)) for e in (primary or {}).get("evidence") or []]
    return ["**Evidence**", *markup.code_block(evidence)] if evidence else []


def _ask(assessment: dict[str, Any], fold: bool) -> list[str]:
    commands = [str(c) for c in assessment.get("ask") or []]
    if not commands:
        return []
    if fold:
        return markup.details("Commands that would confirm it", markup.code_block(commands, "sh"))
    return ["**To settle it**, please run these on the machine and paste their output here:",
            *markup.code_block(commands, "sh")]


def _all_findings(diag: dict[str, Any]) -> list[str]:
    findings = _findings(diag, failing_only=False)
    body: list[str] = []
    for f in findings:
        mark = f"`{f.get('verdict')}`" if f.get("verdict") else f"{f.get('severity')}"
        body.append(f"- {mark} {markup.escape(redact(str(f.get('title', ''))))}")
        body += [f"  - {markup.code(redact(str(e)))}" for e in f.get("evidence") or []]
    return markup.details(f"Every finding ({len(findings)})", body) if body else []


def _headline(doc: dict[str, Any], stated: bool) -> list[str]:
    diag = doc.get("diagnosis") or {}
    assessment = _assessment(doc)
    verdict = str(diag.get("verdict", "?"))
    confidence = assessment.get("confidence")
    if not stated:
        lines = ["**refenv diagnose: not enough in this report to tell what keeps torch from the GPU** "
                 f"(confidence: {confidence or LOW})"]
        competing = [str(v) for v in [verdict, *(assessment.get("competing") or [])] if v in FAILING]
        if competing:
            lines.append(f"Not ruled out: {', '.join(f'`{v}`' for v in dict.fromkeys(competing))}.")
        return lines
    primary = next(iter(_findings(diag, failing_only=True)), None)
    what = HEADLINE.get(verdict) or (str(primary.get("title")) if primary else "")
    rests = [str(r) for r in assessment.get("rests_on") or []]
    if verdict == OTHER and rests:
        what = f"{what}: {rests[0]}"
    head = f"**refenv diagnose: `{verdict}`**" + (f" (confidence: {confidence})" if confidence else "")
    lines = [head + (f": {markup.escape(redact(what))}" if what else "")]
    if assessment.get("why"):
        lines.append(markup.escape(redact(str(assessment["why"]))))
    competing = [str(v) for v in assessment.get("competing") or []]
    if competing:
        lines.append(f"Not ruled out: {', '.join(f'`{v}`' for v in competing)}.")
    return lines


def render(doc: dict[str, Any], where: Callable[[int], str] = _line_label, marker: str = "",
           footer: str = "") -> str:
    """The comment for a diagnosis document; `where` names a report line ('line 3'), `marker` opens it."""
    diag = doc.get("diagnosis") or {}
    assessment = _assessment(doc)
    stated = states_verdict(doc)
    evidence = _evidence(doc, where) if doc.get("input") else _primary_evidence(diag)
    blocks: list[list[str]] = [[marker] if marker else [], _headline(doc, stated), evidence]
    if stated and diag.get("verdict") in FAILING:
        blocks.append(_fix(diag))
    confident = stated and assessment.get("confidence") == HIGH and not assessment.get("competing")
    blocks.append(_ask(assessment, fold=confident or diag.get("verdict") == OK))
    folded: list[list[str]] = []
    if stated:
        folded.append(_all_findings(diag))
    inferred = (doc.get("input") or {}).get("inferred") or {}
    if inferred:
        folded.append(markup.details("Inferred, not stated in the report",
                                     [f"- {markup.code(k)}: {markup.escape(redact(str(v)))}"
                                      for k, v in inferred.items()]))
    if diag.get("unknowns"):
        folded.append(markup.details("What the report cannot tell",
                                     [f"- {markup.escape(redact(str(u)))}" for u in diag["unknowns"]]))
    if doc.get("error"):
        blocks.append([f"harness error: {markup.code(redact(str((doc['error'] or {}).get('message'))))}"])
    footer_block = [f"<sub>{markup.escape(footer or 'refenv harness ' + str(doc.get('harness_version', '')))}</sub>"]
    text = _join([*blocks, *folded, footer_block])
    if len(text) > MAX_CHARS:  # the folded parts go first: the answer itself always fits
        text = _join([*blocks, ["<sub>(the folded details were left out: too long for one comment)</sub>"]])
    return text[:MAX_CHARS]


def _join(blocks: list[list[str]]) -> str:
    return "\n\n".join("\n".join(b) for b in blocks if b).rstrip() + "\n"
