"""report.md: the run header, one grid per scenario, every cell that did not pass, build logs, probes and memory.

Plain Markdown without emoji or HTML, so it reads the same in a terminal and on GitHub. Everything that
came out of a container is escaped or fenced (`mdtext`).
"""

from __future__ import annotations

from harness.schema import SEVERITY_ERROR, Finding
from refenv.model.records import CellResult
from refenv.model.rundoc import RunDocument
from refenv.report import mdtext as md
from refenv.report import measures, ready, stack, view
from refenv.report.formats import text
from refenv.report.memory import ledger_brief, memory_summary
from refenv.report.probes import brief, judged_rows, measurement_columns, probe_summary


def _header(doc: RunDocument) -> list[str]:
    outcome = view.outcome(doc)
    lines = [f"# refenv matrix report: run {md.inline(text(doc.run.id))}", "",
             f"**{outcome}**: {md.inline(view.counts_line(doc))}", ""]
    if outcome == "INTERRUPTED":
        lines += ["> This run was interrupted: cells it did not reach are NOT_RUN or missing (shown as —).", ""]
    lines += md.table(["", ""], [[md.cell(k), md.cell(v)] for k, v in view.header_rows(doc)])
    return [*lines, ""]


def _readiness(doc: RunDocument) -> list[str]:
    """First what the run answers: per environment, where torch gets a GPU, where not and the smallest fix."""
    parts = ready.sections(doc)
    if not parts:
        return []
    lines = ["## Upgrade readiness", ""]
    for s in parts:
        lines += [f"### {md.code(s.environment)}: {md.inline(s.build)}", "",
                  f"- torch gets a GPU on: {md.inline(s.gpu_on)}"]
        lines += [f"- no GPU: {md.inline(line)}" for line in s.no_gpu]
        lines += [f"- GPU, but the stack does not run: {md.inline(line)}" for line in s.stack_blocked]
        lines += [f"- not tested: {md.inline(line)}" for line in s.untested]
        lines.append(f"- {md.inline(s.agreement)}" + (
            f" ({', '.join(md.code(c) for c in s.disagreed)})" if s.disagreed else ""))
        lines.append("")
    return lines


def _stack(doc: RunDocument) -> list[str]:
    """Each environment's extensions beside torch, and what of them cannot run where."""
    parts = stack.sections(doc)
    if not parts:
        return []
    lines = ["## The stack beside torch", ""]
    for s in parts:
        lines += [f"### {md.code(s.environment)}: {md.inline(s.origin)}", ""]
        if s.error:
            lines += [f"- the image could not be read: {md.inline(s.error)}"]
        lines += [f"- {md.inline(line)}" for line in s.lines]
        lines += [f"- {md.inline(s.libraries)}", *([f"- {md.inline(s.read)}"] if s.read else []), ""]
        for p in s.problems:
            lines.append(f"- **{'ERROR' if p.severity == SEVERITY_ERROR else 'warning'}** {md.inline(p.title)} "
                         f"(on {md.inline(p.hosts)})")
            lines += [f"    - {md.inline(e)}" for e in p.evidence[:6]]
            lines += [f"    - fix: {md.code(fix)}" for fix in p.fixes]
        lines.append("")
    return lines


def _matrix(doc: RunDocument) -> list[str]:
    lines = ["## Environments", ""]
    rows = []
    for e in doc.environments:
        rows.append([md.cell(text(e.name)), md.cell(text(e.torch)), md.cell(text(e.variant)),
                     md.cell(text(e.cuda)), md.cell(text(e.python)), md.cell(text(e.image)),
                     md.cell(view.build_text(e))])
    lines += md.table(["environment", "torch", "variant", "CUDA runtime", "python", "image", "build"], rows)
    lines += ["", "## Hosts", ""]
    rows = []
    for h in doc.hosts:
        rows.append([md.cell(text(h.name)), md.cell(text(h.kind)), md.cell(text(h.driver)),
                     md.cell(text(h.cuda_driver_version)), md.cell(view.gpus_text(h)),
                     md.cell(text(h.faults))])
    lines += md.table(["host", "kind", "driver", "CUDA (driver)", "GPUs", "faults"], rows)
    return [*lines, ""]


def _grids(doc: RunDocument) -> list[str]:
    lines: list[str] = []
    for grid in view.grids(doc):
        title = f"## Scenario {md.code(grid.scenario)}"
        lines += [title + (f": {md.inline(grid.description)}" if grid.description else ""), ""]
        rows = []
        for env, row in grid.rows:
            labels = []
            for c in row:
                label = view.cell_label(c)
                if c is not None and c.simulated:
                    label += " (simulated)"
                labels.append(md.cell(label))
            rows.append([md.cell(env), *labels])
        lines += md.table(["environment \\ host", *(md.cell(h) for h in grid.hosts)], rows)
        lines.append("")
    return lines


def _finding_lines(finding: Finding) -> list[str]:
    head = f"  - [{md.inline(text(finding.severity))}] "
    head += (f"{md.inline(finding.verdict)}: " if finding.verdict else "") + md.inline(text(finding.title))
    lines = [head]
    lines += [f"    - {md.code(e)}" for e in finding.evidence if e]
    return lines


def _cell_detail(cell: CellResult) -> list[str]:
    exp, obs = cell.expected, cell.observed
    lines = [f"### {cell.status} {md.code(cell.id)}", "",
             f"- reason: {md.inline(text(cell.reason))}",
             f"- expected: {md.inline(text(exp.verdict if exp else None))}"
             + (f", because {md.inline(exp.reason)}" if exp and exp.reason else "")
             + (f"; torch must say {md.code(exp.torch_text)}" if exp and exp.torch_text else "")]
    if obs:
        lines.append(f"- observed: {md.inline(text(obs.verdict))}"
                     + (" (simulated driver)" if obs.simulated else "")
                     + f", is_available {md.inline(text(obs.is_available))}"
                     + f", devices {md.inline(text(obs.device_count))}")
        if obs.torch_message:
            lines.append(f"- torch says: {md.code(obs.torch_message)}")
        found = obs.findings
        if found:
            lines.append("- findings:")
            for f in found:
                lines += _finding_lines(f)
    else:
        lines.append("- observed: nothing (no result was written)")
    if cell.stack is not None and cell.stack.findings:
        lines.append("- the stack beside torch, on this host:")
        for f in cell.stack.findings:
            lines += _finding_lines(f)
    steps = view.fixes(cell)
    if steps:
        lines.append("- fix:")
        lines += [f"  - {md.code(s)}" for s in steps]
    elif cell.status == "FAIL":
        lines.append(f"- fix: {md.inline(view.NO_FIX)}")
    if cell.log_tail:
        lines += ["", "Log tail:", "", md.fence(cell.log_tail)]
    return [*lines, ""]


def _attention(doc: RunDocument) -> list[str]:
    bad = view.attention(doc)
    if not bad:
        return ["## Cells that did not pass", "", "None: every cell passed." if doc.cells else "No cells.", ""]
    lines = ["## Cells that did not pass", ""]
    rows = []
    for group in view.attention_groups(doc):
        ids = ", ".join(md.code(c.id).replace("|", "\\|") for c in group.cells)
        count = f"{len(group.cells)} cells: " if len(group.cells) > 1 else ""
        rows.append([md.cell(group.status), count + ids, md.cell(group.reason)])
    lines += [*md.table(["status", "cells", "reason"], rows), ""]
    # Build failures are told once, under their environment; a NOT_RUN cell has only its reason, unless
    # it got as far as writing something.
    for cell in bad:
        status = cell.status
        if status == "BUILD_FAILED" or (status == "NOT_RUN" and not (cell.observed or cell.log_tail)):
            continue
        lines += _cell_detail(cell)
    return lines


def _builds(doc: RunDocument) -> list[str]:
    failed = view.build_failures(doc)
    if not failed:
        return []
    lines = ["## Build failures", ""]
    for env in failed:
        build = env.build
        lines += [f"### {md.code(text(env.name))}", "",
                  f"- image: {md.code(text(env.image))}", f"- log: {md.code(text(build.log))}"]
        if build.error:
            lines.append(f"- error: {md.inline(build.error)}")
        lines.append("")
        if build.log_tail:
            lines += [md.fence(build.log_tail), ""]
    return lines


def _measured(doc: RunDocument) -> list[str]:
    found = measures.lines(doc)
    if not found:
        return []
    return ["## Measured once", "",
            "Probes and the memory verification depend on the environment (and, on a real GPU, the device), "
            "not on the host profile or the scenario: each ran once and stands for the cells named.", "",
            *(f"- {md.inline(line)}" for line in found), ""]


def _probes(doc: RunDocument) -> list[str]:
    summaries = [(m, s) for m in measures.measured(doc) if (s := probe_summary(m.probes)) is not None]
    if not summaries:
        return []
    # One row per measurement, one column per probe that ran anywhere: compact, and comparable down a column.
    columns = measurement_columns([s for _, s in summaries])
    rows, waivers = [], []
    for cell, summary in summaries:
        found = {r.id: r for r in judged_rows(summary)}
        rows.append([md.code(cell.label).replace("|", "\\|"), md.cell(summary.device),
                     md.cell(summary.status), *(md.cell(brief(found.get(m))) for m in columns),
                     md.cell(f"{summary.ridge_measured} / {summary.ridge_spec}".replace(" FLOP/B", ""))])
        if summary.waived and f"GPU probes waived: {summary.waived}" not in waivers:
            waivers.append(f"GPU probes waived: {summary.waived}")
        if summary.error:
            waivers.append(f"{cell.label}: the probes failed: {summary.error}")
    lines = ["## Probes", "",
             "Medians, with the percentage of the spec (or estimated) peak each was judged by; "
             "the ridge point is measured / spec.", ""]
    lines += md.table(["measured for", "device", "status", *(md.code(m) for m in columns), "ridge FLOP/B"], rows)
    lines += [""] + [f"- {md.inline(w)}" for w in waivers]
    return [*lines, ""]


def _memory(doc: RunDocument) -> list[str]:
    rows = []
    for cell in measures.measured(doc):
        summary = memory_summary(cell.memory)
        if summary is None:
            continue
        off = [f"{case.name} {led.name} {ledger_brief(led)}" for case in summary.cases for led in case.failing()]
        off += [f"{case.name}: {case.error}" for case in summary.cases if case.error]
        off += list(summary.notes if summary.status != "PASS" else ())
        n_ledgers = sum(len(case.ledgers) for case in summary.cases)
        rows.append([md.code(cell.label).replace("|", "\\|"), md.cell(summary.device),
                     md.cell(summary.status), md.cell(f"{summary.passed}/{len(summary.cases)}"),
                     md.cell("; ".join(off) if off else
                             f"none: all {n_ledgers} ledgers as predicted" if n_ledgers else "nothing measured")])
    if not rows:
        return []
    return ["## Memory", "", "Each case's ledgers, predicted against measured (exact for state, "
            "within the stated tolerance for activations); only those that differ are listed.", "",
            *md.table(["measured for", "device", "status", "cases passed", "ledgers off (predicted → measured)"],
                      rows), ""]


def render_markdown(doc: RunDocument) -> str:
    """The whole report.md for one cells.json document."""
    lines = _header(doc) + _readiness(doc) + _stack(doc) + _grids(doc) + _attention(doc) + _builds(doc) + _measured(doc)
    lines += _probes(doc) + _memory(doc)
    lines += _matrix(doc)
    return "\n".join(lines).rstrip() + "\n"


def summary_sections(doc: RunDocument) -> str:
    """The report's opening for a CI job's summary: the outcome, upgrade readiness, the stack beside torch and
    the builds that failed (the grids and the cells' evidence stay in report.html)."""
    lines = _header(doc) + _readiness(doc) + _stack(doc) + _builds(doc)
    return "\n".join(lines).rstrip() + "\n"
