"""The probe and memory documents of a cell, flattened into rows a report can show.

Shapes follow `harness/probe/document.py` (measurements with `gbps_median` / `tflops_median`,
`reference_*`, `percent_of_peak`, a status and reason each) and the memory verification document
(cases of ledgers, each predicted / measured / status). Anything missing reads "—"; a document that
is not a dict reads as no document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refenv.report.formats import MISSING, as_dict, as_list, fmt_bytes, fmt_number, text


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


def error_text(value: Any) -> str | None:
    """A harness error as one line: `{"type", "message", ...}` (harness/document.py error_of) or a string."""
    if not value:
        return None
    if isinstance(value, dict):
        kind, message = value.get("type"), value.get("message")
        return f"{kind}: {message}" if kind and message else str(message or kind or value)
    return str(value)


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


# Report order: memory first, then host links, then compute (the order of harness/probe/document.py).
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


# The ledgers in the order a training step fills memory (harness/memory/probe_predict.py LEDGERS).
LEDGER_ORDER = ("weights", "gradients", "optimizer_state", "master_weights", "activations", "kv_cache")


@dataclass(frozen=True)
class Ledger:
    """One ledger of one case: predicted and measured bytes, the verdict, and the tolerance it was judged by."""

    name: str
    predicted: int | None
    measured: int | None
    status: str
    note: str

    @property
    def off(self) -> str:
        """'+31.0%', '+12 B' or '' when the two agree; '—' when either is unknown."""
        if self.predicted is None or self.measured is None:
            return MISSING
        if self.predicted == self.measured:
            return ""
        if self.predicted:
            return f"{100.0 * (self.measured - self.predicted) / self.predicted:+.1f}%"
        return f"{self.measured - self.predicted:+d} B"


@dataclass(frozen=True)
class Case:
    """One verification case: its ledgers, their totals, and what went wrong if it did."""

    name: str
    status: str
    ledgers: tuple[Ledger, ...]
    error: str | None
    details: tuple[str, ...]

    def total(self, which: str) -> int | None:
        """Sum of the ledgers' `which` ('predicted' or 'measured') bytes, None when one is unknown."""
        values = [getattr(led, which) for led in self.ledgers]
        return None if not values or None in values else sum(values)

    def failing(self) -> list[Ledger]:
        return [led for led in self.ledgers if led.status not in ("PASS", MISSING)]


@dataclass(frozen=True)
class MemorySummary:
    """A memory verification document in brief."""

    status: str
    device: str
    cases: tuple[Case, ...]
    notes: tuple[str, ...]

    @property
    def ledger_names(self) -> list[str]:
        """Every ledger any case has, in LEDGER_ORDER, then any others."""
        seen = {led.name for case in self.cases for led in case.ledgers}
        return [n for n in LEDGER_ORDER if n in seen] + sorted(seen - set(LEDGER_ORDER))

    @property
    def passed(self) -> int:
        return sum(1 for c in self.cases if c.status == "PASS")


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ledger(name: str, entry: dict[str, Any]) -> Ledger:
    predicted = _int_or_none(entry.get("predicted_bytes", entry.get("predicted")))
    measured = _int_or_none(entry.get("measured_bytes", entry.get("measured")))
    note = str(entry.get("reason") or entry.get("tolerance") or "")
    return Ledger(name, predicted, measured, str(entry.get("status") or MISSING), note)


def _case(raw: dict[str, Any]) -> Case:
    ledgers_raw = raw.get("ledgers")
    pairs: list[tuple[str, Any]] = (list(ledgers_raw.items()) if isinstance(ledgers_raw, dict) else
                                    [(str(e.get("name") or MISSING), e) for e in as_list(ledgers_raw)
                                     if isinstance(e, dict)])
    ledgers = [_ledger(str(n), e) for n, e in pairs if isinstance(e, dict)]
    rank = {n: i for i, n in enumerate(LEDGER_ORDER)}
    ledgers.sort(key=lambda led: rank.get(led.name, len(rank)))
    return Case(name=str(raw.get("name") or raw.get("id") or MISSING), status=str(raw.get("status") or MISSING),
                ledgers=tuple(ledgers), error=error_text(raw.get("error")),
                details=tuple(str(d) for d in as_list(raw.get("detail")) if d))


def memory_summary(memory: Any) -> MemorySummary | None:
    """The memory verification document in brief, or None when the cell has none."""
    if not isinstance(memory, dict):
        return None
    cases = tuple(_case(c) for c in as_list(memory.get("cases")) if isinstance(c, dict))
    notes = [f"error: {error_text(memory['error'])}"] if memory.get("error") else []
    notes += [str(n) for n in as_list(memory.get("notes")) if n]
    name, kind = str(memory.get("device_name") or ""), str(memory.get("device") or "")
    device = kind if not name or name == kind else f"{name} ({kind})"
    return MemorySummary(status=str(memory.get("status") or MISSING), device=device or MISSING, cases=cases,
                         notes=tuple(notes))


def ledger_brief(ledger: Ledger) -> str:
    """'85.9 KiB' when prediction and measurement agree, else 'predicted → measured (off)'."""
    if ledger.predicted is not None and ledger.predicted == ledger.measured:
        return fmt_bytes(ledger.predicted)
    return f"{fmt_bytes(ledger.predicted)} → {fmt_bytes(ledger.measured)} ({ledger.off})".replace(f" ({MISSING})", "")
