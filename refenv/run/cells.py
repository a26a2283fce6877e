"""Run planned cells in parallel, bounded by the cores; reuse a cached result when nothing changed.

A cell's harness document is cached under the digest of everything that decides it (image, driver
build, host profile, scenario, settings). Real-GPU cells are never cached: hardware changes. A cached
document is judged again against the current expectation, so only the measurement is reused. Within a
run, cells with the same digest are the same container (a scenario without GPU access mounts no driver,
so every simulated host gives it alike): the first runs, the others reuse its document, also on --rerun.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from refenv import paths
from refenv.engines.seam import CellEngine
from refenv.errors import NoGpuRuntime, NotStarted, RefenvError
from refenv.model.records import ERROR, FAIL, NOT_RUN, PASS, CellResult, Expected
from refenv.run.containers import ContainerSpec
from refenv.run.judge import judge_cell

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class CellPlan:
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


@dataclass(frozen=True)
class CellsRun:
    """The cells' results in plan order, and whether Ctrl-C cut the run short (unfinished cells are NOT_RUN)."""

    results: tuple[CellResult, ...]
    interrupted: bool


def cache_key(parts: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _base(plan: CellPlan) -> CellResult:
    """The cell's identity and bookkeeping, before any judgement."""
    return CellResult(id=plan.id, environment=plan.environment, host=plan.host, scenario=plan.scenario,
                      expected=plan.expected, cache_key=plan.cache_key,
                      result_path=str(plan.out_dir / "result.json"))


def read_document(path: Path) -> dict[str, Any] | None:
    """A harness document (result.json or its cached copy), or None when it is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_files(plans: list[CellPlan]) -> None:
    """The files the plans name, each once, written beside and renamed (cells share a host's config)."""
    for path, content in {p: c for plan in plans for p, c in plan.files}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(content, encoding="utf-8")
        tmp.replace(path)


def run_one(engine: CellEngine, plan: CellPlan, use_cache: bool) -> CellResult:
    """One cell, start to finish; every failure becomes a status, never an exception."""
    base = _base(plan)
    if plan.skip is not None:
        return replace(base, result_path=None, status=plan.skip[0], reason=plan.skip[1])
    assert plan.spec is not None
    cached = paths.cell_cache() / f"{plan.cache_key}.json" if plan.cache_key else None
    if use_cache and cached is not None and cached.is_file():
        reused = reuse(plan, cached)
        if reused is not None:
            return reused
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(plan.out_dir, 0o777)  # the harness runs as an unprivileged user inside
    start = time.monotonic()
    try:
        outcome = engine.run(plan.spec, plan.timeout_s)
    except (NoGpuRuntime, NotStarted) as exc:
        return replace(base, status=NOT_RUN, reason=exc.message)
    except RefenvError as exc:
        return replace(base, status=ERROR, reason=str(exc))
    doc = read_document(plan.out_dir / "result.json")
    result = judge_cell(base, plan.expected, doc, outcome.exit_code, outcome.timed_out, outcome.oom_killed,
                        outcome.logs)
    # Only an answer is kept: a harness failure or a killed container is tried again next run.
    if cached is not None and result.status in (PASS, FAIL):
        keep(plan.out_dir / "result.json", cached)
    return replace(result, wall_s=round(time.monotonic() - start, 2))


def keep(document: Path, cached: Path) -> None:
    """Copy a harness document into the cache, written beside and renamed (a reader never sees half of it)."""
    tmp = cached.with_suffix(".tmp")
    cached.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(document, tmp)
    tmp.replace(cached)


def reuse(plan: CellPlan, document: Path) -> CellResult | None:
    """The cell judged from a document measured before (the cache, or a cell of this run with the same
    digest), marked cached; None when there is no readable document."""
    doc = read_document(document)
    if doc is None:
        return None
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    if document != plan.out_dir / "result.json":
        shutil.copyfile(document, plan.out_dir / "result.json")
    return replace(judge_cell(_base(plan), plan.expected, doc, 0, False, False, ""), cached=True, wall_s=0.0)


def share(plans: list[CellPlan]) -> tuple[list[CellPlan], dict[str, list[CellPlan]]]:
    """The plans to run, and by cache key the plans that are the same container as the first of that key."""
    first: list[CellPlan] = []
    same: dict[str, list[CellPlan]] = {}
    for plan in plans:
        key = plan.cache_key if plan.spec is not None else None
        if key is not None and any(p.cache_key == key for p in first):
            same.setdefault(key, []).append(plan)
        else:
            first.append(plan)
    return first, same


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


def run_cells(engine: CellEngine, plans: list[CellPlan], run_id: str, parallel: int = 1, use_cache: bool = True,
              on_done: Callable[[CellResult], None] | None = None) -> CellsRun:
    """Every cell, `parallel` at a time. Ctrl-C cancels the run's containers and returns what finished."""
    write_files(plans)
    results: dict[str, CellResult] = {}
    stop = threading.Event()
    interrupted = False
    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="cell")
    pending: dict[Future[CellResult], CellPlan] = {}
    queue, same = share(list(plans))
    try:
        while queue or pending:
            while queue and len(pending) < max(1, parallel) and not stop.is_set():
                plan = queue.pop(0)
                pending[pool.submit(run_one, engine, plan, use_cache)] = plan
            done, _ = wait(list(pending), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                plan = pending.pop(fut)
                try:
                    result = fut.result()
                except Exception as exc:  # a bug in one cell must not lose the run
                    LOG.exception("cell %s crashed", plan.id)
                    result = replace(_base(plan), status=ERROR, reason=f"refenv error: {exc}")
                done_now = [result]
                for other in same.pop(plan.cache_key or "", []):
                    # A document the first one wrote (not one it timed out or crashed before writing) stands
                    # for the others; without one, each runs for itself.
                    answered = result.observed is not None and result.status in (PASS, FAIL)
                    shared = reuse(other, plan.out_dir / "result.json") if answered else None
                    if shared is not None:
                        done_now.append(shared)
                    else:
                        queue.insert(0, other)
                for r in done_now:
                    results[r.id] = r
                    if on_done is not None:
                        on_done(r)
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        LOG.warning("interrupted: removed %d running container(s)", cancel_all(engine, run_id, pending))
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    ordered = []
    for plan in plans:
        if plan.id in results:
            ordered.append(results[plan.id])
        else:
            ordered.append(replace(_base(plan), status=NOT_RUN, reason="interrupted (Ctrl-C) before it finished"))
    return CellsRun(tuple(ordered), interrupted)


def prepare_ldcache(engine: CellEngine, image: str, image_id: str, libs: dict[str, str], digest: str,
                    run_id: str) -> str | None:
    """The linker cache of `image` with the simulated driver's libraries in place, made once and kept."""
    from refenv.run.containers import ldcache_spec

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
        shutil.copyfile(made, target)
    return str(target)
