"""The run document of a finished (or interrupted) run, put together from what was run (pure but for the clock)."""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Mapping
from dataclasses import replace

from harness import __version__ as harness_version
from refenv import __version__ as refenv_version
from refenv.engines.seam import Inventory
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Environment, Host
from refenv.model.profiles import Profile
from refenv.model.records import CellResult, MeasurementRecord
from refenv.model.rundoc import (
    BuildRecord,
    DockerInfo,
    EnvironmentRecord,
    GpuRecord,
    HostRecord,
    MachineInfo,
    RunDocument,
    RunInfo,
    ScenarioRecord,
)
from refenv.run.imagefacts import ImageFacts, interpreter_of
from refenv.run.plan import Scope, matrix_host_profile


def host_record(host: Host, real: Profile | None) -> HostRecord:
    """What the run document says of a host: its driver, GPUs and injected faults."""
    p = matrix_host_profile(host, real)
    faults: tuple[str, ...] = ()
    if p is not None:
        f = p.faults
        faults = tuple(x for x in (f"NVML init error {f.nvml_init_error}" if f.nvml_init_error else "",
                                   f"cuInit error {f.cuinit_error}" if f.cuinit_error else "",
                                   "cuInit never returns" if f.cuinit_hang else "",
                                   "stub library" if f.stub else "",
                                   "device cgroup denies the GPU nodes" if f.device_cgroup_denied else "",
                                   f"CDI spec {f.cdi_spec}" if f.cdi_spec != "current" else "",
                                   "no NVIDIA runtime" if f.no_runtime else "") if x)
    return HostRecord(
        name=host.name, kind=host.kind, profile=host.profile,
        description=host.description or (p.description if p else ""),
        driver=p.driver_version if p else None, cuda_driver_version=p.cuda_driver_version if p else None,
        gpus=tuple(GpuRecord(g.name, g.compute_capability, g.memory_bytes, g.uuid) for g in (p.gpus if p else ())),
        faults=faults)


def environment_record(env: Environment, build: EnvBuild | None, facts: ImageFacts | None = None) -> EnvironmentRecord:
    """The environment, how its image came to be (NOT_RUN when the run stopped before it) and what it holds."""
    record = EnvironmentRecord(name=env.name, torch=env.torch or None, variant=env.variant or None, cuda=env.cuda,
                               python=env.python or None, source=env.source, arch=env.arch,
                               dockerfile=env.team.dockerfile if env.team else None,
                               interpreter=interpreter_of(env) if env.team else None)
    if facts is not None:
        record = replace(record, require_cuda=facts.require_cuda, labels=dict(facts.labels), stack=facts.stack,
                         image_error=facts.error if env.team else None, interpreter=facts.interpreter)
    if build is None:
        return record
    return replace(record, image=build.tag, content_hash=build.content_hash,
                   build=BuildRecord(status=build.status, wall_s=build.wall_s,
                                     log=str(build.log) if build.log else None, log_tail=build.log_tail,
                                     error=build.error))


def run_info(run_id: str, started: datetime.datetime, wall_s: float, scope: Scope, selection: dict[str, list[str]],
             interrupted: bool, inventory: Inventory, parallel: int, use_cache: bool) -> RunInfo:
    """When, where and how the run ran."""
    return RunInfo(
        id=run_id, started=started.isoformat(timespec="seconds"),
        finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        wall_s=round(wall_s, 1), matrix_file=scope.matrix_file,
        selection={k: tuple(v) for k, v in selection.items()}, interrupted=interrupted,
        refenv_version=refenv_version, harness_version=harness_version,
        docker=DockerInfo(inventory.server_version, inventory.nvidia_runtime),
        machine=MachineInfo(os.cpu_count(), platform.node(), parallel), use_cache=use_cache)


def document(scope: Scope, run: RunInfo, builds: dict[str, EnvBuild], results: tuple[CellResult, ...],
             real: Profile | None, measurements: tuple[MeasurementRecord, ...] = (),
             real_hosts: Mapping[str, Profile | None] | None = None,
             facts: Mapping[str, ImageFacts] | None = None) -> RunDocument:
    """The run document: the run, each environment's build, each host and scenario, the measurements, every cell.

    `real_hosts` (a cluster's probes, by host) stands for `real` (this machine's GPUs), as in the cells' plans."""
    probed = real_hosts or {}
    return RunDocument(
        measurements=measurements,
        run=run,
        environments=tuple(environment_record(e, builds.get(e.name), (facts or {}).get(e.name))
                           for e in scope.environments),
        hosts=tuple(host_record(h, probed.get(h.name, real)) for h in scope.hosts),
        scenarios=tuple(ScenarioRecord(s.name, s.description, s.gpus, s.env_dict, s.devices) for s in scope.scenarios),
        cells=tuple(results))
