"""The run document, `cells.json`: typed records, one reader (`load_run`) and one writer (`write_run`).

A run writes it; the reports, publish, reproduce and tasks read it back as these objects. The reader
checks the schema and version first and names the place of anything that does not fit; within a
version, a missing key takes its default (an interrupted run writes a partial document) and an unknown
key is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.schema.stack_document import Inventory
from refenv.errors import RefenvError
from refenv.model import codec
from refenv.model.records import CellResult, MeasurementRecord, Summary, summarize
from refenv.model.status import NOT_RUN

SCHEMA = "refenv.cells"
SCHEMA_VERSION = 1


class RunDocumentError(RefenvError):
    """A cells.json that is not one this version reads."""


@dataclass(frozen=True)
class BuildRecord:
    status: str = NOT_RUN             # BUILT, CACHED, FAILED, or NOT_RUN (interrupted before it)
    wall_s: float | None = None
    log: str | None = None
    log_tail: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class EnvironmentRecord:
    """An environment as the run saw it. A team image's torch, CUDA, Python and architectures were read from the
    image (`source` image or dockerfile); `stack` is the inventory of every distribution beside torch."""

    name: str
    torch: str | None = None
    variant: str | None = None
    cuda: str | None = None
    python: str | None = None
    image: str | None = None
    content_hash: str | None = None
    build: BuildRecord = field(default_factory=BuildRecord)
    source: str = "recipe"                 # recipe, image or dockerfile (refenv/model/matrix.py)
    dockerfile: str | None = None          # the Dockerfile a dockerfile: environment was built from
    interpreter: str | None = None         # the image's Python the harness ran with
    arch: tuple[str, ...] | None = None    # read from the image's torch
    require_cuda: str | None = None        # the image's NVIDIA_REQUIRE_CUDA
    labels: dict[str, str] = field(default_factory=dict)
    stack: Inventory | None = None         # harness/stack/inventory.py's record
    image_error: str | None = None         # why the image could not be read (no Python 3.8+, no torch)


@dataclass(frozen=True)
class GpuRecord:
    name: str | None = None
    compute_capability: str | None = None
    memory_bytes: int | None = None
    uuid: str | None = None


@dataclass(frozen=True)
class HostRecord:
    name: str
    kind: str = "none"                # none, simulated or real
    profile: str | None = None
    description: str = ""
    driver: str | None = None
    cuda_driver_version: int | None = None
    gpus: tuple[GpuRecord, ...] = ()
    faults: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScenarioRecord:
    name: str
    description: str = ""
    gpus: str = "all"
    env: dict[str, str] = field(default_factory=dict)
    devices: tuple[str, ...] = ()     # CDI names the engine resolved (podman --device nvidia.com/gpu=all)


@dataclass(frozen=True)
class DockerInfo:
    server_version: str | None = None
    nvidia_runtime: bool | None = None


@dataclass(frozen=True)
class MachineInfo:
    cores: int | None = None
    hostname: str | None = None
    parallel: int | None = None


@dataclass(frozen=True)
class RunInfo:
    id: str | None = None
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None
    matrix_file: str | None = None
    selection: dict[str, tuple[str, ...]] = field(default_factory=dict)
    interrupted: bool = False
    refenv_version: str | None = None
    harness_version: str | None = None
    docker: DockerInfo = field(default_factory=DockerInfo)
    machine: MachineInfo = field(default_factory=MachineInfo)
    use_cache: bool = True


@dataclass(frozen=True)
class RunDocument:
    """One matrix run: where and when, what was built, the hosts and scenarios, what was measured once per
    environment (and real GPU host), and every cell (which names its measurements)."""

    run: RunInfo = field(default_factory=RunInfo)
    environments: tuple[EnvironmentRecord, ...] = ()
    hosts: tuple[HostRecord, ...] = ()
    scenarios: tuple[ScenarioRecord, ...] = ()
    measurements: tuple[MeasurementRecord, ...] = ()
    cells: tuple[CellResult, ...] = ()

    @property
    def summary(self) -> Summary:
        """The cells' counts; the run is not ok when a measurement went wrong either."""
        s = summarize(self.cells)
        return replace(s, ok=s.ok and not any(m.bad for m in self.measurements))

    def measurement(self, measurement_id: str) -> MeasurementRecord | None:
        return next((m for m in self.measurements if m.id == measurement_id), None)

    def environment(self, name: str) -> EnvironmentRecord | None:
        return next((e for e in self.environments if e.name == name), None)

    def host(self, name: str) -> HostRecord | None:
        return next((h for h in self.hosts if h.name == name), None)

    def scenario(self, name: str) -> ScenarioRecord | None:
        return next((s for s in self.scenarios if s.name == name), None)

    def cell(self, cell_id: str) -> CellResult | None:
        return next((c for c in self.cells if c.id == cell_id), None)


def to_json(doc: RunDocument) -> str:
    """The document as cells.json text; the summary is written for readers without refenv."""
    data = {"schema": SCHEMA, "version": SCHEMA_VERSION, **codec.encode(doc),
            "summary": codec.encode(doc.summary)}
    return json.dumps(data, indent=2) + "\n"


def from_data(data: object, source: str = "the run document") -> RunDocument:
    """Parsed cells.json as a RunDocument; RunDocumentError when its schema, version or a value is wrong."""
    if not isinstance(data, dict):
        raise RunDocumentError(f"{source} is not a JSON object")
    if data.get("schema") != SCHEMA:
        raise RunDocumentError(f"{source} is not a matrix run document (schema {data.get('schema')!r}, "
                               f"expected {SCHEMA!r})")
    if data.get("version") != SCHEMA_VERSION:
        raise RunDocumentError(f"{source} has version {data.get('version')!r}; this refenv reads version "
                               f"{SCHEMA_VERSION}", hint="use the refenv that wrote it, or run the matrix again")
    try:
        return codec.decode(RunDocument, data)
    except codec.DecodeError as exc:
        raise RunDocumentError(f"{source}: {exc.message}") from exc


def load_run(path: Path | str) -> RunDocument:
    """Read a cells.json (or the run folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "cells.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunDocumentError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise RunDocumentError(f"{path} is not JSON: {exc}") from exc
    return from_data(data, str(path))


def write_run(doc: RunDocument, path: Path) -> Path:
    """Write cells.json beside, then rename: a reader never sees half a document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(to_json(doc), encoding="utf-8")
        tmp.replace(path)
    except OSError:  # a full disk: no half-written file beside the last whole one
        tmp.unlink(missing_ok=True)
        raise
    return path
