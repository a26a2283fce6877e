"""What every renderer shares about a run document: outcome, counts, grids, labels, fixes, header rows.

The document is typed (`refenv/model/rundoc.py`): a partial run has fewer cells, not missing keys, so these
are plain questions about the records.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.schema import SEVERITY_ERROR, SEVERITY_WARNING, Finding
from refenv.model.builds import FAILED
from refenv.model.records import CellResult
from refenv.model.rundoc import EnvironmentRecord, HostRecord, RunDocument
from refenv.model.status import ATTENTION_ORDER, BAD, NOT_RUN, PASS, STATUSES
from refenv.report.formats import MISSING, fmt_seconds, text

NO_FIX = ("the harness recorded no remediation: the rules and the observation disagree, so compare the expected "
          "reason with the findings (a wrong rule, or a setting that did not reach the container)")


def status_counts(doc: RunDocument) -> dict[str, int]:
    """Cells per status, every known status present (unknown ones after them, as written)."""
    return doc.summary.by_status


def outcome(doc: RunDocument) -> str:
    """'PASSED', 'FAILED', 'INTERRUPTED' or 'EMPTY': the run's one-word answer."""
    if doc.run.interrupted:
        return "INTERRUPTED"
    if not doc.cells:
        return "EMPTY"
    return "PASSED" if doc.summary.ok else "FAILED"  # a measurement gone wrong fails the run too


def _names(records: list[str], from_cells: list[str]) -> list[str]:
    return records + sorted({n for n in from_cells if n and n not in records})


def environment_names(doc: RunDocument) -> list[str]:
    """Environments in the document's order, then any that only cells name."""
    return _names([e.name for e in doc.environments], [c.environment for c in doc.cells])


def host_names(doc: RunDocument) -> list[str]:
    """Hosts in the document's order, then any that only cells name."""
    return _names([h.name for h in doc.hosts], [c.host for c in doc.cells])


def scenario_names(doc: RunDocument) -> list[str]:
    """Scenarios in the document's order, then any that only cells name."""
    return _names([s.name for s in doc.scenarios], [c.scenario for c in doc.cells])


@dataclass(frozen=True)
class Grid:
    """One scenario's grid: environments down, hosts across, the cell (or None) at each crossing."""

    scenario: str
    description: str
    hosts: tuple[str, ...]
    rows: tuple[tuple[str, tuple[CellResult | None, ...]], ...]


def grids(doc: RunDocument) -> list[Grid]:
    """One grid per scenario, in the document's order."""
    index = {(c.environment, c.host, c.scenario): c for c in doc.cells}
    envs, hosts = environment_names(doc), host_names(doc)
    out = []
    for scenario in scenario_names(doc):
        rows = tuple((env, tuple(index.get((env, host, scenario)) for host in hosts)) for env in envs)
        record = doc.scenario(scenario)
        out.append(Grid(scenario, record.description if record else "", tuple(hosts), rows))
    return out


def cell_label(cell: CellResult | None) -> str:
    """'PASS OK', 'FAIL expected X / observed Y', 'TIMEOUT', '—' for a crossing with no cell."""
    if cell is None:
        return MISSING
    exp = cell.expected.verdict if cell.expected else None
    obs = cell.observed.verdict if cell.observed else None
    if cell.status == PASS:
        return f"PASS {obs or exp or ''}".strip()
    if obs:
        return f"{cell.status} expected {text(exp)} / observed {obs}"
    return cell.status  # no observation: the status (BUILD_FAILED, TIMEOUT, ...) is the whole answer


def findings(cell: CellResult) -> tuple[Finding, ...]:
    return cell.observed.findings if cell.observed else ()


def fixes(cell: CellResult) -> list[str]:
    """Every remediation step of the cell's findings, errors first, each once."""
    rank = {SEVERITY_ERROR: 0, SEVERITY_WARNING: 1}
    seen: list[str] = []
    for finding in sorted(findings(cell), key=lambda f: rank.get(f.severity, 2)):
        for step in finding.remediation:
            if step and step not in seen:
                seen.append(step)
    return seen


def attention(doc: RunDocument) -> list[CellResult]:
    """Every cell that did not PASS: FAIL first, then the ones that could not answer, NOT_RUN last."""
    rank = {s: i for i, s in enumerate(ATTENTION_ORDER)}
    return sorted((c for c in doc.cells if c.status != PASS), key=lambda c: rank.get(c.status, len(rank)))


def build_failures(doc: RunDocument) -> list[EnvironmentRecord]:
    """Environments whose image failed to build."""
    return [e for e in doc.environments if e.build.status.upper() == FAILED]


def _selection(sel: dict[str, tuple[str, ...]]) -> str:
    return "; ".join(f"{key}: {', '.join(sel.get(key, ())) or 'all'}" for key in ("env", "host", "scenario"))


def header_rows(doc: RunDocument) -> list[tuple[str, str]]:
    """The run header as (label, value) pairs: when, where, what was selected, how long."""
    r = doc.run
    runtime = r.docker.nvidia_runtime
    where = ", ".join(p for p in (text(r.machine.hostname),
                                  f"{r.machine.cores} cores" if r.machine.cores else "",
                                  f"{r.machine.parallel} cells at once" if r.machine.parallel else "") if p)
    return [
        ("run", text(r.id)),
        ("started", text(r.started)),
        ("finished", text(r.finished) + (" (interrupted)" if r.interrupted else "")),
        ("wall time", fmt_seconds(r.wall_s)),
        ("machine", where),
        ("docker", f"{text(r.docker.server_version)}, NVIDIA runtime: {MISSING if runtime is None else text(runtime)}"),
        ("matrix", text(r.matrix_file)),
        ("selection", _selection(r.selection)),
        ("versions", f"refenv {text(r.refenv_version)}, harness {text(r.harness_version)}"),
    ]


def counts_line(doc: RunDocument) -> str:
    """'12 cells: 9 PASS, 1 FAIL, 2 NOT_RUN (3 cached)': only the statuses that occur."""
    summary = doc.summary
    parts = [f"{n} {s}" for s, n in summary.by_status.items() if n]
    line = f"{summary.total} cell{'' if summary.total == 1 else 's'}" + (": " + ", ".join(parts) if parts else "")
    return line + (f" ({summary.cached} cached)" if summary.cached else "")


@dataclass(frozen=True)
class Group:
    """Cells that did not pass for the same reason: told once, with every cell named."""

    status: str
    reason: str
    cells: tuple[CellResult, ...]


def attention_groups(doc: RunDocument) -> list[Group]:
    """`attention(doc)` with cells of one status and one reason gathered (a failed build fails every cell)."""
    groups: dict[tuple[str, str], list[CellResult]] = {}
    for cell in attention(doc):
        groups.setdefault((cell.status, text(cell.reason)), []).append(cell)
    return [Group(status, reason, tuple(members)) for (status, reason), members in groups.items()]


def gpus_text(host: HostRecord) -> str:
    """'2× NVIDIA H100 80GB HBM3 (sm 9.0)': the host's GPUs, alike ones counted once."""
    counts: dict[str, int] = {}
    for g in host.gpus:
        key = f"{text(g.name)} (sm {text(g.compute_capability)})"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n}× {k}" if n > 1 else k for k, n in counts.items()) or MISSING


def build_text(env: EnvironmentRecord) -> str:
    """'BUILT 55 s', 'CACHED', 'FAILED 2 min 02 s', or '—'."""
    parts = [env.build.status] if env.build.status else []
    if env.build.wall_s is not None:
        parts.append(fmt_seconds(env.build.wall_s))
    return " ".join(parts) or MISSING


__all__ = [
    "BAD",
    "NOT_RUN",
    "NO_FIX",
    "STATUSES",
    "Grid",
    "Group",
    "attention",
    "attention_groups",
    "build_failures",
    "build_text",
    "cell_label",
    "counts_line",
    "environment_names",
    "findings",
    "fixes",
    "gpus_text",
    "grids",
    "header_rows",
    "host_names",
    "outcome",
    "scenario_names",
    "status_counts",
]
