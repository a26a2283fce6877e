"""report.html: one self-contained page (inline CSS, a little inline JS, inline SVG; nothing fetched).

This module turns the document into the page's records (refenv/report/page.py); `templates/report.html.j2`
lays them out with jinja2's autoescape on, so every string from a container is escaped. The only markup
inserted as is is the roofline SVG, which `roofline_svg` escapes as it draws.
"""

from __future__ import annotations

import dataclasses

import jinja2
from markupsafe import Markup

from harness.schema import PASS, Finding
from harness.schema.envelope import ProbesSection
from refenv.model.records import CellResult
from refenv.model.rundoc import EnvironmentRecord, HostRecord, RunDocument
from refenv.model.status import FAIL, look
from refenv.report import measures, ready, roofline_data, roofline_svg, stack, view
from refenv.report.formats import MISSING, fmt_bytes, fmt_seconds, text
from refenv.report.memory import Ledger, MemorySummary, ledger_brief, memory_summary, memory_svg
from refenv.report.page import (
    AttentionGroup,
    BuildFailure,
    CellLink,
    Evidence,
    ExpectedView,
    FindingView,
    Grid,
    GridCell,
    GridRow,
    Heading,
    LedgerCell,
    MeasuredRow,
    MemoryRow,
    MemoryTable,
    ObservedView,
    Page,
    ProbeBrief,
    Roofline,
    StatusCount,
    Tables,
)
from refenv.report.probes import ProbeSummary, judged_rows, probe_summary

TEMPLATE = "report.html.j2"


def css_class(status: str | None) -> str:
    """The colour family of a status ('missing' for a crossing with no cell)."""
    return "missing" if status is None else look(status).css


def _environment(doc: RunDocument, name: str) -> Heading:
    e = doc.environment(name) or EnvironmentRecord(name)
    bits = [f"torch {e.torch}" if e.torch else "", e.variant or "", f"CUDA {e.cuda}" if e.cuda else ""]
    return Heading(name, " · ".join(b for b in bits if b))


def _host(doc: RunDocument, name: str) -> Heading:
    h = doc.host(name) or HostRecord(name, kind="")
    gpus = [g.name or "GPU" for g in h.gpus]
    gpu_text = f"{len(gpus)}× {gpus[0].removeprefix('NVIDIA ')}" if gpus and len(set(gpus)) == 1 else ", ".join(gpus)
    bits = [h.kind, h.driver or "", gpu_text]
    return Heading(name, " · ".join(b for b in bits if b), h.kind)


def _grid_cell(cell: CellResult | None, anchors: dict[str, str]) -> GridCell:
    if cell is None:
        return GridCell(None, "missing")
    return GridCell(cell.status, css_class(cell.status), anchors[cell.id],
                    cell.expected.verdict if cell.expected else None,
                    cell.observed.verdict if cell.observed else None, cell.simulated, cell.cached,
                    view.cell_label(cell))


def _finding(f: Finding) -> FindingView:
    return FindingView(text(f.severity), f.verdict, text(f.title), f.layer, tuple(e for e in f.evidence if e),
                       tuple(r for r in f.remediation if r))


def _evidence(cell: CellResult, anchor: str) -> Evidence:
    obs, exp = cell.observed, cell.expected
    return Evidence(
        id=cell.id, anchor=anchor, status=cell.status, css=css_class(cell.status), reason=text(cell.reason),
        simulated=cell.simulated, cached=cell.cached,
        expected=ExpectedView(text(exp.verdict if exp else None), text(exp.verdicts if exp else None),
                              text(exp.reason if exp else None), exp.torch_text if exp else None),
        observed=None if not obs else ObservedView(text(obs.verdict), text(obs.verdicts), text(obs.is_available),
                                                   text(obs.device_count), obs.torch_message),
        findings=tuple(_finding(f) for f in view.findings(cell)),
        no_fix=view.NO_FIX if cell.status == FAIL and not view.fixes(cell) else None,
        probes=probe_summary(cell.probes), memory=_memory(memory_summary(cell.memory)),
        log_tail=cell.log_tail, wall=fmt_seconds(cell.wall_s), cache_key=text(cell.cache_key),
        result_path=text(cell.result_path),
        stack=tuple(_finding(f) for f in (cell.stack.findings if cell.stack else ())),
    )


def _ledger_cell(led: Ledger) -> LedgerCell:
    """A passing ledger shows what was measured (and how far from the prediction); a failing one shows both."""
    ok = led.status == PASS
    return LedgerCell(fmt_bytes(led.measured) if ok else ledger_brief(led), led.off if ok else "", led.status,
                      f"{led.status}: predicted {fmt_bytes(led.predicted)}, measured {fmt_bytes(led.measured)}"
                      + (f" ({led.note})" if led.note else ""))


def _memory(summary: MemorySummary | None) -> MemoryTable | None:
    """Cases down, ledgers across, each ledger judged against its prediction."""
    if summary is None:
        return None
    names = summary.ledger_names
    rows = []
    for case in summary.cases:
        by_name = {led.name: led for led in case.ledgers}
        rows.append(MemoryRow(case.name, case.status, case.error, case.details,
                              tuple(_ledger_cell(by_name[n]) if n in by_name else None for n in names)))
    picture = memory_svg(summary)
    return MemoryTable(summary.status, summary.device, tuple(names), tuple(rows), summary.notes, summary.passed,
                       len(summary.cases), Markup(picture) if picture else None)  # escaped as drawn


def _roofline(probes: ProbesSection | None, title: str, host_kind: str, host: str, cell: str) -> Roofline | None:
    fig = roofline_data.figure(probes, title, host_kind, host)
    if fig is None:
        return None
    return Roofline(fig.title, fig.caption, fig.device == "cpu", cell,
                    Markup(roofline_svg.render_svg(fig)))  # escaped as drawn


def _rooflines(doc: RunDocument) -> tuple[Roofline, ...]:
    """One picture per measurement: per environment on the CPU, per environment and real GPU host.

    A run without measurements (an older document, a single reproduced cell) draws one per environment x
    host: the first of its cells, by scenario order, that has one."""
    out = []
    for m in doc.measurements:
        summary = probe_summary(m.probes)
        host = doc.host(m.host) if m.host else None
        pic = _roofline(m.probes, f"{m.label}: {summary.device if summary else MISSING}", host.kind if host else "",
                        m.host or "", m.id)
        if pic is not None:
            out.append(pic)
    seen: set[tuple[str, str]] = set()
    order = {s: i for i, s in enumerate(view.scenario_names(doc))}
    for cell in sorted(doc.cells, key=lambda c: order.get(c.scenario, len(order))):
        key = (cell.environment, cell.host)
        if key in seen or not cell.probes:
            continue
        host = doc.host(cell.host)
        summary = probe_summary(cell.probes)
        device = summary.device if summary else MISSING
        pic = _roofline(cell.probes, f"{key[0]} on {key[1]}: {device}", host.kind if host else "", key[1], cell.id)
        if pic is not None:
            seen.add(key)
            out.append(pic)
    return tuple(out)


def _measured(doc: RunDocument) -> tuple[MeasuredRow, ...]:
    """The run's measurements, each once, with what it stands for."""
    return tuple(MeasuredRow(m.label, m.status, css_class(m.status), m.cells,
                             "cached" if m.cached else fmt_seconds(m.wall_s), text(m.reason),
                             _probe_brief(probe_summary(m.probes)), _memory(memory_summary(m.memory)))
                 for m in measures.measured(doc)[:len(doc.measurements)])


def _probe_brief(summary: ProbeSummary | None) -> ProbeBrief | None:
    if summary is None:
        return None
    return ProbeBrief(summary.status if not summary.error else f"{summary.status} ({summary.error})",
                      summary.device, tuple(judged_rows(summary)))


def _tables(doc: RunDocument) -> Tables:
    envs = tuple((text(e.name), text(e.torch), text(e.variant), text(e.cuda), text(e.python), text(e.image),
                  view.build_text(e)) for e in doc.environments)
    hosts = tuple((text(h.name), text(h.kind), text(h.driver), text(h.cuda_driver_version), view.gpus_text(h),
                   text(h.faults), text(h.description)) for h in doc.hosts)
    scenarios = tuple((text(s.name), text(s.description), text(s.gpus),
                       ", ".join(f"{k}={v!r}" for k, v in s.env.items()) or MISSING) for s in doc.scenarios)
    return Tables(envs, hosts, scenarios)


def context(doc: RunDocument) -> Page:
    """Everything the template shows."""
    cells = doc.cells
    anchors = {c.id: f"cell-{i}" for i, c in enumerate(cells)}
    grids = tuple(Grid(g.scenario, g.description, tuple(_host(doc, h) for h in g.hosts),
                       tuple(GridRow(_environment(doc, env), tuple(_grid_cell(c, anchors) for c in row))
                             for env, row in g.rows))
                  for g in view.grids(doc))
    counts = tuple(StatusCount(s, n, css_class(s)) for s, n in view.status_counts(doc).items() if n)
    builds = tuple(BuildFailure(text(e.name), text(e.image), text(e.build.log), e.build.log_tail, e.build.error)
                   for e in view.build_failures(doc))
    attention = tuple(AttentionGroup(g.status, css_class(g.status), g.reason,
                                     tuple(CellLink(c.id, anchors[c.id]) for c in g.cells))
                      for g in view.attention_groups(doc))
    return Page(
        run_id=text(doc.run.id), outcome=view.outcome(doc), counts=counts, counts_line=view.counts_line(doc),
        header=tuple(view.header_rows(doc)[1:]),  # the bar shows the run id
        attention=attention, attention_total=len(view.attention(doc)), grids=grids,
        cells=tuple(_evidence(c, anchors[c.id]) for c in cells), builds=builds, rooflines=_rooflines(doc),
        measured=_measured(doc), tables=_tables(doc), readiness=tuple(ready.sections(doc)),
        stacks=tuple(stack.sections(doc)),
    )


def _environment_loader() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("refenv", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(doc: RunDocument) -> str:
    """The whole report.html for one cells.json document."""
    page = context(doc)
    return _environment_loader().get_template(TEMPLATE).render(
        {f.name: getattr(page, f.name) for f in dataclasses.fields(page)})
