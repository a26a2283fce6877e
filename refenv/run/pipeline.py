"""`invoke matrix`: prepare (images, simulated driver, linker caches, the real host), plan, run the cells,
write the results folder — also after Ctrl-C, with what finished.

`run_matrix` sequences the three steps; `invoke reproduce` and `invoke publish` call `prepare`,
`plan_cells` and `cells.run_cells` themselves for their one cell.
"""

from __future__ import annotations

import datetime
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, TypeVar

from harness.schema import OK
from refenv.builder import wheelhouse
from refenv.engines.seam import CellEngine, ImageRequest, Inventory, ReleasesImages
from refenv.errors import RefenvError
from refenv.model.builds import BUILT, EnvBuild
from refenv.model.matrix import Matrix, RunSettings
from refenv.model.profiles import Profile
from refenv.model.records import NOT_RUN, CellResult, MeasurementRecord, StackCheck
from refenv.model.rundoc import RunDocument, write_run
from refenv.run import cells, imagefacts, measurements, owners, stackcheck
from refenv.run.assemble import document, run_info
from refenv.run.checkpoint import Checkpoint
from refenv.run.plan import Prepared, Scope, matrix_host_profile, plan_cells
from refenv.run.prepare import prepare

LOG = logging.getLogger(__name__)


class UI(Protocol):
    def stage(self, message: str) -> None: ...
    def build_line(self, environment: str, line: str) -> None: ...
    def build_done(self, build: EnvBuild) -> None: ...
    def measurements_start(self, total: int) -> None: ...
    def measurement_done(self, record: MeasurementRecord) -> None: ...
    def cells_start(self, total: int) -> None: ...
    def cell_done(self, result: CellResult) -> None: ...


class RunNotWritten(RefenvError):
    """The run's results could not be written (a full disk); the message says what of them stands, and the
    document carries what the run found."""

    def __init__(self, message: str, hint: str | None = None, document: RunDocument | None = None) -> None:
        super().__init__(message, hint)
        self.document = document


@dataclass(frozen=True)
class Options:
    results_root: Path
    parallel: int = 0
    use_cache: bool = True
    relock: bool = False
    probes: str | None = None        # overrides run.probes
    memory_check: str | None = None  # overrides run.memory_check
    selection: dict[str, list[str]] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)  # environment -> an image to run as it is, not built
    one_at_a_time: bool = False      # build, judge and remove one environment after another (little disk)


@dataclass(frozen=True)
class Outcome:
    folder: Path
    document: RunDocument
    ok: bool
    interrupted: bool
    written: dict[str, Path] = field(default_factory=dict)


def new_run_id() -> str:
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def settings_of(matrix: Matrix, options: Options) -> RunSettings:
    s = matrix.run
    return replace(s, probes=options.probes or s.probes, memory_check=options.memory_check or s.memory_check,
                   parallel=options.parallel or s.parallel)


def image_requests(matrix: Matrix, options: Options) -> list[ImageRequest]:
    """One image per environment; its lock lives in locks/ beside the matrix file."""
    return [ImageRequest(env, wheelhouse.lock_path(matrix.path, env.name), options.relock, options.images.get(env.name))
            for env in matrix.environments]


def connect() -> CellEngine:
    """The local Docker engine (imported here: planning and the unit tests need no docker SDK)."""
    from refenv.engines.docker.engine import DockerEngine

    return DockerEngine.connect()


@dataclass(frozen=True)
class Begun:
    """A run under way: its id, its results folder, and when it began."""

    run_id: str
    folder: Path
    started: datetime.datetime
    t0: float  # time.monotonic() at the start

    @classmethod
    def now(cls, results_root: Path) -> Begun:
        run_id = new_run_id()
        return cls(run_id, results_root / run_id, datetime.datetime.now(datetime.timezone.utc), time.monotonic())


def conclude(begun: Begun, scope: Scope, inventory: Inventory, builds: dict[str, EnvBuild],
             results: tuple[CellResult, ...], interrupted: bool, real: Profile | None, *, parallel: int = 1,
             use_cache: bool = True, selection: dict[str, list[str]] | None = None,
             measurements: tuple[MeasurementRecord, ...] = (),
             real_hosts: dict[str, Profile | None] | None = None,
             facts: dict[str, imagefacts.ImageFacts] | None = None) -> Outcome:
    """Write the run document and its reports into the run's folder."""
    info = run_info(begun.run_id, begun.started, time.monotonic() - begun.t0, scope, selection or {}, interrupted,
                    inventory, parallel, use_cache)
    doc = document(scope, info, builds, results, real, measurements, real_hosts, facts)
    written = write_results(begun.folder, doc)
    _link_latest(begun.folder.parent, begun.folder)
    return Outcome(begun.folder, doc, doc.summary.ok and not interrupted, interrupted, written)


def run_matrix(matrix: Matrix, options: Options, ui: UI, engine: CellEngine | None = None) -> Outcome:
    """The whole job; raises only for what stops everything (no engine, no room for the results).

    First, what runs whose runner died left on this engine is removed (refenv/run/owners.py); this run is
    recorded as theirs were, and at its end removes what is left of it."""
    begun = Begun.now(options.results_root)
    if engine is None:
        ui.stage("connecting to the Docker engine")
        engine = connect()
    begun.folder.mkdir(parents=True, exist_ok=True)  # only once an engine answers: no empty run folders
    key = owners.engine_key(engine)
    for dead, removed in owners.reap(engine, key).items():
        ui.stage(f"removed {removed} container(s) left by run {dead}, whose runner is gone")
    owner = owners.this_run(begun.run_id, key)
    owners.record(owner)
    try:
        return _run(matrix, options, ui, engine, begun)
    finally:
        owners.release(engine, owner)


def _run(matrix: Matrix, options: Options, ui: UI, engine: CellEngine, begun: Begun) -> Outcome:
    """Prepare, measure and run the cells of every environment at once; or, with `one_at_a_time`, of one
    environment after another, each image removed once its cells are judged (a runner with little disk)."""
    inventory = engine.inventory()
    settings = settings_of(matrix, options)
    parallel = settings.parallel or os.cpu_count() or 1
    scope = Scope(matrix.environments, matrix.hosts, matrix.scenarios, matrix.path)
    threads = max(1, (os.cpu_count() or 1) // parallel)
    requests = image_requests(matrix, options)
    batches = [[r] for r in requests] if options.one_at_a_time else [requests]
    state = _State(scope)

    def partial(cells_now: tuple[CellResult, ...], measured: tuple[MeasurementRecord, ...]) -> RunDocument:
        info = run_info(begun.run_id, begun.started, time.monotonic() - begun.t0, state.scope, options.selection,
                        True, inventory, parallel, options.use_cache)
        prepared = state.prepared or Prepared({})
        return document(state.scope, info, prepared.builds, _covered(state.scope, prepared, cells_now, measured),
                        prepared.real, measured, prepared.real_hosts, prepared.facts)

    progress = Checkpoint(begun.folder / "cells.json", scope, partial)
    done: list[CellResult] = []
    measured: list[MeasurementRecord] = []
    interrupted = False
    for batch in batches:
        try:
            prepared = prepare(engine, batch, matrix.hosts, begun.run_id, ui)
        except KeyboardInterrupt:
            interrupted = True
            break
        state.add(prepared)
        # A team image's torch, CUDA, Python and architectures are known now: predicted as a built environment's.
        names = {r.environment.name for r in batch}
        here = replace(state.scope, environments=tuple(e for e in state.scope.environments if e.name in names))
        progress.scope = state.scope
        # What does not depend on the cell is measured first, once per environment (and real GPU host);
        # the cells then only diagnose.
        plans_m = measurements.plan_measurements(here.environments, here.hosts, prepared.builds, prepared.real_error,
                                                 begun.run_id, begun.folder, settings, threads,
                                                 prepared.real_errors, prepared.engine)
        ui.measurements_start(len(plans_m))
        measures = measurements.run_measurements(engine, plans_m, begun.run_id, parallel, options.use_cache,
                                                 _both(progress.measurement, ui.measurement_done))
        measured += measures.records
        if measures.interrupted:
            interrupted = True
            break
        plans = plan_cells(here, prepared, begun.run_id, begun.folder, cell_settings(settings), threads)
        ui.cells_start(len(plans))
        finished = cells.run_cells(engine, plans, begun.run_id, parallel, options.use_cache,
                                   _both(progress.cell, ui.cell_done))
        done += finished.records
        if finished.interrupted:
            interrupted = True
            break
        if options.one_at_a_time:
            _release(engine, prepared, ui)
    prepared_all = state.prepared or Prepared({})
    ran = {c.id for c in done}
    left = tuple(c for c in not_started(state.scope) if c.id not in ran)
    results = _covered(state.scope, prepared_all, (*done, *left), tuple(measured))
    return conclude(begun, state.scope, inventory, prepared_all.builds, results, interrupted, prepared_all.real,
                    parallel=parallel, use_cache=options.use_cache, selection=options.selection,
                    measurements=tuple(measured), real_hosts=prepared_all.real_hosts, facts=prepared_all.facts)


class _State:
    """What the run's batches prepared so far, merged, and the scope with each team image's facts resolved."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.prepared: Prepared | None = None

    def add(self, p: Prepared) -> None:
        was = self.prepared
        self.prepared = p if was is None else replace(
            was, builds={**was.builds, **p.builds}, ldcaches={**was.ldcaches, **p.ldcaches},
            glibc={**was.glibc, **p.glibc}, facts={**was.facts, **p.facts})
        self.scope = replace(self.scope, environments=tuple(
            imagefacts.resolve(e, p.facts.get(e.name)) if e.name in p.builds else e for e in self.scope.environments))


def _release(engine: CellEngine, prepared: Prepared, ui: UI) -> None:
    """The images this batch built or pulled, removed now that their cells are judged (what was already in the
    engine stays)."""
    if not isinstance(engine, ReleasesImages):
        return
    for name, build in prepared.builds.items():
        if build.status == BUILT and build.tag:
            ui.stage(f"removing {build.tag}: {name} is judged (one environment at a time)")
            engine.release(build)


def stack_of(scope: Scope, prepared: Prepared, c: CellResult) -> StackCheck | None:
    """The cell's environment's stack, judged against the cell's host."""
    found = prepared.facts.get(c.environment)
    host = next((h for h in scope.hosts if h.name == c.host), None)
    scenario = next((s for s in scope.scenarios if s.name == c.scenario), None)
    if found is None or host is None or scenario is None:
        return None
    profile = prepared.real_hosts[host.name] if host.name in prepared.real_hosts \
        else matrix_host_profile(host, prepared.real)
    return stackcheck.check(found.stack, profile, scenario, c.observed is not None and c.observed.verdict == OK)


T = TypeVar("T")


def _both(first: Callable[[T], None], then: Callable[[T], None]) -> Callable[[T], None]:
    """One callback after another: the run document as it stands is written before the UI is told."""
    def call(record: T) -> None:
        first(record)
        then(record)
    return call


def _covered(scope: Scope, prepared: Prepared, results: tuple[CellResult, ...],
             measured: tuple[MeasurementRecord, ...]) -> tuple[CellResult, ...]:
    """Each cell with the ids of the measurements that stand for it, and its stack judged against its host."""
    return tuple(replace(c, measurements=measurements.covering(measured, c.environment, c.host, _kind(scope, c.host)),
                         stack=stack_of(scope, prepared, c))
                 for c in results)


def not_started(scope: Scope) -> tuple[CellResult, ...]:
    """Every cell as not run: Ctrl-C came before the cells began."""
    return tuple(CellResult(c.id, c.environment.name, c.host.name, c.scenario.name, status=NOT_RUN,
                            reason="interrupted (Ctrl-C) before it ran") for c in scope.cells())


def cell_settings(settings: RunSettings) -> RunSettings:
    """A matrix cell only diagnoses: its probes and memory check are the environment's measurements."""
    return replace(settings, probes="off", memory_check="off")


def _kind(scope: Scope, host: str) -> str:
    return next((h.kind for h in scope.hosts if h.name == host), "none")


def write_results(folder: Path, doc: RunDocument) -> dict[str, Path]:
    """cells.json and the reports; the JSON first, so a report failure cannot lose the results."""
    from refenv.report import write_reports

    try:
        written = {"cells.json": write_run(doc, folder / "cells.json")}
    except OSError as exc:  # a full disk: the run's words, and what stands of it
        stands = "the last document written as the run went stands" if (folder / "cells.json").is_file() \
            else "nothing of it was written"
        raise RunNotWritten(f"the run document {folder / 'cells.json'} could not be written: "
                            f"{exc.strerror or exc}; {stands}",
                            "make room (df -h) and run again: the cells that finished are cached", doc) from None
    try:
        written.update({k: Path(v) for k, v in write_reports(doc, folder).items()})
    except Exception:  # the results are safe in cells.json; say what broke and go on
        LOG.exception("writing the reports failed; cells.json is complete")
    return written


def _link_latest(root: Path, folder: Path) -> None:
    link = root / "latest"
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(folder.name)
    except OSError as exc:
        LOG.debug("no latest link: %s", exc)


__all__ = [
    "UI",
    "Begun",
    "Inventory",
    "Options",
    "Outcome",
    "cell_settings",
    "conclude",
    "connect",
    "image_requests",
    "new_run_id",
    "run_matrix",
    "settings_of",
    "stack_of",
    "write_results",
]
