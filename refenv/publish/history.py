"""The matrix runs under a results folder, as the typed records publishing judges.

This is the one place publish reads a run document (cells.json); everything after it works on
`RunRecord`. A document that is not a run (another schema, unreadable JSON) is skipped with a log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refenv import readiness
from refenv.results import SCHEMA

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunCell:
    id: str
    environment: str
    host: str
    scenario: str
    status: str
    reason: str
    expected: str | None
    observed: str | None
    simulated: bool


@dataclass(frozen=True)
class RunHost:
    name: str
    kind: str                        # none / simulated / real
    driver: str | None
    driver_cuda: int | None
    capability: str | None           # the first GPU's compute capability


@dataclass(frozen=True)
class RunScenario:
    name: str
    gpu_access: bool                 # readiness.plain_gpu_access of its --gpus and variables


@dataclass(frozen=True)
class RunEnvironment:
    name: str
    torch: str
    cuda: str | None
    content_hash: str | None


@dataclass(frozen=True)
class RunRecord:
    path: Path                       # its cells.json
    run_id: str
    started: str                     # ISO 8601; run ids begin with it too
    interrupted: bool
    environments: tuple[RunEnvironment, ...]
    hosts: tuple[RunHost, ...]
    scenarios: tuple[RunScenario, ...]
    cells: tuple[RunCell, ...]

    def environment(self, name: str) -> RunEnvironment | None:
        return next((e for e in self.environments if e.name == name), None)

    def cells_of(self, environment: str) -> tuple[RunCell, ...]:
        return tuple(c for c in self.cells if c.environment == environment)

    def host(self, name: str) -> RunHost:
        return next((h for h in self.hosts if h.name == name), RunHost(name, "none", None, None, None))

    def facts(self, environment: str) -> tuple[readiness.CellFacts, ...]:
        """The environment's cells as readiness reads them."""
        env = self.environment(environment)
        access = {s.name: s.gpu_access for s in self.scenarios}
        out = []
        for c in self.cells_of(environment):
            h = self.host(c.host)
            out.append(readiness.CellFacts(
                c.environment, c.host, c.scenario, c.status, c.expected, c.observed, c.simulated,
                access.get(c.scenario, False), h.driver, env.torch if env else "", env.cuda if env else None,
                h.driver_cuda, h.capability, c.reason))
        return tuple(out)


def from_document(path: Path, doc: Mapping[str, Any]) -> RunRecord | None:
    """A run document as a record; None when it is not one (another schema)."""
    if doc.get("schema") != SCHEMA:
        return None
    run = doc.get("run") or {}

    def verdict(part: Any) -> str | None:
        return str(part["verdict"]) if isinstance(part, dict) and part.get("verdict") else None

    envs = tuple(RunEnvironment(str(e.get("name")), str(e.get("torch") or ""), e.get("cuda"), e.get("content_hash"))
                 for e in doc.get("environments") or [])
    hosts = tuple(RunHost(str(h.get("name")), str(h.get("kind") or "none"), h.get("driver"),
                          h.get("cuda_driver_version"),
                          next((g.get("compute_capability") for g in h.get("gpus") or []), None))
                  for h in doc.get("hosts") or [])
    scenarios = tuple(RunScenario(str(s.get("name")),
                                  readiness.plain_gpu_access(str(s.get("gpus") or "all"), s.get("env") or {}))
                      for s in doc.get("scenarios") or [])
    cells = tuple(RunCell(str(c.get("id")), str(c.get("environment")), str(c.get("host")), str(c.get("scenario")),
                          str(c.get("status")), str(c.get("reason") or ""), verdict(c.get("expected")),
                          verdict(c.get("observed")), bool((c.get("observed") or {}).get("simulated")))
                  for c in doc.get("cells") or [])
    return RunRecord(path, str(run.get("id")), str(run.get("started") or ""), bool(run.get("interrupted")),
                     envs, hosts, scenarios, cells)


def load_runs(results_root: Path) -> list[RunRecord]:
    """Every matrix run's record under `results_root`, newest first (a `latest` link is read once)."""
    found: dict[Path, RunRecord] = {}
    for path in results_root.glob("*/cells.json"):
        real = path.resolve()
        if real in found:
            continue
        try:
            doc = json.loads(real.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            LOG.info("skipping %s: %s", path, exc)
            continue
        record = from_document(real, doc) if isinstance(doc, dict) else None
        if record is None:
            LOG.info("skipping %s: not a matrix run document", path)
            continue
        found[real] = record
    return sorted(found.values(), key=lambda r: (r.started, r.run_id), reverse=True)
