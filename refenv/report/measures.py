"""What a run measured once per environment (and per real GPU host), in brief, for every renderer.

A matrix run keeps its probes and memory verification in the run document's `measurements`
(refenv/run/measurements.py), one per environment and one per environment on each real GPU host; a single cell
run by reproduce or by an older refenv may still carry its own. Reports show each once, under the
environment (and host) it stands for, never repeated per cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.schema.envelope import MemorySection, ProbesSection
from refenv.model.rundoc import RunDocument
from refenv.model.status import PASS
from refenv.report.formats import MISSING, fmt_seconds
from refenv.report.memory import memory_summary
from refenv.report.probes import probe_summary


@dataclass(frozen=True)
class Measured:
    """One set of probes and memory checks, and what it stands for."""

    label: str                  # "ENV (CPU)", "ENV on HOST (GPU)", or a cell id
    status: str
    reason: str
    cached: bool
    wall_s: float | None
    probes: ProbesSection | None
    memory: MemorySection | None
    cells: int                  # how many cells it stands for

    @property
    def line(self) -> str:
        """'PASS torch-x (CPU), cached, for 42 cells: probes PASS on Xeon (CPU); memory PASS, 5/5 cases'."""
        parts = []
        p = probe_summary(self.probes)
        if p is not None:
            parts.append(f"probes {p.status} on {p.device}" + (f" (failed: {p.error})" if p.error else ""))
        m = memory_summary(self.memory)
        if m is not None:
            parts.append(f"memory {m.status}, {m.passed}/{len(m.cases)} cases as predicted")
        how = "cached" if self.cached else fmt_seconds(self.wall_s) if self.wall_s is not None else MISSING
        what = "; ".join(parts) or self.reason
        if parts and (self.status != PASS or self.reason.startswith("waived")):
            what = f"{what} ({self.reason})"
        return f"{self.status} {self.label}, {how}, for {self.cells} cell{'' if self.cells == 1 else 's'}: {what}"


def measured(doc: RunDocument) -> list[Measured]:
    """The run's measurements in document order, then any cell that carries its own probes or memory."""
    uses = {m.id: sum(1 for c in doc.cells if m.id in c.measurements) for m in doc.measurements}
    out = [Measured(m.label, m.status, m.reason, m.cached, m.wall_s, m.probes, m.memory, uses[m.id])
           for m in doc.measurements]
    out += [Measured(c.id, c.status, c.reason, c.cached, c.wall_s, c.probes, c.memory, 1)
            for c in doc.cells if c.probes or c.memory]
    return out


def lines(doc: RunDocument) -> list[str]:
    """One line per measurement of the run (none for a run that measured nothing)."""
    return [m.line for m in measured(doc)[:len(doc.measurements)]]
