"""Judge a container's answer: a cell's document against its expectation, and what a measurement's holds (pure)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from harness.schema import ERROR as SEVERITY_ERROR
from harness.schema import FAILING, Diagnosis
from refenv.model.records import ERROR, FAIL, OOM_KILLED, PASS, TIMEOUT, CellResult, Expected, JobRecord, Observed


def observed_of(doc: dict[str, Any]) -> Observed | None:
    """What the harness concluded, from its cell document (harness/document.py); None when it has no diagnosis."""
    diag_doc = doc.get("diagnosis") or {}
    raw = diag_doc.get("diagnosis")
    if not isinstance(raw, dict) or not raw:
        return None
    try:
        diag = Diagnosis.from_dict(raw)
    except (KeyError, ValueError, TypeError):
        return None  # a diagnosis this version cannot read is no diagnosis: the cell is an ERROR
    torch = (diag_doc.get("facts") or {}).get("torch") or {}
    message = torch.get("init_warning")
    if message:
        message = f"CUDA initialization: {message}"
    message = message or torch.get("init_error")
    failing = [f.verdict for f in diag.findings if f.severity == SEVERITY_ERROR and f.verdict in FAILING]
    return Observed(
        verdict=diag.verdict, verdicts=tuple(dict.fromkeys(failing)), simulated=diag.simulated,
        is_available=torch.get("is_available"), device_count=torch.get("device_count"), torch_message=message,
        findings=diag.findings,
    )


def memory_failure(memory: dict[str, Any] | None) -> str | None:
    if not memory:
        return None
    if memory.get("error") and not memory.get("cases"):
        err = memory["error"]
        return f"memory verification could not run: {err.get('message') if isinstance(err, dict) else err}"
    if memory.get("status") == "FAIL":
        bad = [c.get("name", "?") for c in memory.get("cases", []) if c.get("status") == "FAIL"]
        return f"memory prediction disagrees with measurement ({', '.join(bad) or 'see the cell'})"
    return None


def probe_failure(probes: dict[str, Any] | None, on_gpu: bool) -> str | None:
    """On a real GPU the probes must hold their bands; CPU figures are reported, not judged."""
    if not probes or not on_gpu:
        return None
    gpu = probes.get("gpu") or {}
    if gpu.get("status") == "FAIL":
        return "GPU probes fell below their bands"
    return None


R = TypeVar("R", bound=JobRecord)


def log_tail(logs: str) -> str | None:
    """The last lines of a container's log, kept with a record that did not pass."""
    return "\n".join(logs.strip().splitlines()[-25:]) or None


def no_answer(record: R, doc: dict[str, Any] | None, exit_code: int | None, timed_out: bool, oom_killed: bool,
              oom_hint: str = "", what: str = "result") -> R | None:
    """The record of a container that gave no answer (killed at its time limit or for memory, or no document
    written), or None when there is a document to judge."""
    if timed_out:
        return replace(record, status=TIMEOUT, reason="the container outlived its time limit and was killed")
    if oom_killed:
        return replace(record, status=OOM_KILLED, reason=f"the kernel killed the container for memory{oom_hint}")
    if doc is None:
        return replace(record, status=ERROR, reason=f"the harness wrote no {what} (exit {exit_code})")
    return None


def judge_cell(base: CellResult, expected: Expected, doc: dict[str, Any] | None, exit_code: int | None,
               timed_out: bool, oom_killed: bool, logs: str) -> CellResult:
    """The cell's status and reason. `base` carries the cell's identity and bookkeeping; the rest is filled in."""
    tail = log_tail(logs)
    cell = replace(base, expected=expected, log_tail=tail)
    ended = no_answer(cell, doc, exit_code, timed_out, oom_killed, " (raise run.memory in matrix.yaml)", "result")
    if ended is not None:
        return ended
    assert doc is not None  # no_answer answers for a missing document
    observed = observed_of(doc)
    probes, memory = doc.get("probes"), doc.get("memory")
    cell = replace(cell, probes=probes if isinstance(probes, dict) else None,
                   memory=memory if isinstance(memory, dict) else None)
    diag_error = (doc.get("diagnosis") or {}).get("error")
    if observed is not None and diag_error:
        return replace(cell, status=ERROR, reason=f"the diagnosis is incomplete: {diag_error.get('message')}",
                       observed=observed)
    if observed is None:
        err = doc.get("error") or {}
        return replace(cell, status=ERROR, reason=f"the harness failed: {err.get('message', 'no diagnosis')}")
    problems = []
    if observed.verdict != expected.verdict:
        problems.append(f"expected {expected.verdict}, observed {observed.verdict}")
    if expected.torch_text and expected.torch_text not in (observed.torch_message or ""):
        problems.append(f"torch's message lacks {expected.torch_text!r}")
    on_gpu = observed.verdict == "OK" and not observed.simulated and observed.is_available is True
    for extra in (memory_failure(cell.memory), probe_failure(cell.probes, on_gpu)):
        if extra:
            problems.append(extra)
    status = FAIL if problems else PASS
    reason = "; ".join(problems) if problems else (
        f"{observed.verdict} as expected" + (" (simulated)" if observed.simulated else ""))
    return replace(cell, status=status, reason=reason, observed=observed, log_tail=tail if status != PASS else None)
