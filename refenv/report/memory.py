"""A cell's memory verification document, as cases of ledgers a report can show.

The shape is `harness/memory/verify.py`'s: cases with a status, an error or details, and ledgers by name,
each with `predicted_bytes`, `measured_bytes`, a status and the tolerance it was judged by. Older or
hand-written documents with ledgers as a list are read too; anything missing reads "—".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.memory.probe_predict import LEDGERS
from refenv.report.formats import MISSING, as_list, error_text, fmt_bytes

# The ledgers in the harness's own order (the verification writes them), then the inference cache.
LEDGER_ORDER = (*LEDGERS, "kv_cache")


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
