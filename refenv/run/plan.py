"""Plan cells (pure): each cell's expectation, its container, its cache key, and the files it mounts.

Planning reads what the preparation found (images, the simulated driver, linker caches, the real host)
and returns plans; it writes nothing. The runner writes the plans' files just before it runs them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from refenv.builder.driverfiles import SimDriver
from refenv.errors import NoGpuRuntime
from refenv.model import profiles
from refenv.model.builds import EnvBuild
from refenv.model.matrix import CellSpec, Environment, Host, RunSettings, Scenario
from refenv.model.profiles import PciDevice, Profile
from refenv.model.records import BUILD_FAILED, NOT_RUN, Expected
from refenv.run import cdi, devnodes, expect, glibc, toolkit
from refenv.run import injection as injection_of
from refenv.run.containers import ContainerSpec, cell_spec, with_mounted_harness
from refenv.run.imagefacts import ImageFacts


@dataclass(frozen=True)
class CellPlan:
    """One cell ready to run: its expectation, its container (or why it is not run), where it writes."""

    id: str
    environment: str
    host: str
    scenario: str
    expected: Expected
    spec: ContainerSpec | None      # None: the cell is not run (see `skip`)
    skip: tuple[str, str] | None    # (status, reason) for cells that cannot run
    cache_key: str | None           # None: never cached
    out_dir: Path
    timeout_s: float
    files: tuple[tuple[Path, str], ...] = ()  # what the container mounts, written just before the cells run
    links: tuple[tuple[Path, str], ...] = ()  # symbolic links among them (the PCI view's driver links)


def pci_key(files: Mapping[str, str], links: Mapping[str, str]) -> list[list[str]]:
    """A PCI view as the harness judges it: each device's vendor, class and bound driver ("" for none), sorted (no
    addresses)."""
    devices = sorted({rel.split("/")[1] for rel in files})
    return sorted([files.get(f"devices/{d}/vendor", "").strip(), files.get(f"devices/{d}/class", "").strip(),
                   links[f"devices/{d}/driver"].rsplit("/", 1)[-1] if f"devices/{d}/driver" in links else ""]
                  for d in devices)


def cache_key(parts: Mapping[str, object]) -> str:
    """The digest of everything that decides a container's answer: a cached answer is found under it."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Scope:
    """What a run covers: every environment on every host in every scenario."""

    environments: tuple[Environment, ...]
    hosts: tuple[Host, ...]
    scenarios: tuple[Scenario, ...]
    matrix_file: str | None = None   # where they were read from, for the report

    def cells(self) -> list[CellSpec]:
        return [CellSpec(e, h, s) for e in self.environments for h in self.hosts for s in self.scenarios]


@dataclass(frozen=True)
class Prepared:
    """What the preparation made and found: one image per environment, and what the hosts need."""

    builds: dict[str, EnvBuild]
    driver: SimDriver | None = None                 # the simulated driver, when a host is simulated
    ldcaches: dict[str, str | None] = field(default_factory=dict)  # environment -> linker cache with the driver
    real: Profile | None = None                     # this machine's GPUs, when a host is real
    real_error: NoGpuRuntime | None = None          # why a container cannot get them here
    real_hosts: dict[str, Profile | None] = field(default_factory=dict)   # on a cluster: each real host's
    real_errors: dict[str, NoGpuRuntime] = field(default_factory=dict)    # GPUs, or why it has none
    engine: str = "docker"                          # the local engine the cells run in (docker or podman)
    glibc: dict[str, str | None] = field(default_factory=dict)  # environment -> its image's glibc (refenv.run.glibc)
    facts: dict[str, ImageFacts] = field(default_factory=dict)  # environment -> what its image holds
    # each real host without a working driver: its PCI bus (this machine's, or its node's on a cluster)
    real_buses: dict[str, tuple[PciDevice, ...] | None] = field(default_factory=dict)


# The profile a host stands for: the predictor's own (refenv/run/expect.py), which `refenv check` reads too.
matrix_host_profile = expect.host_profile
# Host `none`: a GPU machine whose container was given no driver; its bus shows one GPU on NVIDIA's driver.
NONE_HOST_PCI = profiles.pci_tree(Profile("none", "no driver injected", "580.95.05", "13.0", (), pci=(
    PciDevice("0000:18:00.0", profiles.NVIDIA_VENDOR, profiles.GPU_CLASS, "nvidia"),)))


def plan_cell(spec: CellSpec, prepared: Prepared, run_id: str, folder: Path, settings: RunSettings,
              threads: int = 1) -> CellPlan:
    """One cell's plan: skipped with why, or its container, cache key and files."""
    env, host, scenario = spec.environment, spec.host, spec.scenario
    profile = (prepared.real_hosts[host.name] if host.name in prepared.real_hosts
               else matrix_host_profile(host, prepared.real))
    # What the container's environment holds, its image's visibility ENV included: the simulated toolkit reads
    # it as the real one does, and the container is started with it (so the default capabilities refenv sets
    # beside --gpus do not hide the image's own, refenv/run/containers.py container_env).
    facts = prepared.facts.get(env.name)
    seen = expect.in_image(scenario, facts.env if facts is not None else {})
    bus = prepared.real_buses.get(host.name) if host.kind == "real" and profile is None else None
    expected = expect.expect(env, host, profile, seen, bus) if env.known else \
        Expected("", (), None, "not predicted: torch was not read from the image")
    out_dir = folder / "cells" / env.name / host.name / scenario.name
    build = prepared.builds[env.name]

    def skipped(status: str, reason: str) -> CellPlan:
        return CellPlan(spec.id, env.name, host.name, scenario.name, expected, None, (status, reason), None, out_dir,
                        settings.timeout_s)

    image = build.image
    if image is None:
        return skipped(BUILD_FAILED, f"the image did not build: {build.error}")
    real_error = prepared.real_errors.get(host.name, prepared.real_error)
    if host.kind == "real" and scenario.gpu_access and real_error is not None:
        return skipped(NOT_RUN, real_error.message)
    injection = None
    files: tuple[tuple[Path, str], ...] = ()
    key_parts: dict[str, object] = {"image": build.content_hash, "host": host.kind,
                                    "scenario": [scenario.gpus, scenario.env], "probes": settings.probes,
                                    "memory": settings.memory_check, "init_timeout": settings.init_timeout_s}
    if scenario.devices:  # CDI names make another container than the same scenario without them
        key_parts["devices"] = list(scenario.devices)
    if prepared.engine != "docker":  # a document another engine measured does not stand for this one's
        key_parts["engine"] = prepared.engine
    engine_gpus = host.kind == "real"   # the engine itself is asked for GPUs (--gpus, the NVIDIA runtime)
    cdi_specs: tuple[str, ...] = ()
    if host.kind == "simulated":
        driver = prepared.driver
        if profile is None or driver is None:
            return skipped(NOT_RUN, f"host {host.name} has no simulated driver profile")
        node_dir = str(devnodes.default_dir())
        if scenario.devices:
            # The engine resolves the CDI names against the host's spec (podman), or refuses (Docker 20.10).
            config = folder / "hosts" / f"{host.name}--cdi.conf"
            host_spec = cdi.spec_for(profile, driver, config_host_path=str(config), node_dir=node_dir)
            refused = glibc.refusal(prepared.glibc.get(env.name), driver, image) if host_spec is not None else None
            if refused:
                return skipped(NOT_RUN, refused)
            if host_spec is not None:
                spec_file = folder / "cdi" / f"{host.name}.json"
                files = ((config, cdi.config_text(profile)), (spec_file, cdi.dumps(host_spec)))
                cdi_specs = (str(spec_file),)
            key_parts.update(driver=driver.digest, cdi=host_spec)
        elif profile.faults.no_runtime and scenario.gpu_access:
            engine_gpus = True  # the engine's own refusal: no NVIDIA runtime to honour --gpus
        else:
            config = folder / "hosts" / f"{host.name}--{scenario.name}.conf"
            try:
                injection = injection_of.inject(profile, driver, seen, config_host_path=str(config),
                                                node_dir=node_dir)
            except toolkit.ToolkitError as exc:
                return skipped(NOT_RUN, str(exc))
            refused = glibc.refusal(prepared.glibc.get(env.name), driver, image) if injection.mounts else None
            if refused:
                return skipped(NOT_RUN, refused)
            if injection.config_text is not None:
                files = ((config, injection.config_text),)
            key_parts.update(driver=driver.digest, config=injection.config_text,
                             mounts=[m.container_path for m in injection.mounts],
                             devices=[d.container_path for d in injection.devices])
            faulty = [[d.container_path, d.host_path, d.permissions] for d in injection.devices
                      if d.host_path != toolkit.HEALTHY_NODE]
            if faulty:
                key_parts.update(nodes=faulty)
    pci_dir: str | None = None
    links: tuple[tuple[Path, str], ...] = ()
    if host.kind in ("simulated", "none"):
        # The host's PCI bus as its containers see it (sysfs is not namespaced): a simulated profile's view, and
        # for `none` a GPU host whose container was given no driver. A real host's containers read their own.
        tree = folder / "hosts" / f"{host.name}--pci"
        tree_files, tree_links = profiles.pci_tree(profile) if profile is not None else NONE_HOST_PCI
        files = (*files, *((tree / rel, text) for rel, text in sorted(tree_files.items())))
        links = tuple((tree / rel, target) for rel, target in sorted(tree_links.items()))
        pci_dir = str(tree)
        # Keyed by what the harness judges by (each device's vendor, class and driver), not its address: hosts
        # whose buses judge alike still share a container that nothing was injected into.
        key_parts.update(pci=pci_key(tree_files, tree_links))
    container = cell_spec(image, spec.id, run_id, str(out_dir), seen, settings, injection,
                          prepared.ldcaches.get(env.name), real_host=engine_gpus, threads=threads,
                          cdi_specs=cdi_specs, pci_dir=pci_dir)
    if env.team is not None:
        container = with_mounted_harness(container, env.team.interpreter)
    # Real hardware is measured every time: it is never cached (nor is an engine's refusal of --gpus).
    key = None if engine_gpus else cache_key(key_parts)
    return CellPlan(spec.id, env.name, host.name, scenario.name, expected, container, None, key, out_dir,
                    settings.timeout_s, files, links)


def plan_cells(scope: Scope, prepared: Prepared, run_id: str, folder: Path, settings: RunSettings,
               threads: int = 1) -> list[CellPlan]:
    """Every cell of the scope, planned."""
    return [plan_cell(spec, prepared, run_id, folder, settings, threads) for spec in scope.cells()]
