"""`invoke matrix`: build every environment, run every cell, judge, and write the results folder.

The plan (which cells, what each expects, how each container is made) is pure; this module only
sequences it: engine check first, then builds (a failed build marks its cells, the others go on),
then the cells in parallel, then the reports — also after Ctrl-C, with what finished.
"""

from __future__ import annotations

import datetime
import logging
import os
import platform
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from harness import __version__ as harness_version
from refenv import __version__ as refenv_version
from refenv import cellrun, expect, profiles, realhost, simdriver, toolkit
from refenv.build import EnvBuild, build_environment, given_image
from refenv.cellrun import CellPlan
from refenv.engine import MANAGED, Engine
from refenv.errors import NoGpuRuntime
from refenv.matrix import CellSpec, Environment, Host, Matrix, cells
from refenv.profiles import Profile
from refenv.results import BUILD_FAILED, NOT_RUN, CellResult
from refenv.rundoc import (
    BuildRecord,
    DockerInfo,
    EnvironmentRecord,
    GpuRecord,
    HostRecord,
    MachineInfo,
    RunDocument,
    RunInfo,
    ScenarioRecord,
    write_run,
)
from refenv.runspec import cell_spec

LOG = logging.getLogger(__name__)


class UI(Protocol):
    def stage(self, message: str) -> None: ...
    def build_line(self, environment: str, line: str) -> None: ...
    def build_done(self, build: EnvBuild) -> None: ...
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


def matrix_host_profile(host: Host, real: Profile | None) -> Profile | None:
    if host.kind == "simulated" and host.inline is not None:
        return host.inline
    if host.kind == "simulated" and host.profile:
        return profiles.get(host.profile)
    if host.kind == "real":
        return real
    return None


def plan_cells(matrix: Matrix, builds: dict[str, EnvBuild], run_id: str, folder: Path, driver: Any,
               ldcaches: dict[str, str | None], real: Profile | None, real_error: NoGpuRuntime | None,
               settings: Any, threads: int = 1) -> list[CellPlan]:
    """Every cell's expectation, container and cache key (no I/O but writing profile configs)."""
    plans = []
    config_dir = folder / "hosts"
    for spec in cells(matrix):
        env, host, scenario = spec.environment, spec.host, spec.scenario
        profile = matrix_host_profile(host, real)
        expected = expect.expect(env, host, profile if host.kind != "real" or real else None, scenario)
        out_dir = folder / "cells" / env.name / host.name / scenario.name
        build = builds[env.name]
        base = {"id": spec.id, "environment": env.name, "host": host.name, "scenario": scenario.name,
                "expected": expected, "out_dir": out_dir, "timeout_s": settings.timeout_s}
        if build.status == "FAILED" or build.tag is None:
            plans.append(CellPlan(**base, spec=None, skip=(BUILD_FAILED, f"the image did not build: {build.error}"),
                                  cache_key=None))
            continue
        if host.kind == "real" and scenario.gpu_access and real_error is not None:
            plans.append(CellPlan(**base, spec=None, skip=(NOT_RUN, real_error.message), cache_key=None))
            continue
        injection = None
        key_parts: dict[str, Any] | None = {"image": build.content_hash, "host": host.kind,
                                            "scenario": [scenario.gpus, scenario.env], "probes": settings.probes,
                                            "memory": settings.memory_check}
        if host.kind == "simulated":
            assert profile is not None and driver is not None
            config = config_dir / f"{host.name}--{scenario.name}.conf"
            try:
                injection = toolkit.inject(profile, driver, scenario.env_dict, gpu_access=scenario.gpu_access,
                                           config_host_path=str(config), gpus=expect.selection(scenario))
            except toolkit.ToolkitError as exc:
                plans.append(CellPlan(**base, spec=None, skip=(NOT_RUN, str(exc)), cache_key=None))
                continue
            if injection.config_text is not None:
                config.parent.mkdir(parents=True, exist_ok=True)
                config.write_text(injection.config_text, encoding="utf-8")
            assert key_parts is not None
            key_parts.update(driver=driver.digest, config=injection.config_text,
                             mounts=[m.container_path for m in injection.mounts],
                             devices=[d.container_path for d in injection.devices])
        elif host.kind == "real":
            key_parts = None  # real hardware is measured every time
        container = cell_spec(build.tag, spec.id, run_id, str(out_dir), scenario, settings, injection,
                              ldcaches.get(env.name), real_host=host.kind == "real", threads=threads)
        plans.append(CellPlan(**base, spec=container, skip=None,
                              cache_key=cellrun.cache_key(key_parts) if key_parts else None))
    return plans


def _settings(matrix: Matrix, options: Options) -> Any:
    s = matrix.run
    return replace(s, probes=options.probes or s.probes, memory_check=options.memory_check or s.memory_check,
                   parallel=options.parallel or s.parallel)


def run_matrix(matrix: Matrix, options: Options, ui: UI) -> Outcome:
    """The whole job; raises only for what stops everything (no engine)."""
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    run_id = new_run_id()
    folder = options.results_root / run_id
    ui.stage("connecting to the Docker engine")
    engine = Engine.connect()
    folder.mkdir(parents=True, exist_ok=True)  # only once an engine answers: no empty run folders
    info = engine.info()
    settings = _settings(matrix, options)
    parallel = settings.parallel or os.cpu_count() or 1

    driver = None
    if any(h.kind == "simulated" for h in matrix.hosts):
        ui.stage("building the simulated driver")
        driver = simdriver.build()

    builds: dict[str, EnvBuild] = {}
    ldcaches: dict[str, str | None] = {}
    real, real_error = None, None
    try:
        for env in matrix.environments:
            ui.stage(f"environment {env.name}")
            build = (given_image(engine, env, options.images[env.name]) if env.name in options.images
                     else build_environment(engine, matrix, env, ui.build_line, relock=options.relock))
            builds[env.name] = build
            ui.build_done(build)
        if driver is not None:
            libs = {f"{toolkit.LIB_DIR}/libcuda.so.1": str(driver.libcuda),
                    f"{toolkit.LIB_DIR}/libnvidia-ml.so.1": str(driver.libnvidia_ml)}
            for name, build in builds.items():
                if build.tag and build.status != "FAILED":
                    image_id = engine.image_id(build.tag) or build.tag
                    ldcaches[name] = cellrun.prepare_ldcache(engine, build.tag, image_id, libs, driver.digest, run_id)
        if any(h.kind == "real" for h in matrix.hosts):
            real = realhost.probe()
            image = next((b.tag for b in builds.values() if b.tag and b.status != "FAILED"), None)
            real_error = engine.gpu_runtime_error(image) if image else NoGpuRuntime("no image to try --gpus with")
    except KeyboardInterrupt:
        # Interrupted while building: reap what was started, keep what is known, report the rest as not run.
        engine.remove_containers({MANAGED: "true", "refenv.kind": "deps-build"})
        engine.remove_containers({"refenv.run": run_id})
        for env in matrix.environments:
            builds.setdefault(env.name, EnvBuild(env.name, "FAILED", None, None, 0.0, None, "interrupted"))
        results = [CellResult(id=c.id, environment=c.environment.name, host=c.host.name, scenario=c.scenario.name,
                              status=NOT_RUN, reason="interrupted (Ctrl-C) before it ran", expected=None)
                   for c in cells(matrix)]
        doc = document(matrix, options, run_id, started, time.monotonic() - t0, builds, results, True, info,
                       real, parallel)
        return Outcome(folder, doc, False, True, write_results(folder, doc))

    threads = max(1, (os.cpu_count() or 1) // parallel)
    plans = plan_cells(matrix, builds, run_id, folder, driver, ldcaches, real, real_error, settings, threads)
    ui.cells_start(len(plans))
    results, interrupted = cellrun.run_all(engine, plans, parallel, options.use_cache, run_id, ui.cell_done)

    doc = document(matrix, options, run_id, started, time.monotonic() - t0, builds, results, interrupted, info,
                   real, parallel)
    written = write_results(folder, doc)
    _link_latest(options.results_root, folder)
    return Outcome(folder, doc, doc.summary.ok and not interrupted, interrupted, written)


def host_record(host: Host, real: Profile | None) -> HostRecord:
    """What the run document says of a host: its driver, GPUs and injected faults."""
    p = matrix_host_profile(host, real)
    faults: tuple[str, ...] = ()
    if p is not None:
        f = p.faults
        faults = tuple(x for x in (f"NVML init error {f.nvml_init_error}" if f.nvml_init_error else "",
                                   f"cuInit error {f.cuinit_error}" if f.cuinit_error else "",
                                   "stub library" if f.stub else "") if x)
    return HostRecord(
        name=host.name, kind=host.kind, profile=host.profile,
        description=host.description or (p.description if p else ""),
        driver=p.driver_version if p else None, cuda_driver_version=p.cuda_driver_version if p else None,
        gpus=tuple(GpuRecord(g.name, g.compute_capability, g.memory_bytes, g.uuid) for g in (p.gpus if p else ())),
        faults=faults)


def environment_record(env: Environment, build: EnvBuild | None) -> EnvironmentRecord:
    record = EnvironmentRecord(name=env.name, torch=env.torch, variant=env.variant, cuda=env.cuda, python=env.python)
    if build is None:
        return record
    return replace(record, image=build.tag, content_hash=build.content_hash,
                   build=BuildRecord(status=build.status, wall_s=build.wall_s,
                                     log=str(build.log) if build.log else None, log_tail=build.log_tail,
                                     error=build.error))


def document(matrix: Matrix, options: Options, run_id: str, started: datetime.datetime, wall_s: float,
             builds: dict[str, EnvBuild], results: list[CellResult], interrupted: bool, info: dict[str, Any],
             real: Profile | None, parallel: int) -> RunDocument:
    """The run document (pure but for the clock)."""
    run = RunInfo(
        id=run_id, started=started.isoformat(timespec="seconds"),
        finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        wall_s=round(wall_s, 1), matrix_file=matrix.path,
        selection={k: tuple(v) for k, v in options.selection.items()}, interrupted=interrupted,
        refenv_version=refenv_version, harness_version=harness_version,
        docker=DockerInfo(info.get("server_version"), info.get("nvidia_runtime")),
        machine=MachineInfo(os.cpu_count(), platform.node(), parallel), use_cache=options.use_cache)
    return RunDocument(
        run=run,
        environments=tuple(environment_record(e, builds.get(e.name)) for e in matrix.environments),
        hosts=tuple(host_record(h, real) for h in matrix.hosts),
        scenarios=tuple(ScenarioRecord(s.name, s.description, s.gpus, s.env_dict) for s in matrix.scenarios),
        cells=tuple(results))


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


def plan_only(matrix: Matrix) -> list[tuple[CellSpec, Any]]:
    """Each cell with its expectation, without Docker: what `invoke matrix --dry-run` prints."""
    real = realhost.probe() if any(h.kind == "real" for h in matrix.hosts) else None
    out = []
    for spec in cells(matrix):
        profile = matrix_host_profile(spec.host, real)
        out.append((spec, expect.expect(spec.environment, spec.host, profile, spec.scenario)))
    return out

