"""A cell's or a measurement's memory verification, as cases of ledgers a report can show.

The document is the harness's record (harness/schema/memory_document.py): cases with a status, an error or
details, and ledgers by name, each predicted against measured with the tolerance it was judged by; or the
error that took its place (harness/schema/envelope.py). Anything it does not have reads "—".
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.picture import Bar, bars_svg
from harness.memory.probe_predict import LEDGERS
from harness.schema import PASS
from harness.schema.envelope import Failed, MemorySection
from harness.schema.memory_document import MemoryCase
from refenv.report.formats import MISSING, error_text, fmt_bytes

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
        return [led for led in self.ledgers if led.status not in (PASS, MISSING)]


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
        return sum(1 for c in self.cases if c.status == PASS)


def _case(raw: MemoryCase) -> Case:
    rank = {n: i for i, n in enumerate(LEDGER_ORDER)}
    ledgers = sorted((Ledger(name, e.predicted_bytes, e.measured_bytes, e.status or MISSING, e.tolerance)
                      for name, e in raw.ledgers.items()), key=lambda led: rank.get(led.name, len(rank)))
    return Case(name=raw.name or MISSING, status=raw.status or MISSING, ledgers=tuple(ledgers),
                error=error_text(raw.error), details=tuple(d for d in raw.detail or () if d))


def memory_summary(memory: MemorySection | None) -> MemorySummary | None:
    """The memory verification in brief, or None when there is none."""
    if memory is None:
        return None
    if isinstance(memory, Failed):
        return MemorySummary(MISSING, MISSING, (), (f"error: {error_text(memory.error)}",))
    notes = [f"error: {error_text(memory.error)}"] if memory.error else []
    name, kind = memory.device_name or "", memory.device
    device = kind if not name or name == kind else f"{name} ({kind})"
    return MemorySummary(status=memory.status or MISSING, device=device or MISSING,
                         cases=tuple(_case(c) for c in memory.cases), notes=tuple(notes))


def ledger_brief(ledger: Ledger) -> str:
    """'85.9 KiB' when prediction and measurement agree, else 'predicted → measured (off)'."""
    if ledger.predicted is not None and ledger.predicted == ledger.measured:
        return fmt_bytes(ledger.predicted)
    return f"{fmt_bytes(ledger.predicted)} → {fmt_bytes(ledger.measured)} ({ledger.off})".replace(f" ({MISSING})", "")


def memory_svg(summary: MemorySummary) -> str | None:
    """The cases drawn as `memory --format svg` draws a prediction: per case a stacked bar of the predicted
    ledgers and one of the measured ledgers, on one byte scale (None when no case has both)."""
    bars: list[Bar] = []
    for case in summary.cases:
        if case.total("predicted") is None or case.total("measured") is None or not case.ledgers:
            continue
        for which in ("predicted", "measured"):
            segments = tuple((led.name, int(getattr(led, which) or 0)) for led in case.ledgers)
            verdict = case.status if which == "measured" else ""
            bars.append(Bar(f"{case.name} {which}", segments, verdict))
    if not bars:
        return None
    return bars_svg(f"memory check on {summary.device}: predicted and measured ledgers", tuple(bars))
