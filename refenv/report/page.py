"""What report.html shows, as typed records: the grid, each cell's evidence, the measurements, the pictures.

refenv/report/html.py builds these from a run document and `templates/report.html.j2` lays them out (it
reads their attributes by name, so a field the template needs is declared here once).
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from refenv.report.probes import ProbeRow, ProbeSummary
from refenv.report.ready import Section
from refenv.report.stack import StackSection


@dataclass(frozen=True)
class Heading:
    """An environment down the side of a grid or a host across its top: its name, and what it is."""

    name: str
    sub: str
    kind: str = ""


@dataclass(frozen=True)
class GridCell:
    """One crossing of a grid: the cell's status and verdicts, or nothing (no cell there)."""

    status: str | None
    css: str
    anchor: str | None = None
    expected: str | None = None
    observed: str | None = None
    simulated: bool = False
    cached: bool = False
    label: str = ""


@dataclass(frozen=True)
class GridRow:
    env: Heading
    cells: tuple[GridCell, ...]


@dataclass(frozen=True)
class Grid:
    scenario: str
    description: str
    hosts: tuple[Heading, ...]
    rows: tuple[GridRow, ...]


@dataclass(frozen=True)
class StatusCount:
    status: str
    n: int
    css: str


@dataclass(frozen=True)
class CellLink:
    id: str
    anchor: str


@dataclass(frozen=True)
class AttentionGroup:
    """Cells that need attention for one reason."""

    status: str
    css: str
    reason: str
    cells: tuple[CellLink, ...]


@dataclass(frozen=True)
class FindingView:
    severity: str
    verdict: str
    title: str
    layer: str
    evidence: tuple[str, ...]
    remediation: tuple[str, ...]


@dataclass(frozen=True)
class ExpectedView:
    verdict: str
    verdicts: str
    reason: str
    torch_text: str | None


@dataclass(frozen=True)
class ObservedView:
    verdict: str
    verdicts: str
    is_available: str
    device_count: str
    torch_message: str | None


@dataclass(frozen=True)
class LedgerCell:
    """A ledger of a case: what was measured (with how far from the prediction), or both when it failed."""

    text: str
    delta: str
    status: str
    title: str


@dataclass(frozen=True)
class MemoryRow:
    name: str
    status: str
    error: str | None
    details: tuple[str, ...]
    ledgers: tuple[LedgerCell | None, ...]


@dataclass(frozen=True)
class MemoryTable:
    """A memory verification: cases down, ledgers across."""

    status: str
    device: str
    ledgers: tuple[str, ...]
    rows: tuple[MemoryRow, ...]
    notes: tuple[str, ...]
    passed: int
    total: int
    picture: Markup | None = None   # the cases' ledgers as stacked bars (harness/memory/picture.py)


@dataclass(frozen=True)
class ProbeBrief:
    status: str
    device: str
    rows: tuple[ProbeRow, ...]


@dataclass(frozen=True)
class Evidence:
    """One cell's panel: its verdicts, findings with fixes, measurements it carries, and its bookkeeping."""

    id: str
    anchor: str
    status: str
    css: str
    reason: str
    simulated: bool
    cached: bool
    expected: ExpectedView
    observed: ObservedView | None
    findings: tuple[FindingView, ...]
    no_fix: str | None
    probes: ProbeSummary | None
    memory: MemoryTable | None
    log_tail: str | None
    wall: str
    cache_key: str
    result_path: str
    stack: tuple[FindingView, ...] = ()   # the stack beside torch on this cell's host (refenv/run/stackcheck.py)


@dataclass(frozen=True)
class Roofline:
    """One roofline picture, drawn as SVG (escaped as it is drawn)."""

    title: str
    caption: str
    cpu: bool
    cell: str
    svg: Markup


@dataclass(frozen=True)
class MeasuredRow:
    label: str
    status: str
    css: str
    cells: int
    how: str
    reason: str
    probes: ProbeBrief | None
    memory: MemoryTable | None


@dataclass(frozen=True)
class BuildFailure:
    name: str
    image: str
    log: str
    log_tail: str | None
    error: str | None


@dataclass(frozen=True)
class Tables:
    environments: tuple[tuple[str, ...], ...]
    hosts: tuple[tuple[str, ...], ...]
    scenarios: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Page:
    """Everything the template shows."""

    run_id: str
    outcome: str
    counts: tuple[StatusCount, ...]
    counts_line: str
    header: tuple[tuple[str, str], ...]
    attention: tuple[AttentionGroup, ...]
    attention_total: int
    grids: tuple[Grid, ...]
    cells: tuple[Evidence, ...]
    builds: tuple[BuildFailure, ...]
    rooflines: tuple[Roofline, ...]
    measured: tuple[MeasuredRow, ...]
    tables: Tables
    readiness: tuple[Section, ...]
    stacks: tuple[StackSection, ...] = ()  # each environment's stack beside torch (refenv/report/stack.py)
