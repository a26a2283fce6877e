"""One cell's record: what the rules expected, what the harness observed, and the status that judges them.

The status vocabulary and its presentation live in `refenv/model/status.py`; the run document that holds the
cells is `refenv/model/rundoc.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.schema import Finding
from refenv.model.status import BAD, BUILD_FAILED, ERROR, FAIL, NOT_RUN, OOM_KILLED, PASS, STATUSES, TIMEOUT, is_bad

__all__ = ["BAD", "BUILD_FAILED", "ERROR", "FAIL", "NOT_RUN", "OOM_KILLED", "PASS", "STATUSES", "TIMEOUT",
           "CellResult", "Expected", "Observed", "Summary", "cell_id", "summarize"]


@dataclass(frozen=True)
class Expected:
    """What the compatibility rules predict for a cell."""

    verdict: str
    verdicts: tuple[str, ...] = ()    # every failing verdict predicted, primary first
    torch_text: str | None = None     # a phrase torch's own message must contain, if any
    reason: str = ""                  # why, in a sentence


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


@dataclass(frozen=True)
class CellResult:
    """One environment × host × scenario cell. `probes` and `memory` are the harness's own sections
    (harness/probe, harness/memory), carried as it wrote them and read by report/probes.py and report/memory.py;
    a matrix measures them once per environment instead, and the cell names those measurements."""

    id: str
    environment: str
    host: str
    scenario: str
    status: str = NOT_RUN
    reason: str = ""
    expected: Expected | None = None
    observed: Observed | None = None
    probes: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None
    cached: bool = False
    cache_key: str | None = None
    wall_s: float | None = None
    log_tail: str | None = None
    result_path: str | None = None
    measurements: tuple[str, ...] = ()  # ids of the run's measurements that stand for this cell

    @property
    def bad(self) -> bool:
        return is_bad(self.status)

    @property
    def simulated(self) -> bool:
        """True when the observed verdict came from the simulated driver."""
        return self.observed is not None and self.observed.simulated


@dataclass(frozen=True)
class Summary:
    total: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    cached: int = 0
    ok: bool = True


def cell_id(environment: str, host: str, scenario: str) -> str:
    return f"{environment}/{host}/{scenario}"


def summarize(cells: tuple[CellResult, ...] | list[CellResult]) -> Summary:
    by_status = dict.fromkeys(STATUSES, 0)
    for c in cells:
        by_status[c.status] = by_status.get(c.status, 0) + 1
    return Summary(total=len(cells), by_status=by_status, cached=sum(1 for c in cells if c.cached),
                   ok=not any(c.bad for c in cells))
