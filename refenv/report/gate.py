"""What a CI gate shows of a run (pure): a job summary in Markdown and the step's outputs.

The summary is the report's own opening — the run's outcome, upgrade readiness, the stack beside torch, the
builds that failed — with the diff against the baseline run first where there is one. The outputs
(`status`, `gpu-hosts`, `hosts-lost`, `run`) are single-line values a workflow can test
(GitHub's `$GITHUB_OUTPUT` takes `name=value` lines; docs.github.com, "Workflow commands").
"""

from __future__ import annotations

from pathlib import Path

from refenv.model.rundoc import RunDocument
from refenv.report import diff as run_diff
from refenv.report import markdown, ready

PASSED, FAILED, REGRESSED = "passed", "failed", "regressed"


def status(doc: RunDocument, d: run_diff.RunDiff | None) -> str:
    """'regressed' where a host lost the GPU or an extension broke, else 'failed' where a cell disagreed or did
    not run as planned, else 'passed'."""
    if d is not None and d.regressed:
        return REGRESSED
    return PASSED if doc.summary.ok and not doc.run.interrupted else FAILED


def gpu_hosts(doc: RunDocument) -> str:
    """'team: r570, r580; serve: r580' (each environment with the hosts where torch gets a GPU)."""
    return "; ".join(f"{r.environment}: {', '.join(h.host for h in r.ready) or 'none'}" for r in ready.of_run(doc))


def outputs(doc: RunDocument, folder: Path, d: run_diff.RunDiff | None) -> dict[str, str]:
    return {"status": status(doc, d), "gpu-hosts": gpu_hosts(doc),
            "hosts-lost": ", ".join(f"{m.environment}/{m.host}" for m in d.lost) if d else "",
            "run": str(folder)}


def step_summary(doc: RunDocument, d: run_diff.RunDiff | None) -> str:
    """The job summary: the outcome, the diff against the baseline, then the report's own readiness and stack."""
    lines = [f"# refenv matrix: {status(doc, d).upper()}", ""]
    if d is not None:
        lines += ["## Against the baseline run", "", "```text", *run_diff.lines(d), "```", ""]
    return "\n".join(lines) + markdown.summary_sections(doc)


def output_lines(values: dict[str, str]) -> str:
    """`name=value` lines, a value's line breaks folded (an output is one line here)."""
    return "".join(f"{k}={' '.join(v.split())}\n" for k, v in values.items())
