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


SECTIONS = ("kv_cache", "transformers", "sharding")  # harness/memory/verify_sections.py


def memory_outcome(memory: dict[str, Any] | None) -> tuple[str, str] | None:
    """What the memory verification (harness/memory/verify.py) says: (FAIL, why) only when a measured number
    fell outside its band, (ERROR, why) when a case or the whole check could not run, with the exception's
    text; None when it held. A case that errored is never a disagreement: nothing was measured."""
    if not memory:
        return None
    cases = [c for c in memory.get("cases") or [] if isinstance(c, dict)]
    parts = [*cases, *({"name": k, **memory[k]} for k in SECTIONS if isinstance(memory.get(k), dict))]
    # Written before ERROR existed, an errored case said FAIL with its exception: the exception decides.
    errored = [p for p in parts if p.get("status") == "ERROR" or (p.get("status") == "FAIL" and p.get("error"))]
    failed = [p for p in parts if p.get("status") == "FAIL" and not p.get("error")]
    if failed:
        return FAIL, f"memory prediction disagrees with measurement ({', '.join(_names(failed))})"
    err = memory.get("error")
    if err and not cases:
        return ERROR, f"memory verification could not run: {err.get('message') if isinstance(err, dict) else err}"
    if errored:
        first = errored[0]
        return ERROR, (f"memory verification could not run {len(errored)} of {len(parts)} checks: "
                       f"{first.get('name', '?')}: {first.get('error')}")
    if memory.get("status") == "FAIL":
        return FAIL, "memory prediction disagrees with measurement (see the measurement)"
    if memory.get("status") == "ERROR":
        return ERROR, "memory verification could not run (see the measurement)"
    return None


def _names(parts: list[dict[str, Any]]) -> list[str]:
    return [str(p.get("name", "?")) for p in parts]


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
    problems: list[str] = []
    errors: list[str] = []
    if observed.verdict != expected.verdict:
        problems.append(f"expected {expected.verdict}, observed {observed.verdict}")
    if expected.torch_text and expected.torch_text not in (observed.torch_message or ""):
        problems.append(f"torch's message lacks {expected.torch_text!r}")
    on_gpu = observed.verdict == "OK" and not observed.simulated and observed.is_available is True
    memory = memory_outcome(cell.memory)
    if memory is not None:
        (problems if memory[0] == FAIL else errors).append(memory[1])
    probes = probe_failure(cell.probes, on_gpu)
    if probes:
        problems.append(probes)
    status = FAIL if problems else ERROR if errors else PASS
    problems += errors
    reason = "; ".join(problems) if problems else (
        f"{observed.verdict} as expected" + (" (simulated)" if observed.simulated else ""))
    return replace(cell, status=status, reason=reason, observed=observed, log_tail=tail if status != PASS else None)
