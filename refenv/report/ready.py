"""Upgrade readiness of a run document, as every report shows it first, and what moving between two
environments changes on each host (pure).

The judgement is `refenv.readiness`'s; this module reads the run document into its cell records (the one
place that conversion happens) and words the answer: per environment, where torch gets a GPU, where it
does not with the verdict and the smallest fix, and whether the observations agreed with the predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

from refenv import readiness
from refenv.model.records import CellResult
from refenv.model.rundoc import RunDocument
from refenv.model.status import AGREED, DISAGREED, FAMILIES, NO_ANSWER, SKIPPED, family
from refenv.readiness import CellFacts, Readiness
from refenv.report import stack


def cell_facts(doc: RunDocument) -> tuple[CellFacts, ...]:
    """Every cell of the document as readiness reads it."""
    envs = {e.name: e for e in doc.environments}
    hosts = {h.name: h for h in doc.hosts}
    access = {s.name: readiness.plain_gpu_access(s.gpus, s.env) for s in doc.scenarios}
    out = []
    for c in doc.cells:
        env, host = envs.get(c.environment), hosts.get(c.host)
        out.append(CellFacts(
            environment=c.environment, host=c.host, scenario=c.scenario, status=c.status,
            expected=c.expected.verdict if c.expected else None, observed=c.observed.verdict if c.observed else None,
            simulated=c.simulated, gpu_access=access.get(c.scenario, False),
            driver=host.driver if host else None, torch=(env.torch if env else None) or "",
            cuda=env.cuda if env else None, driver_cuda=host.cuda_driver_version if host else None,
            capability=next((g.compute_capability for g in host.gpus), None) if host else None, reason=c.reason,
            remedy=_remedy(c), **_stack(c)))
    return tuple(out)


def _stack(cell: CellResult) -> dict[str, str | None]:
    """The first error of the cell's stack and its first fix, for readiness."""
    errors = cell.stack.errors if cell.stack else ()
    if not errors:
        return {"stack_problem": None, "stack_fix": None}
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return {"stack_problem": first.title + more, "stack_fix": first.remediation[0] if first.remediation else None}


def _remedy(cell: CellResult) -> str | None:
    """The first fix the diagnosis gave for its own verdict (its primary finding's), if any."""
    if cell.observed is None:
        return None
    return next((f.remediation[0] for f in cell.observed.findings
                 if f.failing and f.verdict == cell.observed.verdict and f.remediation), None)


def of_run(doc: RunDocument) -> tuple[Readiness, ...]:
    """Readiness of every environment the run has cells of, in the document's order."""
    return readiness.judge(cell_facts(doc))


@dataclass(frozen=True)
class Section:
    """One environment's readiness, worded: a heading, where torch gets a GPU, where not and why."""

    environment: str
    build: str                       # 'torch 2.14.1, CUDA 13.0' / 'torch 2.13.0, CPU build'
    ready: bool
    gpu_on: str                      # 'r580 (simulated), real (real GPU)' or 'no host'
    no_gpu: tuple[str, ...]          # 'r470, r535: driver too old for CUDA 13.0; install R580 (>= 580.65.06) ...'
    stack_blocked: tuple[str, ...]   # 'r580: torchvision 0.28.0 does not import: ...; pip install torchvision==0.29.1'
    untested: tuple[str, ...]        # 'real: NOT_RUN: this Docker engine has no NVIDIA runtime'
    agreement: str                   # 'all 21 cells agreed with the predictions'
    agreed: bool                     # no cell of the environment disagreed or gave no answer
    disagreed: tuple[str, ...]       # cell ids


def _families(doc: RunDocument, environment: str) -> dict[str, int]:
    counts = dict.fromkeys(FAMILIES, 0)
    for c in doc.cells:
        if c.environment == environment:
            counts[family(c.status)] += 1
    return counts


def held(doc: RunDocument, environment: str) -> bool:
    """No cell of the environment disagreed or failed to answer (cells not run are no evidence either way)."""
    counts = _families(doc, environment)
    return counts[DISAGREED] == 0 and counts[NO_ANSWER] == 0


def agreement(doc: RunDocument, environment: str) -> str:
    """'all 21 cells agreed with the predictions', or the cells per status family: '7 agreed, 1 disagreed, ...'."""
    counts = _families(doc, environment)
    total = sum(counts.values())
    if counts[AGREED] == total:
        return f"all {total} cells agreed with the predictions"
    return "predictions: " + ", ".join(f"{n} {'not run' if name == SKIPPED else name}"
                                       for name, n in counts.items() if n)


def _grouped_untested(r: Readiness) -> tuple[str, ...]:
    """'none, r570: BUILD_FAILED: ...': hosts that gave no answer for the same reason, told once."""
    groups: dict[str, list[str]] = {}
    for host, why in r.untested:
        groups.setdefault(why, []).append(host)
    return tuple(f"{', '.join(hosts)}: {why}" for why, hosts in groups.items())


def sections(doc: RunDocument) -> list[Section]:
    """Every environment's readiness, worded."""
    out = []
    for r in of_run(doc):
        out.append(Section(
            environment=r.environment,
            build=f"torch {r.torch or '?'}, " + (f"CUDA {r.cuda}" if r.cuda else "CPU build"),
            ready=r.is_ready, gpu_on=", ".join(h.label for h in r.ready) or "no host",
            no_gpu=readiness.grouped(r), stack_blocked=readiness.grouped(r, stack=True), untested=_grouped_untested(r),
            agreement=agreement(doc, r.environment), agreed=held(doc, r.environment),
            disagreed=r.disagreed))
    return out


@dataclass(frozen=True)
class HostChange:
    """What one host gives torch under the old environment and under the new one."""

    host: str
    before: str      # 'GPU (simulated)', 'no GPU: DRIVER_TOO_OLD', 'not tested'
    after: str
    fix: str         # the smallest fix under the new environment, when it loses or lacks the GPU

    @property
    def changed(self) -> bool:
        return self.before != self.after


def host_state(r: Readiness | None, host: str) -> tuple[str, str]:
    """What torch gets on `host` in an environment's readiness, in words, and the fix where it gets no GPU."""
    if r is None:
        return "not in this run", ""
    ready = next((h for h in r.ready if h.host == host), None)
    if ready is not None:
        return f"GPU ({'simulated' if ready.simulated else 'real GPU'})", ""
    refused = next((h for h in r.refused if h.host == host), None)
    if refused is not None and refused.verdict == readiness.STACK:
        return "GPU, but the stack does not run", refused.fix.text
    if refused is not None:
        return f"no GPU: {refused.verdict}", refused.fix.text
    return "not tested", ""


def compare(doc: RunDocument, old: str, new: str) -> list[HostChange]:
    """Per host of the run, what torch gets under `old` and under `new` (hosts in the document's order)."""
    by_env = {r.environment: r for r in of_run(doc)}
    before_r, after_r = by_env.get(old), by_env.get(new)
    out = []
    for host in dict.fromkeys(h.name for h in doc.hosts):
        before, _ = host_state(before_r, host)
        after, fix = host_state(after_r, host)
        out.append(HostChange(host, before, after, fix))
    return out


def compare_lines(doc: RunDocument, old: str, new: str) -> list[str]:
    """The comparison as text: one line per host, the changes marked."""
    changes = compare(doc, old, new)
    width = max((len(c.host) for c in changes), default=0)
    lines = [f"moving from {old} to {new}:"]
    for c in changes:
        mark = "changes" if c.changed else "same"
        fix = f" ({c.fix})" if c.fix and c.changed else ""
        lines.append(f"  {c.host:<{width}}  {c.before} -> {c.after}  [{mark}]{fix}")
    return lines + [f"  {line}" for line in stack.breaks(doc, old, new)]
