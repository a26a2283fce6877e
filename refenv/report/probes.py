"""A cell's or a measurement's probe documents, flattened into rows a report can show.

The documents are the harness's records (harness/schema/probe_document.py), held in the pair a cell or a
measurement writes (its GPU's document or waiver, and its CPU's) or the error that took its place
(harness/schema/envelope.py). A figure the document does not have reads "—".
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.schema import PASS, SKIP
from harness.schema.envelope import Failed, ProbesSection
from harness.schema.probe_document import Measurement, ProbeDocument
from refenv.report.formats import MISSING, error_text, fmt_number, text


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


def _percent(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else MISSING


def documents(probes: ProbesSection | None) -> tuple[ProbeDocument, ...]:
    """The probe documents of a cell or a measurement: its GPU's (or the waiver) and its CPU's."""
    return () if probes is None or isinstance(probes, Failed) else probes.documents


def _row(m: Measurement) -> ProbeRow:
    f = m.figures
    unit = f.unit_label if f else ""
    return ProbeRow(id=m.id or MISSING, title=m.title or m.id or MISSING, status=m.status or MISSING,
                    measured=fmt_number(f.median if f else None, unit),
                    reference=fmt_number(f.reference if f else None, unit),
                    percent=_percent(f.percent_of_peak if f else None), reason=text(m.reason))


def probe_summary(probes: ProbesSection | None) -> ProbeSummary | None:
    """The probes in brief (the document that measured something leads), or None when there are none."""
    if isinstance(probes, Failed):
        return ProbeSummary("FAIL", MISSING, MISSING, None, (), MISSING, MISSING, (), error_text(probes.error))
    docs = documents(probes)
    if not docs:
        return None
    ran = [d for d in docs if any(m.status != SKIP for m in d.measurements)]
    main = (ran or docs)[0]
    roof = main.roofline
    name, kind = main.device_info.get("name") or main.device_info.get("model") or "", main.device
    waived = next((d.waived for d in docs if d.waived), None)
    notes = [n for d in docs for n in d.notes if n]
    return ProbeSummary(
        status=main.status or MISSING, device=(f"{name} (CPU)" if name and kind == "cpu" else name or kind)
        or MISSING, mode=text(main.mode), waived=waived,
        rows=tuple(_row(m) for d in docs for m in d.measurements),
        ridge_measured=fmt_number(roof.measured.ridge_flop_per_byte if roof else None, "FLOP/B"),
        ridge_spec=fmt_number(roof.spec.ridge_flop_per_byte if roof else None, "FLOP/B"),
        notes=tuple(dict.fromkeys(notes)),
    )


def judged_rows(summary: ProbeSummary) -> list[ProbeRow]:
    """The rows that ran (not SKIP): what a compact table shows."""
    return [r for r in summary.rows if r.status != SKIP]


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
    return " ".join(parts + ([row.status] if row.status != PASS else []))
