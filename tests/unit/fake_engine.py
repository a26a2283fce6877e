"""A `CellEngine` that starts no container: each cell's outcome is scripted, and the harness document it
"writes" is made by the harness's real classifier. It keeps what a test needs to check: which cells ran,
which containers are still in flight, what was cancelled.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from harness.classify import classify
from harness.facts import Facts
from refenv.engines.seam import OUT, ContainerSpec, ImageRequest, Inventory, Progress, RunOutcome
from refenv.errors import NoGpuRuntime, RefenvError
from refenv.model.builds import EnvBuild
from refenv.model.labels import CELL, KIND, RUN
from refenv.model.records import CellResult, MeasurementRecord
from tests.unit.facts_builder import healthy, merge, no_driver


def harness_doc(facts: dict[str, Any]) -> dict[str, Any]:
    """The cell document `python -m harness cell` writes, diagnosed by the real classifier."""
    return {"schema": "refenv.cell", "diagnosis": {"facts": facts, "diagnosis": classify(cast(Facts, facts)).to_dict()},
            "probes": None, "memory": None}


OK_DOC = harness_doc(healthy())
# What `python -m harness measure` writes on the CPU: a memory verification whose cases held.
MEASURE_DOC: dict[str, Any] = {"schema": "refenv.measure", "device": "cpu", "waived": None, "probes": None,
                               "memory": {"status": "PASS", "device": "cpu", "cases": [{"name": "tiny", "status": "PASS"}]}}
# A container on the `none` host: no driver library at all (NOT_VISIBLE inside a container).
NO_DRIVER_DOC = harness_doc(merge(no_driver(), {"visibility": {"in_container": True, "container_evidence": "cgroup"}}))


@dataclass(frozen=True)
class Script:
    """What happens when a cell's container runs."""

    doc: dict[str, Any] | None = None   # the result.json the harness writes (None: it writes none)
    exit_code: int = 0
    oom_killed: bool = False
    hang: bool = False                  # runs until cancelled or killed at its time limit
    raises: RefenvError | None = None   # the engine refuses the container
    logs: str = ""


@dataclass
class FakeEngine:
    scripts: dict[str, Script] = field(default_factory=dict)  # by cell id; others write `default`
    default: Script = field(default_factory=lambda: Script(OK_DOC))
    failed_builds: dict[str, str] = field(default_factory=dict)  # environment -> the build's error
    gpu: bool = False                                            # whether --gpus works here
    ran: list[str] = field(default_factory=list)                 # cell ids, in the order they started
    live: set[str] = field(default_factory=set)                  # containers in flight
    cancelled: list[str] = field(default_factory=list)           # run ids
    # How each hung container ended, by cell id: "cancelled" (the run removed it) or "time limit" (it was waited out).
    hung_ended: dict[str, str] = field(default_factory=dict)
    built: list[ImageRequest] = field(default_factory=list)
    measure_default: Script = field(default_factory=lambda: Script(MEASURE_DOC))
    measured: list[tuple[str, str]] = field(default_factory=list)  # (measurement id, image), in the order they ran
    hashes: dict[str, str] = field(default_factory=dict)  # environment -> its image's content hash, when not the usual
    specs: dict[str, ContainerSpec] = field(default_factory=dict)  # the last container of each cell or measurement
    libc: str | None = None   # what `getconf GNU_LIBC_VERSION` says in the images (None: the linker cache only)
    image_docs: dict[str, dict[str, Any]] = field(default_factory=dict)  # image -> files its facts probe writes

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop: dict[str, threading.Event] = {}

    def inventory(self) -> Inventory:
        return Inventory("fake 1.0", self.gpu)

    def ensure_image(self, request: ImageRequest, progress: Progress) -> EnvBuild:
        name = request.environment.name
        self.built.append(request)
        progress(name, "building")
        if name in self.failed_builds:
            return EnvBuild(name, "FAILED", None, None, 0.1, None, self.failed_builds[name], "the log's tail")
        team = request.environment.team
        tag = request.given or (team.image if team and team.image else f"refenv/env-{name}:fake")
        return EnvBuild(name, "CACHED", tag, self.hashes.get(name, f"hash-of-{name}"), 0.0, None)

    def image_id(self, ref: str) -> str | None:
        return f"sha256:{abs(hash(ref)):064x}"[:71]

    def image_labels(self, ref: str) -> dict[str, str] | None:
        return {}

    def run_here(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        """Reading an image (refenv/run/imagefacts.py): the scripted facts, else nothing written."""
        out = next(Path(host) for host, target, _ in spec.binds if target == OUT)
        for name, doc in self.image_docs.get(spec.image, {}).items():
            (out / name).write_text(json.dumps(doc), encoding="utf-8")
        return RunOutcome(0, False, False, "")

    def gpu_runtime_error(self, image: str) -> NoGpuRuntime | None:
        return None if self.gpu else NoGpuRuntime("this Docker engine has no NVIDIA runtime")

    def run(self, spec: ContainerSpec, timeout: float) -> RunOutcome:
        labels = dict(spec.labels)
        out = next(Path(host) for host, target, _ in spec.binds if target == OUT)
        if labels.get(KIND) == "ldcache":
            (out / "ld.so.cache").write_bytes(b"fake linker cache")
            if self.libc is not None:
                (out / "glibc").write_text(self.libc + "\n")
            return RunOutcome(0, False, False, "")
        cell = labels[CELL]
        measuring = labels.get(KIND) == "measure"
        script = self.scripts.get(cell, self.measure_default if measuring else self.default)
        if script.raises is not None:
            raise script.raises
        name = f"{labels[RUN]}:{cell}"
        stop = threading.Event()
        with self._lock:
            self.specs[cell] = spec
            if measuring:
                self.measured.append((cell, spec.image))
            else:
                self.ran.append(cell)
            self.live.add(name)
            self._stop[name] = stop
        try:
            if script.hang:
                cancelled = stop.wait(timeout)
                with self._lock:
                    self.hung_ended[cell] = "cancelled" if cancelled else "time limit"
                return RunOutcome(137 if cancelled else None, not cancelled, False, "killed")
            if script.doc is not None:
                (out / "result.json").write_text(json.dumps(script.doc), encoding="utf-8")
            return RunOutcome(script.exit_code, False, script.oom_killed, script.logs)
        finally:
            with self._lock:
                self.live.discard(name)
                self._stop.pop(name, None)

    def cancel(self, run_id: str) -> int:
        with self._lock:
            self.cancelled.append(run_id)
            mine = [n for n in self._stop if n.startswith(f"{run_id}:")]
            for n in mine:
                self._stop[n].set()
        return len(mine)


class UI:
    """Keeps what the runner tells it; `stop_after` raises KeyboardInterrupt (Ctrl-C) after that many cells."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.cells: list[CellResult] = []
        self.builds: list[EnvBuild] = []
        self.stop_after = stop_after
        self.measuring = -1
        self.measured: list[MeasurementRecord] = []
        self.stages: list[str] = []

    def stage(self, message: str) -> None:
        self.stages.append(message)

    def build_line(self, environment: str, line: str) -> None:
        pass

    def build_done(self, build: EnvBuild) -> None:
        self.builds.append(build)

    def measurements_start(self, total: int) -> None:
        self.measuring = total

    def measurement_done(self, record: MeasurementRecord) -> None:
        self.measured.append(record)

    def cells_start(self, total: int) -> None:
        pass

    def cell_done(self, result: CellResult) -> None:
        self.cells.append(result)
        if self.stop_after is not None and len(self.cells) >= self.stop_after:
            raise KeyboardInterrupt
