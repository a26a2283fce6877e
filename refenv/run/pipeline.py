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
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from harness.schema import OK
from refenv import paths
from refenv.builder import simdriver, wheelhouse
from refenv.builder.images import tree_digest
from refenv.engines import realhost
from refenv.engines.seam import CellEngine, ImageRequest, Inventory, ProbesRealHosts
from refenv.errors import NoGpuRuntime
from refenv.model import profiles
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Bootstrap, CellSpec, Host, Matrix, RunSettings
from refenv.model.profiles import Profile
from refenv.model.records import NOT_RUN, CellResult, Expected, MeasurementRecord, StackCheck
from refenv.model.rundoc import RunDocument, write_run
from refenv.run import cells, devnodes, glibc, imagefacts, measurements, stackcheck, toolkit
from refenv.run.assemble import document, run_info
from refenv.run.containers import ldcache_spec
from refenv.run.plan import Prepared, Scope, matrix_host_profile, plan_cells, plan_only

LOG = logging.getLogger(__name__)


class UI(Protocol):
    def stage(self, message: str) -> None: ...
    def build_line(self, environment: str, line: str) -> None: ...
    def build_done(self, build: EnvBuild) -> None: ...
    def measurements_start(self, total: int) -> None: ...
    def measurement_done(self, record: MeasurementRecord) -> None: ...
    def cells_start(self, total: int) -> None: ...
    def cell_done(self, result: CellResult) -> None: ...


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


def prepare(engine: CellEngine, requests: list[ImageRequest], hosts: tuple[Host, ...], run_id: str,
            ui: UI) -> Prepared:
    """Every image, and what the hosts need: the simulated driver and its linker caches, the real GPUs.

    Ctrl-C here cancels what the engine started and raises KeyboardInterrupt again for the caller.
    """
    driver = None
    if any(h.kind == "simulated" for h in hosts):
        ui.stage("building the simulated driver")
        mirror = next((r.environment.base.bootstrap.mirror for r in requests), Bootstrap.mirror)
        driver = simdriver.build(mirror=mirror)
        ui.stage(f"simulated driver built in {driver.built_in}: it loads with glibc >= {driver.glibc}")
        try:  # the nodes with NVIDIA's numbers that the container faults give (refenv/run/devnodes.py)
            devnodes.ensure(str(devnodes.default_dir()), devnodes.standard(profiles.MAX_GPUS))
        except OSError as exc:
            LOG.warning("cannot make the simulated device nodes (%s): the device-cgroup and stale-CDI faults "
                        "will not start", exc)
    builds: dict[str, EnvBuild] = {}
    facts: dict[str, imagefacts.ImageFacts] = {}
    harness = tree_digest(paths.project_root() / "harness")
    try:
        for request in requests:
            env = request.environment
            ui.stage(f"environment {env.name}")
            build = engine.ensure_image(request, ui.build_line)
            if build.image is not None:
                ui.build_line(env.name, f"reading what {build.image} holds (Python, torch, the stack)")
                facts[env.name] = found = imagefacts.read_image(
                    engine, engine.image_labels(build.image) or {}, build.image, imagefacts.interpreter_of(env),
                    harness, run_id)
                if env.team is not None:
                    build = imagefacts.unusable(build, found)  # no Python 3.8+, or no torch: its cells say so
            builds[env.name] = build
            ui.build_done(build)
        ldcaches: dict[str, str | None] = {}
        glibcs: dict[str, str | None] = {}
        if driver is not None:
            libs = {f"{toolkit.LIB_DIR}/libcuda.so.1": str(driver.libcuda),
                    f"{toolkit.LIB_DIR}/libnvidia-ml.so.1": str(driver.libnvidia_ml)}
            for name, build in builds.items():
                if (image := build.image) is not None:
                    image_id = engine.image_id(image) or image
                    ldcaches[name] = prepare_ldcache(engine, image, image_id, libs, driver.digest, run_id)
                    glibcs[name] = glibc.read_beside(ldcaches[name])
        real, real_error, probed = None, None, {}
        if any(h.kind == "real" for h in hosts) and isinstance(engine, ProbesRealHosts):
            probed = engine.probe_real_hosts(hosts)  # on a cluster: each real host where its cells run
            real = next((p.profile for p in probed.values() if p.profile), None)
        elif any(h.kind == "real" for h in hosts):
            real = realhost.probe()
            image = next((b.image for b in builds.values() if b.image), None)
            real_error = engine.gpu_runtime_error(image) if image else NoGpuRuntime("no image to try --gpus with")
    except KeyboardInterrupt:
        engine.cancel(run_id)
        raise
    return Prepared(builds, driver, ldcaches, real, real_error, {n: p.profile for n, p in probed.items()},
                    {n: NoGpuRuntime(p.error) for n, p in probed.items() if p.error},
                    engine=getattr(engine, "name", "docker"), glibc=glibcs, facts=facts)


def prepare_ldcache(engine: CellEngine, image: str, image_id: str, libs: dict[str, str], digest: str,
                    run_id: str) -> str | None:
    """The linker cache of `image` with the simulated driver's libraries in place, made once and kept."""
    target = paths.cache_root() / "ldcache" / f"{image_id.replace('sha256:', '')[:24]}-{digest[:16]}.cache"
    if target.is_file():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="refenv-ldcache-") as out:
        os.chmod(out, 0o777)
        outcome = engine.run(ldcache_spec(image, out, libs, run_id), timeout=120)
        made = Path(out) / "ld.so.cache"
        if outcome.exit_code != 0 or not made.is_file():
            LOG.warning("could not make the linker cache for %s: %s", image, outcome.logs[-500:])
            return None
        found = Path(out) / "glibc"
        if found.is_file():
            shutil.copyfile(found, target.with_suffix(".glibc"))  # glibc.read_beside reads it
        shutil.copyfile(made, target)
    return str(target)


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
    """The whole job; raises only for what stops everything (no engine)."""
    begun = Begun.now(options.results_root)
    if engine is None:
        ui.stage("connecting to the Docker engine")
        engine = connect()
    begun.folder.mkdir(parents=True, exist_ok=True)  # only once an engine answers: no empty run folders
    inventory = engine.inventory()
    settings = settings_of(matrix, options)
    parallel = settings.parallel or os.cpu_count() or 1
    scope = Scope(matrix.environments, matrix.hosts, matrix.scenarios, matrix.path)
    try:
        prepared = prepare(engine, image_requests(matrix, options), matrix.hosts, begun.run_id, ui)
    except KeyboardInterrupt:
        # Interrupted while preparing: report every cell as not run.
        return conclude(begun, scope, inventory, {}, not_started(scope), True, None, parallel=parallel,
                        use_cache=options.use_cache, selection=options.selection)
    # A team image's torch, CUDA, Python and architectures are known now: predicted as a built environment's.
    scope = replace(scope, environments=tuple(imagefacts.resolve(e, prepared.facts.get(e.name))
                                              for e in scope.environments))
    threads = max(1, (os.cpu_count() or 1) // parallel)
    # What does not depend on the cell is measured first, once per environment (and real GPU host);
    # the cells then only diagnose.
    plans_m = measurements.plan_measurements(scope.environments, scope.hosts, prepared.builds, prepared.real_error,
                                         begun.run_id, begun.folder, settings, threads, prepared.real_errors)
    ui.measurements_start(len(plans_m))
    measures = measurements.run_measurements(engine, plans_m, begun.run_id, parallel, options.use_cache,
                                           ui.measurement_done)
    if measures.interrupted:
        return conclude(begun, scope, inventory, prepared.builds, not_started(scope), True, prepared.real,
                        parallel=parallel, use_cache=options.use_cache, selection=options.selection,
                        measurements=measures.records, real_hosts=prepared.real_hosts)
    plans = plan_cells(scope, prepared, begun.run_id, begun.folder, cell_settings(settings), threads)
    ui.cells_start(len(plans))
    done = cells.run_cells(engine, plans, begun.run_id, parallel, options.use_cache, ui.cell_done)
    results = tuple(replace(c, measurements=measurements.covering(measures.records, c.environment, c.host,
                                                              _kind(scope, c.host)),
                            stack=stack_of(scope, prepared, c))
                    for c in done.records)
    return conclude(begun, scope, inventory, prepared.builds, results, done.interrupted, prepared.real,
                    parallel=parallel, use_cache=options.use_cache, selection=options.selection,
                    measurements=measures.records, real_hosts=prepared.real_hosts, facts=prepared.facts)


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


def not_started(scope: Scope) -> tuple[CellResult, ...]:
    """Every cell as not run: Ctrl-C came before the cells began."""
    return tuple(CellResult(c.id, c.environment.name, c.host.name, c.scenario.name, status=NOT_RUN,
                            reason="interrupted (Ctrl-C) before it ran") for c in scope.cells())


def cell_settings(settings: RunSettings) -> RunSettings:
    """A matrix cell only diagnoses: its probes and memory check are the environment's measurements."""
    return replace(settings, probes="off", memory_check="off")


def _kind(scope: Scope, host: str) -> str:
    return next((h.kind for h in scope.hosts if h.name == host), "none")


def dry_run(matrix: Matrix) -> list[tuple[CellSpec, Expected]]:
    """Each cell with its expectation, without an engine: what `invoke matrix --dry-run` prints."""
    real = realhost.probe() if any(h.kind == "real" for h in matrix.hosts) else None
    return plan_only(Scope(matrix.environments, matrix.hosts, matrix.scenarios, matrix.path), real)


def write_results(folder: Path, doc: RunDocument) -> dict[str, Path]:
    """cells.json and the reports; the JSON first, so a report failure cannot lose the results."""
    from refenv.report import write_reports

    written = {"cells.json": write_run(doc, folder / "cells.json")}
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
    "dry_run",
    "image_requests",
    "new_run_id",
    "prepare",
    "prepare_ldcache",
    "run_matrix",
    "settings_of",
    "stack_of",
    "write_results",
]
