"""The run document as it stands, written while the run goes on, so that a run killed without warning
(SIGKILL, a lost engine, a full disk) leaves a valid, readable record of what finished.

Each write is the whole document, written beside and renamed (`rundoc.write_run`): a reader sees the last
complete one, never half of one. It is marked interrupted, and every cell not finished yet is NOT_RUN
with that said, until the run's own end writes the final document over it. Writes are at most one per
`every` seconds (the first at once; more apart where writing takes long); one that fails (a full disk) is
logged and the run goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from refenv.model.records import NOT_RUN, CellResult, MeasurementRecord
from refenv.model.rundoc import RunDocument, write_run
from refenv.run.plan import Scope

LOG = logging.getLogger(__name__)
UNFINISHED = "not finished when this document was written: the run was still going, or was killed"
# A document of the default matrix (126 cells) takes a few tens of milliseconds to write.
EVERY_S = 2.0

# (the cells that finished, the measurements that finished) -> the document as it stands, interrupted
Assemble = Callable[[tuple[CellResult, ...], tuple[MeasurementRecord, ...]], RunDocument]


class Checkpoint:
    """Collects what finished and writes the run document as it stands."""

    def __init__(self, path: Path, scope: Scope, assemble: Assemble, every: float = EVERY_S) -> None:
        self.path = path
        self.scope = scope
        self.assemble = assemble
        self.every = every
        self.cells: dict[str, CellResult] = {}
        self.measurements: list[MeasurementRecord] = []
        self._written = float("-inf")
        self._failed = False

    def measurement(self, record: MeasurementRecord) -> None:
        self.measurements.append(record)
        self.write()

    def cell(self, record: CellResult) -> None:
        self.cells[record.id] = record
        self.write()

    def document(self) -> RunDocument:
        """What finished, and every other cell NOT_RUN because it had not finished."""
        cells = tuple(self.cells.get(c.id) or CellResult(c.id, c.environment.name, c.host.name, c.scenario.name,
                                                        status=NOT_RUN, reason=UNFINISHED)
                      for c in self.scope.cells())
        return self.assemble(cells, tuple(self.measurements))

    def write(self, force: bool = False) -> bool:
        """Write the document unless one was written less than `every` seconds ago; False when it could not be."""
        now = time.monotonic()
        if not force and now - self._written < self.every:
            return True
        try:
            write_run(self.document(), self.path)
        except OSError as exc:
            if not self._failed:
                LOG.warning("could not write %s as the run goes: %s; the last one written stands", self.path,
                            exc.strerror or exc)
            self._failed = True
            return False
        self._written = time.monotonic()
        # A large run's document takes longer to write: space the writes so they cost at most a tenth of the run.
        self.every = max(self.every, 10 * (self._written - now))
        return True


def interrupted(doc: RunDocument) -> RunDocument:
    """A document marked as not (yet) the run's whole record."""
    return replace(doc, run=replace(doc.run, interrupted=True))
