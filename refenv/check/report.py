"""`refenv check`'s answer: the text a person reads, and the JSON document an editor or a CI step reads (pure).

The JSON (`schema: refenv.check`, version 1) carries, per environment, the torch read and where, the predicted
verdict of every host x scenario cell (the keys cells.json uses: environment, host, scenario), readiness and the
findings with their lines; `refenv check --json` next to a matrix run's cells.json is the comparison the CI gate
makes (benchmarks/check_vs_matrix.py, matrix/action.yml).
"""

from __future__ import annotations

from typing import Any

from refenv.check import predict
from refenv.check.checker import Checked

SCHEMA = "refenv.check"
VERSION = 1


def _where(w: Any) -> dict[str, Any]:
    return {"file": w.file, "line": w.line or None}


def environment_doc(c: Checked) -> dict[str, Any]:
    env, r = c.resolved.environment, c.readiness
    base = c.facts.base if c.facts else None
    return {
        "name": c.name, "source": c.source, "path": c.path, "stage": c.facts.stage if c.facts else None,
        "base": None if base is None else {"image": base.image, "kind": base.kind, "cuda": base.cuda,
                                            "torch": base.torch, "source": base.source or None},
        "torch": None if c.resolved.torch is None else {"version": c.resolved.torch.value,
                                                        "where": _where(c.resolved.torch.where)},
        "predicted_as": None if env is None else {"torch": env.torch, "variant": env.variant, "cuda": env.cuda},
        "variant_from": c.resolved.variant_from or None,
        "assumptions": list(c.resolved.assumptions),
        "env": {k: {"value": f.value, "where": _where(f.where)} for k, f in (c.facts.env if c.facts else {}).items()},
        "files_read": list(c.facts.files_read) if c.facts else [],
        "cells": [{"environment": x.environment, "host": x.host, "scenario": x.scenario, "verdict": x.verdict,
                   "verdicts": list(x.verdicts), "reason": x.reason} for x in c.cells],
        "readiness": None if r is None else {
            "ready": [h.host for h in r.ready],
            "refused": [{"host": h.host, "verdict": h.verdict, "fix": h.fix.text} for h in r.refused],
            "untested": [{"host": h, "why": why} for h, why in r.untested],
            "lines": predict.lines(r)},
        "findings": [{"code": f.code, "severity": f.severity, "where": _where(f.where), "message": f.message,
                      "fix": f.fix} for f in c.findings],
        "good": c.good,
    }


def document(checked: list[Checked]) -> dict[str, Any]:
    return {"schema": SCHEMA, "version": VERSION, "status": "good" if all(c.good for c in checked) else "not good",
            "environments": [environment_doc(c) for c in checked]}


def _grid(c: Checked) -> list[str]:
    """Host rows x scenario columns, each cell its predicted verdict ('-' where none is predicted)."""
    scenarios = list(dict.fromkeys(x.scenario for x in c.cells))
    hosts = list(dict.fromkeys(x.host for x in c.cells))
    by = {(x.host, x.scenario): x.verdict or "-" for x in c.cells}
    width = max([len(h) for h in hosts] + [4])
    cols = [max(len(s), *(len(by[(h, s)]) for h in hosts)) for s in scenarios]
    out = ["    " + " " * width + "  " + "  ".join(s.ljust(w) for s, w in zip(scenarios, cols, strict=True))]
    for h in hosts:
        out.append("    " + h.ljust(width) + "  " + "  ".join(by[(h, s)].ljust(w)
                                                              for s, w in zip(scenarios, cols, strict=True)))
    return [line.rstrip() for line in out]


def text(checked: list[Checked]) -> str:
    lines: list[str] = []
    for c in checked:
        env = c.resolved.environment
        torch = c.resolved.torch
        head = f"{c.name} ({c.path})"
        if env is None:
            lines.append(f"{head}: no torch to predict")
        else:
            cuda = f"CUDA {env.cuda}" if env.cuda else "CPU build"
            read = f" (read at {torch.where})" if torch is not None else ""
            lines.append(f"{head}: torch {env.torch} ({cuda}){read}; build from {c.resolved.variant_from}")
        lines += [f"  assumed: {a}" for a in c.resolved.assumptions]
        if c.readiness is not None:
            lines += ["", "  upgrade readiness (predicted):", *(f"    {line}" for line in predict.lines(c.readiness))]
            lines += ["", "  predicted verdicts:", *_grid(c)]
        if c.findings:
            lines += ["", "  findings:"]
            for f in c.findings:
                lines.append(f"    {f.where}: {f.severity}: {f.message}")
                lines.append(f"      fix: {f.fix}")
        lines.append("")
    good = all(c.good for c in checked)
    lines.append("refenv check: " + ("no finding stops a GPU" if good else "NOT GOOD: an error above, or no host "
                                     "where torch would get a GPU") + f" ({len(checked)} environment(s))")
    return "\n".join(lines)

