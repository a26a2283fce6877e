"""report.html: one self-contained page (inline CSS, a little inline JS, inline SVG; nothing fetched).

This module turns the document into plain template data; `templates/report.html.j2` lays it out with
jinja2's autoescape on, so every string from a container is escaped. The only markup inserted as is is
the roofline SVG, which `roofline_svg` escapes as it draws.
"""

from __future__ import annotations

from typing import Any

import jinja2
from markupsafe import Markup

from harness.schema import Finding
from refenv.model.records import CellResult
from refenv.model.rundoc import EnvironmentRecord, HostRecord, RunDocument
from refenv.model.status import FAIL, look
from refenv.report import measures, ready, roofline_data, roofline_svg, stack, view
from refenv.report.formats import MISSING, fmt_bytes, fmt_seconds, text
from refenv.report.memory import Ledger, MemorySummary, ledger_brief, memory_summary
from refenv.report.probes import ProbeSummary, judged_rows, probe_summary

TEMPLATE = "report.html.j2"


def css_class(status: str | None) -> str:
    """The colour family of a status ('missing' for a crossing with no cell)."""
    return "missing" if status is None else look(status).css


def _environment(doc: RunDocument, name: str) -> dict[str, str]:
    e = doc.environment(name) or EnvironmentRecord(name)
    bits = [f"torch {e.torch}" if e.torch else "", e.variant or "", f"CUDA {e.cuda}" if e.cuda else ""]
    return {"name": name, "sub": " · ".join(b for b in bits if b)}


def _host(doc: RunDocument, name: str) -> dict[str, str]:
    h = doc.host(name) or HostRecord(name, kind="")
    gpus = [g.name or "GPU" for g in h.gpus]
    gpu_text = f"{len(gpus)}× {gpus[0].removeprefix('NVIDIA ')}" if gpus and len(set(gpus)) == 1 else ", ".join(gpus)
    bits = [h.kind, h.driver or "", gpu_text]
    return {"name": name, "sub": " · ".join(b for b in bits if b), "kind": h.kind}


def _grid_cell(cell: CellResult | None, anchors: dict[str, str]) -> dict[str, Any]:
    if cell is None:
        return {"status": None, "css": "missing", "anchor": None}
    return {"status": cell.status, "css": css_class(cell.status), "anchor": anchors[cell.id],
            "expected": cell.expected.verdict if cell.expected else None,
            "observed": cell.observed.verdict if cell.observed else None, "simulated": cell.simulated,
            "cached": cell.cached, "label": view.cell_label(cell)}


def _finding(f: Finding) -> dict[str, Any]:
    return {"severity": text(f.severity), "verdict": f.verdict, "title": text(f.title), "layer": f.layer,
            "evidence": [e for e in f.evidence if e], "remediation": [r for r in f.remediation if r]}


def _evidence(cell: CellResult, anchor: str) -> dict[str, Any]:
    obs, exp = cell.observed, cell.expected
    return {
        "id": cell.id, "anchor": anchor, "status": cell.status, "css": css_class(cell.status),
        "reason": text(cell.reason), "simulated": cell.simulated, "cached": cell.cached,
        "expected": {"verdict": text(exp.verdict if exp else None), "verdicts": text(exp.verdicts if exp else None),
                     "reason": text(exp.reason if exp else None), "torch_text": exp.torch_text if exp else None},
        "observed": None if not obs else {
            "verdict": text(obs.verdict), "verdicts": text(obs.verdicts),
            "is_available": text(obs.is_available), "device_count": text(obs.device_count),
            "torch_message": obs.torch_message},
        "findings": [_finding(f) for f in view.findings(cell)],
        "stack": [_finding(f) for f in (cell.stack.findings if cell.stack else ())],
        "no_fix": view.NO_FIX if cell.status == FAIL and not view.fixes(cell) else None,
        "probes": probe_summary(cell.probes), "memory": _memory(memory_summary(cell.memory)),
        "log_tail": cell.log_tail, "wall": fmt_seconds(cell.wall_s),
        "cache_key": text(cell.cache_key), "result_path": text(cell.result_path),
    }


def _ledger_cell(led: Ledger) -> dict[str, str]:
    """A passing ledger shows what was measured (and how far from the prediction); a failing one shows both."""
    ok = led.status == "PASS"
    return {"text": fmt_bytes(led.measured) if ok else ledger_brief(led), "delta": led.off if ok else "",
            "status": led.status,
            "title": f"{led.status}: predicted {fmt_bytes(led.predicted)}, measured {fmt_bytes(led.measured)}"
                     + (f" ({led.note})" if led.note else "")}


def _memory(summary: MemorySummary | None) -> dict[str, Any] | None:
    """Cases down, ledgers across, each ledger judged against its prediction."""
    if summary is None:
        return None
    names = summary.ledger_names
    rows = []
    for case in summary.cases:
        by_name = {led.name: led for led in case.ledgers}
        rows.append({"name": case.name, "status": case.status, "error": case.error, "details": list(case.details),
                     "ledgers": [_ledger_cell(by_name[n]) if n in by_name else None for n in names]})
    return {"status": summary.status, "device": summary.device, "ledgers": names, "rows": rows,
            "notes": list(summary.notes), "passed": summary.passed, "total": len(summary.cases)}


def _rooflines(doc: RunDocument) -> list[dict[str, Any]]:
    """One picture per measurement: per environment on the CPU, per environment and real GPU host.

    A run without measurements (an older document, a single reproduced cell) draws one per environment x
    host: the first of its cells, by scenario order, that has one."""
    out = []
    for m in doc.measurements:
        summary = probe_summary(m.probes)
        host = doc.host(m.host) if m.host else None
        fig = roofline_data.figure(m.probes, f"{m.label}: {summary.device if summary else MISSING}",
                              host.kind if host else "", m.host or "")
        if fig is not None:
            out.append({"title": fig.title, "caption": fig.caption, "cpu": fig.device == "cpu",
                        "cell": m.id, "svg": Markup(roofline_svg.render_svg(fig))})  # escaped as drawn
    seen: set[tuple[str, str]] = set()
    order = {s: i for i, s in enumerate(view.scenario_names(doc))}
    for cell in sorted(doc.cells, key=lambda c: order.get(c.scenario, len(order))):
        key = (cell.environment, cell.host)
        if key in seen or not cell.probes:
            continue
        host = doc.host(cell.host)
        summary = probe_summary(cell.probes)
        device = summary.device if summary else MISSING
        fig = roofline_data.figure(cell.probes, f"{key[0]} on {key[1]}: {device}", host.kind if host else "", key[1])
        if fig is None:
            continue
        seen.add(key)
        out.append({"title": fig.title, "caption": fig.caption, "cpu": fig.device == "cpu",
                    "cell": cell.id, "svg": Markup(roofline_svg.render_svg(fig))})  # escaped as drawn
    return out


def _measured(doc: RunDocument) -> list[dict[str, Any]]:
    """The run's measurements, each once, with what it stands for."""
    return [{"label": m.label, "status": m.status, "css": css_class(m.status), "cells": m.cells,
             "how": "cached" if m.cached else fmt_seconds(m.wall_s), "reason": text(m.reason),
             "probes": _probe_brief(probe_summary(m.probes)), "memory": _memory(memory_summary(m.memory))}
            for m in measures.measured(doc)[:len(doc.measurements)]]


def _probe_brief(summary: ProbeSummary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {"status": summary.status if not summary.error else f"{summary.status} ({summary.error})",
            "device": summary.device, "rows": judged_rows(summary)}


def _tables(doc: RunDocument) -> dict[str, list[list[str]]]:
    envs = [[text(e.name), text(e.torch), text(e.variant), text(e.cuda), text(e.python), text(e.image),
             view.build_text(e)] for e in doc.environments]
    hosts = [[text(h.name), text(h.kind), text(h.driver), text(h.cuda_driver_version), view.gpus_text(h),
              text(h.faults), text(h.description)] for h in doc.hosts]
    scenarios = [[text(s.name), text(s.description), text(s.gpus),
                  ", ".join(f"{k}={v!r}" for k, v in s.env.items()) or MISSING] for s in doc.scenarios]
    return {"environments": envs, "hosts": hosts, "scenarios": scenarios}


def context(doc: RunDocument) -> dict[str, Any]:
    """Everything the template shows, as plain data."""
    cells = doc.cells
    anchors = {c.id: f"cell-{i}" for i, c in enumerate(cells)}
    grids = []
    for g in view.grids(doc):
        rows = [{"env": _environment(doc, env), "cells": [_grid_cell(c, anchors) for c in row]} for env, row in g.rows]
        grids.append({"scenario": g.scenario, "description": g.description,
                      "hosts": [_host(doc, h) for h in g.hosts], "rows": rows})
    counts = [{"status": s, "n": n, "css": css_class(s)} for s, n in view.status_counts(doc).items() if n]
    builds = [{"name": text(e.name), "image": text(e.image), "log": text(e.build.log), "log_tail": e.build.log_tail,
               "error": e.build.error} for e in view.build_failures(doc)]
    return {
        "run_id": text(doc.run.id), "outcome": view.outcome(doc), "counts": counts,
        "counts_line": view.counts_line(doc), "header": view.header_rows(doc)[1:],  # the bar shows the run id
        "attention": [{"status": g.status, "css": css_class(g.status), "reason": g.reason,
                       "cells": [{"id": c.id, "anchor": anchors[c.id]} for c in g.cells]}
                      for g in view.attention_groups(doc)],
        "attention_total": len(view.attention(doc)),
        "grids": grids, "cells": [_evidence(c, anchors[c.id]) for c in cells], "builds": builds,
        "rooflines": _rooflines(doc), "measured": _measured(doc), "tables": _tables(doc),
        "readiness": ready.sections(doc), "stacks": stack.sections(doc),
    }


def _environment_loader() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("refenv", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(doc: RunDocument) -> str:
    """The whole report.html for one cells.json document."""
    return _environment_loader().get_template(TEMPLATE).render(**context(doc))
