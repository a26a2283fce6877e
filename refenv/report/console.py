"""What a run prints when it ends: counts per status, every cell that did not pass in one line, where the reports are.

`console_summary` is plain text for logs and CI; `console_table` is the same as rich renderables for a
terminal (one grid per scenario, coloured by status).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from refenv.model.rundoc import RunDocument
from refenv.model.status import look
from refenv.report import measures, ready, stack, view
from refenv.report.formats import fmt_seconds, text

REASON_WIDTH = 160


def _one_line(value: str, width: int = REASON_WIDTH) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _kept_indent(line: str) -> str:
    """_one_line that keeps the line's leading indentation (the stack's lines nest under their environment)."""
    body = line.lstrip()
    return " " * (len(line) - len(body)) + _one_line(body)


def attention_lines(doc: RunDocument) -> list[str]:
    """'FAIL  env/host/scenario: reason' for every cell that did not pass, worst first; one reason told once."""
    groups = view.attention_groups(doc)
    width = max((len(g.status) for g in groups), default=0)
    lines = []
    for g in groups:
        if len(g.cells) == 1:
            lines.append(f"{g.status:<{width}}  {g.cells[0].id}: {_one_line(g.reason)}")
            continue
        lines.append(f"{g.status:<{width}}  {len(g.cells)} cells: {_one_line(g.reason)}")
        lines += [f"{'':<{width}}    {c.id}" for c in g.cells]
    return lines


def readiness_lines(doc: RunDocument) -> list[str]:
    """Per environment: where torch gets a GPU, where not with the smallest fix, whether predictions held."""
    lines = []
    for s in ready.sections(doc):
        lines.append(f"{s.environment} ({s.build}): GPU on {s.gpu_on}; {s.agreement}")
        lines += [f"  no GPU: {_one_line(line)}" for line in s.no_gpu]
        lines += [f"  GPU, but the stack does not run: {_one_line(line)}" for line in s.stack_blocked]
        lines += [f"  not tested: {_one_line(line)}" for line in s.untested]
    return lines


def console_summary(doc: RunDocument, written: Mapping[str, Path] | None = None) -> str:
    """The plain-text summary: outcome and counts, the cells that did not pass, and the report paths."""
    lines = [f"refenv matrix {text(doc.run.id)}: {view.outcome(doc)} "
             f"in {fmt_seconds(doc.run.wall_s)}",
             view.counts_line(doc)]
    lines += ["", "upgrade readiness:"] + [f"  {line}" for line in readiness_lines(doc)]
    beside = stack.lines(doc)
    if beside:
        lines += ["", "the stack beside torch:"] + [f"  {_kept_indent(line)}" for line in beside]
    once = measures.lines(doc)
    if once:
        lines += ["", "measured once (probes, memory):"] + [f"  {_one_line(line)}" for line in once]
    bad = attention_lines(doc)
    if bad:
        lines += ["", "not passed:"] + [f"  {line}" for line in bad]
    if written:
        lines += ["", "reports:"] + [f"  {name:<8} {path}" for name, path in written.items()]
    return "\n".join(lines) + "\n"


def _counts(doc: RunDocument) -> Text:
    out = Text()
    for status, n in view.status_counts(doc).items():
        if n:
            out.append(f" {n} {status} ", style=look(status).style)
    return out


def _grid_table(grid: view.Grid) -> Table:
    title = f"scenario {grid.scenario}" + (f": {grid.description}" if grid.description else "")
    # Names and reasons come from the document: Text, never markup ("[[gpu]]" is not a style).
    table = Table(title=Text(title), title_justify="left", header_style="bold")
    table.add_column(Text("environment \\ host"), no_wrap=True)
    for host in grid.hosts:
        table.add_column(Text(host))
    for env, row in grid.rows:
        cells = []
        for cell in row:
            label = view.cell_label(cell)
            if cell is not None and cell.simulated:
                label += " (sim)"
            cells.append(Text(label, style=look(cell.status).style if cell else "bright_black"))
        table.add_row(Text(env), *cells)
    return table


def _readiness_table(doc: RunDocument) -> Table:
    table = Table(title=Text("upgrade readiness"), title_justify="left", header_style="bold")
    table.add_column("environment", no_wrap=True)
    table.add_column("torch gets a GPU on")
    table.add_column("no GPU: why, and the smallest fix")
    table.add_column("predictions")
    for s in ready.sections(doc):
        no_gpu = [*s.no_gpu, *(f"the stack does not run: {b}" for b in s.stack_blocked),
                  *(f"not tested: {u}" for u in s.untested)]
        table.add_row(Text(f"{s.environment}\n{s.build}"), Text(s.gpu_on, style="green" if s.ready else "bold red"),
                      Text("\n".join(_one_line(x) for x in no_gpu) or "—"),
                      Text(s.agreement, style="green" if s.agreed else "bold red"))
    return table


def console_table(doc: RunDocument) -> RenderableType:
    """Rich renderables: the outcome and counts, one coloured grid per scenario, the cells that did not pass."""
    outcome = view.outcome(doc)
    head = Text(f"refenv matrix {text(doc.run.id)}: ", style="bold")
    head.append(outcome, style="bold green" if outcome == "PASSED" else "bold red")
    head.append(f"  ({fmt_seconds(doc.run.wall_s)})")
    parts: list[RenderableType] = [head, _counts(doc)]
    parts.append(_readiness_table(doc))
    beside = stack.lines(doc)
    if beside:
        parts.append(Text("the stack beside torch", style="bold"))
        parts.append(Text("\n".join(_kept_indent(line) for line in beside)))
    parts += [_grid_table(g) for g in view.grids(doc)]
    groups = view.attention_groups(doc)
    if groups:
        table = Table(title=Text("not passed"), title_justify="left", header_style="bold")
        table.add_column("status", no_wrap=True)
        table.add_column("cells", no_wrap=True)
        table.add_column("reason")
        for g in groups:
            table.add_row(Text(g.status, style=look(g.status).style),
                          Text("\n".join(c.id for c in g.cells)), Text(_one_line(g.reason)))
        parts.append(table)
    return Group(*parts)
