"""The matrix runs under a results folder, as the typed records publishing judges.

This is the one place publish reads a run document (cells.json); everything after it works on
`RunRecord`. A document that is not a run (another schema, unreadable JSON) is skipped with a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refenv import readiness
from refenv.rundoc import RunDocument, RunDocumentError, from_data, load_run

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


def from_run(path: Path, doc: RunDocument) -> RunRecord:
    """A run document as publishing's record of it."""
    envs = tuple(RunEnvironment(e.name, e.torch or "", e.cuda, e.content_hash) for e in doc.environments)
    hosts = tuple(RunHost(h.name, h.kind, h.driver, h.cuda_driver_version,
                          next((g.compute_capability for g in h.gpus), None)) for h in doc.hosts)
    scenarios = tuple(RunScenario(s.name, readiness.plain_gpu_access(s.gpus, s.env)) for s in doc.scenarios)
    cells = tuple(RunCell(c.id, c.environment, c.host, c.scenario, c.status, c.reason,
                          c.expected.verdict if c.expected else None, c.observed.verdict if c.observed else None,
                          c.simulated) for c in doc.cells)
    return RunRecord(path, str(doc.run.id), doc.run.started or "", doc.run.interrupted, envs, hosts, scenarios, cells)


def from_document(path: Path, doc: Mapping[str, Any]) -> RunRecord | None:
    """Parsed cells.json as a record; None when it is not a run document this refenv reads."""
    try:
        return from_run(path, from_data(doc, str(path)))
    except RunDocumentError as exc:
        LOG.info("skipping %s: %s", path, exc)
        return None


def load_runs(results_root: Path) -> list[RunRecord]:
    """Every matrix run's record under `results_root`, newest first (a `latest` link is read once)."""
    found: dict[Path, RunRecord] = {}
    for path in results_root.glob("*/cells.json"):
        real = path.resolve()
        if real in found:
            continue
        try:
            found[real] = from_run(real, load_run(real))
        except RunDocumentError as exc:
            LOG.info("skipping %s: %s", path, exc)
    return sorted(found.values(), key=lambda r: (r.started, r.run_id), reverse=True)
