"""A cell's probe documents, flattened into rows a report can show.

Shapes follow `harness/probe/results.py` (measurements with `gbps_median` / `tflops_median`,
`reference_*`, `percent_of_peak`, a status and reason each) and `harness/cell.py`, which stores the pair
`{"gpu": ..., "cpu": ...}` or `{"error": ...}`. Anything missing reads "—"; a document that is not a dict
reads as no document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refenv.report.formats import MISSING, as_dict, as_list, error_text, fmt_number, text


@dataclass(frozen=True)
class ProbeRow:
    """One measurement: what, the median measured, the reference it was judged by, and the verdict."""

    id: str
    title: str
    status: str
    measured: str
    reference: str
    percent: str
    reason: str


@dataclass(frozen=True)
class ProbeSummary:
    """A probe document in brief: overall status, device, waiver, rows, and the two ridge points."""

    status: str
    device: str
    mode: str
    waived: str | None
    rows: tuple[ProbeRow, ...]
    ridge_measured: str
    ridge_spec: str
    notes: tuple[str, ...]
    error: str | None = None  # the probes raised: what the harness recorded


def _figure(m: dict[str, Any]) -> tuple[Any, Any, str]:
    for unit, label in (("gbps", "GB/s"), ("tflops", "TFLOP/s")):
        if f"{unit}_median" in m or f"reference_{unit}" in m:
            return m.get(f"{unit}_median"), m.get(f"reference_{unit}"), str(m.get("unit") or label)
    return None, None, str(m.get("unit") or "")


def _percent(value: Any) -> str:
    return f"{value:.0f}%" if isinstance(value, (int, float)) and not isinstance(value, bool) else MISSING


def documents(probes: Any) -> list[dict[str, Any]]:
    """The probe documents of a cell: one bare document, or the harness cell's pair {"gpu": ..., "cpu": ...}."""
    if not isinstance(probes, dict):
        return []
    if "measurements" in probes or "schema" in probes:
        return [probes]
    return [d for d in (probes.get("gpu"), probes.get("cpu")) if isinstance(d, dict)]


def _rows(doc: dict[str, Any]) -> list[ProbeRow]:
    rows = []
    for m in as_list(doc.get("measurements")):
        if not isinstance(m, dict):
            continue
        value, reference, unit = _figure(m)
        rows.append(ProbeRow(
            id=str(m.get("id") or MISSING), title=str(m.get("title") or m.get("id") or MISSING),
            status=str(m.get("status") or MISSING), measured=fmt_number(value, unit),
            reference=fmt_number(reference, unit), percent=_percent(m.get("percent_of_peak")),
            reason=text(m.get("reason")),
        ))
    return rows


def probe_summary(probes: Any) -> ProbeSummary | None:
    """The cell's probes in brief (the document that measured something leads), or None when it has none."""
    docs = documents(probes)
    failure = error_text(probes.get("error")) if isinstance(probes, dict) else None
    if not docs:
        if failure is None:
            return None
        return ProbeSummary("FAIL", MISSING, MISSING, None, (), MISSING, MISSING, (), failure)
    ran = [d for d in docs if any(r.status != "SKIP" for r in _rows(d))]
    main = (ran or docs)[0]
    roof = as_dict(main.get("roofline"))
    info = as_dict(main.get("device_info"))
    name, kind = str(info.get("name") or info.get("model") or ""), str(main.get("device") or "")
    waived = next((str(d["waived"]) for d in docs if d.get("waived")), None)
    notes = [str(n) for d in docs for n in as_list(d.get("notes")) if n]
    return ProbeSummary(
        status=str(main.get("status") or MISSING), device=(f"{name} (CPU)" if name and kind == "cpu" else name or kind)
        or MISSING, mode=text(main.get("mode")), waived=waived, rows=tuple(r for d in docs for r in _rows(d)),
        ridge_measured=fmt_number(as_dict(roof.get("measured")).get("ridge_flop_per_byte"), "FLOP/B"),
        ridge_spec=fmt_number(as_dict(roof.get("spec")).get("ridge_flop_per_byte"), "FLOP/B"),
        notes=tuple(dict.fromkeys(notes)), error=failure,
    )


def judged_rows(summary: ProbeSummary) -> list[ProbeRow]:
    """The rows that ran (not SKIP): what a compact table shows."""
    return [r for r in summary.rows if r.status != "SKIP"]


# Report order: memory first, then host links, then compute (the order of harness/probe/results.py).
_FAMILY_ORDER = ("memory.", "transfer.", "gemm.")


def measurement_columns(summaries: list[ProbeSummary]) -> list[str]:
    """Ids of every measurement that ran in any summary, memory then transfers then GEMMs."""
    seen: list[str] = []
    for summary in summaries:
        seen += [r.id for r in judged_rows(summary) if r.id not in seen]

    def rank(mid: str) -> tuple[int, int]:
        family = next((i for i, f in enumerate(_FAMILY_ORDER) if mid.startswith(f)), len(_FAMILY_ORDER))
        return family, seen.index(mid)

    return sorted(seen, key=rank)


def brief(row: ProbeRow | None) -> str:
    """'4271 GB/s 89%', with the status only when it is not PASS; '—' for no row."""
    if row is None:
        return MISSING
    parts = [row.measured] + ([row.percent] if row.percent != MISSING else [])
    return " ".join(parts + ([row.status] if row.status != "PASS" else []))
