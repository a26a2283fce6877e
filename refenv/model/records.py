"""The records of a run: each cell (what the rules expected, what the harness observed, the status that
judges them) and each measurement made once per environment, on one core they share.

The status vocabulary and its presentation live in `refenv/model/status.py`; the run document that holds the
records is `refenv/model/rundoc.py`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

from harness.schema import Finding
from harness.schema.envelope import MemorySection, ProbesSection
from harness.schema.stack_document import Judgement
from refenv.model.cells import Expected, cell_id
from refenv.model.status import BAD, BUILD_FAILED, ERROR, FAIL, NOT_RUN, OOM_KILLED, PASS, STATUSES, TIMEOUT, is_bad

__all__ = [
    "BAD",
    "BUILD_FAILED",
    "CPU",
    "CUDA",
    "ERROR",
    "FAIL",
    "NOT_RUN",
    "OOM_KILLED",
    "PASS",
    "STATUSES",
    "TIMEOUT",
    "CellResult",
    "Expected",
    "JobRecord",
    "MeasurementRecord",
    "Observed",
    "StackCheck",
    "Summary",
    "cell_id",
    "summarize",
]

CPU = "cpu"
CUDA = "cuda"


@dataclass(frozen=True)
class Observed:
    """What the harness reported from inside the container."""

    verdict: str
    verdicts: tuple[str, ...] = ()
    simulated: bool = False
    is_available: bool | None = None
    device_count: int | None = None
    torch_message: str | None = None  # torch's warning or init error, verbatim
    findings: tuple[Finding, ...] = ()


# The cell's image's stack (every extension beside torch: harness/stack) judged against the cell's host: its
# GPUs' architectures, its driver's CUDA, and what holds on any host (imports, pins, CUDA majors). The record is
# the harness's own judgement (harness/schema/stack_document.py), so the run document keeps its keys.
StackCheck = Judgement


@dataclass(frozen=True)
class JobRecord:
    """What a cell and a measurement record alike: what it is, how it ended, and where its document is.

    `probes` and `memory` are the harness's own sections, as its schema types them
    (harness/schema/envelope.py): a document, or the error that took its place. Everything after `id` and
    `environment` is given by name.
    """

    id: str
    environment: str
    _: KW_ONLY
    status: str = NOT_RUN
    reason: str = ""
    probes: ProbesSection | None = None
    memory: MemorySection | None = None
    cached: bool = False
    cache_key: str | None = None
    wall_s: float | None = None
    log_tail: str | None = None
    result_path: str | None = None

    @property
    def bad(self) -> bool:
        return is_bad(self.status)


@dataclass(frozen=True)
class CellResult(JobRecord):
    """One environment × host × scenario cell. A matrix measures probes and memory once per environment
    instead, and the cell names those measurements."""

    host: str
    scenario: str
    expected: Expected | None = None
    observed: Observed | None = None
    measurements: tuple[str, ...] = ()  # ids of the run's measurements that stand for this cell
    stack: StackCheck | None = None     # None: the image's stack was not read

    @property
    def simulated(self) -> bool:
        """True when the observed verdict came from the simulated driver."""
        return self.observed is not None and self.observed.simulated


@dataclass(frozen=True)
class MeasurementRecord(JobRecord):
    """One measurement in the run document: what it stands for, its status, and the harness's sections."""

    host: str | None = None             # None: the CPU, on any host; the id is "ENV/cpu", else "ENV/HOST"
    device: str = CPU
    waived: str | None = None           # why the GPU work was not done (torch gets no GPU there)

    @property
    def label(self) -> str:
        """How a report names it: 'ENV (CPU)' or 'ENV on HOST (GPU)'."""
        return f"{self.environment} (CPU)" if self.host is None else f"{self.environment} on {self.host} (GPU)"


@dataclass(frozen=True)
class Summary:
    total: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    cached: int = 0
    ok: bool = True


def summarize(cells: tuple[CellResult, ...] | list[CellResult]) -> Summary:
    by_status = dict.fromkeys(STATUSES, 0)
    for c in cells:
        by_status[c.status] = by_status.get(c.status, 0) + 1
    return Summary(total=len(cells), by_status=by_status, cached=sum(1 for c in cells if c.cached),
                   ok=not any(c.bad for c in cells))
