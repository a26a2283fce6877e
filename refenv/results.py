"""The result of a matrix run: one record per cell, and the versioned `cells.json` that holds them.

Statuses follow DCGM's and nvbandwidth's habit of a fixed vocabulary: a cell PASSes when the observed
verdict is the expected one, FAILs when it is not, and says why it could not tell otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "refenv.cells"
SCHEMA_VERSION = 1

PASS = "PASS"
FAIL = "FAIL"
ERROR = "ERROR"                # the harness ran but wrote no usable result
BUILD_FAILED = "BUILD_FAILED"  # the environment's image could not be built
TIMEOUT = "TIMEOUT"            # the container outlived its time limit and was killed
OOM_KILLED = "OOM_KILLED"      # the kernel killed the container for memory
NOT_RUN = "NOT_RUN"            # not runnable here (no NVIDIA runtime for `real`), or interrupted
STATUSES = (PASS, FAIL, ERROR, BUILD_FAILED, TIMEOUT, OOM_KILLED, NOT_RUN)
BAD = (FAIL, ERROR, BUILD_FAILED, TIMEOUT, OOM_KILLED)


@dataclass(frozen=True)
class Expected:
    """What the compatibility rules predict for a cell."""

    verdict: str
    verdicts: tuple[str, ...]      # every failing verdict predicted, primary first
    torch_text: str | None         # a phrase torch's own message must contain, if any
    reason: str                    # why, in a sentence


@dataclass(frozen=True)
class Observed:
    """What the harness reported from inside the container."""

    verdict: str
    verdicts: tuple[str, ...]
    simulated: bool
    is_available: bool | None
    device_count: int | None
    torch_message: str | None      # torch's warning or init error, verbatim
    findings: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class CellResult:
    id: str
    environment: str
    host: str
    scenario: str
    status: str
    reason: str
    expected: Expected | None
    observed: Observed | None = None
    probes: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None
    cached: bool = False
    cache_key: str | None = None
    wall_s: float | None = None
    log_tail: str | None = None
    result_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def bad(self) -> bool:
        return self.status in BAD


def cell_id(environment: str, host: str, scenario: str) -> str:
    return f"{environment}/{host}/{scenario}"


def summarize(cells: list[CellResult]) -> dict[str, Any]:
    by_status = {s: sum(1 for c in cells if c.status == s) for s in STATUSES}
    return {
        "total": len(cells),
        "by_status": by_status,
        "cached": sum(1 for c in cells if c.cached),
        "ok": not any(c.bad for c in cells),
    }


def expected_from_dict(d: dict[str, Any] | None) -> Expected | None:
    if d is None:
        return None
    return Expected(d["verdict"], tuple(d.get("verdicts", ())), d.get("torch_text"), d.get("reason", ""))


def observed_from_dict(d: dict[str, Any] | None) -> Observed | None:
    if d is None:
        return None
    return Observed(d["verdict"], tuple(d.get("verdicts", ())), bool(d.get("simulated")), d.get("is_available"),
                    d.get("device_count"), d.get("torch_message"), tuple(d.get("findings", ())))


def cell_from_dict(d: dict[str, Any]) -> CellResult:
    return CellResult(
        id=d["id"], environment=d["environment"], host=d["host"], scenario=d["scenario"], status=d["status"],
        reason=d.get("reason", ""), expected=expected_from_dict(d.get("expected")),
        observed=observed_from_dict(d.get("observed")), probes=d.get("probes"), memory=d.get("memory"),
        cached=bool(d.get("cached")), cache_key=d.get("cache_key"), wall_s=d.get("wall_s"),
        log_tail=d.get("log_tail"), result_path=d.get("result_path"), extra=dict(d.get("extra") or {}),
    )
