"""One executor for the containers of a run, cells and measurements alike.

Each job is a planned container (or a reason it cannot run) that ends as a record, whatever happens: a
cached answer is judged again, an engine refusal is NOT_RUN, an engine error is ERROR, a crash in refenv
is ERROR with its message, and Ctrl-C cancels the run's containers and leaves what did not finish
NOT_RUN. Jobs run `parallel` at a time; records come back in plan order.

Only an answer is cached (PASS or FAIL): a harness failure or a killed container is tried again next run.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from refenv.engines.seam import CellEngine, ContainerSpec, RunOutcome
from refenv.errors import NoGpuRuntime, NotStarted, RefenvError
from refenv.model.records import JobRecord
from refenv.model.status import ERROR, FAIL, NOT_RUN, PASS

LOG = logging.getLogger(__name__)
INTERRUPTED = "interrupted (Ctrl-C) before it finished"
# How a document read from the cache or another container is judged: it ended well, with nothing to say.
ANSWERED = RunOutcome(exit_code=0, timed_out=False, oom_killed=False, logs="")


class Job(Protocol):
    """A planned container: what the executor needs of a cell's or a measurement's plan."""

    @property
    def id(self) -> str: ...
    @property
    def spec(self) -> ContainerSpec | None: ...          # None: not run (see `skip`)
    @property
    def skip(self) -> tuple[str, str] | None: ...        # (status, reason) for a job that cannot run
    @property
    def cache_key(self) -> str | None: ...               # None: never cached
    @property
    def out_dir(self) -> Path: ...
    @property
    def timeout_s(self) -> float: ...


J = TypeVar("J", bound=Job)
R = TypeVar("R", bound=JobRecord)
# (the record before judgement, the harness's document as read (a JSON object) or None, how the container
# ended) -> the record; the judge reads the document as its record (refenv/run/judge.py).
Judge = Callable[[R, "Mapping[str, object] | None", RunOutcome], R]


@dataclass(frozen=True)
class Finished(Generic[R]):
    """The records in plan order, and whether Ctrl-C cut the run short."""

    records: tuple[R, ...]
    interrupted: bool


def read_document(path: Path) -> dict[str, object] | None:
    """A harness document (result.json or its cached copy), or None when it is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def keep(document: Path, cached: Path) -> None:
    """Copy a harness document into the cache, written beside and renamed (a reader never sees half of it)."""
    tmp = cached.with_suffix(".tmp")
    cached.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(document, tmp)
    tmp.replace(cached)


def reuse(job: Job, document: Path, base: R, judge: Judge[R]) -> R | None:
    """The job judged from a document measured before (the cache, or a job of this run with the same
    digest), marked cached; None when there is no readable document."""
    doc = read_document(document)
    if doc is None:
        return None
    job.out_dir.mkdir(parents=True, exist_ok=True)
    if document != job.out_dir / "result.json":
        shutil.copyfile(document, job.out_dir / "result.json")
    return replace(judge(base, doc, ANSWERED), cached=True, wall_s=0.0)


def run_container(engine: CellEngine, job: Job, base: R, judge: Judge[R], cached: Path | None,
                  use_cache: bool) -> R:
    """One job, start to finish; every failure becomes a status, never an exception."""
    if job.skip is not None:
        return replace(base, result_path=None, status=job.skip[0], reason=job.skip[1])
    assert job.spec is not None
    if use_cache and cached is not None and cached.is_file():
        reused = reuse(job, cached, base, judge)
        if reused is not None:
            return reused
    job.out_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(job.out_dir, 0o777)  # the harness runs as an unprivileged user inside
    start = time.monotonic()
    try:
        outcome = engine.run(job.spec, job.timeout_s)
    except (NoGpuRuntime, NotStarted) as exc:  # the engine refused: not run here, not an error
        return replace(base, status=NOT_RUN, reason=exc.message)
    except RefenvError as exc:
        return replace(base, status=ERROR, reason=str(exc))
    record = judge(base, read_document(job.out_dir / "result.json"), outcome)
    if cached is not None and record.status in (PASS, FAIL):
        keep(job.out_dir / "result.json", cached)
    return replace(record, wall_s=round(time.monotonic() - start, 2))


def cancel_all(engine: CellEngine, run_id: str, pending: Iterable[Future[Any]]) -> int:
    """Cancel a run's containers and its work not yet started; the number of containers removed.

    A container created while a cancel ran outlives it: cancel again until every task has returned,
    rather than wait out its time limit.
    """
    futures = list(pending)
    removed = engine.cancel(run_id)
    for fut in futures:
        fut.cancel()
    while wait(futures, timeout=0.5).not_done:
        removed += engine.cancel(run_id)
    return removed


# After a job ends: the records it answers for besides its own, and jobs to run after all.
FollowUp = Callable[[J, R], tuple[list[R], list[J]]]


def run_all(engine: CellEngine, jobs: Sequence[J], run_id: str, parallel: int, work: Callable[[J], R],
            base: Callable[[J], R], on_done: Callable[[R], None] | None = None,
            follow_up: FollowUp[J, R] | None = None, order: Sequence[J] | None = None) -> Finished[R]:
    """Every job, `parallel` at a time, through `work`. Ctrl-C cancels the run's containers and returns
    what finished; a job that crashed is ERROR and the others go on. The records come back in the order of
    `order` (every job a follow-up may answer for; default `jobs`), NOT_RUN where none finished."""
    records: dict[str, R] = {}
    stop = threading.Event()
    interrupted = False
    width = max(1, parallel)
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="job")
    pending: dict[Future[R], J] = {}
    queue = list(jobs)
    try:
        while queue or pending:
            while queue and len(pending) < width and not stop.is_set():
                job = queue.pop(0)
                pending[pool.submit(work, job)] = job
            finished, _ = wait(list(pending), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                job = pending.pop(fut)
                try:
                    record = fut.result()
                except Exception as exc:  # a bug in one job must not lose the run
                    LOG.exception("%s crashed", job.id)
                    record = replace(base(job), status=ERROR, reason=f"refenv error: {exc}")
                done_now = [record]
                if follow_up is not None:
                    more, again = follow_up(job, record)
                    done_now += more
                    queue[:0] = again
                for r in done_now:
                    records[r.id] = r
                    if on_done is not None:
                        on_done(r)
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        LOG.warning("interrupted: removed %d running container(s)", cancel_all(engine, run_id, pending))
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    ordered = tuple(records.get(j.id) or replace(base(j), status=NOT_RUN, reason=INTERRUPTED)
                    for j in (jobs if order is None else order))
    return Finished(ordered, interrupted)
