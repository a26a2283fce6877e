"""The reproduction as text: what was inferred and substituted, reported beside reproduced, then the fix (pure)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from harness import catalogue
from harness.intake.clean import strip_triggered
from harness.schema import NO_DRIVER, NOT_VISIBLE, OK
from refenv.model.records import CellResult
from refenv.reproduce.execute import NO_REMEDY, CellRun, Outcome
from refenv.reproduce.values import Reported, Reproduction

LABEL, COLUMN = 18, 50
def normalized(message: str | None) -> str:
    """torch's message without the '(Triggered internally at ...)' suffix and with single spaces."""
    return " ".join(strip_triggered(message or "").split())


def message_key(message: str | None) -> str | None:
    """What identifies the failure, from the first failing message the catalogue finds in it: the number a
    message carries ('found version 12080', 'Error 803'), else its words ('CUDA unknown error', ...)."""
    hit = next((h for h in catalogue.scan_text(message or "") if h.entry.verdict), None)
    if hit is None:
        return None
    if "found" in hit.params:
        return f"found version {hit.params['found']}"
    if "code" in hit.params:
        return f"Error {hit.params['code']}"
    return hit.text


def messages_agree(reported: str | None, reproduced: str | None) -> str:
    """'identical', 'same failure', 'differs', or 'not reported'."""
    if not reported:
        return "not reported"
    if normalized(reported) == normalized(reproduced):
        return "identical"
    key = message_key(reported)
    return "same failure" if key and key == message_key(reproduced) else "differs"


def verdicts_agree(reported: str | None, reproduced: str, host_kind: str) -> bool:
    """The same verdict; a bare machine's NO_DRIVER reads as NOT_VISIBLE in a container that got no driver
    (harness/classify/driver.py judges an empty container as one started without GPU access)."""
    return reported == reproduced or (reported == NO_DRIVER and reproduced == NOT_VISIBLE and host_kind == "none")


def side_by_side(rows: Sequence[tuple[str, str, str]], head: tuple[str, str]) -> list[str]:
    """Rows of (label, left, right), each cell wrapped in its column."""
    out = [f"  {'':{LABEL}}{head[0]:{COLUMN}}  {head[1]}"]
    for label, left, right in rows:
        a = textwrap.wrap(left, COLUMN) or [""]
        b = textwrap.wrap(right, COLUMN) or [""]
        for i in range(max(len(a), len(b))):
            out.append(f"  {label if i == 0 else '':{LABEL}}{a[i] if i < len(a) else '':{COLUMN}}  "
                       f"{b[i] if i < len(b) else ''}".rstrip())
    return out


def _observed(cell: CellResult) -> tuple[str, str, str]:
    o = cell.observed
    if o is None:
        return "?", f"(no result: {cell.status}, {cell.reason})", cell.status
    available = str(o.is_available)
    if o.simulated and o.verdict == OK:
        available += " (simulated host: True on a real driver of this version)"
    verdict = o.verdict + (" (simulated)" if o.simulated else "")
    return available, normalized(o.torch_message) or "(nothing)", verdict


def describe(r: Reproduction) -> list[str]:
    env, p = r.environment, r.profile
    cuda = f"CUDA {env.cuda}" if env.cuda else "CPU-only"
    lines = [f"  environment  {env.name}: torch {env.torch}+{env.variant} ({cuda}), Python {env.python}"]
    if p is None:
        lines.append("  host         no NVIDIA driver")
    else:
        faults = [x for x in (f"NVML error {p.faults.nvml_init_error}" if p.faults.nvml_init_error else "",
                              f"cuInit error {p.faults.cuinit_error}" if p.faults.cuinit_error else "",
                              "cuInit never returns" if p.faults.cuinit_hang else "",
                              "stub libcuda" if p.faults.stub else "") if x]
        counts: dict[tuple[str, str], int] = {}
        for g in p.gpus:
            counts[(g.name, g.compute_capability)] = counts.get((g.name, g.compute_capability), 0) + 1
        gpus = ", ".join(f"{n} x {name} ({cc})" for (name, cc), n in counts.items())
        lines.append(f"  host         simulated driver {p.driver_version} (R{p.branch}, CUDA {p.cuda_version}), "
                     f"{gpus or 'no GPU'}{'; ' + ', '.join(faults) if faults else ''}")
    lines.append(f"  scenario     {r.scenario.description}")
    return lines


def _bullets(title: str, items: Sequence[str]) -> list[str]:
    if not items:
        return []
    return [title, *(textwrap.fill(i, 100, initial_indent="  - ", subsequent_indent="    ") for i in items)]


def comparison(reported: Reported | None, run: CellRun) -> list[str]:
    available, message, verdict = _observed(run.cell)
    left = ("(flags: nothing reported)", "", "") if reported is None else (
        str(reported.is_available), normalized(reported.torch_message) or "(nothing)", str(reported.verdict))
    rows = [("is_available()", left[0], available), ("torch's message", left[1], message),
            ("verdict", left[2], verdict)]
    out = side_by_side(rows, ("reported", "reproduced" + (" (simulated host)" if run.reproduction.simulated else "")))
    o = run.cell.observed
    if reported is not None and o is not None:
        agree = verdicts_agree(reported.verdict, o.verdict, run.reproduction.host.kind)
        same = ("the same verdict" if reported.verdict == o.verdict else
                f"{o.verdict}, which is how a machine without a driver reads inside a container" if agree else
                f"a different verdict ({o.verdict})")
        said = messages_agree(reported.torch_message, o.torch_message)
        words = {"identical": "torch says the same words", "same failure":
                 f"torch names the same failure ({message_key(o.torch_message)})",
                 "differs": "torch's words differ", "not reported": "the report has no torch message"}[said]
        out.append(f"  => {'reproduced' if agree else 'NOT reproduced'}: {same}, {words}")
    expected = run.cell.expected.verdict if run.cell.expected else "?"
    out.append(f"  the compatibility rules predicted {expected}: the cell {run.cell.status} ({run.cell.reason})")
    out.append(f"  results: {run.folder}")
    return out


def render(outcome: Outcome) -> str:
    """Everything `invoke reproduce` prints."""
    r = outcome.original.reproduction
    inf = outcome.inferred
    lines = [f"refenv reproduce: {outcome.source}", "", "Reproduced with", *describe(r)]
    lines += _bullets("How it was read", inf.evidence)
    lines += _bullets("Substitutions", r.substitutions) or ["Substitutions: none (the exact torch build and Python)"]
    lines += _bullets("Assumptions", r.notes)
    lines += ["", *comparison(inf.reported, outcome.original)]
    o = outcome.original.cell.observed
    fixes = [f.remediation for f in (o.findings if o else ()) if f.severity == "error" and f.verdict]
    fix_lines = list(fixes[0]) if fixes else []
    if inf.reported and inf.reported.remediation and (o is None or inf.reported.verdict != o.verdict):
        fix_lines = list(inf.reported.remediation)  # the reporter's own machine is the one to fix
    lines += ["", *(_bullets("Fix", fix_lines) or ["Fix: nothing to fix"])]
    beside = outcome.original.cell.stack
    if beside is not None and beside.findings:
        lines += _bullets("The stack beside torch", [f"{f.title}" + (f" (fix: {f.remediation[0]})" if f.remediation
                                                                     else "") for f in beside.findings])
    if outcome.fix is not None and outcome.fixed is not None:
        lines += ["", f"Fix verified (--verify-fix, {outcome.fix.kind}): {outcome.fix.summary}", *describe(
            outcome.fixed.reproduction)]
        lines += _bullets("Substitutions", outcome.fixed.reproduction.substitutions)
        before, after = _observed(outcome.original.cell), _observed(outcome.fixed.cell)
        lines += side_by_side([("is_available()", before[0], after[0]), ("torch's message", before[1], after[1]),
                               ("verdict", before[2], after[2])], ("before", "after the fix"))
        fo = outcome.fixed.cell.observed
        turned = fo is not None and fo.verdict == OK
        lines.append(f"  => {'the cell turns OK' if turned else 'the cell does NOT turn OK'}"
                     + (" (simulated: the CUDA runtime accepts the driver; device work is tested only on a real GPU)"
                        if turned and fo is not None and fo.simulated else ""))
        lines.append(f"  results: {outcome.fixed.folder}")
    elif outcome.fix_note:
        lines += ["", f"Fix not verified: {outcome.fix_note}"]
    return "\n".join(lines) + "\n"


def succeeded(outcome: Outcome) -> bool:
    """Reproduced (the reported verdict, or a cell that ran when flags were given), and the fix turned OK."""
    o = outcome.original.cell.observed
    reported = outcome.inferred.reported
    host = outcome.original.reproduction.host.kind
    ok = o is not None and (reported is None or verdicts_agree(reported.verdict, o.verdict, host))
    if outcome.fixed is not None:
        fo = outcome.fixed.cell.observed
        ok = ok and fo is not None and fo.verdict == OK
    return ok and outcome.fix_status != NO_REMEDY
