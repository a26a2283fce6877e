"""Before a run's jobs: every environment's image, and what its hosts need — the simulated driver and the
images' linker caches with it in place, and the real hosts' GPUs (this machine's, or a cluster's probes).

`invoke matrix`, `invoke reproduce` and `invoke publish` all prepare this way (refenv/run/pipeline.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol

from refenv import paths
from refenv.builder import simdriver
from refenv.builder.images import tree_digest
from refenv.engines import realhost
from refenv.engines.seam import CellEngine, ImageRequest, ProbesRealHosts
from refenv.errors import NoGpuRuntime
from refenv.model import profiles
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Bootstrap, Host
from refenv.run import devnodes, glibc, imagefacts, toolkit
from refenv.run.containers import ldcache_spec
from refenv.run.plan import Prepared

LOG = logging.getLogger(__name__)


class Stages(Protocol):
    """What preparing tells the run's UI."""

    def stage(self, message: str) -> None: ...
    def build_line(self, environment: str, line: str) -> None: ...
    def build_done(self, build: EnvBuild) -> None: ...


def prepare(engine: CellEngine, requests: list[ImageRequest], hosts: tuple[Host, ...], run_id: str,
            ui: Stages) -> Prepared:
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
    harness = tree_digest(paths.harness_dir())
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
        real, real_error, probed, buses = None, None, {}, {}
        if any(h.kind == "real" for h in hosts) and isinstance(engine, ProbesRealHosts):
            probed = engine.probe_real_hosts(hosts)  # on a cluster: each real host where its cells run
            real = next((p.profile for p in probed.values() if p.profile), None)
        elif any(h.kind == "real" for h in hosts):
            real = realhost.probe()
            if real is None:  # no driver: the bus says whether a GPU is there
                bus = realhost.bus()
                buses = {h.name: bus for h in hosts if h.kind == "real"}
            image = next((b.image for b in builds.values() if b.image), None)
            real_error = engine.gpu_runtime_error(image) if image else NoGpuRuntime("no image to try --gpus with")
    except KeyboardInterrupt:
        engine.cancel(run_id)
        raise
    return Prepared(builds, driver, ldcaches, real, real_error, {n: p.profile for n, p in probed.items()},
                    {n: NoGpuRuntime(p.error) for n, p in probed.items() if p.error},
                    engine=getattr(engine, "name", "docker"), glibc=glibcs, facts=facts,
                    real_buses={n: p.bus for n, p in probed.items()} if probed else buses)


def prepare_ldcache(engine: CellEngine, image: str, image_id: str, libs: dict[str, str], digest: str,
                    run_id: str) -> str | None:
    """The linker cache of `image` with the simulated driver's libraries in place, made once and kept."""
    target = paths.cache_root() / "ldcache" / f"{image_id.replace('sha256:', '')[:24]}-{digest[:16]}.cache"
    if target.is_file():
        return str(target)
    with tempfile.TemporaryDirectory(prefix="refenv-ldcache-") as out:
        os.chmod(out, 0o777)
        outcome = engine.run(ldcache_spec(image, out, libs, run_id), timeout=120)
        made = Path(out) / "ld.so.cache"
        if outcome.exit_code != 0 or not made.is_file():
            LOG.warning("could not make the linker cache for %s: %s", image, outcome.logs[-500:])
            return None
        tmp = target.with_suffix(".tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            found = Path(out) / "glibc"
            if found.is_file():
                shutil.copyfile(found, target.with_suffix(".glibc"))  # glibc.read_beside reads it
            shutil.copyfile(made, tmp)
            tmp.replace(target)
        except OSError as exc:  # a full disk: the cells go without it, as when it cannot be made
            tmp.unlink(missing_ok=True)
            LOG.warning("could not keep the linker cache for %s in %s: %s", image, target, exc.strerror or exc)
            return None
    return str(target)
