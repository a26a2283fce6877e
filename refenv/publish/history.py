"""The matrix runs under a results folder, newest first: each a typed run document and where it lies.

Documents are read by `rundoc.load_run`; one this refenv does not read (another schema or version,
unreadable JSON) is skipped with a log line. Readiness reads cells through `report.ready.cell_facts`,
the one place the run document becomes readiness's records.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from refenv.model.records import CellResult
from refenv.model.rundoc import EnvironmentRecord, RunDocument, RunDocumentError, load_run
from refenv.readiness import CellFacts
from refenv.report.ready import cell_facts

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Run:
    path: Path                       # its cells.json
    doc: RunDocument

    @property
    def run_id(self) -> str:
        return str(self.doc.run.id)

    @property
    def started(self) -> str:
        return self.doc.run.started or ""

    @property
    def interrupted(self) -> bool:
        return self.doc.run.interrupted

    def environment(self, name: str) -> EnvironmentRecord | None:
        return self.doc.environment(name)

    def cells_of(self, environment: str) -> tuple[CellResult, ...]:
        return tuple(c for c in self.doc.cells if c.environment == environment)

    def facts(self) -> tuple[CellFacts, ...]:
        """Every cell of the run as readiness reads it."""
        return cell_facts(self.doc)


def load_runs(results_root: Path) -> list[Run]:
    """Every matrix run under `results_root`, newest first (a `latest` link is read once)."""
    found: dict[Path, Run] = {}
    for path in results_root.glob("*/cells.json"):
        real = path.resolve()
        if real in found:
            continue
        try:
            found[real] = Run(real, load_run(real))
        except RunDocumentError as exc:
            LOG.info("skipping %s: %s", path, exc)
    return sorted(found.values(), key=lambda r: (r.started, r.run_id), reverse=True)
