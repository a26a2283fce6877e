"""What is measured once per environment (and once per environment x real GPU host), not per cell.

The probes and the memory verification depend on the image and the device, not on the host profile or
the scenario: measured in every cell they took about two thirds of a matrix run for the same answers
(issue 16: 126 cells, 4.3 s of CPU probes and 1.8 s of memory verification each). The runner plans one
CPU measurement per environment (cached by the image's content hash, as cells are) and one GPU
measurement per environment on each real GPU host (never cached: hardware changes); cells only diagnose
and name the measurements that stand for them.

The plan of each measurement and its judgement are pure; `run_measurements` runs the plans through the
run's one executor (refenv/run/executor.py), as the cells are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from harness.schema.envelope import MeasureDocument
from refenv import paths
from refenv.engines.seam import CellEngine, RunOutcome
from refenv.errors import NoGpuRuntime
from refenv.model.builds import EnvBuild
from refenv.model.matrix import Environment, Host, RunSettings
from refenv.model.records import CPU, CUDA, MeasurementRecord
from refenv.model.status import BUILD_FAILED, ERROR, NOT_RUN, PASS
from refenv.run import executor
from refenv.run.containers import ContainerSpec, measure_spec, with_mounted_harness
from refenv.run.judge import Answer, log_tail, memory_problem, no_answer, probe_problem, read_answer, status_of
from refenv.run.plan import cache_key


@dataclass(frozen=True)
class MeasurePlan:
    id: str
    environment: str
    host: str | None
    device: str
    spec: ContainerSpec | None          # None: not run (see `skip`)
    skip: tuple[str, str] | None
    cache_key: str | None               # None: never cached (a real GPU)
    out_dir: Path
    timeout_s: float

    def record(self) -> MeasurementRecord:
        return MeasurementRecord(self.id, self.environment, self.host, self.device, cache_key=self.cache_key,
                                 result_path=str(self.out_dir / "result.json") if self.spec else None)


def measurement_id(environment: str, host: str | None) -> str:
    return f"{environment}/{host or CPU}"


def wanted(settings: RunSettings) -> bool:
    return settings.probes != "off" or settings.memory_check != "off"


def plan_measurements(environments: tuple[Environment, ...], hosts: tuple[Host, ...], builds: dict[str, EnvBuild],
                      real_error: NoGpuRuntime | None, run_id: str, folder: Path, settings: RunSettings,
                      threads: int = 1, real_errors: Mapping[str, NoGpuRuntime] | None = None,
                      engine: str = "docker") -> list[MeasurePlan]:
    """One CPU measurement per environment, and one GPU measurement per environment on each real host.

    `real_errors` (a cluster's probes, by host) overrides `real_error` (this machine's) as cell plans do."""
    if not wanted(settings):
        return []
    plans = []
    for env in environments:
        build = builds.get(env.name)
        targets: list[Host | None] = [None, *(h for h in hosts if h.kind == "real")]
        for host in targets:
            mid = measurement_id(env.name, host.name if host else None)
            device = CPU if host is None else CUDA
            out_dir = folder / "measurements" / env.name / (host.name if host else CPU)
            skip: tuple[str, str] | None = None
            if build is None or build.image is None:
                skip = (BUILD_FAILED, f"the image did not build: {build.error if build else 'not built'}")
            elif host is not None and (why := (real_errors or {}).get(host.name, real_error)) is not None:
                skip = (NOT_RUN, why.message)
            if skip is not None:
                plans.append(MeasurePlan(mid, env.name, host.name if host else None, device, None, skip, None,
                                         out_dir, settings.timeout_s))
                continue
            assert build is not None and build.image is not None
            spec = measure_spec(build.image, mid, run_id, str(out_dir), settings, device, threads)
            if env.team is not None:
                spec = with_mounted_harness(spec, env.team.interpreter)
            # The CPU answer depends on the image and the settings only; a real GPU is measured every time.
            # Another engine's measurement does not stand for this one's (as for cells, refenv/run/plan.py).
            parts: dict[str, object] = {"measure": device, "image": build.content_hash, "probes": settings.probes,
                                        "memory": settings.memory_check}
            if engine != "docker":
                parts["engine"] = engine
            key = cache_key(parts) if host is None else None
            plans.append(MeasurePlan(mid, env.name, host.name if host else None, device, spec, None, key, out_dir,
                                     settings.timeout_s))
    return plans


def judge_measurement(record: MeasurementRecord, answer: Answer, exit_code: int | None,
                      timed_out: bool, oom_killed: bool, logs: str) -> MeasurementRecord:
    """The measurement's status: memory must match its prediction; on a GPU, the probes must hold their bands."""
    tail = log_tail(logs)
    ended = no_answer(replace(record, log_tail=tail), answer, exit_code, timed_out, oom_killed, what="measurement")
    if ended is not None:
        return ended
    doc = read_answer(MeasureDocument, answer)
    if isinstance(doc, str):
        return replace(record, status=ERROR, reason=doc, log_tail=tail)
    record = replace(record, probes=doc.probes, memory=doc.memory, waived=doc.waived)
    if doc.error is not None:
        return replace(record, status=ERROR, reason=f"the harness failed: {doc.error.message}", log_tail=tail)
    problems = [p for p in (memory_problem(record.memory),
                            probe_problem(record.probes, record.device == CUDA and record.waived is None)) if p]
    if problems:
        return replace(record, status=status_of(problems), reason="; ".join(why for _, why in problems), log_tail=tail)
    what = "waived: " + record.waived if record.waived else "as predicted" if record.memory else "measured"
    return replace(record, status=PASS, reason=what)


def covering(measurements: tuple[MeasurementRecord, ...] | list[MeasurementRecord], environment: str,
             host: str, host_kind: str) -> tuple[str, ...]:
    """The ids of the measurements that stand for a cell: its environment's CPU one, and its real host's."""
    return tuple(m.id for m in measurements if m.environment == environment
                 and (m.host is None or (host_kind == "real" and m.host == host)))


def _judge(record: MeasurementRecord, doc: Answer, outcome: RunOutcome) -> MeasurementRecord:
    return judge_measurement(record, doc, outcome.exit_code, outcome.timed_out, outcome.oom_killed, outcome.logs)


def run_measurements(engine: CellEngine, plans: list[MeasurePlan], run_id: str, parallel: int = 1,
                     use_cache: bool = True, on_done: Callable[[MeasurementRecord], None] | None = None,
                     ) -> executor.Finished[MeasurementRecord]:
    """Every measurement, `parallel` at a time, in plan order. A CPU measurement whose cache key is unchanged
    (same image content hash, same settings) is read from the cache and judged again; a real GPU's is
    measured every time."""
    def work(plan: MeasurePlan) -> MeasurementRecord:
        cached = paths.cell_cache() / f"measure-{plan.cache_key}.json" if plan.cache_key else None
        return executor.run_container(engine, plan, plan.record(), _judge, cached, use_cache)
    return executor.run_all(engine, plans, run_id, parallel, work, MeasurePlan.record, on_done)
