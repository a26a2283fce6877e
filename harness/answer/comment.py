"""A diagnosis document as the comment an issue should get (GitHub-flavoured Markdown, pure).

What it says, in order: the verdict and its confidence in one line; the report's lines it rests on, quoted
with their line numbers; the fix as commands to copy; what is not ruled out; the commands to ask the
reporter for; then the long parts folded in <details>. A low-confidence answer states no verdict: it names
what is not ruled out and asks for the commands that would settle it (a bot must not publish guesses).

Everything taken from the report is quoted in code (mentions, links, images and HTML do nothing there),
passed through `redact` (no credential or environment value is echoed) and only then cut to a bounded
length; the whole comment then loses any piece of a secret the document holds (harness/answer/redact.py).
"""

from __future__ import annotations

from collections.abc import Callable

from harness.answer import markup
from harness.answer.redact import redact, secrets_in
from harness.schema import BY_CODE, CANNOT_TELL, FAILING, HIGH, LOW, MEDIUM, OK, OTHER, Assessment, Diagnosis, Finding
from harness.schema.envelope import DiagnoseDocument

OPEN_LINES = 12        # evidence lines shown before the fold
MAX_LINES = 60         # evidence lines at all
MAX_CHARS = 60_000     # GitHub refuses comments over 65,536 characters


def states_verdict(doc: DiagnoseDocument) -> bool:
    """Whether the answer may name its verdict: a live diagnosis, or a report read at high or medium confidence."""
    diag = doc.diagnosis
    if diag is None:
        return False
    if diag.assessment is None:
        return bool(diag.verdict)
    return diag.assessment.confidence in (HIGH, MEDIUM) and diag.verdict != CANNOT_TELL


def _assessment(doc: DiagnoseDocument) -> Assessment | None:
    """A report's assessment (harness/intake/assess.py); None for a live diagnosis."""
    return doc.diagnosis.assessment if doc.diagnosis else None


def _line_label(number: int) -> str:
    return f"line {number}"


def evidence_lines(doc: DiagnoseDocument) -> list[tuple[int, str, bool]]:
    """(line number, text, rests on it) of every report line a fact or clue was read from, the ones the
    answer rests on first, then by line."""
    if doc.input is None:
        return []
    assessment = _assessment(doc)
    rests = assessment.rests_on if assessment else ()
    lines: dict[int, tuple[str, bool]] = {}
    for key, where in [*doc.input.provenance.items(), *doc.input.clues.items()]:
        key_rests = any(r == key or r.startswith(f"{key} ") for r in rests)
        text, rested = lines.get(where.line, (where.text, False))
        lines[where.line] = (text, rested or key_rests)
    ordered = sorted(lines.items(), key=lambda kv: (not kv[1][1], kv[0]))
    return [(n, text, rested) for n, (text, rested) in ordered]


def _quote_block(rows: list[tuple[int, str, bool]], where: Callable[[int], str]) -> list[str]:
    labels = [where(n) for n, _, _ in rows]
    width = max((len(label) for label in labels), default=0)
    body = [f"{label.rjust(width)} | {markup.clip(redact(text))}"
            for label, (_, text, _) in zip(labels, rows)]  # noqa: B905 (zip(strict=) is Python 3.10+)
    return markup.code_block(body)


def _evidence(doc: DiagnoseDocument, where: Callable[[int], str]) -> list[str]:
    rows = evidence_lines(doc)[:MAX_LINES]
    if not rows:
        return []
    shown = sorted(rows[:OPEN_LINES])
    out = ["**What the report says** (the lines read, as quoted):", *_quote_block(shown, where)]
    rest = sorted(rows[OPEN_LINES:])
    if rest:
        out += markup.details(f"{len(rest)} more lines read", _quote_block(rest, where))
    return out


def _primary(diag: Diagnosis) -> Finding | None:
    return next(iter(diag.failing), None)


def _fix(diag: Diagnosis) -> list[str]:
    """The primary finding's fix, step by step: its words, and under each the commands in it, to copy."""
    primary = _primary(diag)
    if primary is None:
        return []
    out = ["**Fix**"]
    for step in (redact(s) for s in primary.remediation):
        commands = markup.commands_in(step)
        words = markup.without_command_tail(step)
        if words:
            out.append(f"- {markup.prose_with_code(words)}")
        elif commands:
            out.append("- run:")
        out += [f"  {line}" for line in markup.code_block(commands, "sh")] if commands else []
    return out if len(out) > 1 else []


def _primary_evidence(diag: Diagnosis | None) -> list[str]:
    """A live diagnosis has no report lines: the primary finding's own evidence stands for them."""
    primary = _primary(diag) if diag else None
    evidence = [redact(e) for e in primary.evidence] if primary else []
    return ["**Evidence**", *markup.code_block(evidence)] if evidence else []


def _ask(assessment: Assessment | None, fold: bool) -> list[str]:
    commands = list(assessment.ask) if assessment else []
    if not commands:
        return []
    if fold:
        return markup.details("Commands that would confirm it", markup.code_block(commands, "sh"))
    return ["**To settle it**, please run these on the machine and paste their output here:",
            *markup.code_block(commands, "sh")]


def _all_findings(diag: Diagnosis) -> list[str]:
    body: list[str] = []
    for f in diag.findings:
        mark = f"`{f.verdict}`" if f.verdict else f.severity
        body.append(f"- {mark} {markup.escape(redact(f.title))}")
        body += [f"  - {markup.code(redact(e))}" for e in f.evidence]
    return markup.details(f"Every finding ({len(diag.findings)})", body) if body else []


def _headline(doc: DiagnoseDocument, stated: bool) -> list[str]:
    diag = doc.diagnosis
    assessment = _assessment(doc)
    verdict = diag.verdict if diag else "?"
    confidence = assessment.confidence if assessment else ""
    competing = list(assessment.competing) if assessment else []
    if not stated:
        lines = [f"**refenv diagnose: {BY_CODE[CANNOT_TELL].words}** (confidence: {confidence or LOW})"]
        failing = [v for v in [verdict, *competing] if v in FAILING]
        if failing:
            lines.append(f"Not ruled out: {', '.join(f'`{v}`' for v in dict.fromkeys(failing))}.")
        return lines
    # A failure is headed by the finding it rests on; any other verdict (OK, OTHER) by its own words.
    row = BY_CODE.get(verdict)
    primary = _primary(diag) if diag else None
    what = row.words if row is not None and not row.failing else (primary.title if primary else "")
    rests = assessment.rests_on if assessment else ()
    if verdict == OTHER and rests:
        what = f"{what}: {rests[0]}"
    head = f"**refenv diagnose: `{verdict}`**" + (f" (confidence: {confidence})" if confidence else "")
    lines = [head + (f": {markup.escape(redact(what))}" if what else "")]
    if assessment is not None and assessment.why:
        lines.append(markup.prose_with_code(redact(assessment.why)))
    if competing:
        lines.append(f"Not ruled out: {', '.join(f'`{v}`' for v in competing)}.")
    return lines


def render(doc: DiagnoseDocument, where: Callable[[int], str] = _line_label, marker: str = "",
           footer: str = "") -> str:
    """The comment for a diagnosis document; `where` names a report line ('line 3'), `marker` opens it."""
    diag = doc.diagnosis
    assessment = _assessment(doc)
    stated = states_verdict(doc)
    evidence = _evidence(doc, where) if doc.input is not None else _primary_evidence(diag)
    blocks: list[list[str]] = [[marker] if marker else [], _headline(doc, stated), evidence]
    if stated and diag is not None and diag.verdict in FAILING:
        blocks.append(_fix(diag))
    confident = stated and assessment is not None and assessment.confidence == HIGH and not assessment.competing
    blocks.append(_ask(assessment, fold=confident or (diag is not None and diag.verdict == OK)))
    folded: list[list[str]] = []
    if stated and diag is not None:
        folded.append(_all_findings(diag))
    inferred = doc.input.inferred if doc.input else {}
    if inferred:
        folded.append(markup.details("Inferred, not stated in the report",
                                     [f"- {markup.code(k)}: {markup.escape(redact(v))}" for k, v in inferred.items()]))
    if diag is not None and diag.unknowns:
        folded.append(markup.details("What the report cannot tell",
                                     [f"- {markup.escape(redact(u))}" for u in diag.unknowns]))
    if doc.error is not None:
        blocks.append([f"harness error: {markup.code(redact(doc.error.message))}"])
    footer_block = [f"<sub>{markup.escape(footer or 'refenv harness ' + doc.harness_version)}</sub>"]
    # Each piece was redacted before it was cut or marked up; a piece of a secret cut elsewhere (a finding's
    # evidence clipped by the reader) is found by the secrets of the whole document.
    known = secrets_in(doc)
    text = redact(_join([*blocks, *folded, footer_block]), known, shapes=False)
    if len(text) > MAX_CHARS:  # the folded parts go first: the answer itself always fits
        short = _join([*blocks, ["<sub>(the folded details were left out: too long for one comment)</sub>"]])
        text = redact(short, known, shapes=False)
    return text[:MAX_CHARS]


def _join(blocks: list[list[str]]) -> str:
    return "\n\n".join("\n".join(b) for b in blocks if b).rstrip() + "\n"
