"""report.html: one self-contained page (inline CSS, a little inline JS, inline SVG; nothing fetched).

This module turns the document into plain template data; `templates/report.html.j2` lays it out with
jinja2's autoescape on, so every string from a container is escaped. The only markup inserted as is is
the roofline SVG, which `roofline_svg` escapes as it draws.
"""

from __future__ import annotations

from typing import Any

import jinja2
from markupsafe import Markup

from refenv.report import roofline, roofline_svg, view
from refenv.report.formats import MISSING, as_dict, as_list, fmt_bytes, fmt_seconds, text
from refenv.report.memory import Ledger, MemorySummary, ledger_brief, memory_summary
from refenv.report.probes import probe_summary

TEMPLATE = "report.html.j2"
# Colour families of the grid (the brief's scheme): agreement green, disagreement red, no answer amber,
# no image purple, not run grey.
CSS_CLASS = {"PASS": "pass", "FAIL": "fail", "ERROR": "error", "TIMEOUT": "error", "OOM_KILLED": "error",
             "BUILD_FAILED": "build", "NOT_RUN": "notrun"}


def css_class(status: str | None) -> str:
    """The colour family of a status ('missing' for a crossing with no cell)."""
    return CSS_CLASS.get(status or "", "missing" if status is None else "error")


def _environment(doc: dict[str, Any], name: str) -> dict[str, str]:
    e = view.record(doc, "environments", name)
    bits = [f"torch {e['torch']}" if e.get("torch") else "", str(e.get("variant") or ""),
            f"CUDA {e['cuda']}" if e.get("cuda") else ""]
    return {"name": name, "sub": " · ".join(b for b in bits if b)}


def _host(doc: dict[str, Any], name: str) -> dict[str, str]:
    h = view.record(doc, "hosts", name)
    gpus = [str(as_dict(g).get("name") or "GPU") for g in as_list(h.get("gpus"))]
    gpu_text = f"{len(gpus)}× {gpus[0].removeprefix('NVIDIA ')}" if gpus and len(set(gpus)) == 1 else ", ".join(gpus)
    bits = [str(h.get("kind") or ""), str(h.get("driver") or ""), gpu_text]
    return {"name": name, "sub": " · ".join(b for b in bits if b), "kind": str(h.get("kind") or "")}


def _grid_cell(cell: dict[str, Any] | None, anchors: dict[int, str]) -> dict[str, Any]:
    if cell is None:
        return {"status": None, "css": "missing", "anchor": None}
    obs, exp = view.observed(cell), view.expected(cell)
    return {"status": view.status_of(cell), "css": css_class(view.status_of(cell)), "anchor": anchors[id(cell)],
            "expected": exp.get("verdict"), "observed": obs.get("verdict"), "simulated": view.simulated(cell),
            "cached": bool(cell.get("cached")), "label": view.cell_label(cell)}


def _finding(f: dict[str, Any]) -> dict[str, Any]:
    return {"severity": text(f.get("severity")), "verdict": str(f.get("verdict") or ""), "title": text(f.get("title")),
            "layer": str(f.get("layer") or ""), "evidence": [str(e) for e in as_list(f.get("evidence")) if e],
            "remediation": [str(r) for r in as_list(f.get("remediation")) if r]}


def _evidence(cell: dict[str, Any], anchor: str) -> dict[str, Any]:
    obs, exp = view.observed(cell), view.expected(cell)
    status = view.status_of(cell)
    return {
        "id": view.cell_id(cell), "anchor": anchor, "status": status, "css": css_class(status),
        "reason": text(cell.get("reason")), "simulated": view.simulated(cell), "cached": bool(cell.get("cached")),
        "expected": {"verdict": text(exp.get("verdict")), "verdicts": text(as_list(exp.get("verdicts"))),
                     "reason": text(exp.get("reason")), "torch_text": exp.get("torch_text")},
        "observed": None if not obs else {
            "verdict": text(obs.get("verdict")), "verdicts": text(as_list(obs.get("verdicts"))),
            "is_available": text(obs.get("is_available")), "device_count": text(obs.get("device_count")),
            "torch_message": obs.get("torch_message")},
        "findings": [_finding(f) for f in view.findings(cell)],
        "no_fix": view.NO_FIX if status == "FAIL" and not view.fixes(cell) else None,
        "probes": probe_summary(cell.get("probes")), "memory": _memory(memory_summary(cell.get("memory"))),
        "log_tail": cell.get("log_tail"), "wall": fmt_seconds(cell.get("wall_s")),
        "cache_key": text(cell.get("cache_key")), "result_path": text(cell.get("result_path")),
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


def _rooflines(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One picture per environment x host: the first of its cells, by scenario order, that has one."""
    seen: set[tuple[str, str]] = set()
    out = []
    order = {s: i for i, s in enumerate(view.scenario_names(doc))}
    for cell in sorted(view.cells(doc), key=lambda c: order.get(str(c.get("scenario")), len(order))):
        key = (str(cell.get("environment")), str(cell.get("host")))
        if key in seen:
            continue
        host = view.record(doc, "hosts", key[1])
        summary = probe_summary(cell.get("probes"))
        device = summary.device if summary else MISSING
        fig = roofline.figure(cell.get("probes"), f"{key[0]} on {key[1]}: {device}",
                              str(host.get("kind") or ""), key[1])
        if fig is None:
            continue
        seen.add(key)
        out.append({"title": fig.title, "caption": fig.caption, "cpu": fig.device == "cpu",
                    "cell": view.cell_id(cell), "svg": Markup(roofline_svg.render_svg(fig))})  # escaped as drawn
    return out


def _tables(doc: dict[str, Any]) -> dict[str, list[list[str]]]:
    envs = [[text(e.get("name")), text(e.get("torch")), text(e.get("variant")), text(e.get("cuda")),
             text(e.get("python")), text(e.get("image")), view.build_text(e)]
            for e in map(as_dict, as_list(doc.get("environments")))]
    hosts = [[text(h.get("name")), text(h.get("kind")), text(h.get("driver")), text(h.get("cuda_driver_version")),
              view.gpus_text(h), text(as_list(h.get("faults"))), text(h.get("description"))]
             for h in map(as_dict, as_list(doc.get("hosts")))]
    scenarios = [[text(as_dict(s).get("name")), text(as_dict(s).get("description")),
                  text(as_dict(s).get("gpus")),
                  ", ".join(f"{k}={v!r}" for k, v in as_dict(as_dict(s).get("env")).items()) or MISSING]
                 for s in as_list(doc.get("scenarios"))]
    return {"environments": envs, "hosts": hosts, "scenarios": scenarios}


def context(doc: dict[str, Any]) -> dict[str, Any]:
    """Everything the template shows, as plain data."""
    cells = view.cells(doc)
    anchors = {id(c): f"cell-{i}" for i, c in enumerate(cells)}
    grids = []
    for g in view.grids(doc):
        rows = [{"env": _environment(doc, env), "cells": [_grid_cell(c, anchors) for c in row]} for env, row in g.rows]
        grids.append({"scenario": g.scenario, "description": g.description,
                      "hosts": [_host(doc, h) for h in g.hosts], "rows": rows})
    counts = [{"status": s, "n": n, "css": css_class(s)} for s, n in view.status_counts(doc).items() if n]
    builds = [{"name": text(e.get("name")), "image": text(e.get("image")),
               "log": text(as_dict(e.get("build")).get("log")), "log_tail": as_dict(e.get("build")).get("log_tail"),
               "error": as_dict(e.get("build")).get("error")}
              for e in view.build_failures(doc)]
    return {
        "run_id": text(view.run(doc).get("id")), "outcome": view.outcome(doc), "counts": counts,
        "counts_line": view.counts_line(doc), "header": view.header_rows(doc)[1:],  # the bar shows the run id
        "attention": [{"status": g.status, "css": css_class(g.status), "reason": g.reason,
                       "cells": [{"id": view.cell_id(c), "anchor": anchors[id(c)]} for c in g.cells]}
                      for g in view.attention_groups(doc)],
        "attention_total": len(view.attention(doc)),
        "grids": grids, "cells": [_evidence(c, anchors[id(c)]) for c in cells], "builds": builds,
        "rooflines": _rooflines(doc), "tables": _tables(doc),
    }


def _environment_loader() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("refenv", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(doc: dict[str, Any]) -> str:
    """The whole report.html for one cells.json document."""
    return _environment_loader().get_template(TEMPLATE).render(**context(doc))
