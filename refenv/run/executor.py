"""Run the planned measurements (refenv/run/measurements.py) before the cells, `parallel` at a time.

A CPU measurement whose cache key is unchanged (same image content hash, same settings) is read from the
cache and judged again; a real GPU's is measured every time. Ctrl-C cancels the run's containers and
returns what finished, the rest NOT_RUN.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from refenv import paths
from refenv.engines.seam import CellEngine
from refenv.errors import NoGpuRuntime, NotStarted, RefenvError
from refenv.model.status import ERROR, FAIL, NOT_RUN, PASS
from refenv.run.cells import cancel_all, keep, read_document
from refenv.run.measurements import MeasurementRecord, MeasurePlan, judge_measurement

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class MeasurementsRun:
    records: tuple[MeasurementRecord, ...]
    interrupted: bool


def measure_one(engine: CellEngine, plan: MeasurePlan, use_cache: bool) -> MeasurementRecord:
    """One measurement, start to finish; every failure becomes a status, never an exception."""
    base = plan.record()
    if plan.skip is not None:
        return replace(base, status=plan.skip[0], reason=plan.skip[1])
    assert plan.spec is not None
    cached = paths.cell_cache() / f"measure-{plan.cache_key}.json" if plan.cache_key else None
    if use_cache and cached is not None and cached.is_file() and (doc := read_document(cached)) is not None:
        plan.out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, plan.out_dir / "result.json")
        return replace(judge_measurement(base, doc, 0, False, False, ""), cached=True, wall_s=0.0)
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(plan.out_dir, 0o777)  # the harness runs as an unprivileged user inside
    start = time.monotonic()
    try:
        outcome = engine.run(plan.spec, plan.timeout_s)
    except (NoGpuRuntime, NotStarted) as exc:  # as a cell (cellrun.run_one): not run, not an error
        return replace(base, status=NOT_RUN, reason=exc.message)
    except RefenvError as exc:
        return replace(base, status=ERROR, reason=str(exc))
    doc = read_document(plan.out_dir / "result.json")
    record = judge_measurement(base, doc, outcome.exit_code, outcome.timed_out, outcome.oom_killed, outcome.logs)
    if cached is not None and record.status in (PASS, FAIL):  # an answer only, as cells (cellrun.run_one)
        keep(plan.out_dir / "result.json", cached)
    return replace(record, wall_s=round(time.monotonic() - start, 2))


def run_measurements(engine: CellEngine, plans: list[MeasurePlan], run_id: str, parallel: int = 1,
                     use_cache: bool = True,
                     on_done: Callable[[MeasurementRecord], None] | None = None) -> MeasurementsRun:
    """Every measurement, `parallel` at a time, in plan order."""
    done: dict[str, MeasurementRecord] = {}
    interrupted = False
    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="measure")
    pending: dict[Future[MeasurementRecord], MeasurePlan] = {}
    try:
        pending = {pool.submit(measure_one, engine, plan, use_cache): plan for plan in plans}
        while pending:
            finished, _ = wait(list(pending), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                plan = pending.pop(fut)
                try:
                    record = fut.result()
                except Exception as exc:  # a bug in one measurement must not lose the run
                    LOG.exception("measurement %s crashed", plan.id)
                    record = replace(plan.record(), status=ERROR, reason=f"refenv error: {exc}")
                done[plan.id] = record
                if on_done is not None:
                    on_done(record)
    except KeyboardInterrupt:
        interrupted = True
        LOG.warning("interrupted: removed %d running container(s)", cancel_all(engine, run_id, pending))
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    records = tuple(done.get(p.id) or replace(p.record(), status=NOT_RUN, reason="interrupted (Ctrl-C) before it "
                                              "finished") for p in plans)
    return MeasurementsRun(records, interrupted)
