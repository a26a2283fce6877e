"""Judge a container's answer: a cell's document against its expectation, and what a measurement's holds (pure).

The harness's documents are read as its schema's records (harness/schema/envelope.py) through the one codec;
a document that does not fit them is an answer refenv cannot read, which is an ERROR naming the place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from harness import catalogue
from harness.answer.redact import redact, secrets_in
from harness.facts import torch_of
from harness.schema import OK, worst
from harness.schema.envelope import CellDocument, Envelope, Failed, MemorySection, ProbesSection
from refenv.model import codec
from refenv.model.records import ERROR, FAIL, OOM_KILLED, PASS, TIMEOUT, CellResult, Expected, JobRecord, Observed

# A harness document as read from its file: a JSON object, or None when there was none to read.
Answer = Mapping[str, object] | None
D = TypeVar("D", bound=Envelope)


def read_answer(cls: type[D], answer: Answer) -> D | str:
    """The harness's document as its record, or why it cannot be read (a sentence for the record's reason)."""
    try:
        return codec.decode(cls, answer)
    except codec.DecodeError as exc:
        return f"the harness wrote a document this refenv cannot read: {exc.message}"


def observed_of(doc: CellDocument) -> Observed | None:
    """What the harness concluded, from its cell document; None when it has no diagnosis."""
    diag = doc.diagnosis.diagnosis if doc.diagnosis else None
    if diag is None:
        return None
    torch = torch_of(doc.diagnosis.facts if doc.diagnosis else None)
    # The run document and the reports made from it are read by people and may be made public: what the
    # container said passes the one redaction boundary (harness/answer/redact.py).
    known = secrets_in(doc.diagnosis)
    message = catalogue.torch_message(torch.get("init_warning"), torch.get("init_error"))
    return Observed(
        verdict=diag.verdict, verdicts=diag.failing_verdicts, simulated=diag.simulated,
        is_available=torch.get("is_available"), device_count=torch.get("device_count"),
        torch_message=None if message is None else redact(message, known),
        findings=tuple(replace(f, title=redact(f.title, known), evidence=tuple(redact(e, known) for e in f.evidence),
                               remediation=tuple(redact(r, known) for r in f.remediation))
                       for f in diag.findings),
    )


# What a measured section says against the record: (FAIL, why) when a measured figure is outside its band, (ERROR,
# why) when the section could not give an answer; None when it holds.
Problem = tuple[str, str]


def memory_problem(memory: MemorySection | None) -> Problem | None:
    if memory is None:
        return None
    if isinstance(memory, Failed):
        return ERROR, f"memory verification could not run: {memory.error.message}"
    if memory.error and not memory.cases:
        return ERROR, f"memory verification could not run: {memory.error}"
    if memory.status == FAIL:
        bad = [c.name for c in memory.cases if c.status == FAIL]
        return FAIL, f"memory prediction disagrees with measurement ({', '.join(bad) or 'see the cell'})"
    if memory.status == ERROR:
        lost = [(c.name, c.error) for c in memory.cases if c.status == ERROR]
        lost += [(name, section.error) for name, section in memory.sections() if section.status == ERROR]
        # The exception's own words, as the harness caught them: what the image lacks (a module, an API).
        first = next(((name, error) for name, error in lost if error), None)
        why = "" if first is None else f" ({first[1]})" if len(lost) == 1 else f" ({first[0]}: {first[1]})"
        return ERROR, f"memory verification could not measure {', '.join(n for n, _ in lost) or 'its cases'}{why}"
    return None


def probe_problem(probes: ProbesSection | None, on_gpu: bool) -> Problem | None:
    """On a real GPU the probes must hold their bands; CPU figures are reported, not judged."""
    if probes is None or not on_gpu or isinstance(probes, Failed):
        return None
    if probes.gpu is not None and probes.gpu.status == FAIL:
        return FAIL, "GPU probes fell below their bands"
    return None


def status_of(problems: list[Problem]) -> str:
    """FAIL when any answer disagrees, else ERROR when any gave none, else PASS."""
    return worst([PASS, *(status for status, _ in problems)])


R = TypeVar("R", bound=JobRecord)


def log_tail(logs: str) -> str | None:
    """The last lines of a container's log, kept with a record that did not pass."""
    return "\n".join(logs.strip().splitlines()[-25:]) or None


def no_answer(record: R, doc: Answer, exit_code: int | None, timed_out: bool, oom_killed: bool,
              oom_hint: str = "", what: str = "result") -> R | None:
    """The record of a container that gave no answer (killed at its time limit or for memory, or no document
    written), or None when there is a document to judge."""
    if timed_out:
        return replace(record, status=TIMEOUT, reason="the container outlived its time limit and was killed")
    if oom_killed:
        return replace(record, status=OOM_KILLED, reason=f"the kernel killed the container for memory{oom_hint}")
    if doc is None:
        # The harness says why in its last line (a path it could not write: "No space left on device").
        said = last_line(record.log_tail or "")
        return replace(record, status=ERROR,
                       reason=f"the harness wrote no {what} (exit {exit_code})" + (f": {said}" if said else ""))
    return None


def last_line(logs: str, width: int = 300) -> str:
    """The last line a container printed, cut to `width`."""
    lines = [ln.strip() for ln in logs.splitlines() if ln.strip()]
    return lines[-1][:width] if lines else ""


def judge_cell(base: CellResult, expected: Expected, answer: Answer, exit_code: int | None,
               timed_out: bool, oom_killed: bool, logs: str) -> CellResult:
    """The cell's status and reason. `base` carries the cell's identity and bookkeeping; the rest is filled in."""
    tail = log_tail(logs)
    cell = replace(base, expected=expected, log_tail=tail)
    ended = no_answer(cell, answer, exit_code, timed_out, oom_killed, " (raise run.memory in matrix.yaml)", "result")
    if ended is not None:
        return ended
    doc = read_answer(CellDocument, answer)
    if isinstance(doc, str):
        return replace(cell, status=ERROR, reason=doc)
    observed = observed_of(doc)
    cell = replace(cell, probes=doc.probes, memory=doc.memory)
    diag_error = doc.diagnosis.error if doc.diagnosis else None
    if observed is not None and diag_error is not None:
        return replace(cell, status=ERROR, reason=f"the diagnosis is incomplete: {diag_error.message}",
                       observed=observed)
    if observed is None:
        why = doc.error.message if doc.error else "no diagnosis"
        return replace(cell, status=ERROR, reason=f"the harness failed: {why}")
    problems: list[Problem] = []
    if observed.verdict != expected.verdict:
        problems.append((FAIL, f"expected {expected.verdict}, observed {observed.verdict}"))
    if expected.torch_text and expected.torch_text not in (observed.torch_message or ""):
        problems.append((FAIL, f"torch's message lacks {expected.torch_text!r}"))
    on_gpu = observed.verdict == OK and not observed.simulated and observed.is_available is True
    problems += [p for p in (memory_problem(cell.memory), probe_problem(cell.probes, on_gpu)) if p]
    status = status_of(problems)
    reason = "; ".join(why for _, why in problems) if problems else (
        f"{observed.verdict} as expected" + (" (simulated)" if observed.simulated else ""))
    return replace(cell, status=status, reason=reason, observed=observed, log_tail=tail if status != PASS else None)
